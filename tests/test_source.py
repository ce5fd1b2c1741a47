"""Positions: byte offsets <-> (line, UTF-16 column) <-> (line, UTF-8 column)."""

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kera_core.source import (
    MAX_RUNS,
    LineIndex,
    Shifted,
    Span,
    decode,
    encode,
    slice_bytes,
    utf8_len,
)


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
@example("\r\n")
@example("a\r\nb\r\rc\n")
def test_every_char_boundary_round_trips(text):
    """Every character boundary maps to a position and back — but the one between the two
    characters of a `\r\n`, which no position names (a line ends before its terminator:
    the column past the end is clamped there, as LSP asks)."""
    idx = LineIndex(text)
    raw = text.encode()
    for i in range(len(text) + 1):
        off = len(text[:i].encode())
        inside_crlf = 0 < i < len(text) and text[i - 1] == "\r" and text[i] == "\n"
        line, col16 = idx.to_utf16(off)
        line8, col8 = idx.to_utf8(off)
        if inside_crlf:
            assert idx.from_utf16(line, col16) == off - 1  # the end of the line
            assert idx.from_utf8(line8, col8) == off - 1
        else:
            assert idx.from_utf16(line, col16) == off
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
    starts_char, ends_char, starts_byte = idx.tables()
    assert starts_char == starts
    assert ends_char == ends
    # byte starts: the UTF-8 lengths of the lines before, each line encoded on its own
    pieces = [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]
    assert starts_byte == [sum(map(utf8_len, pieces[:k])) for k in range(len(starts))]
    assert idx.len_bytes == utf8_len(text)


_EDIT_ALPHABET = st.sampled_from(
    ["a", "b", " ", "\n", "\r", "\r\n", "é", "€", "😀", "\udc80", "x\ny"]
)
_EDIT_TEXT = st.lists(_EDIT_ALPHABET, max_size=30).map("".join)


def _fields(ix: LineIndex) -> tuple:
    return (
        ix.text,
        *ix.tables(),
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


@settings(max_examples=300, deadline=None)
@given(
    start=st.lists(st.integers(0, 5), min_size=1, max_size=30),
    splices=st.lists(
        st.tuples(
            st.integers(0, 40),
            st.integers(0, 6),
            st.lists(st.integers(0, 3), max_size=4),
            st.integers(-5, 9),
        ),
        max_size=60,
    ),
)
def test_a_shifted_list_is_the_list_it_stands_for(start, splices) -> None:
    """Shifted.splice, item access and bisect_right against a plain list, over more
    splices than it keeps runs for (MAX_RUNS): the runs fold in and nothing changes."""
    from bisect import bisect_right
    from itertools import accumulate

    plain = list(accumulate(start))  # non-decreasing
    sh = Shifted(list(plain))
    for i, length, gaps, delta in splices:
        i = min(i, len(plain))
        j = min(i + length, len(plain))
        lo = plain[i - 1] if i else 0
        items = list(accumulate(gaps, initial=lo))[1:]  # non-decreasing from plain[i - 1]
        top = items[-1] if items else lo
        delta = max(delta, top - plain[j]) if j < len(plain) else delta  # stays ordered
        plain = plain[:i] + items + [v + delta for v in plain[j:]]
        sh = sh.splice(i, j, items, delta)
        assert len(sh.cuts) <= MAX_RUNS
        assert sh.to_list() == plain
        assert [sh[k] for k in range(len(plain))] == plain
        for x in range(-1, (plain[-1] if plain else 0) + 2):
            assert sh.bisect_right(x) == bisect_right(plain, x)


def test_a_long_edit_sequence_splices_like_fresh_builds() -> None:
    """100 edits on scattered lines of a multi-byte text (runs added, folded past
    MAX_RUNS, lines added and removed): each spliced index equals a fresh one."""
    text = "".join(f"fn f{k}() {{ é{k} 😀 }}\n" for k in range(200))
    ix = LineIndex(text)
    for k in range(100):
        line = (k * 37) % ix.line_count
        at = ix.line_start(line) + (k % 4)
        inserted = ["x", "ü\n", "", "😀"][k % 4]
        length = 1 if k % 3 == 0 else 0
        a, b = ix.byte_to_char(at), ix.byte_to_char(at + length)
        new_text = text[:a] + inserted + text[b:]
        spliced = ix.after_edit(ix.char_to_byte(a), ix.char_to_byte(b), inserted, new_text)
        assert spliced is not None
        assert _fields(spliced) == _fields(LineIndex(new_text)), k
        text, ix = new_text, spliced


@settings(max_examples=200, deadline=None)
@given(text=_EDIT_TEXT, extra=st.lists(st.integers(-3, 200), max_size=10))
def test_positions_at_once_are_those_one_at_a_time(text: str, extra: list) -> None:
    """LineIndex.positions (a file's diagnostics converted at once) gives, for every offset
    — each byte, inside multi-byte characters, out of range — what to_utf16, to_utf8 and
    to_chars give."""
    ix = LineIndex(text)
    offsets = [*range(ix.len_bytes + 2), *extra]
    one = {"utf-16": ix.to_utf16, "utf-8": ix.to_utf8, "utf-32": ix.to_chars}
    for enc, conv in one.items():
        assert ix.positions(offsets, enc) == {o: conv(o) for o in offsets}, enc
