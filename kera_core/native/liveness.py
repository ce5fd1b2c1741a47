"""Liveness: block-level live-in/live-out dataflow, then live intervals on a linear numbering.

Numbering.  Instructions are numbered ``g = 0, 1, ...`` in block layout order.  Instruction
``g`` reads its uses at position ``2g`` and writes its defs (and clobbers) at ``2g + 1``.  A
block covers ``[2*first, 2*(last + 1))``.  Ranges are half-open.  So a value whose last use is
at ``g`` ends at ``2g + 1`` and a value defined at ``g`` starts at ``2g + 1``: the two may share
a register, which is exactly what ``dst = op(src)`` wants.

Loops.  The dataflow iterates to a fixpoint, so a value read after a loop (or carried around
it) is live-out of the latch and live-in at the header; the interval then covers every block of
the loop, whatever the layout order.

Cost.  ``gen``/``kill`` are computed once; each dataflow round is linear in the number of
blocks, edges and live-set sizes; building intervals is one backward walk.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .vcode import MachInst, PReg, Reg, VCodeError, VCodeFunction, VReg


def use_pos(g: int) -> int:
    """Position at which instruction ``g`` reads its operands."""
    return 2 * g


def def_pos(g: int) -> int:
    """Position at which instruction ``g`` writes its results and clobbers."""
    return 2 * g + 1


@dataclass
class Interval:
    """The positions where ``reg`` holds a live value, as sorted, disjoint, non-adjacent
    half-open ranges.  ``start``/``end`` give the hull."""

    reg: Reg
    ranges: list[tuple[int, int]] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.ranges[0][0]

    @property
    def end(self) -> int:
        return self.ranges[-1][1]

    def covers(self, pos: int) -> bool:
        i = bisect.bisect_right(self.ranges, (pos, float("inf"))) - 1
        return i >= 0 and self.ranges[i][0] <= pos < self.ranges[i][1]

    def overlaps(self, other: Interval) -> bool:
        return ranges_overlap(self.ranges, other.ranges)


def ranges_overlap(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> bool:
    """Whether two sorted disjoint range lists intersect (two-pointer walk)."""
    i = j = 0
    while i < len(a) and j < len(b):
        (s1, e1), (s2, e2) = a[i], b[j]
        if s1 < e2 and s2 < e1:
            return True
        if e1 <= e2:
            i += 1
        else:
            j += 1
    return False


@dataclass
class Liveness:
    live_in: dict[str, frozenset[Reg]]
    live_out: dict[str, frozenset[Reg]]
    block_range: dict[str, tuple[int, int]]
    intervals: dict[Reg, Interval]
    locations: list[tuple[str, int]]  # global instruction index -> (block label, index)
    rounds: int  # dataflow iterations until the fixpoint

    def vreg_intervals(self) -> list[Interval]:
        """Virtual-register intervals sorted by (start, id): the allocator's order."""
        ivs = [iv for r, iv in self.intervals.items() if isinstance(r, VReg)]
        ivs.sort(key=lambda iv: (iv.start, iv.reg.id))
        return ivs

    def preg_intervals(self) -> dict[PReg, Interval]:
        return {r: iv for r, iv in self.intervals.items() if isinstance(r, PReg)}


def _regs(inst: MachInst) -> tuple[list[Reg], list[Reg], list[PReg]]:
    return list(inst.uses()), list(inst.defs()), list(inst.clobbers())


def block_liveness(
    fn: VCodeFunction,
) -> tuple[dict[str, frozenset[Reg]], dict[str, frozenset[Reg]]]:
    """Only the registers live into and out of each block (the scheduler's need), by label."""
    live_in, live_out, _ = _block_sets(fn)
    labels = [b.label for b in fn.blocks]
    return dict(zip(labels, live_in, strict=True)), dict(zip(labels, live_out, strict=True))


def _block_sets(fn: VCodeFunction) -> tuple[list[frozenset[Reg]], list[frozenset[Reg]], int]:
    labels = [b.label for b in fn.blocks]
    index = {lab: i for i, lab in enumerate(labels)}
    succs = [[index[s] for s in b.succs] for b in fn.blocks]

    gen: list[set[Reg]] = []
    kill: list[set[Reg]] = []
    for b in fn.blocks:
        g_set: set[Reg] = set()
        k_set: set[Reg] = set()
        for inst in b.insts:
            uses, defs, clobs = _regs(inst)
            for u in uses:
                if u not in k_set:
                    g_set.add(u)
            k_set.update(defs)
            k_set.update(clobs)
        gen.append(g_set)
        kill.append(k_set)

    n = len(fn.blocks)
    live_in: list[frozenset[Reg]] = [frozenset(g) for g in gen]
    live_out: list[frozenset[Reg]] = [frozenset() for _ in range(n)]
    rounds = 0
    changed = True
    while changed:
        changed = False
        rounds += 1
        for bi in range(n - 1, -1, -1):
            out: set[Reg] = set()
            for s in succs[bi]:
                out |= live_in[s]
            new_out = frozenset(out)
            new_in = frozenset(gen[bi] | (new_out - kill[bi]))
            if new_out != live_out[bi] or new_in != live_in[bi]:
                live_out[bi] = new_out
                live_in[bi] = new_in
                changed = True

    return live_in, live_out, rounds


def analyze(fn: VCodeFunction, *, allow_undefined: Iterable[Reg] = ()) -> Liveness:
    """Compute liveness of ``fn``.

    A virtual register live on entry to the function is read before any definition: that is an
    error (``VCodeError``) unless it is listed in ``allow_undefined``.  Physical registers may
    be live on entry (incoming arguments).  A physical register that an instruction clobbers
    but that is read afterwards without an intervening definition is also an error.
    """
    fn.validate()
    live_in, live_out, rounds = _block_sets(fn)
    labels = [b.label for b in fn.blocks]
    n = len(fn.blocks)

    allowed = set(allow_undefined)
    undefined = sorted(
        (r for r in live_in[0] if isinstance(r, VReg) and r not in allowed), key=lambda r: r.id
    )
    if undefined:
        raise VCodeError(f"{fn.name}: {undefined} read before any definition")

    # Linear numbering.
    locations: list[tuple[str, int]] = []
    block_range: dict[str, tuple[int, int]] = {}
    for b in fn.blocks:
        first = len(locations)
        locations.extend((b.label, i) for i in range(len(b.insts)))
        block_range[b.label] = (2 * first, 2 * len(locations))

    # Ranges are built backwards, newest (lowest) first, then reversed.
    rev: dict[Reg, list[list[int]]] = {}

    def add_range(r: Reg, a: int, z: int) -> None:
        lst = rev.get(r)
        if lst is None:
            rev[r] = [[a, z]]
            return
        last = lst[-1]
        if last[0] <= z:  # overlaps or touches the range added before (which starts later)
            last[0] = min(last[0], a)
            last[1] = max(last[1], z)
        else:
            lst.append([a, z])

    g = len(locations)
    for bi in range(n - 1, -1, -1):
        b = fn.blocks[bi]
        b_from, b_to = block_range[b.label]
        live: set[Reg] = set(live_out[bi])
        for r in live:
            add_range(r, b_from, b_to)
        for inst in reversed(b.insts):
            g -= 1
            uses, defs, clobs = _regs(inst)
            dp = def_pos(g)
            for d in defs:
                if d in live:
                    rev[d][-1][0] = dp  # the value is born here: cut the range
                    live.discard(d)
                else:
                    add_range(d, dp, dp + 1)  # dead definition still occupies its register
            for c in clobs:
                if c in defs:
                    continue
                if c in live:
                    raise VCodeError(
                        f"{fn.name}: {c!r} is clobbered by {inst!r} in block {b.label!r} "
                        "but its old value is read afterwards"
                    )
                add_range(c, dp, dp + 1)
            up = use_pos(g)
            for u in uses:
                add_range(u, b_from, up + 1)
                live.add(u)

    intervals: dict[Reg, Interval] = {}
    for r, lst in rev.items():
        intervals[r] = Interval(r, [(a, z) for a, z in reversed(lst)])

    return Liveness(
        live_in={labels[i]: live_in[i] for i in range(n)},
        live_out={labels[i]: live_out[i] for i in range(n)},
        block_range=block_range,
        intervals=intervals,
        locations=locations,
        rounds=rounds,
    )
