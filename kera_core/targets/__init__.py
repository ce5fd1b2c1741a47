"""The target registry: every backend exposes the same small surface.

A target says what it can compile (``unsupported`` gives the reasons it cannot),
``lower``s a graph to an :class:`Artifact` that carries the graph fingerprint, and
gives a ``preview`` text for the editor. ``kera build --target``, the language
server's code actions and lowering previews, and ``kera demo`` all discover
targets here, never from per-target special cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance


@dataclass(frozen=True)
class Artifact:
    target: str
    data: bytes
    fingerprint: bytes  # the graph hash the artifact was built from
    suffix: str  # file extension, with the dot
    text: str | None = None  # a human-readable form, where the target has one


class Target(Protocol):
    name: str
    description: str
    suffix: str

    def unsupported(self, graph: Graph, fn: str | None = None) -> list[str]:
        """Why this target cannot compile ``fn`` (or the whole graph); empty if it can."""
        ...

    def lower(self, graph: Graph, provenance: Provenance | None, fn: str | None = None) -> Artifact:
        """The artifact for the whole graph, or for ``fn`` and what it calls."""
        ...

    def preview(self, graph: Graph, provenance: Provenance | None, fn: str) -> str:
        """The text an editor shows for ``fn`` lowered to this target."""
        ...


REGISTRY: dict[str, Target] = {}


def register(target: Target) -> Target:
    REGISTRY[target.name] = target
    return target


def get(name: str) -> Target | None:
    _load()
    return REGISTRY.get(name)


def available() -> list[Target]:
    """Every target this installation provides, in name order."""
    _load()
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def _load() -> None:
    if {"keg", "wasm"} <= REGISTRY.keys():
        return
    from kera_core.targets import keg, wasm  # noqa: F401  (register themselves)
