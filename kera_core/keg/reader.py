"""`.keg` bytes → graph, verifying everything: layout, checksums, indices, every hash.

The reader trusts nothing: each count is checked against the bytes left before a
loop runs, each index against its table, each input against the nodes already
built (so cycles cannot be expressed), and every node, region and function hash is
recomputed; the file is rejected with a :class:`KegError` at the first problem.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ir.cycles import calls_outside_members, component_errors, member_index
from kera_core.ir.encoding import SCHEMA_VERSION
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.ops import REGISTRY
from kera_core.ir.provenance import Provenance
from kera_core.ir.semantics import SEMANTICS_VERSION, revision
from kera_core.ir.types import FnType, Ref, Type, Unit
from kera_core.keg.cursor import Cursor, decode_type
from kera_core.keg.errors import KegError
from kera_core.keg.format import (
    ATTR_BOOL,
    ATTR_BYTES,
    ATTR_INT,
    ATTR_STR,
    ATTR_TUPLE,
    ATTR_TYPE,
    COVERED_HEADER,
    COVERED_HEADER_FORMAT,
    ENTRY,
    FORMAT_VERSION,
    HASH_SIZE,
    HEADER,
    MAGIC,
    MAX_ATTR_DEPTH,
    MIN_ATTR_PAIR,
    MIN_ATTR_SET,
    MIN_FUNCTION,
    MIN_NODE,
    MIN_OUTPUT,
    MIN_REGION,
    MIN_STRING,
    MIN_TYPE,
    MIN_VALUE,
    OLDEST_FORMAT,
    REQUIRED,
    SECTION_NAMES,
    SEMANTICS_FORMAT,
    Section,
    section_checksum,
)
from kera_core.keg.provenance import decode_provenance
from kera_core.source import encode


def expected_outputs(ftype: FnType) -> tuple[tuple[str, int], ...]:
    """What a function's region yields after its token (see ``Function``): derived from its type."""
    result = () if isinstance(ftype.result, Unit) else (("result", -1),)
    muts = tuple(
        ("param", i) for i, t in enumerate(ftype.params) if isinstance(t, Ref) and t.mutable
    )
    return result + muts


@dataclass
class KegFile:
    graph: Graph
    provenance: Provenance | None
    fingerprint: bytes


def _verify(graph) -> None:
    """Every rule of the IR, before any consumer sees the graph: a file whose hashes are
    right can still hold an ill-typed graph (written by another tool, or edited and
    resealed). The verifier's own failure is reported the same way, never raised."""
    from kera_core.ir.verify import verify
    from kera_core.stack import deep_recursion

    try:
        with deep_recursion():
            violations = verify(graph)
    except Exception as exc:  # a graph the verifier cannot even walk is ill-typed
        raise KegError(
            "ill-typed", f"the graph cannot be verified: {type(exc).__name__}: {exc}"
        ) from None
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        raise KegError("ill-typed", f"{violations[0]}{more}")


def read_keg(data: bytes) -> KegFile:
    """Parse and fully verify a `.keg` file; any defect raises :class:`KegError`."""
    data = bytes(data)
    spans, fingerprint, semantics = _read_layout(data)
    return _Decoder(data, spans, semantics).decode(fingerprint)


def _read_layout(data: bytes) -> tuple[dict[Section, tuple[int, int]], bytes, int]:
    """Header and section table: where each section lies, checksums verified; the graph
    fingerprint and the semantics version."""
    if data[:4] != MAGIC:
        if len(data) < 4 and MAGIC.startswith(data):
            raise KegError("truncated", f"file is {len(data)} bytes, shorter than the magic", 0)
        raise KegError("magic", f"not a .keg file: starts with {data[:4]!r}, not {MAGIC!r}", 0)
    if len(data) < HEADER.size:
        raise KegError("truncated", f"header needs {HEADER.size} bytes, file has {len(data)}", 0)
    _, version, semantics, schema, n, fingerprint = HEADER.unpack_from(data)
    if not OLDEST_FORMAT <= version <= FORMAT_VERSION:
        raise KegError(
            "version",
            f"format version {version}; this reader knows {OLDEST_FORMAT} to {FORMAT_VERSION}",
            4,
        )
    if version < SEMANTICS_FORMAT:  # reserved flags, and the first semantics version
        if semantics:
            raise KegError("flags", f"reserved header flags set: {semantics:#06x}", 6)
        semantics = 1
    elif not 1 <= semantics <= SEMANTICS_VERSION:
        raise KegError(
            "semantics",
            f"semantics version {semantics}; this reader implements 1 to {SEMANTICS_VERSION}",
            6,
        )
    if schema != SCHEMA_VERSION:
        raise KegError(
            "schema", f"IR schema version {schema}; this reader hashes with {SCHEMA_VERSION}", 8
        )
    table_end = HEADER.size + ENTRY.size * n
    if table_end > len(data):
        raise KegError(
            "truncated",
            f"section table of {n} entries needs {table_end} bytes, file has {len(data)}",
            12,
        )
    spans: dict[Section, tuple[int, int]] = {}
    expected = table_end
    prev = 0
    for k in range(n):
        at = HEADER.size + ENTRY.size * k
        sid, offset, length, checksum = ENTRY.unpack_from(data, at)
        if sid not in Section._value2member_map_:
            raise KegError("unknown-section", f"section table entry {k}: unknown id {sid}", at)
        section = Section(sid)
        name = SECTION_NAMES[section]
        if sid == prev:
            raise KegError("duplicate", f"section table entry {k}: {name} appears twice", at)
        if sid < prev:
            raise KegError("order", f"section table entry {k}: {name} after a later id", at)
        prev = sid
        if offset != expected:
            raise KegError(
                "layout", f"{name} section starts at {offset}, expected {expected}", at + 4
            )
        if length > len(data) - offset:
            raise KegError(
                "truncated",
                f"{name} section claims {length} bytes, only {len(data) - offset} remain",
                at + 12,
            )
        covered = data[:COVERED_HEADER] if k == 0 and version >= COVERED_HEADER_FORMAT else b""
        if section_checksum(data[offset : offset + length], covered) != checksum:
            raise KegError("checksum", f"{name} section: SHA3-256 checksum mismatch", offset)
        spans[section] = (offset, offset + length)
        expected = offset + length
    for s in REQUIRED:
        if s not in spans:
            raise KegError("missing-section", f"no {SECTION_NAMES[s]} section", HEADER.size)
    if expected != len(data):
        raise KegError("trailing", f"{len(data) - expected} bytes after the last section", expected)
    return spans, fingerprint, semantics


class _Decoder:
    def __init__(self, data: bytes, spans: dict[Section, tuple[int, int]], semantics: int) -> None:
        self.data = data
        self.spans = spans
        self.semantics = semantics
        self.strings: list[str] = []
        self.types: list[Type] = []
        self.attr_sets: list[tuple] = []
        self.node_hashes: list[bytes] = []
        self.node_types: list[tuple[Type, ...]] = []
        self.node_offsets: list[int] = []
        self.node_edges: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self.region_raw: list[tuple[tuple[Type, ...], tuple[tuple[int, int], ...], int]] = []
        self.region_hashes: list[bytes | None] = []
        self.graph = Graph()
        self.used: dict[str, bytearray] = {}
        self.offsets: dict[str, list[int]] = {"strings": [], "types": [], "attrs": []}

    def cursor(self, s: Section) -> Cursor:
        start, end = self.spans[s]
        return Cursor(self.data, start, end, SECTION_NAMES[s])

    def decode(self, fingerprint: bytes) -> KegFile:
        self._strings()
        self._types()
        self._attrs()
        n_nodes = self.cursor(Section.NODES).count("nodes", MIN_NODE)
        self._regions(n_nodes)
        self._nodes()
        for r in range(len(self.region_raw)):
            self._region_hash(r, len(self.node_hashes), None)
        roots = self._functions()
        self._check_reachable(roots)
        self._check_callees()
        self._check_used()
        got = self.graph.fingerprint()
        if got != fingerprint:
            raise KegError(
                "hash-mismatch",
                f"header fingerprint {fingerprint.hex()} but the graph hashes to {got.hex()}",
                16,
            )
        _verify(self.graph)
        prov = None
        if Section.PROVENANCE in self.spans:
            prov = decode_provenance(self.cursor(Section.PROVENANCE), self.node_hashes)
        return KegFile(self.graph, prov, got)

    # --- tables: each entry must be used, so a file carries nothing but the program ----
    def _string(self, c: Cursor) -> str:
        i = c.index("string", len(self.strings))
        self.used["strings"][i] = 1
        return self.strings[i]

    def _type(self, c: Cursor) -> Type:
        i = c.index("type", len(self.types))
        self.used["types"][i] = 1
        return self.types[i]

    def _attr_set(self, c: Cursor) -> tuple:
        i = c.index("attribute set", len(self.attr_sets))
        self.used["attrs"][i] = 1
        return self.attr_sets[i]

    def _check_used(self) -> None:
        for section, what in (("strings", "string"), ("types", "type"), ("attrs", "attribute set")):
            used = self.used[section]
            k = used.find(0)
            if k >= 0:
                raise KegError(
                    "unused",
                    f"{section} section: {what} {k} is not used by anything",
                    self.offsets[section][k],
                )

    def _strings(self) -> None:
        c = self.cursor(Section.STRINGS)
        seen: set[str] = set()
        for _ in range(c.count("strings", MIN_STRING)):
            at = c.pos
            s = c.text()
            if s in seen:
                raise c.fail("duplicate", f"string {s!r} appears twice", at)
            seen.add(s)
            self.strings.append(s)
            self.offsets["strings"].append(at)
        c.expect_end("last string")
        self.used["strings"] = bytearray(len(self.strings))

    def _types(self) -> None:
        c = self.cursor(Section.TYPES)
        seen: set[bytes] = set()
        for k in range(c.count("types", MIN_TYPE)):
            at = c.pos
            raw = c.blob()
            inner = Cursor(self.data, c.pos - len(raw), c.pos, c.section)
            t = decode_type(inner)
            inner.expect_end(f"type {k}")
            if t.canonical != raw:
                raise c.fail("bad-type", f"type {k} is not in canonical form", at)
            if raw in seen:
                raise c.fail("duplicate", f"type {k} (`{t}`) appears twice", at)
            seen.add(raw)
            self.types.append(t)
            self.offsets["types"].append(at)
        c.expect_end("last type")
        self.used["types"] = bytearray(len(self.types))

    def _attrs(self) -> None:
        c = self.cursor(Section.ATTRS)
        seen: set[bytes] = set()
        for k in range(c.count("attribute sets", MIN_ATTR_SET)):
            at = c.pos
            pairs = []
            prev = None
            for _ in range(c.count("attributes", MIN_ATTR_PAIR)):
                key_at = c.pos
                key = self._string(c)
                if prev is not None and key <= prev:
                    kind = "duplicate" if key == prev else "order"
                    raise c.fail(kind, f"attribute set {k}: key {key!r} after {prev!r}", key_at)
                prev = key
                pairs.append((key, self._attr_value(c, 0)))
            raw = self.data[at : c.pos]
            if raw in seen:
                raise c.fail("duplicate", f"attribute set {k} appears twice", at)
            seen.add(raw)
            self.attr_sets.append(tuple(pairs))
            self.offsets["attrs"].append(at)
        c.expect_end("last attribute set")
        self.used["attrs"] = bytearray(len(self.attr_sets))

    def _attr_value(self, c: Cursor, depth: int):
        at = c.pos
        tag = c.u8()
        if tag == ATTR_INT:
            return c.svar()
        if tag == ATTR_STR:
            return self._string(c)
        if tag == ATTR_BOOL:
            return c.flag("a boolean attribute", "bad-attr")
        if tag == ATTR_BYTES:
            return c.blob()
        if tag == ATTR_TYPE:
            return self._type(c)
        if tag == ATTR_TUPLE:
            if depth >= MAX_ATTR_DEPTH:
                raise c.fail("bad-attr", f"tuples nested deeper than {MAX_ATTR_DEPTH}", at)
            n = c.count("tuple items", 2)
            return tuple(self._attr_value(c, depth + 1) for _ in range(n))
        raise c.fail("bad-attr", f"unknown attribute tag {tag}", at)

    # --- regions and nodes -------------------------------------------------------------
    def _values(self, c: Cursor, limit: int, what: str):
        out = []
        for _ in range(c.count(what, MIN_VALUE)):
            at = c.pos
            j = c.uvar()
            if j >= limit:
                raise c.fail("index", f"{what[:-1]} refers to node {j} (there are {limit})", at)
            out.append((j, c.uvar(), at))
        return out

    def _regions(self, n_nodes: int) -> None:
        c = self.cursor(Section.REGIONS)
        for _ in range(c.count("regions", MIN_REGION)):
            at = c.pos
            n = c.count("parameters", 1)
            params = tuple(self._type(c) for _ in range(n))
            yields = tuple((j, i) for j, i, _ in self._values(c, n_nodes, "yields"))
            self.region_raw.append((params, yields, at))
            self.region_hashes.append(None)
        c.expect_end("last region")

    def _region_hash(self, r: int, limit: int, at: int | None) -> bytes:
        """Build region ``r`` once its yields exist (all below node ``limit``)."""
        h = self.region_hashes[r]
        if h is not None:
            return h
        params, yields, region_at = self.region_raw[r]
        values = []
        for j, i in yields:
            if j >= limit:
                raise KegError(
                    "forward-ref",
                    f"nodes section: node {limit} uses region {r}, which yields node {j}"
                    " stored later (a node must follow the yields of its regions)",
                    at,
                )
            values.append(self._value(j, i, "regions section", region_at))
        region = Region(params, tuple(values))
        if region.hash in self.graph.regions:
            raise KegError("duplicate", f"regions section: region {r} appears twice", region_at)
        self.graph.regions[region.hash] = region
        self.region_hashes[r] = region.hash
        return region.hash

    def _value(self, j: int, i: int, where: str, at: int | None) -> Value:
        if i >= len(self.node_types[j]):
            raise KegError(
                "output-index",
                f"{where}: output {i} of node {j}, which has {len(self.node_types[j])}",
                at,
            )
        return Value(self.node_hashes[j], i)

    def _nodes(self) -> None:
        c = self.cursor(Section.NODES)
        n = c.count("nodes", MIN_NODE)
        for k in range(n):
            at = c.pos
            op = self._string(c)
            if op not in REGISTRY:
                raise c.fail("unknown-op", f"node {k}: unknown opcode {op!r}", at)
            out_types = tuple(self._type(c) for _ in range(c.count("types", 1)))
            changed = revision(op, out_types)
            if changed > self.semantics:
                raise c.fail(
                    "semantics",
                    f"node {k}: `{op}` on {out_types[0]} changed its bits in semantics version"
                    f" {changed}, after the file's version {self.semantics}; rebuild the file"
                    " from its source",
                    at,
                )
            inputs = []
            input_ids = []
            for j, i, in_at in self._values(c, n, "inputs"):
                if j >= k:
                    raise c.fail(
                        "forward-ref",
                        f"node {k} takes node {j} as input (inputs must be stored earlier)",
                        in_at,
                    )
                inputs.append(self._value(j, i, "nodes section", in_at))
                input_ids.append(j)
            attrs = self._attr_set(c)
            region_ids = []
            for _ in range(c.count("regions", 1)):
                r_at = c.pos
                r = c.index("region", len(self.region_raw))
                region_ids.append(r)
                self._region_hash(r, k, r_at)
            node = Node(
                op,
                tuple(inputs),
                out_types,
                attrs,
                tuple(self.region_hashes[r] for r in region_ids),  # type: ignore[misc]
            )
            if node.hash in self.graph.nodes:
                raise c.fail("duplicate", f"node {k} repeats an earlier node", at)
            self.graph.nodes[node.hash] = node
            self.node_hashes.append(node.hash)
            self.node_types.append(out_types)
            self.node_edges.append((tuple(input_ids), tuple(region_ids)))
            self.node_offsets.append(at)
        c.expect_end("last node")

    # --- functions ---------------------------------------------------------------------
    def _functions(self) -> list[int]:
        c = self.cursor(Section.FUNCTIONS)
        roots = []
        prev: bytes | None = None
        for _ in range(c.count("functions", MIN_FUNCTION)):
            at = c.pos
            name = self._string(c)
            key = encode(name)
            if prev is not None and key <= prev:
                kind = "duplicate" if key == prev else "order"
                raise c.fail(kind, f"function {name!r} after {prev.decode()!r}", at)
            prev = key
            type_at = c.pos
            ftype = self._type(c)
            if not isinstance(ftype, FnType):
                raise c.fail(
                    "bad-function", f"`{name}` has type `{ftype}`, not a function type", type_at
                )
            r = c.index("region", len(self.region_raw))
            roots.append(r)
            flags_at = c.pos
            flags = c.u8()
            if flags > 3:
                raise c.fail(
                    "bad-function", f"`{name}`'s flags must be 0..3, not {flags}", flags_at
                )
            exported = bool(flags & 1)
            component, index = None, 0
            if flags & 2:  # a member of a recursive component (ir/cycles.py)
                component = c.raw(HASH_SIZE)
                index = c.uvar()
            outputs_at = c.pos
            outputs = tuple(
                (self._string(c), c.svar()) for _ in range(c.count("outputs", MIN_OUTPUT))
            )
            if outputs != expected_outputs(ftype):
                raise c.fail(
                    "bad-function",
                    f"`{name}`: outputs {outputs} are not what `{ftype}` implies"
                    f" ({expected_outputs(ftype)})",
                    outputs_at,
                )
            hash_at = c.pos
            stored = c.raw(HASH_SIZE)
            f = Function(name, ftype, self.region_hashes[r], exported, outputs, component, index)  # type: ignore[arg-type]
            if f.hash != stored:
                raise c.fail(
                    "hash-mismatch",
                    f"function `{name}` hashes to {f.hash.hex()}, file says {stored.hex()}",
                    hash_at,
                )
            self.graph.functions[name] = f
        c.expect_end("last function")
        return roots

    def _check_callees(self) -> None:
        """A call names its callee by function hash; that function must be in the file —
        or, inside a recursive component, a member of the caller's component by position
        (docs/graph.md "Recursion"), and every component must hash to its members."""
        fns = {f.hash for f in self.graph.functions.values()}
        for msg in component_errors(self.graph):
            raise KegError("hash-mismatch", f"functions section: {msg}", None)
        outside = calls_outside_members(self.graph)
        for k, h in enumerate(self.node_hashes):
            node = self.graph.nodes[h]
            ref = node.op == "call" and member_index(node.attr("callee")) is not None
            if ref and h not in outside:
                continue
            if node.op == "call" and node.attr("callee") not in fns:
                raise KegError(
                    "bad-callee",
                    f"nodes section: node {k} calls a function that is not in the file",
                    self.node_offsets[k],
                )

    def _check_reachable(self, roots: list[int]) -> None:
        """Every stored node and region must serve some function: no hidden payload."""
        seen_regions = [False] * len(self.region_raw)
        seen_nodes = [False] * len(self.node_hashes)
        stack = [("r", r) for r in roots]
        while stack:
            kind, i = stack.pop()
            if kind == "r":
                if seen_regions[i]:
                    continue
                seen_regions[i] = True
                stack.extend(("n", j) for j, _ in self.region_raw[i][1])
            else:
                if seen_nodes[i]:
                    continue
                seen_nodes[i] = True
                inputs, regions = self.node_edges[i]
                stack.extend(("n", j) for j in inputs)
                stack.extend(("r", r) for r in regions)
        region_offsets = [at for _, _, at in self.region_raw]
        for what, seen, offsets in (
            ("regions", seen_regions, region_offsets),
            ("nodes", seen_nodes, self.node_offsets),
        ):
            if not all(seen):
                k = seen.index(False)
                raise KegError(
                    "unreachable",
                    f"{what} section: {what[:-1]} {k} is not reachable from any function",
                    offsets[k],
                )
