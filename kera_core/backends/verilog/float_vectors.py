"""Operand vectors for the float units, in the manner of TestFloat: every pair (triple for
fma) of special values, then random operands of which half sit near boundaries (exponent
edges, halfway rounding cases, results near overflow and underflow, integer limits)."""

from __future__ import annotations

import random

from .float_ref import Fmt
from .float_units import Unit


def specials(f: Fmt) -> list[int]:
    sb = f.sign_bit
    mw = f.mw
    pos = [
        0,  # +0
        1,  # min subnormal
        (1 << mw) - 1,  # max subnormal
        1 << mw,  # min normal
        f.bias << mw,  # 1.0
        (f.bias << mw) | 1,  # 1 + ulp
        ((f.bias - 1) << mw) | ((1 << mw) - 1),  # 1 - ulp/2
        f.inf - 1,  # max finite
        f.inf,  # inf
    ]
    nans = [f.cnan, f.cnan | 0x12345, f.inf | 1, f.inf | (1 << (mw - 2)) | 7]
    return pos + [x | sb for x in pos] + nans + [x | sb for x in nans]


def _rand_float(f: Fmt, rnd: random.Random) -> int:
    r = rnd.random()
    s = rnd.getrandbits(1) << (f.bits - 1)
    frac = rnd.getrandbits(f.mw)
    if r < 0.5:
        return rnd.getrandbits(f.bits)
    if r < 0.75:  # exponent edges
        ef = rnd.choice(
            [0, 1, 2, f.bias - 1, f.bias, f.bias + 1, f.emax_field - 2, f.emax_field - 1]
        )
    else:
        ef = rnd.randrange(f.emax_field)
    if rnd.random() < 0.3:  # few significant bits: exact and halfway cases
        frac &= ~((1 << rnd.randrange(f.mw)) - 1)
    return s | (ef << f.mw) | frac


def _near(f: Fmt, x: int, rnd: random.Random) -> int:
    """x with its exponent moved by a small amount (cancellation, alignment edges)."""
    ef = (x >> f.mw) & f.emax_field
    d = rnd.choice([0, 0, 1, -1, 2, -2, f.mw, f.mw + 1, f.mw + 2, f.mw + 3, -f.mw - 2])
    ef = max(0, min(f.emax_field - 1, ef + d))
    frac = x & ((1 << f.mw) - 1)
    if rnd.random() < 0.5:
        frac ^= rnd.getrandbits(3)
    else:
        frac = rnd.getrandbits(f.mw)
    return (rnd.getrandbits(1) << (f.bits - 1)) | (ef << f.mw) | frac


def _with_exp(f: Fmt, x: int, ef: int) -> int:
    ef = max(0, min(f.emax_field - 1, ef))
    return (x & ~(f.emax_field << f.mw)) | (ef << f.mw)


def _pair(f: Fmt, kind: str, rnd: random.Random) -> tuple[int, int]:
    a = _rand_float(f, rnd)
    r = rnd.random()
    if r < 0.4:
        return a, _rand_float(f, rnd)
    if kind in ("add", "cmp", "minmax") or r < 0.6:
        return a, _near(f, a, rnd)
    # results near overflow / underflow: exponents that sum (mul) or differ (div) to an edge
    ea = (a >> f.mw) & f.emax_field
    target = rnd.choice([f.emax_field - 1, f.emax_field, 1, 0, -f.mw, -f.mw - 1, 2])
    b = _rand_float(f, rnd)
    eb = target - ea + f.bias if kind in ("mul", "fma") else ea - target + f.bias
    return a, _with_exp(f, b, eb + rnd.choice([-1, 0, 1]))


def _int_operand(iw: int, rnd: random.Random) -> int:
    r = rnd.random()
    if r < 0.4:
        return rnd.getrandbits(iw)
    if r < 0.7:  # a random bit length, low bits shaped for ties
        n = rnd.getrandbits(rnd.randrange(1, iw + 1))
        if rnd.random() < 0.5:
            t = rnd.randrange(1, 45)
            n = (n >> t << t) | (1 << (t - 1)) * rnd.getrandbits(1)
        return n & ((1 << iw) - 1)
    edge = rnd.choice([0, 1, 1 << 24, 1 << 53, 1 << (iw - 1), 1 << (iw - 2), (1 << iw) - 1])
    return (edge + rnd.randrange(-4, 5)) & ((1 << iw) - 1)


def _float_near_int_edge(f: Fmt, rnd: random.Random) -> int:
    """floats near 0.5, 1, 2^31, 2^32, 2^63, 2^64 (float → int saturation edges)."""
    e = rnd.choice([-1, 0, 1, 30, 31, 32, 62, 63, 64, rnd.randrange(-3, 70)])
    ef = max(1, min(f.emax_field - 1, e + f.bias))
    frac = rnd.choice([0, (1 << f.mw) - 1, rnd.getrandbits(f.mw), 1, (1 << f.mw) - 2])
    return (rnd.getrandbits(1) << (f.bits - 1)) | (ef << f.mw) | frac


def special_vectors(u: Unit) -> list[tuple[int, ...]]:
    f = u.fmt
    if u.kind in ("add", "minmax"):
        sp = specials(f)
        return [(a, b, m) for a in sp for b in sp for m in (0, 1)]
    if u.kind in ("mul", "div", "cmp"):
        sp = specials(f)
        return [(a, b) for a in sp for b in sp]
    if u.kind == "fma":
        sp = specials(f)
        return [(a, b, c) for a in sp for b in sp for c in sp]
    if u.kind in ("sqrt", "f2i", "cvt"):
        return [(a,) for a in specials(f)]
    if u.kind == "i2f":
        iw = u.int_width
        m = (1 << iw) - 1
        edges = [
            0,
            1,
            2,
            3,
            m,
            m - 1,
            1 << (iw - 1),
            (1 << (iw - 1)) - 1,
            (1 << (iw - 1)) + 1,
            (1 << 24) + 1,
            (1 << 53) + 1,
            (1 << 60) + (1 << 36) + 1,
        ]
        return [(x & m,) for x in edges]
    raise ValueError(u.kind)


def random_vectors(u: Unit, count: int, seed: int) -> list[tuple[int, ...]]:
    rnd = random.Random(f"{u.name}:{seed}")
    f = u.fmt
    out: list[tuple[int, ...]] = []
    for _ in range(count):
        k = u.kind
        if k in ("add", "minmax"):
            out.append((*_pair(f, k, rnd), rnd.getrandbits(1)))
        elif k in ("mul", "div", "cmp"):
            out.append(_pair(f, k, rnd))
        elif k == "fma":
            a, b = _pair(f, "mul", rnd)
            if rnd.random() < 0.5:
                # c near the product's magnitude and sign-opposed: cancellation
                pe = ((a >> f.mw) & f.emax_field) + ((b >> f.mw) & f.emax_field) - f.bias
                c = _with_exp(f, _rand_float(f, rnd), pe + rnd.randrange(-3, 4))
                c ^= rnd.getrandbits(1) << (f.bits - 1)
            else:
                c = _rand_float(f, rnd)
            out.append((a, b, c))
        elif k == "sqrt":
            out.append((_rand_float(f, rnd) & (~f.sign_bit if rnd.random() < 0.9 else -1),))
        elif k in ("f2i",):
            x = _rand_float(f, rnd) if rnd.random() < 0.5 else _float_near_int_edge(f, rnd)
            out.append((x,))
        elif k == "cvt":
            out.append((_rand_float(f, rnd),))
        elif k == "i2f":
            out.append((_int_operand(u.int_width, rnd),))
        else:
            raise ValueError(k)
    return out
