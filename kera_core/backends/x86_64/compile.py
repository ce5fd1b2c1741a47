"""The x86-64 backend: a graph function → its loop program → machine code, and the artifact.

Every function of the loop program is selected (:mod:`.select`) and handed to the shared
machine layer (schedule, allocate, frame, encode: ``kera_core.native.x86.emit.assemble``).
The code is position independent — calls go through the function table in the run's
context — so an artifact is the functions' bytes plus the graph fingerprint:

```
b"KERA-X86-64\\n" | fingerprint (32 bytes) | u32 header length | JSON header | code…
```

The header names the entry function, the instruction set level and each function's name and
code size, in program order (the order of the function table).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from kera_core.backends.x86_64.select import Isa, NotSelected, Selector
from kera_core.ir.graph import Graph
from kera_core.loops import NotLowered
from kera_core.loops.ir import Program
from kera_core.loops.lower import program_of
from kera_core.native import artifact, cpu
from kera_core.native.abi import check_recursion_stack
from kera_core.native.artifact import ArtifactError as ArtifactError  # re-exported
from kera_core.native.vcode import VCodeError
from kera_core.native.x86.emit import assemble
from kera_core.native.x86.target import x86_64_target

MAGIC = b"KERA-X86-64\n"
ISAS = ("sse2", "avx2", "avx512")


def isa_for(name: str | None = None) -> Isa:
    """The instruction-set level: `name`, or the best this CPU runs (from CPUID)."""
    feats = cpu.detect()
    if name is None:
        name = "avx512" if runs("avx512", feats) else "avx2" if runs("avx2", feats) else "sse2"
    if name not in ISAS:
        raise ValueError(f"unknown ISA level {name!r}: one of {', '.join(ISAS)}")
    if not runs(name, feats):
        raise ValueError(f"this CPU has no {NEEDS[name]}; use --isa {best(feats)}")
    if name == "sse2":
        return Isa("sse2", fma=False, sse41=False)
    return Isa(name, fma=True, sse41=True, vectors=True, zmm=name == "avx512")


# what each level's code needs of the CPU (and of the OS: the ymm / zmm and opmask state)
NEEDS = {"sse2": "SSE2", "avx2": "AVX2+FMA", "avx512": "AVX-512 (F, DQ, BW, VL) with FMA"}


def runs(name: str, feats: cpu.CpuFeatures | None = None) -> bool:
    """Whether this CPU runs code of level `name`."""
    f = cpu.detect() if feats is None else feats
    avx2 = f.avx2 and f.fma
    return {"sse2": True, "avx2": avx2, "avx512": avx2 and f.avx512}.get(name, False)


def best(feats: cpu.CpuFeatures | None = None) -> str:
    return next(n for n in reversed(ISAS) if runs(n, feats))


@dataclass
class Compiled:
    program: Program
    isa: Isa
    codes: list[tuple[str, bytes]]  # program order
    listings: dict[str, list[str]]


def compile_program(prog: Program, isa: Isa) -> Compiled:
    codes = []
    listings = {}
    frames = {}
    target = x86_64_target()
    for name, lf in prog.functions.items():
        sel = Selector(lf, prog, isa)
        vfn = sel.select()
        asm = assemble(vfn, target, outgoing_args=sel.outgoing_bytes)
        frames[name] = asm.frame.size + 8  # and the return address
        codes.append((name, asm.code))
        notes = {}
        last = None
        for b in asm.function.blocks:
            o = sel.block_origin.get(b.label)
            at = asm.block_offsets.get(b.label)
            if o is not None and o != last and at is not None:
                notes[at] = f"; {name} · node {o[0].hex()[:12]} `{o[1]}`"
                last = o
        listings[name] = asm.disassemble(notes)
    check_recursion_stack(prog, frames)
    return Compiled(prog, isa, codes, listings)


def unsupported(graph: Graph, fn: str) -> list[str]:
    """Why `fn` cannot be compiled for x86-64 (empty when it can)."""
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    try:
        compiled(graph, fn, Isa())
    except (NotLowered, NotSelected, VCodeError) as e:  # VCodeError: allocation refused
        return [str(e)]
    return []


def likely_unsupported(graph: Graph, fn: str) -> list[str]:
    """`unsupported` without register allocation and encoding (about a tenth of the cost):
    lowering and instruction selection refuse what the backend cannot select; a refused
    allocation (rare) shows only in the full check. A compiled function answers from the
    cache."""
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    if (fn, graph.functions[fn].hash, Isa()) in _CACHE:
        return []
    try:
        prog = program_of(graph, fn)
        for lf in prog.functions.values():
            Selector(lf, prog, Isa()).select()
    except (NotLowered, NotSelected, VCodeError) as e:
        return [str(e)]
    return []


_CACHE: OrderedDict[tuple[str, bytes, Isa], Compiled] = OrderedDict()
CACHE_SIZE = 64


def compiled(graph: Graph, fn: str, isa: Isa) -> Compiled:
    """The compiled program of `fn`, cached by the function's hash (which covers everything it
    calls: callees are named by hash) and the ISA level: a second build of the same function
    — the language server's preview after an edit elsewhere, `kera run --target all` — costs
    no compilation."""
    # the name too: two functions with one body share a hash, and the code is named
    key = (fn, graph.functions[fn].hash, isa)
    got = _CACHE.get(key)
    if got is not None:
        _CACHE.move_to_end(key)
        return got
    comp = compile_program(program_of(graph, fn), isa)
    _CACHE[key] = comp
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return comp


def build(graph: Graph, fn: str, isa: Isa) -> tuple[bytes, Compiled]:
    comp = compiled(graph, fn, isa)
    data = artifact.pack(MAGIC, graph.fingerprint(), fn, isa.name, comp.codes)
    return data, comp


def read(data: bytes, graph: Graph | None = None) -> tuple[dict, list[tuple[str, bytes]]]:
    """The header and the functions' code of an artifact (checked against `graph`)."""
    return artifact.unpack(MAGIC, "x86_64", data, None if graph is None else graph.fingerprint())


def check_runs_here(header: dict) -> None:
    """Refuse an artifact whose level this CPU lacks (its code would fault on the first
    instruction it does not have)."""
    name = header.get("isa")
    if name not in ISAS:
        raise ArtifactError(f"the artifact's instruction-set level {name!r} is unknown")
    if not runs(name):
        raise ArtifactError(
            f"the artifact is {name} code and this CPU has no {NEEDS[name]}; "
            f"rebuild it with --isa {best()}"
        )


def fingerprint_of(data: bytes) -> bytes:
    return artifact.fingerprint_of(MAGIC, "x86_64", data)
