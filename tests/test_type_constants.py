"""Constants a number type names — `f32::PI`, `f64::EPSILON`, `i32::MAX` (docs/language.md
§3.4): each value by its bits, checked against an exact reference; the checker's errors;
the formatter, the hover, and every target that runs here agreeing with the interpreter."""

from __future__ import annotations

import struct
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.fmt import format_text
from kera_core.ide.hover import hover
from kera_core.interp import run_function
from kera_core.sema import type_constants as TC
from kera_core.targets import get, run_module
from kera_core.workspace import Document
from tests.tools import tool_missing

FLOATS = {"f32": (np.float32, np.uint32, 24), "f64": (np.float64, np.uint64, 53)}


def _nearest(t: str, value) -> int:
    """The bits of the binary32/binary64 value nearest ``value`` (an mpf), ties to even."""
    with mpmath.workprec(FLOATS[t][2]):
        r = float(+value)
    if t == "f32":
        return struct.unpack("<I", struct.pack("<f", r))[0]
    return struct.unpack("<Q", struct.pack("<d", r))[0]


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_constants_are_the_nearest_values(t: str) -> None:
    ft, ut, p = FLOATS[t]
    mpmath.mp.prec = 300
    exact = {
        "PI": mpmath.pi,
        "TAU": 2 * mpmath.pi,
        "E": mpmath.e,
        "LN_2": mpmath.log(2),
        "LN_10": mpmath.log(10),
        "SQRT_2": mpmath.sqrt(2),
    }
    for name, v in exact.items():
        assert TC.constant_bits(t, name) == _nearest(t, v), name
    info = np.finfo(ft)
    val = lambda n: np.array(TC.constant_bits(t, n), dtype=ut).view(ft)[()]  # noqa: E731
    assert val("MAX") == info.max and val("MIN") == -info.max
    assert val("MIN_POSITIVE") == info.tiny and val("EPSILON") == info.eps
    assert Fraction(float(val("EPSILON"))) == Fraction(1, 2 ** (p - 1))
    assert val("INFINITY") == np.inf and val("NEG_INFINITY") == -np.inf
    assert np.isnan(val("NAN")) and TC.constant_bits(t, "NAN") == (
        0x7FC00000 if t == "f32" else 0x7FF8000000000000
    )


@pytest.mark.parametrize("t", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"])
def test_integer_constants_are_the_type_bounds(t: str) -> None:
    info = np.iinfo(getattr(np, t.replace("i", "int").replace("u", "uint")))
    src = f"pub fn hi() -> {t} {{ {t}::MAX }}\npub fn lo() -> {t} {{ {t}::MIN }}\n"
    m = analyze(src).module
    assert run_function(m, "hi", {}).outputs[0].value == info.max
    assert run_function(m, "lo", {}).outputs[0].value == info.min


SRC = """
pub fn consts() -> f32 { f32::PI * 2.0 - f32::TAU + f32::E }
pub fn scale[N](x: &f32[N]) -> f32[N] { x * f32::LN_2 + f32::EPSILON }
pub fn clamp_inf[N](x: &f64[N]) -> f64[N] { minimum(x, f64::MAX) }
pub fn wide() -> i64 { i64::MAX - (i32::MAX as i64) }
"""


def test_the_checker_names_what_a_type_has() -> None:
    bad = {
        "pub fn f() -> f32 { f32::PIE }": ("K0201", "did you mean `PI`"),
        "pub fn f() -> f32 { bool::X }": ("K0203", "names no constants"),
        "pub fn f() -> f32 { Point::X }": ("K0203", "names no constants"),
        "pub fn f() -> i32 { i32::PI }": ("K0201", "`MAX`, `MIN`"),
        "pub fn f() -> f32 { f64::PI }": ("K0309", "expected `f32`, found `f64`"),
    }
    for src, (code, msg) in bad.items():
        errs = [d for d in analyze(src + "\n").diagnostics if d.is_error]
        assert len(errs) == 1 and errs[0].code == code and msg in errs[0].message, (src, errs)


def test_format_and_hover() -> None:
    out = format_text("pub fn f()->f32{f32 :: PI+f32::E}\n").text
    assert "f32::PI + f32::E" in out and format_text(out).text == out
    d = Document("file:///tmp/c.kera", "pub fn f() -> f32 { f32::PI }\n", 1)
    h = hover(d.analysis(), d.text.index("PI"), d)
    assert h is not None and "f32::PI: f32 = 3.1415927" in h.markdown and "0x40490FDB" in h.markdown


@pytest.mark.parametrize("target", ["wasm", "x86_64", "arm64"])
def test_every_target_gives_the_interpreters_bits(target: str) -> None:
    try:
        t = get(target)
    except ImportError as e:
        tool_missing(f"the {target} target cannot load here: {e}")
    why = getattr(t, "cannot_run_here", lambda: None)()
    if why:
        tool_missing(why)
    m = analyze(SRC).module
    x32 = np.array([1.0, -0.0, np.inf, 3.5], np.float32)
    x64 = np.array([np.inf, -np.inf, 1e308, np.nan], np.float64)
    cases = {"consts": {}, "scale": {"x": x32}, "clamp_inf": {"x": x64}, "wide": {}}
    for name, inputs in cases.items():
        want = run_function(m, name, inputs).digest()
        assert run_module(t, m, name, inputs).digest() == want, (target, name)


@pytest.mark.parametrize(
    "expr, want",
    [
        ("if a > 0.0 { 1.0 } else { f32::PI }", "f32"),
        ("if a > 0.0 { f64::E } else { 1.0 }", "f64"),
        ("if a > 0.0 { 2.0 } else if a < 1.0 { 3.0 } else { { f32::TAU } }", "f32"),
        ("(if a > 0.0 { 1.0 } else { f32::PI }) * 2.0", "f32"),
    ],
)
def test_a_typed_constant_types_the_literals_beside_it(expr: str, want: str) -> None:
    """An unsuffixed literal in one branch of an `if` takes the type of a typed constant in
    the other, as it does from any operand of evident type (language.md §6.2)."""
    src = f"pub fn f(a: f32) -> {want} {{ let v = {expr}; v }}\n"
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics]
    r = run_function(a.module, "f", {"a": np.float32(-1.0)}, {})
    assert str(r.outputs[0].type) == want
