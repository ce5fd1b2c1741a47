"""Graph (+ provenance) → canonical `.keg` bytes.

The same graph always gives the same bytes: functions are taken in name order,
nodes and regions in one depth-first post-order from them, strings sorted by their
UTF-8 bytes, types by their canonical encoding, attribute sets in first use. Only
what some function reaches is written, so dead nodes in the store never leak in.
"""

from __future__ import annotations

from kera_core.ir.encoding import SCHEMA_VERSION, Writer
from kera_core.ir.graph import Graph
from kera_core.ir.node import Node, Region
from kera_core.ir.provenance import Provenance
from kera_core.ir.semantics import SEMANTICS_VERSION
from kera_core.ir.types import Type
from kera_core.keg.format import (
    ATTR_BOOL,
    ATTR_BYTES,
    ATTR_INT,
    ATTR_STR,
    ATTR_TUPLE,
    ATTR_TYPE,
    COVERED_HEADER,
    ENTRY,
    FORMAT_VERSION,
    HEADER,
    MAGIC,
    Section,
    section_checksum,
)
from kera_core.keg.provenance import encode_provenance
from kera_core.source import encode

_INT_LIMIT = 1 << 69  # zigzagged, still fits the reader's 10-byte LEB128


def canonical_order(graph: Graph) -> tuple[list[Node], list[Region]]:
    """Every node and region some function reaches, each after everything it refers to.

    A node comes after its inputs and after the yields of its regions; a region
    after its yields. Iterative, so a 100 000-node chain does not hit the recursion limit.
    """
    nodes: list[Node] = []
    regions: list[Region] = []
    done: set[tuple[str, bytes]] = set()
    for name in sorted(graph.functions):
        root = ("r", graph.functions[name].region)
        if root in done:
            continue
        done.add(root)
        stack = [(root, iter(_children(graph, root)))]
        while stack:
            key, it = stack[-1]
            for child in it:
                if child not in done:
                    done.add(child)
                    stack.append((child, iter(_children(graph, child))))
                    break
            else:
                stack.pop()
                if key[0] == "n":
                    nodes.append(graph.nodes[key[1]])
                else:
                    regions.append(graph.regions[key[1]])
    return nodes, regions


def _children(graph: Graph, key: tuple[str, bytes]) -> list[tuple[str, bytes]]:
    kind, h = key
    if kind == "n":
        node = graph.nodes.get(h)
        if node is None:
            raise ValueError(f"graph is incomplete: node {h.hex()} is referenced but missing")
        return [("n", v.node) for v in node.inputs] + [("r", r) for r in node.regions]
    region = graph.regions.get(h)
    if region is None:
        raise ValueError(f"graph is incomplete: region {h.hex()} is referenced but missing")
    return [("n", v.node) for v in region.yields]


def _attr_types(v, out: list[Type]) -> None:
    if isinstance(v, Type):
        out.append(v)
    elif isinstance(v, tuple):
        for x in v:
            _attr_types(x, out)


def _attr_strings(v, out: set[str]) -> None:
    if isinstance(v, str):
        out.add(v)
    elif isinstance(v, tuple):
        for x in v:
            _attr_strings(x, out)


class _Tables:
    """The string and type tables: sorted, so independent of traversal order."""

    def __init__(self, graph: Graph, nodes: list[Node], regions: list[Region]) -> None:
        strings: set[str] = set()
        types: list[Type] = []
        for n in nodes:
            strings.add(n.op)
            types.extend(n.types)
            for k, v in n.attrs:
                strings.add(k)
                _attr_strings(v, strings)
                _attr_types(v, types)
        for r in regions:
            types.extend(r.params)
        for f in graph.functions.values():
            strings.add(f.name)
            strings.update(kind for kind, _ in f.outputs)
            types.append(f.type)
        self.strings = sorted(strings, key=encode)
        self.string_index = {s: i for i, s in enumerate(self.strings)}
        by_bytes = {t.canonical: t for t in types}
        self.types = [by_bytes[b] for b in sorted(by_bytes)]
        self.type_index = {t.canonical: i for i, t in enumerate(self.types)}

    def s(self, text: str) -> int:
        return self.string_index[text]

    def t(self, t: Type) -> int:
        return self.type_index[t.canonical]


def _encode_attr(w: Writer, v, tables: _Tables) -> None:
    if isinstance(v, bool):
        w.u8(ATTR_BOOL)
        w.u8(1 if v else 0)
    elif isinstance(v, int):
        if not -_INT_LIMIT <= v < _INT_LIMIT:
            raise ValueError(f"integer attribute {v} is too large for a .keg file")
        w.u8(ATTR_INT)
        w.svar(v)
    elif isinstance(v, str):
        w.u8(ATTR_STR)
        w.uvar(tables.s(v))
    elif isinstance(v, bytes):
        w.u8(ATTR_BYTES)
        w.bytes(v)
    elif isinstance(v, Type):
        w.u8(ATTR_TYPE)
        w.uvar(tables.t(v))
    elif isinstance(v, tuple):
        w.u8(ATTR_TUPLE)
        w.uvar(len(v))
        for x in v:
            _encode_attr(w, x, tables)
    else:
        raise ValueError(f"unsupported attribute value {v!r}")


def write_keg(graph: Graph, provenance: Provenance | None = None) -> bytes:
    """The canonical `.keg` bytes of ``graph`` (and, outside identity, ``provenance``)."""
    nodes, regions = canonical_order(graph)
    node_index = {n.hash: i for i, n in enumerate(nodes)}
    region_index = {r.hash: i for i, r in enumerate(regions)}
    tables = _Tables(graph, nodes, regions)

    strings = Writer()
    strings.uvar(len(tables.strings))
    for s in tables.strings:
        strings.str(s)

    types = Writer()
    types.uvar(len(tables.types))
    for t in tables.types:
        types.bytes(t.canonical)

    attr_sets: dict[bytes, int] = {}
    node_w = Writer()
    node_w.uvar(len(nodes))
    for n in nodes:
        aw = Writer()
        aw.uvar(len(n.attrs))
        for k, v in n.attrs:
            aw.uvar(tables.s(k))
            _encode_attr(aw, v, tables)
        a = aw.getvalue()
        node_w.uvar(tables.s(n.op))
        node_w.uvar(len(n.types))
        for t in n.types:
            node_w.uvar(tables.t(t))
        node_w.uvar(len(n.inputs))
        for v in n.inputs:
            node_w.uvar(node_index[v.node])
            node_w.uvar(v.index)
        node_w.uvar(attr_sets.setdefault(a, len(attr_sets)))
        node_w.uvar(len(n.regions))
        for r in n.regions:
            node_w.uvar(region_index[r])

    attrs = Writer()
    attrs.uvar(len(attr_sets))
    for a in attr_sets:  # dicts keep first-use order
        attrs.raw(a)

    region_w = Writer()
    region_w.uvar(len(regions))
    for r in regions:
        region_w.uvar(len(r.params))
        for t in r.params:
            region_w.uvar(tables.t(t))
        region_w.uvar(len(r.yields))
        for v in r.yields:
            region_w.uvar(node_index[v.node])
            region_w.uvar(v.index)

    fn_w = Writer()
    fn_w.uvar(len(graph.functions))
    for name in sorted(graph.functions, key=encode):
        f = graph.functions[name]
        if f.name != name:
            raise ValueError(f"function stored under {name!r} is named {f.name!r}")
        fn_w.uvar(tables.s(name))
        fn_w.uvar(tables.t(f.type))
        fn_w.uvar(region_index[f.region])
        # bit 0: exported; bit 1: a member of a recursive component, whose hash and the
        # member's index follow (docs/keg.md)
        fn_w.u8((1 if f.exported else 0) | (2 if f.component is not None else 0))
        if f.component is not None:
            fn_w.raw(f.component)
            fn_w.uvar(f.index)
        fn_w.uvar(len(f.outputs))
        for kind, index in f.outputs:
            fn_w.uvar(tables.s(kind))
            fn_w.svar(index)
        fn_w.raw(f.hash)

    sections = [
        (Section.STRINGS, strings.getvalue()),
        (Section.TYPES, types.getvalue()),
        (Section.ATTRS, attrs.getvalue()),
        (Section.NODES, node_w.getvalue()),
        (Section.REGIONS, region_w.getvalue()),
        (Section.FUNCTIONS, fn_w.getvalue()),
    ]
    if provenance is not None:
        sections.append((Section.PROVENANCE, encode_provenance(provenance, node_index)))
    return _assemble(graph.fingerprint(), sections)


def _assemble(fingerprint: bytes, sections: list[tuple[Section, bytes]]) -> bytes:
    """Header, section table, then the sections back to back in id order."""
    header = HEADER.pack(
        MAGIC, FORMAT_VERSION, SEMANTICS_VERSION, SCHEMA_VERSION, len(sections), fingerprint
    )
    offset = HEADER.size + ENTRY.size * len(sections)
    table = []
    for k, (sid, body) in enumerate(sections):
        covered = header[:COVERED_HEADER] if k == 0 else b""
        table.append(ENTRY.pack(sid, offset, len(body), section_checksum(body, covered)))
        offset += len(body)
    return b"".join([header, *table, *(body for _, body in sections)])
