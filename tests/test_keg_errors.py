"""Every `KegError` kind, provoked by a hand-made defect in an otherwise valid file.

The helpers re-implement the container layout from docs/keg.md independently of the
writer, and re-seal checksums, so a defect can be placed behind the checksum layer
and reach the check it is aimed at.
"""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path

import pytest

from kera_core.analysis import analyze
from kera_core.ir.encoding import SCHEMA_VERSION, Reader, Writer
from kera_core.ir.semantics import SEMANTICS_VERSION
from kera_core.keg import KINDS, KegError, read_keg, write_keg
from kera_core.keg.format import Section

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))


def build(path: Path, provenance: bool = True) -> bytes:
    a = analyze(path.read_text(encoding="utf-8"))
    assert not a.has_errors
    return write_keg(a.module.graph, a.module.provenance if provenance else None)


SAXPY = build(ROOT / "examples" / "saxpy.kera")


# --- the container, by the spec -------------------------------------------------------
def split(data: bytes) -> tuple[dict, list[list]]:
    magic, version, flags, schema, n, fingerprint = struct.unpack_from("<4sHHII32s", data)
    head = {"magic": magic, "version": version, "flags": flags, "schema": schema, "fp": fingerprint}
    sections = []
    for k in range(n):
        sid, off, length, _ = struct.unpack_from("<IQQ32s", data, 48 + 52 * k)
        sections.append([sid, data[off : off + length]])
    return head, sections


def join(head: dict, sections: list[list], **override) -> bytes:
    """Header + table + bodies, with correct offsets and checksums unless overridden."""
    h = {**head, **override}
    out = [
        struct.pack(
            "<4sHHII32s", h["magic"], h["version"], h["flags"], h["schema"], len(sections), h["fp"]
        )
    ]
    offset = 48 + 52 * len(sections)
    for k, (sid, body) in enumerate(sections):
        # from format 3 the first checksum covers the header's first 16 bytes too
        covered = out[0][:16] if k == 0 and h["version"] >= 3 else b""
        checksum = hashlib.sha3_256(covered + body).digest()
        out.append(struct.pack("<IQQ32s", sid, offset, len(body), checksum))
        offset += len(body)
    out.extend(body for _, body in sections)
    return b"".join(out)


def body(sections: list[list], sid: Section) -> bytes:
    return next(b for s, b in sections if s == sid)


def replace(data: bytes, sid: Section, new: bytes) -> bytes:
    head, sections = split(data)
    for entry in sections:
        if entry[0] == sid:
            entry[1] = new
    return join(head, sections)


def uvar(v: int) -> bytes:
    w = Writer()
    w.uvar(v)
    return w.getvalue()


# --- the nodes section as records -------------------------------------------------------
def parse_nodes(b: bytes) -> list[list]:
    r = Reader(b)
    out = []
    for _ in range(r.uvar()):
        op = r.uvar()
        types = [r.uvar() for _ in range(r.uvar())]
        inputs = [[r.uvar(), r.uvar()] for _ in range(r.uvar())]
        attrs = r.uvar()
        regions = [r.uvar() for _ in range(r.uvar())]
        out.append([op, types, inputs, attrs, regions])
    assert r.pos == len(b)
    return out


def encode_nodes(nodes: list[list]) -> bytes:
    w = Writer()
    w.uvar(len(nodes))
    for op, types, inputs, attrs, regions in nodes:
        w.uvar(op)
        w.uvar(len(types))
        for t in types:
            w.uvar(t)
        w.uvar(len(inputs))
        for j, i in inputs:
            w.uvar(j)
            w.uvar(i)
        w.uvar(attrs)
        w.uvar(len(regions))
        for r in regions:
            w.uvar(r)
    return w.getvalue()


def parse_regions(b: bytes) -> list[list]:
    r = Reader(b)
    out = []
    for _ in range(r.uvar()):
        params = [r.uvar() for _ in range(r.uvar())]
        yields = [[r.uvar(), r.uvar()] for _ in range(r.uvar())]
        out.append([params, yields])
    return out


def encode_regions(regions: list[list]) -> bytes:
    w = Writer()
    w.uvar(len(regions))
    for params, yields in regions:
        w.uvar(len(params))
        for t in params:
            w.uvar(t)
        w.uvar(len(yields))
        for j, i in yields:
            w.uvar(j)
            w.uvar(i)
    return w.getvalue()


def parse_strings(b: bytes) -> list[bytes]:
    r = Reader(b)
    return [r.bytes() for _ in range(r.uvar())]


def encode_strings(strings: list[bytes]) -> bytes:
    w = Writer()
    w.uvar(len(strings))
    for s in strings:
        w.bytes(s)
    return w.getvalue()


def edit_nodes(data: bytes, fn) -> bytes:
    _, sections = split(data)
    nodes = parse_nodes(body(sections, Section.NODES))
    fn(nodes)
    return replace(data, Section.NODES, encode_nodes(nodes))


def kind_of(data: bytes) -> str:
    with pytest.raises(KegError) as e:
        read_keg(data)
    assert e.value.kind in KINDS
    return e.value.kind


# --- sanity of the helpers ------------------------------------------------------------
def test_helpers_reproduce_the_writer() -> None:
    head, sections = split(SAXPY)
    assert join(head, sections) == SAXPY
    nodes = parse_nodes(body(sections, Section.NODES))
    assert encode_nodes(nodes) == body(sections, Section.NODES)
    regions = parse_regions(body(sections, Section.REGIONS))
    assert encode_regions(regions) == body(sections, Section.REGIONS)
    assert read_keg(SAXPY).graph.fingerprint() == split(SAXPY)[0]["fp"]


# --- header and table ----------------------------------------------------------------
def test_magic() -> None:
    assert kind_of(b"PK\x03\x04" + SAXPY[4:]) == "magic"
    assert kind_of(b"") == "truncated"
    assert kind_of(b"KEG") == "truncated"
    assert kind_of(b"fn main() {}") == "magic"


def test_truncated_header_table_and_section() -> None:
    assert kind_of(SAXPY[:20]) == "truncated"
    assert kind_of(SAXPY[:60]) == "truncated"
    assert kind_of(SAXPY[:-1]) == "truncated"


@pytest.mark.parametrize("version", [0, 4, 0xFFFF])
def test_unknown_version(version: int) -> None:
    head, sections = split(SAXPY)
    assert kind_of(join(head, sections, version=version)) == "version"


def test_the_header_is_covered_by_the_first_checksum() -> None:
    """Format 3: a header field changed without the first checksum made again is a checksum
    error — the semantics version too, which can be changed to another valid version (3 to
    2 flips one bit) under which the graph reads the same; format 2 files, whose checksums
    cover the sections only, still read."""
    head, sections = split(SAXPY)
    for field, value in (("flags", 2), ("flags", 1), ("version", 2)):
        changed = bytearray(SAXPY)
        at = {"version": 4, "flags": 6}[field]
        changed[at : at + 2] = value.to_bytes(2, "little")
        assert kind_of(bytes(changed)) == "checksum", (field, value)
        assert (
            read_keg(join(head, sections, **{field: value})).fingerprint
            == read_keg(SAXPY).fingerprint
        )
    v2 = join(head, sections, version=2)  # its checksums over the sections alone
    assert read_keg(v2).fingerprint == read_keg(SAXPY).fingerprint


def test_flags_and_schema() -> None:
    head, sections = split(SAXPY)
    # format 1: the u16 after the version was reserved flags
    assert kind_of(join(head, sections, version=1, flags=1)) == "flags"
    assert kind_of(join(head, sections, schema=SCHEMA_VERSION + 1)) == "schema"


def test_the_semantics_version() -> None:
    """Formats 2 and 3 record the semantics version (kera_core.ir.semantics) where format 1 had
    reserved flags; format 1 means semantics version 1."""
    head, sections = split(SAXPY)
    assert (head["version"], head["flags"]) == (3, SEMANTICS_VERSION)
    for bad in (0, SEMANTICS_VERSION + 1, 0xFFFF):
        assert kind_of(join(head, sections, flags=bad)) == "semantics"
    # saxpy uses no operation whose bits changed since version 1: a file written then (format
    # 1, semantics 1) still reads, with the same fingerprint
    old = read_keg(join(head, sections, version=1, flags=0))
    assert old.fingerprint == read_keg(SAXPY).fingerprint
    # f32 `exp` changed its bits in version 2: a version-1 file using it is refused, with the
    # node, the operation and what to do
    src = "pub fn f[N](x: &f32[N]) -> f32[N] { exp(x) + 1.0 }\n"
    data = write_keg(analyze(src).module.graph)
    head, sections = split(data)
    with pytest.raises(KegError) as e:
        read_keg(join(head, sections, version=1, flags=0))
    assert e.value.kind == "semantics"
    assert "`exp` on f32" in e.value.message and "semantics version 2" in e.value.message
    assert "rebuild" in e.value.message
    read_keg(data)  # as written: fine
    # f64 `sigmoid` changed in version 3: a version-2 file using it is refused; one using
    # f32 `sigmoid` (last changed in version 2) still reads, with the same fingerprint
    for t, refused in (("f64", True), ("f32", False)):
        src = f"pub fn f[N](x: &{t}[N]) -> {t}[N] {{ sigmoid(x) }}\n"
        data = write_keg(analyze(src).module.graph)
        head, sections = split(data)
        v2 = join(head, sections, flags=2)
        if refused:
            with pytest.raises(KegError) as e:
                read_keg(v2)
            assert e.value.kind == "semantics"
            assert "`sigmoid` on f64" in e.value.message
            assert "semantics version 3" in e.value.message
        else:
            assert read_keg(v2).fingerprint == read_keg(data).fingerprint


def test_unknown_missing_duplicate_and_unordered_sections() -> None:
    head, sections = split(SAXPY)
    assert kind_of(join(head, [*sections, [99, b""]])) == "unknown-section"
    assert kind_of(join(head, [s for s in sections if s[0] != Section.ATTRS])) == "missing-section"
    assert kind_of(join(head, [sections[0], *sections])) == "duplicate"
    assert kind_of(join(head, [sections[1], sections[0], *sections[2:]])) == "order"


def test_layout_gap_and_overlap() -> None:
    data = bytearray(SAXPY)
    off = struct.unpack_from("<Q", data, 48 + 52 + 4)[0]
    struct.pack_into("<Q", data, 48 + 52 + 4, off + 1)
    assert kind_of(bytes(data)) == "layout"


@pytest.mark.parametrize("length", [2**60, 2**64 - 1])
def test_huge_section_length_fails_fast(length: int) -> None:
    data = bytearray(SAXPY)
    struct.pack_into("<Q", data, 48 + 12, length)
    assert kind_of(bytes(data)) == "truncated"


def test_huge_section_count_fails_fast() -> None:
    data = bytearray(SAXPY)
    struct.pack_into("<I", data, 12, 0xFFFFFFFF)
    assert kind_of(bytes(data)) == "truncated"


def test_checksum() -> None:
    data = bytearray(SAXPY)
    data[-1] ^= 0x01
    assert kind_of(bytes(data)) == "checksum"


def test_trailing_bytes() -> None:
    assert kind_of(SAXPY + b"\x00") == "trailing"
    _, sections = split(SAXPY)
    assert (
        kind_of(replace(SAXPY, Section.STRINGS, body(sections, Section.STRINGS) + b"\x00"))
        == "trailing"
    )


# --- section contents ----------------------------------------------------------------
def test_varint_overlong_and_too_long() -> None:
    _, sections = split(SAXPY)
    nodes = body(sections, Section.NODES)
    r = Reader(nodes)
    n = r.uvar()
    rest = nodes[r.pos :]
    overlong = (
        bytes([(n & 0x7F) | 0x80, n >> 7]) + bytes([0x80, 0x00])
        if n >= 128
        else bytes([n | 0x80, 0x00])
    )
    assert kind_of(replace(SAXPY, Section.NODES, overlong + rest)) == "varint"
    assert kind_of(replace(SAXPY, Section.NODES, b"\x80" * 11 + b"\x01" + rest)) == "varint"


@pytest.mark.parametrize(
    "section",
    [
        Section.STRINGS,
        Section.TYPES,
        Section.ATTRS,
        Section.NODES,
        Section.REGIONS,
        Section.FUNCTIONS,
        Section.PROVENANCE,
    ],
)
def test_absurd_counts_fail_fast(section: Section) -> None:
    """A section claiming 2^60 entries is rejected before any loop or allocation."""
    _, sections = split(SAXPY)
    b = body(sections, section)
    r = Reader(b)
    r.uvar()
    assert kind_of(replace(SAXPY, section, uvar(2**60) + b[r.pos :])) == "count"


def test_index_out_of_range() -> None:
    def bad_input(nodes):
        k = next(k for k, n in enumerate(nodes) if n[2])
        nodes[k][2][0][0] = len(nodes) + 5

    assert kind_of(edit_nodes(SAXPY, bad_input)) == "index"

    def bad_op(nodes):
        nodes[0][0] = 10_000

    assert kind_of(edit_nodes(SAXPY, bad_op)) == "index"


def test_forward_reference_and_self_reference() -> None:
    def self_ref(nodes):
        k = next(k for k, n in enumerate(nodes) if n[2])
        nodes[k][2][0][0] = k

    assert kind_of(edit_nodes(SAXPY, self_ref)) == "forward-ref"

    def later(nodes):
        k = next(k for k, n in enumerate(nodes) if n[2])
        nodes[k][2][0][0] = len(nodes) - 1

    assert kind_of(edit_nodes(SAXPY, later)) == "forward-ref"


def test_region_yielding_a_later_node() -> None:
    _, sections = split(SAXPY)
    nodes = parse_nodes(body(sections, Section.NODES))
    regions = parse_regions(body(sections, Section.REGIONS))
    user = next(k for k, n in enumerate(nodes) if n[4])  # the `for`
    r = nodes[user][4][0]
    regions[r][1][0] = [len(nodes) - 1, 0]
    assert user < len(nodes) - 1
    assert kind_of(replace(SAXPY, Section.REGIONS, encode_regions(regions))) == "forward-ref"


def test_output_index() -> None:
    def bad(nodes):
        k = next(k for k, n in enumerate(nodes) if n[2])
        nodes[k][2][0][1] = 7

    assert kind_of(edit_nodes(SAXPY, bad)) == "output-index"


def test_invalid_utf8_string() -> None:
    _, sections = split(SAXPY)
    strings = parse_strings(body(sections, Section.STRINGS))
    strings[0] = b"\xff\xfe"
    assert kind_of(replace(SAXPY, Section.STRINGS, encode_strings(strings))) == "utf8"


def test_duplicate_string() -> None:
    _, sections = split(SAXPY)
    strings = parse_strings(body(sections, Section.STRINGS))
    assert (
        kind_of(replace(SAXPY, Section.STRINGS, encode_strings([*strings, strings[0]])))
        == "duplicate"
    )


def test_unknown_opcode() -> None:
    _, sections = split(SAXPY)
    strings = parse_strings(body(sections, Section.STRINGS))
    strings[strings.index(b"add")] = b"frobnicate"
    assert kind_of(replace(SAXPY, Section.STRINGS, encode_strings(strings))) == "unknown-op"


@pytest.mark.parametrize(
    "entry",
    [
        b"\x01\x03f16",  # unknown primitive
        b"\x02\x02\x01\x03f32\x00\x04host\x00\x04host",  # a tensor of tensors
        b"\x09",  # unknown tag
        b"\x08\x01\x03f32",  # range over a float
        b"\x04\x02\x01\x03f32",  # mutability flag 2
        b"\x05\x00\x00\x06\x01\x04warp",  # unknown effect
        b"\x04\x00" * 70 + b"\x06",  # nested too deep
    ],
)
def test_bad_type_entries(entry: bytes) -> None:
    _, sections = split(SAXPY)
    b = body(sections, Section.TYPES)
    r = Reader(b)
    n = r.uvar()
    new = uvar(n + 1) + b[r.pos :] + uvar(len(entry)) + entry
    assert kind_of(replace(SAXPY, Section.TYPES, new)) in ("bad-type", "truncated", "trailing")


def test_bad_type_kinds_exactly() -> None:
    _, sections = split(SAXPY)
    b = body(sections, Section.TYPES)
    r = Reader(b)
    n = r.uvar()

    def with_entry(entry: bytes) -> bytes:
        return replace(SAXPY, Section.TYPES, uvar(n + 1) + b[r.pos :] + uvar(len(entry)) + entry)

    assert kind_of(with_entry(b"\x01\x03f16")) == "bad-type"
    assert kind_of(with_entry(b"\x06\x06")) == "trailing"
    assert kind_of(with_entry(b"\x01\x03f3")) == "truncated"
    assert kind_of(with_entry(b"\x01\x03f32")) == "duplicate"


def test_bad_attribute_tag() -> None:
    _, sections = split(SAXPY)
    b = body(sections, Section.ATTRS)
    r = Reader(b)
    n = r.uvar()
    new = uvar(n + 1) + b[r.pos :] + b"\x01\x00\x09\x00"
    assert kind_of(replace(SAXPY, Section.ATTRS, new)) == "bad-attr"


def test_unsorted_attribute_keys() -> None:
    _, sections = split(SAXPY)
    b = body(sections, Section.ATTRS)
    r = Reader(b)
    n = r.uvar()
    new = uvar(n + 1) + b[r.pos :] + b"\x02\x01\x01\x00\x00\x01\x00"
    assert kind_of(replace(SAXPY, Section.ATTRS, new)) == "order"


def test_bad_function_exported_flag_and_hash() -> None:
    _, sections = split(SAXPY)
    fns = bytearray(body(sections, Section.FUNCTIONS))
    hashed = bytearray(fns)
    hashed[-1] ^= 0xFF  # last function's stored hash
    assert kind_of(replace(SAXPY, Section.FUNCTIONS, bytes(hashed))) == "hash-mismatch"
    r = Reader(bytes(fns))
    r.uvar()
    r.uvar(), r.uvar(), r.uvar()  # name, type, region
    fns[r.pos] = 4  # flags (bit 0 exported, bit 1 a recursive member): nothing above 3
    assert kind_of(replace(SAXPY, Section.FUNCTIONS, bytes(fns))) == "bad-function"


def test_function_with_a_non_function_type() -> None:
    _, sections = split(SAXPY)
    fns = bytearray(body(sections, Section.FUNCTIONS))
    types = body(sections, Section.TYPES)
    r = Reader(types)
    n = r.uvar()
    kinds = [r.bytes()[0] for _ in range(n)]
    prim = kinds.index(1)
    r = Reader(bytes(fns))
    r.uvar()
    r.uvar()
    fns[r.pos] = prim  # the first function's type index (one byte: few types)
    assert kind_of(replace(SAXPY, Section.FUNCTIONS, bytes(fns))) == "bad-function"


def test_wrong_header_fingerprint() -> None:
    head, sections = split(SAXPY)
    assert kind_of(join(head, sections, fp=bytes(32))) == "hash-mismatch"


def test_changed_constant_is_a_hash_mismatch() -> None:
    """Re-sealed checksums do not help a forger: the function hashes are recomputed."""
    src = "pub fn f(a: f32) -> f32 { a * 2.0 }\n"
    a = analyze(src)
    data = write_keg(a.module.graph)
    _, sections = split(data)
    attrs = body(sections, Section.ATTRS)
    two = uvar(2 * 0x40000000)  # zigzag of the bits of 2.0f32
    assert two in attrs
    forged = replace(data, Section.ATTRS, attrs.replace(two, uvar(2 * 0x40400000)))
    assert kind_of(forged) == "hash-mismatch"


def test_unreachable_node() -> None:
    def extra(nodes):
        k = next(k for k, n in enumerate(nodes) if n[2])
        nodes.append([nodes[k][0], nodes[k][1], [[0, 0]] * 3, nodes[k][3], []])

    assert kind_of(edit_nodes(SAXPY, extra)) == "unreachable"


def test_duplicate_node() -> None:
    def dup(nodes):
        nodes.insert(1, nodes[0])

    assert kind_of(edit_nodes(SAXPY, dup)) in ("duplicate", "forward-ref", "output-index")

    def dup_leaf(nodes):
        nodes.append(nodes[0])

    assert kind_of(edit_nodes(SAXPY, dup_leaf)) == "duplicate"


def test_every_kind_is_documented() -> None:
    doc = (ROOT / "docs" / "keg.md").read_text(encoding="utf-8").split("\n## Errors\n")[1]
    documented = set(re.findall(r"^\| `([a-z0-9-]+)` \|", doc, re.M))
    assert documented == set(KINDS)


def test_error_carries_kind_offset_and_section() -> None:
    def self_ref(nodes):
        k = next(k for k, n in enumerate(nodes) if n[2])
        nodes[k][2][0][0] = k

    with pytest.raises(KegError) as e:
        read_keg(edit_nodes(SAXPY, self_ref))
    err = e.value
    assert err.kind == "forward-ref"
    assert "nodes section" in str(err) and f"byte {err.offset}" in str(err)
    head, sections = split(SAXPY)
    start = 48 + 52 * len(sections) + sum(len(b) for s, b in sections if s < Section.NODES)
    assert start <= err.offset < start + len(body(sections, Section.NODES))


def _tiny_graph(callee: bytes | None = None, outputs=(("result", -1),)):
    from kera_core.ir.graph import Graph
    from kera_core.ir.node import Function, Node, Region
    from kera_core.ir.types import F32, FnType

    fn_type = FnType(0, (F32,), F32)
    g = Graph()
    v = g.add(Node("param", (), (F32,), {"index": 0, "type": F32}))
    if callee is not None:
        attrs = {"callee": callee, "fn": fn_type, "results": (F32,)}
        v = g.add(Node("call", (v.out(),), (F32,), attrs))
    r = g.add_region(Region((F32,), (v.out(),)))
    g.functions["f"] = Function("f", fn_type, r.hash, True, outputs)
    return g


def test_tiny_graph_reads() -> None:
    assert read_keg(write_keg(_tiny_graph())).graph.functions["f"].outputs == (("result", -1),)


def test_call_of_a_function_not_in_the_file() -> None:
    assert kind_of(write_keg(_tiny_graph(callee=bytes(32)))) == "bad-callee"


def test_outputs_that_the_type_does_not_imply() -> None:
    assert kind_of(write_keg(_tiny_graph(outputs=()))) == "bad-function"
    assert kind_of(write_keg(_tiny_graph(outputs=(("param", 0),)))) == "bad-function"
