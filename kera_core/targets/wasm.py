"""The `wasm` target: one function lowered to a WebAssembly module (docs/targets/wasm.md)."""

from __future__ import annotations

from kera_core.backends.wasm import assemble, lower_wat, read_fingerprint, run_wasm, unsupported
from kera_core.interp.errors import InputError
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance
from kera_core.targets import Artifact, register
from kera_core.targets import keg as _keg  # noqa: F401  (keep the registry complete)


class WasmTarget:
    name = "wasm"
    description = "WebAssembly (core 2.0: multi-value, bulk memory, saturating casts)"
    suffix = ".wasm"

    per_function = True  # an artifact holds one exported function and what it calls

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
        return run_wasm(artifact.data, graph, fn, inputs, dims, **kw)


TARGET = register(WasmTarget())


def run_module(module, fn: str, inputs: dict, dims=None, *, stdout=None, max_steps=None):
    """`kera run --target wasm`: the interpreter's runner signature, on the wasm target.

    ``module`` is an analysed module or a loaded .keg (anything with ``graph`` and
    ``provenance``). A function the target cannot compile, or ``max_steps`` (the target
    bounds a run by fuel, not by loop iterations), is a bad argument (InputError).
    """
    graph = module.graph
    prov = getattr(module, "provenance", None)
    why = TARGET.unsupported(graph, fn)
    if why:
        raise InputError("R0005", f"the wasm target cannot run `{fn}`: " + "; ".join(why))
    if max_steps is not None:
        raise InputError("R0005", "--max-steps is not supported by the wasm target (it uses fuel)")
    art = TARGET.lower(graph, prov, fn)
    return TARGET.run(art, graph, fn, inputs, dims, provenance=prov, stdout=stdout)
