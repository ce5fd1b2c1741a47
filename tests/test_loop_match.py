"""`loop { … }` and `match` (language.md §6.10, §6.18): they parse, format (idempotently),
check and run. The interpreter's results are checked by hand, every target that runs here
gives the interpreter's bytes, each mistake is one diagnostic with its code and span, a
`loop` that never breaks stops at the step budget (R0007), and the editor answers inside
them."""

from __future__ import annotations

import numpy as np
import pytest

from kera_core import targets
from kera_core.analysis import analyze
from kera_core.fmt import format_text
from kera_core.interp.api import run_function
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.parse import parse
from tests.outcomes import analyzed, outcome, runnable_target, spanned

SRC = """\
const K: i64 = 7;
const LO: i64 = -3;

/// Collatz steps of `n` (at most `cap`): `loop` with `break`.
pub fn collatz(n: i64, cap: i64) -> i64 {
    let mut x = n;
    let mut steps = 0;
    loop {
        if x <= 1 || steps >= cap {
            break;
        }
        x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    steps
}

/// The sum of the odd numbers below `n`: `continue`, then `break`.
pub fn odd_sum(n: i64) -> i64 {
    let mut i = 0;
    let mut s = 0;
    loop {
        i += 1;
        if i >= n {
            break;
        }
        if i % 2 == 0 {
            continue;
        }
        s += i;
    }
    s
}

/// The first `i` with `i * i > n`, left by `return` from a nested loop.
pub fn isqrt_up(n: i64) -> i64 {
    let mut i = 0;
    loop {
        loop {
            i += 1;
            if i * i > n {
                return i;
            }
            if i % 4 == 0 {
                break;
            }
        }
    }
    0
}

/// Integer patterns: literals, `-`, alternatives, ranges, constants and `_`.
pub fn classify(x: i64) -> i64 {
    match x {
        0 => 100,
        1 | 2 | 3 => 200,
        -10..=-1 => 300,
        K => 400,
        LO..=K => x * 1000,
        20..=29 | 40..=49 => {
            let y = x - 20;
            500 + y
        }
        _ => -1,
    }
}

/// A `bool` scrutinee, exhaustive without `_`.
pub fn flag(b: bool, x: i64) -> i64 {
    match b {
        true => x + 1,
        false => x - 1,
    }
}

/// `match` as a statement in a loop, assigning and leaving the loop.
pub fn histogram(n: i64) -> i64 {
    let mut small = 0;
    let mut mid = 0;
    let mut big = 0;
    let mut i = 0;
    loop {
        match i % 10 {
            0..=2 => small += 1,
            3 | 4 | 5 => {
                mid += 1;
            }
            9 => {
                if i > n {
                    break;
                }
                big += 1;
            }
            _ => {}
        }
        i += 1;
    }
    small * 10000 + mid * 100 + big
}

/// The scrutinee is evaluated once, then the first matching arm wins.
pub fn first_wins(x: u8) -> i32 {
    let mut calls: i32 = 0;
    let v: i32 = match {
        calls += 1;
        x
    } {
        0..=9 => 1,
        5 => 2,
        0..=127 => 3,
        128..=255 => 4,
    };
    v * 10 + calls
}

/// A typed arm types the untyped literals of the others; a match as an operand.
pub fn narrow(x: i8) -> u16 {
    let a: u16 = 7;
    a + match x {
        i8::MIN..=-1 => 1,
        0 => 2u16,
        _ => 3,
    }
}
"""

RUNS = {
    "collatz": [({"n": 27, "cap": 1000}, 111), ({"n": 1, "cap": 5}, 0), ({"n": 27, "cap": 5}, 5)],
    "odd_sum": [({"n": 10}, 25), ({"n": 0}, 0), ({"n": 2}, 1)],
    "isqrt_up": [({"n": 0}, 1), ({"n": 15}, 4), ({"n": 16}, 5), ({"n": 99}, 10)],
    "classify": [
        ({"x": 0}, 100),
        ({"x": 2}, 200),
        ({"x": -4}, 300),
        ({"x": 7}, 400),
        ({"x": 5}, 5000),
        ({"x": -11}, -1),
        ({"x": 23}, 503),
        ({"x": 41}, 521),
        ({"x": 30}, -1),
    ],
    "flag": [({"b": True, "x": 5}, 6), ({"b": False, "x": 5}, 4)],
    "histogram": [({"n": 25}, 90000 + 900 + 2), ({"n": 0}, 30000 + 300 + 0)],
    "first_wins": [({"x": 7}, 11), ({"x": 5}, 11), ({"x": 100}, 31), ({"x": 200}, 41)],
    "narrow": [({"x": -5}, 8), ({"x": 0}, 9), ({"x": 5}, 10)],
}

_TYPES = {
    "collatz": {"n": np.int64, "cap": np.int64},
    "odd_sum": {"n": np.int64},
    "isqrt_up": {"n": np.int64},
    "classify": {"x": np.int64},
    "flag": {"b": np.bool_, "x": np.int64},
    "histogram": {"n": np.int64},
    "first_wins": {"x": np.uint8},
    "narrow": {"x": np.int8},
}


def _inputs(name: str, args: dict) -> dict:
    return {k: _TYPES[name][k](v) for k, v in args.items()}


@pytest.fixture(scope="module")
def module():
    return analyzed(SRC)


def test_the_interpreter_gives_the_expected_results(module) -> None:
    for name, cases in RUNS.items():
        for args, want in cases:
            r = run_function(module, name, _inputs(name, args))
            assert int(np.asarray(r.outputs[0].value)) == want, (name, args)


def test_the_trees_have_the_new_nodes() -> None:
    p = parse(SRC)
    assert not p.has_errors, p.diagnostics
    kinds = {n.kind for n in p.tree.descendants()}
    assert {K.LOOP_EXPR, K.MATCH_EXPR, K.MATCH_ARM_LIST, K.MATCH_ARM} <= kinds
    assert {K.OR_PAT, K.RANGE_PAT} <= kinds


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64", "verilog"])
def test_every_target_gives_the_interpreters_bytes(module, tname: str) -> None:
    t = runnable_target(tname)
    ran = 0
    for name, cases in RUNS.items():
        why = t.unsupported(module.graph, name)
        if why:  # refused when compiled, never a wrong answer
            assert tname == "verilog", (tname, name, why)
            continue
        for args, _ in cases:
            inputs = _inputs(name, args)
            want = outcome(lambda: run_function(module, name, inputs))  # noqa: B023
            assert want.startswith("ok "), (name, want)
            got = outcome(lambda: targets.run_module(t, module, name, inputs))  # noqa: B023
            assert got == want, (tname, name, args)
            ran += 1
    assert ran >= 8, ran


def test_loop_is_lowered_as_while_true() -> None:
    """The same graph as the `while true` it stands for."""
    body = "let mut i = 0; {} {{ i += 1; if i > n {{ break; }} }} i"
    a = analyzed(f"pub fn f(n: i64) -> i64 {{ {body.format('loop')} }}")
    b = analyzed(f"pub fn f(n: i64) -> i64 {{ {body.format('while true')} }}")
    assert a.graph.functions["f"].hash == b.graph.functions["f"].hash


def test_a_loop_that_never_breaks_stops_at_the_step_budget() -> None:
    m = analyzed(
        "pub fn spin(x: i64) -> i64 {\n    let mut s = x;\n    loop {\n        s += 1;\n    }\n    s\n}\n"
    )
    got = outcome(lambda: run_function(m, "spin", {"x": np.int64(1)}, max_steps=1000))
    assert got == "error R0007"


# --- errors ------------------------------------------------------------------------------

ERRORS = [
    # (source, code, the text the span covers, a word of the message)
    ("pub fn f(x: i64) -> i64 { match x { 1.5 => 1, _ => 0 } }", "K0320", "1.5", "f64"),
    ("pub fn f(x: i8) -> i64 { match x { 300 => 1, _ => 0 } }", "K0307", "300", "i8"),
    ("pub fn f(x: u8) -> i64 { match x { -1 => 1, _ => 0 } }", "K0307", "1", "-1"),
    ("pub fn f(x: i64) -> i64 { match x { 1 => 1, 2 => 0 } }", "K0329", "x", "_ => …"),
    ("pub fn f(b: bool) -> i64 { match b { true => 1 } }", "K0329", "b", "_ => …"),
    ("pub fn f(x: f64) -> i64 { match x { 1 => 1, _ => 0 } }", "K0308", "x", "f64"),
    ("pub fn f[N](x: &f32[N]) -> i64 { match x { _ => 0 } }", "K0308", "x", "f32[N]"),
    ("pub fn f(x: i64) -> i64 { match x { } }", "K0329", "{ }", "no arms"),
    ("pub fn f(x: i64, y: i64) -> i64 { match x { y => 1, _ => 0 } }", "K0320", "y", "variable"),
    ("pub fn f(b: bool) -> i64 { match b { false..=true => 1, _ => 0 } }", "K0320", "false..=true", "range"),
    ("pub fn f(x: i64) -> i64 { match x { 1 | _ => 1, _ => 0 } }", "K0320", "_", "whole pattern"),
    ("pub fn f(x: i64) -> i64 { match x { 1 => 1, _ => true } }", "K0301", None, "arms"),
    ("pub fn f(x: i64) -> i64 { match x { 1..3 => 1, _ => 0 } }", "K0112", "..", "..="),
    ("pub fn f(x: i64) -> i64 { match x { 1 => 1 2 => 0, _ => 0 } }", "K0100", "2", "`,`"),
    ("pub fn f(x: i64) -> i64 { let loop = x; x }", "K0100", "loop", "keyword"),
    ("pub fn f(x: i64) -> i64 { let y = match + 1; x }", "K0102", "match", "keyword"),
    ("pub fn match(x: i64) -> i64 { x }", "K0100", "match", "keyword"),
    ("pub fn f(loop: i64) -> i64 { 1 }", "K0100", "loop", "keyword"),
    ("pub fn f(x: i64) -> i64 { for loop in 0..3 {} x }", "K0100", "loop", "keyword"),
    ("pub fn f() { let x = const; }", "K0102", None, None),  # (an old keyword: unchanged)
]  # fmt: skip


@pytest.mark.parametrize("src, code, text, word", ERRORS)
def test_each_mistake_is_one_diagnostic(src: str, code: str, text, word) -> None:
    diags = [d for d in analyze(src).diagnostics if d.is_error]
    if code == "K0102" and text is None:
        assert diags  # the control case: still an error
        return
    assert [d.code for d in diags] == [code], [str(d) for d in diags]
    d = diags[0]
    if text is not None:
        assert spanned(src, d.span) == text, d
    if word is not None:
        assert word in d.message, d.message


def test_an_arm_after_the_wildcard_is_a_warning() -> None:
    src = "pub fn f(x: i64) -> i64 { match x { _ => 1, 2 => 0 } }"
    diags = analyze(src).diagnostics
    assert [(d.code, d.is_error) for d in diags] == [("K0330", False)]
    assert spanned(src, diags[0].span) == "2 => 0"
    m = analyze(src).module
    assert int(np.asarray(run_function(m, "f", {"x": np.int64(2)}).outputs[0].value)) == 1


def test_a_u8_match_covered_by_ranges_needs_no_wildcard() -> None:
    src = "pub fn f(x: u8) -> i64 { match x { 0..=127 => 1, 128..=255 => 2 } }"
    assert not analyze(src).has_errors


def test_break_and_continue_in_a_match_arm_leave_the_loop() -> None:
    m = analyzed(
        "pub fn f(n: i64) -> i64 {\n    let mut i = 0;\n    let mut s = 0;\n    loop {\n"
        "        i += 1;\n        match i {\n            3 => {\n                continue;\n"
        "            }\n            8 => {\n                break;\n            }\n"
        "            _ => s += i,\n        }\n    }\n    s + n\n}\n"
    )
    r = run_function(m, "f", {"n": np.int64(0)})
    assert int(np.asarray(r.outputs[0].value)) == 1 + 2 + 4 + 5 + 6 + 7


def test_ownership_sees_a_loop_and_the_arms_as_branches() -> None:
    moved_in_loop = (
        "struct P { x: f32[4] }\nfn take(p: P) -> f32 { p.x[0] }\n"
        "pub fn f(p: P) -> f32 {\n    let mut s = 0.0;\n    loop {\n        s += take(p);\n"
        "        if s > 3.0 {\n            break;\n        }\n    }\n    s\n}\n"
    )
    assert "K0401" in [d.code for d in analyze(moved_in_loop).diagnostics]
    one_arm_each = (
        "struct P { x: f32[4] }\nfn take(p: P) -> f32 { p.x[0] }\n"
        "pub fn f(p: P, k: i64) -> f32 {\n    match k {\n        0 => take(p),\n"
        "        _ => take(p),\n    }\n}\n"
    )
    assert not analyze(one_arm_each).has_errors


# --- formatting ---------------------------------------------------------------------------

UNFORMATTED = """\
const K: i64 = 3;
pub fn f(x: i64) -> i64 {
    let mut i = 0;
    loop { i += 1; if i > 10 { break; } };
    let y = match x { 0 => 1, 1|2 => 2, -5 ..= -1 => { 7 }, K => 9, // the constant
        _ => i };
    match x { 1 => { i += 1; } _ => {} }
    y
}
"""

FORMATTED = """\
const K: i64 = 3;

pub fn f(x: i64) -> i64 {
    let mut i = 0;
    loop {
        i += 1;
        if i > 10 {
            break;
        }
    }
    let y = match x {
        0 => 1,
        1 | 2 => 2,
        -5..=-1 => {
            7
        }
        K => 9, // the constant
        _ => i,
    };
    match x {
        1 => {
            i += 1;
        }
        _ => {}
    }
    y
}
"""


def test_formatting_is_the_style_and_idempotent() -> None:
    r = format_text(UNFORMATTED)
    assert not r.diagnostics, r.diagnostics
    assert r.text == FORMATTED
    assert format_text(FORMATTED).text == FORMATTED
    again = format_text(SRC)
    assert not again.diagnostics, again.diagnostics
    assert format_text(again.text).text == again.text


# --- the editor ---------------------------------------------------------------------------


def _analysis(text: str):
    from kera_core.workspace import Document

    d = Document("file:///tmp/loop_match.kera", text, 1)
    d.mark_saved()
    return d.analysis()


def _at(text: str, needle: str, delta: int = 0) -> int:
    return len(text[: text.index(needle) + delta].encode())


def test_hover_and_completion_inside_loop_and_match() -> None:
    from kera_core.ide import completion, hover

    a = _analysis(SRC)
    assert not any(d.is_error for d in a.diagnostics), a.diagnostics
    h = hover.hover(a, _at(SRC, "K => 400"))
    assert h is not None and "K" in h.markdown, h
    h = hover.hover(a, _at(SRC, "steps += 1", 1))
    assert h is not None and "i64" in h.markdown, h
    h = hover.hover(a, _at(SRC, "500 + y", 6))
    assert h is not None and "i64" in h.markdown, h
    # completion in a loop body and in an arm, while the file is being typed
    text = SRC.replace("        steps += 1;\n", "        st\n", 1)
    labels = {c.label for c in completion.complete(_analysis(text), _at(text, "        st\n", 10))}
    assert {"steps", "x", "loop", "match"} <= labels, labels
    text = SRC.replace("x * 1000,", "x * c,", 1)
    labels = {c.label for c in completion.complete(_analysis(text), _at(text, "x * c,", 5))}
    assert {"x", "K", "LO"} <= labels, labels
