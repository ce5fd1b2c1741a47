"""The elementary functions of issue 16 item 5 (docs/semantics.md §6.9): `exp2`, `log2`,
`expm1`, `log1p`, `hypot`, `sin`, `cos`, `tan`, `atan2`, `pow`, `erf`, `erfc` — each one
fixed step list (kera_core/interp/elementary.py).

* binary32: the interpreter's result is the correctly rounded one on a dense sample (every
  binade's edges, all special values, the ranges where each function turns, ~10^6 random bit
  patterns each), against tests/elementary_ref.py's reference (numpy's binary64 function
  rounded, mpmath at 256 bits wherever that could be wrong); ``KERA_EXHAUSTIVE=1`` checks
  all 2^32 inputs of each unary function (`erf`, `erfc`: against the C library's binary64
  function, numpy has none). `hypot`: random pairs, pairs of close magnitudes,
  Pythagorean triples and near-midpoint cases; `atan2`: random pairs, ratios across the
  whole range, the axes and diagonals; `pow`: pairs whose result spans the finite range,
  integer and half-integer exponents of negative and exact bases, the exact and midpoint
  cases;
* binary64: within one ulp of mpmath (256 bits) on a sample (``KERA_EXHAUSTIVE=1``: 10^7
  inputs against numpy, every disagreement and a 10^5 subsample decided by mpmath);
* the special values of C99 Annex F, NaN canonical, the sign of zero;
* the step list as the loop layer emits it, evaluated primitive by primitive on whole arrays,
  gives the interpreter's bits; the real pipeline (loop program in both shapes, x86-64 at
  every level this CPU runs, arm64 under unicorn, verilog on small cases) gives the
  interpreter's bits on scalars and tensors; the ptx text assembles; wasm gives the same bits;
* the type checker, constant folding, the builtin lists.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import elementary as E
from kera_core.interp import fp, mathfns
from kera_core.interp.api import run_function as reference
from kera_core.loops import composite as C
from kera_core.loops import lower_program, run_function
from kera_core.loops.emit import Emitter
from kera_core.loops.ir import Imm, Op, Var
from kera_core.loops.target import CPU, GRID
from kera_core.targets import get, run_module
from tests.elementary_ref import NP, check_f32, mp_value, round_mp, sweep, ulp_error
from tests.outcomes import outcome, runnable_target, same_as_reference, x86_levels
from tests.test_exact_functions import special_bits
from tests.tools import tool_missing

TRIG = ("sin", "cos", "tan")
UNARY = ("exp2", "log2", "expm1", "log1p", *TRIG, "erf", "erfc")
BIN = ("hypot", "atan2", "pow")
FNS = (*UNARY, *BIN)
FLOATS = ("f32", "f64")
DT = {"f32": np.float32, "f64": np.float64}
UT = {"f32": np.uint32, "f64": np.uint64}
EXHAUSTIVE = bool(os.environ.get("KERA_EXHAUSTIVE"))

mpmath = pytest.importorskip("mpmath")


def _bits(a, t: str) -> np.ndarray:
    return np.asarray(a, DT[t]).view(UT[t])


def interp(fn: str, x, y=None):
    return E.unary(fn, x) if y is None else E.binary(fn, x, y)


# --- binary32: correctly rounded ------------------------------------------------------------------

# where each function turns: thresholds, exact cases, the neighbourhood of 0 and 1
_EDGES = {
    "exp2": [0.0, 1.0, -1.0, 0.5, 127.0, 128.0, -126.0, -149.0, -150.0, -149.5, 64.25, 2**-25],
    "log2": [1.0, 2.0, 0.5, 2.0**-126, 2.0**-149, 1.4142135, 0.70710677, 3.0, 2.0**127],
    "expm1": [0.0, 2.0**-25, 2.0**-26, 88.72283, 88.7, -17.4, -17.3, 0.3465736, 0.6931472, -0.69],
    "log1p": [0.0, -1.0, -0.5, 2.0**-25, 2.0**-26, 0.41421357, -0.29289323, 1.0, 2.0**24],
}
# sin, cos, tan: the switches (2^−27, 0.78125), the binary32 numbers nearest to k·π/2 for
# k < 64 and to a few huge multiples, the largest values, where the reduction is hardest
_TRIG_EDGES = [2.0**-27, 2.0**-12, 0.78125, 2.0**24, 2.0**100, 3.4028235e38, 16367173.0]
_TRIG_EDGES += [k * np.pi / 2 for k in range(1, 64)] + [1e4 * np.pi, 1e6 * np.pi, 2.0**90 * np.pi]
for _fn in TRIG:
    _EDGES[_fn] = _TRIG_EDGES
# erf, erfc: the switch at 1, the ends of erfc's intervals, where erf reaches 1 and erfc
# leaves the normal range and reaches 0 (binary32), the clamp at 27.3
_ERF_EDGES = [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 27.3]
_EDGES["erf"] = [*_ERF_EDGES, 2.0**-60, 2.0**-126, 0.5, 3.9]
_EDGES["erfc"] = [*_ERF_EDGES, 9.1, 9.2, 10.0, 10.06, 0.47, 2.0**-25]


def around(values, ulps: int) -> np.ndarray:
    """Every binary32 bit pattern within ``ulps`` of each |value|, with either sign."""
    out = []
    for v in np.abs(np.array(values, np.float32)).view(np.uint32).astype(np.int64):
        r = np.arange(max(int(v) - ulps, 0), min(int(v) + ulps + 1, 0x7F800001), dtype=np.int64)
        out += [r, r | (1 << 31)]
    return np.concatenate(out).astype(np.uint32)


def dense_f32(fn: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    parts = [np.array(special_bits("f32"), np.uint32)]
    parts.append(rng.integers(0, 1 << 32, 1_000_000, dtype=np.uint64).astype(np.uint32))
    edges = np.array(_EDGES[fn], np.float64)
    parts.append(around(edges, 2000))
    # a strided pass over [1/4, 4) (either sign), where the reductions change branch
    parts.append(np.arange(0x3E800000, 0x40800000, 61, dtype=np.uint32))
    parts.append(np.arange(0xBE800000, 0xC0800000, 61, dtype=np.uint32))
    return np.concatenate(parts)


@pytest.mark.parametrize("fn", UNARY)
def test_f32_is_correctly_rounded_on_a_dense_sample(fn: str) -> None:
    xb = dense_f32(fn)
    chunk = 1 << 20
    for start in range(0, len(xb), chunk):
        failures, _ = check_f32(fn, xb[start : start + chunk].view(np.float32))
        assert not failures, (fn, failures[:10])


# the sweep's brief profile (default runs and CI): one contiguous window of 2^18 bit patterns
# per function, a different binade for each; KERA_EXHAUSTIVE=1 sweeps all 2^32
BRIEF = 1 << 18


@pytest.mark.parametrize("fn", UNARY)
def test_f32_is_correctly_rounded_on_all_2_32_inputs(fn: str) -> None:
    if EXHAUSTIVE:
        failures, _ = sweep(fn)
    else:
        lo = 0x3C000000 + UNARY.index(fn) * (1 << 23)  # from 2^-7 upward, one binade each
        failures, _ = sweep(fn, lo, lo + BRIEF)
    assert not failures, (fn, failures[:10])


def _pythagorean(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Legs of triples (m² − k², 2mk): exact integer hypotenuses, many of them odd
    25-bit numbers (binary32 midpoints) — the ties of hypot."""
    m = np.arange(2, n + 2, dtype=np.int64)
    k = np.arange(1, n + 1, dtype=np.int64) * 37 % m
    k = np.maximum(k, 1)
    a, b = m * m - k * k, 2 * m * k
    ok = (a > 0) & (a < 1 << 24) & (b < 1 << 24)
    return a[ok].astype(np.float32), b[ok].astype(np.float32)


def test_f32_hypot_is_correctly_rounded_on_a_sample() -> None:
    rng = np.random.default_rng(4)
    n = 1_000_000
    xb = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    yb = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        close = (xb * np.exp2(rng.uniform(-30, 0, n))).astype(np.float32)
    m = np.arange(4000, 4000 + 4096 * 4093, 4093, dtype=np.float64)
    pa, pb = _pythagorean(6000)
    sp = np.array(special_bits("f32"), np.uint32).view(np.float32)
    pairs = [
        (xb, yb),
        (xb, close),
        (pa, pb),
        (pa * np.float32(2.0**-140), pb * np.float32(2.0**-140)),
        (pa * np.float32(2.0**100), pb * np.float32(2.0**100)),
        (m.astype(np.float32), np.ones(m.size, np.float32)),
        (sp, rng.permutation(sp)),
        (sp, np.full(sp.size, np.float32(np.nan))),
    ]
    for x, y in pairs:
        failures, _ = check_f32("hypot", x, y)
        assert not failures, failures[:10]


def _random_f32(rng, n: int) -> np.ndarray:
    return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)


def atan2_pairs_f32(rng, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(y, x) pairs: random bit patterns, ratios y/x = ±2^u for u across the whole range
    (both sides of the switch at |y| = |x| and of the 2^−80 clamp), the axes and diagonals."""
    x = _random_f32(rng, n)
    with np.errstate(all="ignore"):
        ratio = np.exp2(rng.uniform(-100, 100, n)) * rng.choice([-1.0, 1.0], n)
        near = (x * ratio).astype(np.float32)
        diag = (x * (1 + rng.uniform(-(2.0**-10), 2.0**-10, n))).astype(np.float32)
    sp = np.array(special_bits("f32"), np.uint32).view(np.float32)
    return [
        (_random_f32(rng, n), x),
        (near, x),
        (diag, x),
        (-diag, x),
        (sp, rng.permutation(sp)),
        (rng.permutation(sp), sp),
    ]


def _midpoint_bases() -> list[tuple[np.ndarray, float]]:
    """Bases whose power is a 25-bit odd integer (a binary32 midpoint) or exact: w² for a
    13-bit odd w, w³ for a 9-bit one ((w²)^1.5 too), and small integers to small powers."""
    w13 = np.arange(4097, 5793, 2, dtype=np.float64)
    w9 = np.arange(257, 323, 2, dtype=np.float64)
    out = [(w13, 2.0), (w13 * 2.0**-20, 2.0), (w9, 3.0), (w9 * w9, 1.5), (w9 * 2.0**-12, 3.0)]
    out += [(np.arange(1, 64, dtype=np.float64), float(k)) for k in range(2, 16)]
    out += [(np.arange(1, 64, dtype=np.float64) ** 2, 0.5), (np.array([1 + 2.0**-12]), 2.0)]
    return out


def pow_pairs_f32(rng, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(x, y) pairs: random positive x with y chosen so x^y spans [2^−160, 2^140] (subnormal
    results, overflow and underflow thresholds included), x near 1 with large y, negative x
    with integer y, random bit patterns, special values, the exact and midpoint cases."""
    x = np.abs(_random_f32(rng, n))
    x = np.where(np.isfinite(x) & (x != 0) & (x != 1), x, np.float32(3.0))
    with np.errstate(all="ignore"):
        y = (rng.uniform(-160, 140, n) / np.log2(x.astype(np.float64))).astype(np.float32)
        x1 = (1 + rng.uniform(-(2.0**-10), 2.0**-10, n)).astype(np.float32)
        y1 = (rng.uniform(-150, 130, n) / np.log2(x1.astype(np.float64))).astype(np.float32)
    xi = -np.exp2(rng.uniform(-20, 20, n)).astype(np.float32)
    yi = rng.integers(-40, 40, n).astype(np.float32)
    sp = np.array(special_bits("f32"), np.uint32).view(np.float32)
    pairs = [(x, y), (x1, y1), (xi, yi), (_random_f32(rng, n), _random_f32(rng, n))]
    pairs += [(sp, rng.permutation(sp)), (rng.permutation(sp), sp)]
    pairs += [(b.astype(np.float32), np.full(b.size, e, np.float32)) for b, e in _midpoint_bases()]
    pairs += [(-b.astype(np.float32), np.full(b.size, e, np.float32)) for b, e in _midpoint_bases()]
    return pairs


@pytest.mark.parametrize("fn", ("atan2", "pow"))
def test_f32_atan2_and_pow_are_correctly_rounded_on_a_sample(fn: str) -> None:
    rng = np.random.default_rng(14)
    n = 1_000_000 if EXHAUSTIVE else 200_000
    for a, b in (atan2_pairs_f32 if fn == "atan2" else pow_pairs_f32)(rng, n):
        failures, _ = check_f32(fn, a, b)
        assert not failures, (fn, failures[:10])


def test_f32_pow_midpoints_round_to_even() -> None:
    """x^y exactly halfway between two binary32 numbers: ties to even, as the exact value says."""
    for b, e in _midpoint_bases()[:4]:
        x = b.astype(np.float32)
        got = interp("pow", x, np.full(x.size, e, np.float32))
        want = (b.astype(np.float64) ** e).astype(np.float32)  # exact in binary64, then rounded
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (e, b[:3])


# --- binary64: within one ulp of mpmath ----------------------------------------------------------


def sample_f64(fn: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lo, hi = {"exp2": (-1080, 1030), "expm1": (-50, 712)}.get(fn, (0, 0))
    if fn in TRIG:
        lo, hi = -1e4, 1e4
    if fn in ("erf", "erfc"):
        lo, hi = -6.0, 6.0 if fn == "erf" else 27.5
    parts = [
        np.exp2(rng.uniform(-60, 4, n)) * rng.choice([-1.0, 1.0], n),
        rng.integers(0, 1 << 64, n, dtype=np.uint64).view(np.float64),
    ]
    if lo != hi:
        parts.append(rng.uniform(lo, hi, n))
    else:
        parts.append(np.exp2(rng.uniform(-1074, 1024, n)))
        parts.append(rng.uniform(0.0, 3.0, n))
        if fn == "log1p":
            parts.append(-rng.uniform(0.0, 1.0, n))
    x = np.concatenate(parts)
    return x[np.isfinite(x)]


def _f64_errors(fn: str, x: np.ndarray, y: np.ndarray | None = None) -> tuple[float, object]:
    got = interp(fn, x, y)
    worst, at = 0.0, None
    for i in range(len(x)):
        args = (float(x[i]),) if y is None else (float(x[i]), float(y[i]))
        err = ulp_error(float(got[i]), mp_value(fn, *args), "f64")
        if err > worst:
            worst, at = err, args
    return worst, at


@pytest.mark.parametrize("fn", UNARY)
def test_f64_is_within_one_ulp_of_mpmath(fn: str) -> None:
    x = sample_f64(fn, 700, 5)
    worst, at = _f64_errors(fn, x)
    assert worst <= 0.5 + 2**-10, (fn, worst, at)  # every sample result correctly rounded


def test_f64_hypot_is_within_one_ulp_of_mpmath() -> None:
    rng = np.random.default_rng(6)
    n = 1500
    x = np.exp2(rng.uniform(-1074, 1023, n)) * rng.choice([-1.0, 1.0], n)
    y = x * np.exp2(rng.uniform(-60, 2, n))
    tiny = np.exp2(rng.uniform(-1074, -1015, n))
    worst, at = _f64_errors("hypot", np.concatenate([x, tiny]), np.concatenate([y, tiny[::-1]]))
    # 0.5 ulp where the result is normal; the top subnormal binade rounds twice (≤ 0.75)
    assert worst <= 0.75, (worst, at)


def second_f64(fn: str, x: np.ndarray, rng) -> np.ndarray:
    """The second operand for x (binary64): hypot and atan2 y = ±x·2^u; pow: y with |x^y| in
    [2^−1100, 2^1050] (|x| first), a fifth small integers for negative x."""
    if fn == "pow":
        with np.errstate(all="ignore"):
            y = rng.uniform(-1100, 1050, x.size) / np.log2(np.abs(x))
        y = np.where(np.isfinite(y), y, 2.5)
        k = rng.random(x.size) < 0.2
        y[k] = rng.integers(-60, 60, int(k.sum()))
        return y
    lo = -40 if fn == "hypot" else -90
    with np.errstate(over="ignore"):
        y = x * np.exp2(rng.uniform(lo, 2 if fn == "hypot" else 90, x.size))
    return y if fn == "hypot" else y * rng.choice([-1.0, 1.0], x.size)


def _first_f64(fn: str, x: np.ndarray, rng) -> np.ndarray:
    if fn != "pow":
        return x
    x = np.abs(x)
    x = np.where((x == 0) | (x == 1), 3.0, x)
    k = rng.random(x.size) < 0.1
    return np.where(k, -x, x)


# §6.2–§6.5's binary64 functions (kera_core/interp/mathfns.py) and their sampled ranges
CR64 = {
    "exp": (-746.0, 710.0),
    "log": (0.0, 4.0),
    "tanh": (-23.0, 23.0),
    "sigmoid": (-750.0, 40.0),
    "sqrt": (0.0, 4.0),
}
F64 = (*CR64, "exp2", "log2", "expm1", "log1p", "hypot", *TRIG, "atan2", "pow", "erf", "erfc")


def sample64(fn: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """About n binary64 inputs of fn — (x, None), or the operands (a, b) of hypot, atan2, pow
    — as the accuracy tables of docs/semantics.md sample them. §6.7's functions: a quarter
    each uniform in the function's range (CR64), uniform in [−1, 1], random bit patterns and
    log-uniform magnitudes in [e^−740, e^700] (made positive for log and sqrt). §6.9's: the
    parts of :func:`sample_f64` (n/3 each), with :func:`second_f64`'s second operand."""
    rng = np.random.default_rng(seed)
    if fn in CR64:
        lo, hi = CR64[fn]
        q = n // 4
        x = np.concatenate(
            [
                rng.uniform(lo, hi, q),
                rng.uniform(-1.0, 1.0, q),
                rng.integers(0, 1 << 64, q, dtype=np.uint64).view(np.float64),
                np.exp(rng.uniform(-740.0, 700.0, n - 3 * q)),
            ]
        )
        if fn in ("log", "sqrt"):
            x = np.abs(x)
        return x[np.isfinite(x)], None
    x = _first_f64(fn, sample_f64(fn, max(n // 3, 1), seed), rng)
    if fn not in BIN:
        return x, None
    y = second_f64(fn, x, rng)
    return (x, y) if fn == "pow" else (y, x)


def kera64(fn: str, a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """The interpreter's binary64 results (every target's bits, tested elsewhere)."""
    if fn in CR64:
        return mathfns.UNARY[fn](a)
    return interp(fn, a, b)


@pytest.mark.parametrize("fn", ("atan2", "pow"))
def test_f64_atan2_and_pow_are_within_one_ulp_of_mpmath(fn: str) -> None:
    rng = np.random.default_rng(15)
    x = _first_f64(fn, sample_f64(fn, 500, 16), rng)
    y = second_f64(fn, x, rng)
    worst, at = _f64_errors(fn, x, y) if fn == "pow" else _f64_errors(fn, y, x)
    assert worst <= 0.5 + 2**-10, (fn, worst, at)  # every sample result correctly rounded


@pytest.mark.parametrize("fn", FNS)
def test_f64_on_ten_million_inputs(fn: str) -> None:
    """Against numpy on 10^7 inputs (brief profile: 10^5): where the results differ, and on a
    10^5 subsample (brief: 10^3), the error against mpmath is at most one ulp."""
    rng = np.random.default_rng(7)
    parts, per_part, sub = (10, 1_000_000, 10_000) if EXHAUSTIVE else (1, 100_000, 1_000)
    for part in range(parts):
        x = _first_f64(fn, sample_f64(fn, per_part // 3, 100 + part), rng)
        y = second_f64(fn, x, rng) if fn in BIN else None
        got = interp(fn, x, y)
        with np.errstate(all="ignore"):
            want = NP[fn](x) if y is None else NP[fn](x, y)
        differ = np.flatnonzero(got.view(np.uint64) != fp.canon(want).view(np.uint64))
        check = np.union1d(differ, rng.choice(x.size, sub, replace=False))
        worst, at = _f64_errors(fn, x[check], None if y is None else y[check])
        assert worst <= 1.0, (fn, worst, at)


# --- sin, cos, tan: the argument reduction -----------------------------------------------------


def test_two_over_pi_words_are_the_bits_of_2_over_pi() -> None:
    mp = mpmath.mp
    with mpmath.workprec(64 * len(E.TWO_OVER_PI) + 64):
        v = mpmath.mpf(2) / mp.pi
        want = [int(mpmath.floor(v * mpmath.mpf(2) ** (64 * j))) % (1 << 64) for j in range(20)]
    assert list(E.TWO_OVER_PI) == want


def test_the_reduction_is_exact_to_2_pow_minus_73_at_the_hardest_inputs() -> None:
    """Payne–Hanek (§6.9) against mpmath with enough bits of π: the worst case of reduction
    modulo π/2 over all binary64 inputs, the largest values, every binade's edges, and the
    binary64 numbers nearest to k·π/2."""
    worst = 6381956970095103 * 2.0**797
    rng = np.random.default_rng(12)
    x = [worst, np.nextafter(worst, 0), 1.7976931348623157e308, 1e22, 2.0**1023, 0.78125, 1.0]
    x += [float(np.pi / 2 * k) for k in (1, 2, 3, 4, 5, 100, 1000, 10**6, 10**9, 2**40)]
    x += [2.0**e for e in range(-1, 1024, 7)]
    x += list(np.exp2(rng.uniform(-1, 1023, 300)))
    xa = np.array(x)
    j, rh, rl = E._reduce_pio2(E.NumpyOps, xa)
    with mpmath.workprec(1300):
        for i, xi in enumerate(x):
            X = mpmath.mpf(xi)
            k = mpmath.nint(X / (mpmath.pi / 2))
            r = X - k * mpmath.pi / 2
            got = mpmath.mpf(float(rh[i])) + mpmath.mpf(float(rl[i]))
            assert int(k) % 4 == int(j[i]), xi
            assert abs(got / r - 1) < mpmath.mpf(2) ** -73, (xi, float(r), float(got))
    for fn in TRIG:
        for xi in (worst, -worst):
            got = float(interp(fn, np.array([xi]))[0])
            assert got == round_mp(mp_value(fn, xi), "f64"), (fn, xi, got)


# --- special values (C99 Annex F; NaN canonical) -----------------------------------------------

INF, NAN = float("inf"), float("nan")
_SPECIAL = [
    ("exp2", (0.0,), 1.0),
    ("exp2", (-0.0,), 1.0),
    ("exp2", (INF,), INF),
    ("exp2", (-INF,), 0.0),
    ("exp2", (NAN,), NAN),
    ("exp2", (3.0,), 8.0),
    ("exp2", (-1.0,), 0.5),
    ("log2", (1.0,), 0.0),
    ("log2", (0.0,), -INF),
    ("log2", (-0.0,), -INF),
    ("log2", (-1.0,), NAN),
    ("log2", (-INF,), NAN),
    ("log2", (INF,), INF),
    ("log2", (NAN,), NAN),
    ("log2", (8.0,), 3.0),
    ("expm1", (0.0,), 0.0),
    ("expm1", (-0.0,), -0.0),
    ("expm1", (INF,), INF),
    ("expm1", (-INF,), -1.0),
    ("expm1", (NAN,), NAN),
    ("log1p", (0.0,), 0.0),
    ("log1p", (-0.0,), -0.0),
    ("log1p", (-1.0,), -INF),
    ("log1p", (-2.0,), NAN),
    ("log1p", (INF,), INF),
    ("log1p", (-INF,), NAN),
    ("log1p", (NAN,), NAN),
    ("hypot", (3.0, 4.0), 5.0),
    ("hypot", (-0.0, 0.0), 0.0),
    ("hypot", (-0.0, -0.0), 0.0),
    ("hypot", (INF, NAN), INF),
    ("hypot", (NAN, -INF), INF),
    ("hypot", (NAN, 1.0), NAN),
    ("hypot", (-5.0, 0.0), 5.0),
    *[(fn, (v,), NAN) for fn in TRIG for v in (INF, -INF, NAN)],
    *[(fn, (v,), v) for fn in ("sin", "tan") for v in (0.0, -0.0, 2.0**-30, -(2.0**-30))],
    *[("cos", (v,), 1.0) for v in (0.0, -0.0, 2.0**-30, -(2.0**-30))],
    ("erf", (0.0,), 0.0),
    ("erf", (-0.0,), -0.0),
    ("erf", (INF,), 1.0),
    ("erf", (-INF,), -1.0),
    ("erf", (30.0,), 1.0),
    ("erf", (-30.0,), -1.0),
    ("erf", (NAN,), NAN),
    ("erfc", (0.0,), 1.0),
    ("erfc", (-0.0,), 1.0),
    ("erfc", (INF,), 0.0),
    ("erfc", (-INF,), 2.0),
    ("erfc", (30.0,), 0.0),
    ("erfc", (-30.0,), 2.0),
    ("erfc", (NAN,), NAN),
    # atan2(y, x), C99 F.9.1.4
    ("atan2", (0.0, 0.0), 0.0),
    ("atan2", (-0.0, 0.0), -0.0),
    ("atan2", (0.0, -0.0), np.pi),
    ("atan2", (-0.0, -0.0), -np.pi),
    ("atan2", (0.0, -2.0), np.pi),
    ("atan2", (-0.0, -2.0), -np.pi),
    ("atan2", (0.0, 2.0), 0.0),
    ("atan2", (-0.0, 2.0), -0.0),
    ("atan2", (3.0, 0.0), np.pi / 2),
    ("atan2", (3.0, -0.0), np.pi / 2),
    ("atan2", (-3.0, 0.0), -np.pi / 2),
    ("atan2", (5.0, -INF), np.pi),
    ("atan2", (-5.0, -INF), -np.pi),
    ("atan2", (5.0, INF), 0.0),
    ("atan2", (-5.0, INF), -0.0),
    ("atan2", (INF, 7.0), np.pi / 2),
    ("atan2", (-INF, -7.0), -np.pi / 2),
    ("atan2", (INF, -INF), 3 * np.pi / 4),
    ("atan2", (-INF, -INF), -3 * np.pi / 4),
    ("atan2", (INF, INF), np.pi / 4),
    ("atan2", (-INF, INF), -np.pi / 4),
    ("atan2", (1.0, 1.0), np.pi / 4),
    ("atan2", (-2.0, -2.0), -3 * np.pi / 4),
    ("atan2", (NAN, 1.0), NAN),
    ("atan2", (1.0, NAN), NAN),
    ("atan2", (INF, NAN), NAN),
    # pow(x, y), C99 F.9.4.4
    *[("pow", (x, y), 1.0) for x in (2.0, -3.0, 0.0, -0.0, INF, -INF, NAN) for y in (0.0, -0.0)],
    *[("pow", (1.0, y), 1.0) for y in (NAN, INF, -INF, 0.5, -7.0)],
    ("pow", (-1.0, INF), 1.0),
    ("pow", (-1.0, -INF), 1.0),
    ("pow", (-1.0, NAN), NAN),
    ("pow", (NAN, 1.0), NAN),
    ("pow", (2.0, NAN), NAN),
    ("pow", (0.0, -3.0), INF),
    ("pow", (-0.0, -3.0), -INF),
    ("pow", (-0.0, -2.0), INF),
    ("pow", (-0.0, -0.5), INF),
    ("pow", (0.0, -INF), INF),
    ("pow", (-0.0, -INF), INF),
    ("pow", (0.0, 3.0), 0.0),
    ("pow", (-0.0, 3.0), -0.0),
    ("pow", (-0.0, 2.0), 0.0),
    ("pow", (-0.0, 0.5), 0.0),
    ("pow", (-0.0, INF), 0.0),
    ("pow", (-2.0, 0.5), NAN),
    ("pow", (-2.0, -1.5), NAN),
    ("pow", (-INF, 0.5), INF),
    ("pow", (0.5, -INF), INF),
    ("pow", (-0.5, -INF), INF),
    ("pow", (2.0, -INF), 0.0),
    ("pow", (-2.0, -INF), 0.0),
    ("pow", (0.5, INF), 0.0),
    ("pow", (-0.5, INF), 0.0),
    ("pow", (2.0, INF), INF),
    ("pow", (-2.0, INF), INF),
    ("pow", (-INF, -3.0), -0.0),
    ("pow", (-INF, -2.0), 0.0),
    ("pow", (-INF, -0.5), 0.0),
    ("pow", (-INF, 3.0), -INF),
    ("pow", (-INF, 2.0), INF),
    ("pow", (INF, -0.5), 0.0),
    ("pow", (INF, 0.5), INF),
    ("pow", (-2.0, 3.0), -8.0),
    ("pow", (-2.0, -3.0), -0.125),
    ("pow", (-2.0, 2.0), 4.0),
    ("pow", (3.0, 2.0), 9.0),
    ("pow", (4.0, 0.5), 2.0),
    ("pow", (-3.0, 1.0), -3.0),
    ("pow", (2.0, 1e30), INF),
    ("pow", (2.0, -1e30), 0.0),
    ("pow", (-2.0, 1e30), INF),
    ("pow", (0.5, 1e30), 0.0),
]


@pytest.mark.parametrize("t", FLOATS)
def test_special_values(t: str) -> None:
    for fn, args, want in _SPECIAL:
        a = [np.array([v], DT[t]) for v in args]
        for got in (interp(fn, *a), _run_steps(fn, t, *a)):
            w = fp.canon(np.array([want], DT[t]))
            assert _bits(got, t)[0] == _bits(w, t)[0], (fn, t, args, got, want)
    # a NaN of either sign, any payload, in: the canonical NaN out
    nan_neg = np.array([0xFFC00001 if t == "f32" else 0xFFF8000000000001], UT[t]).view(DT[t])
    canon = 0x7FC00000 if t == "f32" else 0x7FF8000000000000
    for fn in UNARY:
        assert _bits(interp(fn, nan_neg), t)[0] == canon
    for fn in BIN:
        assert _bits(interp(fn, nan_neg, np.array([1.5], DT[t])), t)[0] == canon


@pytest.mark.parametrize("t", FLOATS)
def test_overflow_and_underflow_thresholds(t: str) -> None:
    """The results just inside and outside the finite range are the correctly rounded ones."""
    top = {"f32": 2.0**127, "f64": 2.0**1023}[t]  # the largest binade starts here
    cases = {
        "exp2": [128.0, 127.99999, -149.0, -150.0, -149.99998, 1024.0, -1074.0, -1075.0],
        "expm1": [88.72283, 88.72284, 709.782712893384, 709.7827128933841, -60.0, -61.0],
        "hypot": [],
    }
    for fn in ("exp2", "expm1"):
        x = np.array(cases[fn], DT[t])
        got = interp(fn, x)
        for xi, gi in zip(x, got, strict=True):
            want = round_mp(mp_value(fn, float(xi)), t)
            assert _bits(gi, t) == _bits(want, t), (fn, t, xi, gi, want)
    h = np.array([top * 0.8], DT[t])
    got = interp("hypot", h, h)  # 1.13·2^(emax): finite
    want = round_mp(mp_value("hypot", float(h[0]), float(h[0])), t)
    assert _bits(got, t)[0] == _bits(want, t), (got, want)
    h = np.array([top * 1.5], DT[t])
    assert np.isinf(interp("hypot", h, h)[0])


# --- the step list as the loop layer emits it ------------------------------------------------------


def _imm_value(x: Imm):
    dt = {**DT, "u32": np.uint32, "u64": np.uint64, "i32": np.int32, "i64": np.int64}
    if x.type == "bool":
        return np.bool_(x.bits)
    raw = np.array(x.bits, {32: np.uint32, 64: np.uint64}[8 * np.dtype(dt[x.type]).itemsize])
    return raw.view(dt[x.type])[()]


def _canon_arr(r):
    r = np.asarray(r)
    if r.dtype.kind == "f":
        r = r.copy()
        r[np.isnan(r)] = np.nan
    return r


def _convert(a, to: str):
    a = np.asarray(a)
    if to in DT:
        f = fp.FORMATS[to]
        return fp.float_to_float(a, f) if a.dtype.kind == "f" else fp.int_to_float(a, f)
    dt = {"i64": np.int64, "u64": np.uint64, "i32": np.int32, "u32": np.uint32}[to]
    return fp.float_to_int(a, dt) if a.dtype.kind == "f" else a.astype(dt)


# The loop primitives on whole arrays, written from docs/lowering.md's table (independently
# of elementary.NumpyOps): floats canonicalised after every step, as the loop interpreter does.
_VEC = {
    "add": lambda a, b: _canon_arr(a + b),
    "sub": lambda a, b: _canon_arr(a - b),
    "mul": lambda a, b: _canon_arr(a * b),
    "div": lambda a, b: _canon_arr(a / b),
    "sqrt": lambda a: _canon_arr(np.sqrt(a)),
    "abs": lambda a: _canon_arr(np.abs(a)),
    "neg": lambda a: _canon_arr(-a),
    "roundeven": lambda a: _canon_arr(np.rint(a)),
    "gt": np.greater,
    "ge": np.greater_equal,
    "lt": np.less,
    "le": np.less_equal,
    "eq": np.equal,
    "ne": np.not_equal,
    "select": np.where,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "not": np.invert,
    "xor": np.bitwise_xor,
    "shl": lambda a, c: np.left_shift(a, c),
    "shr": lambda a, c: np.right_shift(a, c),
}


def steps(fn: str, t: str):
    e = Emitter([0])
    x, y = e.var(t, "x"), e.var(t, "y")
    if fn in C.ELEMENTARY_BINARY:
        out = C.ELEMENTARY_BINARY[fn](e, x, y, t)
    elif fn in C.UNARY:  # exp, log, tanh, sigmoid (tests/test_cr32.py)
        out = C.UNARY[fn](e, x, t)
    else:
        out = C.ELEMENTARY_UNARY[fn](e, x, t)
    assert all(isinstance(s, Op) for s in e.stmts), "a straight-line step list"
    used = {s.op for s in e.stmts}
    assert used <= {*_VEC, "bitcast", "convert"}, used
    return e.stmts, x, y, out


def _run_steps(fn: str, t: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray:
    stmts, xv, yv, out = steps(fn, t)
    env = {xv.id: _canon_arr(x), yv.id: None if y is None else _canon_arr(y)}

    def val(a):
        return _imm_value(a) if isinstance(a, Imm) else env[a.id]

    dts = {**DT, "u32": np.uint32, "u64": np.uint64, "i32": np.int32, "i64": np.int64}
    with np.errstate(all="ignore"):
        for s in stmts:
            args = [val(a) for a in s.args]
            if s.op == "bitcast":
                r = np.asarray(args[0]).view(dts[s.dst.type])
            elif s.op == "convert":
                r = _convert(args[0], s.dst.type)
            else:
                r = np.asarray(_VEC[s.op](*args))
            env[s.dst.id] = r
    assert isinstance(out, Var)
    return np.broadcast_to(env[out.id], x.shape)


def test_the_step_lists_are_straight_line_and_of_fixed_length() -> None:
    for t in FLOATS:
        for fn in FNS:
            stmts, *_ = steps(fn, t)
            big = fn in (*TRIG, "atan2", "pow")
            bound = 1100 if fn in ("erf", "erfc") else 800 if big else 400
            assert 50 < len(stmts) < bound, (fn, t, len(stmts))


@pytest.mark.parametrize("t", FLOATS)
def test_the_emitted_step_lists_give_the_interpreters_bits(t: str) -> None:
    rng = np.random.default_rng(8)
    for fn in FNS:
        if t == "f32":
            xb = dense_f32(fn if fn in _EDGES else "exp2", 9)[::3]
            x = xb.view(np.float32)
        else:
            x = np.concatenate(
                [
                    sample_f64(fn, 30_000, 9),
                    np.array(special_bits("f64"), np.uint64).view(np.float64),
                ]
            )
        y = None
        if fn in BIN:
            y = rng.permutation(x)
            with np.errstate(all="ignore"):
                y[::2] = second_f64(fn, x[::2].astype(np.float64), rng).astype(DT[t])
        want = interp(fn, x, y)
        got = _run_steps(fn, t, x, y)
        bad = np.flatnonzero(_bits(got, t) != _bits(want, t))
        assert not bad.size, (fn, t, bad.size, x[bad[:5]], got[bad[:5]], want[bad[:5]])


# --- the type checker, folding, the builtin lists ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "needle"),
    [
        ("exp2(k)", "K0308", "exp2(k)"),
        ("log1p(x, x)", "K0303", "log1p(x, x)"),
        ("hypot(x)", "K0303", "hypot(x)"),
        ("hypot(x, d)", "K0301", "hypot(x, d)"),
        ("hypot(k, k)", "K0308", "hypot(k, k)"),
        ("sin(k)", "K0308", "sin(k)"),
        ("cos()", "K0303", "cos()"),
        ("tan(x) + d", "K0301", "tan(x) + d"),
        ("pow(x, k)", "K0308", "pow(x, k)"),
        ("erf(k)", "K0308", "erf(k)"),
        ("erfc(x, x)", "K0303", "erfc(x, x)"),
        ("pow(x)", "K0303", "pow(x)"),
        ("atan2(x, d)", "K0301", "atan2(x, d)"),
        ("atan2(k, k)", "K0308", "atan2(k, k)"),
    ],
)
def test_misuse_is_reported_with_a_code_and_a_span(body: str, code: str, needle: str) -> None:
    src = f"pub fn f(x: f32, d: f64, k: i32) -> f32 {{ {body} }}\n"
    diags = [d for d in analyze(src).diagnostics if d.is_error]
    assert diags, body
    d = diags[0]
    assert d.code == code, (body, d.code, d.message)
    assert src[d.span.start : d.span.end] == needle, (body, src[d.span.start : d.span.end])


def test_builtins_and_hover_name_them() -> None:
    from kera_core.ide.builtins import INFO
    from kera_core.sema.lower_calls import BUILTINS

    for fn in FNS:
        assert fn in BUILTINS and fn in INFO, fn


def test_constants_fold_to_the_interpreters_bits() -> None:
    from kera_core.opt import ConstFold, optimize
    from tests.test_opt_passes import module as mod
    from tests.test_opt_passes import ops, same

    m = mod(
        "pub fn c() -> f64 { exp2(0.3) + log2(3.0) * expm1(-0.2) + log1p(1e-9) + hypot(3.5, 1.25) }\n"
        "pub fn d() -> f32 { exp2(0.3f32) + hypot(1e30f32, 2e30f32) - log1p(-1.0f32) }\n"
        "pub fn e() -> f64 { sin(1e22) + cos(-3.0) * tan(1.5707963267948966) }\n"
        "pub fn g() -> f32 { sin(16367173.0f32) - cos(1e38f32) + tan(-0.5f32) }\n"
        "pub fn h() -> f64 { pow(2.5, -3.75) + atan2(-1.0, -3.0) }\n"
        "pub fn k() -> f32 { pow(-2.0f32, 3.0f32) * atan2(0.5f32, 0.25f32) }\n"
        "pub fn l() -> f64 { erf(0.5) - erfc(-1.5) * erfc(20.0) }\n"
    )
    g = optimize(m.graph, passes=[ConstFold()]).graph
    for name in ("c", "d", "e", "g", "h", "k", "l"):
        assert ops(g, name) == ["const"], ops(g, name)
        same(m, g, name)
    want = (
        E.unary("exp2", np.float64(0.3))
        + E.unary("log2", np.float64(3.0)) * E.unary("expm1", np.float64(-0.2))
        + E.unary("log1p", np.float64(1e-9))
        + E.binary("hypot", np.float64(3.5), np.float64(1.25))
    )
    got = reference(m, "c", {}).outputs[0].value
    assert _bits(got, "f64") == _bits(want, "f64"), (got, want)
    want = E.unary("sin", np.float64(1e22)) + E.unary("cos", np.float64(-3.0)) * E.unary(
        "tan", np.float64(1.5707963267948966)
    )
    got = reference(m, "e", {}).outputs[0].value
    assert _bits(got, "f64") == _bits(want, "f64"), (got, want)
    want = E.binary("pow", np.float64(2.5), np.float64(-3.75)) + E.binary(
        "atan2", np.float64(-1.0), np.float64(-3.0)
    )
    got = reference(m, "h", {}).outputs[0].value
    assert _bits(got, "f64") == _bits(want, "f64"), (got, want)


# --- the real pipeline -------------------------------------------------------------------------


def _fn(fn: str, t: str, kind: str) -> str:
    return f"{fn}_{t}_{kind}"


def _source() -> str:
    lines = []
    for t in FLOATS:
        for fn in UNARY:
            lines.append(f"pub fn {_fn(fn, t, 's')}(x: {t}) -> {t} {{ {fn}(x) }}")
            lines.append(f"pub fn {_fn(fn, t, 'v')}[N](x: &{t}[N]) -> {t}[N] {{ {fn}(x) }}")
        for fn in BIN:
            lines.append(f"pub fn {_fn(fn, t, 's')}(x: {t}, y: {t}) -> {t} {{ {fn}(x, y) }}")
            lines.append(
                f"pub fn {_fn(fn, t, 'v')}[N](x: &{t}[N], y: &{t}[N]) -> {t}[N] {{ {fn}(x, y) }}"
            )
            lines.append(
                f"pub fn {_fn(fn, t, 'b')}[N](x: &{t}[N], y: {t}) -> {t}[N] {{ {fn}(x, y) }}"
            )
    lines.append(
        "pub fn mix[N](x: &f32[N], y: &f32[N]) -> f32[N] "
        "{ exp2(x) * log1p(y) - expm1(x - y) + hypot(log2(y), x) }"
    )
    lines.append("pub fn trig[N](x: &f64[N], y: f64) -> f64[N] { sin(x) * cos(y) - tan(x * y) }")
    lines.append(
        "pub fn polar[N](x: &f32[N], y: &f32[N]) -> f32[N] { pow(hypot(x, y), 1.5f32) * atan2(y, x) }"
    )
    return "\n".join(lines) + "\n"


_MODULE: list = []


def module():
    if not _MODULE:
        a = analyze(_source())
        assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
        _MODULE.append(a.module)
    return _MODULE[0]


def adversarial(t: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    specials = np.array(special_bits(t), UT[t])
    pool_v = np.array([0.5, 1.0, -1.0, 2.0**-25, 127.99, -149.5, 88.7, 709.7, 1024.5, -1074.5])
    pool_v = np.concatenate([pool_v, [2.0, 3.0, 0.75, 1.5, 1 + 2.0**-12, 40.5, 9.5, 26.6]])
    # sin, cos, tan: near multiples of π/2, huge, the hardest binary64 reduction (§6.9)
    pool_v = np.concatenate(
        [pool_v, [1.5707964, 3.1415927, 0.78125, 1e22, 3.4e38, 6381956970095103 * 2.0**797]]
    )
    with np.errstate(over="ignore"):
        pool_t = np.concatenate([pool_v, -pool_v]).astype(DT[t])
    pool = np.concatenate([specials, _bits(pool_t, t)])
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 10, n))).astype(DT[t])
    xb = _bits(x, t).copy()
    k = rng.random(n) < 0.4
    xb[k] = rng.choice(pool, int(k.sum()))
    return xb.view(DT[t])


def cases():
    out = []
    for t in FLOATS:
        for fn in FNS:
            out.append((_fn(fn, t, "s"), t))
            out.append((_fn(fn, t, "v"), t))
        out += [(_fn(fn, t, "b"), t) for fn in BIN]
    out.append(("mix", "f32"))
    out.append(("trig", "f64"))
    out.append(("polar", "f32"))
    return out


def inputs(name: str, t: str, n: int, seed: int) -> list[dict]:
    x = adversarial(t, max(n, 1), seed)
    y = adversarial(t, max(n, 1), seed + 7)
    two = any(name.startswith(fn + "_") for fn in BIN) or name in ("mix", "trig", "polar")
    if name.endswith("_s"):
        k = min(len(x), 24)
        return [{"x": x[i], **({"y": y[i]} if two else {})} for i in range(k)]
    if name.endswith("_b") or name == "trig":
        return [{"x": x[:n], "y": y[0]}]
    return [{"x": x[:n], **({"y": y[:n]} if two else {})}]


SIZES = (0, 1, 17, 1025)


def test_the_interpreter_runs_them_on_scalars_and_tensors() -> None:
    m = module()
    for name, t in cases():
        if name in ("mix", "trig", "polar"):
            continue
        fn = name.rsplit("_", 2)[0]
        for n in SIZES:
            for a in inputs(name, t, n, 5):
                got = reference(m, name, a).outputs[0].value
                x = np.asarray(a["x"], DT[t])
                y = None if "y" not in a else np.asarray(a["y"], DT[t])
                want = interp(fn, x, None if y is None else np.broadcast_to(y, x.shape))
                assert np.array_equal(
                    _bits(np.asarray(got), t), _bits(np.broadcast_to(want, np.shape(got)), t)
                ), name


def test_the_loop_program_in_both_shapes_gives_the_interpreters_bits() -> None:
    m = module()
    for name, t in cases():
        progs = {tg: lower_program(m.graph, name, tg) for tg in (CPU, GRID)}
        for n in SIZES if not name.endswith("_s") else (1,):
            for a in inputs(name, t, n, 11)[: 6 if name.endswith("_s") else None]:
                want = outcome(lambda: reference(m, name, a))  # noqa: B023
                for tg, prog in progs.items():
                    got = outcome(lambda: run_function(m, name, a, program=prog))  # noqa: B023
                    assert got == want, (name, n, tg)


def _native(tname: str, cases_, sizes, runs_per_scalar: int = 24) -> None:
    t = runnable_target(tname)
    m = module()
    for name, _ in cases_:
        assert not t.unsupported(m.graph, name), (tname, name, t.unsupported(m.graph, name))
        for n in sizes if not name.endswith("_s") else (1,):
            for a in inputs(name, _, n, 13)[:runs_per_scalar]:
                same_as_reference(m, name, a, lambda: run_module(t, m, name, a), tname, n, a)  # noqa: B023


@pytest.mark.parametrize("level", x86_levels() or ["none"])
def test_x86_64_gives_the_interpreters_bits_at_every_level(level: str) -> None:
    if level == "none":
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    from kera_core.backends.x86_64 import compile as X
    from kera_core.backends.x86_64.runtime import Loaded, run

    m = module()
    for name, t in cases():
        data, _ = X.build(m.graph, name, X.isa_for(level))
        loaded = Loaded(X.read(data, m.graph)[1])
        try:
            for n in SIZES if not name.endswith("_s") else (1,):
                for a in inputs(name, t, n, 17):
                    same_as_reference(m, name, a, lambda: run(loaded, m, name, a), level, n, a)  # noqa: B023
        finally:
            loaded.close()


def test_arm64_gives_the_interpreters_bits() -> None:
    try:
        get("arm64")
    except ImportError as e:
        tool_missing(f"the arm64 target cannot load here: {e}")
    _native("arm64", cases(), (0, 1, 17, 257), runs_per_scalar=6)


def test_verilog_gives_the_interpreters_bits_on_small_cases() -> None:
    small = [("exp2_f32_v", "f32"), ("log1p_f64_v", "f64"), ("hypot_f32_b", "f32")]
    small += [("sin_f64_v", "f64"), ("tan_f32_v", "f32"), ("atan2_f32_v", "f32")]
    small += [("pow_f64_b", "f64"), ("erfc_f32_v", "f32")]
    _native("verilog", small, (0, 5))


def test_ptx_assembles_with_ptxas() -> None:
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    m = module()
    texts = []
    for name, _ in cases():
        assert not P.unsupported(m.graph, name), name
        texts.append(P.compiled(m.graph, name).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)


def test_wasm_gives_the_interpreters_bits() -> None:
    try:
        get("wasm")
    except ImportError:
        tool_missing("the wasm target needs wasmtime")
    _native("wasm", cases(), (0, 1, 17, 257), runs_per_scalar=8)
