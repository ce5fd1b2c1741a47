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

    def add(self, node_hash: bytes, rel: Span) -> None:
        spans = self.node_spans.setdefault(node_hash, [])
        if rel not in spans:
            spans.append(rel)

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
