"""Positions: byte offsets <-> (line, UTF-16 column) <-> (line, UTF-8 column)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kera_core.source import LineIndex, Span, decode, encode, slice_bytes, utf8_len


def test_ascii_positions():
    idx = LineIndex("ab\ncd\n")
    assert idx.to_utf16(0) == (0, 0)
    assert idx.to_utf16(4) == (1, 1)
    assert idx.from_utf16(1, 1) == 4
    assert idx.to_utf16(6) == (2, 0)


def test_emoji_is_two_utf16_units_and_four_bytes():
    text = "a💥b\n"
    idx = LineIndex(text)
    b = text.index("b")
    assert utf8_len(text[:b]) == 5
    assert idx.to_utf16(5) == (0, 3)
    assert idx.to_utf8(5) == (0, 5)
    assert idx.to_chars(5) == (0, 2)
    assert idx.from_utf16(0, 3) == 5
    # a column inside the surrogate pair stays before the emoji
    assert idx.from_utf16(0, 2) == 1


def test_cjk_and_combining_marks():
    text = "x = 漢字;\ne\u0301 // é\n"
    idx = LineIndex(text)
    semi = utf8_len(text[: text.index(";")])
    assert semi == 4 + 6
    assert idx.to_utf16(semi) == (0, 6)
    line1 = utf8_len(text[: text.index("\n") + 1])
    after_mark = line1 + 3  # 'e' (1 byte) + U+0301 (2 bytes)
    assert idx.to_utf16(after_mark) == (1, 2)
    assert idx.from_utf16(1, 2) == after_mark


def test_offsets_inside_a_character_clamp_to_its_start():
    idx = LineIndex("漢x")
    assert idx.to_utf16(1) == (0, 0)
    assert idx.to_utf16(2) == (0, 0)
    assert idx.to_utf16(3) == (0, 1)


def test_past_the_end_clamps():
    idx = LineIndex("ab\ncd")
    assert idx.from_utf16(0, 99) == 2
    assert idx.from_utf16(9, 0) == 5
    assert idx.to_utf16(99) == (1, 2)


def test_crlf_line_text():
    idx = LineIndex("a\r\nb")
    assert idx.line_text(0) == "a"
    assert idx.to_utf16(3) == (1, 0)


def test_invalid_utf8_round_trips():
    raw = b"ok \xff\xfe end"
    text = decode(raw)
    assert encode(text) == raw
    assert utf8_len(text) == len(raw)
    assert slice_bytes(text, Span(3, 5)) == "\udcff\udcfe"


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=60))
def test_every_char_boundary_round_trips(text):
    idx = LineIndex(text)
    raw = text.encode()
    for i in range(len(text) + 1):
        off = len(text[:i].encode())
        line, col16 = idx.to_utf16(off)
        assert idx.from_utf16(line, col16) == off
        line8, col8 = idx.to_utf8(off)
        assert idx.from_utf8(line8, col8) == off
        assert idx.char_to_byte(i) == off
        assert idx.byte_to_char(off) == i
    assert idx.len_bytes == len(raw)


@given(
    st.lists(
        st.sampled_from(["a", "é", "😀", "\n", "\r", "\r\n", "\u2028", " ", "\udc80", "\ud800"]),
        max_size=40,
    ).map("".join)
)
def test_line_starts_match_a_line_by_line_reference(text):
    """The line tables (built with C-level splits, on the encoded text when it has no lone
    surrogate) are those of the rule itself: lines end at \\n, \\r\\n and \\r, and a byte
    start is the sum of the UTF-8 lengths of the lines before it."""
    idx = LineIndex(text)
    starts, ends = [0], []
    i = 0
    while i < len(text):
        if text[i] in "\r\n":
            ends.append(i)
            i += 2 if text[i : i + 2] == "\r\n" else 1
            starts.append(i)
        else:
            i += 1
    ends.append(len(text))
    assert idx._line_starts_char == starts
    assert idx._line_ends_char == ends
    # byte starts: the UTF-8 lengths of the lines before, each line encoded on its own
    pieces = [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    assert idx._line_starts_byte == [sum(map(utf8_len, pieces[:k])) for k in range(len(starts))]
    assert idx.len_bytes == utf8_len(text)


_EDIT_ALPHABET = st.sampled_from(
    ["a", "b", " ", "\n", "\r", "\r\n", "é", "€", "😀", "\udc80", "x\ny"]
)
_EDIT_TEXT = st.lists(_EDIT_ALPHABET, max_size=30).map("".join)


def _fields(ix: LineIndex) -> tuple:
    return (
        ix.text,
        ix._line_starts_char,
        ix._line_ends_char,
        ix._line_starts_byte,
        ix.len_bytes,
        ix._ascii,
    )


@settings(max_examples=600, deadline=None)
@given(
    text=_EDIT_TEXT,
    edits=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 8), _EDIT_TEXT), max_size=6),
)
def test_a_spliced_index_equals_a_fresh_one(text: str, edits: list) -> None:
    """LineIndex.after_edit (the language server's per-keystroke index) gives exactly the
    index a fresh build gives, or declines (None) — over line breaks of every kind, \\r\\n
    pairs split and joined at the edit's edges, multi-byte and escaped characters."""
    ix = LineIndex(text)
    for at, length, inserted in edits:
        n = len(text)
        a = min(at, n)
        b = min(a + length, n)
        start, end = utf8_len(text[:a]), utf8_len(text[:a]) + utf8_len(text[a:b])
        if not ix._strict:
            start, end = len(encode(text[:a])), len(encode(text[:b]))
        new_text = text[:a] + inserted + text[b:]
        spliced = ix.after_edit(start, end, inserted, new_text)
        fresh = LineIndex(new_text)
        if spliced is not None:
            assert _fields(spliced) == _fields(fresh), (text, a, b, inserted)
        text, ix = new_text, (spliced if spliced is not None else fresh)


def test_a_long_file_is_spliced_not_rebuilt() -> None:
    text = "fn f() {}\n" * 1000
    ix = LineIndex(text)
    new = text[:55] + "let x = 1;\nlet y = 2;\n" + text[55:]
    spliced = ix.after_edit(55, 55, "let x = 1;\nlet y = 2;\n", new)
    assert spliced is not None and _fields(spliced) == _fields(LineIndex(new))
