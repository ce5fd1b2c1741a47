"""The `arm64` target: AArch64 machine code, run in this process — natively on an ARM64
host, under unicorn emulation elsewhere (docs/targets/arm64.md).

A function is lowered to its loop program (kera_core/loops), selected for ARMv8-A (scalar FP,
and NEON for the `lanes` loops the shared layer plans as vectors) and assembled by the shared
machine layer (kera_core/native). The artifact holds the graph fingerprint and
position-independent code for the function and what it calls.
"""

from __future__ import annotations

from types import SimpleNamespace

from kera_core.backends.arm64 import compile as A
from kera_core.backends.arm64 import host
from kera_core.backends.arm64.emulate import Machine, run
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance
from kera_core.targets import Artifact, register
from kera_core.targets import run_module as _run_module


class Arm64Target:
    name = "arm64"
    description = "AArch64 native code (ARMv8-A, scalar FP and NEON), run under unicorn emulation"
    suffix = ".a64"

    per_function = True
    supports_max_steps = True  # every source loop counts its iterations

    def unsupported(self, graph: Graph, fn: str | None = None) -> list[str]:
        if fn is None:
            return ["the arm64 target compiles one function at a time (give `fn`)"]
        return A.unsupported(graph, fn)

    def likely_unsupported(self, graph: Graph, fn: str) -> list[str]:
        return A.likely_unsupported(graph, fn)

    def _check(self, graph: Graph, fn: str | None) -> str:
        why = self.unsupported(graph, fn)
        if why:
            raise ValueError(f"arm64 cannot compile `{fn}`: " + "; ".join(why))
        assert fn is not None
        return fn

    def lower(self, graph: Graph, provenance: Provenance | None, fn: str | None = None) -> Artifact:
        fn = self._check(graph, fn)
        data, comp = A.build(graph, fn)
        return Artifact(self.name, data, graph.fingerprint(), self.suffix, listing(comp, fn))

    def preview(self, graph: Graph, provenance: Provenance | None, fn: str) -> str:
        why = self.unsupported(graph, fn)
        if why:
            return "// not supported by the arm64 target:\n" + "".join(f"//   {w}\n" for w in why)
        _, comp = A.build(graph, fn)
        return listing(comp, fn)

    def run(self, artifact: Artifact, graph: Graph, fn: str, inputs: dict, dims=None, **kw):
        _, codes = A.read(artifact.data, graph)
        source = SimpleNamespace(graph=graph, provenance=kw.pop("provenance", None))
        if host.runs_natively():  # an ARM64 host: the same bytes, JIT-loaded
            return host.run(codes, source, fn, inputs, dims, **kw)
        machine = Machine(codes)
        try:
            return run(machine, source, fn, inputs, dims, **kw)
        finally:
            machine.close()


def listing(comp: A.Compiled, entry: str) -> str:
    """Readable assembly (GNU syntax): every function, with the ISA level."""
    out = [f"// arm64 ({A.ISA}), entry `{entry}`"]
    for lines in comp.listings.values():
        out.append("")
        out += [ln if ln.endswith(":") and not ln.startswith(" ") else f"    {ln}" for ln in lines]
    return "\n".join(out) + "\n"


TARGET = register(Arm64Target())


def run_module(module, fn: str, inputs: dict, dims=None, *, stdout=None, max_steps=None):
    return _run_module(TARGET, module, fn, inputs, dims, stdout=stdout, max_steps=max_steps)
