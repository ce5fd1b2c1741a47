"""`exp2`, `log2`, `expm1`, `log1p`, `hypot`, `sin`, `cos`, `tan`: step lists written once
(docs/semantics.md §6.9).

Each function below is one fixed sequence of loop primitives (docs/lowering.md,
"Primitives": add sub mul div sqrt roundeven compares select and/or/xor/not shl/shr bitcast
convert, integer mul — no fma, no table loads), written against a small interface ``m`` of
those primitives. Two implementations of that interface run the *same* Python code:

* :class:`NumpyOps` here (whole arrays, elementwise: the interpreter's), and
* ``composite.EmitOps`` in kera_core/loops/composite.py (appends loop primitives: what
  every backend that lowers from the loop layer computes),

so the interpreter and every such backend compute the same bits by construction.

Accuracy design (CORE-MATH style). Every function computes its result in binary64 as a
double-double ``h + l`` (``|l| ≤ ulp(h)/2``) whose relative error is below 2^−60. Then

* ``f64``: the result is ``h + l`` rounded once (≤ 0.5 ulp + 2^−60 relative, before a
  final scaling into the subnormals, which can add ½ ulp there);
* ``f32``: the argument is converted to binary64 (exact), and the binary32 result is
  ``convert(round_to_odd(h + l))``: rounding to odd at 53 bits and then to nearest at 24
  bits is one correct rounding of ``h + l`` (Boldo & Melquiond), so the binary32 result is
  the correctly rounded value of ``f(x)`` unless ``f(x)`` is within 2^−60 (relative) of a
  binary32 rounding boundary and ``h + l`` lies across it. tests/test_elementary.py checks
  a dense sample against a correctly rounded reference, and all 2^32 inputs of each unary
  function with ``KERA_EXHAUSTIVE=1``; `hypot` has a proof (§6.9).

Constants are binary64 values written as hex floats (exact); scripts/elementary_coeffs.py
prints them from mpmath.
"""

from __future__ import annotations

import numpy as np

from kera_core.interp import fp

# --- the primitives on numpy arrays ------------------------------------------------------------

_DT = {
    "f32": np.float32,
    "f64": np.float64,
    "i64": np.int64,
    "u64": np.uint64,
    "u32": np.uint32,
    "i32": np.int32,
    "bool": np.bool_,
}


class NumpyOps:
    """The loop primitives on numpy arrays, elementwise, bit for bit (kera_core/loops/prims.py).

    NaNs are not canonicalised step by step: the step lists never let a NaN reach a
    ``bitcast`` whose result is kept, and canonicalise at the end."""

    @staticmethod
    def c(v, t: str = "f64"):
        return _DT[t](v)

    add = staticmethod(np.add)
    sub = staticmethod(np.subtract)
    mul = staticmethod(np.multiply)
    div = staticmethod(np.divide)
    sqrt = staticmethod(np.sqrt)
    abs = staticmethod(np.abs)
    neg = staticmethod(np.negative)
    roundeven = staticmethod(np.rint)
    lt = staticmethod(np.less)
    le = staticmethod(np.less_equal)
    gt = staticmethod(np.greater)
    ge = staticmethod(np.greater_equal)
    eq = staticmethod(np.equal)
    ne = staticmethod(np.not_equal)
    and_ = staticmethod(np.bitwise_and)
    or_ = staticmethod(np.bitwise_or)
    xor = staticmethod(np.bitwise_xor)
    not_ = staticmethod(np.invert)

    @staticmethod
    def select(c, a, b):
        return np.where(c, a, b)

    @staticmethod
    def shl(a, n):
        """a << n, n an int or an array of a's type (in [0, bits))."""
        return np.left_shift(a, np.asarray(n, np.asarray(a).dtype))

    @staticmethod
    def shr(a, n):
        return np.right_shift(a, np.asarray(n, np.asarray(a).dtype))

    @staticmethod
    def bitcast(a, to: str):
        return np.asarray(a).view(_DT[to])

    @staticmethod
    def convert(a, to: str):
        a = np.asarray(a)
        if to in ("f32", "f64"):
            f = fp.FORMATS[to]
            if a.dtype.kind == "f":
                return a.astype(f.dtype)
            return fp.int_to_float(a, f)
        if a.dtype.kind == "f":
            return fp.float_to_int(a, _DT[to])
        return a.astype(_DT[to])


# --- double-double building blocks (Dekker, Knuth; no fma) -------------------------------------

SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitting constant for binary64


def two_sum(m, a, b):
    """(s, e) with s = a + b rounded and s + e = a + b exactly."""
    s = m.add(a, b)
    bb = m.sub(s, a)
    return s, m.add(m.sub(a, m.sub(s, bb)), m.sub(b, bb))


def fast_two_sum(m, a, b):
    """two_sum for |a| ≥ |b| (or a = 0): three operations."""
    s = m.add(a, b)
    return s, m.sub(b, m.sub(s, a))


def split(m, a):
    """a = h + l with h, l of at most 26 significant bits each (|a| < 2^995)."""
    c = m.mul(a, m.c(SPLIT))
    h = m.sub(c, m.sub(c, a))
    return h, m.sub(a, h)


def _split_const(v: float) -> tuple[float, float]:
    c = v * SPLIT
    h = c - (c - v)
    return h, v - h


def two_prod(m, a, b, bs=None):
    """(p, e) with p = a·b rounded and p + e = a·b exactly (Dekker; no over/underflow)."""
    p = m.mul(a, b)
    ah, al = split(m, a)
    bh, bl = bs if bs is not None else split(m, b)
    e = m.sub(m.mul(ah, bh), p)
    e = m.add(e, m.mul(ah, bl))
    e = m.add(e, m.mul(al, bh))
    return p, m.add(e, m.mul(al, bl))


def two_prod_const(m, a, v: float):
    """two_prod(a, v) for a binary64 constant v (its halves split here, once)."""
    vh, vl = _split_const(v)
    return two_prod(m, a, m.c(v), (m.c(vh), m.c(vl)))


def dd_mul_dd_const(m, h, l, C: tuple[float, float]):
    """(h + l)·(C0 + C1) as a double-double (the product of the low parts dropped)."""
    ph, pe = two_prod_const(m, h, C[0])
    pl = m.add(pe, m.add(m.mul(h, m.c(C[1])), m.mul(l, m.c(C[0]))))
    return fast_two_sum(m, ph, pl)


def horner(m, x, coeffs):
    """coeffs[0] + x·(coeffs[1] + x·(…)) in binary64: a multiply then an add per step."""
    u = m.c(coeffs[-1])
    for cf in reversed(coeffs[:-1]):
        u = m.add(m.c(cf), m.mul(x, u))
    return u


def dd_horner_step(m, C: tuple[float, float], r, rs, h, l):
    """C + r·(h + l) as a double-double (r a double, rs = split(r))."""
    ph, pe = two_prod(m, h, r, rs)
    pl = m.add(pe, m.mul(l, r))
    sh, se = two_sum(m, m.c(C[0]), ph)
    return fast_two_sum(m, sh, m.add(se, m.add(m.c(C[1]), pl)))


def round_to_odd(m, h, l):
    """h + l rounded to 53 bits *to odd* (h = h + l rounded to nearest, h finite): if the
    sum is inexact and h's last bit is 0, move h one unit toward l. Converting the result
    to binary32 is then one correct rounding of h + l."""
    b = m.bitcast(h, "u64")
    even = m.eq(m.and_(b, m.c(1, "u64")), m.c(0, "u64"))
    inexact = m.ne(l, m.c(0.0))
    toward = m.eq(m.lt(l, m.c(0.0)), m.lt(h, m.c(0.0)))  # l has h's sign: away from 0
    moved = m.select(toward, m.add(b, m.c(1, "u64")), m.sub(b, m.c(1, "u64")))
    return m.bitcast(m.select(m.and_(even, inexact), moved, b), "f64")


def pow2(m, j):
    """2^j (binary64) from its bits, j an i64 in [−1022, 1023]."""
    b = m.bitcast(m.add(j, m.c(1023, "i64")), "u64")
    return m.bitcast(m.shl(b, 52), "f64")


def scaleb(m, y, k):
    """y·2^k rounded once, k ∈ [−1086, 1024] (docs/semantics.md §6.1, binary64)."""
    zero = m.c(0, "i64")
    low = m.lt(k, m.c(-1022, "i64"))
    high = m.gt(k, m.c(1023, "i64"))
    mid = m.not_(m.or_(low, high))
    a = m.mul(y, pow2(m, m.select(mid, k, zero)))
    k_low = m.select(low, m.add(k, m.c(fp.SCALE_GUARD, "i64")), zero)
    b = m.mul(m.mul(y, pow2(m, k_low)), pow2(m, m.c(-fp.SCALE_GUARD, "i64")))
    k_high = m.select(high, m.sub(k, m.c(1, "i64")), zero)
    c = m.mul(m.mul(y, m.c(2.0)), pow2(m, k_high))
    return m.select(low, b, m.select(high, c, a))


def _scaled(m, h, l, k):
    """(h + l)·2^k rounded to binary64, for h ∈ [1/2, 4) and k ∈ [−1086, 1024]. Normally
    h + l rounded to nearest, then scaled exactly. Where the result is subnormal with at
    most 51 significant bits (its binade 2^E, E = k + ⌊log₂ h⌋ ≤ −1024), h + l is rounded
    to odd and then scaled with one rounding: one correct rounding of h + l (Boldo &
    Melquiond). In the top subnormal binade (52 bits) the two roundings to nearest stay
    within 0.75 ulp."""
    zero, one = m.c(0, "i64"), m.c(1, "i64")
    e = m.sub(m.select(m.ge(h, m.c(2.0)), one, zero), m.select(m.lt(h, m.c(1.0)), one, zero))
    sub = m.lt(m.add(k, e), m.c(-1023, "i64"))
    y = m.select(sub, round_to_odd(m, h, l), m.add(h, l))
    return scaleb(m, y, k)


def _to_f64(m, x, t: str):
    return x if t == "f64" else m.convert(x, "f64")


def _result(m, h, l, t: str):
    """The double-double h + l as the result of type t (binary32: one correct rounding)."""
    if t == "f64":
        return m.add(h, l)
    return m.convert(round_to_odd(m, h, l), "f32")


# --- constants (scripts/elementary_coeffs.py) -----------------------------------------------------

H = float.fromhex

EXP2_C1 = (H("0x1.62e42fefa39efp-1"), H("0x1.abc9e3b39803fp-56"))  # ln 2
EXP2_C2 = (H("0x1.ebfbdff82c58fp-3"), H("-0x1.5e43a53e44da3p-57"))  # (ln 2)²/2
EXP2_C3 = (H("0x1.c6b08d704a0c0p-5"), H("-0x1.d331627513351p-59"))  # (ln 2)³/6
EXP2_Q = tuple(
    H(v)
    for v in (
        "0x1.3b2ab6fba4e77p-7",
        "0x1.5d87fe78a6731p-10",
        "0x1.430912f86c3ccp-13",
        "0x1.ffcbfc588ae04p-17",
        "0x1.62c0223e17aa1p-20",
        "0x1.b5253d3c20967p-24",
        "0x1.e4cf279038e47p-28",
        "0x1.e8caa85192e5fp-32",
        "0x1.c47c5aadafe2cp-36",
        "0x1.81eebf8d38865p-40",
    )
)
EXPM1_C3 = (H("0x1.5555555555555p-3"), H("0x1.5555555555555p-57"))  # 1/6
EXPM1_Q = tuple(
    H(v)
    for v in (
        "0x1.5555555555555p-5",
        "0x1.1111111111111p-7",
        "0x1.6c16c16c1678ap-10",
        "0x1.a01a01a019dadp-13",
        "0x1.a01a01a4be7f8p-16",
        "0x1.71de3a57e638dp-19",
        "0x1.27e4e0f0f6358p-22",
        "0x1.ae643a34faa2ap-26",
        "0x1.1f6942ca28386p-29",
        "0x1.61a850e8d8603p-33",
    )
)
LOG_THIRD = (H("0x1.5555555555555p-2"), H("0x1.5555555555555p-56"))  # 1/3
LOG_R = tuple(
    H(v)
    for v in (
        "0x1.999999999999ap-3",
        "0x1.2492492492524p-3",
        "0x1.c71c71c6ea01fp-4",
        "0x1.745d177b22bcfp-4",
        "0x1.3b1395976d2f0p-4",
        "0x1.1118d458653bcp-4",
        "0x1.df7a2eafecf14p-5",
        "0x1.e0499f72e39b9p-5",
    )
)
INV_LN2 = (H("0x1.71547652b82fep+0"), H("0x1.777d0ffda0d24p-56"))  # 1/ln 2
LN2_HI = H("0x1.62e42fee00000p-1")  # fdlibm's: k·LN2_HI is exact for |k| < 2^20
LN2_LO = H("0x1.a39ef35793c76p-33")
SQRT2 = H("0x1.6a09e667f3bcdp+0")
EXPM1_OVER = H("0x1.62e42fefa39efp+9")  # 709.782712893384: above it e^x − 1 rounds to +inf
EXPM1_UNDER = -60.0  # below it e^x − 1 rounds to −1 (e^x < 2^−86)
MANT = (1 << 52) - 1
INF = float("inf")


# --- exp2 -------------------------------------------------------------------------------------------


def exp2(m, x, t: str):
    """2^x."""
    X = _to_f64(m, x, t)
    nan = m.ne(X, X)
    over_at, under_at = (128.0, -150.0) if t == "f32" else (1024.0, -1075.0)
    over = m.ge(X, m.c(over_at))
    under = m.le(X, m.c(under_at))
    xs = m.select(m.or_(m.or_(nan, over), under), m.c(0.0), X)
    k = m.roundeven(xs)
    r = m.sub(xs, k)  # exact, |r| ≤ 1/2
    rs = split(m, r)
    h, l = horner(m, r, EXP2_Q), m.c(0.0)
    for C in (EXP2_C3, EXP2_C2, EXP2_C1, (1.0, 0.0)):
        h, l = dd_horner_step(m, C, r, rs, h, l)
    ki = m.convert(k, "i64")
    if t == "f64":
        out = _scaled(m, h, l, ki)
    else:  # k ∈ [−149, 127]: the scaling is exact
        out = m.convert(m.mul(round_to_odd(m, h, l), pow2(m, ki)), "f32")
    out = m.select(over, m.c(INF, t), out)
    out = m.select(under, m.c(0.0, t), out)
    return m.select(nan, m.c(np.nan, t), out)


# --- the logarithm kernel: log u = e·ln 2 + log m ---------------------------------------------------


def _log_kernel(m, u):
    """For a positive finite binary64 u: (dk, Lh, Ll) with u = 2^dk·m, m ∈ [√2/2, √2) and
    Lh + Ll = log(m) (relative error < 2^−62)."""
    sub = m.lt(u, m.c(H("0x1p-1022")))
    us = m.select(sub, m.mul(u, m.c(H("0x1p54"))), u)
    b = m.bitcast(us, "u64")
    ex = m.sub(m.convert(m.shr(b, 52), "i64"), m.c(1023, "i64"))
    ex = m.sub(ex, m.select(sub, m.c(54, "i64"), m.c(0, "i64")))
    mm = m.bitcast(m.or_(m.and_(b, m.c(MANT, "u64")), m.c(1023 << 52, "u64")), "f64")
    big = m.ge(mm, m.c(SQRT2))
    mm = m.select(big, m.mul(mm, m.c(0.5)), mm)
    ex = m.add(ex, m.select(big, m.c(1, "i64"), m.c(0, "i64")))
    dk = m.convert(ex, "f64")
    f = m.sub(mm, m.c(1.0))  # exact
    # s = f / (2 + f) as a double-double
    dh, dl = fast_two_sum(m, m.c(2.0), f)
    sh = m.div(f, dh)
    ph, pe = two_prod(m, sh, dh)
    sl = m.div(m.sub(m.sub(m.sub(f, ph), pe), m.mul(sh, dl)), dh)
    # log m = 2·atanh(s) = 2s·(1 + w), w = z/3 + z²·R(z), z = s²
    zh, ze = two_prod(m, sh, sh)
    zl = m.add(ze, m.mul(m.add(sh, sh), sl))
    ah, ae = two_prod_const(m, zh, LOG_THIRD[0])
    al = m.add(ae, m.add(m.mul(zh, m.c(LOG_THIRD[1])), m.mul(zl, m.c(LOG_THIRD[0]))))
    bz = m.mul(m.mul(zh, zh), horner(m, zh, LOG_R))
    wh, wl = fast_two_sum(m, ah, m.add(al, bz))
    qh, qe = two_prod(m, sh, wh)
    ql = m.add(qe, m.add(m.mul(sh, wl), m.mul(sl, wh)))
    Lh, Le = fast_two_sum(m, sh, qh)
    Ll = m.add(Le, m.add(sl, ql))
    Lh, Ll = fast_two_sum(m, Lh, Ll)
    return dk, m.add(Lh, Lh), m.add(Ll, Ll)


def log2(m, x, t: str):
    """log₂ x."""
    X = _to_f64(m, x, t)
    nan = m.or_(m.ne(X, X), m.lt(X, m.c(0.0)))
    zero = m.eq(X, m.c(0.0))
    inf = m.eq(X, m.c(INF))
    u = m.select(m.or_(m.or_(nan, zero), inf), m.c(1.0), X)
    dk, Lh, Ll = _log_kernel(m, u)
    ph, pl = dd_mul_dd_const(m, Lh, Ll, INV_LN2)
    rh, re = two_sum(m, dk, ph)
    h, l = fast_two_sum(m, rh, m.add(re, pl))
    out = _result(m, h, l, t)
    out = m.select(zero, m.c(-INF, t), out)
    out = m.select(inf, m.c(INF, t), out)
    return m.select(nan, m.c(np.nan, t), out)


def log1p(m, x, t: str):
    """log(1 + x)."""
    X = _to_f64(m, x, t)
    nan = m.or_(m.ne(X, X), m.lt(X, m.c(-1.0)))
    minus_one = m.eq(X, m.c(-1.0))
    inf = m.eq(X, m.c(INF))
    zero = m.eq(X, m.c(0.0))
    xs = m.select(m.or_(m.or_(nan, minus_one), inf), m.c(0.0), X)
    uh, ul = two_sum(m, m.c(1.0), xs)  # 1 + x exactly; uh > 0
    dk, Lh, Ll = _log_kernel(m, uh)
    # log(uh + ul) = log uh + log(1 + c), c = ul/uh (|c| ≤ 2^−53, as ch + cl): c − c²/2
    ch = m.div(ul, uh)
    # ch's rounding error (cl) matters only for a result near 0, i.e. uh < 4; for larger uh
    # it is dropped (and uh, which may be too large to split, is not split)
    small = m.lt(uh, m.c(4.0))
    us = m.select(small, uh, m.c(1.0))
    p, pe = two_prod(m, ch, us)
    cl = m.select(small, m.div(m.sub(m.sub(ul, p), pe), us), m.c(0.0))
    cl = m.sub(cl, m.mul(m.mul(ch, ch), m.c(0.5)))
    eh = m.mul(dk, m.c(LN2_HI))  # exact
    el = m.mul(dk, m.c(LN2_LO))
    sh, se = two_sum(m, eh, Lh)
    th, te = two_sum(m, sh, ch)
    h, l = fast_two_sum(m, th, m.add(te, m.add(se, m.add(m.add(Ll, el), cl))))
    # tiny x: 1 + x rounds to 1, so h + l = c − c²/2 with c = x (no rounding), right as is
    out = _result(m, h, l, t)
    out = m.select(zero, x, out)  # log1p(±0) = ±0
    out = m.select(minus_one, m.c(-INF, t), out)
    out = m.select(inf, m.c(INF, t), out)
    return m.select(nan, m.c(np.nan, t), out)


# --- expm1 --------------------------------------------------------------------------------------


def expm1(m, x, t: str):
    """e^x − 1."""
    X = _to_f64(m, x, t)
    nan = m.ne(X, X)
    over = m.gt(X, m.c(EXPM1_OVER))
    under = m.lt(X, m.c(EXPM1_UNDER))
    tiny = m.lt(m.abs(X), m.c(H("0x1p-54")))  # e^x − 1 = x + x²/2 + … rounds to x
    xs = m.select(m.or_(m.or_(m.or_(nan, over), under), tiny), m.c(0.0), X)
    k = m.roundeven(m.mul(xs, m.c(INV_LN2[0])))  # |k| ≤ 1024
    hi = m.sub(xs, m.mul(k, m.c(LN2_HI)))  # both exact (Cody-Waite)
    lo = m.mul(k, m.c(LN2_LO))
    rh, rl = two_sum(m, hi, m.neg(lo))  # r = x − k·ln 2, |r| ≤ 0.3466
    rs = split(m, rh)
    # p = e^rh − 1 = rh·(1 + rh·(1/2 + rh·(1/6 + rh·Q(rh))))
    h, l = horner(m, rh, EXPM1_Q), m.c(0.0)
    for C in (EXPM1_C3, (0.5, 0.0), (1.0, 0.0)):
        h, l = dd_horner_step(m, C, rh, rs, h, l)
    ph, pe = two_prod(m, h, rh, rs)
    pl = m.add(pe, m.mul(l, rh))
    # e^(rh + rl) − 1 = p + rl·e^rh = p + rl·(1 + p)
    pl = m.add(pl, m.add(rl, m.mul(rl, ph)))
    ph, pl = fast_two_sum(m, ph, pl)
    # e^x − 1 = 2·(2^j·(1 + p) − 1/2), j = k − 1 ∈ [−88, 1023]: A = 2^j, all exact
    a = pow2(m, m.sub(m.convert(k, "i64"), m.c(1, "i64")))
    ah, al = two_sum(m, a, m.c(-0.5))
    sh, se = two_sum(m, ah, m.mul(a, ph))
    h, l = fast_two_sum(m, sh, m.add(m.add(se, al), m.mul(a, pl)))
    if t == "f64":
        out = m.mul(m.add(h, l), m.c(2.0))
    else:
        out = m.convert(m.mul(round_to_odd(m, h, l), m.c(2.0)), "f32")
    out = m.select(tiny, x, out)
    out = m.select(over, m.c(INF, t), out)
    out = m.select(under, m.c(-1.0, t), out)
    return m.select(nan, m.c(np.nan, t), out)


# --- hypot --------------------------------------------------------------------------------------


def hypot(m, x, y, t: str):
    """√(x² + y²) without undue overflow or underflow; hypot(±inf, NaN) = +inf (C99 F.10.4.3)."""
    X, Y = _to_f64(m, x, t), _to_f64(m, y, t)
    ax, ay = m.abs(X), m.abs(Y)
    nan = m.or_(m.ne(X, X), m.ne(Y, Y))
    inf = m.or_(m.eq(ax, m.c(INF)), m.eq(ay, m.c(INF)))
    special = m.or_(nan, inf)
    sx = m.select(special, m.c(1.0), ax)
    sy = m.select(special, m.c(0.0), ay)
    first = m.ge(sx, sy)
    a = m.select(first, sx, sy)
    b = m.select(first, sy, sx)
    zero = m.eq(a, m.c(0.0))
    a = m.select(zero, m.c(1.0), a)
    # a = 2^ea·A with A ∈ [1, 2) (a subnormal a: scaled by 2^54 first); B = b·2^−ea ≤ A
    sub = m.lt(a, m.c(H("0x1p-1022")))
    sc = m.select(sub, m.c(H("0x1p54")), m.c(1.0))
    a, b = m.mul(a, sc), m.mul(b, sc)
    ea = m.sub(m.convert(m.shr(m.bitcast(a, "u64"), 52), "i64"), m.c(1023, "i64"))
    e1 = m.neg(m.shr(ea, 1))
    e2 = m.sub(m.neg(ea), e1)  # −ea = e1 + e2, both in [−512, 512]
    A = m.mul(m.mul(a, pow2(m, e1)), pow2(m, e2))
    B = m.mul(m.mul(b, pow2(m, e1)), pow2(m, e2))
    ea = m.sub(ea, m.select(sub, m.c(54, "i64"), m.c(0, "i64")))
    # S = A² + B² as a double-double (exact for binary32 arguments)
    ph, pe = two_prod(m, A, A)
    qh, qe = two_prod(m, B, B)
    sh, se = fast_two_sum(m, ph, qh)
    sh, sl = fast_two_sum(m, sh, m.add(se, m.add(pe, qe)))
    # √S: r = √sh, corrected by (S − r²)/(2r)
    r = m.sqrt(sh)
    rr, re = two_prod(m, r, r)
    d = m.add(m.sub(m.sub(sh, rr), re), sl)
    h, l = fast_two_sum(m, r, m.div(d, m.add(r, r)))
    if t == "f64":
        out = _scaled(m, h, l, ea)
    else:  # ea ∈ [−149, 127]: the scaling is exact
        out = m.convert(m.mul(round_to_odd(m, h, l), pow2(m, ea)), "f32")
    out = m.select(zero, m.c(0.0, t), out)
    out = m.select(nan, m.c(np.nan, t), out)
    return m.select(inf, m.c(INF, t), out)


# --- sin, cos, tan ------------------------------------------------------------------------------

# 2/π in 64-bit words: TWO_OVER_PI[0] = 0 (the bits before the binary point), TWO_OVER_PI[j]
# = bits 64(j − 1) + 1 … 64j after it — enough for every binary64 argument (§6.9)
TWO_OVER_PI = tuple(
    int(v, 16)
    for v in (
        "0x0000000000000000",
        "0xa2f9836e4e441529",
        "0xfc2757d1f534ddc0",
        "0xdb6295993c439041",
        "0xfe5163abdebbc561",
        "0xb7246e3a424dd2e0",
        "0x06492eea09d1921c",
        "0xfe1deb1cb129a73e",
        "0xe88235f52ebb4484",
        "0xe99c7026b45f7e41",
        "0x3991d639835339f4",
        "0x9c845f8bbdf9283b",
        "0x1ff897ffde05980f",
        "0xef2f118b5a0a6d1f",
        "0x6d367ecf27cb09b7",
        "0x4f463f669e5fea2d",
        "0x7527bac7ebe5f17b",
        "0x3d0739f78a5292ea",
        "0x6bfb5fb11f8d5d08",
        "0x56033046fc7b6bab",
    )
)
PIO2 = (H("0x1.921fb54442d18p+0"), H("0x1.1a62633145c07p-54"))  # π/2
SIN_C1 = (H("-0x1.5555555555555p-3"), H("-0x1.5555555555555p-57"))  # −1/6
SIN_C2 = (H("0x1.1111111111111p-7"), H("0x1.1111111111111p-63"))  # 1/120
SIN_C3 = (H("-0x1.a01a01a01a01ap-13"), H("-0x1.a01a01a01a01ap-73"))  # −1/5040
COS_C2 = (H("0x1.5555555555555p-5"), H("0x1.5555555555555p-59"))  # 1/24
COS_C3 = (H("-0x1.6c16c16c16c17p-10"), H("0x1.f49f49f49f49fp-65"))  # −1/720
SIN_Q = tuple(
    H(v)
    for v in (
        "0x1.71de3a556c734p-19",
        "-0x1.ae64567f544d1p-26",
        "0x1.6124613a7be04p-33",
        "-0x1.ae7f3e278e68ep-41",
        "0x1.952b8a5466b36p-49",
        "-0x1.2df463f1150fbp-57",
    )
)
COS_Q = tuple(
    H(v)
    for v in (
        "0x1.a01a01a01a01ap-16",
        "-0x1.27e4fb7789f44p-22",
        "0x1.1eed8eff7f2f4p-29",
        "-0x1.93974a28bcc26p-37",
        "0x1.ae7e07e4ead63p-45",
        "-0x1.6667a591408edp-53",
    )
)
SIN_D = (-1 / 6, 1 / 60, -1 / 1680, 1 / 90720)  # S'(z), the first four Taylor terms
COS_D = (-1 / 2, 1 / 12, -1 / 240, 1 / 10080)  # C'(z)
TRIG_SMALL = 0.78125  # below it (< π/4) the argument is its own reduction: k = 0, r = x
TRIG_TINY = H("0x1p-27")  # below it sin x and tan x round to x, cos x to 1 (both formats)
M32 = 0xFFFFFFFF


def _reduce_pio2(m, a):
    """For a binary64 a ≥ TRIG_SMALL (finite): (j, rh, rl) with a = (4N + j)·π/2 + r,
    |r| ≤ π/4, r = rh + rl with relative error < 2^−74.

    Payne–Hanek in exact integer arithmetic (docs/semantics.md §6.9): a = M·2^E with M a
    53-bit integer; a·2/π mod 4 = M·W·2^(2−192) mod 4, W the 192 bits of 2/π from bit E − 1
    on (earlier bits give multiples of 4). The four 64-bit words holding W are chosen by
    selects over constants (no table load), W is shifted out of them, and the low 192 bits of
    M·W are computed exactly from 32-bit limbs. The top two bits are the quadrant, the other
    190 the fraction F; F ≥ 1/2 moves to the next quadrant with r = −(1 − F)·π/2."""
    u, c = "u64", m.c
    b = m.bitcast(a, u)
    q = m.sub(m.shr(b, 52), c(1013, u))  # (E − 1) + 63 ≥ 9: bit E − 1 is bit q of T[0..]
    jw, s = m.shr(q, 6), m.and_(q, c(63, u))
    ns = m.sub(c(63, u), s)
    words = [c(TWO_OVER_PI[i], u) for i in range(4)]
    for j in range(1, 17):  # q ≤ 1033: jw ≤ 16
        hit = m.eq(jw, c(j, u))
        words = [m.select(hit, c(TWO_OVER_PI[j + i], u), w) for i, w in enumerate(words)]
    limbs = []  # W's six 32-bit limbs, most significant first
    for i in range(3):
        w = m.or_(m.shl(words[i], s), m.shr(m.shr(words[i + 1], 1), ns))
        limbs += [m.shr(w, 32), m.and_(w, c(M32, u))]
    mi = m.or_(m.and_(b, c(MANT, u)), c(1 << 52, u))
    m1, m0 = m.shr(mi, 32), m.and_(mi, c(M32, u))
    cols: list[list] = [[] for _ in range(6)]  # products by the limb of P they start in
    for i in range(6):
        cols[5 - i].append(m.mul(m0, limbs[i]))
        if i > 0:
            cols[6 - i].append(m.mul(m1, limbs[i]))
    P, carry = [], None  # P = M·W mod 2^192 in 32-bit limbs, least significant first
    for col in range(6):
        parts = [m.and_(p, c(M32, u)) for p in cols[col]]
        if col > 0:
            parts += [m.shr(p, 32) for p in cols[col - 1]]
        if carry is not None:
            parts.append(carry)
        acc = parts[0]
        for p in parts[1:]:
            acc = m.add(acc, p)
        P.append(m.and_(acc, c(M32, u)))
        carry = m.shr(acc, 32)
    top = P[5]
    n = m.ne(m.and_(top, c(1 << 29, u)), c(0, u))  # F ≥ 1/2
    j = m.and_(m.add(m.shr(top, 30), m.select(n, c(1, u), c(0, u))), c(3, u))
    # |F| or 1 − F (to 2^−158: the complement of the limbs down to P[1])
    flip30 = m.select(n, c((1 << 30) - 1, u), c(0, u))
    flip32 = m.select(n, c(M32, u), c(0, u))
    g = [m.xor(m.and_(top, c((1 << 30) - 1, u)), flip30)]
    g += [m.xor(P[i], flip32) for i in (4, 3, 2, 1)]
    t = [m.mul(m.convert(gi, "f64"), c(2.0 ** -(30 + 32 * i))) for i, gi in enumerate(g)]
    s1, e1 = fast_two_sum(m, t[0], t[1])  # all ≥ 0: no cancellation
    s2, e2 = two_sum(m, s1, t[2])
    s3, e3 = two_sum(m, s2, t[3])
    fh, fl = fast_two_sum(m, s3, m.add(m.add(m.add(e1, e2), e3), t[4]))
    rh, rl = dd_mul_dd_const(m, fh, fl, PIO2)
    return j, m.select(n, m.neg(rh), rh), m.select(n, m.neg(rl), rl)


def _poly_dd(m, z, zs, q, cs):
    """cs[0] + z·(cs[1] + z·(… + z·(cs[-1] + z·Q(z)))) as a double-double (z a double)."""
    h, l = horner(m, z, q), m.c(0.0)
    for C in reversed(cs):
        h, l = dd_horner_step(m, C, z, zs, h, l)
    return h, l


def _sincos_kernel(m, rh, rl):
    """(sin r, cos r) as double-doubles for r = rh + rl, |r| ≤ π/4: sin r = r·S(r²),
    cos r = C(r²), S and C evaluated at zh = (r²).hi, plus zl·S'(zh) and zl·C'(zh) (|zl| ≤
    2^−53·zh: the first-order term is all that is left)."""
    rs = split(m, rh)
    zh, ze = two_prod(m, rh, rh, rs)
    zl = m.add(ze, m.mul(m.add(rh, rh), rl))
    zs = split(m, zh)
    sh, sl = _poly_dd(m, zh, zs, SIN_Q, ((1.0, 0.0), SIN_C1, SIN_C2, SIN_C3))
    sl = m.add(sl, m.mul(zl, horner(m, zh, SIN_D)))  # S'(z) to 2^−16 relative
    ch, cl = _poly_dd(m, zh, zs, COS_Q, ((1.0, 0.0), (-0.5, 0.0), COS_C2, COS_C3))
    cl = m.add(cl, m.mul(zl, horner(m, zh, COS_D)))  # C'(z) to 2^−16 relative
    ph, pe = two_prod(m, sh, rh, rs)  # sin r = (rh + rl)·(sh + sl)
    pl = m.add(pe, m.add(m.mul(sh, rl), m.mul(sl, rh)))
    sh, sl = fast_two_sum(m, ph, pl)
    ch, cl = fast_two_sum(m, ch, cl)
    return (sh, sl), (ch, cl)


def dd_div(m, ah, al, bh, bl):
    """(ah + al)/(bh + bl) as a double-double (relative error ~2^−100)."""
    qh = m.div(ah, bh)
    p, pe = two_prod(m, qh, bh)
    ql = m.div(m.sub(m.add(m.sub(m.sub(ah, p), pe), al), m.mul(qh, bl)), bh)
    return fast_two_sum(m, qh, ql)


def _trig(m, x, t: str, fn: str):
    X = _to_f64(m, x, t)
    a = m.abs(X)
    bad = m.not_(m.lt(a, m.c(INF)))  # NaN or ±inf
    tiny = m.lt(a, m.c(TRIG_TINY))
    small = m.lt(a, m.c(TRIG_SMALL))
    j, Rh, Rl = _reduce_pio2(m, m.select(m.or_(bad, small), m.c(1.0), a))
    rh = m.select(small, a, Rh)
    rl = m.select(small, m.c(0.0), Rl)
    u = "u64"
    j = m.select(small, m.c(0, u), j)
    odd = m.ne(m.and_(j, m.c(1, u)), m.c(0, u))
    two = m.ne(m.and_(j, m.c(2, u)), m.c(0, u))
    negx = m.lt(X, m.c(0.0))
    (sh, sl), (ch, cl) = _sincos_kernel(m, rh, rl)
    if fn == "sin":  # j = 0, 1, 2, 3: sin r, cos r, −sin r, −cos r; odd in x
        h, l = m.select(odd, ch, sh), m.select(odd, cl, sl)
        neg = m.ne(two, negx)
    elif fn == "cos":  # cos r, −sin r, −cos r, sin r; even
        h, l = m.select(odd, sh, ch), m.select(odd, sl, cl)
        neg = m.ne(odd, two)
    else:  # tan: sin r / cos r, −cos r / sin r; odd
        h, l = dd_div(
            m,
            m.select(odd, ch, sh),
            m.select(odd, cl, sl),
            m.select(odd, sh, ch),
            m.select(odd, sl, cl),
        )
        neg = m.ne(odd, negx)
    h = m.select(neg, m.neg(h), h)
    l = m.select(neg, m.neg(l), l)
    out = _result(m, h, l, t)
    out = m.select(tiny, m.c(1.0, t) if fn == "cos" else x, out)
    return m.select(bad, m.c(np.nan, t), out)


def sin(m, x, t: str):
    """sin x."""
    return _trig(m, x, t, "sin")


def cos(m, x, t: str):
    """cos x."""
    return _trig(m, x, t, "cos")


def tan(m, x, t: str):
    """tan x."""
    return _trig(m, x, t, "tan")


UNARY = {
    "exp2": exp2,
    "log2": log2,
    "expm1": expm1,
    "log1p": log1p,
    "sin": sin,
    "cos": cos,
    "tan": tan,
}
BINARY = {"hypot": hypot}


# --- the interpreter's entry points -------------------------------------------------------------


def _name_of(dtype) -> str:
    return "f32" if np.dtype(dtype) == np.float32 else "f64"


@fp.quiet
def unary(name: str, x):
    """The function ``name`` on a float array or scalar (numpy), NaN canonical."""
    x = np.asarray(x)
    return fp.canon(np.asarray(UNARY[name](NumpyOps, x, _name_of(x.dtype))))


@fp.quiet
def binary(name: str, x, y):
    x, y = np.asarray(x), np.asarray(y)
    t = _name_of(np.result_type(x, y))
    x, y = np.broadcast_arrays(x.astype(_DT[t]), y.astype(_DT[t]))
    return fp.canon(np.asarray(BINARY[name](NumpyOps, x, y, t)))
