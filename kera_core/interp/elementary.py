"""`exp2`, `log2`, `expm1`, `log1p`, `hypot`, `sin`, `cos`, `tan`, `atan2`, `pow`, `erf`,
`erfc`: step lists written once (docs/semantics.md §6.9).

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
  function with ``KERA_EXHAUSTIVE=1``; `hypot` has a proof (§6.9). `pow` (binary32) first
  recognises an exact result or midpoint (at most 25 bits: h + l rounded to binary64 is it).

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


def round_scaled(m, h, l, k):
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
LOGP_C = tuple(
    (H(a), H(b))
    for a, b in (
        ("0x1.5555555555555p-2", "0x1.5555555555555p-56"),
        ("0x1.999999999999ap-3", "-0x1.999999999999ap-57"),
        ("0x1.2492492492492p-3", "0x1.2492492492492p-57"),
        ("0x1.c71c71c71c71cp-4", "0x1.c71c71c71c71cp-58"),
    )
)
LOGP_Q = tuple(
    H(v)
    for v in (
        "0x1.745d1745d1746p-4",
        "0x1.3b13b13b13bf6p-4",
        "0x1.11111110e9c13p-4",
        "0x1.e1e1e234fe5f9p-5",
        "0x1.af2840b555c5ep-5",
        "0x1.86247abc4799bp-5",
        "0x1.624cd380b4e69p-5",
        "0x1.6df10cfb4f6b0p-5",
    )
)
PI = (H("0x1.921fb54442d18p+1"), H("0x1.1a62633145c07p-53"))  # π
ATAN_THIRD = (H("-0x1.5555555555555p-2"), H("-0x1.5555555555555p-56"))  # −1/3
ATAN_Q = tuple(
    H(v)
    for v in (
        "0x1.999999999999ap-3",
        "-0x1.2492492492492p-3",
        "0x1.c71c71c71c0f3p-4",
        "-0x1.745d173f3eee4p-4",
        "0x1.3b137e8465ab0p-4",
        "-0x1.105ca80155bd9p-4",
    )
)
ATAN_K = tuple(
    (H(a), H(b))
    for a, b in (
        ("0x0.0p+0", "0x0.0p+0"),
        ("0x1.ff55bb72cfdeap-5", "-0x1.c934d86d23f1dp-60"),
        ("0x1.fd5ba9aac2f6ep-4", "-0x1.cd37686760c17p-59"),
        ("0x1.7b97b4bce5b02p-3", "0x1.347b0b4f881cap-58"),
        ("0x1.f5b75f92c80ddp-3", "0x1.8ab6e3cf7afbdp-57"),
        ("0x1.362773707ebccp-2", "-0x1.963a544b672d8p-57"),
        ("0x1.6f61941e4def1p-2", "-0x1.c63aae6f6e918p-56"),
        ("0x1.a64eec3cc23fdp-2", "-0x1.24dec1b50b7ffp-56"),
        ("0x1.dac670561bb4fp-2", "0x1.a2b7f222f65e2p-56"),
        ("0x1.0657e94db30d0p-1", "-0x1.d5b495f6349e6p-56"),
        ("0x1.1e00babdefeb4p-1", "-0x1.928df287a668fp-58"),
        ("0x1.345f01cce37bbp-1", "0x1.1021137c71102p-55"),
        ("0x1.4978fa3269ee1p-1", "0x1.2419a87f2a458p-56"),
        ("0x1.5d58987169b18p-1", "0x1.0028e4bc5e7cap-57"),
        ("0x1.700a7c5784634p-1", "-0x1.8c34d25aadef6p-56"),
        ("0x1.819d0b7158a4dp-1", "-0x1.bf76229d3b917p-56"),
        ("0x1.921fb54442d18p-1", "0x1.1a62633145c07p-55"),
    )
)
ERF_C = tuple(
    (H(a), H(b))
    for a, b in (
        ("0x1.20dd750429b6dp+0", "0x1.1ae3a914fed80p-56"),
        ("-0x1.812746b0379e7p-2", "0x1.ee12e49cab700p-57"),
        ("0x1.ce2f21a042be2p-4", "-0x1.2871bc5e00766p-58"),
        ("-0x1.b82ce31288b51p-6", "0x1.1015978e7ac92p-61"),
        ("0x1.565bcd0e6a53fp-8", "-0x1.a73e0832f7e39p-64"),
    )
)
ERF_Q = tuple(
    H(v)
    for v in (
        "-0x1.c02db40040b86p-11",
        "0x1.f9a326f9b89b7p-14",
        "-0x1.f4d25c3e0c2eap-17",
        "0x1.b9e6c9dc650d8p-20",
        "-0x1.5f742ec439e7ap-23",
        "0x1.fcc57204356b4p-27",
        "-0x1.51d717d889183p-30",
        "0x1.9e6ac96ec33e6p-34",
        "-0x1.d843aaa39a81ep-38",
        "0x1.f660c907d2f4cp-42",
        "-0x1.f36071254b3e1p-46",
        "0x1.c2c5f14c08db5p-50",
        "-0x1.2a14218cba80bp-54",
    )
)
ERF_D = tuple((n + 1) * c for n, (c, _) in enumerate(ERF_C[1:])) + tuple(
    (n + 5) * c for n, c in enumerate(ERF_Q[:3])
)  # the derivative of erf(x)/x in z = x², leading terms
ERFC_IV = (
    (1.5, 0.5),
    (2.5, 0.5),
    (3.5, 0.5),
    (5.0, 1.0),
    (7.0, 1.0),
    (10.0, 2.0),
    (14.0, 2.0),
    (20.0, 4.0),
    (28.0, 4.0),
)
ERFC_HI = tuple(
    tuple(H(v) for v in row)
    for row in (
        (
            "0x1.494daffa2ad68p-2",
            "-0x1.4f1988444caf7p-4",
            "0x1.37ea271bc54bdp-6",
            "-0x1.0dc51d2941e6dp-8",
            "0x1.b65944f34f7adp-11",
            "-0x1.513ed7600d1b9p-13",
            "0x1.ee705e7364646p-16",
            "-0x1.5b0abfe65ac7dp-18",
            "0x1.d4509d0d420b1p-21",
            "-0x1.30c0ec73d688fp-23",
            "0x1.7f997922f3e28p-26",
            "-0x1.d41571db66a50p-29",
            "0x1.156c93921b96ep-31",
            "-0x1.4004dacf0108cp-34",
            "0x1.67cf4a920c250p-37",
            "-0x1.8ae2ed5fedd46p-40",
            "0x1.a780279472e2fp-43",
            "-0x1.baff094d89490p-46",
            "0x1.c75622311ec40p-49",
            "-0x1.f1b99191dc0e1p-52",
            "0x1.ea8b86701d446p-55",
        ),
        (
            "0x1.afbb3f3b7343bp-3",
            "-0x1.3086d7f01ac85p-5",
            "0x1.98958a7a8e4a3p-8",
            "-0x1.0632076809dfcp-10",
            "0x1.435c04e207ca1p-13",
            "-0x1.809ce8ab533c8p-16",
            "0x1.ba8a67cfbec13p-19",
            "-0x1.edd42399126c4p-22",
            "0x1.0bcba32026989p-24",
            "-0x1.1ad10dac30a44p-27",
            "0x1.234feea7f810dp-30",
            "-0x1.2514a47059069p-33",
            "0x1.205d6a72a9202p-36",
            "-0x1.15ca75c35949ap-39",
            "0x1.064688c7c4f3fp-42",
            "-0x1.e5da3c407bdc9p-46",
            "0x1.b9d02a7782f00p-49",
            "-0x1.8a1c5e15da39bp-52",
            "0x1.5a47ce6150c33p-55",
            "-0x1.3de48bf6bcfbbp-58",
            "0x1.0e0f70b3da8b9p-61",
        ),
        (
            "0x1.3e0a99a0ee914p-3",
            "-0x1.5285d2eb1ef74p-6",
            "0x1.5d581133378edp-9",
            "-0x1.5e5d7e9899181p-12",
            "0x1.5632136d8cce2p-15",
            "-0x1.460abd6b25b13p-18",
            "0x1.2f839e543f108p-21",
            "-0x1.146bc4068b7b3p-24",
            "0x1.ed2a9674282e6p-28",
            "-0x1.af5d64fe0ac8ap-31",
            "0x1.724f9379258d5p-34",
            "-0x1.384522c82ccc6p-37",
            "0x1.02dd8d76d212ap-40",
            "-0x1.a637829fee1e3p-44",
            "0x1.52f37b31fd61ap-47",
            "-0x1.0c0600ad476a6p-50",
            "0x1.a1bc974be3888p-54",
            "-0x1.40b246030f3c9p-57",
            "0x1.e6382097ab785p-61",
            "-0x1.7c8f6182d0cacp-64",
            "0x1.18ce610b7d120p-67",
        ),
        (
            "0x1.c57239e943d1ap-4",
            "-0x1.5d843497d4f3ap-6",
            "0x1.08cf82b79a11cp-8",
            "-0x1.8abc198707c93p-11",
            "0x1.219f2c3353402p-13",
            "-0x1.a2a81d24c93c5p-16",
            "0x1.2a41152e3a520p-18",
            "-0x1.a3193cf6e3789p-21",
            "0x1.228a789f7cec2p-23",
            "-0x1.8dabba3225626p-26",
            "0x1.0cc74e57d816ap-28",
            "-0x1.66f7d46572185p-31",
            "0x1.d9d9c686d31c2p-34",
            "-0x1.3539579036fcfp-36",
            "0x1.8f2bb7e15d94ap-39",
            "-0x1.fdea84f9ce59fp-42",
            "0x1.423f69ba6592bp-44",
            "-0x1.90499556cb5e1p-47",
            "0x1.f01017fb25214p-50",
            "-0x1.59ca30f4b9c1dp-52",
            "0x1.a370246ccb3dcp-55",
        ),
        (
            "0x1.46dc6bf900f68p-4",
            "-0x1.6e4b45246f91fp-7",
            "0x1.96a3de47d5b16p-10",
            "-0x1.bf5070ee19215p-13",
            "0x1.e7af6eeff686ep-16",
            "-0x1.078bfe34def6dp-18",
            "0x1.1a6f6b7a039ecp-21",
            "-0x1.2c2db9dd6a198p-24",
            "0x1.3c768d846e206p-27",
            "-0x1.4affe415ba6a3p-30",
            "0x1.57884c1061550p-33",
            "-0x1.61d8cc179c412p-36",
            "0x1.69c666619d03bp-39",
            "-0x1.6f331caaf3fb7p-42",
            "0x1.720ec8dc5d426p-45",
            "-0x1.725becc5c9301p-48",
            "0x1.701b1e936e88bp-51",
            "-0x1.6a67d8ab22acep-54",
            "0x1.637383013e07ep-57",
            "-0x1.76f8dbefaf9fbp-60",
            "0x1.6ab346d69546ap-63",
        ),
        (
            "0x1.cbe831f997124p-5",
            "-0x1.6c55c82b4b6b8p-7",
            "0x1.1f3df0de32f5ep-9",
            "-0x1.c2c9072e92bb3p-12",
            "0x1.60131845d03adp-14",
            "-0x1.11b748bb0b431p-16",
            "0x1.a7aa3a0056322p-19",
            "-0x1.4669c867c1653p-21",
            "0x1.f4bfefd9d663dp-24",
            "-0x1.7e6cb8c1f9423p-26",
            "0x1.22cd3d517369ep-28",
            "-0x1.b86123033a94cp-31",
            "0x1.4c0bc8fa34ea6p-33",
            "-0x1.f2a32a51a13fap-36",
            "0x1.74e0281eebd10p-38",
            "-0x1.15e3d891c3fddp-40",
            "0x1.9c41335abfda4p-43",
            "-0x1.2bcaecae3efa4p-45",
            "0x1.b95d5f716f243p-48",
            "-0x1.87be49ce51bfep-50",
            "0x1.1db213b6ccefdp-52",
        ),
        (
            "0x1.494bb2ce2924fp-5",
            "-0x1.76711f8b6cf4dp-8",
            "0x1.a8b73429cebccp-11",
            "-0x1.e08bef3ab51e5p-14",
            "0x1.0f30b59c108e7p-16",
            "-0x1.3156aeb8076acp-19",
            "0x1.56f43e58b043fp-22",
            "-0x1.8046e78ce975fp-25",
            "0x1.ad8cef591bbedp-28",
            "-0x1.df04ea6dccee8p-31",
            "0x1.0a769f3e03d87p-33",
            "-0x1.27c1cc0856789p-36",
            "0x1.47822928d2cc5p-39",
            "-0x1.69d4c82ebf11bp-42",
            "0x1.8ed5d7cf995a7p-45",
            "-0x1.b6ab50c402d4cp-48",
            "0x1.e156baa657af4p-51",
            "-0x1.064f6ad6367c8p-53",
            "0x1.1e8c9c3453136p-56",
            "-0x1.59c7a10679383p-59",
            "0x1.77e34c1949c45p-62",
        ),
        (
            "0x1.cd9bc89b73548p-6",
            "-0x1.705e8c0688050p-8",
            "0x1.259993494e472p-10",
            "-0x1.d36fe3dd900edp-13",
            "0x1.73a4ded43dfc9p-15",
            "-0x1.271eee8107689p-17",
            "0x1.d42321f8479c6p-20",
            "-0x1.72d795a1d1b29p-22",
            "0x1.2569bb98b3344p-24",
            "-0x1.cfbdd66f42d9ep-27",
            "0x1.6e0893fcb3952p-29",
            "-0x1.209108939b4ddp-31",
            "0x1.c6724b0331603p-34",
            "-0x1.65679358c1217p-36",
            "0x1.18c2ba18af53dp-38",
            "-0x1.b907cd611920ep-41",
            "0x1.59a297ca75014p-43",
            "-0x1.08e555bb7b1a6p-45",
            "0x1.9e45846c922f9p-48",
            "-0x1.94122ef85152ep-50",
            "0x1.3b0caee7426fdp-52",
        ),
        (
            "0x1.49ebde7878139p-6",
            "-0x1.7892d6052da5dp-9",
            "0x1.ad8ccfc089fa9p-12",
            "-0x1.e9ab4c8d1c2a0p-15",
            "0x1.16ecc51155d11p-17",
            "-0x1.3d8fbf04c9ba8p-20",
            "0x1.6952918712107p-23",
            "-0x1.9adb10afea19ep-26",
            "0x1.d2e2ed25ec2e7p-29",
            "-0x1.091cf852c3edep-31",
            "0x1.2ce43b40e394cp-34",
            "-0x1.55491358169ecp-37",
            "0x1.82dc7a40e3da3p-40",
            "-0x1.b640004cd7961p-43",
            "0x1.f0287e9e79e6dp-46",
            "-0x1.18b8ca3d82060p-48",
            "0x1.3d6c05cab2ef5p-51",
            "-0x1.64d651cab2dd9p-54",
            "0x1.92ff25d1aa2bfp-57",
            "-0x1.fbcc8d58b448bp-60",
            "0x1.1e59c0848410bp-62",
        ),
    )
)
ERFC_LO = tuple(
    tuple(H(v) for v in row)
    for row in (
        (
            "0x1.39bdf0f0d8e21p-56",
            "0x1.24aec2a5c803cp-58",
            "0x1.53ee57559d849p-62",
            "-0x1.52dfcd6e25030p-64",
            "0x1.03bc91ce36503p-66",
            "0x1.26a7ea4ba4119p-70",
        ),
        (
            "-0x1.9f40bca142466p-58",
            "-0x1.0fa4946a41becp-60",
            "0x1.a62e187530844p-65",
            "0x1.0bb934c59bda1p-65",
            "-0x1.1b55d394c64bcp-68",
            "-0x1.15ea314341250p-72",
        ),
        (
            "-0x1.902cb7976c65ep-60",
            "0x1.b046350935fe4p-60",
            "0x1.06fae6eb16757p-64",
            "0x1.1bd7847d7b3ecp-69",
            "0x1.146d5142cac2cp-69",
            "-0x1.51095e2b57c95p-75",
        ),
        (
            "-0x1.0e682190858dbp-59",
            "0x1.31ad2656433cap-60",
            "-0x1.251e02ca26022p-63",
            "0x1.011f6e5c9f2f0p-66",
            "-0x1.b7d875d19e71fp-70",
            "-0x1.c0ea203a59c37p-70",
        ),
        (
            "-0x1.9c3bae12ae446p-59",
            "-0x1.89832869327bbp-61",
            "-0x1.9c29c7cdd6249p-64",
            "0x1.f0b5e8bfbe7eap-68",
            "-0x1.ecf7585355ecfp-73",
            "0x1.f94e7dda7d3e8p-74",
        ),
        (
            "-0x1.ed815e254e295p-60",
            "-0x1.e19ef22712dfbp-62",
            "-0x1.1bf5a69f6c4a0p-63",
            "0x1.0ac696f70c529p-67",
            "0x1.fa5d453ca42c0p-70",
            "0x1.97b9cc137b02ep-73",
        ),
        (
            "0x1.5741133d175cep-59",
            "-0x1.7fe5396434cbcp-63",
            "-0x1.66e15e0ec42abp-66",
            "0x1.5a1f600f7cbb3p-69",
            "-0x1.f1e0a2a719d4ap-70",
            "-0x1.deee2ca2c90dcp-73",
        ),
        (
            "-0x1.c826601a2f019p-65",
            "0x1.7a99710300337p-62",
            "0x1.6b15b05b703b5p-64",
            "-0x1.a18fdaec0877cp-67",
            "0x1.2e9a726f70461p-73",
            "-0x1.fc8abaff15a79p-71",
        ),
        (
            "-0x1.d95a8796b0b9fp-62",
            "0x1.da40f8342f4f6p-63",
            "-0x1.7896005679744p-66",
            "0x1.f25155b50d941p-69",
            "-0x1.e7b269e8fcd26p-71",
            "-0x1.2d02516df9c09p-74",
        ),
    )
)
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
        out = round_scaled(m, h, l, ki)
    else:  # k ∈ [−149, 127]: the scaling is exact
        out = m.convert(m.mul(round_to_odd(m, h, l), pow2(m, ki)), "f32")
    out = m.select(over, m.c(INF, t), out)
    out = m.select(under, m.c(0.0, t), out)
    return m.select(nan, m.c(np.nan, t), out)


# --- the logarithm kernel: log u = e·ln 2 + log m ---------------------------------------------------


def _log_reduce(m, u):
    """For a positive finite binary64 u: (dk, sh, sl) with u = 2^dk·m, m ∈ [√2/2, √2) and
    sh + sl = (m − 1)/(m + 1) (|s| ≤ 0.1716; log m = 2·atanh(s))."""
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
    return dk, sh, sl


def _log_kernel(m, u):
    """For a positive finite binary64 u: (dk, Lh, Ll) with u = 2^dk·m, m ∈ [√2/2, √2) and
    Lh + Ll = log(m) (relative error < 2^−62)."""
    dk, sh, sl = _log_reduce(m, u)
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


def exp_reduced(m, xs):
    """e^xs for a finite binary64 xs with |xs| ≤ 746 as (k, ph, pl): e^xs = 2^k·(1 + ph + pl),
    k = roundeven(xs·INV_LN2.hi) (an integer-valued binary64, |k| ≤ 1077) and ph + pl the
    double-double e^r − 1 of the reduced argument r = xs − k·ln 2 (|r| ≤ 0.3466, relative
    error below 2^−60). expm1's kernel; also §6.4 `tanh` and §6.5 `sigmoid` (binary64)."""
    k = m.roundeven(m.mul(xs, m.c(INV_LN2[0])))
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
    return k, ph, pl


def half_expm1(m, k, ph, pl):
    """(e^xs − 1)/2 as a double-double (h, l) from ``exp_reduced``'s (k, ph, pl), for
    k ∈ [−87, 1024]: 2^j·(1 + p) − 1/2 with j = k − 1 and A = 2^j, all products exact."""
    a = pow2(m, m.sub(m.convert(k, "i64"), m.c(1, "i64")))
    ah, al = two_sum(m, a, m.c(-0.5))
    sh, se = two_sum(m, ah, m.mul(a, ph))
    return fast_two_sum(m, sh, m.add(m.add(se, al), m.mul(a, pl)))


def expm1(m, x, t: str):
    """e^x − 1."""
    X = _to_f64(m, x, t)
    nan = m.ne(X, X)
    over = m.gt(X, m.c(EXPM1_OVER))
    under = m.lt(X, m.c(EXPM1_UNDER))
    tiny = m.lt(m.abs(X), m.c(H("0x1p-54")))  # e^x − 1 = x + x²/2 + … rounds to x
    xs = m.select(m.or_(m.or_(m.or_(nan, over), under), tiny), m.c(0.0), X)
    k, ph, pl = exp_reduced(m, xs)  # |k| ≤ 1024
    # e^x − 1 = 2·(2^j·(1 + p) − 1/2), j = k − 1 ∈ [−88, 1023]: A = 2^j, all exact
    h, l = half_expm1(m, k, ph, pl)
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
        out = round_scaled(m, h, l, ea)
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


# --- atan2 --------------------------------------------------------------------------------------

LOGP_D = (1 / 5, 2 / 7, 3 / 9, 4 / 11)  # P'(z), the first four Taylor terms
ATAN_STEPS = 16  # atan2's reduction points c = j/16, j = 0 … 16
BIG_Y = H("0x1p64")  # pow: above it |y·log₂|x|| ≥ 2^11 for every x ≠ 1 (over/underflow)


def _normalise(m, v):
    """For a positive finite binary64 v: (V, e) with v = 2^e·V, V ∈ [1, 2) (e an i64)."""
    sub = m.lt(v, m.c(H("0x1p-1022")))
    b = m.bitcast(m.select(sub, m.mul(v, m.c(H("0x1p54"))), v), "u64")
    e = m.sub(m.convert(m.shr(b, 52), "i64"), m.c(1023, "i64"))
    e = m.sub(e, m.select(sub, m.c(54, "i64"), m.c(0, "i64")))
    return m.bitcast(m.or_(m.and_(b, m.c(MANT, "u64")), m.c(1023 << 52, "u64")), "f64"), e


def _sign_bit(m, v):
    """v's sign bit (−0, −inf and a NaN with the bit set count as negative)."""
    return m.ne(m.shr(m.bitcast(v, "u64"), 63), m.c(0, "u64"))


def _out_scaled(m, h, l, k, t: str):
    """(h + l)·2^k (h > 0 finite, k an i64 ≥ −1100) as the result of type t: f64 rounded once
    (into the subnormals as ``round_scaled`` does), f32 rounded to odd then to binary32 (k below
    −1000 taken as −1000: the result rounds to +0 either way)."""
    if t == "f64":
        hn, e = _normalise(m, h)
        ks = m.add(e, k)
        ks = m.select(m.lt(ks, m.c(-1086, "i64")), m.c(-1086, "i64"), ks)
        return round_scaled(m, hn, m.mul(l, pow2(m, m.neg(e))), ks)
    return m.convert(m.mul(round_to_odd(m, h, l), pow2(m, at_least(m, k, -1000))), "f32")


def at_least(m, k, lo: int):
    """max(k, lo) for an i64 k."""
    return m.select(m.lt(k, m.c(lo, "i64")), m.c(lo, "i64"), k)


def _atan_ratio(m, n, d):
    """atan(n/d) as a double-double for 0 ≤ n ≤ d, d ∈ [1, 2): c = j/16 nearest n/d,
    u = (n − c·d)/(d + c·n) (numerator and denominator exact double-doubles, |u| ≤ 1/32 +
    2^−50), atan(n/d) = atan(c) + u·P(u²), P(z) = 1 − z/3 + z²·ATAN_Q(z)."""
    cj = m.roundeven(m.mul(m.div(n, d), m.c(float(ATAN_STEPS))))
    c = m.mul(cj, m.c(1.0 / ATAN_STEPS))  # exact
    ph, pe = two_prod(m, c, d)
    sh, se = two_sum(m, n, m.neg(ph))
    nh, nl = two_sum(m, sh, m.sub(se, pe))
    qh, qe = two_prod(m, c, n)
    th, te = two_sum(m, d, qh)
    dh, dl = fast_two_sum(m, th, m.add(te, qe))
    uh, ul = dd_div(m, nh, nl, dh, dl)
    us = split(m, uh)
    zh, ze = two_prod(m, uh, uh, us)
    zl = m.add(ze, m.mul(m.add(uh, uh), ul))
    Ph, Pl = _poly_dd(m, zh, split(m, zh), ATAN_Q, ((1.0, 0.0), ATAN_THIRD))
    Pl = m.add(Pl, m.mul(zl, m.c(ATAN_THIRD[0])))  # P'(z) ≈ −1/3: the first-order term in zl
    ah, ae = two_prod(m, Ph, uh, us)
    al = m.add(ae, m.add(m.mul(uh, Pl), m.mul(ul, Ph)))
    kh, kl = m.c(ATAN_K[0][0]), m.c(ATAN_K[0][1])
    for j in range(1, ATAN_STEPS + 1):
        hit = m.eq(cj, m.c(float(j)))
        kh = m.select(hit, m.c(ATAN_K[j][0]), kh)
        kl = m.select(hit, m.c(ATAN_K[j][1]), kl)
    sh, se = two_sum(m, kh, ah)
    return fast_two_sum(m, sh, m.add(se, m.add(kl, al)))


def atan2(m, y, x, t: str):
    """The angle of the point (x, y), in [−π, π] (C99 F.9.1.4 for zeros and infinities)."""
    X, Y = _to_f64(m, x, t), _to_f64(m, y, t)
    i64, one, zero = "i64", m.c(1.0), m.c(0.0)
    nan = m.or_(m.ne(X, X), m.ne(Y, Y))
    ya, xa = m.abs(Y), m.abs(X)
    yinf, xinf = m.eq(ya, m.c(INF)), m.eq(xa, m.c(INF))
    # infinities: both → (1, 1) (π/4, 3π/4); one → (1, 0) or (0, 1) (π/2; 0 or π)
    anyinf = m.or_(yinf, xinf)
    a = m.select(nan, one, m.select(anyinf, m.select(yinf, one, zero), ya))
    b = m.select(nan, one, m.select(anyinf, m.select(xinf, one, zero), xa))
    swap = m.gt(a, b)  # |y| > |x|: π/2 ∓ atan(|x|/|y|)
    n, d = m.select(swap, b, a), m.select(swap, a, b)
    nzero = m.eq(n, zero)
    D, ed = _normalise(m, m.select(m.eq(d, zero), one, d))
    N, en = _normalise(m, m.select(nzero, one, n))
    k = m.sub(en, ed)  # ≤ 0: n/d = (N/D)·2^k
    low = m.lt(k, m.c(-80, i64))
    kc = m.select(low, m.c(-80, i64), k)  # below 2^−80, atan(q) = q to 2^−160
    N = m.select(nzero, zero, m.mul(N, pow2(m, kc)))  # exact
    th, tl = _atan_ratio(m, N, D)  # θ = atan(min/max) ∈ [0, π/4]
    # φ = B ± θ: (x ≥ +0, no swap) θ; (swap) π/2 ∓ θ; (x ≤ −0, no swap) π − θ
    negx = _sign_bit(m, X)
    base0 = m.not_(m.or_(swap, negx))
    bh = m.select(swap, m.c(PIO2[0]), m.select(negx, m.c(PI[0]), zero))
    bl = m.select(swap, m.c(PIO2[1]), m.select(negx, m.c(PI[1]), zero))
    sub_t = m.ne(swap, negx)
    th = m.select(sub_t, m.neg(th), th)
    tl = m.select(sub_t, m.neg(tl), tl)
    sh, se = two_sum(m, bh, th)
    h, l = fast_two_sum(m, sh, m.add(se, m.add(bl, tl)))
    zero_out = m.and_(base0, nzero)
    h = m.select(zero_out, one, h)
    # the result is (h + l)·2^s, s = k − kc where φ = θ (else 0)
    s = m.select(base0, m.sub(k, kc), m.c(0, i64))
    out = _out_scaled(m, h, l, s, t)  # h ≥ 2^−82; f32: s ≥ −197, the product exact
    out = m.select(zero_out, m.c(0.0, t), out)
    out = m.select(_sign_bit(m, Y), m.neg(out), out)
    return m.select(nan, m.c(np.nan, t), out)


# --- pow ----------------------------------------------------------------------------------------


def _log_long(m, sh, sl):
    """log m = 2·atanh(s) for s = sh + sl (|s| ≤ 0.1716) as a double-double, relative error
    below 2^−75: 2·(s + s·w), w = z·P(z), z = s², P(z) = Σ z^k/(2k + 3) with its first four
    coefficients double-doubles (pow's logarithm: log2's kernel is 2^−62)."""
    ss = split(m, sh)
    zh, ze = two_prod(m, sh, sh, ss)
    zl = m.add(ze, m.mul(m.add(sh, sh), sl))
    zs = split(m, zh)
    Ph, Pl = _poly_dd(m, zh, zs, LOGP_Q, LOGP_C)
    Pl = m.add(Pl, m.mul(zl, horner(m, zh, LOGP_D)))  # zl·P'(zh), to 2^−15 relative
    wh, we = two_prod(m, Ph, zh, zs)
    wh, wl = fast_two_sum(m, wh, m.add(we, m.add(m.mul(zh, Pl), m.mul(zl, Ph))))
    qh, qe = two_prod(m, wh, sh, ss)
    ql = m.add(qe, m.add(m.mul(sh, wl), m.mul(sl, wh)))
    Lh, Le = fast_two_sum(m, sh, qh)
    Lh, Ll = fast_two_sum(m, Lh, m.add(Le, m.add(sl, ql)))
    return m.add(Lh, Lh), m.add(Ll, Ll)


def _exp2_dd(m, eh, el):
    """2^E for a double-double E = eh + el (|E| ≤ 1100) as (h, l, k): 2^E = (h + l)·2^k,
    h + l = 2^r with relative error below 2^−60, k = roundeven(eh) an i64, r = E − k."""
    k = m.roundeven(eh)
    rh, rl = fast_two_sum(m, m.sub(eh, k), el)  # E − k, |r| ≤ 1/2 + 2^−42
    rs = split(m, rh)
    h, l = horner(m, rh, EXP2_Q), m.c(0.0)
    for C in (EXP2_C3, EXP2_C2, EXP2_C1, (1.0, 0.0)):
        h, l = dd_horner_step(m, C, rh, rs, h, l)
    h, l = fast_two_sum(m, h, m.add(l, m.mul(h, m.mul(rl, m.c(EXP2_C1[0])))))  # ·2^rl
    return h, l, m.convert(k, "i64")


def power(m, x, y, t: str):
    """x^y (C99 F.9.4.4 for zeros, infinities, NaNs and negative x)."""
    X, Y = _to_f64(m, x, t), _to_f64(m, y, t)
    one, zero = m.c(1.0), m.c(0.0)
    ax, ay = m.abs(X), m.abs(Y)
    xnan, ynan = m.ne(X, X), m.ne(Y, Y)
    xinf, yinf = m.eq(ax, m.c(INF)), m.eq(ay, m.c(INF))
    xzero, yzero = m.eq(ax, zero), m.eq(Y, zero)
    yfin = m.lt(ay, m.c(INF))  # false for NaN
    yf = m.select(yfin, Y, zero)
    yint = m.and_(yfin, m.eq(m.roundeven(yf), yf))
    half = m.mul(yf, m.c(0.5))  # exact (a subnormal y is no integer)
    yodd = m.and_(yint, m.ne(m.roundeven(half), half))
    # |x|^y = 2^(y·log₂|x|) for finite nonzero x and finite nonzero y
    bad = m.or_(m.or_(m.or_(xnan, ynan), m.or_(xinf, yinf)), m.or_(xzero, yzero))
    a = m.select(bad, one, ax)
    yc = m.select(m.gt(Y, m.c(BIG_Y)), m.c(BIG_Y), m.select(m.lt(Y, m.c(-BIG_Y)), m.c(-BIG_Y), Y))
    yc = m.select(bad, zero, yc)
    dk, sh, sl = _log_reduce(m, a)
    Lh, Ll = _log_long(m, sh, sl)
    ph, pl = dd_mul_dd_const(m, Lh, Ll, INV_LN2)
    gh, ge = two_sum(m, dk, ph)
    gh, gl = fast_two_sum(m, gh, m.add(ge, pl))  # log₂ a
    eh, ee = two_prod(m, gh, yc)  # |yc| ≤ 2^64, |g| ≤ 1075: no overflow
    eh, el = fast_two_sum(m, eh, m.add(ee, m.mul(gl, yc)))  # E = y·log₂ a
    over_at, under_at = (128.0, -152.0) if t == "f32" else (1024.0, -1077.0)
    over, under = m.gt(eh, m.c(over_at)), m.lt(eh, m.c(under_at))
    out_of_range = m.or_(over, under)
    eh, el = m.select(out_of_range, zero, eh), m.select(out_of_range, zero, el)
    h, l, ki = _exp2_dd(m, eh, el)
    if t == "f64":
        out = round_scaled(m, h, l, ki)
    else:
        # an exact x^y of at most 25 bits (a binary32 number or midpoint): h + l rounded to
        # binary64 is it, and rounds to binary32 as it should; otherwise round to odd
        v = m.add(h, l)
        short = m.eq(m.and_(m.bitcast(v, "u64"), m.c((1 << 28) - 1, "u64")), m.c(0, "u64"))
        near = m.le(m.abs(m.add(m.sub(h, v), l)), m.mul(v, m.c(H("0x1p-58"))))
        w = m.select(m.and_(short, near), v, round_to_odd(m, h, l))
        out = m.convert(m.mul(w, pow2(m, ki)), "f32")  # k ∈ [−152, 128]: exact
    inf_t, zero_t = m.c(INF, t), m.c(0.0, t)
    out = m.select(over, inf_t, m.select(under, zero_t, out))
    ypos = m.gt(Y, zero)
    out = m.select(xzero, m.select(ypos, zero_t, inf_t), out)
    out = m.select(xinf, m.select(ypos, inf_t, zero_t), out)
    # y = ±inf: 0 where |x| < 1 and y = +inf or |x| > 1 and y = −inf, else inf; |x| = 1: 1
    out = m.select(yinf, m.select(m.ne(m.lt(ax, one), m.lt(Y, zero)), zero_t, inf_t), out)
    out = m.select(m.and_(yinf, m.eq(ax, one)), m.c(1.0, t), out)
    out = m.select(m.and_(_sign_bit(m, X), yodd), m.neg(out), out)  # (−|x|)^odd
    neg_base = m.and_(m.lt(X, zero), m.gt(X, m.c(-INF)))
    nan = m.or_(m.or_(xnan, ynan), m.and_(neg_base, m.and_(yfin, m.not_(yint))))
    out = m.select(nan, m.c(np.nan, t), out)
    return m.select(m.or_(yzero, m.eq(X, one)), m.c(1.0, t), out)  # even for a NaN


# --- erf, erfc ----------------------------------------------------------------------------------

ERF_SMALL = 1.0  # below it erf(x) = x·P(x²); from it erfc(x) = e^(−x²)·erfcx(x)
ERFC_ZERO = 27.3  # from it erfc(x) rounds to +0 and erf(x) to ±1 (both formats)
ERF_TINY = H("0x1p-960")  # below it erf's product is formed from x·2^64


def _erf_small(m, a):
    """erf(a) for 0 ≤ a < 1 as (h, l, s): erf(a) = (h + l)·2^s (s = −64 below ERF_TINY, else
    0); erf(a)/a = P(z), z = a² = zh + zl, P's first five coefficients double-doubles."""
    i64 = "i64"
    tiny = m.lt(a, m.c(ERF_TINY))
    asc = m.select(tiny, m.mul(a, m.c(H("0x1p64"))), a)  # exact
    zh, zl = two_prod(m, a, a)
    Ph, Pl = _poly_dd(m, zh, split(m, zh), ERF_Q, ERF_C)
    Pl = m.add(Pl, m.mul(zl, horner(m, zh, ERF_D)))  # zl·P'(zh), to 2^−10 relative
    Ph, Pl = fast_two_sum(m, Ph, Pl)
    ph, pe = two_prod(m, Ph, asc)
    h, l = fast_two_sum(m, ph, m.add(pe, m.mul(Pl, asc)))
    return h, l, m.select(tiny, m.c(-64, i64), m.c(0, i64))


def _erfc_big(m, a):
    """erfc(a) for 1 ≤ a < 32 as (h, l, k): erfc(a) = (h + l)·2^k = e^(−a²)·erfcx(a);
    e^(−a²) = 2^E, E = −a²/ln 2 (a double-double), erfcx on ERFC_IV's interval holding a as a
    degree-20 polynomial in u = (a − c)/w (exact), its first six coefficients double-doubles
    (every coefficient chosen by selects over constants)."""
    hits = [m.ge(a, m.c(c - w)) for c, w in ERFC_IV[1:]]

    def pick(row_of):
        v = m.c(row_of(0))
        for i, hit in enumerate(hits, 1):
            v = m.select(hit, m.c(row_of(i)), v)
        return v

    c = pick(lambda i: ERFC_IV[i][0])
    inv_w = pick(lambda i: 1.0 / ERFC_IV[i][1])
    u = m.mul(m.sub(a, c), inv_w)  # exact: Sterbenz, then a power of two
    us = split(m, u)
    deg, ndd = len(ERFC_HI[0]) - 1, len(ERFC_LO[0])
    h = pick(lambda i: ERFC_HI[i][deg])
    for j in range(deg - 1, ndd - 1, -1):
        h = m.add(pick(lambda i: ERFC_HI[i][j]), m.mul(u, h))  # noqa: B023
    l = m.c(0.0)
    for j in range(ndd - 1, -1, -1):  # C_j + u·(h + l) with C_j a chosen double-double
        ch, cl = pick(lambda i: ERFC_HI[i][j]), pick(lambda i: ERFC_LO[i][j])  # noqa: B023
        ph, pe = two_prod(m, h, u, us)
        sh, se = two_sum(m, ch, ph)
        h, l = fast_two_sum(m, sh, m.add(se, m.add(cl, m.add(pe, m.mul(l, u)))))
    zh, zl = two_prod(m, a, a)
    eh, el = dd_mul_dd_const(m, zh, zl, INV_LN2)
    gh, gl, k = _exp2_dd(m, m.neg(eh), m.neg(el))
    ph, pe = two_prod(m, gh, h)
    rh, rl = fast_two_sum(m, ph, m.add(pe, m.add(m.mul(gh, l), m.mul(gl, h))))
    return rh, rl, k


def _erf_common(m, x, t: str):
    X = _to_f64(m, x, t)
    nan = m.ne(X, X)
    a = m.abs(X)
    small = m.lt(a, m.c(ERF_SMALL))
    zero = m.ge(a, m.c(ERFC_ZERO))  # also ±inf: erfc rounds to +0 (x > 0), 2 (x < 0)
    a_small = m.select(small, a, m.c(0.5))
    a_big = m.select(m.or_(m.or_(small, zero), nan), m.c(1.5), a)
    return X, nan, small, zero, _erf_small(m, a_small), _erfc_big(m, a_big)


def _one_minus(m, h, l, k, minus=None):
    """1 − (h + l)·2^k as a double-double, or 1 ± it with ``minus`` a bool (the result lies in
    [0.15, 2])."""
    p = pow2(m, at_least(m, k, -1000))  # below 2^−1000 the term is negligible either way
    qh, ql = m.mul(h, p), m.mul(l, p)
    if minus is None:
        qh, ql = m.neg(qh), m.neg(ql)
    else:
        qh, ql = m.select(minus, m.neg(qh), qh), m.select(minus, m.neg(ql), ql)
    sh, se = two_sum(m, m.c(1.0), qh)
    return fast_two_sum(m, sh, m.add(se, ql))


def erf(m, x, t: str):
    """The error function 2/√π·∫₀ˣ e^(−s²) ds (odd; erf(±inf) = ±1)."""
    X, nan, small, zero, (h1, l1, s1), (h2, l2, k2) = _erf_common(m, x, t)
    zero_in = m.eq(X, m.c(0.0))
    h1 = m.select(zero_in, m.c(1.0), h1)
    out_small = _out_scaled(m, h1, l1, s1, t)
    bh, bl = _one_minus(m, h2, l2, k2)  # 1 − erfc(|x|)
    out = m.select(small, out_small, _result(m, bh, bl, t))
    out = m.select(zero, m.c(1.0, t), out)
    out = m.select(zero_in, m.c(0.0, t), out)
    out = m.select(_sign_bit(m, X), m.neg(out), out)
    return m.select(nan, m.c(np.nan, t), out)


def erfc(m, x, t: str):
    """The complementary error function 1 − erf(x), without its cancellation
    (erfc(−inf) = 2, erfc(+inf) = +0)."""
    X, nan, small, zero, (h1, l1, s1), (h2, l2, k2) = _erf_common(m, x, t)
    neg = _sign_bit(m, X)
    # |x| < 1: 1 ∓ erf(|x|);  x ≥ 1: erfc(x);  x ≤ −1: 2 − erfc(|x|) = 1 + (1 − erfc(|x|))
    sh, sl = _one_minus(m, h1, l1, s1, m.not_(neg))
    out_small = _result(m, sh, sl, t)
    out_pos = _out_scaled(m, h2, l2, k2, t)
    bh, bl = _one_minus(m, h2, l2, k2)
    th, te = two_sum(m, m.c(1.0), bh)
    th, tl = fast_two_sum(m, th, m.add(te, bl))
    out = m.select(neg, _result(m, th, tl, t), out_pos)
    out = m.select(small, out_small, out)
    out = m.select(zero, m.select(neg, m.c(2.0, t), m.c(0.0, t)), out)
    return m.select(nan, m.c(np.nan, t), out)


UNARY = {
    "exp2": exp2,
    "log2": log2,
    "expm1": expm1,
    "log1p": log1p,
    "sin": sin,
    "cos": cos,
    "tan": tan,
    "erf": erf,
    "erfc": erfc,
}
BINARY = {"hypot": hypot, "atan2": atan2, "pow": power}


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
