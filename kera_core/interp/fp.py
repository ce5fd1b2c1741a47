"""IEEE-754 building blocks of the reference semantics (docs/semantics.md §2-§4).

Everything here works elementwise on numpy arrays or numpy scalars and only uses
numpy operations whose result is the correctly rounded IEEE result for each
element (add, sub, mul, div, sqrt, comparisons, exact conversions, bit moves).
Operations numpy does not get right everywhere (the sign of zero in
minimum/maximum, saturating float->int casts, 64-bit int->float rounding, fma)
are spelled out here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class FloatFormat:
    """One IEEE-754 binary format and the integer types that share its width."""

    name: str
    dtype: type
    udtype: type
    idtype: type
    mant: int  # stored significand bits
    bias: int
    nan_bits: int  # the canonical NaN

    @property
    def bits(self) -> int:
        return 1 + (self.bias + 1).bit_length() + self.mant

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def emax(self) -> int:
        return self.bias

    @property
    def precision(self) -> int:
        return self.mant + 1

    @property
    def nan(self):
        return np.array(self.nan_bits, dtype=self.udtype).view(self.dtype)[()]

    def const(self, bits: int):
        """The float whose bit pattern is ``bits`` (how every constant is written down)."""
        return np.array(bits, dtype=self.udtype).view(self.dtype)[()]


F32 = FloatFormat("f32", np.float32, np.uint32, np.int32, 23, 127, 0x7FC00000)
F64 = FloatFormat("f64", np.float64, np.uint64, np.int64, 52, 1023, 0x7FF8000000000000)
FORMATS = {"f32": F32, "f64": F64}


def quiet(fn):
    """Run ``fn`` with numpy's floating-point warnings off: overflow, NaN are intended here."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapper


def fmt_of(x) -> FloatFormat:
    dt = np.asarray(x).dtype
    if dt == np.float32:
        return F32
    if dt == np.float64:
        return F64
    raise TypeError(f"not a Kera float type: {dt}")


def bits_of(x, f: FloatFormat):
    return np.asarray(x, dtype=f.dtype).view(f.udtype)


def from_bits(b, f: FloatFormat):
    return np.asarray(b, dtype=f.udtype).view(f.dtype)


_NAN_OF = {np.float32: F32.nan, np.float64: F64.nan}


def nan_of(scalar_type):
    """The canonical NaN of a numpy float scalar type."""
    return _NAN_OF[scalar_type]


def canon(x):
    """Replace every NaN by the canonical NaN (positive, quiet, zero payload)."""
    if isinstance(x, np.ndarray):
        if x.dtype.kind != "f":
            return x
        m = np.isnan(x)
        if m.any():
            x = x.copy() if not x.flags.writeable else x
            x[m] = fmt_of(x).nan
        return x
    if isinstance(x, np.floating) and x != x:
        return fmt_of(x).nan
    return x


def pow2(k, f: FloatFormat):
    """2**k as a float of format f, built from its bits; k must lie in [emin, emax]."""
    k = np.asarray(k)
    return ((k + f.bias).astype(f.udtype) << f.udtype(f.mant)).view(f.dtype)


SCALE_GUARD = 64  # scaleB's (§6.1) detour for k < emin: (y·2^(k+64))·2^−64


# --- minimum / maximum ------------------------------------------------------------


@quiet
def minimum(a, b):
    """IEEE 754-2019 minimum: NaN if either is NaN, -0 < +0."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return np.minimum(a, b)
    f = fmt_of(a)
    a, b = np.broadcast_arrays(a, b)
    out = np.where(a < b, a, b)
    eq = a == b
    if eq.any():
        out = np.where(eq, from_bits(bits_of(a, f) | bits_of(b, f), f), out)
    return np.where(np.isnan(a) | np.isnan(b), f.nan, out)


@quiet
def maximum(a, b):
    """IEEE 754-2019 maximum: NaN if either is NaN, -0 < +0."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f":
        return np.maximum(a, b)
    f = fmt_of(a)
    a, b = np.broadcast_arrays(a, b)
    out = np.where(a > b, a, b)
    eq = a == b
    if eq.any():
        out = np.where(eq, from_bits(bits_of(a, f) & bits_of(b, f), f), out)
    return np.where(np.isnan(a) | np.isnan(b), f.nan, out)


# --- fma ----------------------------------------------------------------------------


@quiet
def fma(a, b, c):
    """a*b+c rounded once (round-to-nearest-even), elementwise."""
    a, b, c = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(c))
    f = fmt_of(a)
    if f is F32:
        return _fma32(a, b, c)
    return _fma64(a, b, c)


def _fma32(a, b, c):
    """binary32 fma through binary64 with round-to-odd (Boldo & Melquiond).

    The product of two binary32 numbers is exact in binary64. The sum p + c is
    rounded to binary64 *to odd* (RN plus a TwoSum correction of the last bit),
    which has enough extra bits (53 >= 24 + 2) that the final rounding to binary32
    is the correctly rounded a*b+c, subnormals and overflow included.
    """
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)
    sb = s.view(np.uint64)
    need = (e != 0) & ((sb & np.uint64(1)) == 0) & np.isfinite(s)
    if need.any():
        toward_away = (e > 0) == (s > 0)
        adj = np.where(toward_away, sb + np.uint64(1), sb - np.uint64(1))
        s = np.where(need, adj.view(np.float64), s)
    return canon(np.asarray(s.astype(np.float32)))


def _fma64_scalar(a: float, b: float, c: float) -> float:
    if math.isnan(a) or math.isnan(b) or math.isnan(c):
        return math.nan
    if math.isinf(a) or math.isinf(b):
        return a * b + c
    if math.isinf(c):
        return c
    if a == 0 or b == 0:
        prod_neg = (math.copysign(1.0, a) * math.copysign(1.0, b)) < 0
        if c == 0:
            return -0.0 if prod_neg and math.copysign(1.0, c) < 0 else 0.0
        return c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return 0.0
    try:
        return float(exact)  # int/int true division: correctly rounded
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


_fma64_u = np.frompyfunc(_fma64_scalar, 3, 1)


def _fma64(a, b, c):
    out = _fma64_u(a.astype(float), b.astype(float), c.astype(float))
    return canon(np.asarray(out, dtype=np.float64))


# --- conversions -------------------------------------------------------------------

INT_DTYPES = {
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
}


def _bit_length_u64(m):
    """Number of significant bits of each uint64 (0 for 0)."""
    v = m.copy()
    n = np.zeros(m.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        t = v >> np.uint64(s)
        nz = t != 0
        v = np.where(nz, t, v)
        n += np.where(nz, s, 0)
    return n + (v != 0)


def _u64_to_float(m, f: FloatFormat):
    """Round-to-nearest-even of uint64 magnitudes to format f, by integer arithmetic."""
    m = np.asarray(m, dtype=np.uint64)
    length = _bit_length_u64(m)
    shift = np.maximum(length - f.precision, 0).astype(np.uint64)
    q = m >> shift
    has = shift > 0
    one = np.uint64(1)
    sh1 = np.where(has, shift - one, np.uint64(0))
    rem = m & ((one << shift) - one)
    half = np.where(has, one << sh1, np.uint64(0))
    up = has & ((rem > half) | ((rem == half) & ((q & one) == one)))
    q = q + up.astype(np.uint64)
    # q <= 2**precision and 2**shift are exact in f; their product is exact (no overflow)
    return q.astype(f.dtype) * pow2(shift.astype(np.int64), f)


_EXACT64 = 1 << 53  # every integer of magnitude ≤ 2^53 is a binary64


def _within_2_53(x) -> bool:
    """Is every element of the 64-bit integer array x within ±2^53 (so exact in binary64)?"""
    if x.dtype.kind == "u":
        return bool((x <= np.uint64(_EXACT64)).all())
    return bool(((x >= -_EXACT64) & (x <= _EXACT64)).all())


@quiet
def int_to_float(x, f: FloatFormat):
    """Integer (or bool) -> float, rounded to nearest even."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x.astype(f.dtype)
    if x.dtype.itemsize <= 4 or _within_2_53(x):
        # exact in binary64, then one rounding
        return x.astype(np.float64).astype(f.dtype)
    if x.dtype.kind == "u":
        return _u64_to_float(x, f)
    u = x.view(np.uint64)
    neg = x < 0
    mag = np.where(neg, (~u) + np.uint64(1), u)
    r = _u64_to_float(mag, f)
    return np.where(neg, -r, r)


@quiet
def float_to_int(x, to):
    """Float -> integer: truncate toward zero, saturate, NaN -> 0."""
    x = np.asarray(x)
    info = np.iinfo(to)
    bits = info.bits
    signed = info.min < 0
    t = np.trunc(x)
    upper = x.dtype.type(2.0 ** (bits - 1 if signed else bits))  # exact power of two
    lower = x.dtype.type(-(2.0 ** (bits - 1)) if signed else 0.0)
    nan = np.isnan(x)
    hi = t >= upper
    lo = t < lower
    ok = ~(nan | hi | lo)
    safe = np.where(ok, t, 0).astype(to)
    out = np.where(hi, to(info.max), np.where(lo, to(info.min), safe))
    return np.where(nan, to(0), out).astype(to)


@quiet
def float_to_float(x, f: FloatFormat):
    """f32 -> f64 is exact; f64 -> f32 rounds to nearest even (overflow -> inf)."""
    return canon(np.asarray(np.asarray(x).astype(f.dtype)))


# --- a check that the host does not flush subnormals ------------------------------


def check_host_fp() -> None:
    """Refuse to run on a host whose floating-point unit flushes subnormals to zero."""
    tiny = np.array([1e-45], dtype=np.float32)  # the smallest binary32 subnormal
    ok32 = float((tiny * np.float32(1.0))[0]) != 0.0 and float((tiny + tiny)[0]) != 0.0
    tiny64 = np.array([5e-324], dtype=np.float64)
    ok64 = float((tiny64 * 1.0)[0]) != 0.0
    if not (ok32 and ok64):
        raise RuntimeError(
            "this process flushes subnormal floats to zero (FTZ/DAZ is set, e.g. by a library "
            "built with -ffast-math); the Kera reference interpreter cannot run here"
        )
