"""The `ptx` target: PTX for NVIDIA GPUs (sm_80, sm_90), run through the CUDA driver where
one exists (docs/targets/ptx.md).

Building needs nothing but this package (the artifact is the PTX text with the graph
fingerprint in its comment header); ``report`` and the tests assemble it with ``ptxas``
(the `nvidia-cuda-nvcc-cu12` wheel); ``run`` needs `cuda-bindings` and a GPU, imported and
looked for only when a run is asked for. Where there is none, ``cannot_run_here`` says so in
one line, `kera run --target ptx` reports it as a bad argument (exit 2), and
`kera run --target all` and `kera demo` skip the target saying why. With ``emulate`` set (a
launch :class:`~kera_core.backends.ptx.emulate.Shape`; `kera run --emulate`) runs go to the
PTX emulator instead, GPU or not.
"""

from __future__ import annotations

from kera_core.backends.ptx import compile as P
from kera_core.ir.cycles import refusal
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance
from kera_core.targets import Artifact, register
from kera_core.targets import run_module as _run_module

NO_RECURSION = (
    "the ptx target does not run recursion: "
    "a thread's call stack is not sized for 1024 nested calls (docs/targets/ptx.md)"
)  # why it refuses a function that reaches a recursive one (ir/cycles.py)


class PtxTarget:
    name = "ptx"
    description = "PTX 8.0 for NVIDIA GPUs (sm_80, sm_90), run through the CUDA driver"
    suffix = ".ptx"

    per_function = True
    supports_max_steps = True  # every source loop counts its iterations
    emulate = None  # a Shape: run on the PTX emulator (kera run --emulate), not a GPU

    def unsupported(self, graph: Graph, fn: str | None = None) -> list[str]:
        if fn is None:
            return ["the ptx target compiles one function at a time (give `fn`)"]
        return refusal(graph, fn, NO_RECURSION) or P.unsupported(graph, fn)

    def _check(self, graph: Graph, fn: str | None) -> str:
        why = self.unsupported(graph, fn)
        if why:
            raise ValueError(f"ptx cannot compile `{fn}`: " + "; ".join(why))
        assert fn is not None
        return fn

    def lower(self, graph: Graph, provenance: Provenance | None, fn: str | None = None) -> Artifact:
        fn = self._check(graph, fn)
        text = P.artifact_text(graph, fn)
        return Artifact(self.name, text.encode(), graph.fingerprint(), self.suffix, text)

    def preview(self, graph: Graph, provenance: Provenance | None, fn: str) -> str:
        why = self.unsupported(graph, fn)
        if why:
            return "// not supported by the ptx target:\n" + "".join(f"//   {w}\n" for w in why)
        return P.artifact_text(graph, fn)

    def report(self, graph: Graph, fn: str | None) -> str:
        """`kera build --target ptx --report`: the grid mapping, ptxas's registers and
        shared memory, and why tensor cores are not used."""
        return P.report(graph, self._check(graph, fn))

    def cannot_run_here(self) -> str | None:
        """None when a CUDA driver and GPU are usable (or runs are emulated), else the
        one-line reason."""
        from kera_core.backends.ptx.runtime import why_no_gpu

        if self.emulate is not None:
            return None
        why = why_no_gpu()
        return f"{why}; --emulate runs it on the PTX emulator" if why else None

    def run(self, artifact: Artifact, graph: Graph, fn: str, inputs: dict, dims=None, **kw):
        from types import SimpleNamespace

        from kera_core.backends.ptx import runtime

        entry, threads, text = P.read(artifact.data, graph)
        if entry != fn:
            raise ValueError(f"the artifact's entry is `{entry}`, not `{fn}`")
        source = SimpleNamespace(graph=graph, provenance=kw.pop("provenance", None))
        if self.emulate is not None:
            kw.setdefault("emulate", self.emulate)
        return runtime.run(text, threads, source, fn, inputs, dims, **kw)


TARGET = register(PtxTarget())


def run_module(module, fn: str, inputs: dict, dims=None, *, stdout=None, max_steps=None):
    return _run_module(TARGET, module, fn, inputs, dims, stdout=stdout, max_steps=max_steps)
