"""Literals: every integer and float literal, of any length or size, gets its exact value
(one rounding, ties to even) or a diagnostic — checked against an independent reference
over the edges of every type and over generated literals."""

from __future__ import annotations

import math
import struct
import sys
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.ir.types import Prim
from kera_core.sema.literals import int_range

INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")


def consts(src: str) -> tuple[list[int], set[str]]:
    a = analyze(src)
    errors = {d.code for d in a.diagnostics if d.is_error}
    for d in a.diagnostics:
        assert 0 <= d.span.start <= d.span.end <= len(src.encode()), d
    if a.module is None or errors:
        return [], errors
    values = [dict(n.attrs)["value"] for n in a.module.graph.nodes.values() if n.op == "const"]
    return values, errors


def spellings(v: int) -> list[str]:
    """`v` (non-negative) in every base, with underscores and leading zeros."""
    dec = str(v)
    return [dec, f"0x{v:x}", f"0o{v:o}", f"0b{v:b}", f"000{dec}", f"0x{v:_X}", f"{v:_}"]


@pytest.mark.parametrize("t", INTS)
def test_integer_edges_of_every_type(t: str) -> None:
    lo, hi = int_range(Prim(t))
    for v in (0, 1, hi, hi + 1, 1 << 64, 1 << 65):
        for text in spellings(v):
            for src in (f"pub fn f() -> {t} {{ {text}{t} }}", f"pub fn f() -> {t} {{ {text} }}"):
                values, errors = consts(src)
                if v <= hi:
                    assert not errors and values == [v], (src, errors)
                else:
                    assert errors == {"K0307"}, src
    for v in (lo, lo - 1, -(1 << 64) - 1):  # a `-` directly on a literal is checked negated
        values, errors = consts(f"pub fn f() -> {t} {{ -{-v} }}")
        if v >= lo:
            assert not errors and values == [v], (t, v, values, errors)
        else:
            assert errors == {"K0307"}


def test_integers_of_any_length_get_an_answer() -> None:
    for n in (19, 20, 21, 100, 4_301, 200_000):
        _, errors = consts(f"pub fn f() -> i64 {{ {'9' * n} }}")
        assert errors == ({"K0307"} if n > 18 else set())
        _, errors = consts(f"pub fn f() -> u64 {{ 0x{'f' * n} }}")
        assert errors == ({"K0307"} if n > 16 else set())
        values, errors = consts(f"pub fn f() -> i64 {{ {'0' * n}7 }}")  # leading zeros
        assert not errors and values == [7]


# --- floats: an independent reference --------------------------------------------------------

FORMATS = {"f32": (8, 23), "f64": (11, 52)}


def reference_bits(x: Fraction, t: str) -> int:
    """Round an exact rational to binary32/64, ties to even, by scaling (not by search)."""
    ebits, mbits = FORMATS[t]
    bias = (1 << (ebits - 1)) - 1
    sign = 1 << (ebits + mbits) if x < 0 else 0
    x = abs(x)
    if x == 0:
        return sign
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    e = max(e, 1 - bias)  # subnormals share the smallest exponent
    n = round(x / Fraction(2) ** (e - mbits))  # round half to even
    if n == 1 << (mbits + 1):
        n >>= 1
        e += 1
    if e > bias:
        return sign | (((1 << ebits) - 1) << mbits)  # infinity
    if n < 1 << mbits:
        return sign | n  # subnormal (or zero)
    return sign | ((e + bias) << mbits) | (n - (1 << mbits))


def exact(text: str) -> Fraction:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return Fraction(text.replace("_", ""))
    finally:
        sys.set_int_max_str_digits(old)


def is_inf(bits: int, t: str) -> bool:
    ebits, mbits = FORMATS[t]
    return bits & ((1 << (ebits + mbits)) - 1) == ((1 << ebits) - 1) << mbits


def check_float(text: str, t: str) -> None:
    for negate in (False, True):
        src = f"pub fn f() -> {t} {{ {'-' if negate else ''}{text}{t} }}"
        values, errors = consts(src)
        want = reference_bits(-exact(text) if negate else exact(text), t)
        if is_inf(want, t):
            assert errors == {"K0307"}, src[:200]
            continue
        if negate and want == 0:
            want = 1 << (sum(FORMATS[t]))  # `-0.0` is negative zero
        assert not errors and values == [want], (src[:200], values, hex(want))


F32_MAX = (2 - Fraction(1, 2**23)) * Fraction(2) ** 127
F32_HALF_ULP = Fraction(2) ** 103  # half an ulp at the top binade: the overflow threshold


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_edges(t: str) -> None:
    edges = ["0.0", "1.0", "0.1", "1e-45", "7e-46", "1.4e-45", "1e-50", "2.2250738585072014e-308"]
    edges += ["4.9e-324", "2.4e-324", "2.5e-324", "1e-400", "3.4028235e38", "3.4028236e38"]
    edges += ["1.7976931348623157e308", "1.7976931348623159e308", "1e309", "1e39", "16777217.0"]
    edges += ["9007199254740993.0", "0.30000000000000004", "1" + "0" * 400 + ".0"]
    edges += [str(F32_MAX + F32_HALF_ULP) + ".0", str(F32_MAX + F32_HALF_ULP - 1) + ".0"]
    for e in edges:
        check_float(e, t)


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_floats_of_any_length(t: str) -> None:
    # long mantissas: the tail decides a tie; the answer is exact however long the text
    half = "0.50000000000000002775557561562891351059079170227050781250"  # f64 tie point
    for n in (1_000, 5_000, 60_000):
        check_float(half + "0" * n, t)
        check_float(half + "0" * n + "1", t)
        check_float("1." + "3" * n, t)
        check_float("0." + "0" * n + "1", t)
    for text in ("1e" + "9" * 3_000, "1e-" + "9" * 3_000, "0e" + "9" * 3_000, "1e9999999"):
        values, errors = consts(f"pub fn f() -> {t} {{ {text}{t} }}")
        if text.startswith("1e9"):
            assert errors == {"K0307"}
        else:
            assert not errors and values == [0]


digits = st.text("0123456789", min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(digits, digits, st.integers(-360, 360), st.sampled_from(["f32", "f64"]))
def test_generated_decimals_round_once(whole: str, frac: str, exp: int, t: str) -> None:
    check_float(f"{whole}.{frac}e{exp}", t)


@settings(max_examples=200, deadline=None)
@given(st.text("0123456789abcdefxobeE._+-iuf", min_size=1, max_size=30))
def test_any_number_token_gets_a_value_or_a_diagnostic(text: str) -> None:
    src = f"pub fn f() -> f64 {{ let x = {text}; 0.0 }}"
    a = analyze(src)
    assert not any(d.code == "K0901" for d in a.diagnostics)
    for d in a.diagnostics:
        assert 0 <= d.span.start <= d.span.end <= len(src.encode())


def test_negative_zero_literals() -> None:
    assert consts("pub fn f() -> f32 { -0.0f32 }")[0] == [0x80000000]
    assert consts("pub fn f() -> f64 { -0.0 }")[0] == [1 << 63]
    assert consts("pub fn f() -> f64 { 0.0 }")[0] == [0]
    assert math.copysign(1, struct.unpack("<d", struct.pack("<Q", 1 << 63))[0]) < 0
