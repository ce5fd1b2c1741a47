"""The `x86_64` target: native code JIT-run in this process (docs/targets/x86_64.md).

A function is lowered to its loop program (kera_core/loops), selected for the instruction
set level (``isa``: the best this CPU has by CPUID, or ``--isa sse2|avx2|avx512``), and assembled by
the shared machine layer (kera_core/native). The artifact holds the graph fingerprint and
position-independent code for the function and what it calls.
"""

from __future__ import annotations

from types import SimpleNamespace

from kera_core.backends.x86_64 import compile as X
from kera_core.backends.x86_64.runtime import Loaded, run
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance
from kera_core.targets import Artifact, register
from kera_core.targets import run_module as _run_module


class X86Target:
    name = "x86_64"
    description = (
        "x86-64 native code (SSE2 baseline, AVX2+FMA or AVX-512 where the CPU has it), JIT-run"
    )
    suffix = ".bin"

    per_function = True
    supports_max_steps = True  # every source loop counts its iterations
    isa: str | None = None  # None: chosen from CPUID; `kera build/run --isa` sets it

    def unsupported(self, graph: Graph, fn: str | None = None) -> list[str]:
        if fn is None:
            return ["the x86_64 target compiles one function at a time (give `fn`)"]
        return X.unsupported(graph, fn)

    def likely_unsupported(self, graph: Graph, fn: str) -> list[str]:
        return X.likely_unsupported(graph, fn)

    def _check(self, graph: Graph, fn: str | None) -> str:
        why = self.unsupported(graph, fn)
        if why:
            raise ValueError(f"x86_64 cannot compile `{fn}`: " + "; ".join(why))
        assert fn is not None
        return fn

    def lower(self, graph: Graph, provenance: Provenance | None, fn: str | None = None) -> Artifact:
        fn = self._check(graph, fn)
        data, comp = X.build(graph, fn, X.isa_for(self.isa))
        return Artifact(self.name, data, graph.fingerprint(), self.suffix, listing(comp, fn))

    def preview(self, graph: Graph, provenance: Provenance | None, fn: str) -> str:
        why = self.unsupported(graph, fn)
        if why:
            return "; not supported by the x86_64 target:\n" + "".join(f";   {w}\n" for w in why)
        _, comp = X.build(graph, fn, X.isa_for(self.isa))
        return listing(comp, fn)

    def run(self, artifact: Artifact, graph: Graph, fn: str, inputs: dict, dims=None, **kw):
        header, codes = X.read(artifact.data, graph)
        X.check_runs_here(header)
        loaded = Loaded(codes)
        try:
            source = SimpleNamespace(graph=graph, provenance=kw.pop("provenance", None))
            return run(loaded, source, fn, inputs, dims, **kw)
        finally:
            loaded.close()


def listing(comp: X.Compiled, entry: str) -> str:
    """Readable assembly: every function, entry last, with the ISA level."""
    out = [f"; x86_64 ({comp.isa.name}), entry `{entry}`"]
    for name, lines in comp.listings.items():
        out.append(f"\n{name}:")
        out += [f"    {ln}" for ln in lines]
    return "\n".join(out) + "\n"


TARGET = register(X86Target())


def run_module(module, fn: str, inputs: dict, dims=None, *, stdout=None, max_steps=None):
    return _run_module(TARGET, module, fn, inputs, dims, stdout=stdout, max_steps=max_steps)
