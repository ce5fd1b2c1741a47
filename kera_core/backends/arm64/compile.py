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

from collections import OrderedDict
from dataclasses import dataclass

from kera_core.backends.arm64.select import NotSelected, Selector
from kera_core.ir.graph import Graph
from kera_core.loops import NotLowered
from kera_core.loops.ir import Program
from kera_core.loops.lower import program_of
from kera_core.native import artifact
from kera_core.native.abi import check_recursion_stack
from kera_core.native.arm64.emit import assemble
from kera_core.native.arm64.target import arm64_target
from kera_core.native.artifact import ArtifactError as ArtifactError  # re-exported
from kera_core.native.vcode import VCodeError

MAGIC = b"KERA-ARM64\n"
ISA = "armv8-a"  # the baseline: scalar FP and Advanced SIMD (NEON `lanes` loops: vector.py)


@dataclass
class Compiled:
    program: Program
    codes: list[tuple[str, bytes]]  # program order
    listings: dict[str, list[str]]


def compile_program(prog: Program) -> Compiled:
    codes = []
    listings = {}
    frames = {}
    target = arm64_target()
    for name, lf in prog.functions.items():
        sel = Selector(lf, prog)
        vfn = sel.select()
        asm = assemble(vfn, target, outgoing_args=sel.outgoing_bytes)
        frames[name] = asm.frame.size  # (the return address is in the frame record)
        codes.append((name, asm.code))
        listings[name] = asm.disassemble()
    check_recursion_stack(prog, frames)
    return Compiled(prog, codes, listings)


def unsupported(graph: Graph, fn: str) -> list[str]:
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    try:
        compiled(graph, fn)
    except (NotLowered, NotSelected, VCodeError) as e:  # VCodeError: e.g. a frame past stp's reach
        return [str(e)]
    return []


def likely_unsupported(graph: Graph, fn: str) -> list[str]:
    """`unsupported` without register allocation and encoding (see the x86-64 backend's)."""
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    if (fn, graph.functions[fn].hash) in _CACHE:
        return []
    try:
        prog = program_of(graph, fn)
        for lf in prog.functions.values():
            Selector(lf, prog).select()
    except (NotLowered, NotSelected, VCodeError) as e:
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
    data = artifact.pack(MAGIC, graph.fingerprint(), fn, ISA, comp.codes)
    return data, comp


def read(data: bytes, graph: Graph | None = None) -> tuple[dict, list[tuple[str, bytes]]]:
    """The header and the functions' code of an artifact (checked against `graph`)."""
    return artifact.unpack(MAGIC, "arm64", data, None if graph is None else graph.fingerprint())


def fingerprint_of(data: bytes) -> bytes:
    return artifact.fingerprint_of(MAGIC, "arm64", data)
