"""binary32 `exp`, `log`, `tanh`, `sigmoid` are correctly rounded (docs/semantics.md §6.2–§6.5,
semantics version 2; the step lists of kera_core/interp/expolog32.py).

* against tests/elementary_ref.py's correctly rounded reference (numpy's binary64 function
  rounded, mpmath at 256 bits wherever that could be wrong): a dense sample (special values,
  every binade's edges, the thresholds of each step list, ~10^6 random bit patterns), and one
  contiguous window of 2^18 inputs per function — all 2^32 with ``KERA_EXHAUSTIVE=1``
  (scripts/cr32_sweep.py runs the same check on the x86-64 code, ~10x faster);
* the step list as the loop layer emits it, evaluated primitive by primitive, gives the
  interpreter's bits; it is straight-line, in binary64 with no fma and no table;
* the real pipeline — x86-64 at every level this CPU runs, arm64 under unicorn, wasm,
  verilog on a few elements, the PTX text through ptxas — gives the interpreter's bits on
  scalars and tensors of sizes 0, 1, odd, tile-boundary;
* `softmax` on binary32 (defined with `exp`) keeps agreeing on every target.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import expolog32
from tests.elementary_ref import check_f32, sweep
from tests.outcomes import agree_on_target, agree_on_x86, x86_levels
from tests.test_elementary import _run_steps, around, steps
from tests.test_exact_functions import special_bits
from tests.tools import tool_missing

FNS = tuple(expolog32.UNARY)
EXHAUSTIVE = bool(os.environ.get("KERA_EXHAUSTIVE"))

pytest.importorskip("mpmath")

LN2 = float(np.log(2.0))
# where each step list turns: its thresholds, exact cases, the over/underflow boundaries,
# the subnormal results, the near-ties of the reduction k = roundeven(x/ln 2)
_EDGES = {
    "exp": [0.0, 2.0**-25, 2.0**-24, 1.0, 88.72283, 89.0, 103.97, 104.0, 87.33655, 100.0]
    + [(j + 0.5) * LN2 for j in range(0, 150, 7)],
    "log": [1.0, 2.0, 0.5, 2.0**-126, 2.0**-149, 1.4142135, 0.70710677, 3.0, 2.0**127, 10.0],
    "tanh": [2.0**-30, 2.0**-29, 2.0**-12, 0.5, 0.625, 1.0, 9.01, 10.0, 0.34657359, 5.0],
    "sigmoid": [0.0, 2.0**-25, 2.0**-15, 1.0, 16.6, 17.33, 87.33, 103.28, 103.97, 104.0, 120.0],
}


def dense(fn: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = [np.array(special_bits("f32"), np.uint32)]
    parts.append(rng.integers(0, 1 << 32, 1_000_000, dtype=np.uint64).astype(np.uint32))
    parts.append(around(np.array(_EDGES[fn], np.float64), 2000))
    parts.append(np.arange(0x3E800000, 0x40800000, 61, dtype=np.uint32))  # [1/4, 4)
    parts.append(np.arange(0xBE800000, 0xC0800000, 61, dtype=np.uint32))
    return np.concatenate(parts)


@pytest.mark.parametrize("fn", FNS)
def test_correctly_rounded_on_a_dense_sample(fn: str) -> None:
    xb = dense(fn)
    chunk = 1 << 20
    for start in range(0, len(xb), chunk):
        failures, _ = check_f32(fn, xb[start : start + chunk].view(np.float32))
        assert not failures, (fn, failures[:10])


BRIEF = 1 << 18
# the brief windows: where each function is busiest (bit patterns)
_WINDOW = {
    "exp": 0x42A00000,  # x ∈ [80, …): results near the top of the range
    "log": 0x3F800000,  # x ∈ [1, …): results near 0, no cancellation allowed
    "tanh": 0x3F000000,  # x ∈ [1/2, …): the middle of the curve
    "sigmoid": 0xC2B00000,  # x ∈ (−88, …]: subnormal results
}


@pytest.mark.parametrize("fn", FNS)
def test_correctly_rounded_on_all_2_32_inputs(fn: str) -> None:
    """A 2^18 window by default; ``KERA_EXHAUSTIVE=1``: every binary32 input (~30 min per
    function on the interpreter; scripts/cr32_sweep.py is faster)."""
    if EXHAUSTIVE:
        failures, _ = sweep(fn)
    else:
        failures, _ = sweep(fn, _WINDOW[fn], _WINDOW[fn] + BRIEF)
    assert not failures, (fn, failures[:10])


def test_sigmoid_near_zero_where_half_plus_x_over_4_is_a_midpoint() -> None:
    """1/2 + x/4 is a binary32 midpoint for x = odd·2^−23 (x > 0) and odd·2^−24 (x < 0); the
    x³ term decides the rounding there (expolog32.sigmoid's |x| < 2^−15 branch), and on
    either side of the branch's threshold."""
    odd = np.arange(1, 1 << 10, 2, dtype=np.float64)
    x = np.concatenate([odd * 2.0**-23, -odd * 2.0**-24]).astype(np.float32)
    x = np.concatenate([x, around([2.0**-15], 4000).view(np.float32)])
    failures, decided = check_f32("sigmoid", x)
    assert not failures, failures[:10]
    assert decided > 100  # the midpoints themselves went to mpmath


def test_the_exceptions_are_patched() -> None:
    """The listed inputs (found by the sweep) give their correctly rounded results, and the
    list holds only inputs the binary64 evaluation gets wrong."""
    for fn, table in expolog32.EXCEPTIONS.items():
        if not table:
            continue
        x = np.array([xb for xb, _ in table], np.uint32).view(np.float32)
        want = np.array([yb for _, yb in table], np.uint32)
        assert (expolog32.unary(fn, x).view(np.uint32) == want).all(), fn
        failures, _ = check_f32(fn, x)
        assert not failures, (fn, failures)
        saved = expolog32.EXCEPTIONS[fn]
        try:
            expolog32.EXCEPTIONS[fn] = ()
            assert (expolog32.unary(fn, x).view(np.uint32) != want).all(), fn
        finally:
            expolog32.EXCEPTIONS[fn] = saved


def test_known_values() -> None:
    """A few results checked by hand against mpmath: exp's last finite input and its
    subnormals, log of the smallest subnormal, tanh and sigmoid at their saturation."""
    f = np.float32
    cases = [
        ("exp", 0x42B17217, 0x7F7FFF84),  # the largest x with a finite exp
        ("exp", 0x42B17218, 0x7F800000),
        ("exp", 0xC2CFF1B4, 0x00000001),  # e^x ≥ 2^−150 (rounds up to the smallest subnormal)
        ("exp", 0xC2CFF1B5, 0x00000000),
        ("log", 0x00000001, 0xC2CE8ED0),  # log(2^−149) = −103.27893
        ("tanh", int(np.array(f(10.0)).view(np.uint32)), 0x3F800000),
        ("sigmoid", int(np.array(f(-104.0)).view(np.uint32)), 0),
    ]
    for fn, x, want in cases:
        got = expolog32.unary(fn, np.array(x, np.uint32).view(np.float32))
        assert int(got.view(np.uint32)) == want, (fn, hex(x), hex(int(got.view(np.uint32))))


# --- the step list as the loop layer emits it -------------------------------------------------


def test_the_step_lists_are_straight_line_binary64_and_of_fixed_length() -> None:
    for fn in FNS:
        stmts, *_ = steps(fn, "f32")
        # plain binary64 (no double-double): a few dozen steps, plus two per exception
        assert 30 < len(stmts) < 80 + 2 * len(expolog32.EXCEPTIONS[fn]), (fn, len(stmts))
        floats = {s.dst.type for s in stmts} & {"f32", "f64"}
        assert floats == {"f32", "f64"}, (fn, floats)
        # binary32 only converts and selects (the exceptions): every rounding but the last is
        # binary64
        f32_ops = {s.op for s in stmts if s.dst.type == "f32"}
        assert f32_ops <= {"convert", "select", "neg"}, (fn, f32_ops)


def test_the_emitted_step_lists_give_the_interpreters_bits() -> None:
    for fn in FNS:
        x = dense(fn, 9)[::3].view(np.float32)
        want = expolog32.unary(fn, x)
        got = _run_steps(fn, "f32", x)
        bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        assert not bad.size, (fn, bad.size, x[bad[:5]], got[bad[:5]], want[bad[:5]])


# --- the real pipeline -------------------------------------------------------------------------

SRC = "".join(
    f"pub fn {fn}_s(x: f32) -> f32 {{ {fn}(x) }}\n"
    f"pub fn {fn}_v[N](x: &f32[N]) -> f32[N] {{ {fn}(x) }}\n"
    for fn in FNS
) + (
    "pub fn mix[N](x: &f32[N], y: &f32[N]) -> f32[N] "
    "{ exp(x) * log(y) - tanh(x - y) + sigmoid(y * 4.0) }\n"
    "pub fn soft[N](x: &f32[N]) -> f32[N] { softmax(x) }\n"
)
NAMES = [f"{fn}_{k}" for fn in FNS for k in "sv"] + ["mix", "soft"]
SIZES = (0, 1, 17, 1025)


def _module():
    a = analyze(SRC)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def _inputs(name: str, n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    pool = np.concatenate(
        [
            np.array(special_bits("f32"), np.uint32).view(np.float32),
            np.array([v for e in _EDGES.values() for v in e], np.float32),
        ]
    )
    pool = np.concatenate([pool, -pool])

    def vec(k: int) -> np.ndarray:
        x = (rng.standard_normal(k) * np.exp2(rng.integers(-20, 7, k))).astype(np.float32)
        planted = rng.random(k) < 0.4
        x[planted] = rng.choice(pool, int(planted.sum()))
        return x

    if name.endswith("_s"):
        return [{"x": v} for v in vec(24)]
    if name == "mix":
        return [{"x": vec(n), "y": vec(n)}]
    if name == "soft":
        return [{"x": np.clip(vec(n), -80, 80)}, {"x": vec(n)}]
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
    _agree("verilog", ["exp_v", "log_v", "tanh_v", "sigmoid_v"], (0, 3))


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


def test_the_sweep_script_checks_ranges_fixed_and_computed(tmp_path) -> None:
    """scripts/cr32_sweep.py on small windows across each fixed/computed boundary (its
    --stride-fixed sampling) of §6.2–§6.5's functions and of some of §6.9's, and across
    +inf/NaN: no failures, and the step list runs everywhere it computes. A second run with
    the same --log resumes (runs nothing) and --summary reports the window."""
    import subprocess
    import sys

    windows = {
        "exp": (0x42B1F000, 0x42B21000),  # the overflow select at 89
        "log": (0x7F7FF000, 0x80001000),  # +inf, the NaNs, −0 and the negatives
        "tanh": (0x411FF000, 0x41201000),  # the ±1 select at 10
        "sigmoid": (0x42EFF000, 0x42F01000),  # the clamp at 120
        "exp2": (0x42FFF000, 0x43001000),  # the +inf select at 128
        "log1p": (0xBF7FF000, 0xBF801000),  # −1 and the NaN select below it
        "erfc": (0xC1DA5000, 0xC1DA7000),  # the select of 2 at x ≤ −27.3
        "cos": (0x31FFF000, 0x32001000),  # the select of 1 at |x| < 2^−27
    }
    root = Path(__file__).resolve().parent.parent
    log = tmp_path / "sweep.jsonl"

    def sweep_script(*args: str) -> list[str]:
        cmd = [sys.executable, "scripts/cr32_sweep.py", *args]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=root)
        return done.stdout.splitlines()

    for fn, (lo, hi) in windows.items():
        args = [fn, "--lo", hex(lo), "--hi", hex(hi), "--stride-fixed", "64"]
        r = json.loads(sweep_script(*args, "--engine", "interp", "--log", str(log))[-1])
        assert r["function"] == fn and r["inputs"] == hi - lo and r["failures"] == 0, r
        assert 0 < r["step_list_runs"] < hi - lo and r["chunks_from_log"] == 0, r
    again = json.loads(
        sweep_script("exp2", "--lo", "0x42FFF000", "--hi", "0x43001000", "--log", str(log))[-1]
    )
    assert again["chunks_from_log"] == 1 and again["inputs"] == 0x2000, again
    ranges = [json.loads(line) for line in sweep_script("--summary", str(log))]
    assert sorted(g["function"] for g in ranges) == sorted(windows)
    assert all(g["failures"] == [] for g in ranges)
    assert {(g["lo"], g["hi"]) for g in ranges} == set(windows.values())
