"""Literal text -> typed constant bits, exactly (no double rounding)."""

from __future__ import annotations

import math
import re
import struct
from fractions import Fraction

from kera_core.ir.types import Prim

INT_SUFFIXES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOAT_SUFFIXES = ("f32", "f64")


_SUFFIXES = (*INT_SUFFIXES, *FLOAT_SUFFIXES)
_SPLIT: dict[str, tuple[str, str | None]] = {}
_SPLIT_MAX = 65_536


def split_suffix(text: str) -> tuple[str, str | None]:
    """`1_000u32` -> ("1_000", "u32"); hex digits are never mistaken for a suffix.

    Memoised by text (asked several times per literal, and the same literals recur)."""
    hit = _SPLIT.get(text)
    if hit is None:
        if len(_SPLIT) >= _SPLIT_MAX:
            _SPLIT.clear()
        hit = _SPLIT[text] = _split_suffix(text)
    return hit


def _split_suffix(text: str) -> tuple[str, str | None]:
    for suf in _SUFFIXES:
        if text.endswith(suf) and len(text) > len(suf):
            body = text[: -len(suf)]
            if suf.startswith("f") and body.lower().startswith("0x"):
                continue  # 0x1f32 is a hex number, not 0x1 with a suffix
            return body, suf
    return text, None


class LiteralTooLarge(ValueError):
    """The literal's magnitude is beyond every type it could have (found without
    converting it, so a literal of any length is rejected in time linear in its length)."""


_BASES = {"0x": 16, "0o": 8, "0b": 2}
# Significant digits of 2**64 - 1 per base: more can never fit in a 64-bit type.
_MAX_INT_DIGITS = {16: 16, 10: 20, 8: 22, 2: 64}


def int_digits(body: str) -> tuple[int, str]:
    """(base, significant digits) of an integer literal body: `0x00_ff` -> (16, "ff")."""
    b = body.replace("_", "").lower()
    base = _BASES.get(b[:2], 10)
    digits = b[2:] if base != 10 else b
    return base, digits.lstrip("0")


def int_value(body: str) -> int:
    """The value of an integer literal; LiteralTooLarge past 64 bits (without computing it)."""
    base, digits = int_digits(body)
    if len(digits) > _MAX_INT_DIGITS[base]:
        raise LiteralTooLarge(body)
    return int(digits, base) if digits else 0


def int_range(p: Prim) -> tuple[int, int]:
    if p.is_signed:
        return -(1 << (p.bits - 1)), (1 << (p.bits - 1)) - 1
    return 0, (1 << p.bits) - 1


_F32_OVERFLOW = Fraction(2**128 - 2**103)


def f32_bits_of(x: Fraction | float) -> int:
    """Round an exact rational to the nearest binary32, ties to even; return its bits."""
    if isinstance(x, float):
        if math.isnan(x):
            return 0x7FC00000
        if math.isinf(x):
            return 0x7F800000 if x > 0 else 0xFF800000
        if x == 0:
            return 0x80000000 if math.copysign(1.0, x) < 0 else 0
        x = Fraction(x)
    sign = 0
    if x < 0:
        sign = 0x80000000
        x = -x
    if x == 0:
        return sign
    if x >= _F32_OVERFLOW:  # max + half an ulp or more: rounds to infinity (ties to even)
        return sign | 0x7F800000
    # candidate from double rounding, then fix by comparing exact neighbours
    approx = float(x)
    try:
        bits = struct.unpack("<I", struct.pack("<f", approx))[0]
    except OverflowError:  # past the largest float32: infinity is the candidate
        bits = 0x7F800000
    best = None
    for cand in (bits - 1, bits, bits + 1):
        if cand < 0 or cand > 0x7F800000:
            continue
        val = _f32_exact(cand)
        if val is None:
            continue
        err = abs(val - x)
        key = (err, cand & 1)  # ties: even mantissa wins
        if best is None or key < best[0]:
            best = (key, cand)
    assert best is not None
    return sign | best[1]


def _f32_exact(bits: int) -> Fraction | None:
    if bits >= 0x7F800000:
        # infinity: treat as 2^128 for nearest-rounding purposes (overflow threshold)
        return Fraction(2**128) if bits == 0x7F800000 else None
    f = struct.unpack("<f", struct.pack("<I", bits))[0]
    return Fraction(f)


def f64_bits_of(x: Fraction | float) -> int:
    """binary64 bits of an exact rational or a float (Python's float() rounds correctly)."""
    try:
        v = float(x)
    except OverflowError:
        v = math.inf if x > 0 else -math.inf
    return struct.unpack("<Q", struct.pack("<d", v))[0]


_DECIMAL = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?)([0-9]+))?")
# A decimal value needs at most 767 significant digits to decide its binary64 (or binary32)
# rounding; digits past these only matter as "something non-zero follows" (a sticky digit).
_KEPT_DIGITS = 800
# Decimal orders of magnitude past which every value is infinite / rounds to zero in f64.
_MAX_ORDER = 310
_MIN_ORDER = -330


def decimal_value(text: str) -> Fraction | float:
    """The exact value of a decimal literal, or +-inf / +-0.0 when its magnitude is
    beyond every float type, in time linear in the text's length however long it is."""
    m = _DECIMAL.fullmatch(text.replace("_", ""))
    if m is None:
        raise ValueError(text)
    sign, whole, frac, exp_sign, exp = m.groups()
    frac = frac or ""
    negative = sign == "-"
    digits = (whole + frac).lstrip("0")
    if not digits:
        return -0.0 if negative else 0.0
    exp_digits = (exp or "0").lstrip("0") or "0"
    big_exp = len(exp_digits) > 7
    e10 = 0 if big_exp else int(exp_digits) * (-1 if exp_sign == "-" else 1)
    e10 -= len(frac)
    significant = digits.rstrip("0")
    e10 += len(digits) - len(significant)
    order = len(significant) + e10  # the value is below 10**order, at least 10**(order-1)
    if big_exp:
        order = _MAX_ORDER + 1 if exp_sign != "-" else _MIN_ORDER - 1
    if order > _MAX_ORDER:
        return -math.inf if negative else math.inf
    if order < _MIN_ORDER:
        return -0.0 if negative else 0.0
    if len(significant) > _KEPT_DIGITS:
        e10 += len(significant) - _KEPT_DIGITS - 1
        significant = significant[:_KEPT_DIGITS] + "1"  # the dropped tail is non-zero
    n = int(significant)
    value = Fraction(n * 10**e10) if e10 >= 0 else Fraction(n, 10**-e10)
    return -value if negative else value


_BITS_PER_DIGIT = {16: 4, 8: 3, 2: 1}


_FLOAT_BITS: dict[tuple[str, str, bool], int] = {}  # (body, type name, negate) -> bits
_FLOAT_BITS_MAX = 16384


def float_bits(body: str, p: Prim, negate: bool = False) -> int:
    """Bits of a number literal's body — decimal, or a `0x`/`0o`/`0b` integer — rounded
    once to ``p`` (ties to even), negated first with ``negate``.

    Memoised (a pure function of its arguments; exact rounding through fractions costs
    tens of microseconds, and the same literals recur on every line and every edit)."""
    key = (body, p.name, negate)
    bits = _FLOAT_BITS.get(key)
    if bits is None:
        bits = _float_bits(body, p, negate)
        if len(_FLOAT_BITS) >= _FLOAT_BITS_MAX:
            _FLOAT_BITS.clear()
        _FLOAT_BITS[key] = bits
    return bits


def _float_bits(body: str, p: Prim, negate: bool) -> int:
    base, digits = int_digits(body)
    exact: Fraction | float
    if base == 10:
        exact = decimal_value(body)
    elif len(digits) * _BITS_PER_DIGIT[base] > 1100:  # beyond every float type
        exact = math.inf
    else:
        exact = Fraction(int(digits or "0", base))
    if negate:
        exact = -exact
    return f32_bits_of(exact) if p.name == "f32" else f64_bits_of(exact)


def is_infinite(bits: int, p: Prim) -> bool:
    if p.name == "f32":
        return bits & 0x7FFFFFFF == 0x7F800000
    return bits & 0x7FFFFFFFFFFFFFFF == 0x7FF0000000000000


def float_from_bits(bits: int, p: Prim) -> float:
    if p.name == "f32":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def wrap(v: int, p: Prim) -> int:
    """Two's-complement wrap of an integer to ``p`` (the stored constant form)."""
    mask = (1 << p.bits) - 1
    v &= mask
    if p.is_signed and v >> (p.bits - 1):
        v -= 1 << p.bits
    return v


_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "\\": "\\", '"': '"', "'": "'"}
_ESCAPE_RE = re.compile(r"\\(u\{([0-9A-Fa-f]{1,6})\}|.)", re.S)


def unescape(body: str) -> str:
    """The characters a string literal's body denotes (language.md §2.8); the lexer has
    already rejected unknown escapes, so anything else is kept as written."""

    def sub(m: re.Match) -> str:
        if m.group(2) is not None:
            try:
                return chr(int(m.group(2), 16))
            except (ValueError, OverflowError):
                return m.group(0)
        return _ESCAPES.get(m.group(1), m.group(0))

    return _ESCAPE_RE.sub(sub, body)
