"""The lexer: text -> tokens, trivia included. It never fails.

Every byte of the input belongs to exactly one token. Whitespace, comments and doc
comments are trivia tokens kept in the token stream so the tree is lossless. Bad
input becomes ``ERROR_TOKEN`` tokens (or a literal with a diagnostic) — never an
exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import is_

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

# The same alternatives without groups: ``findall`` then returns the token texts.
_SPLIT_RE = re.compile(re.sub(r"\(\?P<\w+>", "(?:", _TOKEN_RE.pattern), re.DOTALL)
assert _SPLIT_RE.groups == 0

# Clean ASCII token text -> kind (see ``lex``); shared by every call, bounded in size.
_MEMO_SEED: dict[str, SyntaxKind] = {**KEYWORDS, **_PUNCT_KIND}
_MEMO: dict[str, SyntaxKind] = dict(_MEMO_SEED)
_MEMO_LIMIT = 200_000
# Below this many misses, :func:`lex` classifies them one by one without :func:`_learn`.
_LEARN_MIN = 256
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
    """Split ``source`` into tokens; ``base`` offsets diagnostics (for relexing a slice).

    Two passes. ``findall`` with the master pattern splits the whole text in C (a block
    comment, which nests, is finished by hand and the scan resumes after it); then each
    token text gets its kind from a memo of clean tokens (ASCII text that lexes without a
    diagnostic: its kind depends on its text alone). Tokens missing from the memo go
    through :func:`_classify`, the reference per-token lexer, with their byte offset; when
    there are many (a new process), :func:`_learn` first memoises each distinct clean text
    once, so that only the others are classified one by one.
    """
    text = decode(source)
    out = LexedText()
    n = len(text)
    if not n:
        return out
    texts = out.texts
    findall = _SPLIT_RE.findall
    pos = 0
    while True:
        part = findall(text, pos)
        if "/*" not in part:
            texts += part
            break
        k = part.index("/*")
        del part[k:]
        texts += part
        at = pos + sum(map(len, part))
        close = _block_comment_end(text, at)
        if close < 0:
            texts.append(text[at:])
            break
        texts.append(text[at:close])
        pos = close
        if pos >= n:
            break
    memo = _MEMO
    kinds = out.kinds = list(map(memo.get, texts))
    if None not in kinds:
        return out
    ascii_only = text.isascii()
    if len(memo) > _MEMO_LIMIT:
        memo.clear()
        memo.update(_MEMO_SEED)
    if kinds.count(None) > _LEARN_MIN and _learn(text, texts, kinds, ascii_only):
        kinds = out.kinds = list(map(memo.get, texts))
        if None not in kinds:
            return out
    # The rest, in order (diagnostics come out in token order).
    diags = out.diagnostics
    index = kinds.index
    i = index(None)
    char = sum(map(len, texts[:i]))
    byte = base + (char if ascii_only else sum(map(utf8_len, texts[:i])))
    last = i
    while True:
        tok = texts[i]
        if i > last:  # memo hits: ASCII, so as many bytes as characters
            skipped = sum(map(len, texts[last:i]))
            char += skipped
            byte += skipped
        kind, clean = _classify(text, char, tok, byte, ascii_only, diags)
        kinds[i] = kind
        if clean and tok.isascii():
            memo[tok] = kind
        char += len(tok)
        byte += len(tok) if ascii_only else utf8_len(tok)
        last = i + 1
        try:
            i = index(None, last)
        except ValueError:
            return out


def _learn(text: str, texts: list[str], kinds: list[SyntaxKind | None], ascii_only: bool) -> bool:
    """Classify the first occurrence of each distinct token text missing from the memo and
    memoise the clean ones; whether any was. A cold file (a new process) has a few thousand
    distinct texts among a hundred thousand misses: the misses are then mostly memo hits.

    Diagnostics are thrown away here: a clean token has none, and every other one is
    classified again, in token order, by :func:`lex`.
    """
    missing = list(compress(range(len(kinds)), map(is_, kinds, repeat(None))))
    # Reversed, so that each text keeps its first index (later keys overwrite earlier ones).
    first = dict(zip(map(texts.__getitem__, reversed(missing)), reversed(missing), strict=True))
    if len(first) == len(missing):  # every miss is distinct: nothing to gain
        return False
    memo = _MEMO
    scratch: list[Diagnostic] = []
    learnt = False
    char = last = 0
    for i in sorted(first.values()):
        char += sum(map(len, texts[last:i]))
        last = i
        tok = texts[i]
        kind, clean = _classify(text, char, tok, 0, ascii_only, scratch)
        if clean and tok.isascii():
            memo[tok] = kind
            learnt = True
        scratch.clear()
    return learnt


def _classify(
    text: str, pos: int, tok: str, byte: int, ascii_only: bool, diags: list[Diagnostic]
) -> tuple[SyntaxKind, bool]:
    """The kind of the token ``tok`` found at ``pos`` (byte offset ``byte``), reporting its
    diagnostics; and whether it is clean (no diagnostic, kind fixed by its text alone)."""
    m = _TOKEN_RE.match(text, pos)
    end = pos + len(tok)
    n_diags = len(diags)
    group = m.lastgroup
    clean = True
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
        diags.append(
            error(
                "K0003",
                Span(byte, byte + utf8_len(tok)),
                'unterminated string literal: add a closing `"` before the end of the line',
            )
        )
    elif group == "block":
        clean = False  # its extent depends on what follows `/*`
        if _block_comment_end(text, pos) < 0:
            kind = K.ERROR_TOKEN
            diags.append(
                error(
                    "K0004",
                    Span(byte, byte + 2),
                    "unterminated block comment: add a closing `*/`",
                )
            )
        else:
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
    if not ascii_only and kind in _BAD_CHECKED:
        for bad in _BAD_RUN.finditer(tok):
            s = byte + utf8_len(tok[: bad.start()])
            diags.append(error("K0001", Span(s, s + len(bad.group())), "invalid UTF-8 in source"))
    return kind, clean and len(diags) == n_diags
