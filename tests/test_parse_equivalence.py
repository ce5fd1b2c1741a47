"""The fast front end against plain reference versions of itself, and its caches against
a cold run.

The lexer splits the whole text with one ``findall`` and keeps a memo of clean tokens; the
builder interns every token up front and places trivia by slicing; the node cache looks
nodes up by their children's hashes. Each shortcut is checked here against the simple
version it replaces, on generated programs, random mutations of them and arbitrary text:

* ``lex`` == a token-at-a-time reference lexer (same kinds, texts, diagnostics), with the
  memo cold or warm;
* the builder == a reference builder that walks the events one at a time;
* a parse through the shared node cache == a parse with a fresh cache, and incremental
  reparsing == a cold parse of the edited text.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import kera_core.syntax.lexer as lexer_mod
from kera_core.source import Span, decode, encode, utf8_len
from kera_core.stack import deep_recursion
from kera_core.syntax.builder import ITEM_KINDS, TreeBuilder, _n_attached, significant
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.lexer import LexedText, lex
from kera_core.syntax.parse import parse
from kera_core.syntax.parser import grammar
from kera_core.syntax.parser.events import FP_SHIFT, INNER_SHIFT, KIND_MASK, LEAF, TOMBSTONE, WRAP
from kera_core.syntax.parser.parser import Parser
from kera_core.syntax.reparse import TextEdit, reparse
from kera_core.syntax.tree import GreenNode, GreenToken, NodeCache

PROGRAM = """/// doc for f
pub fn f[N](a: f32, x: &mut f32[N] @device) -> f32 ! io {
    let mut s = 0.0; // trailing
    for i in 0..N { s += x[i] * a as f32; }
    if s > 1.0 { s } else if s < -1.0 { -s } else { P { x: s, y: 2.0 }.x }
}

/* a /* nested */ block */
struct P { pub x: f32, y: f32 }
const C: i64 = 0x1F + 1_000u8 - "s\\n".len;
"""

PIECES = ["a", "1", "1.5e3", "0b102", ".", "..", " ", "\n", "\n\n", "{", "}", "(", ")", "[",
          "]", ";", ",", ":", "+", "-", "*", "/", "&", "!", "=", "==", "<", "@", "as ", "let ",
          "fn ", "pub ", "struct ", "const ", "if ", "else ", "for ", "in ", "while ",
          "return ", '"', '"\\q"', "/*", "*/", "//", "///", "x", "é", "💥", "\udc80", "#",
          "\t"]  # fmt: skip

mutations = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 8), st.lists(st.sampled_from(PIECES), max_size=4)),
    max_size=10,
)


def mutate(text: str, seq) -> str:
    for where, length, pieces in seq:
        i = int(where * len(text))
        text = text[:i] + "".join(pieces) + text[i + length :]
    return text


texts = st.one_of(
    mutations.map(lambda seq: mutate(PROGRAM, seq)),
    st.lists(st.sampled_from(PIECES), max_size=60).map("".join),
    st.text(max_size=200),
)


# --- the lexer -------------------------------------------------------------------


def lex_reference(source: str | bytes, base: int = 0) -> LexedText:
    """One token at a time: the master pattern at each position, no memo."""
    text = decode(source)
    out = LexedText()
    ascii_only = text.isascii()
    pos = 0
    byte = base
    while pos < len(text):
        m = lexer_mod._TOKEN_RE.match(text, pos)
        end = m.end()
        if m.lastgroup == "block":
            close = lexer_mod._block_comment_end(text, pos)
            end = len(text) if close < 0 else close
        tok = text[pos:end]
        kind, _ = lexer_mod._classify(text, pos, tok, byte, ascii_only, out.diagnostics)
        out.kinds.append(kind)
        out.texts.append(tok)
        byte += len(tok) if ascii_only else utf8_len(tok)
        pos = end
    return out


def _same_lex(a: LexedText, b: LexedText) -> None:
    assert a.kinds == b.kinds
    assert a.texts == b.texts
    assert a.diagnostics == b.diagnostics


@settings(max_examples=300)
@given(texts, st.integers(0, 3))
def test_lexer_equals_the_token_at_a_time_reference(text, base):
    ref = lex_reference(text, base)
    assert "".join(ref.texts) == text
    _same_lex(lex(text, base), ref)
    saved = dict(lexer_mod._MEMO)
    learn_min = lexer_mod._LEARN_MIN
    try:  # a cold memo gives the same answer as a warm one, learning first (0) or not
        for lexer_mod._LEARN_MIN in (learn_min, 0):
            lexer_mod._MEMO.clear()
            lexer_mod._MEMO.update(lexer_mod._MEMO_SEED)
            _same_lex(lex(text, base), ref)
            _same_lex(lex(text, base), ref)
    finally:
        lexer_mod._LEARN_MIN = learn_min
        lexer_mod._MEMO.clear()
        lexer_mod._MEMO.update(saved)


@given(st.binary(max_size=200))
def test_lexer_equals_the_reference_on_bytes(raw):
    _same_lex(lex(raw), lex_reference(raw))


def test_cold_lexer_classifies_each_distinct_text_once(monkeypatch):
    """A cold memo and a file of many repeated tokens (a new process on a big file): each
    distinct clean text goes through ``_classify`` once, the rest are memo hits, and tokens
    with diagnostics (invalid numbers, bad escapes, stray characters, non-ASCII comments,
    unterminated comments) still come out in order, as the reference gives them."""
    text = (PROGRAM + '\nlet s = "a\\q"; let n = 1e; $ /* x */ // café\n') * 40 + "/* open"
    calls = []
    classify = lexer_mod._classify
    monkeypatch.setattr(lexer_mod, "_classify", lambda *a: calls.append(a[2]) or classify(*a))
    monkeypatch.setattr(lexer_mod, "_MEMO", dict(lexer_mod._MEMO_SEED))
    out = lex(text, 2)
    mine = calls[:]  # the reference below classifies every token: not counted
    _same_lex(out, lex_reference(text, 2))
    assert {d.code for d in out.diagnostics} >= {"K0002", "K0004", "K0005", "K0006"}
    assert len(mine) * 4 < len(out.texts)  # not one call per token
    memoised = set(mine) & set(lexer_mod._MEMO)
    assert memoised and all(mine.count(t) == 1 for t in memoised)  # clean: classified once


def test_lexer_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(lexer_mod, "_MEMO_LIMIT", 10)
    text = " ".join(f"name{i}" for i in range(100))
    _same_lex(lex(text), lex_reference(text))
    _same_lex(lex(text), lex_reference(text))
    assert len(lexer_mod._MEMO) <= 10 + len(lexer_mod._MEMO_SEED) + 100


# --- the builder ------------------------------------------------------------------


def build_reference(lexed: LexedText, events: list[int], errors, base: int = 0):
    """The builder's rules one event at a time: trivia scanned token by token, plain nodes."""
    kinds, texts = lexed.kinds, lexed.texts
    trivia = {K.WHITESPACE, K.COMMENT, K.DOC_COMMENT}
    stack: list[tuple[K, list]] = []
    diags = []
    pos = 0
    byte = base
    result = None

    def emit(children):
        nonlocal pos, byte
        tok = GreenToken(kinds[pos], texts[pos])
        children.append(tok)
        byte += tok.text_len
        pos += 1

    def n_trivia():
        i = pos
        while i < len(kinds) and kinds[i] in trivia:
            i += 1
        return i - pos

    def start(kind):
        if not stack:
            stack.append((kind, []))
            return
        n = n_trivia()
        attached = _n_attached(kinds, texts, pos, n) if kind in ITEM_KINDS else 0
        for _ in range(n - attached):
            emit(stack[-1][1])
        stack.append((kind, []))
        for _ in range(attached):
            emit(stack[-1][1])

    def token():
        for _ in range(n_trivia()):
            emit(stack[-1][1])
        if pos < len(kinds):
            emit(stack[-1][1])

    def finish():
        nonlocal result
        if len(stack) == 1:
            while pos < len(kinds):
                emit(stack[-1][1])
        kind, children = stack.pop()
        node = GreenNode(kind, tuple(children))
        if stack:
            stack[-1][1].append(node)
        else:
            result = node

    events = list(events)
    for i, ev in enumerate(events):
        if ev == 0:
            token()
        elif ev == 1:
            finish()
        elif ev < 0:
            code, message = errors[-ev - 1]
            from kera_core.diagnostics import error

            at = byte + sum(utf8_len(texts[j]) for j in range(pos, pos + n_trivia()))
            j = pos + n_trivia()
            end = at + utf8_len(texts[j]) if j < len(kinds) else at
            d = error(code, Span(at, end), message)
            if not diags or diags[-1] != d:
                diags.append(d)
        else:
            leaf = ev & LEAF  # a whole node around the next token
            chain = []
            j = i
            while True:
                e = events[j]
                if e & KIND_MASK != TOMBSTONE:
                    chain.append(K(e & KIND_MASK))
                events[j] = TOMBSTONE
                if not e >> FP_SHIFT:
                    break
                j += e >> FP_SHIFT
            for kind in reversed(chain):
                start(kind)
            if ev & WRAP:  # a whole node around a leaf around the next token
                start(K((ev >> INNER_SHIFT) & KIND_MASK))
                token()
                finish()
                finish()
            elif leaf:
                token()
                finish()
    assert result is not None and not stack
    return result, diags


def _events(lexed: LexedText):
    sig = significant(lexed.kinds)
    p = Parser([lexed.kinds[i] for i in sig])
    with deep_recursion():
        grammar.source_file(p)
    return sig, p


@settings(max_examples=300)
@given(texts)
def test_builder_equals_the_event_at_a_time_reference(text):
    lexed = lex(text)
    sig, p = _events(lexed)
    ref, ref_diags = build_reference(lexed, p.events, p.errors)
    builder = TreeBuilder(lexed, NodeCache(), 0, sig)
    green = builder.run(list(p.events), p.errors)
    assert str(green) == text
    assert green == ref
    assert builder.diagnostics == ref_diags


# --- caches against a cold run ------------------------------------------------------


@settings(max_examples=200)
@given(texts)
def test_shared_cache_equals_a_cold_cache(text):
    warm = parse(text)  # the process-wide cache, warmed by every other test
    again = parse(text)
    cold = parse(text, NodeCache())
    for p in (warm, again):
        assert p.green == cold.green
        assert p.diagnostics == cold.diagnostics
        assert str(p.green) == text


@settings(max_examples=100)
@given(mutations, st.lists(st.tuples(st.floats(0, 1), st.integers(0, 6), st.sampled_from(PIECES)),
                           min_size=1, max_size=8))  # fmt: skip
def test_reparse_equals_a_cold_parse(seq, edits):
    p = parse(mutate(PROGRAM, seq))
    for where, length, piece in edits:
        raw = encode(p.text)
        s = int(where * len(raw))
        while s < len(raw) and (raw[s] & 0xC0) == 0x80:
            s += 1
        e = min(len(raw), s + length)
        while e < len(raw) and (raw[e] & 0xC0) == 0x80:
            e += 1
        p, how = reparse(p, TextEdit(Span(s, e), piece))
        cold = parse(p.text, NodeCache())
        assert p.green == cold.green, how
        assert p.diagnostics == cold.diagnostics, how


def test_node_cache_keeps_colliding_children_apart():
    cache = NodeCache()
    a, b = GreenToken(K.IDENT, "a"), GreenToken(K.IDENT, "b")
    b._hash = a._hash  # force a collision of the children's hashes
    na = cache.node(K.NAME, (a,))
    nb = cache.node(K.NAME, (b,))
    assert na is not nb
    assert str(na) == "a" and str(nb) == "b"
    assert cache.node(K.NAME, (GreenToken(K.IDENT, "a"),)) is na
    b2 = GreenToken(K.IDENT, "b")
    b2._hash = a._hash
    assert cache.node(K.NAME, (b2,)) is nb


def _shape(green: GreenNode) -> list[tuple[int, K, str | None]]:
    """Every element in order: its depth, kind and (a token's) text."""
    out = []
    stack = [(green, 0)]
    while stack:
        el, depth = stack.pop()
        out.append((depth, el.kind, el.text if el.is_token else None))
        if not el.is_token:
            stack += [(c, depth + 1) for c in reversed(el.children)]
    return out


def test_leaf_and_wrap_memos_keep_tokens_with_equal_hashes_apart():
    """The builder's memos of leaves and wraps are keyed by token hash: a token whose hash
    equals another's still gets its own node (the memo's hit must hold the very token)."""
    text = "fn f(a: i32, b: i32) -> i32 { let c: i32 = a + b; a * b + c }\n"
    cache = NodeCache()
    a, b = cache.token(K.IDENT, "a"), cache.token(K.IDENT, "b")
    b._hash = a._hash  # force a collision of the two names' hashes
    for _ in range(2):  # cold memos, then warm ones
        p = parse(text, cache)
        assert str(p.green) == text
        assert _shape(p.green) == _shape(parse(text, NodeCache()).green)  # hashes differ
        names = [t for t in p.green.tokens() if t.kind == K.IDENT]
        assert [t.text for t in names] == ["f", "a", "i32", "b", "i32", "i32", "c", "i32",
                                           "a", "b", "a", "b", "c"]  # fmt: skip
        assert all(t is cache.tokens[(t.kind, t.text)] for t in names)


def test_a_text_first_interned_with_another_kind_keeps_each_tokens_kind():
    """Tokens are found by text first (``NodeCache.by_text``); a text whose first token had
    another kind falls back to ``(kind, text)``."""
    cache = NodeCache()
    other = cache.token(K.ERROR_TOKEN, "fn")
    assert cache.by_text["fn"] is other
    text = "fn f(x: i32) -> i32 { x }\n"
    for _ in range(2):
        p = parse(text, cache)
        toks = list(p.green.tokens())
        assert [t.kind for t in toks] == lex(text).kinds
        assert all(t is cache.tokens[(t.kind, t.text)] for t in toks)
        assert not any(t is other for t in toks)
        assert p.green == parse(text, NodeCache()).green


def test_a_wrap_that_is_the_root_or_has_forward_parents():
    """``leaf2``'s single WRAP event: as the first event (the root), and preceded by a
    parent that becomes the root; both against the event-at-a-time reference."""

    def root_wrap(p: Parser) -> None:
        p.leaf2(K.PATH_EXPR, K.NAME_REF)

    def preceded(p: Parser) -> None:
        lhs = p.leaf2(K.PATH_EXPR, K.NAME_REF)
        m = p.precede(lhs)
        p.bump()
        p.leaf2(K.PATH_EXPR, K.NAME_REF)
        p.complete(m, K.BIN_EXPR)

    for rule, text in ((root_wrap, "  x  // c\n"), (preceded, " a /* c */ + \n b ")):
        lexed = lex(text)
        sig = significant(lexed.kinds)
        p = Parser([lexed.kinds[i] for i in sig])
        rule(p)
        ref, _ = build_reference(lexed, p.events, p.errors)
        for cache in (NodeCache(), NodeCache()):
            green = TreeBuilder(lexed, cache, 0, sig).run(list(p.events), p.errors)
            assert str(green) == text
            assert green == ref
