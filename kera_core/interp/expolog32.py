"""binary32 `exp`, `log`, `tanh`, `sigmoid`: correctly rounded step lists (docs/semantics.md
§6.2–§6.5, semantics version 2).

As CORE-MATH's binary32 functions do, each evaluates in binary64: the argument is converted
to binary64 (exact), the function is computed as a double-double ``h + l`` with a relative
error below 2^−60 (the kernels and building blocks of :mod:`kera_core.interp.elementary`),
and the binary32 result is ``convert(round_to_odd(h + l))`` — one correct rounding of
``h + l`` (Boldo & Melquiond). That is the correctly rounded ``f(x)`` unless ``f(x)`` lies
within 2^−60 (relative) of a binary32 rounding boundary with ``h + l`` across it; the sweep of
all 2^32 inputs (scripts/cr32_sweep.py, docs/semantics.md §6.7) found no such input for any
of the four, so no exception list is needed.

Like the step lists of :mod:`kera_core.interp.elementary`, each function is written once
against the interface ``m`` of loop primitives (add sub mul div, compares, selects, bit
operations, convert; no fma, no table) and run by both ``elementary.NumpyOps`` (the
interpreter) and ``composite.EmitOps`` (the loop layer, hence every backend).
"""

from __future__ import annotations

import numpy as np

from kera_core.interp import fp
from kera_core.interp.elementary import (
    EXPM1_C3,
    EXPM1_Q,
    INF,
    INV_LN2,
    LN2_HI,
    LN2_LO,
    NumpyOps,
    _log_kernel,
    dd_div,
    dd_horner_step,
    fast_two_sum,
    horner,
    pow2,
    round_to_odd,
    split,
    two_prod,
    two_sum,
)

H = float.fromhex

EXP_OVER = 89.0  # e^x > 2^128 above it: +inf (x in (88.72, 89] is computed, and rounds to inf)
EXP_UNDER = -104.0  # e^x < 2^−150 below it: +0
TANH_TINY = H("0x1p-30")  # below it tanh x = x(1 − x²/3 …) rounds to x
TANH_ONE = 10.0  # from it on tanh x rounds to ±1 (1 − tanh 10 < 2^−28)
SIGMOID_CLAMP = 120.0  # |x| is clamped to it: sigmoid(±120) already rounds to 1 and +0


def exp_kernel(m, X):
    """For a binary64 X with |X| ≤ 200: (k, ph, pl) with e^X = 2^k·(1 + ph + pl), k an
    integer-valued binary64, |ph| ≤ 0.42 and ph + pl = e^r − 1 to a relative 2^−62.

    r = X − k·ln 2 (Cody–Waite: k·LN2_HI and X − k·LN2_HI exact) as rh + rl; e^rh − 1 by
    the Taylor-like polynomial rh·(1 + rh·(1/2 + rh·(1/6 + rh·Q(rh)))), the last three steps
    in double-double; then e^(rh + rl) − 1 = p + rl·(1 + p)."""
    k = m.roundeven(m.mul(X, m.c(INV_LN2[0])))
    hi = m.sub(X, m.mul(k, m.c(LN2_HI)))
    lo = m.mul(k, m.c(LN2_LO))
    rh, rl = two_sum(m, hi, m.neg(lo))  # |r| ≤ 0.3466
    rs = split(m, rh)
    h, l = horner(m, rh, EXPM1_Q), m.c(0.0)
    for C in (EXPM1_C3, (0.5, 0.0), (1.0, 0.0)):
        h, l = dd_horner_step(m, C, rh, rs, h, l)
    ph, pe = two_prod(m, h, rh, rs)
    pl = m.add(m.add(pe, m.mul(l, rh)), m.add(rl, m.mul(rl, ph)))
    ph, pl = fast_two_sum(m, ph, pl)
    return k, ph, pl


def _f32(m, h, l):
    """The double-double h + l correctly rounded to binary32."""
    return m.convert(round_to_odd(m, h, l), "f32")


def exp(m, x):
    """e^x (§6.2)."""
    X = m.convert(x, "f64")
    nan = m.ne(X, X)
    over = m.gt(X, m.c(EXP_OVER))
    under = m.lt(X, m.c(EXP_UNDER))
    k, ph, pl = exp_kernel(m, m.select(m.or_(m.or_(nan, over), under), m.c(0.0), X))
    h, e = fast_two_sum(m, m.c(1.0), ph)
    h, l = fast_two_sum(m, h, m.add(e, pl))
    # k ∈ [−150, 129]: scaling the 53-bit odd-rounded value by 2^k is exact in binary64
    out = m.convert(m.mul(round_to_odd(m, h, l), pow2(m, m.convert(k, "i64"))), "f32")
    out = m.select(over, m.c(INF, "f32"), out)
    out = m.select(under, m.c(0.0, "f32"), out)
    return m.select(nan, m.c(np.nan, "f32"), out)


def log(m, x):
    """The natural logarithm (§6.3): log x = e·ln 2 + log m, m ∈ [√2/2, √2)."""
    X = m.convert(x, "f64")
    nan = m.or_(m.ne(X, X), m.lt(X, m.c(0.0)))
    zero = m.eq(X, m.c(0.0))
    inf = m.eq(X, m.c(INF))
    dk, Lh, Ll = _log_kernel(m, m.select(m.or_(m.or_(nan, zero), inf), m.c(1.0), X))
    eh = m.mul(dk, m.c(LN2_HI))  # exact (|dk| ≤ 149)
    el = m.mul(dk, m.c(LN2_LO))
    sh, se = two_sum(m, eh, Lh)
    h, l = fast_two_sum(m, sh, m.add(se, m.add(Ll, el)))
    out = _f32(m, h, l)
    out = m.select(zero, m.c(-INF, "f32"), out)
    out = m.select(inf, m.c(INF, "f32"), out)
    return m.select(nan, m.c(np.nan, "f32"), out)


def tanh(m, x):
    """tanh x = E/(E + 2), E = e^(2|x|) − 1, with x's sign (§6.4)."""
    X = m.convert(x, "f64")
    a = m.abs(X)
    nan = m.ne(X, X)
    tiny = m.lt(a, m.c(TANH_TINY))
    one = m.ge(a, m.c(TANH_ONE))  # ±inf included
    a = m.select(m.or_(nan, one), m.c(0.0), a)
    k, ph, pl = exp_kernel(m, m.add(a, a))  # k ≥ 0
    # E/2 = 2^(k−1)·(1 + p) − 1/2 = h + l, every step exact but the last
    A = pow2(m, m.sub(m.convert(k, "i64"), m.c(1, "i64")))
    ah, al = two_sum(m, A, m.c(-0.5))
    sh, se = two_sum(m, ah, m.mul(A, ph))
    h, l = fast_two_sum(m, sh, m.add(m.add(se, al), m.mul(A, pl)))
    dh, de = two_sum(m, m.c(1.0), h)  # E/2 + 1
    qh, ql = dd_div(m, h, l, dh, m.add(de, l))
    out = _f32(m, qh, ql)
    out = m.select(one, m.c(1.0, "f32"), out)
    out = m.select(m.lt(X, m.c(0.0)), m.neg(out), out)
    out = m.select(tiny, x, out)  # tanh(±0) = ±0
    return m.select(nan, m.c(np.nan, "f32"), out)


def sigmoid(m, x):
    """1/(1 + e^−x) = N/(1 + E), E = e^−|x|, N = 1 (x ≥ 0) or E (§6.5)."""
    X = m.convert(x, "f64")
    nan = m.ne(X, X)
    a = m.abs(X)
    a = m.select(m.gt(a, m.c(SIGMOID_CLAMP)), m.c(SIGMOID_CLAMP), a)  # ±inf included
    a = m.select(nan, m.c(0.0), a)
    k, ph, pl = exp_kernel(m, m.neg(a))  # k ∈ [−174, 0]
    A = pow2(m, m.convert(k, "i64"))
    eh, el = fast_two_sum(m, A, m.mul(A, ph))  # E = A·(1 + p) ≤ 1
    el = m.add(el, m.mul(A, pl))
    dh, de = fast_two_sum(m, m.c(1.0), eh)
    pos = m.ge(X, m.c(0.0))
    nh = m.select(pos, m.c(1.0), eh)
    nl = m.select(pos, m.c(0.0), el)
    qh, ql = dd_div(m, nh, nl, dh, m.add(de, el))
    return m.select(nan, m.c(np.nan, "f32"), _f32(m, qh, ql))


UNARY = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid}


@fp.quiet
def unary(name: str, x):
    """The binary32 function ``name`` on a numpy array or scalar, NaN canonical."""
    x = np.asarray(x, np.float32)
    return fp.canon(np.asarray(UNARY[name](NumpyOps, x)))
