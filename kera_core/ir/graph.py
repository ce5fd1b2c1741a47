"""The graph store: nodes and regions keyed by hash (insert is dedup), and functions."""

from __future__ import annotations

from collections.abc import Iterator

from kera_core.ir.encoding import Writer, digest
from kera_core.ir.node import Function, Node, Region, Value


class Graph:
    def __init__(self) -> None:
        self.nodes: dict[bytes, Node] = {}
        self.regions: dict[bytes, Region] = {}
        self.functions: dict[str, Function] = {}

    def add(self, node: Node) -> Node:
        """Insert ``node``; an equal node already present is returned instead (CSE by construction)."""
        return self.nodes.setdefault(node.hash, node)

    def add_region(self, region: Region) -> Region:
        return self.regions.setdefault(region.hash, region)

    def node(self, v: Value | bytes) -> Node:
        return self.nodes[v.node if isinstance(v, Value) else v]

    def type_of(self, v: Value):
        return self.nodes[v.node].types[v.index]

    def exported(self) -> list[Function]:
        return sorted((f for f in self.functions.values() if f.exported), key=lambda f: f.name)

    def fingerprint(self) -> bytes:
        """The graph hash: exported functions sorted by name (names matter, order does not)."""
        w = Writer()
        fns = self.exported()
        w.uvar(len(fns))
        for f in fns:
            w.str(f.name)
            w.raw(f.hash)
        return digest("graph", w.getvalue())

    def region_nodes(self, region: Region | bytes) -> list[Node]:
        """The nodes of one region in a deterministic topological order (inputs first).

        Regions are closed, so the walk from the yields stops at the region's own
        parameters; nested regions are not entered.
        """
        r = self.regions[region] if isinstance(region, bytes) else region
        order: list[Node] = []
        seen: set[bytes] = set()
        for y in r.yields:
            self._visit(y.node, seen, order)
        return order

    def _visit(self, start: bytes, seen: set[bytes], order: list[Node]) -> None:
        stack: list[tuple[bytes, int]] = [(start, 0)]
        while stack:
            h, i = stack.pop()
            if i == 0:
                if h in seen:
                    continue
                seen.add(h)
            node = self.nodes[h]
            if i < len(node.inputs):
                stack.append((h, i + 1))
                child = node.inputs[i].node
                if child not in seen:
                    stack.append((child, 0))
            else:
                order.append(node)

    def all_regions(self, root: bytes) -> Iterator[bytes]:
        """``root`` and every region nested inside it, outermost first."""
        stack = [root]
        seen = set()
        while stack:
            r = stack.pop()
            if r in seen:
                continue
            seen.add(r)
            yield r
            for n in self.region_nodes(r):
                stack.extend(reversed(n.regions))
