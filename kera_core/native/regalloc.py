"""Linear-scan register allocation with whole-interval spilling (Poletto & Sarkar, 1999).

Input: a :class:`VCodeFunction` whose instructions name virtual registers and, where the ISA
demands it, physical registers (fixed constraints: x86 ``idiv`` reads rax/rdx, a shift count
is in cl, arguments arrive in rdi...).  Output: an :class:`Allocation` with every virtual
register mapped to a physical register or a :class:`SpillSlot`, and the rewritten function.

How constraints are honoured.  Every physical register named by an instruction, and every
register an instruction clobbers, gets a *fixed interval* from liveness.  A virtual interval
may take register ``p`` only if it does not intersect ``p``'s fixed interval (exact ranges,
holes respected).  So a value live across a call cannot sit in a caller-saved register, and a
value live across an ``idiv`` is kept out of rax and rdx.  Selection connects a virtual
register to a fixed one with an ordinary move (``mov rax, v1``); the allocator uses such moves
as hints and deletes a move whose two sides end up in the same register.

Spilling.  When no register is free, the cheapest of the new interval and the active ones
that could give up their register is spilled (ties: the one that ends last).  A value's cost
is its uses and definitions, each weighted 8^(loop depth) (:mod:`.loopdepth`), divided by the
instructions its interval covers, weighted the same way: the use it makes of a register per
unit of hot code it holds one through.  So a short temporary in an inner loop is never the
victim, a value read only outside the loop it spans is the first, and of two values live
through a loop the one the loop reads less goes to memory.  A spilled value lives in its stack slot for its whole life: each
instruction reading it is preceded by a reload into one of the target's reserved scratch
registers and each instruction writing it is followed by a store.  Slots of the same size
are reused once the value in them is dead.

Determinism: intervals are processed in (start, vreg id) order, registers in the target's
preference order, and every tie is broken by those orders; no set iteration order leaks.
"""

from __future__ import annotations

import bisect
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass

from . import liveness as lv
from .loopdepth import innermost_loops, loop_depths
from .vcode import (
    Block,
    MachineTarget,
    MachInst,
    PReg,
    Reg,
    RegClass,
    SpillSlot,
    VCodeError,
    VCodeFunction,
    VReg,
)


class AllocationError(VCodeError):
    """The function cannot be allocated for this target (e.g. too few scratch registers)."""


Location = PReg | SpillSlot


@dataclass(frozen=True)
class Allocation:
    function: VCodeFunction  # rewritten: physical registers only, spill code inserted
    assignment: Mapping[VReg, Location]
    spill_slots: tuple[SpillSlot, ...]
    used_callee_saved: tuple[PReg, ...]  # callee-saved registers the function writes
    written_pregs: frozenset[PReg]  # every physical register the rewritten code writes
    moves_removed: int  # coalesced copies deleted
    reloads: int
    spills: int

    @property
    def spilled(self) -> tuple[VReg, ...]:
        return tuple(v for v, loc in self.assignment.items() if isinstance(loc, SpillSlot))

    def location(self, v: VReg) -> Location:
        try:
            return self.assignment[v]
        except KeyError:
            raise AllocationError(f"{v!r} is not in the allocated function") from None


class _Fixed:
    """A physical register's fixed ranges with fast overlap queries."""

    def __init__(self, ranges: list[tuple[int, int]]):
        self.ranges = ranges
        self.starts = [a for a, _ in ranges]

    def hits(self, ranges: list[tuple[int, int]]) -> bool:
        for a, z in ranges:
            # the last fixed range starting before z is the only candidate that can overlap
            i = bisect.bisect_left(self.starts, z) - 1
            if i >= 0 and self.ranges[i][1] > a:
                return True
        return False


_NO_FIXED = _Fixed([])


def _check_operands(fn: VCodeFunction, target: MachineTarget) -> None:
    scratch = target.all_scratch()
    for b in fn.blocks:
        for inst in b.insts:
            for r in (*inst.uses(), *inst.defs()):
                if isinstance(r, PReg) and r in scratch:
                    raise AllocationError(
                        f"{fn.name}: {inst!r} in block {b.label!r} names scratch register {r!r}, "
                        f"which {target.name} reserves for spill code"
                    )
                if isinstance(r, VReg) and r.cls not in target.allocatable:
                    raise AllocationError(
                        f"{fn.name}: {target.name} has no allocatable {r.cls.value} registers "
                        f"for {r!r}"
                    )


def _hints(fn: VCodeFunction) -> dict[VReg, list[Reg]]:
    hints: dict[VReg, list[Reg]] = {}
    for inst in fn.instructions():
        mv = inst.is_move()
        if mv is None:
            continue
        dst, src = mv
        if isinstance(dst, VReg):
            hints.setdefault(dst, []).append(src)
        if isinstance(src, VReg):
            hints.setdefault(src, []).append(dst)
    return hints


def _spill_costs(fn: VCodeFunction, live: lv.Liveness) -> dict[VReg, float]:
    """Each value's uses and definitions weighted by loop depth, per weighted instruction its
    interval covers: how much a register held for it is used."""
    depth = loop_depths(fn)
    weight: dict[VReg, float] = {}
    covered = [0.0]  # prefix sums of the weights of the positions (two per instruction)
    for b in fn.blocks:
        w = 8.0 ** min(depth[b.label], 6)
        for inst in b.insts:
            for r in {*inst.uses(), *inst.defs()}:
                if isinstance(r, VReg):
                    weight[r] = weight.get(r, 0.0) + w
            covered.append(covered[-1] + w / 2)
            covered.append(covered[-1] + w / 2)
    costs: dict[VReg, float] = {}
    last = len(covered) - 1
    for iv in live.vreg_intervals():
        v = iv.reg
        assert isinstance(v, VReg)
        span = sum(covered[min(z, last)] - covered[min(a, last)] for a, z in iv.ranges)
        costs[v] = weight.get(v, 0.0) / (1.0 + span)
    return costs


def _scan(
    ivs: list[lv.Interval],
    regs: tuple[PReg, ...],
    fixed: dict[PReg, _Fixed],
    hints: dict[VReg, list[Reg]],
    assignment: dict[VReg, Location | None],
    costs: dict[VReg, float],
) -> None:
    """Allocate one register class.  Spilled intervals get ``None`` (slots come later)."""
    free = set(regs)
    active: list[tuple[int, int, lv.Interval, PReg]] = []  # (end, id, interval, reg), by end
    for iv in ivs:
        v = iv.reg
        assert isinstance(v, VReg)
        while active and active[0][0] <= iv.start:
            _, _, _, p = active.pop(0)
            free.add(p)

        def fits(p: PReg, iv: lv.Interval = iv) -> bool:
            return not fixed.get(p, _NO_FIXED).hits(iv.ranges)

        choice: PReg | None = None
        for h in hints.get(v, ()):
            hp = h if isinstance(h, PReg) else assignment.get(h)
            if isinstance(hp, PReg) and hp in free and fits(hp):
                choice = hp
                break
        if choice is None:
            for p in regs:
                if p in free and fits(p):
                    choice = p
                    break
        if choice is not None:
            free.discard(choice)
            assignment[v] = choice
            bisect.insort(active, (iv.end, v.id, iv, choice), key=lambda t: (t[0], t[1]))
            continue

        # No free register: spill the cheapest of this one and the evictable active ones.
        def key(end: int, reg: VReg) -> tuple[float, int, int]:
            return (costs.get(reg, 0.0), -end, -reg.id)

        victim = None
        for entry in active:
            if fits(entry[3]) and (
                victim is None or key(entry[0], entry[2].reg) < key(victim[0], victim[2].reg)
            ):
                victim = entry
        if victim is not None and key(victim[0], victim[2].reg) < key(iv.end, v):
            active.remove(victim)
            _, _, viv, p = victim
            assignment[viv.reg] = None  # type: ignore[index]
            assignment[v] = p
            bisect.insort(active, (iv.end, v.id, iv, p), key=lambda t: (t[0], t[1]))
        else:
            assignment[v] = None


def _assign_slots(
    spilled: list[lv.Interval], target: MachineTarget
) -> tuple[dict[VReg, SpillSlot], list[SpillSlot]]:
    """Give spilled values stack slots, reusing a same-sized slot once its value is dead."""
    slots: list[SpillSlot] = []
    result: dict[VReg, SpillSlot] = {}
    busy: list[tuple[int, int, SpillSlot]] = []  # (end, slot index, slot)
    free_by_size: dict[int, list[SpillSlot]] = {}
    for iv in sorted(spilled, key=lambda iv: (iv.start, iv.reg.id)):
        v = iv.reg
        assert isinstance(v, VReg)
        busy.sort(key=lambda t: (t[0], t[1]))
        while busy and busy[0][0] <= iv.start:
            _, _, s = busy.pop(0)
            free_by_size.setdefault(s.size, []).append(s)
        pool = free_by_size.get(v.size)
        if pool:
            pool.sort(key=lambda s: s.index)
            slot = pool.pop(0)
        else:
            slot = SpillSlot(len(slots), v.size, target.slot_align(v.size))
            slots.append(slot)
        result[v] = slot
        busy.append((iv.end, slot.index, slot))
    return result, slots


@dataclass
class _LoopRegisters:
    """Spilled values given a register inside an innermost loop (see :func:`_loop_registers`)."""

    inside: dict[str, dict[VReg, PReg]]  # block label → value → its register there
    preload: dict[str, list[tuple[PReg, SpillSlot, VReg]]]  # preheader → reloads at its end


def _loop_registers(
    fn: VCodeFunction,
    live: lv.Liveness,
    final: Mapping[VReg, Location],
    fixed: dict[PReg, _Fixed],
    target: MachineTarget,
) -> _LoopRegisters:
    """Whole-interval spilling keeps a value in memory through a hot loop when the pressure was
    high somewhere else in its life.  So, for each innermost loop entered only from one
    preheader, the spilled values the loop reads but never writes take the registers the loop
    leaves free (most-read first): one reload at the end of the preheader, none inside.  The
    slot stays valid (the loop does not write the value), so nothing changes after the loop."""
    labels = [b.label for b in fn.blocks]
    index = {lab: i for i, lab in enumerate(labels)}
    held: dict[PReg, list[tuple[int, int]]] = {}
    for v, where in final.items():
        if isinstance(where, PReg):
            held.setdefault(where, []).extend(live.intervals[v].ranges)
    for ranges in held.values():
        ranges.sort()
    out = _LoopRegisters({}, {})
    for h, z in innermost_loops(fn):
        preds = {
            i
            for i, b in enumerate(fn.blocks)
            if not h <= i <= z
            for t in b.succs
            if h <= index[t] <= z
        }
        entries = {index[t] for i in preds for t in fn.blocks[i].succs if h <= index[t] <= z}
        if len(preds) != 1 or entries != {h}:
            continue
        pre = fn.blocks[next(iter(preds))]
        if not pre.insts:
            continue
        pz = live.block_range[pre.label][1]
        last = pz - 2 if pre.insts[-1].is_terminator() else pz - 1
        need = sorted(
            [(last, pz), (live.block_range[labels[h]][0], live.block_range[labels[z]][1])]
        )
        reads: dict[VReg, int] = {}
        written: set[VReg] = set()
        for b in fn.blocks[h : z + 1]:
            for inst in b.insts:
                for r in inst.uses():
                    if isinstance(r, VReg) and isinstance(final[r], SpillSlot):
                        reads[r] = reads.get(r, 0) + 1
                written.update(r for r in inst.defs() if isinstance(r, VReg))
        taken: set[PReg] = set()
        inside: dict[VReg, PReg] = {}
        for v in sorted((v for v in reads if v not in written), key=lambda v: (-reads[v], v.id)):
            for p in target.allocatable[v.cls]:
                if p in taken or fixed.get(p, _NO_FIXED).hits(need):
                    continue
                if lv.ranges_overlap(held.get(p, []), need):
                    continue
                taken.add(p)
                inside[v] = p
                slot = final[v]
                assert isinstance(slot, SpillSlot)
                out.preload.setdefault(pre.label, []).append((p, slot, v))
                break
        if inside:
            for b in fn.blocks[h : z + 1]:
                out.inside[b.label] = inside
    return out


def allocate(fn: VCodeFunction, target: MachineTarget) -> Allocation:
    """Allocate registers for ``fn`` on ``target``; see the module docstring."""
    _check_operands(fn, target)
    live = lv.analyze(fn)
    fixed = {p: _Fixed(iv.ranges) for p, iv in live.preg_intervals().items()}
    hints = _hints(fn)

    assignment: dict[VReg, Location | None] = {}
    by_class: dict[RegClass, list[lv.Interval]] = {}
    for iv in live.vreg_intervals():
        by_class.setdefault(iv.reg.cls, []).append(iv)
    costs = _spill_costs(fn, live)
    for cls in sorted(by_class, key=lambda c: c.value):
        _scan(by_class[cls], tuple(target.allocatable[cls]), fixed, hints, assignment, costs)

    spilled_ivs = [live.intervals[v] for v, loc in assignment.items() if loc is None]
    slot_of, slots = _assign_slots(spilled_ivs, target)
    final: dict[VReg, Location] = {}
    for v in sorted(assignment, key=lambda v: v.id):
        loc = assignment[v]
        final[v] = slot_of[v] if loc is None else loc

    promoted = _loop_registers(fn, live, final, fixed, target)
    new_blocks, removed, n_reload, n_spill = _rewrite(fn, target, final, promoted)
    out = VCodeFunction(fn.name, new_blocks)

    written: set[PReg] = set()
    for inst in out.instructions():
        written.update(r for r in inst.defs() if isinstance(r, PReg))
    used_cs = tuple(sorted(written & target.callee_saved, key=lambda p: (p.cls.value, p.index)))
    return Allocation(
        function=out,
        assignment=final,
        spill_slots=tuple(slots),
        used_callee_saved=used_cs,
        written_pregs=frozenset(written),
        moves_removed=removed,
        reloads=n_reload,
        spills=n_spill,
    )


def _rewrite(
    fn: VCodeFunction,
    target: MachineTarget,
    spilled_loc: Mapping[VReg, Location],
    promoted: _LoopRegisters,
) -> tuple[list[Block], int, int, int]:
    removed = n_reload = n_spill = 0
    blocks: list[Block] = []
    for b in fn.blocks:
        out: list[MachInst] = []
        inside = promoted.inside.get(b.label)
        loc = ChainMap(inside, spilled_loc) if inside else spilled_loc
        preload = [
            target.make_reload(p, slot, v) for p, slot, v in promoted.preload.get(b.label, ())
        ]
        n_reload += len(preload)
        for k, inst in enumerate(b.insts):
            if preload and k == len(b.insts) - 1 and inst.is_terminator():
                out.extend(preload)
                preload = []
            uses = list(inst.uses())
            defs = list(inst.defs())
            clobbered = set(inst.clobbers())
            mapping: dict[Reg, Reg] = {}
            taken: set[PReg] = set()
            spilled_order: list[VReg] = []
            for r in (*uses, *defs):
                if isinstance(r, VReg) and r not in mapping:
                    where = loc[r]
                    if isinstance(where, PReg):
                        mapping[r] = where
                    else:
                        spilled_order.append(r)
                        mapping[r] = r  # placeholder, replaced below
            def_set = set(defs)
            use_set = set(uses)
            # a value only defined here may share the scratch of a value only read here: the
            # instruction reads its operands before it writes (d, a, b all spilled: 2 scratches)
            read_only: dict[PReg, VReg] = {}
            for v in spilled_order:
                pick = None
                for s in target.scratch.get(v.cls, ()):
                    if v in def_set and s in clobbered:
                        continue
                    if s in taken and not (v not in use_set and s in read_only):
                        continue
                    pick = s
                    break
                if pick is None:
                    raise AllocationError(
                        f"{fn.name}: {inst!r} in block {b.label!r} has more spilled "
                        f"{v.cls.value} operands than {target.name} has scratch registers "
                        f"({len(target.scratch.get(v.cls, ()))})"
                    )
                if pick in taken:
                    del read_only[pick]  # shared once
                else:
                    taken.add(pick)
                    if v not in def_set:
                        read_only[pick] = v
                mapping[v] = pick
            if inst.is_terminator() and any(v in def_set for v in spilled_order):
                raise AllocationError(
                    f"{fn.name}: terminator {inst!r} defines a spilled value; there is no room "
                    "for the store after it"
                )
            for v in spilled_order:
                if v in use_set:
                    slot = loc[v]
                    assert isinstance(slot, SpillSlot)
                    out.append(target.make_reload(mapping[v], slot, v))  # type: ignore[arg-type]
                    n_reload += 1
            new = inst.rename(mapping)
            mv = new.is_move()
            if mv is not None and mv[0] == mv[1]:
                removed += 1
            else:
                out.append(new)
            for v in spilled_order:
                if v in def_set:
                    slot = loc[v]
                    assert isinstance(slot, SpillSlot)
                    out.append(target.make_spill(slot, mapping[v], v))  # type: ignore[arg-type]
                    n_spill += 1
        out.extend(preload)  # a block that falls through into the loop
        blocks.append(Block(b.label, out, b.succs))
    return blocks, removed, n_reload, n_spill
