"""The ARM64 backend: a graph function → its loop program → ARM64 machine code, and the
artifact.

Every function of the loop program is selected (:mod:`.select`) and handed to the shared
machine layer (schedule, allocate, frame: ``kera_core.native.arm64.emit.assemble``).  The
code is position independent — calls and host helpers go through the run's context — so an
artifact is the functions' bytes plus the graph fingerprint:

```
b"KERA-ARM64\\n" | fingerprint (32 bytes) | u32 header length | JSON header | code…
```
"""

from __future__ import annotations

import json
import struct
from collections import OrderedDict
from dataclasses import dataclass

from kera_core.backends.arm64.select import NotSelected, Selector
from kera_core.ir.graph import Graph
from kera_core.loops import NotLowered
from kera_core.loops.ir import Program
from kera_core.loops.lower import program_of
from kera_core.native.arm64.emit import assemble
from kera_core.native.arm64.target import arm64_target
from kera_core.native.vcode import VCodeError

MAGIC = b"KERA-ARM64\n"
ISA = "armv8-a"  # the baseline: scalar FP (NEON is not selected yet)


class ArtifactError(ValueError):
    """Bytes that are not an arm64 artifact, or not built from this graph."""


@dataclass
class Compiled:
    program: Program
    codes: list[tuple[str, bytes]]  # program order
    listings: dict[str, list[str]]


def compile_program(prog: Program) -> Compiled:
    codes = []
    listings = {}
    target = arm64_target()
    for name, lf in prog.functions.items():
        sel = Selector(lf, prog)
        vfn = sel.select()
        asm = assemble(vfn, target, outgoing_args=sel.outgoing_bytes)
        codes.append((name, asm.code))
        listings[name] = asm.disassemble()
    return Compiled(prog, codes, listings)


def unsupported(graph: Graph, fn: str) -> list[str]:
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    try:
        compiled(graph, fn)
    except (NotLowered, NotSelected, VCodeError) as e:  # VCodeError: e.g. a frame past stp's reach
        return [str(e)]
    return []


_CACHE: OrderedDict[tuple[str, bytes], Compiled] = OrderedDict()
CACHE_SIZE = 64


def compiled(graph: Graph, fn: str) -> Compiled:
    """Cached by the function's name and hash (which covers its callees)."""
    key = (fn, graph.functions[fn].hash)
    got = _CACHE.get(key)
    if got is not None:
        _CACHE.move_to_end(key)
        return got
    comp = compile_program(program_of(graph, fn))
    _CACHE[key] = comp
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return comp


def build(graph: Graph, fn: str) -> tuple[bytes, Compiled]:
    comp = compiled(graph, fn)
    header = json.dumps(
        {"entry": fn, "isa": ISA, "functions": [[n, len(c)] for n, c in comp.codes]},
        sort_keys=True,
    ).encode()
    data = MAGIC + graph.fingerprint() + struct.pack("<I", len(header)) + header
    data += b"".join(c for _, c in comp.codes)
    return data, comp


def read(data: bytes, graph: Graph | None = None) -> tuple[dict, list[tuple[str, bytes]]]:
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 36:
        raise ArtifactError("not an arm64 artifact")
    at = len(MAGIC)
    fp = data[at : at + 32]
    if graph is not None and fp != graph.fingerprint():
        raise ArtifactError("the artifact was not built from this graph (fingerprint differs)")
    (n,) = struct.unpack_from("<I", data, at + 32)
    try:
        header = json.loads(data[at + 36 : at + 36 + n])
    except ValueError:
        raise ArtifactError("the artifact's header is damaged") from None
    at += 36 + n
    codes = []
    for name, size in header["functions"]:
        codes.append((name, data[at : at + size]))
        at += size
    if at != len(data):
        raise ArtifactError("the artifact's code does not match its header")
    return header, codes


def fingerprint_of(data: bytes) -> bytes:
    if not data.startswith(MAGIC):
        raise ArtifactError("not an arm64 artifact")
    return data[len(MAGIC) : len(MAGIC) + 32]
