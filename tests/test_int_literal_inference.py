"""An unsuffixed integer literal that initialises a `let` (or an `if` whose branches end in
such literals) takes the integer type of its first deciding use in the rest of the block —
an operator or assignment with an evidently typed integer, `return` of it, or the block's
tail being it (docs/language.md §6.2). `let mut c = 0; … c += x[i]` with `x: &i32[N]`, and
a counter returned as `u32`, were type errors (K0301, K0309) that C and Rust ports met."""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import run_function
from kera_core.source import Span
from kera_core.workspace import Document

OK = [
    # (source, the function's result type, its result on x = [5, -3, 7] / a = 4)
    ("pub fn f[N](x: &i32[N]) -> i32 { let mut s = 0; for i in 0..N { s += x[i]; } s }", "i32", 9),
    (
        "pub fn f[N](x: &i32[N]) -> i32 { let mut s = 0; for i in 0..N { s = s + x[i]; } s }",
        "i32",
        9,
    ),
    # an element loop's variable has the tensor's element type
    ("pub fn f[N](x: &i32[N]) -> i32 { let mut s = 0; for v in x { s += v; } s }", "i32", 9),
    # a counter, typed by the tail and by `return`
    (
        "pub fn f[N](x: &i32[N]) -> u32 { let mut c = 0; for i in 0..N { if x[i] > 3 { c += 1; } } c }",
        "u32",
        2,
    ),
    (
        "pub fn f[N](x: &i32[N]) -> u8 { let mut c = 0; for i in 0..N { c += 1; } return c; }",
        "u8",
        3,
    ),
    # an `if` of literals, and a negative literal
    ("pub fn f(a: i32) -> i32 { let m = if a > 0 { 1 } else { 0 }; a + m }", "i32", 5),
    ("pub fn f(a: i16) -> i16 { let m = -2; m * a }", "i16", -8),
    (
        "pub fn f(a: i32) -> i32 { let m = if a > 9 { 1 } else if a > 2 { 2 } else { 3 }; m * a }",
        "i32",
        8,
    ),
    # no deciding use: i64 as before (an index, a range bound, an untyped literal)
    ("pub fn f[N](x: &i32[N]) -> i32 { let mut k = 0; k += 1; x[k] }", "i32", -3),
    ("pub fn f(a: i32) -> i64 { let c = 3; let d = c * 2; d }", "i64", 6),
]


@pytest.mark.parametrize(("src", "t", "want"), OK, ids=[s[:56] for s, _, _ in OK])
def test_the_first_deciding_use_types_the_literal(src: str, t: str, want: int) -> None:
    a = analyze(src + "\n")
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    inputs: dict = {}
    if "x:" in src:
        inputs["x"] = np.array([5, -3, 7], np.int32)
    if "a: i32" in src:
        inputs["a"] = np.int32(4)
    if "a: i16" in src:
        inputs["a"] = np.int16(4)
    r = run_function(a.module, "f", inputs)
    assert str(r.outputs[0].type) == t
    assert int(r["result"]) == want


def test_a_literal_that_does_not_fit_the_decided_type_is_k0307() -> None:
    a = analyze("pub fn f(a: u8) -> u8 { let c = 300; a + c }\n")
    assert [d.code for d in a.diagnostics] == ["K0307"]


def test_a_rebinding_first_keeps_i64() -> None:
    src = "pub fn f(a: i32) -> i32 { let s = 1; let s = 2i32; a * s }\n"
    assert not analyze(src).has_errors
    src = "pub fn f(a: i32) -> i32 { let s = 1; let s = 2i32; let t = s; a * t }\n"
    assert not analyze(src).has_errors


def test_programs_that_checked_before_keep_their_fingerprints() -> None:
    """Only uses that were type errors with `i64` decide another type."""
    typed = (
        "pub fn f[N](x: &i64[N]) -> i64 { let mut s: i64 = 0; for i in 0..N { s += x[i]; } s }\n"
    )
    inferred = "pub fn f[N](x: &i64[N]) -> i64 { let mut s = 0; for i in 0..N { s += x[i]; } s }\n"
    assert analyze(typed).module.graph.fingerprint() == analyze(inferred).module.graph.fingerprint()
    typed = (
        "pub fn f[N](x: &i32[N]) -> i32 { let mut s: i32 = 0; for i in 0..N { s += x[i]; } s }\n"
    )
    inferred = typed.replace("let mut s: i32 = 0", "let mut s = 0")
    assert analyze(typed).module.graph.fingerprint() == analyze(inferred).module.graph.fingerprint()


def test_a_long_body_edited_far_below_the_let_retypes_it_as_a_cold_analysis_does() -> None:
    """The deciding use is 200 statements below the `let`: an edit there (the statement
    path of a long body) lowers again from the `let`, as a cold analysis types it."""
    filler = "".join(f"    let v{i} = a + {i};\n" for i in range(200))
    text = (
        "pub fn f[N](a: i64, x: &i32[N]) -> i64 {\n    let mut c = 0;\n"
        + filler
        + "    for i in 0..N { c += 1; }\n    a\n}\n"
    )
    doc = Document("file:///long.kera", text)
    assert not any(d.is_error for d in doc.analysis().diagnostics)
    at = text.index("c += 1;") + len("c += ")
    for v, (span, new) in enumerate(((Span(at, at + 1), "x[i]"), (Span(at, at + 4), "1")), 1):
        doc.edit(span, new)
        doc.version = v
        a = doc.analysis()
        cold = analyze(doc.text)
        assert a.diagnostics == cold.diagnostics
        assert not any(
            d.is_error for d in a.diagnostics
        )  # `c` is an i32 after the first edit, i64 after the second
        assert a.module.graph.fingerprint() == cold.module.graph.fingerprint()


def test_min_of_two_scalars_says_minimum_and_offers_the_fix() -> None:
    from kera_core.ide.refactor import apply_edits

    src = "pub fn f(a: i32, b: i32) -> i32 { min(a, b) + max(a, b) }\n"
    a = analyze(src)
    assert [d.code for d in a.diagnostics] == ["K0308", "K0308"]
    assert "`minimum(a, b)`" in a.diagnostics[0].message
    fixed = src
    for d in reversed(a.diagnostics):
        fixed = apply_edits(fixed, list(d.fix.edits))
    assert fixed == "pub fn f(a: i32, b: i32) -> i32 { minimum(a, b) + maximum(a, b) }\n"
    assert not analyze(fixed).has_errors
