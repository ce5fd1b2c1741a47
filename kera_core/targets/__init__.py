"""The target registry: every backend exposes the same small surface.

A target says what it can compile (``unsupported`` gives the reasons it cannot),
``lower``s a graph to an :class:`Artifact` that carries the graph fingerprint, and
gives a ``preview`` text for the editor; a target that can also execute what it built
has a ``run`` method. ``kera build --target``, ``kera run --target``, the language
server's code actions and lowering previews, and ``kera demo`` all discover targets
here, never from per-target special cases.

Targets are declared by name and module (:data:`BUILTIN`, or :func:`declare`) and the
module is imported, registering its target, on the first :func:`get` of that name (or
:func:`available`): listing names and suffixes (:func:`names`, :func:`declared`) imports
no backend, so commands that do not use a target do not pay for one (the wasm target
loads ``wasmtime``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
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

    # Optional: targets that can execute what they build (`kera run --target NAME`):
    #
    #   def run(self, artifact, graph, fn, inputs, dims=None, *, provenance=None,
    #           stdout=None) -> RunResult
    #
    # A runnable target either counts loop iterations (``supports_max_steps = True``; ``run``
    # then takes ``max_steps``) or refuses `--max-steps`, saying why in ``bounds_note``.
    # Declare it with ``runs=True`` so that `kera run --target` lists it unimported.
    #
    # Optional: ``cannot_run_here() -> str | None``: why this machine cannot run the target
    # (no GPU, say) in one line; `kera run --target all` and `kera demo` skip it saying so.
    # Optional: ``report(graph, fn) -> str``: `kera build --target NAME --report`.
    # Optional: ``likely_unsupported(graph, fn) -> list[str]``: a cheap ``unsupported`` for
    # lists an editor asks for on every cursor move ("compile `f` to …" actions): the
    # refusals it finds are ``unsupported``'s, but it may miss one found only late (a
    # native backend's register allocation), which the full check at compile time reports.


@dataclass(frozen=True)
class Declared:
    """What the registry knows about a target before its module is imported."""

    name: str
    module: str  # imported on first use; it calls register() for ``name``
    suffix: str
    runs: bool = False  # the target has a ``run`` method (kera run --target NAME)


BUILTIN: tuple[Declared, ...] = (
    Declared("arm64", "kera_core.targets.arm64", ".a64", runs=True),
    Declared("keg", "kera_core.targets.keg", ".keg"),
    Declared("ptx", "kera_core.targets.ptx", ".ptx", runs=True),
    Declared("verilog", "kera_core.targets.verilog", ".v", runs=True),
    Declared("wasm", "kera_core.targets.wasm", ".wasm", runs=True),
    Declared("x86_64", "kera_core.targets.x86_64", ".bin", runs=True),
)

REGISTRY: dict[str, Target] = {}
_DECLARED: dict[str, Declared] = {d.name: d for d in BUILTIN}


def register(target: Target) -> Target:
    REGISTRY[target.name] = target
    return target


def declare(name: str, module: str, suffix: str, runs: bool = False) -> None:
    """Make target ``name`` known without importing ``module`` (which registers it)."""
    _DECLARED[name] = Declared(name, module, suffix, runs)


def declared() -> list[Declared]:
    """Every known target, in name order, without importing any backend."""
    out = dict(_DECLARED)
    for name, t in REGISTRY.items():
        if name not in out:
            out[name] = Declared(name, type(t).__module__, t.suffix, hasattr(t, "run"))
    return [out[k] for k in sorted(out)]


def names() -> list[str]:
    """The names of every known target, in order, without importing any backend."""
    return [d.name for d in declared()]


def runnable_names() -> list[str]:
    """The targets that can run a program (`kera run --target`), without importing them."""
    return [d.name for d in declared() if d.runs]


def get(name: str) -> Target | None:
    if name not in REGISTRY and name in _DECLARED:
        importlib.import_module(_DECLARED[name].module)
    return REGISTRY.get(name)


def available() -> list[Target]:
    """Every target this installation provides, in name order."""
    for name in list(_DECLARED):
        get(name)
    return [REGISTRY[k] for k in sorted(REGISTRY)]


def runners() -> list[Target]:
    """The registered targets that can run a program, in name order (imports them)."""
    return [t for t in available() if hasattr(t, "run")]


def run_module(
    target: Target,
    module,
    fn: str,
    inputs: dict,
    dims=None,
    *,
    stdout=None,
    max_steps=None,
    fuel=None,
):
    """`kera run --target NAME`: the interpreter's runner signature, on ``target``.

    ``module`` is an analysed module or a loaded .keg (anything with ``graph`` and
    ``provenance``). A function the target cannot compile, or ``max_steps`` on a target
    that does not bound runs by loop iterations, or ``fuel`` on one that meters none, is a
    bad argument (InputError R0005).
    """
    from kera_core.interp.errors import InputError

    graph = module.graph
    prov = getattr(module, "provenance", None)
    why = target.unsupported(graph, fn)
    if why:
        raise InputError("R0005", f"the {target.name} target cannot run `{fn}`: " + "; ".join(why))
    if max_steps is not None and not getattr(target, "supports_max_steps", False):
        note = getattr(target, "bounds_note", None)
        raise InputError(
            "R0005",
            f"--max-steps is not supported by the {target.name} target"
            + (f" ({note})" if note else ""),
        )
    if fuel is not None and not getattr(target, "supports_fuel", False):
        raise InputError("R0005", f"--fuel is not supported by the {target.name} target")
    art = target.lower(graph, prov, fn)
    kw = {"max_steps": max_steps} if max_steps is not None else {}
    if fuel is not None:
        kw["fuel"] = fuel
    return target.run(art, graph, fn, inputs, dims, provenance=prov, stdout=stdout, **kw)
