"""The lexer: text -> tokens, trivia included. It never fails.

Every byte of the input belongs to exactly one token. Whitespace, comments and doc
comments are trivia tokens kept in the token stream so the tree is lossless. Bad
input becomes ``ERROR_TOKEN`` tokens (or a literal with a diagnostic) — never an
exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, error, quoted
from kera_core.source import Span, decode, utf8_len
from kera_core.syntax.kinds import FAST_KINDS, KEYWORDS, PUNCTUATION, SyntaxKind

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

_PUNCT_RE = "|".join(re.escape(t) for t, _ in PUNCTUATION)
_PUNCT_KIND = {t: k for t, k in PUNCTUATION}

_BAD = "\udc80-\udcff"  # lone surrogates stand for invalid UTF-8 bytes

_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\n\f\v]+)"
    r"|(?P<doc>///(?!/)[^\n]*)"
    r"|(?P<line>//[^\n]*)"
    r"|(?P<block>/\*)"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<float>[0-9][0-9_]*\.[0-9][0-9_]*(?:[eE][+-]?[0-9_]+)?[A-Za-z0-9_]*"
    r"|[0-9][0-9_]*[eE][+-]?[0-9][0-9_]*[A-Za-z0-9_]*)"
    r"|(?P<int>[0-9][A-Za-z0-9_]*)"
    r'|(?P<string>"(?:[^"\\\n]|\\.)*")'
    r'|(?P<unterminated>"(?:[^"\\\n]|\\.)*\\?)'
    rf"|(?P<punct>{_PUNCT_RE})"
    rf"|(?P<bad>[{_BAD}]+)"
    r"|(?P<other>.|\n)",
    re.DOTALL,
)

_G_WS = _TOKEN_RE.groupindex["ws"]
_G_IDENT = _TOKEN_RE.groupindex["ident"]
_G_PUNCT = _TOKEN_RE.groupindex["punct"]
_BAD_CHECKED = frozenset({K.COMMENT, K.DOC_COMMENT, K.STRING})

_INT_SUFFIXES = "i8|i16|i32|i64|u8|u16|u32|u64|f32|f64"
_VALID_INT = re.compile(
    rf"(?:0x[0-9A-Fa-f][0-9A-Fa-f_]*|0o[0-7][0-7_]*|0b[01][01_]*|[0-9][0-9_]*)(?:{_INT_SUFFIXES})?"
)
_VALID_FLOAT = re.compile(r"[0-9][0-9_]*(?:\.[0-9][0-9_]*)?(?:[eE][+-]?[0-9][0-9_]*)?(?:f32|f64)?")
_ESCAPE = re.compile(r"\\(?:[nrt0\\\"']|u\{[0-9A-Fa-f]{1,6}\})")
_ANY_ESCAPE = re.compile(r"\\.", re.DOTALL)
_BAD_RUN = re.compile(f"[{_BAD}]+")


@dataclass(slots=True)
class LexedText:
    """The token stream of a text: parallel lists of kinds and texts, plus diagnostics."""

    kinds: list[SyntaxKind] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.kinds)


def _block_comment_end(text: str, start: int) -> int:
    """End (exclusive) of a nested block comment starting at ``start``; -1 if unterminated."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        j = text.find("/*", i)
        k = text.find("*/", i)
        if k < 0:
            return -1
        if 0 <= j < k:
            depth += 1
            i = j + 2
        else:
            depth -= 1
            i = k + 2
            if depth == 0:
                return i
    return -1


def lex(source: str | bytes, base: int = 0) -> LexedText:
    """Split ``source`` into tokens; ``base`` offsets diagnostics (for relexing a slice)."""
    text = decode(source)
    out = LexedText()
    kinds = out.kinds
    texts = out.texts
    diags = out.diagnostics
    ascii_only = text.isascii()
    pos = 0
    byte = base
    n = len(text)
    match = _TOKEN_RE.match
    keyword = KEYWORDS.get
    punct_kind = _PUNCT_KIND
    ident = K.IDENT
    whitespace = K.WHITESPACE
    bad_checked = _BAD_CHECKED
    append_kind = kinds.append
    append_text = texts.append
    g_ws, g_ident, g_punct = _G_WS, _G_IDENT, _G_PUNCT
    while pos < n:
        m = match(text, pos)
        idx = m.lastindex
        end = m.end()
        # The common tokens first, dispatched on the group number (no diagnostics).
        if idx == g_ws:
            append_kind(whitespace)
            append_text(text[pos:end])
            byte += end - pos  # whitespace is ASCII
            pos = end
            continue
        if idx == g_ident:
            tok = text[pos:end]
            append_kind(keyword(tok, ident))
            append_text(tok)
            byte += end - pos  # identifiers are ASCII
            pos = end
            continue
        if idx == g_punct:
            tok = text[pos:end]
            append_kind(punct_kind[tok])
            append_text(tok)
            byte += end - pos  # punctuation is ASCII
            pos = end
            continue
        group = m.lastgroup
        if group == "ws":
            kind = K.WHITESPACE
        elif group == "ident":
            kind = KEYWORDS.get(m.group(), K.IDENT)
        elif group == "punct":
            kind = _PUNCT_KIND[m.group()]
        elif group == "doc" or group == "line":
            kind = K.DOC_COMMENT if group == "doc" else K.COMMENT
        elif group == "int" or group == "float":
            kind = K.INT if group == "int" else K.FLOAT
            tok = m.group()
            valid = (_VALID_INT if kind == K.INT else _VALID_FLOAT).fullmatch(tok)
            if not valid:
                diags.append(
                    error(
                        "K0005",
                        Span(byte, byte + len(tok)),
                        f"invalid number literal `{quoted(tok)}`",
                    )
                )
        elif group == "string":
            kind = K.STRING
            tok = m.group()
            for esc in _ANY_ESCAPE.finditer(tok):
                if not _ESCAPE.match(tok, esc.start()):
                    s = byte + utf8_len(tok[: esc.start()])
                    diags.append(
                        error(
                            "K0006",
                            Span(s, s + utf8_len(esc.group())),
                            f"unknown escape `{esc.group()}` in string literal",
                        )
                    )
        elif group == "unterminated":
            kind = K.ERROR_TOKEN
            tok = m.group()
            diags.append(
                error(
                    "K0003",
                    Span(byte, byte + utf8_len(tok)),
                    'unterminated string literal: add a closing `"` before the end of the line',
                )
            )
        elif group == "block":
            close = _block_comment_end(text, pos)
            if close < 0:
                end = n
                kind = K.ERROR_TOKEN
                diags.append(
                    error(
                        "K0004",
                        Span(byte, byte + 2),
                        "unterminated block comment: add a closing `*/`",
                    )
                )
            else:
                end = close
                kind = K.COMMENT
        elif group == "bad":
            kind = K.ERROR_TOKEN
            diags.append(
                error(
                    "K0001",
                    Span(byte, byte + (end - pos)),
                    "invalid UTF-8 in source" + ("" if end - pos == 1 else f" ({end - pos} bytes)"),
                )
            )
        else:  # other: one stray character
            kind = K.ERROR_TOKEN
            ch = m.group()
            diags.append(
                error(
                    "K0002",
                    Span(byte, byte + utf8_len(ch)),
                    f"unexpected character {ch!r} (U+{ord(ch):04X})",
                )
            )
        tok = text[pos:end]
        if not ascii_only and kind in bad_checked:
            for bad in _BAD_RUN.finditer(tok):
                s = byte + utf8_len(tok[: bad.start()])
                diags.append(
                    error("K0001", Span(s, s + len(bad.group())), "invalid UTF-8 in source")
                )
        append_kind(kind)
        append_text(tok)
        byte += (end - pos) if ascii_only else utf8_len(tok)
        pos = end
    return out
