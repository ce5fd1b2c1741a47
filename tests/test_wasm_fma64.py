"""`fma` on f64 in the wasm target (`rt._FMA64`, exact integer arithmetic).

The wasm output must be the interpreter's bytes (and digest) on random bit patterns,
cancelling sums, products near overflow and in the subnormal range, subnormal results,
constructed exact ties and near-ties, and every triple of special values. Independently
of the interpreter, every result is also checked against a reference written here:
the exact a*b + c as a `Fraction`, rounded to nearest-even binary64 by hand.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from kera_core.backends.wasm import unsupported
from kera_core.interp import run_function
from kera_core.targets.wasm import TARGET
from tests.test_wasm import compare, module, outcome

SRC = """
pub fn fma64[N](a: &f64[N], b: &f64[N], c: &f64[N]) -> f64[N] { fma(a, b, c) }
pub fn fma64_bcast[N](a: f64, b: &f64[N], c: &f64[1]) -> f64[N] { fma(a, b, c) }
pub fn fma64_scalar(a: f64, b: f64, c: f64) -> f64 { fma(a, b, c) }
pub fn chain64[N](a: &f64[N], b: &f64[N], c: &f64[N]) -> f64 { sum(fma(a, b, c) * a - fma(c, c, b)) }
pub fn grid64[R, C](a: &f64[R, C], b: &f64[R, C], c: &f64[R, C]) -> f64[R, C] { fma(a, b, c) }
"""

TINY = 5e-324
MAXF = np.finfo(np.float64).max
MINN = np.finfo(np.float64).tiny
SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, TINY, -TINY, MAXF, -MAXF, 1.0, -1.0]
    + [MINN, -MINN, MINN - TINY, 0.5, -2.0, 1 + 2**-52],
    dtype=np.float64,
)


# --- the reference ----------------------------------------------------------------


def round_binary64(x: Fraction) -> float:
    """The nonzero rational x rounded to nearest-even binary64 (±inf on overflow)."""
    neg = x < 0
    n, d = abs(x.numerator), x.denominator
    # e: 2^e <= n/d < 2^(e+1)
    e = n.bit_length() - d.bit_length()
    if (n < d << e) if e >= 0 else (n << -e < d):
        e -= 1
    q = max(e - 52, -1074)  # the exponent of the last kept bit
    num, den = (n, d << q) if q >= 0 else (n << -q, d)
    m, r = divmod(num, den)
    if 2 * r > den or (2 * r == den and m & 1):
        m += 1
    if m == 1 << 53:
        m, q = m >> 1, q + 1
    if q > 1023 - 52:
        v = math.inf
    else:
        v = math.ldexp(float(m), q)  # m < 2^53: exact
    return -v if neg else v


def ref_fma(a: float, b: float, c: float) -> float:
    """IEEE 754 fusedMultiplyAdd, round to nearest even, written from the standard."""
    if math.isnan(a) or math.isnan(b) or math.isnan(c):
        return math.nan
    sp = math.copysign(1.0, a) * math.copysign(1.0, b)
    if math.isinf(a) or math.isinf(b):
        if a == 0 or b == 0:
            return math.nan
        if math.isinf(c) and (c > 0) != (sp > 0):
            return math.nan
        return math.copysign(math.inf, sp)
    if math.isinf(c):
        return c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact != 0:
        return round_binary64(exact)
    if a * b == 0 and c == 0:  # a sum of two exact zeros
        return -0.0 if sp < 0 and math.copysign(1.0, c) < 0 else 0.0
    return 0.0  # exact cancellation of nonzero terms: +0 in round-to-nearest


def test_the_reference_rounds_correctly() -> None:
    assert round_binary64(Fraction(1, 3)) == 1 / 3
    assert round_binary64(Fraction(1) + Fraction(1, 2**53)) == 1.0  # tie to even
    assert round_binary64(Fraction(1 + 2**-52) + Fraction(1, 2**53)) == 1 + 2**-51
    assert round_binary64(Fraction(1, 2**1075)) == 0.0
    assert round_binary64(Fraction(3, 2**1076)) == TINY
    assert round_binary64(Fraction(-3, 2**1075)) == -2 * TINY  # 1.5 ulp: tie to even
    assert round_binary64(Fraction(MAXF) + Fraction(2**969)) == MAXF
    assert round_binary64(Fraction(MAXF) + Fraction(2**970)) == math.inf
    assert math.copysign(1.0, round_binary64(Fraction(-1, 2**1100))) < 0
    assert ref_fma(0.1, 10.0, -1.0) == 2**-54  # 0.1*10 - 1 exactly
    assert ref_fma(MAXF, 2.0, -MAXF) == MAXF
    assert ref_fma(MAXF, 2.0, -np.inf) == -math.inf


# --- operands ----------------------------------------------------------------------


def _bits(rng, k: int, e_lo: int, e_hi: int, neg: bool = True) -> np.ndarray:
    """k doubles: random mantissa, biased exponent field in [e_lo, e_hi), random sign."""
    m = rng.integers(0, 2**52, k, dtype=np.uint64)
    e = rng.integers(e_lo, e_hi, k).astype(np.uint64) << np.uint64(52)
    s = (rng.integers(0, 2, k).astype(np.uint64) << np.uint64(63)) if neg else np.uint64(0)
    return (m | e | s).view(np.float64)


def _sign(rng, k: int) -> np.ndarray:
    return np.where(rng.random(k) < 0.5, -1.0, 1.0)


def operands(rng, k: int):
    """14 groups of k triples plus the special grid (17^3 = 4913 triples)."""
    u = lambda: rng.integers(0, 2**64, k, dtype=np.uint64).view(np.float64)  # noqa: E731
    groups = []
    with np.errstate(all="ignore"):
        # random bit patterns
        groups.append((u(), u(), u()))
        # cancelling sums: c about -a*b, and c = -RN(a*b) (the result is the product's error)
        a, b = _bits(rng, k, 600, 1500), _bits(rng, k, 600, 1500)
        groups.append((a, b, -(a * b) * rng.uniform(0.5, 2.0, k)))
        a, b = _bits(rng, k, 1, 2046), _bits(rng, k, 1, 2046)
        groups.append((a, b, -(a * b)))
        # products near overflow, c large or small
        a, b = _bits(rng, k, 1530, 1560), _bits(rng, k, 1530, 1560)
        groups.append((a, b, np.where(rng.random(k) < 0.5, -(a * b), _bits(rng, k, 1900, 2047))))
        # products in (and below) the subnormal range, c subnormal, small or zero
        a, b = _bits(rng, k, 0, 540), _bits(rng, k, 0, 540)
        c = np.where(rng.random(k) < 0.5, _bits(rng, k, 0, 3), _bits(rng, k, 0, 60))
        c[rng.random(k) < 0.1] = 0.0
        groups.append((a, b, c))
        # results that are subnormal: a*b ≈ -c, both around 2^-1000 .. 2^-1022
        a, b = _bits(rng, k, 500, 520), _bits(rng, k, 480, 500)
        groups.append((a, b, -(a * b) * (1 + rng.integers(-3, 4, k) * 2.0**-52)))
        # exact ties: c = r, a*b = ±ulp(r)/2 with a a power of two; r's mantissa 0 sometimes
        r = _bits(rng, k, 60, 2046)
        r = np.where(rng.random(k) < 0.2, np.ldexp(np.sign(r), np.frexp(r)[1] - 1), r)
        half = np.spacing(np.abs(r)) / 2 * _sign(rng, k)
        p2 = np.ldexp(1.0, rng.integers(-30, 30, k))
        groups.append((p2, half / p2, r))
        # near-ties: a*b = half * (1 - 2^-104) and half * (1 + 2^-53 - 2^-105)
        groups.append((p2 * (1 + 2.0**-52), half / p2 * (1 - 2.0**-52), r))
        groups.append((p2 * (1 - 2.0**-53), half / p2 * (1 + 2.0**-52), r))
        # ... and a*b = half * (1 ± 2^-3j) = half * (1 ± 2^-j)(1 ∓ 2^-j + 2^-2j), j in
        # [17, 26]: the excess lies inside or (j >= 25) below the 128-bit sum's last bit
        j = rng.integers(17, 27, k)
        for t in (1.0, -1.0):
            f, g = 1 + t * np.ldexp(1.0, -j), 1 - t * np.ldexp(1.0, -j) + np.ldexp(1.0, -2 * j)
            groups.append((p2 * f, half / p2 * g, r))
        # ties below a binade edge: c = ±2^k, a*b = ∓ulp(c)/4 (the spacing below c)
        edge = np.ldexp(1.0, rng.integers(-960, 1000, k)) * _sign(rng, k)
        q = -np.spacing(np.abs(edge)) / 4 * np.sign(edge)
        groups.append((p2, q / p2, edge))
        # subnormal ties and near-ties: c subnormal, a*b = ±2^-1075 (± a little)
        e = rng.integers(1, 50, k)
        t = _sign(rng, k)
        near = np.choose(rng.integers(0, 3, k), [1.0, 1 + 2.0**-52, 1 - 2.0**-53])
        groups.append((np.ldexp(near, -e), np.ldexp(t, e - 1075), _bits(rng, k, 0, 1)))
        # around the overflow threshold: c = ±max, a*b = ±2^970 (the tie) ± a little
        near = np.choose(rng.integers(0, 3, k), [1.0, 1 + 2.0**-52, 1 - 2.0**-53])
        s = _sign(rng, k)
        groups.append((np.ldexp(near, 500), np.ldexp(_sign(rng, k), 470), MAXF * s))
    sp = SPECIAL
    grid = np.array([(x, y, z) for x in sp for y in sp for z in sp], dtype=np.float64)
    groups.append((grid[:, 0], grid[:, 1], grid[:, 2]))
    return tuple(
        np.ascontiguousarray(np.concatenate(g), dtype=np.float64) for g in zip(*groups, strict=True)
    )


# --- tests -------------------------------------------------------------------------


def _check_against_reference(a, b, c, raw: bytes) -> None:
    got = np.frombuffer(raw, dtype=np.float64)
    bad = []
    for i in range(len(a)):
        want = ref_fma(float(a[i]), float(b[i]), float(c[i]))
        g = float(got[i])
        same = (math.isnan(want) and math.isnan(g)) or (
            np.float64(want).view(np.uint64) == np.float64(g).view(np.uint64)
        )
        if not same:
            bad.append((a[i].hex(), b[i].hex(), c[i].hex(), want.hex(), g.hex()))
    assert not bad, (len(bad), bad[:5])


@pytest.mark.parametrize("seed", range(2))
def test_fma_f64_is_exact(seed: int) -> None:
    m = module(SRC)
    rng = np.random.default_rng(100 + seed)
    a, b, c = operands(rng, 2400)
    assert len(a) >= 25000
    inputs = {"a": a, "b": b, "c": c}
    art = TARGET.lower(m.graph, m.provenance, "fma64")
    ref = outcome(lambda: run_function(m, "fma64", inputs, {}))
    got = outcome(lambda: TARGET.run(art, m.graph, "fma64", inputs, {}, provenance=m.provenance))
    assert got == ref
    _check_against_reference(a, b, c, got[0][0][2])


def test_fma_f64_broadcast_and_scalar() -> None:
    m = module(SRC)
    assert unsupported(m.graph, "fma64") == []
    rng = np.random.default_rng(7)
    for k in (0, 1, 37):
        b = _bits(rng, k, 900, 1150)
        compare(
            m, "fma64_bcast", {"a": np.float64(1.5), "b": b, "c": _bits(rng, 1, 1000, 1050)}, {}
        )
    cases = [
        (np.inf, 0.0, 1.0),
        (np.inf, 1.0, -np.inf),
        (0.0, -1.0, -0.0),
        (-0.0, 1.0, -0.0),
        (-0.0, -1.0, -0.0),
        (MAXF, MAXF, -np.inf),
        (MAXF, 2.0, 0.0),
        (MAXF, 2.0, -MAXF),
        (TINY, 0.5, 0.0),
        (TINY, -0.5, -0.0),
        (TINY, -0.5, 0.0),
        (np.nan, 1.0, 1.0),
        (1.0, 1.0, -1.0),
        (-1.0, 1.0, 1.0),
        (0.1, 10.0, -1.0),
        (1 + 2**-52, 1 - 2**-53, -1.0),
    ]
    for x, y, z in cases:
        compare(m, "fma64_scalar", {"a": x, "b": y, "c": z}, {})
        if not any(map(math.isnan, (x, y, z))):
            r = run_function(m, "fma64_scalar", {"a": x, "b": y, "c": z}, {})
            want = ref_fma(x, y, z)
            assert r.outputs[0].raw == np.float64(want).tobytes(), (x, y, z)


def test_fma_f64_inside_fused_loops_and_reductions() -> None:
    m = module(SRC)
    rng = np.random.default_rng(11)
    for n in (0, 1, 5, 33, 1000):
        a, b, c = (rng.standard_normal(n) for _ in range(3))
        compare(m, "chain64", {"a": a, "b": b, "c": c}, {})
    a, b, c = (_bits(rng, 21, 900, 1150).reshape(3, 7) for _ in range(3))
    compare(m, "grid64", {"a": a, "b": b, "c": c}, {})
