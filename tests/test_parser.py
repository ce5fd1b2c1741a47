"""The parser always terminates, never raises, and the tree is lossless."""

from hypothesis import given
from hypothesis import strategies as st

import kera_core
from kera_core.source import encode
from kera_core.syntax.kinds import KEYWORDS, PUNCTUATION
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.tree import NodeCache, SyntaxNode

TOKENS = [t for t, _ in PUNCTUATION] + list(KEYWORDS) + [
    "x", "N", "f32", "1", "2.5", '"s"', "@device", "// c\n", "/* c */", "/// d\n", " ", "\n",
]  # fmt: skip


def check(text):
    p = kera_core.parse(text)
    assert str(p.tree) == (
        text if isinstance(text, str) else text.decode("utf-8", "surrogateescape")
    )
    return p


def test_simple_function():
    p = check("pub fn f[N](x: &f32[N]) -> f32 ! io { sum(x) }")
    assert not p.diagnostics
    fn = next(p.tree.children())
    assert fn.kind == K.FN


def test_doc_comment_attaches_to_item_not_across_blank_line():
    p = check("// file header\n\n/// doc\nfn f() {}\n")
    fn = next(p.tree.children())
    assert fn.kind == K.FN
    assert str(fn).startswith("/// doc")


def test_errors_have_codes_and_spans():
    p = check("fn f() { let x = ; }")
    assert [d.code for d in p.diagnostics] == ["K0102"]
    d = p.diagnostics[0]
    assert p.text.encode()[d.span.start : d.span.end] == b";"


def test_recovery_does_not_cascade_across_items():
    p = check("fn a() { let = 1; }\nfn b() { 1 + }\nfn c() -> f32 { 2.0 }\n")
    fns = [c for c in p.tree.children() if c.kind == K.FN]
    assert len(fns) == 3
    assert len(p.diagnostics) == 2


def test_unclosed_block_then_next_item():
    p = check("fn a() {\n  let x = 1;\nfn b() {}\n")
    fns = [c for c in p.tree.children() if c.kind == K.FN]
    assert len(fns) == 2
    assert [d.code for d in p.diagnostics] == ["K0106"]


def test_chained_comparison_is_an_error():
    p = check("fn f() { a < b < c; }")
    assert [d.code for d in p.diagnostics] == ["K0105"]


def test_struct_literal_not_in_condition():
    p = check("fn f() { if x { 1 } else { 2 } }")
    assert not p.diagnostics


def test_deep_nesting_is_bounded():
    text = "fn f() { " + "(" * 5000 + "1" + ")" * 5000 + "; }"
    p = check(text)
    assert any(d.code == "K0108" for d in p.diagnostics)
    text = "fn f() " + "{" * 3000 + "}" * 3000
    p = check(text)
    assert any(d.code == "K0108" for d in p.diagnostics)
    text = "fn f() { x" + " = x" * 3000 + "; }"
    check(text)
    text = "fn f() { " + "-" * 3000 + "x; }"
    check(text)


def test_interning_shares_tokens_and_small_nodes():
    cache = NodeCache()
    p = kera_core.syntax.parse.parse("fn f() { x + x; x + x; }", cache)
    stmts = [n for n in p.tree.descendants() if n.kind == K.EXPR_STMT]
    assert stmts[0].green is stmts[1].green


def test_red_cursor_offsets_and_parents():
    p = check("fn f() {\n    let y = 1;\n}\n")
    tok = p.tree.token_at_offset(p.text.index("y"))
    assert tok.text == "y"
    assert [a.kind for a in tok.ancestors()][:2] == [K.NAME, K.LET_STMT]
    assert tok.span.start == p.text.index("y")
    assert tok.next_token().kind == K.WHITESPACE
    assert tok.prev_token().prev_token().kind == K.LET_KW


@given(st.text(max_size=300))
def test_round_trip_any_text(text):
    check(text)


@given(st.binary(max_size=300))
def test_round_trip_any_bytes(raw):
    p = kera_core.parse(raw)
    assert encode(str(p.tree)) == raw


@given(st.lists(st.sampled_from(TOKENS), max_size=120).map(" ".join))
def test_token_soup_terminates(text):
    p = check(text)
    for d in p.diagnostics:
        assert d.code.startswith("K0")


@given(st.lists(st.sampled_from(TOKENS), max_size=120).map("".join))
def test_token_soup_without_spaces(text):
    check(text)


def test_tree_positions_are_consistent():
    text = 'fn f() { let é = "💥"; }'
    p = check(text)
    offset = 0
    for tok in p.tree.tokens():
        assert tok.span.start == offset
        offset = tok.span.end
    assert offset == len(text.encode())
    assert isinstance(p.tree, SyntaxNode)
