"""The determinism contract, clause by clause (docs/semantics.md §2-§4), on small programs.

Each test runs Kera source through the reference interpreter and checks bits, with the
values that break naive implementations: subnormals, ±0, NaN payloads, infinities,
integer extremes.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.interp import InterpError, fp, run_function

SRC = """
pub fn add32(a: f32, b: f32) -> f32 { a + b }
pub fn sub32(a: f32, b: f32) -> f32 { a - b }
pub fn mul32(a: f32, b: f32) -> f32 { a * b }
pub fn div32(a: f32, b: f32) -> f32 { a / b }
pub fn rem32(a: f32, b: f32) -> f32 { a % b }
pub fn neg32(a: f32) -> f32 { -a }
pub fn abs32(a: f32) -> f32 { abs(a) }
pub fn id32(a: f32) -> f32 { a }
pub fn fma32(a: f32, b: f32, c: f32) -> f32 { fma(a, b, c) }
pub fn muladd32(a: f32, b: f32, c: f32) -> f32 { a * b + c }
pub fn fma64(a: f64, b: f64, c: f64) -> f64 { fma(a, b, c) }
pub fn min32(a: f32, b: f32) -> f32 { minimum(a, b) }
pub fn max32(a: f32, b: f32) -> f32 { maximum(a, b) }
pub fn add64(a: f64, b: f64) -> f64 { a + b }
pub fn lt32(a: f32, b: f32) -> bool { a < b }
pub fn ne32(a: f32, b: f32) -> bool { a != b }
pub fn addv[N](x: &f32[N], y: &f32[N]) -> f32[N] { x + y }
pub fn i32add(a: i32, b: i32) -> i32 { a + b }
pub fn i8mul(a: i8, b: i8) -> i8 { a * b }
pub fn i32div(a: i32, b: i32) -> i32 { a / b }
pub fn i32rem(a: i32, b: i32) -> i32 { a % b }
pub fn u32div(a: u32, b: u32) -> u32 { a / b }
pub fn i32neg(a: i32) -> i32 { -a }
pub fn i32abs(a: i32) -> i32 { abs(a) }
pub fn shl32(a: i32, n: i32) -> i32 { a << n }
pub fn shr32(a: i32, n: i32) -> i32 { a >> n }
pub fn shru8(a: u8, n: u8) -> u8 { a >> n }
pub fn shlu64(a: u64, n: u64) -> u64 { a << n }
pub fn f2i(x: f32) -> i32 { x as i32 }
pub fn f2u8(x: f32) -> u8 { x as u8 }
pub fn d2i64(x: f64) -> i64 { x as i64 }
pub fn d2u64(x: f64) -> u64 { x as u64 }
pub fn i2f(x: i32) -> f32 { x as f32 }
pub fn l2f(x: i64) -> f32 { x as f32 }
pub fn ul2f(x: u64) -> f32 { x as f32 }
pub fn l2d(x: i64) -> f64 { x as f64 }
pub fn d2f(x: f64) -> f32 { x as f32 }
pub fn f2d(x: f32) -> f64 { x as f64 }
pub fn b2i(x: bool) -> i32 { x as i32 }
pub fn i2u8(x: i32) -> u8 { x as u8 }
"""

_MODULE = None


def module():
    global _MODULE
    if _MODULE is None:
        a = analyze(SRC)
        assert not a.has_errors, [str(d) for d in a.diagnostics]
        _MODULE = a.module
    return _MODULE


def call(fn: str, *args):
    m = module()
    names = m.provenance.functions[fn].param_names
    return run_function(m, fn, dict(zip(names, args, strict=True)))["result"]


def f32(bits: int) -> np.float32:
    return np.array(bits, np.uint32).view(np.float32)[()]


def f64(bits: int) -> np.float64:
    return np.array(bits, np.uint64).view(np.float64)[()]


def b32(x) -> int:
    return int(np.asarray(x, np.float32).view(np.uint32))


def b64(x) -> int:
    return int(np.asarray(x, np.float64).view(np.uint64))


CANON32 = 0x7FC00000
CANON64 = 0x7FF8000000000000
SUB_MIN = f32(0x00000001)
SUB_MAX = f32(0x007FFFFF)
NAN_PAYLOAD = f32(0x7FC12345)
NEG_NAN = f32(0xFFC00000)
SNAN = f32(0x7F800001)


# --- IEEE arithmetic --------------------------------------------------------------------


def test_subnormals_are_kept():
    assert b32(call("add32", SUB_MIN, SUB_MIN)) == 2
    assert b32(call("sub32", f32(0x00800000), SUB_MIN)) == 0x007FFFFF
    assert b32(call("mul32", SUB_MAX, np.float32(1.0))) == 0x007FFFFF
    assert b32(call("div32", f32(0x00800000), np.float32(2.0))) == 0x00400000
    assert b32(call("mul32", np.float32(1e-30), np.float32(1e-10))) != 0  # a subnormal product


def test_signed_zero():
    assert b32(call("add32", np.float32(-0.0), np.float32(-0.0))) == 0x80000000
    assert b32(call("add32", np.float32(-0.0), np.float32(0.0))) == 0
    assert b32(call("sub32", np.float32(1.0), np.float32(1.0))) == 0  # exact cancellation: +0
    assert b32(call("mul32", np.float32(-1.0), np.float32(0.0))) == 0x80000000
    assert b32(call("neg32", np.float32(0.0))) == 0x80000000
    assert b32(call("div32", np.float32(1.0), np.float32(-0.0))) == 0xFF800000


def test_catastrophic_cancellation_is_just_rounding():
    assert call("sub32", call("add32", np.float32(1e8), np.float32(1.0)), np.float32(1e8)) == 0.0
    assert call("add64", call("add64", 1e16, 1.0), -1e16) == 0.0
    assert call("add64", call("add64", 1e15, 1.0), -1e15) == 1.0


@pytest.mark.parametrize("fn", ["add32", "sub32", "mul32", "div32", "rem32"])
@pytest.mark.parametrize("nan", [NAN_PAYLOAD, NEG_NAN, SNAN])
def test_every_nan_is_canonical(fn, nan):
    assert b32(call(fn, nan, np.float32(1.0))) == CANON32
    assert b32(call(fn, np.float32(2.0), nan)) == CANON32


def test_nan_from_invalid_operations_is_canonical():
    inf = np.float32(np.inf)
    assert b32(call("sub32", inf, inf)) == CANON32
    assert b32(call("mul32", inf, np.float32(0.0))) == CANON32
    assert b32(call("div32", np.float32(0.0), np.float32(-0.0))) == CANON32
    assert b32(call("rem32", np.float32(1.0), np.float32(0.0))) == CANON32
    assert b32(call("neg32", NAN_PAYLOAD)) == CANON32
    assert b32(call("abs32", NEG_NAN)) == CANON32
    assert b32(call("id32", NEG_NAN)) == CANON32  # inputs are canonical on entry
    assert b64(call("add64", f64(0xFFF8000000000001), 1.0)) == CANON64
    out = run_function(
        module(),
        "addv",
        {"x": np.array([np.inf, 1.0], np.float32), "y": np.array([-np.inf, NEG_NAN], np.float32)},
    )["result"]
    assert out.view(np.uint32).tolist() == [CANON32, CANON32]


def test_comparisons_with_nan():
    assert call("lt32", NAN_PAYLOAD, np.float32(1.0)) is np.False_
    assert call("ne32", NAN_PAYLOAD, NAN_PAYLOAD) is np.True_
    assert call("ne32", np.float32(0.0), np.float32(-0.0)) is np.False_


def test_float_remainder_is_exact_fmod():
    assert call("rem32", np.float32(5.5), np.float32(2.0)) == 1.5
    assert b32(call("rem32", np.float32(-4.0), np.float32(2.0))) == 0x80000000
    assert call("rem32", np.float32(1.0), np.float32(np.inf)) == 1.0
    assert b32(call("rem32", np.float32(np.inf), np.float32(1.0))) == CANON32


@pytest.mark.parametrize(
    "a, b, want_min, want_max",
    [
        (0.0, -0.0, 0x80000000, 0x00000000),
        (-0.0, 0.0, 0x80000000, 0x00000000),
        (1.0, np.nan, CANON32, CANON32),
        (np.nan, 1.0, CANON32, CANON32),
        (-np.inf, 3.0, 0xFF800000, b32(3.0)),
        (2.0, 2.0, b32(2.0), b32(2.0)),
    ],
)
def test_minimum_maximum(a, b, want_min, want_max):
    assert b32(call("min32", np.float32(a), np.float32(b))) == want_min
    assert b32(call("max32", np.float32(a), np.float32(b))) == want_max


# --- fma --------------------------------------------------------------------------------


def test_fma_is_one_rounding_and_mul_add_is_two():
    x = f32(0x3F800001)  # 1 + 2^-23
    p = call("mul32", x, x)
    assert call("fma32", x, x, -p) == np.float32(2.0**-46)
    assert call("muladd32", x, x, -p) == 0.0


def _exact_fma32(a, b, c) -> int:
    fa, fb, fc = (float(v) for v in (a, b, c))
    if not all(map(math.isfinite, (fa, fb, fc))):
        with np.errstate(all="ignore"):
            r = np.float32(np.float64(fa) * np.float64(fb) + np.float64(fc))
        return CANON32 if np.isnan(r) else b32(r)
    exact = Fraction(fa) * Fraction(fb) + Fraction(fc)
    if exact == 0:
        return b32(np.float32(np.float64(fa) * np.float64(fb) + np.float64(fc)))
    from kera_core.sema.literals import f32_bits_of

    return f32_bits_of(exact)


float32s = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)
finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)


@given(st.lists(st.tuples(float32s, float32s, float32s), min_size=1, max_size=40))
def test_fma32_is_correctly_rounded(triples):
    a, b, c = (np.array(col, np.float32) for col in zip(*triples, strict=True))
    got = fp.fma(a, b, c).view(np.uint32).tolist()
    want = [_exact_fma32(*t) for t in zip(a, b, c, strict=True)]
    assert got == want


@given(finite32, finite32)
def test_fma32_hard_cases(x, y):
    """c = -RN(x*y): the result is the exact rounding error of the product."""
    a, b = np.float32(x), np.float32(y)
    with np.errstate(all="ignore"):
        c = -(a * b)
    assert b32(fp.fma(a, b, c)) == _exact_fma32(a, b, c)


@given(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False, allow_infinity=False),
)
def test_fma64_is_correctly_rounded(a, b, c):
    got = call("fma64", np.float64(a), np.float64(b), np.float64(c))
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        assert got == 0
        return
    try:
        want = float(exact)
    except OverflowError:
        want = math.inf if exact > 0 else -math.inf
    assert b64(got) == b64(want)


# --- integers ---------------------------------------------------------------------------


def test_integer_overflow_wraps():
    assert call("i32add", np.int32(2**31 - 1), np.int32(1)) == -(2**31)
    assert call("i8mul", np.int8(16), np.int8(16)) == 0
    assert call("i8mul", np.int8(-128), np.int8(-1)) == -128
    assert call("i32neg", np.int32(-(2**31))) == -(2**31)
    assert call("i32abs", np.int32(-(2**31))) == -(2**31)


def test_integer_division_truncates():
    assert call("i32div", np.int32(-7), np.int32(2)) == -3
    assert call("i32rem", np.int32(-7), np.int32(2)) == -1
    assert call("i32rem", np.int32(7), np.int32(-2)) == 1
    assert call("i32div", np.int32(-(2**31)), np.int32(-1)) == -(2**31)
    assert call("i32rem", np.int32(-(2**31)), np.int32(-1)) == 0
    assert call("u32div", np.uint32(2**32 - 1), np.uint32(2)) == 2**31 - 1


@pytest.mark.parametrize("fn", ["i32div", "i32rem"])
def test_integer_division_by_zero_is_a_checked_error(fn):
    with pytest.raises(InterpError) as e:
        call(fn, np.int32(1), np.int32(0))
    assert e.value.code == "R0002"


def test_shift_counts_are_taken_modulo_the_width():
    assert call("shl32", np.int32(1), np.int32(33)) == 2
    assert call("shl32", np.int32(1), np.int32(31)) == -(2**31)
    assert call("shl32", np.int32(1), np.int32(-1)) == -(2**31)  # -1 mod 32 = 31
    assert call("shr32", np.int32(-8), np.int32(1)) == -4  # arithmetic
    assert call("shr32", np.int32(-8), np.int32(32)) == -8
    assert call("shru8", np.uint8(0x80), np.uint8(7)) == 1  # logical
    assert call("shru8", np.uint8(0x80), np.uint8(9)) == 0x40
    assert call("shlu64", np.uint64(1), np.uint64(64 + 63)) == 2**63


# --- conversions -----------------------------------------------------------------------


def test_float_to_int_saturates_and_nan_is_zero():
    assert call("f2i", np.float32(3.9)) == 3
    assert call("f2i", np.float32(-3.9)) == -3
    assert call("f2i", np.float32(3e9)) == 2**31 - 1
    assert call("f2i", np.float32(-3e9)) == -(2**31)
    assert call("f2i", np.float32(np.inf)) == 2**31 - 1
    assert call("f2i", NAN_PAYLOAD) == 0
    assert call("f2u8", np.float32(300.0)) == 255
    assert call("f2u8", np.float32(-1.0)) == 0
    assert call("f2u8", np.float32(-0.9)) == 0
    assert call("d2i64", 9.3e18) == 2**63 - 1
    assert call("d2i64", -(2.0**63)) == -(2**63)
    assert call("d2u64", 2.0**64) == 2**64 - 1
    assert call("d2u64", 2.0**63 + 2048) == 2**63 + 2048


def test_int_to_float_rounds_to_nearest_even():
    assert call("i2f", np.int32(16777217)) == 16777216.0  # tie -> even
    assert call("i2f", np.int32(16777219)) == 16777220.0  # tie -> even (up)
    assert call("l2f", np.int64(2**63 - 1)) == np.float32(2.0**63)
    assert call("l2f", np.int64(-(2**63))) == np.float32(-(2.0**63))
    assert call("ul2f", np.uint64(2**64 - 1)) == np.float32(2.0**64)
    # a value that double rounding (via f64) would get wrong: 2^60 + 2^36 + 1
    v = 2**60 + 2**36 + 1
    assert call("l2f", np.int64(v)) == np.float32(2.0**60 + 2.0**37)
    assert call("l2d", np.int64(2**53 + 1)) == 2.0**53
    assert call("l2d", np.int64(2**53 + 3)) == 2.0**53 + 4


def test_int_to_float_arrays_at_the_exact_range():
    """Within ±2^53 the integer is converted exactly first; an array with one element past
    it goes the rounding path for all (both give the correctly rounded values)."""
    big = [2**53, 2**53 + 1, -(2**53) - 1, 2**53 - 1, 3, -(2**63)]
    out = fp.int_to_float(np.array(big, np.int64), fp.F64)
    assert out.tolist() == [float(v) for v in big]
    out32 = fp.int_to_float(np.array([2**53 - 1, 2**24 + 1, -(2**24) - 3], np.int64), fp.F32)
    assert out32.tolist() == [2.0**53, 2.0**24, -(2.0**24 + 4)]
    u = fp.int_to_float(np.array([2**53 + 1, 2**64 - 1], np.uint64), fp.F64)
    assert u.tolist() == [2.0**53, 2.0**64]


@given(st.integers(-(2**63), 2**63 - 1))
def test_int64_to_float_matches_exact_rounding(v):
    from kera_core.sema.literals import f32_bits_of

    assert b32(call("l2f", np.int64(v))) == f32_bits_of(Fraction(v))
    assert call("l2d", np.int64(v)) == float(v)  # Python rounds int -> float correctly


def test_float_to_float():
    assert b32(call("d2f", 1e-45)) == 1  # rounds into the subnormals
    assert b32(call("d2f", 1e39)) == 0x7F800000
    assert b32(call("d2f", 0.1)) == b32(np.float32(0.1))
    assert b64(call("f2d", NEG_NAN)) == CANON64
    assert call("f2d", SUB_MIN) == 2.0**-149


def test_bool_and_int_casts():
    assert call("b2i", True) == 1
    assert call("i2u8", np.int32(-1)) == 255
    assert call("i2u8", np.int32(256 + 7)) == 7


# --- elementwise ops against numpy, element by element -------------------------------------


@given(st.lists(st.tuples(float32s, float32s), min_size=1, max_size=50))
def test_elementwise_add_matches_numpy_float32(pairs):
    x = np.array([p[0] for p in pairs], np.float32)
    y = np.array([p[1] for p in pairs], np.float32)
    got = run_function(module(), "addv", {"x": x, "y": y})["result"]
    with np.errstate(all="ignore"):
        want = np.array([np.float32(a) + np.float32(b) for a, b in zip(x, y, strict=True)])
    want = np.where(np.isnan(want), np.float32(np.nan), want).astype(np.float32)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


@given(float32s, float32s)
def test_scalar_ops_match_numpy_float32(a, b):
    a, b = np.float32(a), np.float32(b)
    with np.errstate(all="ignore"):
        for fn, want in [("add32", a + b), ("sub32", a - b), ("mul32", a * b), ("div32", a / b)]:
            want = CANON32 if np.isnan(want) else b32(want)
            assert b32(call(fn, a, b)) == want, fn


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


i32s = st.integers(-(2**31), 2**31 - 1)


@given(i32s, i32s)
def test_i32_arithmetic_matches_exact_integers(a, b):
    assert call("i32add", np.int32(a), np.int32(b)) == _wrap(a + b, 32, True)
    if b != 0:
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        assert call("i32div", np.int32(a), np.int32(b)) == _wrap(q, 32, True)
        assert call("i32rem", np.int32(a), np.int32(b)) == _wrap(a - q * b, 32, True)
    n = b & 31
    assert call("shl32", np.int32(a), np.int32(b)) == _wrap(a << n, 32, True)
    assert call("shr32", np.int32(a), np.int32(b)) == a >> n


@given(st.floats(width=32, allow_nan=True))
def test_f32_to_i32_saturates(x):
    x = np.float32(x)
    if np.isnan(x):
        want = 0
    else:
        want = max(
            -(2**31),
            min(
                2**31 - 1,
                math.trunc(float(x)) if math.isfinite(x) else (2**31 if x > 0 else -(2**32)),
            ),
        )
    assert call("f2i", x) == want
