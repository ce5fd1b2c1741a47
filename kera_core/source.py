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


#: How many shifted runs a :class:`Shifted` list keeps before it adds its deltas in.
MAX_RUNS = 32


class Shifted:
    """A non-decreasing list of ints whose edits cost what they change, not its length.

    The values are a base list (shared by every version made from it, never mutated) cut
    into runs, each with a delta added when an element is read: ``self[i]`` is
    ``base[i] + adds[k]`` for the run ``k`` holding ``i``. :meth:`splice` replaces a slice
    and shifts what follows by adding a run (list work only where elements are inserted
    or removed: a copy of pointers in C, no new integers); after :data:`MAX_RUNS` runs
    the deltas are added in (once per that many edits on separate lines). A line index
    after an edit is its predecessor with the lines after the edit shifted: with this, an
    edit within a line costs a few runs' work, one that adds or removes lines a copy of
    the pointers, instead of a new integer for every line after it.
    """

    __slots__ = ("base", "cuts", "adds", "heads")

    def __init__(self, base: list[int], cuts: list[int] | None = None, adds=None) -> None:
        self.base = base
        self.cuts = cuts if cuts is not None else [0]  # where each run starts
        self.adds = adds if adds is not None else [0]  # the delta of each run
        # the first value of each run (what a search by value bisects first)
        self.heads = (
            [base[c] + a for c, a in zip(self.cuts, self.adds, strict=True)] if base else []
        )

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int) -> int:
        if len(self.cuts) == 1:
            return self.base[i] + self.adds[0]
        if i < 0:
            i += len(self.base)
        return self.base[i] + self.adds[bisect_right(self.cuts, i) - 1]

    def bisect_right(self, x: int) -> int:
        """How many values are ``<= x`` (``bisect.bisect_right`` of the list)."""
        k = bisect_right(self.heads, x) - 1
        if k < 0:
            return 0
        hi = self.cuts[k + 1] if k + 1 < len(self.cuts) else len(self.base)
        return bisect_right(self.base, x - self.adds[k], self.cuts[k], hi)

    def to_list(self) -> list[int]:
        """The values as one plain list."""
        if len(self.cuts) == 1 and not self.adds[0]:
            return self.base
        out: list[int] = []
        ends = [*self.cuts[1:], len(self.base)]
        for c, e, a in zip(self.cuts, ends, self.adds, strict=True):
            out += map(a.__add__, self.base[c:e]) if a else self.base[c:e]
        return out

    def splice(self, i: int, j: int, items: list[int], delta: int) -> Shifted:
        """The list ``self[:i] + items + [v + delta for v in self[j:]]`` (``i <= j``)."""
        base, cuts, adds = self.base, self.cuts, self.adds
        n = len(base)
        m = len(items)
        new_cuts: list[int] = []
        new_adds: list[int] = []

        def run(at: int, add: int) -> None:
            if new_cuts and new_adds[-1] == add:
                return  # the same delta as the run before: one run
            if new_cuts and new_cuts[-1] == at:
                new_cuts.pop()  # the run before is empty
                new_adds.pop()
                if new_cuts and new_adds[-1] == add:
                    return
            new_cuts.append(at)
            new_adds.append(add)

        for c, a in zip(cuts, adds, strict=True):  # the runs before i, as they are
            if c >= i:
                break
            run(c, a)
        if m:
            run(i, 0)  # the inserted values, as given
        if j < n:
            k = bisect_right(cuts, j) - 1  # the run holding j
            run(i + m, adds[k] + delta)
            for c, a in zip(cuts[k + 1 :], adds[k + 1 :], strict=True):
                run(c - j + i + m, a + delta)
        if not new_cuts:
            new_cuts, new_adds = [0], [0]
        new_base = base
        if i != j or m:
            new_base = base.copy()  # one copy of the pointers, then a move in C
            new_base[i:j] = items
        out = Shifted(new_base, new_cuts, new_adds)
        if len(new_cuts) > MAX_RUNS:
            return Shifted(out.to_list())
        return out


class LineIndex:
    """Maps byte offsets to lines and columns, and back.

    Built once per text, or from the previous text's index by :meth:`after_edit`; lookups
    are a binary search over line starts plus the slice of one line, so they stay cheap on
    large files. The line tables are :class:`Shifted` lists, so an edit's index shares
    its predecessor's tables and costs what the edit changes.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        starts_char: list[int] = [0]  # char index of each line start
        ends_char: list[int] = []  # char index where each line's content ends
        ascii_only = text.isascii()
        self._ascii = ascii_only
        self._strict = True  # byte starts are those of the text's strict UTF-8 encoding
        if "\r" not in text:
            # Line k ends at c_k - 1 and line k+1 starts at c_k, where c_k sums the lengths
            # of lines 0..k plus their "\n": computed in C (split, map, accumulate).
            ends = list(accumulate(map(_PLUS_ONE, map(len, text.split("\n")))))
            starts_char += ends[:-1]
            ends_char = list(map(_MINUS_ONE, ends[:-1]))
        else:  # LSP: only \n, \r\n and \r end lines (not \f, U+2028 or other separators)
            for m in _LINE_END.finditer(text):
                ends_char.append(m.start())
                starts_char.append(m.end())
        ends_char.append(len(text))
        self.len_bytes = len(text)
        if ascii_only:
            starts_byte = starts_char
        elif (data := _strict_utf8(text)) is not None:
            self.len_bytes = len(data)
            # Line breaks are single bytes that no other character's UTF-8 contains: the
            # byte starts are where the same pattern matches in the encoded text.
            if b"\r" not in data:
                starts_byte = [0, *accumulate(map(_PLUS_ONE, map(len, data.split(b"\n"))))]
                starts_byte.pop()
            else:
                starts_byte = [0] + [m.end() for m in _LINE_END_BYTES.finditer(data)]
        else:
            self._strict = False
            starts_byte = [0]
            prev = 0
            acc = 0
            for c in starts_char[1:]:
                acc += utf8_len(text[prev:c])
                starts_byte.append(acc)
                prev = c
            self.len_bytes = utf8_len(text)
        self._sc = Shifted(starts_char)  # char index of each line start
        self._ec = Shifted(ends_char)  # char index where each line's content ends
        self._sb = Shifted(starts_byte)  # byte offset of each line start

    def after_edit(self, start: int, end: int, inserted: str, text: str) -> LineIndex | None:
        """The index of ``text``, the result of replacing the bytes ``start..end`` of this
        index's text by ``inserted``, made by splicing: the lines before the edit are kept,
        those after it shifted (a run added to each table, :class:`Shifted`), only the
        inserted text is scanned — so an edit in a long file costs what one in a short one
        does. None where a splice could differ from a fresh index (a `\r` at either edge or
        inserted, whose pairing with a neighbouring `\n` may change; text that is not strict
        UTF-8): build afresh."""
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
        # each "\n" of the inserted text ends a line and starts the next: where the next
        # starts (the offsets after each "\n")
        char_starts = list(accumulate(map(len, pieces[:-1]), lambda a, n: a + n + 1, initial=cs))
        byte_starts = list(
            accumulate(map(utf8_len, pieces[:-1]), lambda a, n: a + n + 1, initial=start)
        )
        char_starts.pop(0)
        byte_starts.pop(0)
        new._sc = self._sc.splice(first + 1, last + 1, char_starts, dc)
        new._ec = self._ec.splice(first, last, [c - 1 for c in char_starts], dc)
        new._sb = self._sb.splice(first + 1, last + 1, byte_starts, db)
        return new

    def tables(self) -> tuple[list[int], list[int], list[int]]:
        """The line tables as plain lists: each line's start and content end as indices
        into the text, and its start as a byte offset (for tests and checks)."""
        return self._sc.to_list(), self._ec.to_list(), self._sb.to_list()

    @property
    def strict(self) -> bool:
        """Is the text strict UTF-8 (no lone surrogate), so its byte offsets are exact?"""
        return self._strict

    @property
    def line_count(self) -> int:
        return len(self._sb)

    def line_start(self, line: int) -> int:
        """Byte offset where ``line`` (0-based) starts."""
        return self._sb[line]

    def line_text(self, line: int) -> str:
        """The text of ``line`` without its line terminator."""
        return self.text[self._sc[line] : self._ec[line]]

    def _clamp(self, offset: int) -> int:
        return max(0, min(offset, self.len_bytes))

    def _line_of(self, offset: int) -> int:
        return self._sb.bisect_right(offset) - 1

    def _prefix(self, line: int, offset: int) -> str:
        """Characters of ``line`` before byte ``offset`` (offset clamped to a char boundary)."""
        start_c = self._sc[line]
        want = offset - self._sb[line]
        # `want` bytes are at most `want` characters: when those are ASCII, they are it
        head = self.text[start_c : start_c + want]
        if self._ascii or head.isascii():
            return head
        if self._strict:  # a cut inside a multi-byte character leaves it out (as below)
            return head.encode("utf-8")[:want].decode("utf-8", "ignore")
        i = start_c
        acc = 0
        n = len(self.text)
        while i < n and acc < want:
            acc += _char_utf8_len(self.text[i])
            if acc > want:  # offset inside a multi-byte char: stay before it
                break
            i += 1
        return self.text[start_c:i]

    def positions(self, offsets: list[int], encoding: str) -> dict[int, tuple[int, int]]:
        """Byte offsets -> (line, column), the column in ``encoding``'s units ("utf-16",
        "utf-8" or "utf-32": the LSP position encodings), as :meth:`to_utf16`,
        :meth:`to_utf8` and :meth:`to_chars` give them, for many offsets at once (a
        file's diagnostics): one lookup per distinct offset, the common case inline."""
        out: dict[int, tuple[int, int]] = {}
        find, sb, sc = self._sb.bisect_right, self._sb, self._sc
        text, n, ascii_text = self.text, self.len_bytes, self._ascii
        for offset in offsets:
            if offset in out:
                continue
            o = 0 if offset < 0 else n if offset > n else offset
            line = find(o) - 1
            want = o - sb[line]
            if encoding == "utf-8":
                out[offset] = (line, want)
                continue
            start = sc[line]
            head = text[start : start + want]
            if not (ascii_text or head.isascii()):  # as to_utf16 / to_chars
                head = self._prefix(line, o)
                if encoding != "utf-32" and not head.isascii():
                    out[offset] = (line, len(head.encode("utf-16-le", "surrogatepass")) // 2)
                    continue
            out[offset] = (line, len(head))
        return out

    def to_utf16(self, offset: int) -> tuple[int, int]:
        """Byte offset -> (line, UTF-16 column), as the LSP default encoding wants."""
        offset = self._clamp(offset)
        line = self._line_of(offset)
        prefix = self._prefix(line, offset)
        if prefix.isascii():
            return line, len(prefix)
        # two bytes per UTF-16 unit; a lone surrogate (an escaped byte) is one unit
        return line, len(prefix.encode("utf-16-le", "surrogatepass")) // 2

    def to_utf8(self, offset: int) -> tuple[int, int]:
        """Byte offset -> (line, UTF-8 byte column)."""
        offset = self._clamp(offset)
        line = self._line_of(offset)
        return line, offset - self._sb[line]

    def to_chars(self, offset: int) -> tuple[int, int]:
        """Byte offset -> (line, column in code points), for terminal rendering."""
        offset = self._clamp(offset)
        line = self._line_of(offset)
        return line, len(self._prefix(line, offset))

    def _from_units(self, line: int, col: int, unit_len) -> int:
        if line < 0:
            return 0
        if line >= len(self._sb):
            return self.len_bytes
        start_c = self._sc[line]
        end_c = self._ec[line]  # past-the-end columns clamp before the line end
        byte = self._sb[line]
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
        return self._sc[line] + col

    def char_to_byte(self, index: int) -> int:
        """Index into the Python string -> byte offset."""
        if self._ascii:
            return index
        line = self._sc.bisect_right(index) - 1
        s = self._sc[line]
        return self._sb[line] + utf8_len(self.text[s:index])


def slice_bytes(text: str, span: Span) -> str:
    """The text covered by a byte span (for messages and fixes)."""
    if text.isascii():
        return text[span.start : span.end]
    return encode(text)[span.start : span.end].decode("utf-8", "surrogateescape")


def common_affixes(old: str | bytes, new: str | bytes) -> tuple[int, int]:
    """Lengths (in characters, or bytes) of the longest common prefix and suffix, not
    overlapping.

    Binary search over slice comparisons keeps the work in C even for megabyte texts.
    """
    n = min(len(old), len(new))
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    lo, hi = 0, n - prefix
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid :] == new[len(new) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return prefix, lo
