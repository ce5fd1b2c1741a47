"""Lazy views of a resumed lowering's expression types and uses (sema/body_reuse.py).

A keystroke in a long body lowers a few statements again and takes the types and uses of
the statements before and after them from the body's trace, those after moved by the edit.
Moving them at once cost O(statements after the edit) per keystroke: ~45 ms at the top of
a 5,000-line body, half the keystroke. Here they are *parts*: ranges of the lists and
dicts that earlier lowerings made, with the edits since applied when an element is read.
Slicing a view (what the next keystroke takes over) and iterating it copy nothing; the
first lookup of a type by key makes one dict (the ownership checker's input) and the first
positional read of a use one list, each kept.

Every edit applied to a part lies before all of the part's elements (a part holds whole
statements after the edit), so an element's own span moves by the sum of the edits'
deltas; only a use's definition (a parameter, an earlier `let`) may lie between two edits,
so uses keep the edits themselves, merged while they are typed in one place
(:func:`merge_cuts`) and made into a plain list past ``MAX_CUTS``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, islice

from kera_core.sema.env import Use

#: A part of uses with more separate edits to apply than this is moved into a new list.
MAX_CUTS = 16


class Cut:
    """One edit as the spans after it see it: bytes [start, end) became ``delta`` longer."""

    __slots__ = ("start", "end", "delta")

    def __init__(self, start: int, end: int, delta: int) -> None:
        self.start, self.end, self.delta = start, end, delta


def merge_cuts(cuts: tuple, cut) -> tuple:
    """``cuts`` then ``cut`` (whose offsets are in the text after ``cuts``), the last two as
    one when ``cut`` lies within or around the text the last one left: typing, deleting and
    retyping in one place stays one edit. (A position before both, or after both, moves
    alike either way; one inside is touched either way.)"""
    if cuts:
        last = cuts[-1]
        s1, e1, d1 = last.start, last.end, last.delta
        if cut.start >= s1 and cut.end <= e1 + d1:
            return (*cuts[:-1], Cut(s1, e1, d1 + cut.delta))
        if cut.start <= s1 and cut.end >= e1 + d1:
            return (*cuts[:-1], Cut(cut.start, cut.end - d1, d1 + cut.delta))
    return (*cuts, Cut(cut.start, cut.end, cut.delta))


def _moved_use(u: Use, shift: int, cuts: tuple) -> Use:
    """``u`` after ``cuts``: its span (after all of them) by ``shift``; its definition by the
    edits before it. (A definition inside an edit is not taken over: the convergence check
    compared the bindings the statements taken over read, spans included.)"""
    d = u.def_span
    if d is not None:
        for c in cuts:
            if d.start >= c.end:
                d = d.shifted(c.delta)
    return Use(u.span.shifted(shift), u.kind, d, u.name, u.owner)


class _Parts:
    """A view made of parts ``(base, lo, hi, move)``: entries ``lo`` to ``hi`` of ``base``,
    each moved by ``move`` when read (``UNMOVED``: as stored)."""

    __slots__ = ()
    UNMOVED: object  # a part's move that leaves its entries as stored
    BASE: type  # what a part's base is (list, dict): ``of`` copies anything else into one

    @classmethod
    def of(cls, seq, lo: int = 0, hi: int | None = None):
        """``seq``'s entries ``lo`` to ``hi`` as a view (a plain list or dict is one part,
        not copied)."""
        hi = len(seq) if hi is None else hi
        if isinstance(seq, cls):
            return seq.sliced(lo, hi)
        base = seq if isinstance(seq, cls.BASE) else cls.BASE(seq)
        return cls([(base, lo, hi, cls.UNMOVED)])

    def sliced(self, lo: int, hi: int):
        """Entries ``lo`` to ``hi`` of this view, as a view."""
        out = []
        start = 0
        for base, a, b, move in self.parts:  # type: ignore[attr-defined]
            s, e = max(lo - start, 0), min(hi - start, b - a)
            if s < e:
                out.append((base, a + s, a + e, move))
            start += b - a
        return type(self)(out)


class SplicedUses(_Parts, Sequence):
    """Uses as parts ``(list, lo, hi, cuts)``: ``list[lo:hi]``, each moved by ``cuts``."""

    __slots__ = ("parts", "_starts", "_flat")
    UNMOVED = ()
    BASE = list

    def __init__(self, parts: list[tuple]) -> None:
        self.parts = [p for p in parts if p[2] > p[1]]
        starts = [0]
        for _, lo, hi, _ in self.parts:
            starts.append(starts[-1] + hi - lo)
        self._starts = starts
        self._flat: list | None = None

    def moved(self, cut) -> SplicedUses:
        """This view after one more edit before all of it."""
        out = []
        for base, lo, hi, cuts in self.parts:
            cuts = merge_cuts(cuts, cut)
            if len(cuts) > MAX_CUTS:
                base, lo, hi, cuts = list(_part_iter(base, lo, hi, cuts)), 0, hi - lo, ()
            out.append((base, lo, hi, cuts))
        return SplicedUses(out)

    def unmoved(self) -> Iterator[Use]:
        """The uses as stored (names and kinds are right; spans are not)."""
        return chain.from_iterable(islice(base, lo, hi) for base, lo, hi, _ in self.parts)

    def __len__(self) -> int:
        return self._starts[-1]

    def __iter__(self) -> Iterator[Use]:
        if self._flat is not None:
            return iter(self._flat)
        return chain.from_iterable(_part_iter(*p) for p in self.parts)

    def __getitem__(self, i):
        if isinstance(i, slice):
            lo, hi, step = i.indices(len(self))
            if step != 1:
                return list(self)[i]
            return self.sliced(lo, hi)
        if self._flat is None:
            self._flat = list(self)
        return self._flat[i]


def _part_iter(base, lo: int, hi: int, cuts: tuple) -> Iterator[Use]:
    if not cuts:
        return islice(base, lo, hi)
    shift = sum(c.delta for c in cuts)
    return (_moved_use(u, shift, cuts) for u in islice(base, lo, hi))


def unmoved_uses(uses) -> Iterator[Use]:
    """``uses`` as stored, for what reads their names and kinds only."""
    return uses.unmoved() if isinstance(uses, SplicedUses) else iter(uses)


class SplicedTypes(_Parts, Mapping):
    """Expression types as parts ``(dict, lo, hi, delta)``: the ``lo``-th to ``hi``-th
    entries of the dict, their keys' offsets moved by ``delta``. Iterated in order without a
    copy; looked up through one dict made when first needed."""

    __slots__ = ("parts", "_len", "_dict")
    UNMOVED = 0
    BASE = dict

    def __init__(self, parts: list[tuple]) -> None:
        self.parts = [p for p in parts if p[2] > p[1]]
        self._len = sum(hi - lo for _, lo, hi, _ in self.parts)
        self._dict: dict | None = None

    def moved(self, delta: int) -> SplicedTypes:
        return SplicedTypes([(b, lo, hi, d + delta) for b, lo, hi, d in self.parts])

    def items(self):  # type: ignore[override]
        if self._dict is not None:
            return self._dict.items()
        return chain.from_iterable(_types_iter(*p) for p in self.parts)

    def _flat(self) -> dict:
        if self._dict is None:
            self._dict = dict(chain.from_iterable(_types_iter(*p) for p in self.parts))
        return self._dict

    def __getitem__(self, key):
        return self._flat()[key]

    def get(self, key, default=None):
        return self._flat().get(key, default)

    def __contains__(self, key) -> bool:
        return key in self._flat()

    def __iter__(self):
        return (k for k, _ in self.items())

    def __len__(self) -> int:
        return self._len


def _types_iter(base: dict, lo: int, hi: int, delta: int):
    it = islice(base.items(), lo, hi)
    if not delta:
        return it
    return (((a + delta, b + delta, k), t) for (a, b, k), t in it)


__all__ = [
    "Cut",
    "MAX_CUTS",
    "SplicedTypes",
    "SplicedUses",
    "merge_cuts",
    "unmoved_uses",
]
