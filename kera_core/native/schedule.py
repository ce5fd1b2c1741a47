"""List scheduling within one basic block (runs before register allocation).

Dependences, built in one forward walk:

* true (read after write): ``def r`` at *i*, ``use r`` at *j* — edge *i → j* weighted with the
  latency of *i*;
* anti (write after read): ``use r`` at *i*, ``def r`` at *j* — weight 0;
* output (write after write): ``def r`` at *i* and *j* — weight 1.
  Clobbers count as definitions.  Physical registers (including the flags) take part, so a
  compare stays before the branch that reads it and nothing that writes the flags slips in.
* memory: a store is ordered after every earlier load and store; a load after the last
  store.  Loads reorder freely with loads.  (No alias analysis: conservative on purpose.)
* barriers: an instruction with a side effect, or a terminator, is ordered after everything
  before it and before everything after it.

Priority is the critical-path length to the end of the block (latencies from the target).
The scheduler simulates a single-issue machine cycle by cycle: among instructions whose inputs
are ready it picks the highest priority; ties go to the original order.  If nothing is ready
it advances to the next cycle where something is.  The result is deterministic.

Register pressure.  Given the block's live-in and live-out sets and the registers per class
(:func:`schedule_function` passes them), the scheduler counts the virtual registers live at
each point.  While a class is within ``HEADROOM`` registers of its limit, it prefers the ready
instruction that raises that pressure least (a value's last use frees it), then the one that
reads most values computed in the block (it finishes work already started rather than loading
more), then priority; and rather than raise the pressure it waits for an instruction that
does not, when one is on its way.  Without this, a jammed loop body issues every load and
every product before the first add and the allocator spills the accumulators.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from . import liveness as lv
from .vcode import Block, MachineTarget, MachInst, Reg, RegClass, VCodeFunction, VReg

HEADROOM = 1  # a class this close to its limit counts as under pressure


@dataclass(frozen=True)
class DepGraph:
    """``succs[i]`` = list of ``(j, latency)``; ``preds[j]`` = list of ``(i, latency)``."""

    succs: tuple[tuple[tuple[int, int], ...], ...]
    preds: tuple[tuple[tuple[int, int], ...], ...]

    def edges(self) -> list[tuple[int, int, int]]:
        return [(i, j, w) for i, ss in enumerate(self.succs) for j, w in ss]


def dependence_graph(insts: Sequence[MachInst], latency: Callable[[MachInst], int]) -> DepGraph:
    n = len(insts)
    edges: dict[tuple[int, int], int] = {}

    def edge(i: int, j: int, w: int) -> None:
        if i == j:
            return
        key = (i, j)
        if edges.get(key, -1) < w:
            edges[key] = w

    last_def: dict[Reg, int] = {}
    readers: dict[Reg, list[int]] = {}
    last_store: int | None = None
    loads_since_store: list[int] = []
    last_barrier: int | None = None
    since_barrier: list[int] = []
    lat = [max(0, int(latency(x))) for x in insts]

    for j, inst in enumerate(insts):
        for r in inst.uses():
            d = last_def.get(r)
            if d is not None:
                edge(d, j, lat[d])
            readers.setdefault(r, []).append(j)
        for r in (*inst.defs(), *inst.clobbers()):
            d = last_def.get(r)
            if d is not None:
                edge(d, j, 1)
            for u in readers.get(r, ()):
                edge(u, j, 0)
            last_def[r] = j
            readers[r] = []
        rd, wr = inst.reads_memory(), inst.writes_memory()
        if wr:
            if last_store is not None:
                edge(last_store, j, 1)
            for ld in loads_since_store:
                edge(ld, j, 0)
            last_store = j
            loads_since_store = []
        elif rd:
            if last_store is not None:
                edge(last_store, j, lat[last_store])
            loads_since_store.append(j)
        if inst.has_side_effect() or inst.is_terminator():
            for k in since_barrier:
                edge(k, j, 0)
            if last_barrier is not None:
                edge(last_barrier, j, 0)
            last_barrier = j
            since_barrier = []
        else:
            if last_barrier is not None:
                edge(last_barrier, j, 0)
            since_barrier.append(j)

    succs: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for (i, j), w in sorted(edges.items()):
        succs[i].append((j, w))
        preds[j].append((i, w))
    return DepGraph(tuple(map(tuple, succs)), tuple(map(tuple, preds)))


def critical_path(graph: DepGraph, latency: Sequence[int]) -> list[int]:
    """Longest latency-weighted path from each instruction to the end of the block."""
    n = len(graph.succs)
    prio = [0] * n
    for i in range(n - 1, -1, -1):  # edges always go forward, so this is a reverse topo order
        best = latency[i]
        for j, w in graph.succs[i]:
            best = max(best, w + prio[j])
        prio[i] = best
    return prio


class _Pressure:
    """Live virtual registers per class while a block is being scheduled."""

    def __init__(
        self,
        insts: Sequence[MachInst],
        live_in: frozenset[Reg],
        live_out: frozenset[Reg],
        limits: Mapping[RegClass, int],
    ) -> None:
        self.limits = limits
        self.live_out = live_out
        self.remaining: dict[VReg, int] = {}
        self.uses = [[r for r in set(x.uses()) if isinstance(r, VReg)] for x in insts]
        self.defs = [[r for r in set(x.defs()) if isinstance(r, VReg)] for x in insts]
        defined: set[VReg] = set()
        for us, ds in zip(self.uses, self.defs, strict=True):
            for u in us:
                self.remaining[u] = self.remaining.get(u, 0) + 1
            defined.update(ds)
        self.live = {r for r in live_in if isinstance(r, VReg)}
        self.count: dict[RegClass, int] = {}
        for r in self.live:
            self.count[r.cls] = self.count.get(r.cls, 0) + 1
        # values computed in the block (reading them finishes started work)
        self.defined = defined

    def high(self) -> set[RegClass]:
        return {c for c, n in self.count.items() if n >= self.limits.get(c, 1 << 30) - HEADROOM}

    def delta(self, i: int, classes: set[RegClass]) -> int:
        d = 0
        for r in self.defs[i]:
            if r.cls in classes and r not in self.live:
                d += 1
        for r in self.uses[i]:
            if (
                r.cls in classes
                and self.remaining[r] == 1
                and r not in self.live_out
                and r not in self.defs[i]
            ):
                d -= 1
        return d

    def reads_started(self, i: int) -> int:
        return sum(1 for r in self.uses[i] if r in self.defined)

    def issue(self, i: int) -> None:
        for r in self.uses[i]:
            self.remaining[r] -= 1
            if self.remaining[r] == 0 and r not in self.live_out and r not in self.defs[i]:
                if r in self.live:
                    self.live.discard(r)
                    self.count[r.cls] -= 1
        for r in self.defs[i]:
            if r not in self.live and (self.remaining.get(r, 0) > 0 or r in self.live_out):
                self.live.add(r)
                self.count[r.cls] = self.count.get(r.cls, 0) + 1


def schedule_block(
    insts: Sequence[MachInst],
    latency: Callable[[MachInst], int],
    live_in: frozenset[Reg] = frozenset(),
    live_out: frozenset[Reg] | None = None,
    limits: Mapping[RegClass, int] | None = None,
) -> list[MachInst]:
    """Return ``insts`` reordered by list scheduling (see the module docstring); with
    ``live_out`` and ``limits`` the order also watches register pressure."""
    n = len(insts)
    if n < 2:
        return list(insts)
    graph = dependence_graph(insts, latency)
    lat = [max(0, int(latency(x))) for x in insts]
    prio = critical_path(graph, lat)
    npred = [len(p) for p in graph.preds]
    earliest = [0] * n
    pending: list[tuple[int, int]] = [(0, i) for i in range(n) if npred[i] == 0]  # (time, i)
    heapq.heapify(pending)
    avail: list[tuple[int, int]] = []  # (-priority, i)
    order: list[int] = []
    press = _Pressure(insts, live_in, live_out, limits) if limits and live_out is not None else None
    cycle = 0
    while len(order) < n:
        while pending and pending[0][0] <= cycle:
            _, i = heapq.heappop(pending)
            heapq.heappush(avail, (-prio[i], i))
        if not avail:
            cycle = pending[0][0]
            continue
        high = press.high() if press is not None else set()
        if high:
            assert press is not None

            def key(e: tuple[int, int], high: set[RegClass] = high) -> tuple[int, int, int, int]:
                return (press.delta(e[1], high), -press.reads_started(e[1]), e[0], e[1])

            best = min(avail, key=key)
            if key(best)[0] > 0:
                # something that does not raise the pressure is on its way: wait for it
                soon = [t for t, j in pending if press.delta(j, high) <= 0]
                if soon:
                    cycle = max(cycle + 1, min(soon))
                    continue
            avail.remove(best)
            heapq.heapify(avail)
            i = best[1]
        else:
            _, i = heapq.heappop(avail)
        order.append(i)
        if press is not None:
            press.issue(i)
        for j, w in graph.succs[i]:
            earliest[j] = max(earliest[j], cycle + w)
            npred[j] -= 1
            if npred[j] == 0:
                heapq.heappush(pending, (earliest[j], j))
        cycle += 1
    return [insts[i] for i in order]


def schedule_function(fn: VCodeFunction, target: MachineTarget) -> VCodeFunction:
    """Schedule every block of ``fn`` with the target's latencies, watching the pressure on
    its allocatable registers; a new function."""
    live_in, live_out = lv.block_liveness(fn)
    limits = {c: len(regs) for c, regs in target.allocatable.items()}
    return VCodeFunction(
        fn.name,
        [
            Block(
                b.label,
                schedule_block(
                    b.insts, target.latency, live_in[b.label], live_out[b.label], limits
                ),
                b.succs,
            )
            for b in fn.blocks
        ],
    )
