"""The server owns the text: any sequence of incremental edits — valid and hostile
positions, every position encoding, every kind of line ending — leaves the document equal
to an independent model of LSP's rules, and its analysis equal to the final text's opened
fresh. Edits go through exactly what the server's didChange calls."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kera_core.ide import outline, tokens
from kera_core.workspace import Change, Workspace

PIECES = ["fn f() {", "}", "let x = 1;", " ", "a", "\n", "\r\n", "\r", "\u2028", "\x0c", "é",
          "😀", "x😀y", "(", ")", ";", "// c\r", "\t"]  # fmt: skip
ENCODINGS = ["utf-8", "utf-16", "utf-32"]
LINE_END = re.compile(r"\r\n|\r|\n")  # LSP: only these end lines


def units(ch: str, enc: str) -> int:
    if enc == "utf-8":
        return len(ch.encode("utf-8"))
    if enc == "utf-16":
        return 2 if ord(ch) > 0xFFFF else 1
    return 1


def model_offset(text: str, line: int, col: int, enc: str) -> int:
    """LSP position -> index into ``text``, by the specification's rules."""
    line, col = max(line, 0), max(col, 0)
    starts, ends = [0], []
    for m in LINE_END.finditer(text):
        ends.append(m.start())
        starts.append(m.end())
    ends.append(len(text))
    if line >= len(starts):
        return len(text)
    i, used = starts[line], 0
    while i < ends[line]:  # past the line's end: clamp to it (before its terminator)
        u = units(text[i], enc)
        if used + u > col:  # inside a character (a surrogate pair): before it
            break
        used += u
        i += 1
    return i


def model_apply(text: str, rng: tuple[int, int, int, int], new: str, enc: str) -> str:
    a = model_offset(text, rng[0], rng[1], enc)
    b = model_offset(text, rng[2], rng[3], enc)
    a, b = min(a, b), max(a, b)
    return text[:a] + new + text[b:]


texts = st.lists(st.sampled_from(PIECES), max_size=25).map("".join)
coords = st.integers(-2, 30)
edits = st.lists(
    st.tuples(st.tuples(coords, coords, coords, coords), texts, st.booleans()), max_size=12
)


@settings(max_examples=150, deadline=None)
@given(texts, edits, st.sampled_from(ENCODINGS))
def test_any_edit_sequence_matches_the_model_and_a_fresh_open(start, seq, enc) -> None:
    ws = Workspace()
    doc = ws.open("file:///p.kera", start, 1)
    model = start
    version = 1
    for rng, new, full in seq:
        version += 1
        change = Change(new) if full else Change(new, rng)
        ws.change("file:///p.kera", version, [change], enc)
        model = new if full else model_apply(model, rng, new, enc)
        assert doc.text == model
    assert doc.version == version
    a = doc.analysis()
    fresh = Workspace().open("file:///fresh.kera", model, version).analysis()
    assert [(d.code, d.span, d.message) for d in a.diagnostics] == [
        (d.code, d.span, d.message) for d in fresh.diagnostics
    ]
    assert tokens.semantic_tokens(a, enc) == tokens.semantic_tokens(fresh, enc)
    assert [(s.name, s.span) for s in outline.document_symbols(a)] == [
        (s.name, s.span) for s in outline.document_symbols(fresh)
    ]
