"""A hostile reader's view of `.keg`: whatever the bytes, only `KegError` comes out.

Mutations are made both in front of the checksums (which must catch them) and behind
them (re-sealed, so the section parsers themselves are fuzzed). Memory and time stay
bounded: a count or length claiming 2^60 entries fails before anything is allocated.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.keg import KINDS, KegError, read_keg, write_keg
from kera_core.keg.format import FORMAT_VERSION, OLDEST_FORMAT, Section
from tests.test_keg_errors import body, edit_nodes, join, parse_nodes, replace, split, uvar

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))


def _build(path: Path, provenance: bool) -> bytes:
    a = analyze(path.read_text(encoding="utf-8"))
    return write_keg(a.module.graph, a.module.provenance if provenance else None)


FILES = [_build(p, prov) for p in EXAMPLES for prov in (True, False)]
SMALL = min(FILES, key=len)
files = st.sampled_from(FILES)


def only_keg_errors(data: bytes) -> str | None:
    """Read ``data``; the error kind, or None if it is a valid file. Anything else fails."""
    try:
        k = read_keg(data)
    except KegError as e:
        assert e.kind in KINDS
        assert e.offset is None or 0 <= e.offset <= len(data)
        return e.kind
    # a file that reads is self-consistent: its bytes re-encode and re-read identically
    again = read_keg(write_keg(k.graph, k.provenance))
    assert again.fingerprint == k.fingerprint
    return None


@given(files, st.data())
def test_every_single_bit_flip_is_detected(data: bytes, draw) -> None:
    bit = draw.draw(st.integers(0, len(data) * 8 - 1))
    flipped = bytearray(data)
    flipped[bit // 8] ^= 1 << (bit % 8)
    assert only_keg_errors(bytes(flipped)) is not None


def test_every_truncation_of_a_small_file_is_detected() -> None:
    for n in range(len(SMALL)):
        assert only_keg_errors(SMALL[:n]) is not None, n


@given(files, st.data())
def test_truncations(data: bytes, draw) -> None:
    n = draw.draw(st.integers(0, len(data) - 1))
    assert only_keg_errors(data[:n]) is not None


@given(st.binary(max_size=2000))
def test_random_bytes(data: bytes) -> None:
    assert only_keg_errors(data) is not None


@given(st.binary(max_size=500))
def test_random_bytes_after_a_valid_header(tail: bytes) -> None:
    assert only_keg_errors(SMALL[:48] + tail) is not None


@given(files, st.data())
def test_resealed_byte_edits_inside_sections(data: bytes, draw) -> None:
    """Edits behind the checksums reach the section parsers; they must fail cleanly."""
    head, sections = split(data)
    k = draw.draw(st.integers(0, len(sections) - 1))
    b = bytearray(sections[k][1])
    for _ in range(draw.draw(st.integers(1, 4))):
        if not b:
            break
        op = draw.draw(st.sampled_from(["set", "insert", "delete"]))
        i = draw.draw(st.integers(0, len(b) - 1))
        if op == "set":
            b[i] = draw.draw(st.integers(0, 255))
        elif op == "insert":
            b.insert(i, draw.draw(st.integers(0, 255)))
        else:
            del b[i]
    sections[k][1] = bytes(b)
    only_keg_errors(join(head, sections))


@given(files, files, st.data())
def test_spliced_sections(a: bytes, b: bytes, draw) -> None:
    head_a, secs_a = split(a)
    head_b, secs_b = split(b)
    by_b = dict((sid, body) for sid, body in secs_b)
    mixed = [[sid, by_b.get(sid, bod) if draw.draw(st.booleans()) else bod] for sid, bod in secs_a]
    head = head_a if draw.draw(st.booleans()) else head_b
    data = join(head, mixed)
    if only_keg_errors(data) is None:  # e.g. only provenance was swapped, or a == b
        assert read_keg(data).fingerprint == head["fp"]


@given(files, st.data())
def test_forward_references_and_cycles(data: bytes, draw) -> None:
    _, sections = split(data)
    nodes = parse_nodes(body(sections, Section.NODES))
    users = [k for k, n in enumerate(nodes) if n[2]]
    k = draw.draw(st.sampled_from(users))
    j = draw.draw(st.integers(k, len(nodes) + 3))
    slot = draw.draw(st.integers(0, len(nodes[k][2]) - 1))

    def edit(ns):
        ns[k][2][slot][0] = j

    kind = only_keg_errors(edit_nodes(data, edit))
    assert kind == ("forward-ref" if j < len(nodes) else "index")


@given(files, st.data())
def test_wrong_function_hashes(data: bytes, draw) -> None:
    _, sections = split(data)
    fns = bytearray(body(sections, Section.FUNCTIONS))
    # every function entry ends with its 32-byte hash; the last one ends the section
    i = len(fns) - 1 - draw.draw(st.integers(0, 31))
    fns[i] ^= draw.draw(st.integers(1, 255))
    assert only_keg_errors(replace(data, Section.FUNCTIONS, bytes(fns))) == "hash-mismatch"


@given(files, st.integers(0, 0xFFFF).filter(lambda v: not OLDEST_FORMAT <= v <= FORMAT_VERSION))
def test_unknown_versions(data: bytes, version: int) -> None:
    head, sections = split(data)
    assert only_keg_errors(join(head, sections, version=version)) == "version"


@given(files, st.sampled_from(list(Section)), st.integers(2**40, 2**69))
def test_absurd_counts_are_cheap(data: bytes, section: Section, n: int) -> None:
    head, sections = split(data)
    if section not in dict((s, b) for s, b in sections):
        return
    b = body(sections, section)
    rest = b[len(uvar(_first_uvar(b))) :]
    assert only_keg_errors(replace(data, section, uvar(n) + rest)) == "count"


def _first_uvar(b: bytes) -> int:
    from kera_core.ir.encoding import Reader

    return Reader(b).uvar()


@pytest.mark.parametrize(
    "field,value", [("count", 2**60), ("length", 2**60), ("sections", 2**32 - 1)]
)
def test_huge_claims_fail_fast_in_bounded_memory(field: str, value: int) -> None:
    data = bytearray(FILES[0])
    if field == "count":
        data = bytearray(replace(bytes(data), Section.NODES, uvar(value) + b"\x00" * 64))
    elif field == "length":
        struct.pack_into("<Q", data, 48 + 12, value)
    else:
        struct.pack_into("<I", data, 12, value)
    tracemalloc.start()
    t = time.perf_counter()
    with pytest.raises(KegError):
        read_keg(bytes(data))
    elapsed = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 1.0
    assert peak < 4 * len(data) + 1_000_000
