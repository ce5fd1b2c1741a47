"""exp/log/tanh/sigmoid on the wasm target, lane-wise and scalar, bit for bit.

The step lists come from the loop program (kera_core/loops/composite.py); the wasm target
runs binary32's as v128 lanes (evaluated in binary64: f32 lanes widened to f64x2 and
narrowed back, the shared vector plan's mixed widths, with i64x2 lanes for the exponent
arithmetic) and, for the last elements and in a module built with ``vectors=False``, as
scalar code. Both must give the interpreter's bits (kera_core/interp/mathfns.py,
kera_core/interp/expolog32.py; NaN canonical). Inputs per function and format: random bit patterns, dense sweeps of the ranges
where the step lists switch cases (thresholds, scaleB's cases, subnormals, near 1, the
binary64 tanh's former switch at 0.625), and the special values, shuffled and also planted at
every lane position among ordinary values so the per-lane selects are exercised.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kera_core.backends.wasm import assemble, lower_wat, run_wasm
from kera_core.interp import expolog32 as E32
from kera_core.interp import mathfns as M
from tests.test_wasm import module

OPS = ("exp", "log", "tanh", "sigmoid")
DT = {"f32": (np.float32, np.uint32), "f64": (np.float64, np.uint64)}
N_RANDOM = 50_000
SRC = "".join(f"pub fn {op}_{w}[N](x: &{w}[N]) -> {w}[N] {{ {op}(x) }}\n" for op in OPS for w in DT)


@functools.cache
def _artifact(name: str, vectors: bool) -> bytes:
    g = module(SRC).graph
    return assemble(lower_wat(g, name, vectors=vectors), g.fingerprint())


def run(name: str, x: np.ndarray, vectors: bool) -> np.ndarray:
    m = module(SRC)
    res = run_wasm(_artifact(name, vectors), m.graph, name, {"x": x}, provenance=m.provenance)
    return np.asarray(res.outputs[0].value)


def _from_bits(w: str, bits) -> np.ndarray:
    ft, ut = DT[w]
    return np.asarray(bits, dtype=np.uint64).astype(ut).view(ft)


def _around(w: str, values, width: int) -> np.ndarray:
    """The ``width`` floats on either side of each value (by bit pattern, same sign)."""
    ft, ut = DT[w]
    out = []
    for v in values:
        b = int(np.array(v, ft).view(ut))
        lo = max(b - width, b & (1 << (8 * ft().itemsize - 1)))
        out.append(np.arange(lo, b + width + 1, dtype=np.uint64))
    return _from_bits(w, np.concatenate(out))


def specials(w: str) -> np.ndarray:
    ft, ut = DT[w]
    if w == "f32":
        bits = [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFFC00001, 0xFF800001]
        bits += [1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x00000002, 0x00400000]
    else:
        bits = [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001]
        bits += [0x7FFFFFFFFFFFFFFF, 0xFFF8000000000001, 0xFFF0000000000001]
        bits += [1, 0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 2]
        bits += [0x0008000000000000]
    x = _from_bits(w, bits)
    consts = thresholds(w)
    plain = np.array([0.0, np.inf, 1.0, 0.5, 2.0, 0.625, 10.0, 22.0, 88.0, 709.0], ft)
    pos = np.concatenate([np.abs(x[6:]), consts, plain])
    with np.errstate(over="ignore"):
        pos = np.concatenate([pos, np.nextafter(pos, ft(np.inf)), np.nextafter(pos, ft(0))])
    return np.concatenate([x[:6], pos, -pos])


def thresholds(w: str) -> np.ndarray:
    """Where the step lists switch: binary64's constants (mathfns.CONSTS), binary32's
    (kera_core/interp/expolog32.py) and its overflow/underflow boundaries."""
    if w == "f64":
        c = M.CONSTS[w]
        bits = [c.exp_over, c.exp_under, c.sqrt2, c.tanh_tiny, c.tanh_one, c.sigmoid_far]
        bits += [c.inv_ln2]
        return _from_bits(w, bits)
    x = [E32.EXP_OVER, E32.EXP_UNDER, E32.SIGMOID_SMALL, E32.TANH_ONE, E32.SIGMOID_CLAMP]
    return np.array([*x, 88.72283, -103.97208, 1.4142135, 1.442695, 9.010913], np.float32)


def interesting(op: str, w: str, rng) -> np.ndarray:
    """Dense sweeps where the step lists change behaviour."""
    ft, ut = DT[w]
    f = M.F32 if w == "f32" else M.F64
    ln2 = float(np.log(2.0))
    over, under = (float(v) for v in thresholds(w)[:2])
    # log-uniform magnitudes over the whole range, both signs
    hi_exp = 127 if w == "f32" else 1023
    lo_exp = -149 if w == "f32" else -1074
    mags = np.exp2(rng.uniform(lo_exp, hi_exp, 20_000)).astype(ft)
    logu = np.concatenate([mags, -mags[:5_000]])
    parts = [logu]
    if op == "exp":
        parts += [
            np.linspace(under - 2, over + 2, 40_000).astype(ft),
            _around(w, [over, under, -over, -under], 2_000),
            # scaleB's case boundaries (k = emin, emax, emax + 1) and the subnormal results
            _around(w, [(f.emin - 0.5) * ln2, (f.emax - 0.5) * ln2, (f.emax + 0.5) * ln2], 2_000),
            _around(w, [(f.emin - 63.5) * ln2, (f.emin - 10) * ln2], 500),
            # near-ties of roundeven(x * INV_LN2)
            _around(w, [(j + 0.5) * ln2 for j in range(-40, 40)], 20),
            rng.uniform(-1, 1, 10_000).astype(ft) * ft(1e-3),
        ]
    elif op == "log":
        sub = rng.integers(1, 1 << f.mant, 20_000, dtype=np.uint64)
        parts += [
            _from_bits(w, sub),
            _around(w, [1.0], 10_000),
            _around(w, [np.sqrt(2.0) * 2.0**e for e in (-3, 0, 1, 7)], 300),
            _around(w, [2.0**e for e in (-1, 1, 2, lo_exp + f.mant, hi_exp)], 300),
            rng.uniform(0, 4, 20_000).astype(ft),
        ]
    else:
        one = 22.0 if w == "f64" else E32.TANH_ONE
        lim = 25.0 if op == "tanh" else -under + 5
        parts += [
            np.linspace(-lim, lim, 40_000).astype(ft),
            _around(w, [0.625, -0.625, one, -one, under, -under, over, -over], 2_000),
            _around(w, [2.0**-12, 2.0 ** (-f.mant), 2.0 ** (lo_exp + f.mant)], 200),
            rng.uniform(-1, 1, 20_000).astype(ft),
        ]
        if w == "f64":  # tanh x = x below 2^−27; sigmoid's subnormal results, +0 from −745.13
            parts.append(_around(w, [2.0**-27, -(2.0**-27), -708.4, -709.1, -745.13], 1_000))
    return np.concatenate(parts)


def inputs(op: str, w: str) -> np.ndarray:
    ft, ut = DT[w]
    lanes = 16 // ft().itemsize
    rng = np.random.default_rng([OPS.index(op), int(w[1:])])
    rand = rng.integers(0, np.iinfo(ut).max, N_RANDOM, dtype=ut, endpoint=True).view(ft)
    sp = specials(w)
    body = np.concatenate([rand, interesting(op, w, rng), sp])
    rng.shuffle(body)
    # every special at every lane position, the other lanes ordinary values
    planted = np.repeat(rng.standard_normal(len(sp) * lanes).astype(ft)[:, None], lanes, 1)
    planted = planted * rng.uniform(0.5, 2, planted.shape).astype(ft)
    for j in range(lanes):
        planted[j::lanes, j] = sp
    x = np.concatenate([body, planted.ravel()])
    pad = -len(x) % lanes
    return np.concatenate([x, np.zeros(pad, ft)])


def _bits_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bitwise equal, or both NaN."""
    ut = DT["f32" if a.dtype == np.float32 else "f64"][1]
    na, nb = np.isnan(a), np.isnan(b)
    return np.where(na | nb, na & nb, a.view(ut) == b.view(ut))


@pytest.mark.parametrize("w", ["f32", "f64"])
@pytest.mark.parametrize("op", OPS)
def test_lanes_and_scalar_match_the_interpreter(op: str, w: str) -> None:
    x = inputs(op, w)
    assert x.size >= N_RANDOM
    vec = run(f"{op}_{w}", x, True)
    sca = run(f"{op}_{w}", x, False)
    ref = np.asarray(M.UNARY[op](x))
    ut = DT[w][1]
    for name, got, want in (("lanes/interpreter", vec, ref), ("scalar/interpreter", sca, ref)):
        ok = _bits_equal(got, want)
        if not ok.all():
            i = np.flatnonzero(~ok)[:5]
            raise AssertionError(
                f"{op} {w} {name}: {int((~ok).sum())} of {x.size} differ, e.g. "
                + ", ".join(
                    f"x={x[j]!r} ({int(x[j : j + 1].view(ut)[0]):#x}): {got[j]!r} vs {want[j]!r}"
                    for j in i
                )
            )


def test_the_step_lists_run_lane_wise() -> None:
    """binary32's step lists vectorise, in binary64 lanes (f64's stay scalar: WebAssembly
    has no f64x2 ↔ i64x2 conversion)."""
    g = module(SRC).graph
    for op in OPS:
        body = lower_wat(g, f"{op}_f32")
        assert "f64x2.promote_low_f32x4" in body and "f32x4.demote_f64x2_zero" in body, op
        assert "f64x2.mul" in body, op
