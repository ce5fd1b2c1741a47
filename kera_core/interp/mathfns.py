"""`exp`, `log`, `tanh`, `sigmoid` and `sqrt` as fixed sequences of IEEE operations.

binary32 arguments go to :mod:`kera_core.interp.expolog32` (correctly rounded step lists,
evaluated in binary64); the binary64 step lists are below.

These functions *are* the definitions in docs/semantics.md §6: every line below is one
correctly rounded operation (or an exact bit manipulation), in the order written there,
and a backend reproduces the same sequence. No fma is used, so a target without a fused
multiply-add (WebAssembly) computes them at full speed.

exp and log follow FreeBSD msun (fdlibm), with its branches for speed removed, so one
straight-line sequence plus a few selects covers every input; their coefficients are given
by bit pattern. tanh and sigmoid (semantics version 3) are double-double step lists on
expm1's kernel (kera_core/interp/elementary.py), rounded once (within 0.5 ulp + 2^-60
relative). All four are written once against the loop primitives: the interpreter runs
them on numpy arrays, kera_core/loops/composite.py emits the same steps for every target.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from kera_core.interp import elementary, expolog32
from kera_core.interp.fp import F32, F64, FloatFormat, canon, fmt_of


def _f64(bits: int):
    return F64.const(bits)


def _b64(x: float) -> int:
    return int(np.array(x, dtype=np.float64).view(np.uint64))


@functools.cache
def _v64(bits: int) -> float:
    return float(np.array(bits, dtype=np.uint64).view(np.float64))


@dataclass(frozen=True)
class MathConsts:
    """The constants of the binary64 step lists, as bit patterns (docs/semantics.md §6.6)."""

    inv_ln2: int
    ln2_hi: int
    ln2_lo: int
    exp_p: tuple[int, ...]  # P1..Pn of c = r - t*(P1 + t*(P2 + ...))
    exp_over: int  # x > this -> +inf
    exp_under: int  # x < this -> +0
    log_lg_odd: tuple[int, ...]  # Lg1, Lg3, Lg5, Lg7 (t2 = z*(Lg1 + w*(Lg3 + ...)))
    log_lg_even: tuple[int, ...]  # Lg2, Lg4, Lg6 (t1 = w*(Lg2 + w*(Lg4 + ...)))
    sqrt2: int  # m >= this is halved
    sub_scale: int  # subnormal inputs of log are multiplied by 2**sub_scale
    tanh_tiny: int  # |x| < this: tanh x = x
    tanh_one: int  # |x| >= this: tanh x = +-1
    sigmoid_far: int  # |x| is clamped to this (sigmoid(-this) rounds to +0)


C64 = MathConsts(
    inv_ln2=0x3FF71547652B82FE,
    ln2_hi=0x3FE62E42FEE00000,
    ln2_lo=0x3DEA39EF35793C76,
    exp_p=(
        0x3FC555555555553E,
        0xBF66C16C16BEBD93,
        0x3F11566AAF25DE2C,
        0xBEBBBD41C5D26BF1,
        0x3E66376972BEA4D0,
    ),
    exp_over=0x40862E42FEFA39EF,
    exp_under=0xC0874910D52D3051,
    log_lg_odd=(0x3FE5555555555593, 0x3FD2492494229359, 0x3FC7466496CB03DE, 0x3FC2F112DF3E5244),
    log_lg_even=(0x3FD999999997FA04, 0x3FCC71C51D8E78AF, 0x3FC39A09D078C69F),
    sqrt2=0x3FF6A09E667F3BCD,
    sub_scale=54,
    tanh_tiny=_b64(2.0**-27),
    tanh_one=_b64(22.0),
    sigmoid_far=_b64(746.0),
)

CONSTS = {"f64": C64}


def _quiet(fn):
    """Run ``fn`` with numpy's floating-point warnings off (overflow to inf is intended)."""

    @functools.wraps(fn)
    def wrapper(x):
        with np.errstate(all="ignore"):
            return fn(x)

    return wrapper


# --- exp, log ----------------------------------------------------------------------
#
# Written once against the loop primitives ``m`` (kera_core/interp/elementary.py's
# interface), as tanh and sigmoid below: the interpreter runs them on numpy arrays
# (``NumpyOps``), kera_core/loops/composite.py runs the same code to emit loop primitives
# (``EmitOps``).


def _k(m, bits: int):
    """The binary64 constant with these bits."""
    return m.c(_v64(bits))


def _horner(m, t, coeffs):
    """coeffs[0] + t*(coeffs[1] + t*(... + t*coeffs[-1])), coefficients by bit pattern: a
    multiply then an add per step."""
    u = _k(m, coeffs[-1])
    for b in reversed(coeffs[:-1]):
        u = m.add(_k(m, b), m.mul(t, u))
    return u


def exp_steps(m, x):
    """e**x (binary64, docs/semantics.md §6.2)."""
    c = C64
    over = m.gt(x, _k(m, c.exp_over))
    under = m.lt(x, _k(m, c.exp_under))
    isnan = m.ne(x, x)
    xs = m.select(m.or_(m.or_(over, under), isnan), m.c(0.0), x)
    kf = m.roundeven(m.mul(xs, _k(m, c.inv_ln2)))  # round half to even; exact
    hi = m.sub(xs, m.mul(kf, _k(m, c.ln2_hi)))
    lo = m.mul(kf, _k(m, c.ln2_lo))
    r = m.sub(hi, lo)
    t = m.mul(r, r)
    cc = m.sub(r, m.mul(t, _horner(m, t, c.exp_p)))
    q = m.div(m.mul(r, cc), m.sub(m.c(2.0), cc))
    y = m.sub(m.c(1.0), m.sub(m.sub(lo, q), hi))
    out = elementary.scaleb(m, y, m.convert(kf, "i64"))
    out = m.select(over, m.c(np.inf), out)
    out = m.select(under, m.c(0.0), out)
    return m.select(isnan, m.c(np.nan), out)


def log_steps(m, x):
    """Natural logarithm (binary64, docs/semantics.md §6.3)."""
    c = C64
    mant, bias = F64.mant, F64.bias
    isnan = m.or_(m.ne(x, x), m.lt(x, m.c(0.0)))
    zero = m.eq(x, m.c(0.0))
    isinf = m.eq(x, m.c(np.inf))
    xs = m.select(m.or_(m.or_(isnan, zero), isinf), m.c(1.0), x)
    sub = m.lt(xs, _k(m, 1 << mant))
    xs = m.select(sub, m.mul(xs, _k(m, (c.sub_scale + bias) << mant)), xs)
    ix = m.bitcast(xs, "u64")
    ex = m.convert(m.shr(ix, mant), "i64")
    ex = m.sub(m.sub(ex, m.c(bias, "i64")), m.select(sub, m.c(c.sub_scale, "i64"), m.c(0, "i64")))
    mbits = m.or_(m.and_(ix, m.c((1 << mant) - 1, "u64")), m.c(bias << mant, "u64"))
    mm = m.bitcast(mbits, "f64")  # in [1, 2)
    big = m.ge(mm, _k(m, c.sqrt2))
    mm = m.select(big, m.mul(mm, m.c(0.5)), mm)
    ex = m.add(ex, m.convert(big, "i64"))
    fx = m.sub(mm, m.c(1.0))
    s = m.div(fx, m.add(m.c(2.0), fx))
    dk = m.convert(ex, "f64")  # exact
    z = m.mul(s, s)
    w = m.mul(z, z)
    t1 = m.mul(w, _horner(m, w, c.log_lg_even))
    t2 = m.mul(z, _horner(m, w, c.log_lg_odd))
    rr = m.add(t2, t1)
    hfsq = m.mul(m.mul(m.c(0.5), fx), fx)
    inner = m.add(m.mul(s, m.add(hfsq, rr)), m.mul(dk, _k(m, c.ln2_lo)))
    out = m.sub(m.mul(dk, _k(m, c.ln2_hi)), m.sub(m.sub(hfsq, inner), fx))
    out = m.select(zero, m.c(-np.inf), out)
    out = m.select(isinf, m.c(np.inf), out)
    return m.select(isnan, m.c(np.nan), out)


@_quiet
def exp(x):
    """e**x (docs/semantics.md §6.2)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("exp", x)
    return canon(np.asarray(exp_steps(elementary.NumpyOps, np.asarray(x))))


@_quiet
def log(x):
    """Natural logarithm (docs/semantics.md §6.3)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("log", x)
    return canon(np.asarray(log_steps(elementary.NumpyOps, np.asarray(x))))


# --- tanh, sigmoid ------------------------------------------------------------------
#
# Written once against the loop primitives ``m`` (kera_core/interp/elementary.py's
# interface), like §6.9: the interpreter runs them on numpy arrays (``NumpyOps``),
# kera_core/loops/composite.py runs the same code to emit loop primitives (``EmitOps``).
# Both build on expm1's kernel: e^z = 2^k·(1 + p) with p a double-double (error < 2^−60).


def tanh_steps(m, x):
    """tanh x (binary64, docs/semantics.md §6.4): (e^2a − 1)/(e^2a + 1) = h/(h + 1) with
    h = (e^2a − 1)/2 a double-double, the quotient a double-double rounded once."""
    c = C64
    a = m.abs(x)
    tiny = m.lt(a, m.c(_v64(c.tanh_tiny)))  # tanh x rounds to x (also ±0, subnormals)
    one = m.ge(a, m.c(_v64(c.tanh_one)))  # tanh x rounds to ±1 (also ±inf)
    z = m.select(m.or_(m.or_(tiny, one), m.ne(x, x)), m.c(1.0), m.add(a, a))
    k, ph, pl = elementary.exp_reduced(m, z)
    h, l = elementary.half_expm1(m, k, ph, pl)  # (e^2a − 1)/2
    dh, de = elementary.two_sum(m, m.c(1.0), h)
    dh, dl = elementary.fast_two_sum(m, dh, m.add(de, l))  # (e^2a + 1)/2
    qh, ql = elementary.dd_div(m, h, l, dh, dl)
    v = m.add(qh, ql)
    out = m.select(m.lt(x, m.c(0.0)), m.neg(v), v)
    out = m.select(one, m.select(m.lt(x, m.c(0.0)), m.c(-1.0), m.c(1.0)), out)
    out = m.select(tiny, x, out)
    return m.select(m.ne(x, x), m.c(np.nan), out)


def sigmoid_steps(m, x):
    """1/(1 + e^−x) (binary64, docs/semantics.md §6.5), without overflow: with
    e^−|x| = 2^k·N, N = 1 + p, and D = 1 + e^−|x| (double-doubles), 1/D for x ≥ 0 and
    N/D·2^k for x < 0, the quotient a double-double rounded once (into the subnormals
    as §6.9's results)."""
    c = C64
    nan = m.ne(x, x)
    a = m.abs(x)
    a = m.select(m.gt(a, m.c(_v64(c.sigmoid_far))), m.c(_v64(c.sigmoid_far)), a)  # (NaN stays)
    k, ph, pl = elementary.exp_reduced(m, m.neg(m.select(nan, m.c(0.0), a)))
    nh, ne = elementary.fast_two_sum(m, m.c(1.0), ph)
    nh, nl = elementary.fast_two_sum(m, nh, m.add(ne, pl))  # N ∈ [0.70, 1.42]
    ki = m.convert(k, "i64")
    s = elementary.pow2(m, elementary.at_least(m, ki, -1000))
    dh, de = elementary.two_sum(m, m.c(1.0), m.mul(s, nh))
    dh, dl = elementary.fast_two_sum(m, dh, m.add(de, m.mul(s, nl)))  # D ∈ [1, 2]
    pos = m.ge(x, m.c(0.0))
    qh, ql = elementary.dd_div(m, m.select(pos, m.c(1.0), nh), m.select(pos, m.c(0.0), nl), dh, dl)
    # (qh + ql)·2^k' = 2·(qh + ql)·2^(k' − 1), 2·qh ∈ [0.70, 2.83]; k' = 0 for x ≥ 0
    kq = m.sub(m.select(pos, m.c(0, "i64"), ki), m.c(1, "i64"))
    out = elementary.round_scaled(m, m.add(qh, qh), m.add(ql, ql), kq)
    return m.select(nan, m.c(np.nan), out)


@_quiet
def tanh(x):
    """Hyperbolic tangent (docs/semantics.md §6.4)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("tanh", x)
    return canon(np.asarray(tanh_steps(elementary.NumpyOps, np.asarray(x))))


@_quiet
def sigmoid(x):
    """1 / (1 + e**-x), computed without overflow (docs/semantics.md §6.5)."""
    if fmt_of(np.asarray(x)) is F32:
        return expolog32.unary("sigmoid", x)
    return canon(np.asarray(sigmoid_steps(elementary.NumpyOps, np.asarray(x))))


# --- sqrt --------------------------------------------------------------------------


@_quiet
def sqrt(x):
    """IEEE-754 squareRoot: correctly rounded; sqrt(-0) = -0; x < 0 gives NaN."""
    x = np.asarray(x)
    return canon(np.sqrt(x))


UNARY = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "sqrt": sqrt}


def constants_table(f: FloatFormat = F64) -> list[tuple[str, str, str]]:
    """(name, hex bits, decimal) of the binary64 constants for docs/semantics.md, straight
    from the code."""
    c = CONSTS[f.name]
    width = 16
    rows: list[tuple[str, str, str]] = []

    def add(name: str, bits: int) -> None:
        rows.append((name, f"0x{bits:0{width}X}", repr(float(f.const(bits)))))

    add("INV_LN2", c.inv_ln2)
    add("LN2_HI", c.ln2_hi)
    add("LN2_LO", c.ln2_lo)
    for i, b in enumerate(c.exp_p, 1):
        add(f"P{i}", b)
    add("EXP_OVER", c.exp_over)
    add("EXP_UNDER", c.exp_under)
    lg = {}
    for i, b in enumerate(c.log_lg_odd):
        lg[2 * i + 1] = b
    for i, b in enumerate(c.log_lg_even):
        lg[2 * i + 2] = b
    for i in sorted(lg):
        add(f"Lg{i}", lg[i])
    add("SQRT2", c.sqrt2)
    add("TANH_TINY", c.tanh_tiny)
    add("TANH_ONE", c.tanh_one)
    add("SIGMOID_FAR", c.sigmoid_far)
    return rows


__all__ = ["UNARY", "exp", "log", "sigmoid", "sqrt", "tanh", "F32", "F64"]
