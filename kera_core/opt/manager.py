"""The pass manager: passes in a fixpoint loop, the invariant validator after every pass.

    from kera_core.opt import optimize
    result = optimize(graph)            # OptResult(graph, report)
    print(format_report(result.report))

Each pass maps a graph to a new graph (the input is never modified). A round runs every
pass once, in order; rounds repeat until one changes nothing (the *fixpoint*: no
function's hash moved) or ``max_iterations`` rounds ran. After every pass the graph is
checked with :func:`kera_core.ir.verify.verify`; a violation raises
:class:`OptimizerError` naming the pass, the node (hash prefix and opcode) and what is
wrong, so a bug in a pass is caught where it happens rather than as wrong bits later.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kera_core.ir.graph import Graph
from kera_core.ir.verify import Violation, verify
from kera_core.opt.cse import CSE
from kera_core.opt.dce import DCE
from kera_core.opt.fold import ConstFold
from kera_core.opt.fuse import Fuse
from kera_core.opt.inline import Inline
from kera_core.opt.rewrite import RegionPass, copy_store, gc
from kera_core.opt.vectorize import Vectorize


class Pass(Protocol):
    name: str

    def run(self, g: Graph) -> Graph:
        """A new graph with the same meaning; ``g`` itself is left as it was."""
        ...


class OptimizerError(Exception):
    """A pass produced a graph the validator rejects (or crashed); names pass and node."""

    def __init__(self, pass_name: str, message: str, violations: Sequence[Violation] = ()):
        super().__init__(f"optimizer pass `{pass_name}`: {message}")
        self.pass_name = pass_name
        self.violations = list(violations)


PASSES: dict[str, type] = {
    "inline": Inline,
    "fold": ConstFold,
    "cse": CSE,
    "dce": DCE,
    "fuse": Fuse,
    "vectorize": Vectorize,
}

# The default pipeline, in round order: inline first so that folding sees constants
# flowing into callees, vectorize last so that it annotates the final loops.
DEFAULT: tuple[str, ...] = ("inline", "fold", "cse", "dce", "fuse", "vectorize")


def default_passes() -> list[Pass]:
    return [PASSES[name]() for name in DEFAULT]


def make_passes(passes: Sequence[Pass | str] | None) -> list[Pass]:
    """Pass objects from pass objects or names (``None``: the default pipeline)."""
    if passes is None:
        return default_passes()
    out: list[Pass] = []
    for p in passes:
        if isinstance(p, str):
            if p not in PASSES:
                raise ValueError(f"unknown pass `{p}` (passes: {', '.join(PASSES)})")
            out.append(PASSES[p]())
        else:
            out.append(p)
    return out


@dataclass
class PassRun:
    iteration: int
    name: str
    nodes_before: int
    nodes_after: int
    regions_before: int
    regions_after: int
    changed: bool
    seconds: float


@dataclass
class OptReport:
    runs: list[PassRun] = field(default_factory=list)
    iterations: int = 0
    converged: bool = False
    nodes_before: int = 0
    nodes_after: int = 0
    functions_before: int = 0
    functions_after: int = 0
    fingerprint_before: bytes = b""
    fingerprint_after: bytes = b""
    seconds: float = 0.0

    def per_pass(self) -> list[tuple[str, int, int, float, int]]:
        """(pass, nodes removed net, times changed, total seconds, runs) per pass name."""
        out: dict[str, list] = {}
        for r in self.runs:
            e = out.setdefault(r.name, [r.name, 0, 0, 0.0, 0])
            e[1] += r.nodes_before - r.nodes_after
            e[2] += int(r.changed)
            e[3] += r.seconds
            e[4] += 1
        return [tuple(v) for v in out.values()]  # type: ignore[misc]


@dataclass
class OptResult:
    graph: Graph
    report: OptReport


def _signature(g: Graph) -> tuple:
    return tuple(sorted((f.name, f.hash, f.exported) for f in g.functions.values()))


def check(g: Graph, pass_name: str) -> None:
    """Raise :class:`OptimizerError` if ``g`` violates an invariant of the graph."""
    violations = verify(g)
    if not violations:
        return
    v = violations[0]
    where = ""
    if v.node is not None:
        n = g.nodes.get(v.node)
        op = f" (`{n.op}`)" if n is not None else ""
        where = f" at node {v.node.hex()[:10]}{op}"
    more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
    raise OptimizerError(pass_name, f"{v.kind}{where}: {v.message}{more}", violations)


def _interface(g: Graph) -> dict[str, tuple]:
    return {f.name: (f.type.hash, f.outputs) for f in g.exported()}


def check_interface(g: Graph, want: dict[str, tuple], pass_name: str) -> None:
    """Exported functions are the graph's identity: a pass may not add, drop or retype one,
    and every `dim{k}` must name a dimension of its function."""
    got = _interface(g)
    if got != want:
        diff = sorted(set(got) ^ set(want)) or sorted(k for k in got if got[k] != want[k])
        raise OptimizerError(pass_name, f"changed the exported functions: {', '.join(diff)}")
    for f in g.functions.values():
        for rh in g.all_regions(f.region):
            for n in g.region_nodes(rh):
                if n.op == "dim" and not 0 <= n.attr("index", -1) < f.type.n_dims:
                    raise OptimizerError(
                        pass_name,
                        f"dim at node {n.hash.hex()[:10]} (`dim`): `{f.name}` has no "
                        f"dimension {n.attr('index')}",
                    )


def optimize(
    graph: Graph,
    passes: Sequence[Pass | str] | None = DEFAULT,
    max_iterations: int = 8,
    validate: bool = True,
) -> OptResult:
    """Run ``passes`` (pass objects or names; default :data:`DEFAULT`) to a fixpoint.

    The input graph is not modified. The result's graph has the same exported functions
    with the same types and, for every input, the same output bits and the same checked
    error (docs/optimizer.md); its fingerprint differs whenever a pass changed anything.
    """
    passes = make_passes(passes)
    t_start = time.perf_counter()
    if validate:
        check(graph, "<input>")
    interface = _interface(graph)
    g = gc(copy_store(graph))
    orders: dict = {}  # region orders, shared by the passes (a region's order is its content)
    for p in passes:
        if isinstance(p, RegionPass):
            p.orders = orders
    rep = OptReport(
        nodes_before=len(g.nodes),
        functions_before=len(g.functions),
        fingerprint_before=graph.fingerprint(),
    )
    for it in range(1, max_iterations + 1):
        rep.iterations = it
        any_change = False
        for p in passes:
            before = _signature(g)
            n0, r0 = len(g.nodes), len(g.regions)
            t0 = time.perf_counter()
            try:
                out = p.run(g)
            except OptimizerError:
                raise
            except Exception as e:  # a crash inside a pass is the pass's bug: name it
                raise OptimizerError(p.name, f"crashed: {type(e).__name__}: {e}") from e
            dt = time.perf_counter() - t0
            if validate:
                check(out, p.name)
                check_interface(out, interface, p.name)
            changed = _signature(out) != before
            any_change |= changed
            rep.runs.append(
                PassRun(it, p.name, n0, len(out.nodes), r0, len(out.regions), changed, dt)
            )
            g = out
        if not any_change:
            rep.converged = True
            break
    rep.nodes_after = len(g.nodes)
    rep.functions_after = len(g.functions)
    rep.fingerprint_after = g.fingerprint()
    rep.seconds = time.perf_counter() - t_start
    return OptResult(g, rep)


def format_report(report: OptReport) -> str:
    """The pass table `kera build --opt-report` prints: one row per pass run, then totals."""
    lines = [
        f"{'iter':>4}  {'pass':<10} {'nodes':>7} {'->':^2} {'nodes':<7} {'regions':>7} "
        f"{'->':^2} {'regions':<7} {'ms':>8}  changed"
    ]
    for r in report.runs:
        lines.append(
            f"{r.iteration:>4}  {r.name:<10} {r.nodes_before:>7} -> {r.nodes_after:<7} "
            f"{r.regions_before:>7} -> {r.regions_after:<7} {r.seconds * 1000:>8.1f}  "
            f"{'yes' if r.changed else '-'}"
        )
    state = "fixpoint" if report.converged else "stopped at the iteration limit"
    lines.append(
        f"{report.iterations} iteration(s), {state}; nodes {report.nodes_before} -> "
        f"{report.nodes_after}, functions {report.functions_before} -> "
        f"{report.functions_after}, {report.seconds * 1000:.1f} ms"
    )
    lines.append(f"fingerprint   sha3-256:{report.fingerprint_before.hex()}")
    lines.append(f"optimized     sha3-256:{report.fingerprint_after.hex()}")
    return "\n".join(lines)
