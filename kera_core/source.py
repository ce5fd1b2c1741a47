"""Source text and positions.

UTF-8 bytes are the truth: every position inside Kera is a byte offset into the
UTF-8 encoding of the document. Conversions to (line, UTF-16 column) for LSP and
(line, UTF-8 column) / (line, character column) for terminals happen here, at the edge.

Text is held as a Python ``str``. Bytes that are not valid UTF-8 are decoded with
``surrogateescape`` so that each bad byte becomes one lone surrogate
(U+DC80..U+DCFF) and round-trips back to the same byte.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate


def decode(data: str | bytes) -> str:
    """Bytes to text, losslessly: invalid UTF-8 bytes survive as lone surrogates."""
    if isinstance(data, str):
        return data
    return data.decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    """Inverse of :func:`decode`; other lone surrogates are written as WTF-8."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def utf8_len(text: str) -> int:
    """Length in bytes of ``text`` once encoded; ASCII is the fast path."""
    if text.isascii():
        return len(text)
    return len(encode(text))


def _char_utf8_len(ch: str) -> int:
    o = ord(ch)
    if o < 0x80:
        return 1
    if 0xDC80 <= o <= 0xDCFF:  # an escaped invalid byte
        return 1
    if o < 0x800:
        return 2
    if o < 0x10000:
        return 3
    return 4


def _char_utf16_len(ch: str) -> int:
    return 2 if ord(ch) >= 0x10000 else 1


@dataclass(frozen=True, slots=True, init=False)
class Span:
    """A half-open byte range ``[start, end)`` in one document."""

    start: int
    end: int

    def __init__(self, start: int, end: int) -> None:
        # Frozen: the fields are set through their slot descriptors (what the generated
        # ``__init__`` does through ``object.__setattr__``, at a third of the cost).
        if start < 0 or end < start:
            raise ValueError(f"bad span {start}..{end}")
        _set_start(self, start)
        _set_end(self, end)

    def __len__(self) -> int:
        return self.end - self.start

    def contains(self, offset: int) -> bool:
        return self.start <= offset < self.end

    def covers(self, other: Span) -> bool:
        return self.start <= other.start and other.end <= self.end

    def shifted(self, delta: int) -> Span:
        return Span(self.start + delta, self.end + delta)


_set_start = Span.start.__set__  # type: ignore[attr-defined]
_set_end = Span.end.__set__  # type: ignore[attr-defined]


_LINE_END = re.compile(r"\r\n?|\n")
_LINE_END_BYTES = re.compile(rb"\r\n?|\n")
_PLUS_ONE = (1).__add__
_MINUS_ONE = (-1).__add__


def _strict_utf8(text: str) -> bytes | None:
    """``text`` as UTF-8, or None when it holds a lone surrogate (then :func:`encode`, and
    so :func:`utf8_len`, of a piece can differ from a slice of the whole)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


class LineIndex:
    """Maps byte offsets to lines and columns, and back.

    Built once per text; lookups are a binary search over line starts plus a scan
    of one line, so they stay cheap on large files.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts_char: list[int] = [0]  # char index of each line start
        self._line_ends_char: list[int] = []  # char index where each line's content ends
        self._line_starts_byte: list[int] = [0]
        ascii_only = text.isascii()
        self._ascii = ascii_only
        self._strict = True  # byte starts are those of the text's strict UTF-8 encoding
        if "\r" not in text:
            # Line k ends at c_k - 1 and line k+1 starts at c_k, where c_k sums the lengths
            # of lines 0..k plus their "\n": computed in C (split, map, accumulate).
            ends = list(accumulate(map(_PLUS_ONE, map(len, text.split("\n")))))
            self._line_starts_char += ends[:-1]
            self._line_ends_char = list(map(_MINUS_ONE, ends[:-1]))
        else:  # LSP: only \n, \r\n and \r end lines (not \f, U+2028 or other separators)
            for m in _LINE_END.finditer(text):
                self._line_ends_char.append(m.start())
                self._line_starts_char.append(m.end())
        self._line_ends_char.append(len(text))
        self.len_bytes = len(text)
        if ascii_only:
            self._line_starts_byte = list(self._line_starts_char)
        elif (data := _strict_utf8(text)) is not None:
            self.len_bytes = len(data)
            # Line breaks are single bytes that no other character's UTF-8 contains: the
            # byte starts are where the same pattern matches in the encoded text.
            if b"\r" not in data:
                starts = [0, *accumulate(map(_PLUS_ONE, map(len, data.split(b"\n"))))]
                starts.pop()
            else:
                starts = [0] + [m.end() for m in _LINE_END_BYTES.finditer(data)]
            self._line_starts_byte = starts
        else:
            self._strict = False
            starts = [0]
            prev = 0
            acc = 0
            for c in self._line_starts_char[1:]:
                acc += utf8_len(text[prev:c])
                starts.append(acc)
                prev = c
            self._line_starts_byte = starts
            self.len_bytes = utf8_len(text)

    def after_edit(self, start: int, end: int, inserted: str, text: str) -> LineIndex | None:
        """The index of ``text``, the result of replacing the bytes ``start..end`` of this
        index's text by ``inserted``, made by splicing: the lines before the edit are kept,
        those after it shifted (list work in C), only the inserted text is scanned — so an
        edit in a long file costs little more than one in a short one. None where a splice
        could differ from a fresh index (a `\r` at either edge or inserted, whose pairing
        with a neighbouring `\n` may change; text that is not strict UTF-8): build afresh."""
        if not self._strict or "\r" in inserted or _strict_utf8(inserted) is None:
            return None
        old = self.text
        cs = self.byte_to_char(start)
        ce = self.byte_to_char(end)
        if (cs > 0 and old[cs - 1] == "\r") or (ce > cs and old[ce - 1] == "\r"):
            return None
        first = self._line_of(self._clamp(start))
        last = self._line_of(self._clamp(end))
        dc = len(inserted) - (ce - cs)
        db = utf8_len(inserted) - (end - start)
        pieces = inserted.split("\n")
        new = LineIndex.__new__(LineIndex)
        new.text = text
        new._ascii = text.isascii()  # fast in C; a deletion can make a text ASCII
        new._strict = True
        new.len_bytes = self.len_bytes + db
        # each "\n" of the inserted text ends a line and starts the next
        char_ends = list(accumulate(map(len, pieces[:-1]), lambda a, n: a + n + 1, initial=cs))
        byte_ends = list(
            accumulate(map(utf8_len, pieces[:-1]), lambda a, n: a + n + 1, initial=start)
        )
        char_ends.pop(0)
        byte_ends.pop(0)
        # char_ends[k] is where line k of the insert ends... as an offset *after* its "\n"
        ends_c = [c - 1 for c in char_ends]
        new._line_starts_char = [
            *self._line_starts_char[: first + 1],
            *char_ends,
            *map(dc.__add__, self._line_starts_char[last + 1 :]),
        ]
        new._line_ends_char = [
            *self._line_ends_char[:first],
            *ends_c,
            *map(dc.__add__, self._line_ends_char[last:]),
        ]
        new._line_starts_byte = [
            *self._line_starts_byte[: first + 1],
            *byte_ends,
            *map(db.__add__, self._line_starts_byte[last + 1 :]),
        ]
        return new

    @property
    def strict(self) -> bool:
        """Is the text strict UTF-8 (no lone surrogate), so its byte offsets are exact?"""
        return self._strict

    @property
    def line_count(self) -> int:
        return len(self._line_starts_byte)

    def line_start(self, line: int) -> int:
        """Byte offset where ``line`` (0-based) starts."""
        return self._line_starts_byte[line]

    def line_text(self, line: int) -> str:
        """The text of ``line`` without its line terminator."""
        return self.text[self._line_starts_char[line] : self._line_ends_char[line]]

    def _clamp(self, offset: int) -> int:
        return max(0, min(offset, self.len_bytes))

    def _line_of(self, offset: int) -> int:
        return bisect_right(self._line_starts_byte, offset) - 1

    def _prefix(self, line: int, offset: int) -> str:
        """Characters of ``line`` before byte ``offset`` (offset clamped to a char boundary)."""
        start_c = self._line_starts_char[line]
        if self._ascii:
            return self.text[start_c : start_c + (offset - self._line_starts_byte[line])]
        want = offset - self._line_starts_byte[line]
        i = start_c
        acc = 0
        n = len(self.text)
        while i < n and acc < want:
            acc += _char_utf8_len(self.text[i])
            if acc > want:  # offset inside a multi-byte char: stay before it
                break
            i += 1
        return self.text[start_c:i]

    def to_utf16(self, offset: int) -> tuple[int, int]:
        """Byte offset -> (line, UTF-16 column), as the LSP default encoding wants."""
        offset = self._clamp(offset)
        line = self._line_of(offset)
        prefix = self._prefix(line, offset)
        if prefix.isascii():
            return line, len(prefix)
        return line, sum(_char_utf16_len(c) for c in prefix)

    def to_utf8(self, offset: int) -> tuple[int, int]:
        """Byte offset -> (line, UTF-8 byte column)."""
        offset = self._clamp(offset)
        line = self._line_of(offset)
        return line, offset - self._line_starts_byte[line]

    def to_chars(self, offset: int) -> tuple[int, int]:
        """Byte offset -> (line, column in code points), for terminal rendering."""
        offset = self._clamp(offset)
        line = self._line_of(offset)
        return line, len(self._prefix(line, offset))

    def _from_units(self, line: int, col: int, unit_len) -> int:
        if line < 0:
            return 0
        if line >= len(self._line_starts_byte):
            return self.len_bytes
        start_c = self._line_starts_char[line]
        end_c = self._line_ends_char[line]  # past-the-end columns clamp before the line end
        byte = self._line_starts_byte[line]
        units = 0
        i = start_c
        while i < end_c and units < col:
            ch = self.text[i]
            u = unit_len(ch)
            if units + u > col:  # column points inside a surrogate pair
                break
            units += u
            byte += _char_utf8_len(ch)
            i += 1
        return byte

    def from_utf16(self, line: int, col: int) -> int:
        """(line, UTF-16 column) -> byte offset; past-the-end columns clamp to line end."""
        return self._from_units(line, col, _char_utf16_len)

    def from_utf8(self, line: int, col: int) -> int:
        """(line, UTF-8 column) -> byte offset; clamps to the line's end."""
        return self._from_units(line, col, _char_utf8_len)

    def byte_to_char(self, offset: int) -> int:
        """Byte offset -> index into the Python string."""
        line, col = self.to_chars(offset)
        return self._line_starts_char[line] + col

    def char_to_byte(self, index: int) -> int:
        """Index into the Python string -> byte offset."""
        if self._ascii:
            return index
        line = bisect_right(self._line_starts_char, index) - 1
        s = self._line_starts_char[line]
        return self._line_starts_byte[line] + utf8_len(self.text[s:index])


def slice_bytes(text: str, span: Span) -> str:
    """The text covered by a byte span (for messages and fixes)."""
    if text.isascii():
        return text[span.start : span.end]
    return encode(text)[span.start : span.end].decode("utf-8", "surrogateescape")
