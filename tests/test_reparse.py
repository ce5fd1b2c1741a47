"""Incremental reparsing equals a full reparse after any sequence of edits."""

import random

from hypothesis import example, given
from hypothesis import strategies as st

import kera_core
from bench.corpus import long_function
from kera_core.source import Span, encode
from kera_core.syntax import reparse as reparse_mod
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.lexer import lex
from kera_core.syntax.reparse import TextEdit, reparse

BASE = """/// y <- a*x + y
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = a * x[i] + y[i];
    }
}

fn helper(a: f32) -> f32 {
    let x = a * 2.0; // twice
    if x > 1.0 { x } else { -x }
}

struct P { x: f32, y: f32 }
"""

PIECES = ["a", "1", ".", " ", "\n", "{", "}", "(", ")", ";", "+", "let ", "fn ", '"', "/*",
          "*/", "//", "x", "é", "💥", "\n\n", "///", "if x { y }", "0..N", "\xff"]  # fmt: skip


def _snap(raw: bytes, i: int) -> int:
    while i < len(raw) and (raw[i] & 0xC0) == 0x80:
        i += 1
    return i


def _check(old, edit):
    new, how = reparse(old, edit)
    full = kera_core.parse(new.text)
    assert str(new.green) == new.text
    assert new.green == full.green, how
    assert new.diagnostics == full.diagnostics, how
    return new, how


edits = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 6), st.lists(st.sampled_from(PIECES), max_size=3)),
    min_size=1,
    max_size=12,
)


@given(edits)
@example([(0.625, 0, ["{"]), (0.625, 1, [])])  # an error reported past the item's end
def test_random_edit_sequences_match_full_parse(seq):
    _edit_sequence(seq)


def _edit_sequence(seq) -> None:
    """``BASE`` edited by ``seq`` (where, as a fraction of the text; how many bytes; the
    pieces typed), each reparse checked against a full parse."""
    p = kera_core.parse(BASE)
    for where, length, pieces in seq:
        raw = encode(p.text)
        s = _snap(raw, int(where * len(raw)))
        e = _snap(raw, min(len(raw), s + length))
        p, _ = _check(p, TextEdit(Span(s, e), "".join(pieces)))


def test_each_strategy_is_used_and_correct():
    rng = random.Random(7)
    seen = set()
    p = kera_core.parse(BASE)
    for _ in range(400):
        text = p.text
        body = text.index("{", text.index("fn helper")) + 1
        s = rng.randrange(body, text.index("\n}\n", body))
        ins = rng.choice(["q", " ", "x + 1; ", "2", "let z = 3;", "{ y }", "// c\n"])
        p, how = _check(p, TextEdit(Span(s, s), ins))
        seen.add(how)
        if len(p.text) > 3000:
            p = kera_core.parse(BASE)
    assert {"token", "block", "full"} <= seen <= {"token", "block", "item", "full"}


@given(edits)
@example([(0.625, 0, ["{"]), (0.625, 1, [])])
@example([(0.2, 0, ["}"]), (0.2, 0, ["{"])])
def test_random_edit_sequences_match_full_parse_with_every_block_long(seq):
    # every block counts as long: the statements around an edit are reparsed alone
    saved, reparse_mod.LONG_BLOCK = reparse_mod.LONG_BLOCK, 0
    try:
        _edit_sequence(seq)
    finally:
        reparse_mod.LONG_BLOCK = saved


def test_edits_in_a_long_body_reparse_the_statements_around_them():
    # a 300-line function (bench/corpus.py's long_function): typing, deleting, pasting
    # anywhere, each edit from the last text or from the original; equal to a full parse
    text = long_function(300)
    base = kera_core.parse(text)
    pieces = ["a", "1", ".", " ", "\n", "{", "}", "(", ")", ";", "+", "let ", "q", "0", '"',
              "/*", "//", "é", "..", "=", "-", "fn ", "if x { y }", " let z = 1.5;", "[", "]",
              "for i in 0..N {", "return ", "acc", "&", "mut "]  # fmt: skip
    rng = random.Random(11)
    p = base
    hows = []
    for _ in range(150):
        raw = encode(p.text)
        s = _snap(raw, rng.randrange(len(raw) + 1))
        e = _snap(raw, min(len(raw), s + rng.choice([0, 0, 0, 1, 2, 5, 20])))
        q, how = _check(p, TextEdit(Span(s, e), rng.choice(pieces)))
        hows.append(how)
        p = q if rng.random() < 0.6 else base
    assert hows.count("statements") > 30, hows
    # a statement typed between two others: the body's other statements are the old nodes
    i = text.index("    let a40")
    new, how = _check(base, TextEdit(Span(i, i), "let z = 1.5;\n"))
    assert how == "statements"
    old_body, new_body = (next(p.tree.children()).child_of_kind(K.BLOCK).green for p in (base, new))
    old_ids = {id(c) for c in old_body.children if not c.is_token}
    shared = sum(id(c) in old_ids for c in new_body.children)
    assert shared >= len(old_ids) - 2


SIG_EDITS = [
    ("(a: f32)", "(a: f64)"),  # a parameter's type
    ("(a: f32)", "(b: f32)"),  # a parameter's name
    ("-> f32 {", "-> f64 {"),  # the result type
    ("{ x: f32, y: f32 }", "{ x: f32, z: f32 }"),  # a struct's field
    ("{ x: f32, y: f32 }", "{ x: f64, y: f32, w: i32 }"),
    ("[N](a: f32", "[N, M](a: f32"),  # a dimension
    ("const K: i64 = 4;", "const K: i64 = 4 * 2;"),  # a constant's value
    ("const K: i64 = 4;", "const K: i64 = 4q;"),  # a bad literal: its own diagnostic
    ("const K: i64 = 4q;", "const K: i64 = 4;"),  # and back
]


def test_edit_in_signature_struct_or_constant_reparses_one_item():
    for old_text, new_text in SIG_EDITS:
        base = BASE + ("const K: i64 = 4q;\n" if "4q" in old_text else "const K: i64 = 4;\n")
        p = kera_core.parse(base)
        i = p.text.index(old_text)
        # the edit is the differing middle, as an editor sends it
        pre = next(k for k in range(len(old_text)) if old_text[k] != new_text[k])
        suf = 0
        room = min(len(old_text), len(new_text)) - pre
        while suf < room and old_text[-1 - suf] == new_text[-1 - suf]:
            suf += 1
        edit = TextEdit(Span(i + pre, i + len(old_text) - suf), new_text[pre : len(new_text) - suf])
        new, how = _check(p, edit)
        # one token's text changed (a name, a type's name, a literal) is relexed alone
        assert how == ("token" if len(lex(old_text)) == len(lex(new_text)) else "item")
        assert new_text in new.text
        changed = [a is not b for a, b in zip(p.green.children, new.green.children, strict=True)]
        assert changed.count(True) == 1  # the other items are the very same green nodes


def test_item_reparse_declines_what_could_change_its_neighbours():
    base = BASE + "const K: i64 = 4;\n"
    for old_text, new_text in [
        ("const K: i64 = 4;", "const K: i64 = 4"),  # the closing `;` goes: recovery runs on
        ("(a: f32)", "(a: /* f32)"),  # an unterminated comment swallows the rest
        ("fn helper", "fn helper() {} fn helper"),  # one item becomes two
    ]:
        p = kera_core.parse(base)
        i = p.text.index(old_text)
        new, how = _check(p, TextEdit(Span(i, i + len(old_text)), new_text))
        assert how != "item", (old_text, new_text)


def test_an_error_inside_an_item_reparses_the_item_with_the_next_one_in_view():
    # a `(` or `{` never closed: the item ends at the next item's first token, where its
    # error is reported (K0106), as in the whole file; and closing it again
    base = BASE + "const K: i64 = 4;\n"
    p = kera_core.parse(base)
    for old_text, new_text in [
        ("(a: f32)", "(a: f32"),
        ("let x = a * 2.0;", "let x = a * 2.0; if x > 1.0 {"),
        ("for i in 0..N {", "for i in 0..N { {"),
    ]:
        i = p.text.index(old_text)
        new, how = _check(p, TextEdit(Span(i, i + len(old_text)), new_text))
        assert how == "item", (old_text, new_text)
        assert new.diagnostics
        back, how = _check(new, TextEdit(Span(i, i + len(new_text)), old_text))
        assert how == "item" and back.diagnostics == p.diagnostics


def test_edit_inside_identifier_relexes_one_token():
    p = kera_core.parse(BASE)
    i = p.text.index("helper") + 2
    new, how = _check(p, TextEdit(Span(i, i), "lp"))
    assert how == "token"
    assert "helplper" in new.text


def test_edits_at_token_boundaries_match_full_parse_and_relex_where_kinds_stay():
    # every boundary of every token: a letter, a digit, a dot or a space typed there, and
    # the character after it deleted
    p = kera_core.parse(BASE)
    raw = encode(p.text)
    bounds = sorted({t.span.start for t in p.tree.tokens()} | {len(raw)})
    relexed = 0
    for at in bounds:
        for typed in ("q", "7", ".", " "):
            _, how = _check(p, TextEdit(Span(at, at), typed))
            relexed += how == "token"
        if at < len(raw) and (raw[at] & 0xC0) != 0x80:
            _check(p, TextEdit(Span(at, _snap(raw, at + 1)), ""))
    assert relexed > len(bounds)  # most of them: the end of a name or literal, a space
    i = p.text.index("helper(") + len("helper")
    new, how = _check(p, TextEdit(Span(i, i), "2"))  # the end of a name
    assert how == "token" and "helper2(" in new.text
    i = p.text.index("2.0") + len("2.0")
    assert _check(p, TextEdit(Span(i, i), "5"))[1] == "token"  # the end of a literal
    i = p.text.index(" x > 1.0")
    assert _check(p, TextEdit(Span(i, i), " "))[1] == "token"  # a space next to a token


def test_edit_in_body_reparses_block_and_shares_other_items():
    p = kera_core.parse(BASE)
    i = p.text.index("let x")
    new, how = _check(p, TextEdit(Span(i, i), "let w = 1; "))
    assert how == "block"
    old_items = list(p.green.children)
    new_items = list(new.green.children)
    # the untouched items are the very same green objects
    assert old_items[0] is new_items[0]
    assert old_items[-1] is new_items[-1]


def test_blank_line_change_between_comment_and_item_is_full():
    text = "// c\n\nfn f() {}\n"
    p = kera_core.parse(text)
    _check(p, TextEdit(Span(5, 6), ""))
