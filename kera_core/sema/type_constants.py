"""The constants a primitive type names: `f32::PI`, `f64::EPSILON`, `i32::MAX`
(docs/language.md §3.4).

Each is given by its **bits**, never by decimal text: a float constant is the binary32 or
binary64 value nearest the mathematical one (ties to even), so every tool and target reads
the same number (`tests/test_type_constants.py` checks each against an exact reference).
"""

from __future__ import annotations

# name -> (f32 bits, f64 bits, meaning)
FLOAT: dict[str, tuple[int, int, str]] = {
    "INFINITY": (0x7F800000, 0x7FF0000000000000, "+∞"),
    "NEG_INFINITY": (0xFF800000, 0xFFF0000000000000, "−∞"),
    "NAN": (0x7FC00000, 0x7FF8000000000000, "the canonical quiet NaN"),
    "MAX": (0x7F7FFFFF, 0x7FEFFFFFFFFFFFFF, "the largest finite value"),
    "MIN": (0xFF7FFFFF, 0xFFEFFFFFFFFFFFFF, "the most negative finite value"),
    "MIN_POSITIVE": (0x00800000, 0x0010000000000000, "the smallest positive normal value"),
    "EPSILON": (0x34000000, 0x3CB0000000000000, "the gap between 1 and the next value"),
    "PI": (0x40490FDB, 0x400921FB54442D18, "π, rounded to nearest"),
    "TAU": (0x40C90FDB, 0x401921FB54442D18, "2π, rounded to nearest"),
    "E": (0x402DF854, 0x4005BF0A8B145769, "e, rounded to nearest"),
    "LN_2": (0x3F317218, 0x3FE62E42FEFA39EF, "ln 2, rounded to nearest"),
    "LN_10": (0x40135D8E, 0x40026BB1BBB55516, "ln 10, rounded to nearest"),
    "SQRT_2": (0x3FB504F3, 0x3FF6A09E667F3BCD, "√2, rounded to nearest"),
}

INTEGER = {"MAX": "the largest value", "MIN": "the smallest value"}

BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def names_of(type_name: str) -> list[str]:
    """The constants type ``type_name`` has (empty for a type without any)."""
    if type_name in ("f32", "f64"):
        return list(FLOAT)
    if type_name in BITS:
        return list(INTEGER)
    return []


def constant_bits(type_name: str, name: str) -> int | None:
    """The bits of ``type_name::name`` (two's complement for integers), or None."""
    if type_name in ("f32", "f64"):
        got = FLOAT.get(name)
        return None if got is None else got[0 if type_name == "f32" else 1]
    n = BITS.get(type_name)
    if n is None or name not in INTEGER:
        return None
    signed = type_name.startswith("i")
    if name == "MAX":
        return (1 << (n - 1)) - 1 if signed else (1 << n) - 1
    return (1 << (n - 1)) if signed else 0  # MIN: the bits of -2^(n-1), or 0


def meaning(type_name: str, name: str) -> str | None:
    if type_name in ("f32", "f64") and name in FLOAT:
        return FLOAT[name][2]
    if type_name in BITS and name in INTEGER:
        return INTEGER[name]
    return None
