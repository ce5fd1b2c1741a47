"""The ownership and memory-space checker (docs/ownership.md).

* ``tests/ownership_corpus/{ok,err}/NNN_name.kera`` with ``NNN_name.expected``: every
  diagnostic of parse + lowering + ownership check, one per line as
  ``CODE line:col message``, each followed by its related spans (``note line:col
  message``) and fix (``help title`` and ``edit line:col-line:col "text"``). ``ok``
  cases must have none; ``err`` cases at least one. After a deliberate change,
  regenerate with ``UPDATE_EXPECT=1 pytest tests/test_ownership.py`` and review the diff.
* every example in ``examples/`` passes the checker;
* hypothesis: random programs and random token mutations of the examples never make
  the checker raise (or report an internal error, K0901), and it is deterministic.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.diagnostics import Diagnostic, sort_key
from kera_core.sema import LoweringCache, lower_module
from kera_core.sema.borrow import check_function, check_ownership
from kera_core.source import LineIndex
from kera_core.syntax.lexer import lex
from kera_core.syntax.parse import parse

ROOT = Path(__file__).parent.parent
CORPUS = Path(__file__).parent / "ownership_corpus"
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
UPDATE = os.environ.get("UPDATE_EXPECT") == "1"
OK_CASES = sorted((CORPUS / "ok").glob("*.kera"))
ERR_CASES = sorted((CORPUS / "err").glob("*.kera"))


def diagnose(text: str) -> list[Diagnostic]:
    """Everything a user sees for ``text``: parse, lowering and ownership diagnostics."""
    a = analyze(text)
    extra = [d for d in check_ownership(a.module, a.parse) if d not in a.diagnostics]
    return sorted(a.diagnostics + extra, key=sort_key)


def ownership_only(text: str) -> list[Diagnostic]:
    a = analyze(text)
    return check_ownership(a.module, a.parse)


def render(diags: list[Diagnostic], text: str) -> str:
    idx = LineIndex(text)

    def pos(offset: int) -> str:
        line, col = idx.to_chars(offset)
        return f"{line + 1}:{col + 1}"

    lines = []
    for d in diags:
        lines.append(f"{d.code} {pos(d.span.start)} {d.message}")
        lines += [f"  note {pos(r.span.start)} {r.message}" for r in d.related]
        if d.fix is not None:
            lines.append(f"  help {d.fix.title}")
            lines += [
                f"  edit {pos(e.span.start)}-{pos(e.span.end)} {e.new_text!r}" for e in d.fix.edits
            ]
    return "\n".join(lines) + "\n" if lines else "(no diagnostics)\n"


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _check_case(path: Path, expect_errors: bool) -> None:
    text = path.read_text(encoding="utf-8")
    diags = diagnose(text)
    assert not any(d.code == "K0901" for d in diags), render(diags, text)
    if expect_errors:
        assert diags, "an err case must report at least one diagnostic"
    else:
        assert not diags, render(diags, text)
    actual = render(diags, text)
    expected_path = path.with_suffix(".expected")
    if UPDATE:
        expected_path.write_text(actual, encoding="utf-8", newline="\n")
        return
    assert expected_path.exists(), f"{expected_path.name} missing: run with UPDATE_EXPECT=1"
    assert actual == expected_path.read_text(encoding="utf-8"), (
        f"{path.name}: diagnostics differ (UPDATE_EXPECT=1 to accept)\n{actual}"
    )


@pytest.mark.parametrize("path", OK_CASES, ids=_case_id)
def test_corpus_ok(path: Path) -> None:
    _check_case(path, expect_errors=False)


@pytest.mark.parametrize("path", ERR_CASES, ids=_case_id)
def test_corpus_err(path: Path) -> None:
    _check_case(path, expect_errors=True)


def test_corpus_is_big_enough() -> None:
    assert len(OK_CASES) + len(ERR_CASES) >= 40
    codes = {
        line.split()[0]
        for p in ERR_CASES
        for line in p.with_suffix(".expected").read_text().splitlines()
        if line[:1] == "K"
    }
    assert {"K0401", "K0402", "K0403", "K0404", "K0406", "K0407", "K0408"} <= codes


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_pass(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    a = analyze(text)
    assert not a.has_errors, render(a.diagnostics, text)
    assert check_ownership(a.module, a.parse) == []


# --- precise behaviour through the public functions -------------------------------------

TAKE = "fn take[N](x: f32[N]) -> f32 { sum(&x) }\n"


def test_check_function_is_per_function() -> None:
    text = TAKE + "fn bad[N](x: f32[N]) -> f32 { take(x) + take(x) }\n"
    module = lower_module(parse(text))
    assert check_function(module, "take") == []
    assert [d.code for d in check_function(module, "bad")] == ["K0401"]
    assert check_function(module, "missing") == []


def test_functions_with_lowering_errors_are_skipped() -> None:
    # `y` is unknown (K0201): the body is not checked, so the double move is not reported.
    text = TAKE + "fn f[N](x: f32[N]) -> f32 { take(x) + take(x) + y }\n"
    assert [d.code for d in diagnose(text)] == ["K0201"]


def test_functions_with_syntax_errors_are_skipped() -> None:
    text = TAKE + "fn f[N](x: f32[N]) -> f32 { let a = take(x); take(x) + ; a }\n"
    assert not any(d.code.startswith("K04") for d in diagnose(text))


def test_borrow_fix_resolves_the_error() -> None:
    text = "fn f[N](x: f32[N]) -> f32 {\n    let y = x;\n    sum(&x) + sum(y)\n}\n"
    [d] = ownership_only(text)
    assert d.code == "K0401" and d.fix is not None
    [edit] = d.fix.edits
    data = text.encode()
    fixed = (data[: edit.span.start] + edit.new_text.encode() + data[edit.span.end :]).decode()
    assert "let y = &x;" in fixed
    assert diagnose(fixed) == []


def test_copy_fix_needs_transfer_then_passes() -> None:
    text = TAKE + "fn f[N](x: f32[N]) -> f32 ! transfer {\n    take(x) + take(x)\n}\n"
    [d] = ownership_only(text)
    assert d.fix is not None and d.fix.title == "copy it with `copy_to(&x, host)`"
    [edit] = d.fix.edits
    fixed = text[: edit.span.start] + edit.new_text + text[edit.span.end :]
    assert diagnose(fixed) == []


def test_move_to_fix_uses_copy_to() -> None:
    text = "fn f[N](x: f32[N]) -> f32 ! transfer {\n    let d = move_to(x, device);\n    sum(&x) + sum(&d)\n}\n"
    [d] = ownership_only(text)
    assert d.fix is not None
    [edit] = d.fix.edits
    fixed = text[: edit.span.start] + edit.new_text + text[edit.span.end :]
    assert "copy_to(x, device)" in fixed
    assert diagnose(fixed) == []


def test_reports_are_relocated_with_cached_lowering() -> None:
    body = TAKE + "fn bad[N](x: f32[N]) -> f32 { take(x) + take(x) }\n"
    cache = LoweringCache()
    a = analyze(body, cache)
    before = check_ownership(a.module, a.parse)
    prefix = "// a comment that moves everything down\n\n"
    b = analyze(prefix + body, cache)
    assert cache.reused >= 1
    after = check_ownership(b.module, b.parse)
    assert [d.shifted(len(prefix)) for d in before] == after


def test_struct_moves_are_copies() -> None:
    text = (
        "struct P { x: f32 }\nfn id(p: P) -> P { p }\n"
        "fn f(p: P) -> f32 { let q = id(p); let r = p; q.x + r.x + p.x }\n"
    )
    assert diagnose(text) == []


# --- robustness ----------------------------------------------------------------------------

HELPERS = """
fn take[N](x: f32[N]) -> f32 { sum(&x) }
fn give[N](x: f32[N]) -> f32[N] { x }
fn look[N](x: &f32[N]) -> f32 { sum(x) }
fn bump[N](x: &mut f32[N]) { x[0] += 1.0; }
fn both[N](x: &mut f32[N], y: &f32[N]) { x[0] += y[0]; }
fn pick[N](a: &f32[N], b: &f32[N]) -> &f32[N] { a }
"""

_TENSORS = ["x", "y", "t0", "t1"]
_BORROWS = ["r0", "r1"]


def gen_program(pick, count) -> str:
    """A random program over tensors, stored borrows and helpers; most of them lower.

    ``pick(options)`` chooses one element and ``count(lo, hi)`` an integer, so the same
    generator serves hypothesis (shrinkable) and a seeded ``random.Random``.
    """

    def stmt(depth: int, in_loop: bool) -> str:
        def t() -> str:
            return pick(_TENSORS)

        def r() -> str:
            return pick(_BORROWS)

        forms = [
            lambda: f"s += take({t()});",
            lambda: f"s += look(&{t()});",
            lambda: f"s += sum({r()});",
            lambda: f"bump(&mut {t()});",
            lambda: f"both(&mut {t()}, &{t()});",
            lambda: f"both(&mut {t()}, {r()});",
            lambda: f"{t()} = give({t()});",
            lambda: f"{t()} = {t()} * 2.0;",
            lambda: f"{t()}[0] = s;",
            lambda: f"{t()} += 1.0;",
            lambda: f"let {t()} = {t()};",
            lambda: f"let mut {t()} = give({t()});",
            lambda: f"let {r()} = &{t()};",
            lambda: f"let {r()} = pick(&{t()}, {r()});",
            lambda: f"s += dot(&{t()}, &give({t()}));",
            lambda: "return s;",
        ]
        if in_loop:
            forms += [lambda: "break;", lambda: "continue;"]
        if depth > 0:

            def body(loop: bool) -> str:
                return " ".join(stmt(depth - 1, loop) for _ in range(count(0, 3)))

            forms += [
                lambda: f"if s > 1.0 {{ {body(in_loop)} }} else {{ {body(in_loop)} }}",
                lambda: f"for i in 0..N {{ {body(True)} }}",
                lambda: f"while s < 9.0 {{ s += 1.0; {body(True)} }}",
                lambda: f"{{ {body(in_loop)} }}",
            ]
        return pick(forms)()

    stmts = " ".join(stmt(2, False) for _ in range(count(1, 8)))
    return (
        HELPERS
        + "fn f[N](mut x: f32[N], mut y: f32[N]) -> f32 {\n"
        + "    let mut s: f32 = 0.0;\n    let mut t0: f32[N] = zeros();\n"
        + "    let mut t1: f32[N] = full(1.0);\n    let r0 = &x;\n    let r1 = &t1;\n"
        + f"    {stmts}\n    s\n}}\n"
    )


@st.composite
def programs(draw) -> str:
    return gen_program(
        lambda xs: draw(st.sampled_from(xs)), lambda lo, hi: draw(st.integers(lo, hi))
    )


def _assert_sane(text: str) -> list[Diagnostic]:
    a = analyze(text)
    first = check_ownership(a.module, a.parse)
    assert not any(d.code == "K0901" for d in first), [d.message for d in first]
    assert all(isinstance(d, Diagnostic) for d in first)
    again = analyze(text)
    assert check_ownership(again.module, again.parse) == first
    return first


@given(programs())
def test_random_programs_never_crash(text: str) -> None:
    _assert_sane(text)


def test_generator_reaches_the_checker() -> None:
    """Most generated programs lower cleanly, so the checker really runs on them."""
    rng = random.Random(7)
    checked = flagged = 0
    for _ in range(40):
        text = gen_program(rng.choice, rng.randint)
        a = analyze(text)
        if not any(d.is_error for d in a.parse.diagnostics + a.module.diagnostics):
            checked += 1
            flagged += bool(_assert_sane(text))
    assert checked >= 25 and flagged >= 8, (checked, flagged)


_POOL = ["&", "&mut", "mut", "x", "y", "=", ";", "{", "}", "(", ")", "move_to", "copy_to", ",",
         "device", "@", "return", "let", "for", "in", "0..N", "[", "]", "0", "*"]  # fmt: skip


@st.composite
def mutated_examples(draw) -> str:
    path = draw(st.sampled_from(EXAMPLES))
    toks = lex(path.read_text(encoding="utf-8")).texts
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(0, len(toks) - 1)))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert"]))
        if not toks:
            break
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        elif op == "swap" and i + 1 < len(toks):
            toks[i], toks[i + 1] = toks[i + 1], toks[i]
        elif op == "replace":
            toks[i] = draw(st.sampled_from(_POOL))
        else:
            toks.insert(i, " " + draw(st.sampled_from(_POOL)) + " ")
    return "".join(toks)


@given(mutated_examples())
def test_mutated_examples_never_crash(text: str) -> None:
    _assert_sane(text)
