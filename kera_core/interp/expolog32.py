"""binary32 `exp`, `log`, `tanh`, `sigmoid`: correctly rounded step lists (docs/semantics.md
§6.2–§6.5, semantics version 2).

CORE-MATH style: the argument is converted to binary64 (exact), the function is evaluated in
plain binary64 — a range reduction and a short polynomial, no table, no double-double — to a
relative error of about 2^−51, and the result is converted to binary32 (one rounding). That
is the correctly rounded ``f(x)`` unless ``f(x)`` lies so close to a binary32 rounding
boundary that the binary64 approximation falls on the other side of it. The sweep of all
2^32 inputs (scripts/cr32_sweep.py, docs/semantics.md §6.7) finds those inputs; they are
listed in :data:`EXCEPTIONS` with their correctly rounded results and patched in by a
compare and a select each at the end.

Every step is a correctly rounded binary64 operation, a compare, a select, an exact bit
operation or the f32↔f64 conversion — and every varying value is either binary64 or the
binary32 argument/result, so the loop layer runs these lists lane-wise on targets whose
vectors convert between the two (kera_core/loops/vectorize.py). Integer ↔ float
conversions are avoided (no vector form on most targets): ``k + 1.5·2^52`` gives the integer
``k`` in its low bits, and an integer ``e`` becomes the binary64 ``e`` by the reverse.

Like the step lists of :mod:`kera_core.interp.elementary`, each function is written once
against the interface ``m`` of loop primitives and run by both ``elementary.NumpyOps`` (the
interpreter) and ``composite.EmitOps`` (the loop layer, hence every backend).
"""

from __future__ import annotations

import numpy as np

from kera_core.interp import fp
from kera_core.interp.elementary import INF, NumpyOps

H = float.fromhex

INV_LN2 = H("0x1.71547652b82fep+0")  # 1/ln 2 rounded
LN2_HI = H("0x1.62e42fefa38p-1")  # ln 2 to 41 bits: k·LN2_HI and x − k·LN2_HI are exact
LN2_LO = H("0x1.ef35793c7673p-45")  # ln 2 − LN2_HI rounded
MAGIC = H("0x1.8p52")  # an integer e (|e| < 2^51) + MAGIC holds e in its low bits
MAGIC_BITS = 0x4338000000000000
EXP_MAGIC = MAGIC + 1023  # t + EXP_MAGIC: k + 1023 in the low bits, k = t rounded
EXP_G = tuple(
    H(c)
    for c in (
        "0x1.af38a9b0ec855p-26",
        "0x1.289185613a3d6p-22",
        "0x1.71de0dae63bb3p-19",
        "0x1.a019b90d2ae7ap-16",
        "0x1.a01a01a7c41d5p-13",
        "0x1.6c16c1788bd90p-10",
        "0x1.11111111109b3p-7",
        "0x1.5555555553d63p-5",
        "0x1.5555555555556p-3",
        "0x1.0000000000001p-1",
    )
)  # (e^r − 1 − r)/r² on |r| ≤ ln2/2, highest degree first (abs. error in e^r ≈ 2^−56)
LOG_P = tuple(
    H(c)
    for c in (
        "0x1.2b5900de53b32p-4",
        "0x1.39fe51a7c18f9p-4",
        "0x1.7462b51cb66b1p-4",
        "0x1.c71c62e3f11e6p-4",
        "0x1.2492492df281ap-3",
        "0x1.99999999952d7p-3",
        "0x1.5555555555558p-2",
    )
)  # (atanh(√z)/√z − 1)/z on z ≤ (3 − 2√2)², highest first (rel. error ≈ 2^−57)
SQRT1_2_BITS = 0x3FE6A09E667F3BCD  # √2/2: log's reduced mantissa lies in [√2/2, √2)
MANT = (1 << 52) - 1
SIGN = 1 << 63

EXP_OVER = 89.0  # e^x > 2^128 from 88.73 on: x is clamped to 89 (→ +inf)
EXP_UNDER = -104.0  # e^x < 2^−150 below it: x is clamped to −104 (→ +0)
TANH_ONE = 10.0  # from it on tanh x rounds to ±1 (1 − tanh 10 < 2^−27): |x| clamped to it
SIGMOID_CLAMP = 120.0  # |x| is clamped to it: sigmoid(±120) already rounds to 1 and +0
SIGMOID_SMALL = H("0x1p-15")  # below it sigmoid x = 1/2 + x/4, rounded as the x³ term says

# the inputs (binary32 bit patterns) where the binary64 evaluation rounds to the wrong
# binary32, with the correctly rounded result: found by scripts/cr32_sweep.py over all 2^32
EXCEPTIONS: dict[str, tuple[tuple[int, int], ...]] = {
    "exp": (),
    "log": (
        (0x3C413D3A, 0xC08E158F),  # log(0.011794383) = -4.4401317 (binary64: -4.440132)
        (0x41178FEB, 0x400FE5E7),  # log(9.472636) = 2.2484071 (binary64: 2.2484074)
        (0x4C5D65A5, 0x418F034B),  # log(5.8037908e7) = 17.876608 (binary64: 17.876606)
        (0x65D890D3, 0x4254D1F9),  # log(1.2783784e23) = 53.20505 (binary64: 53.205048)
        (0x6F31A8EC, 0x42845A89),  # log(5.498306e28) = 66.17683 (binary64: 66.17682)
    ),
    "tanh": (),
    "sigmoid": (),
}


def _estrin(m, x, x2, coeffs):
    """c[0]·x^n + … + c[n] (highest degree first) by Estrin's scheme: pairs c + c'·x, then pairs of
    those with x², x⁴, … — as many steps as Horner's but for the powers, and a dependency
    chain of log₂(n) steps instead of n (the vector loops it runs in are latency-bound)."""
    terms = [m.c(c) for c in reversed(coeffs)]  # lowest degree first
    pw = x
    while len(terms) > 1:
        nxt = [m.add(terms[i], m.mul(terms[i + 1], pw)) for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
        if len(terms) > 1:
            pw = x2 if pw is x else m.mul(pw, pw)
    return terms[0]


def exp_kernel(m, X):
    """For a binary64 X with |X| ≤ 180 and at most 24 significant bits: (s, q) with
    e^X = s·(1 + q) to a relative 2^−53 or so: s = 2^k exactly, k = X/ln 2 rounded to an
    integer (to nearest; ties go to the odd k), and q = e^r − 1 (relative error ≈ 2^−53),
    r = X − k·ln 2 (Cody–Waite: k·LN2_HI and X − k·LN2_HI exact), |r| ≤ ln2/2 + 2^−40."""
    kt = m.add(m.mul(X, m.c(INV_LN2)), m.c(EXP_MAGIC))  # the binary64 1.5·2^52 + 1023 + k
    k = m.sub(kt, m.c(EXP_MAGIC))
    r = m.sub(m.sub(X, m.mul(k, m.c(LN2_HI))), m.mul(k, m.c(LN2_LO)))
    r2 = m.mul(r, r)
    q = m.add(r, m.mul(r2, _estrin(m, r, r2, EXP_G)))
    # 2^k: kt's low 12 bits are k + 1023 ∈ [1, 2046], shifted into the exponent field
    s = m.bitcast(m.shl(m.bitcast(kt, "u64"), 52), "f64")
    return s, q


def _patch(m, name: str, x, out):
    """The listed exceptions of ``name``: out, or the correctly rounded result where x is one."""
    for xb, yb in EXCEPTIONS[name]:
        xv = np.array(xb, np.uint32).view(np.float32)
        yv = np.array(yb, np.uint32).view(np.float32)
        out = m.select(m.eq(x, m.c(xv, "f32")), m.c(yv, "f32"), out)
    return out


def exp(m, x):
    """e^x (§6.2): X clamped to [−104, 89] (NaN stays NaN), 2^k·(1 + q) rounded once."""
    X = m.convert(x, "f64")
    X = m.select(m.gt(X, m.c(EXP_OVER)), m.c(EXP_OVER), X)  # (NaN stays)
    X = m.select(m.lt(X, m.c(EXP_UNDER)), m.c(EXP_UNDER), X)
    s, q = exp_kernel(m, X)
    y = m.mul(m.add(m.c(1.0), q), s)  # exact scaling: 2^k and the product are normal
    return _patch(m, "exp", x, m.convert(y, "f32"))


def log(m, x):
    """The natural logarithm (§6.3): x = 2^e·u, u ∈ [√2/2, √2); log u = 2·atanh(s),
    s = (u − 1)/(u + 1), as 2s + 2s·z·P(z), z = s²; plus e·ln 2."""
    X = m.convert(x, "f64")
    # e and u from the bits: X's bits minus those of √2/2 hold e in the top (arithmetic
    # shift) and u's mantissa below
    d = m.sub(m.bitcast(X, "i64"), m.c(SQRT1_2_BITS, "i64"))
    e = m.sub(
        m.bitcast(m.add(m.shr(d, 52), m.c(MAGIC_BITS, "i64")), "f64"), m.c(MAGIC)
    )  # the binary64 e, exactly
    u = m.bitcast(m.add(m.and_(d, m.c(MANT, "i64")), m.c(SQRT1_2_BITS, "i64")), "f64")
    f = m.sub(u, m.c(1.0))  # exact (Sterbenz)
    s = m.div(f, m.add(m.c(2.0), f))  # 2 + f exact: f has at most 24 significant bits
    t = m.add(s, s)
    z = m.mul(s, s)
    lu = m.add(t, m.mul(m.mul(t, z), _estrin(m, z, m.mul(z, z), LOG_P)))
    y = m.add(m.mul(e, m.c(LN2_HI)), m.add(lu, m.mul(e, m.c(LN2_LO))))
    # x ≤ 0, +inf, NaN: log 0 = −inf, log(x < 0) = NaN, log inf = inf, NaN stays
    ok = m.and_(m.gt(X, m.c(0.0)), m.lt(X, m.c(INF)))
    other = m.select(m.lt(X, m.c(0.0)), m.c(np.nan), m.select(m.eq(X, m.c(0.0)), m.c(-INF), X))
    return _patch(m, "log", x, m.convert(m.select(ok, y, other), "f32"))


def tanh(m, x):
    """tanh x = E/(E + 2), E = e^(2a) − 1 = (2^k − 1) + 2^k·q, a = min(|x|, 10), with x's
    sign bit (§6.4)."""
    X = m.convert(x, "f64")
    a = m.abs(X)
    a = m.select(m.gt(a, m.c(TANH_ONE)), m.c(TANH_ONE), a)  # (NaN stays)
    s, q = exp_kernel(m, m.add(a, a))  # k ≥ 0: 2^k − 1 is exact, the sum rounds once
    E = m.add(m.sub(s, m.c(1.0)), m.mul(s, q))
    y = m.div(E, m.add(E, m.c(2.0)))
    sign = m.and_(m.bitcast(X, "u64"), m.c(SIGN, "u64"))
    y = m.bitcast(m.or_(m.bitcast(y, "u64"), sign), "f64")
    return _patch(m, "tanh", x, m.convert(y, "f32"))


def sigmoid(m, x):
    """1/(1 + e^−x) = N/(1 + E), E = e^−a, a = min(|x|, 120), N = 1 (x ≥ 0) or E (§6.5).

    Near 0, sigmoid x = 1/2 + x/4 − x³/48 + …, and 1/2 + x/4 is a binary32 midpoint for
    every x = odd·2^−23 (x > 0) or odd·2^−24 (x < 0): there the binary64 quotient cannot
    tell which side the x³ term puts the value. So for |x| < 2^−15 the result is
    h = 1/2 + x/4 (exact) moved one binary64 unit toward −x (the side of −x³/48): that
    rounds to binary32 as 1/2 + x/4 − x³/48 + … does, as 1/2 + x/4 is either a midpoint
    or at least 2^−48 away from one, and |x³/48| < 2^−50."""
    X = m.convert(x, "f64")
    ax = m.abs(X)
    a = m.select(m.gt(ax, m.c(SIGMOID_CLAMP)), m.c(SIGMOID_CLAMP), ax)  # (NaN stays)
    s, q = exp_kernel(m, m.neg(a))
    E = m.mul(m.add(m.c(1.0), q), s)
    pos = m.ge(X, m.c(0.0))
    y = m.div(m.select(pos, m.c(1.0), E), m.add(m.c(1.0), E))
    h = m.bitcast(m.add(m.c(0.5), m.mul(X, m.c(0.25))), "i64")
    h = m.bitcast(m.add(h, m.select(pos, m.c(-1, "i64"), m.c(1, "i64"))), "f64")
    y = m.select(m.lt(ax, m.c(SIGMOID_SMALL)), h, y)
    return _patch(m, "sigmoid", x, m.convert(y, "f32"))


UNARY = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid}


@fp.quiet
def unary(name: str, x):
    """The binary32 function ``name`` on a numpy array or scalar, NaN canonical."""
    x = np.asarray(x, np.float32)
    return fp.canon(np.asarray(UNARY[name](NumpyOps, x)))
