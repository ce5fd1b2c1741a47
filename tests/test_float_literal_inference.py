"""An unsuffixed float literal that initialises a `let` takes the float type of its first use
in the rest of the block (docs/language.md §6.2; issue 15 item 7)."""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import run_function

OK = [
    # (source, the function's result type as the interpreter reports it)
    ("pub fn f[N](x: &f32[N]) -> f32 { let mut s = 0.0; for i in 0..N { s += x[i]; } s }", "f32"),
    (
        "pub fn f[N](x: &f32[N]) -> f32 {\n    let mut m = -1.5;\n"
        "    for i in 0..N { if x[i] > m { m = x[i]; } }\n    m\n}",
        "f32",
    ),
    ("pub fn f(a: f32) -> f32 { let s = (0.5); a * s }", "f32"),
    ("pub fn f(a: f64) -> f64 { let s = 0.5; s * a }", "f64"),
    ("pub fn f(a: f32) -> f64 { let s = 0.5; let t = s * 2.0; t }", "f64"),  # no typed use
    ("pub fn f(a: f32) -> f32 { let s = 0.5; let t = s * 2.0f32; t + a }", "f32"),
    # an element loop's variable has the tensor's element type
    ("pub fn f[N](x: &f32[N]) -> f32 { let mut s = 0.0; for v in x { s += v; } s }", "f32"),
    (
        "pub fn f[N](x: &f32[N]) -> f32 { let mut s = 0.0; for v in &x { s = s + v * 2.0; } s }",
        "f32",
    ),
    # `swap` gives both variables one type (docs/language.md §9)
    ("pub fn f(a: f32) -> f32 { let mut b = a; let mut s = 0.5; swap(&mut s, &mut b); s }", "f32"),
    # a constant has its declared type; so does a local bound later in the block
    ("const C: f32 = 2.0;\npub fn f(a: f32) -> f32 { let mut s = 0.0; s += C; s * a }", "f32"),
    (
        "const W: f32[2] = [1.0, 2.0];\n"
        "pub fn f(a: f32) -> f32 { let mut s = 0.0; let w = W; s += sum(w); s + a }",
        "f32",
    ),
    (
        "pub fn f(a: f32) -> f32 { let mut s = 0.0; let w: f32[2] = [a, 1.0]; s += sum(w); s }",
        "f32",
    ),
    # else the function's result type, through the body's tail or a `return`
    ("pub fn f(n: i64) -> f32 { let mut s = 0.0; for i in 0..n { s += 1.5; } s }", "f32"),
    ("pub fn f(n: i64) -> f32 { let s = 0.25; if n > 0 { return s; } 2.0 }", "f32"),
]


@pytest.mark.parametrize(("src", "t"), OK, ids=[s[:48] for s, _ in OK])
def test_the_first_use_types_the_literal(src: str, t: str) -> None:
    a = analyze(src + "\n")
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    m = a.module
    inputs = {}
    if "x:" in src:
        inputs["x"] = np.array([1.5, -2.0, 0.25], np.float32)
    if "a: f32" in src:
        inputs["a"] = np.float32(3.0)
    if "a: f64" in src:
        inputs["a"] = np.float64(3.0)
    if "n: i64" in src:
        inputs["n"] = np.int64(2)
    r = run_function(m, "f", inputs)
    assert str(r.outputs[0].type) == t


def test_a_rebinding_first_keeps_f64() -> None:
    src = "pub fn f(a: f32) -> f32 { let s = 0.5; let s = 1.0f32; a * s }\n"
    assert not analyze(src).has_errors
    src = "pub fn f(a: f32) -> f32 { let s = 0.5; let s = 1.0f32; let t = s; a * t }\n"
    assert not analyze(src).has_errors


def test_programs_that_checked_before_keep_their_fingerprints() -> None:
    """Only uses that were type errors decide a type: an all-f64 program is unchanged."""
    typed = "pub fn f(a: f64) -> f64 { let s: f64 = 0.5; let t = s * a; t + 1.0 }\n"
    inferred = "pub fn f(a: f64) -> f64 { let s = 0.5; let t = s * a; t + 1.0 }\n"
    assert analyze(typed).module.graph.fingerprint() == analyze(inferred).module.graph.fingerprint()
    f32_typed = (
        "pub fn f[N](x: &f32[N]) -> f32 { let mut s: f32 = 0.0; for i in 0..N { s += x[i]; } s }\n"
    )
    f32_inferred = (
        "pub fn f[N](x: &f32[N]) -> f32 { let mut s = 0.0; for i in 0..N { s += x[i]; } s }\n"
    )
    assert (
        analyze(f32_typed).module.graph.fingerprint()
        == analyze(f32_inferred).module.graph.fingerprint()
    )
