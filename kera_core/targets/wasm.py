"""The `wasm` target: one function lowered to a WebAssembly module (docs/targets/wasm.md)."""

from __future__ import annotations

from kera_core.backends.wasm import (
    assemble,
    lower_wat,
    read_fingerprint,
    read_semantics,
    run_wasm,
    unsupported,
)
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance
from kera_core.ir.semantics import SEMANTICS_VERSION
from kera_core.targets import Artifact, register
from kera_core.targets import keg as _keg  # noqa: F401  (keep the registry complete)
from kera_core.targets import run_module as _run_module


class WasmTarget:
    name = "wasm"
    description = "WebAssembly (core 2.0: multi-value, bulk memory, saturating casts)"
    suffix = ".wasm"

    per_function = True  # an artifact holds one exported function and what it calls
    bounds_note = "it uses fuel: see --fuel"  # why `kera run --max-steps` does not apply
    supports_fuel = True  # `kera run --fuel N`: the instruction budget of one run

    def unsupported(self, graph: Graph, fn: str | None = None) -> list[str]:
        if fn is None:
            return ["the wasm target compiles one function at a time (give `fn`)"]
        return unsupported(graph, fn)

    def _check(self, graph: Graph, fn: str | None) -> str:
        why = self.unsupported(graph, fn)
        if why:
            raise ValueError(f"wasm cannot compile `{fn}`: " + "; ".join(why))
        assert fn is not None
        return fn

    def lower(self, graph: Graph, provenance: Provenance | None, fn: str | None = None) -> Artifact:
        fn = self._check(graph, fn)
        wat = lower_wat(graph, fn)
        fp = graph.fingerprint()
        return Artifact(self.name, assemble(wat, fp), fp, self.suffix, wat)

    def preview(self, graph: Graph, provenance: Provenance | None, fn: str) -> str:
        why = self.unsupported(graph, fn)
        if why:
            return "; not supported by the wasm target:\n" + "".join(f";   {w}\n" for w in why)
        return lower_wat(graph, fn)

    def run(self, artifact: Artifact, graph: Graph, fn: str, inputs: dict, dims=None, **kw):
        """Run ``fn`` of the artifact; ``graph`` supplies the signature (types, outputs)."""
        if read_fingerprint(artifact.data) != graph.fingerprint():
            raise ValueError("the artifact was not built from this graph (fingerprint differs)")
        # an older version is fine: an operation whose bits changed since changed the fingerprint
        if read_semantics(artifact.data) > SEMANTICS_VERSION:
            raise ValueError(
                f"the artifact was built under semantics version {read_semantics(artifact.data)};"
                f" this Kera implements up to {SEMANTICS_VERSION}"
            )
        return run_wasm(artifact.data, graph, fn, inputs, dims, **kw)


TARGET = register(WasmTarget())


def run_module(module, fn: str, inputs: dict, dims=None, *, stdout=None, max_steps=None):
    """`kera run --target wasm`: the interpreter's runner signature, on the wasm target
    (:func:`kera_core.targets.run_module` with this target)."""
    return _run_module(TARGET, module, fn, inputs, dims, stdout=stdout, max_steps=max_steps)
