"""What users try and Kera lacks: one K0112 error that says so, with a way forward — never
a cascade of syntax and type errors (issue 15, item 7). A syntax-level one is reported at
the token that shows it (the operator in a dimension, the path's first name); a method call
at the whole call."""

from __future__ import annotations

import pytest

from kera_core.analysis import analyze

CASES = [
    ("pub fn f() -> f32 { a::b::c }", "paths are not in Kera", "a"),
    ("pub fn f() -> f64 { let x = Point::new::y; x }", "paths are not in Kera", "Point"),
    ("pub fn f[N](x: &f32[N]) -> f32[N % 2] { zeros() }", "not a dimension operator", "%"),
    ("pub fn f[N](x: &f32[N]) -> f32 { let y = x.clone(); y[0] }", "call `clone(x)`", "x.clone()"),
    ("pub fn f[N](x: &f32[N]) -> f32 { x.sum() }", "call `sum(x)`", "x.sum()"),
    (  # a range's `.rev()` is real (language.md §6.9); a tensor's is not
        "pub fn f[N](x: &f32[N]) -> f32 {\n    let mut s = 0.0f32;\n"
        "    for v in x.rev() { s += v; }\n    s\n}",
        "iterate `(0..N).rev()` and read `x[i]`",
        "x.rev()",
    ),
    ("pub fn f[N](x: &f32[N]) -> i64 { x.len() }", "no function `len`", "x.len()"),
    # Rust's float methods, spelled as Kera's builtins (with their arguments)
    ("pub fn f(a: f32) -> f32 { a.max(0.5) }", "call `maximum(a, 0.5)`", "a.max(0.5)"),
    (
        "pub fn f(a: f32, b: f32) -> f32 { a.mul_add(b, 1.0) }",
        "call `fma(a, b, 1.0)`",
        "a.mul_add(b, 1.0)",
    ),
    ("pub fn f(a: f64) -> f64 { (a + 1.0).ln() }", "call `log((a + 1.0))`", "(a + 1.0).ln()"),
    ("pub fn f(a: f32) -> f32 { a.powf(2.5) }", "call `pow(a, 2.5)`", "a.powf(2.5)"),
]


@pytest.mark.parametrize(("src", "message", "at"), CASES, ids=[c[0][:40] for c in CASES])
def test_one_error_says_what_kera_lacks(src: str, message: str, at: str) -> None:
    a = analyze(src + "\n")
    errors = [d for d in a.diagnostics if d.is_error]
    assert len(errors) == 1, [str(d) for d in errors]
    (d,) = errors
    assert d.code == "K0112" and message in d.message, d.message
    assert src[d.span.start : d.span.end] == at


def test_the_rest_of_the_file_is_still_checked() -> None:
    """A construct Kera lacks does not hide the errors around it."""
    src = (
        "pub fn f() -> f32 { a::b::c }\n"
        "pub fn g(a: f32) -> i32 { a }\n"  # a real type error after it
    )
    codes = sorted(d.code for d in analyze(src).diagnostics if d.is_error)
    assert codes == ["K0112", "K0309"], codes


INDEXING = [
    # C's and Rust's `a[i][j]` on a tensor of rank 2 or more: one error, with the fix
    ("pub fn f[N, M](a: &f32[N, M], i: i64, j: i64) -> f32 { a[i][j] }", "a[i][j]", "a[i, j]"),
    (
        "pub fn f[N, M, K](a: &f32[N, M, K], i: i64) -> f32 { a[i][i + 1][0] * 2.0 }",
        "a[i][i + 1][0]",
        "a[i, i + 1, 0]",
    ),
    ("pub fn f[N, M, K](a: &f32[N, M, K]) -> f32 { a[0, 1][2] }", "a[0, 1][2]", "a[0, 1, 2]"),
    # too few indices and nothing after: a row is a slice
    ("pub fn f[N, M](a: &f32[N, M], i: i64) -> f32 { sum(a[i]) }", "a[i]", None),
]


@pytest.mark.parametrize(("src", "at", "fixed"), INDEXING, ids=[c[1] for c in INDEXING])
def test_indexing_one_dimension_after_another_says_how_kera_indexes(src, at, fixed) -> None:
    a = analyze(src + "\n")
    errors = [d for d in a.diagnostics if d.is_error]
    assert len(errors) == 1, [str(d) for d in errors]
    (d,) = errors
    assert d.code == "K0304" and "at once" in d.message, d.message
    assert src[d.span.start : d.span.end] == at
    if fixed is None:
        assert d.fix is None and "a[i, ..]" in d.message
        return
    (edit,) = d.fix.edits
    new = src[: edit.span.start] + edit.new_text + src[edit.span.end :]
    assert edit.new_text == fixed
    assert not analyze(new + "\n").has_errors, new
