"""binary64 `tanh` and `sigmoid` (docs/semantics.md §6.4, §6.5, semantics version 3: expm1's
double-double kernel and a double-double quotient, rounded once; the step lists of
kera_core/interp/mathfns.py).

* against mpmath (tests/elementary_ref.py at 256 bits): within 0.5 ulp + 2^−60 relative —
  `sigmoid`'s results in the top subnormal binade, rounded twice, within 0.75 ulp — on a
  sample with dense sweeps where the step lists switch and where semantics version 2's were
  least accurate; the special values and the sign of zero;
* the step list as the loop layer emits it, evaluated primitive by primitive, gives the
  interpreter's bits; it is straight-line, with no fma;
* the real pipeline — x86-64 at every level this CPU runs, arm64 under unicorn, wasm,
  verilog on a few elements, the PTX text through ptxas — gives the interpreter's bits on
  scalars and tensors of sizes 0, 1, odd, tile-boundary.
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import mathfns as M
from tests.outcomes import agree_on_target, agree_on_x86, x86_levels
from tests.test_elementary import _run_steps, steps
from tests.test_exact_functions import special_bits
from tests.tools import tool_missing

FNS = ("tanh", "sigmoid")

pytest.importorskip("mpmath")

# where the step lists turn (tanh x = x below 2^−27, ±1 from 22; sigmoid's clamp at 746),
# where the result rounds to 1 (tanh from 19.06, sigmoid from 37.43), sigmoid's subnormal
# results (from −708.4) and +0 (from −745.13), and version 2's worst inputs (tanh just above
# its switch at 0.625, sigmoid near −5.17)
EDGES = {
    "tanh": [0.625, 0.6438806270750683, 2.0**-27, 22.0, 19.06, 0.5, 1.0, 0.34657359],
    "sigmoid": [-5.166429135633734, -4.0, 0.0, 37.43, -708.4, -709.09, -745.13, -746.0],
}


def _around(values, width: int) -> np.ndarray:
    """The ``width`` binary64 numbers on either side of each value (by bit pattern)."""
    b = np.array(values, np.float64).view(np.int64)
    return (b[:, None] + np.arange(-width, width + 1)).ravel().view(np.float64)


def sample(fn: str, n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mags = np.exp2(rng.uniform(-60, 5, n)) * rng.choice([-1.0, 1.0], n)
    if fn == "tanh":
        parts = [rng.uniform(-23, 23, n), rng.uniform(0.55, 0.75, n), mags]
    else:
        parts = [rng.uniform(-750, 40, n), rng.uniform(-6, -4, n), mags]
        parts.append(rng.uniform(-709.1, -708.3, n // 4))  # the top subnormal binade
    edges = np.array(EDGES[fn])
    return np.concatenate([*parts, _around(np.concatenate([edges, -edges]), 20)])


@pytest.mark.parametrize("fn", FNS)
def test_within_half_an_ulp_of_mpmath(fn: str) -> None:
    from tests.elementary_ref import mp_value, ulp_error

    x = sample(fn, 1500)
    y = M.UNARY[fn](x)
    worst = {True: (0.0, None), False: (0.0, None)}
    for xv, yv in zip(x.tolist(), y.tolist(), strict=True):
        err = ulp_error(yv, mp_value(fn, xv), "f64")
        top_subnormal = 2.0**-1023 <= abs(yv) < 2.0**-1022
        if err > worst[top_subnormal][0]:
            worst[top_subnormal] = (err, xv)
    assert worst[False][0] <= 0.5 + 2**-10, (fn, worst[False])
    assert worst[True][0] <= 0.75, (fn, worst[True])


def _b64(v) -> int:
    return int(np.asarray(v, np.float64).view(np.uint64))


def _ev(fn: str, x):
    return M.UNARY[fn](np.asarray(x, np.float64))


def test_special_values() -> None:
    nan = np.array(0xFFF8000000000001, np.uint64).view(np.float64)
    assert _b64(_ev("tanh", 0.0)) == 0 and _b64(_ev("tanh", -0.0)) == 1 << 63
    assert _ev("tanh", 5e-324) == 5e-324 and _ev("tanh", -(2.0**-28)) == -(2.0**-28)
    for x, want in ((np.inf, 1.0), (-np.inf, -1.0), (22.0, 1.0), (-30.0, -1.0), (20.0, 1.0)):
        assert _ev("tanh", x) == want, x
    for x, want in ((0.0, 0.5), (-0.0, 0.5), (np.inf, 1.0), (-np.inf, 0.0), (40.0, 1.0)):
        assert _ev("sigmoid", x) == want, x
    assert _b64(_ev("sigmoid", -746.0)) == 0 and _b64(_ev("sigmoid", -1e300)) == 0
    assert _ev("sigmoid", -745.0) == 5e-324  # e^−745 ≈ 0.57·2^−1074 rounds up
    x = np.linspace(-30, 30, 4001)
    for fn in FNS:
        assert _b64(_ev(fn, nan)) == 0x7FF8000000000000
        assert np.all(np.diff(_ev(fn, x)) >= 0), fn
    assert np.array_equal(_ev("tanh", -x), -_ev("tanh", x))


# --- the step list as the loop layer emits it -------------------------------------------------


def test_the_step_lists_are_straight_line_and_of_fixed_length() -> None:
    for fn in FNS:
        stmts, *_ = steps(fn, "f64")  # (asserts straight-line loop primitives, no fma)
        assert 150 < len(stmts) < 300, (fn, len(stmts))
        assert {s.dst.type for s in stmts} & {"f32", "f64"} == {"f64"}, fn


def test_the_emitted_step_lists_give_the_interpreters_bits() -> None:
    specials = np.array(special_bits("f64"), np.uint64).view(np.float64)
    for fn in FNS:
        x = np.concatenate([sample(fn, 20_000, 9), specials])
        want = M.UNARY[fn](x).view(np.uint64)
        got = _run_steps(fn, "f64", x).view(np.uint64)
        bad = np.flatnonzero(got != want)
        assert not bad.size, (fn, bad.size, x[bad[:5]])


# --- the real pipeline -------------------------------------------------------------------------

SRC = (
    "".join(
        f"pub fn {fn}_s(x: f64) -> f64 {{ {fn}(x) }}\n"
        f"pub fn {fn}_v[N](x: &f64[N]) -> f64[N] {{ {fn}(x) }}\n"
        for fn in FNS
    )
    + "pub fn mix[N](x: &f64[N], y: &f64[N]) -> f64[N] { tanh(x - y) * sigmoid(y * 4.0) }\n"
)
NAMES = [f"{fn}_{k}" for fn in FNS for k in "sv"] + ["mix"]
SIZES = (0, 1, 17, 1025)


def _module():
    a = analyze(SRC)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def _inputs(name: str, n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    edges = np.array([v for e in EDGES.values() for v in e])
    pool = np.concatenate(
        [np.array(special_bits("f64"), np.uint64).view(np.float64), edges, -edges]
    )

    def vec(k: int) -> np.ndarray:
        x = rng.standard_normal(k) * np.exp2(rng.integers(-30, 10, k))
        planted = rng.random(k) < 0.4
        x[planted] = rng.choice(pool, int(planted.sum()))
        return x

    if name.endswith("_s"):
        return [{"x": v} for v in vec(24)]
    if name == "mix":
        return [{"x": vec(n), "y": vec(n)}]
    return [{"x": vec(n)}]


def _agree(tname: str, names, sizes, per_scalar: int = 24) -> None:
    agree_on_target(tname, _module(), names, sizes, _inputs, per_scalar)


@pytest.mark.parametrize("level", x86_levels() or ["none"])
def test_x86_64_gives_the_interpreters_bits_at_every_level(level: str) -> None:
    agree_on_x86(level, _module(), NAMES, SIZES, _inputs)


def test_arm64_gives_the_interpreters_bits() -> None:
    _agree("arm64", NAMES, (0, 1, 17, 257), per_scalar=6)


def test_wasm_gives_the_interpreters_bits() -> None:
    _agree("wasm", NAMES, SIZES, per_scalar=8)


def test_verilog_gives_the_interpreters_bits_on_small_cases() -> None:
    _agree("verilog", ["tanh_v", "sigmoid_v"], (0, 3))


def test_ptx_assembles_with_ptxas() -> None:
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    m = _module()
    texts = []
    for name in NAMES:
        assert not P.unsupported(m.graph, name), name
        texts.append(P.compiled(m.graph, name).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)
