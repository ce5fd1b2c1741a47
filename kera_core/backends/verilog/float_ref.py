"""Exact reference for the Verilog float units: IEEE 754 binary32/binary64 with Kera's rules.

Every rounded result goes through :func:`round_scaled` — the exact value ``n * 2**e`` (``n`` a
non-negative integer, plus a sticky bit for a discarded non-zero tail) rounded to nearest
even, into the subnormals and to infinity — so fma, div, sqrt, int→float and f64→f32 are
computed exactly with Python integers (the `fractions` reference of issue 21, without the
denominators: every float is an integer times a power of two). add, sub, mul, div, sqrt and
the format conversions are cross-checked against numpy by the tests.

NaN results are Kera's canonical NaN (docs/semantics.md §3); float→int saturates, NaN → 0
(§5); minimum/maximum propagate NaN and order −0 < +0 (§2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Fmt:
    name: str
    ew: int  # exponent bits
    mw: int  # stored fraction bits

    @property
    def bits(self) -> int:
        return 1 + self.ew + self.mw

    @property
    def bias(self) -> int:
        return (1 << (self.ew - 1)) - 1

    @property
    def emax_field(self) -> int:
        return (1 << self.ew) - 1

    @property
    def cnan(self) -> int:
        return (self.emax_field << self.mw) | (1 << (self.mw - 1))

    @property
    def inf(self) -> int:
        return self.emax_field << self.mw

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)


F32 = Fmt("f32", 8, 23)
F64 = Fmt("f64", 11, 52)
FMTS = {"f32": F32, "f64": F64}


def is_nan(f: Fmt, x: int) -> bool:
    return (x & ~f.sign_bit) > f.inf


def is_inf(f: Fmt, x: int) -> bool:
    return (x & ~f.sign_bit) == f.inf


def is_zero(f: Fmt, x: int) -> bool:
    return (x & ~f.sign_bit) == 0


def sign(f: Fmt, x: int) -> int:
    return x >> (f.bits - 1)


def decode(f: Fmt, x: int) -> tuple[int, int, int]:
    """A finite float as (sign, n, e) with value (-1)**sign * n * 2**e."""
    s = sign(f, x)
    ef = (x >> f.mw) & f.emax_field
    frac = x & ((1 << f.mw) - 1)
    if ef == 0:
        return s, frac, 1 - f.bias - f.mw
    return s, frac | (1 << f.mw), ef - f.bias - f.mw


def round_scaled(f: Fmt, s: int, n: int, e: int, sticky: bool = False) -> int:
    """(-1)**s * (n + tail) * 2**e rounded to nearest even; tail in (0, 1) iff sticky."""
    if n == 0:
        assert not sticky
        return s << (f.bits - 1)
    p = f.mw + 1
    nb = n.bit_length()
    # the exponent of the leading bit, then the quantum of the result (normal or subnormal)
    lead = e + nb - 1
    q = max(lead - f.mw, 1 - f.bias - f.mw)
    shift = q - e
    if shift > 0:
        kept = n >> shift
        rest = n & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and (sticky or kept & 1)):
            kept += 1
    else:
        assert not sticky, "a sticky tail needs bits below the quantum"
        kept = n << (-shift)
    if kept >> p:  # carried into the next binade
        kept >>= 1
        q += 1
    if kept >> f.mw:
        ef = q + f.mw + f.bias
        if ef >= f.emax_field:
            return (s << (f.bits - 1)) | f.inf
        return (s << (f.bits - 1)) | (ef << f.mw) | (kept & ((1 << f.mw) - 1))
    return (s << (f.bits - 1)) | kept  # subnormal (or rounded up to min normal above)


def add(f: Fmt, a: int, b: int, sub: bool = False) -> int:
    if sub:
        b ^= f.sign_bit
    if is_nan(f, a) or is_nan(f, b):
        return f.cnan
    if is_inf(f, a) or is_inf(f, b):
        if is_inf(f, a) and is_inf(f, b) and sign(f, a) != sign(f, b):
            return f.cnan
        return a if is_inf(f, a) else b
    sa, na, ea = decode(f, a)
    sb, nb, eb = decode(f, b)
    e = min(ea, eb)
    va = (na << (ea - e)) * (-1 if sa else 1)
    vb = (nb << (eb - e)) * (-1 if sb else 1)
    v = va + vb
    if v == 0:
        return (sa & sb) << (f.bits - 1) if (na == 0 and nb == 0) else 0
    return round_scaled(f, int(v < 0), abs(v), e)


def mul(f: Fmt, a: int, b: int) -> int:
    if is_nan(f, a) or is_nan(f, b):
        return f.cnan
    s = sign(f, a) ^ sign(f, b)
    if is_inf(f, a) or is_inf(f, b):
        if is_zero(f, a) or is_zero(f, b):
            return f.cnan
        return (s << (f.bits - 1)) | f.inf
    _, na, ea = decode(f, a)
    _, nb, eb = decode(f, b)
    return round_scaled(f, s, na * nb, ea + eb)


def div(f: Fmt, a: int, b: int) -> int:
    if is_nan(f, a) or is_nan(f, b):
        return f.cnan
    s = sign(f, a) ^ sign(f, b)
    if is_inf(f, a):
        return f.cnan if is_inf(f, b) else (s << (f.bits - 1)) | f.inf
    if is_inf(f, b):
        return s << (f.bits - 1)
    if is_zero(f, b):
        return f.cnan if is_zero(f, a) else (s << (f.bits - 1)) | f.inf
    if is_zero(f, a):
        return s << (f.bits - 1)
    _, na, ea = decode(f, a)
    _, nb, eb = decode(f, b)
    k = 2 * (f.mw + 3) + nb.bit_length() - na.bit_length()
    q, r = divmod(na << k, nb)
    return round_scaled(f, s, q, ea - eb - k, r != 0)


def sqrt(f: Fmt, a: int) -> int:
    if is_nan(f, a):
        return f.cnan
    if is_zero(f, a):
        return a
    if sign(f, a):
        return f.cnan
    if is_inf(f, a):
        return a
    _, n, e = decode(f, a)
    k = 2 * (f.mw + 3) + 2 - n.bit_length()
    if (e - k) & 1:
        k += 1
    x = n << k
    r = math.isqrt(x)
    return round_scaled(f, 0, r, (e - k) // 2, r * r != x)


def fma(f: Fmt, a: int, b: int, c: int) -> int:
    if is_nan(f, a) or is_nan(f, b) or is_nan(f, c):
        return f.cnan
    ps = sign(f, a) ^ sign(f, b)
    if is_inf(f, a) or is_inf(f, b):
        if is_zero(f, a) or is_zero(f, b):
            return f.cnan
        if is_inf(f, c) and sign(f, c) != ps:
            return f.cnan
        return (ps << (f.bits - 1)) | f.inf
    if is_inf(f, c):
        return c
    _, na, ea = decode(f, a)
    sc, nc, ec = decode(f, c)
    _, nb, eb = decode(f, b)
    pn, pe = na * nb, ea + eb
    if pn == 0:
        if nc == 0:
            return (ps & sc) << (f.bits - 1)
        return c
    e = min(pe, ec)
    v = (pn << (pe - e)) * (-1 if ps else 1) + (nc << (ec - e)) * (-1 if sc else 1)
    if v == 0:
        return 0
    return round_scaled(f, int(v < 0), abs(v), e)


def compare(f: Fmt, a: int, b: int) -> tuple[int, int, int, int]:
    """(eq, lt, le, unordered)."""
    if is_nan(f, a) or is_nan(f, b):
        return 0, 0, 0, 1
    va, vb = to_fraction_key(f, a), to_fraction_key(f, b)
    return int(va == vb), int(va < vb), int(va <= vb), 0


def to_fraction_key(f: Fmt, x: int):
    from fractions import Fraction

    s, n, e = decode(f, x)
    v = Fraction(n) * Fraction(2) ** e
    return -v if s else v


def _total_lt(f: Fmt, a: int, b: int) -> bool:
    """a < b for non-NaN a, b with -0 < +0."""
    sa, sb = sign(f, a), sign(f, b)
    if sa != sb:
        return bool(sa)
    ma, mb = a & ~f.sign_bit, b & ~f.sign_bit
    return ma > mb if sa else ma < mb


def minmax(f: Fmt, a: int, b: int, is_max: bool) -> int:
    if is_nan(f, a) or is_nan(f, b):
        return f.cnan
    lt = _total_lt(f, a, b)
    if is_max:
        return b if lt else a
    return a if lt else b


def int_range(iw: int, signed: bool) -> tuple[int, int]:
    return (-(1 << (iw - 1)), (1 << (iw - 1)) - 1) if signed else (0, (1 << iw) - 1)


def to_int(f: Fmt, a: int, iw: int, signed: bool) -> int:
    """float → integer bits (iw wide): truncate, saturate, NaN → 0."""
    lo, hi = int_range(iw, signed)
    if is_nan(f, a):
        v = 0
    elif is_inf(f, a):
        v = lo if sign(f, a) else hi
    else:
        s, n, e = decode(f, a)
        mag = n << e if e >= 0 else n >> (-e)
        v = max(lo, min(hi, -mag if s else mag))
    return v & ((1 << iw) - 1)


def from_int(f: Fmt, bits: int, iw: int, signed: bool) -> int:
    v = bits
    if signed and bits >> (iw - 1):
        v = bits - (1 << iw)
    return round_scaled(f, int(v < 0), abs(v), 0)


def convert(fi: Fmt, fo: Fmt, a: int) -> int:
    if is_nan(fi, a):
        return fo.cnan
    s = sign(fi, a)
    if is_inf(fi, a):
        return (s << (fo.bits - 1)) | fo.inf
    _, n, e = decode(fi, a)
    return round_scaled(fo, s, n, e)
