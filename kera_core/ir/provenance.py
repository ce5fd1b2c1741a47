"""Provenance: where graph nodes came from. Never part of any hash.

Spans are kept per function relative to the function item's start, so a function
lowered once can be reused after an edit elsewhere moved it; ``absolute`` rebases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.source import Span


@dataclass
class FnProvenance:
    name: str
    span: Span  # the whole item, absolute
    name_span: Span
    dim_names: tuple[str, ...]
    param_names: tuple[str, ...]
    node_spans: dict[bytes, list[Span]] = field(default_factory=dict)  # relative spans
    node_names: dict[bytes, str] = field(default_factory=dict)  # a local's display name
    doc: str = ""
    # (node, span) pairs already recorded: a node shared by many sites (a constant used on
    # every line) would otherwise make each add a scan of its span list
    _recorded: set[tuple[bytes, int, int]] = field(default_factory=set, repr=False, compare=False)

    def add(self, node_hash: bytes, rel: Span) -> None:
        self.add_at(node_hash, rel.start, rel.end)

    def add_at(self, node_hash: bytes, start: int, end: int) -> None:
        """:meth:`add` of the relative span ``start..end``, made only when it is new."""
        key = (node_hash, start, end)  # ints hash in C, a Span in Python
        recorded = self._recorded
        if key in recorded:
            return
        recorded.add(key)
        spans = self.node_spans.get(node_hash)
        if spans is None:
            self.node_spans[node_hash] = [Span(start, end)]
        else:
            spans.append(Span(start, end))

    def absolute(self, node_hash: bytes) -> list[Span]:
        return [s.shifted(self.span.start) for s in self.node_spans.get(node_hash, [])]


@dataclass
class Provenance:
    functions: dict[str, FnProvenance] = field(default_factory=dict)

    def spans_of(self, node_hash: bytes) -> list[Span]:
        out: list[Span] = []
        for fp in self.functions.values():
            out.extend(fp.absolute(node_hash))
        return out
