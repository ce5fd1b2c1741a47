"""The lexer never fails and every byte belongs to exactly one token."""

from hypothesis import given
from hypothesis import strategies as st

from kera_core.source import decode, encode, utf8_len
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.lexer import lex


def kinds(text):
    return [(k, t) for k, t in zip(*(lambda r: (r.kinds, r.texts))(lex(text)), strict=True)]


def test_tokens_and_trivia():
    assert kinds("let x = 1.5e3f32; // hi") == [
        (K.LET_KW, "let"),
        (K.WHITESPACE, " "),
        (K.IDENT, "x"),
        (K.WHITESPACE, " "),
        (K.EQ, "="),
        (K.WHITESPACE, " "),
        (K.FLOAT, "1.5e3f32"),
        (K.SEMI, ";"),
        (K.WHITESPACE, " "),
        (K.COMMENT, "// hi"),
    ]


def test_range_is_not_a_float():
    assert [k for k, _ in kinds("0..N")] == [K.INT, K.DOT2, K.IDENT]
    assert [k for k, _ in kinds("0..=9")] == [K.INT, K.DOT2EQ, K.INT]


def test_doc_comment_versus_line_comment():
    assert kinds("/// doc")[0][0] == K.DOC_COMMENT
    assert kinds("//// not doc")[0][0] == K.COMMENT


def test_nested_block_comment():
    r = lex("/* a /* b */ c */x")
    assert r.kinds == [K.COMMENT, K.IDENT]
    assert not r.diagnostics


def test_unterminated_block_comment():
    r = lex("x /* a /* b */")
    assert r.kinds[-1] == K.ERROR_TOKEN
    assert [d.code for d in r.diagnostics] == ["K0004"]
    assert r.diagnostics[0].span.start == 2


def test_unterminated_string_stops_at_end_of_line():
    r = lex('"abc\nx')
    assert r.kinds == [K.ERROR_TOKEN, K.WHITESPACE, K.IDENT]
    assert r.diagnostics[0].code == "K0003"


def test_bad_escape_and_bad_number():
    r = lex('"a\\q" 12abc 0x 1.5f16')
    assert [d.code for d in r.diagnostics] == ["K0006", "K0005", "K0005", "K0005"]


def test_invalid_utf8_is_an_error_token_with_byte_span():
    r = lex(b"a \xff\xfe b")
    assert r.kinds[2] == K.ERROR_TOKEN
    d = r.diagnostics[0]
    assert (d.code, d.span.start, d.span.end) == ("K0001", 2, 4)


def test_stray_character():
    r = lex("a $ b")
    assert r.kinds[2] == K.ERROR_TOKEN
    assert r.diagnostics[0].code == "K0002"
    assert "U+0024" in r.diagnostics[0].message


def test_non_ascii_spans_are_bytes():
    r = lex('"é" $')
    d = r.diagnostics[0]
    assert (d.span.start, d.span.end) == (5, 6)
    r = lex("é")  # identifiers are ASCII: a stray character, two bytes long
    assert (r.diagnostics[0].code, r.diagnostics[0].span.end) == ("K0002", 2)


def test_keywords():
    assert [k for k, _ in kinds("fn pub struct const as")][::2] == [
        K.FN_KW,
        K.PUB_KW,
        K.STRUCT_KW,
        K.CONST_KW,
        K.AS_KW,
    ]


@given(st.text())
def test_lossless_on_any_text(text):
    r = lex(text)
    assert "".join(r.texts) == text
    assert all(t for t in r.texts)
    for d in r.diagnostics:
        assert 0 <= d.span.start <= d.span.end <= utf8_len(text)


@given(st.binary())
def test_lossless_on_any_bytes(raw):
    r = lex(raw)
    assert encode("".join(r.texts)) == raw
    assert "".join(r.texts) == decode(raw)
