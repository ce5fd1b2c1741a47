"""Literal text -> typed constant bits, exactly (no double rounding)."""

from __future__ import annotations

import math
import re
import struct
from fractions import Fraction

from kera_core.ir.types import Prim

INT_SUFFIXES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOAT_SUFFIXES = ("f32", "f64")


def split_suffix(text: str) -> tuple[str, str | None]:
    """`1_000u32` -> ("1_000", "u32"); hex digits are never mistaken for a suffix."""
    for suf in (*INT_SUFFIXES, *FLOAT_SUFFIXES):
        if text.endswith(suf) and len(text) > len(suf):
            body = text[: -len(suf)]
            if suf.startswith("f") and body.lower().startswith("0x"):
                continue  # 0x1f32 is a hex number, not 0x1 with a suffix
            return body, suf
    return text, None


def int_value(body: str) -> int:
    b = body.replace("_", "").lower()
    if b.startswith("0x"):
        return int(b[2:], 16)
    if b.startswith("0o"):
        return int(b[2:], 8)
    if b.startswith("0b"):
        return int(b[2:], 2)
    return int(b, 10)


def int_range(p: Prim) -> tuple[int, int]:
    if p.is_signed:
        return -(1 << (p.bits - 1)), (1 << (p.bits - 1)) - 1
    return 0, (1 << p.bits) - 1


def f32_bits_of(x: Fraction | float) -> int:
    """Round an exact rational to the nearest binary32, ties to even; return its bits."""
    if isinstance(x, float):
        if math.isnan(x):
            return 0x7FC00000
        if math.isinf(x):
            return 0x7F800000 if x > 0 else 0xFF800000
        x = Fraction(x)
    sign = 0
    if x < 0:
        sign = 0x80000000
        x = -x
    if x == 0:
        return sign
    # candidate from double rounding, then fix by comparing exact neighbours
    approx = float(x)
    bits = struct.unpack("<I", struct.pack("<f", approx))[0] if approx < 3.5e38 else 0x7F800000
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


def f64_bits_of(x: Fraction) -> int:
    """binary64 bits of an exact rational (Python's float() rounds correctly)."""
    try:
        v = float(x)
    except OverflowError:
        v = math.inf if x > 0 else -math.inf
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def float_bits(text_body: str, p: Prim) -> int:
    exact = Fraction(text_body.replace("_", ""))
    return f32_bits_of(exact) if p.name == "f32" else f64_bits_of(exact)


def float_from_bits(bits: int, p: Prim) -> float:
    if p.name == "f32":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def float_bits_of_int(v: int, p: Prim) -> int:
    return float_bits(str(v), p)


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
