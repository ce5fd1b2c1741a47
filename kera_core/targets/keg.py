"""The `keg` target: the graph itself, stored as a verified `.keg` file."""

from __future__ import annotations

from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance
from kera_core.ir.view import function_text
from kera_core.keg import write_keg
from kera_core.targets import Artifact, register


class KegTarget:
    name = "keg"
    description = "the content-addressed graph as a .keg file (docs/keg.md)"
    suffix = ".keg"

    def unsupported(self, graph: Graph, fn: str | None = None) -> list[str]:
        if fn is not None and fn not in graph.functions:
            return [f"no function `{fn}` in the graph"]
        return []

    def lower(self, graph: Graph, provenance: Provenance | None, fn: str | None = None) -> Artifact:
        data = write_keg(graph, provenance)
        return Artifact(self.name, data, graph.fingerprint(), self.suffix)

    def preview(self, graph: Graph, provenance: Provenance | None, fn: str) -> str:
        return function_text(graph, graph.functions[fn], provenance) + "\n"


register(KegTarget())
