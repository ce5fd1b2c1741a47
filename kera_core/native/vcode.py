"""Machine-independent virtual-register code (the shared layer's IR).

An ISA backend selects its own instruction type; this module only fixes what every such type
must answer (:class:`MachInst`), the register vocabulary (:class:`RegClass`, :class:`VReg`,
:class:`PReg`), the function container (:class:`VCodeFunction`) and the description a target
gives the generic passes (:class:`MachineTarget`).  Nothing here knows an ISA by name: every
ISA-specific choice arrives through a :class:`MachineTarget`.

The code is *not* SSA: a virtual register may be defined more than once (a loop counter is
``v = v + 1``).  Liveness and allocation work on that directly, and a virtual register keeps one
location (a physical register or a spill slot) for the whole function, so no edge moves are
ever needed.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class VCodeError(ValueError):
    """A malformed :class:`VCodeFunction` or :class:`MachineTarget`."""


class RegClass(enum.Enum):
    """A physical register file.

    ``FLOAT`` is the whole floating-point / vector file (x86 xmm/ymm/zmm, ARM64 v-registers):
    a wider view of the same register is the same allocation unit.  ``FLAGS`` is the condition
    flags (x86 RFLAGS, ARM64 NZCV); it is never allocated, but instructions name it in their
    defs/uses so the scheduler keeps a compare next to the branch that reads it.  ``MASK`` is
    x86's AVX-512 opmask file (k0–k7): never allocated either; a selector names the fixed k
    register it uses, so liveness, scheduling and allocation see the dependency.
    """

    INT = "int"
    FLOAT = "float"
    FLAGS = "flags"
    MASK = "mask"


@dataclass(frozen=True, order=True)
class VReg:
    """A virtual register.  ``size`` is the value's width in bytes (8 for a scalar, 16/32/64 for
    an xmm/ymm/zmm vector); it sizes the spill slot and picks the spill/reload instruction."""

    id: int
    cls: RegClass
    size: int = 8

    def __post_init__(self) -> None:
        if self.id < 0:
            raise VCodeError(f"virtual register id must be >= 0, got {self.id}")
        if self.size not in (1, 2, 4, 8, 16, 32, 64):
            raise VCodeError(f"v{self.id}: unsupported size {self.size}")

    def __hash__(self) -> int:  # equal registers have equal ids; skips the enum's slow hash
        return hash((self.id, self.size))

    def __repr__(self) -> str:
        tag = {RegClass.INT: "i", RegClass.FLOAT: "f", RegClass.FLAGS: "c", RegClass.MASK: "k"}[
            self.cls
        ]
        return f"v{self.id}{tag}" if self.size == 8 else f"v{self.id}{tag}{self.size}"


@dataclass(frozen=True, order=True)
class PReg:
    """A physical register: its name (for messages and disassembly), class and the encoding
    index the ISA uses for it (x86: 0..15 for rax..r15 and 0..31 for xmm/zmm; ARM64: 0..31)."""

    name: str
    cls: RegClass
    index: int

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return self.name


Reg = VReg | PReg


@dataclass(frozen=True)
class SpillSlot:
    """A stack slot the allocator created.  Offsets are decided later by the frame plan
    (:func:`kera_core.native.abi.plan_frame`); instructions refer to the slot object."""

    index: int
    size: int
    align: int

    def __repr__(self) -> str:
        return f"slot{self.index}[{self.size}]"


@runtime_checkable
class MachInst(Protocol):
    """What the generic passes need from an ISA instruction.

    * ``defs()`` / ``uses()``: registers written / read, virtual or physical.  A register that
      is read and written (x86 two-address ``add dst, src``) is in both.  A physical register
      here is a *fixed constraint*: the value must be in exactly that register at that point.
    * ``clobbers()``: physical registers destroyed without producing a value (a call).
    * ``is_move()``: ``(dst, src)`` for a plain register copy, else ``None`` (coalescing hint;
      a move whose two sides end up in one register is deleted).
    * ``branch_targets()``: labels of blocks this instruction may jump to.
    * ``is_terminator()``: ends its block (jumps, returns).  Only terminators may branch.
    * ``has_side_effect()``, ``reads_memory()``, ``writes_memory()``: for the scheduler.
    * ``rename(mapping)``: a copy with every register in ``mapping`` replaced (used by the
      allocator; registers not in the mapping stay).
    """

    def defs(self) -> Sequence[Reg]: ...

    def uses(self) -> Sequence[Reg]: ...

    def clobbers(self) -> Sequence[PReg]: ...

    def is_move(self) -> tuple[Reg, Reg] | None: ...

    def branch_targets(self) -> Sequence[str]: ...

    def is_terminator(self) -> bool: ...

    def has_side_effect(self) -> bool: ...

    def reads_memory(self) -> bool: ...

    def writes_memory(self) -> bool: ...

    def rename(self, mapping: Mapping[Reg, Reg]) -> MachInst: ...


@dataclass
class Block:
    """A basic block: a label, its instructions (only the last may be a terminator, but a block
    may also fall through to the next block in layout order), and its successor labels."""

    label: str
    insts: list[MachInst]
    succs: tuple[str, ...] = ()


@dataclass
class VCodeFunction:
    """An ordered list of blocks; the first is the entry.  Layout order is emission order."""

    name: str
    blocks: list[Block]

    def block(self, label: str) -> Block:
        for b in self.blocks:
            if b.label == label:
                return b
        raise VCodeError(f"{self.name}: no block {label!r}")

    def instructions(self) -> Iterable[MachInst]:
        for b in self.blocks:
            yield from b.insts

    def validate(self) -> None:
        """Check labels are unique, successors exist, terminators are last, branch targets are
        listed successors, and every register has a class-consistent use."""
        if not self.blocks:
            raise VCodeError(f"{self.name}: a function needs at least one block")
        labels = [b.label for b in self.blocks]
        if len(set(labels)) != len(labels):
            dup = sorted({x for x in labels if labels.count(x) > 1})
            raise VCodeError(f"{self.name}: duplicate block labels {dup}")
        known = set(labels)
        for b in self.blocks:
            for s in b.succs:
                if s not in known:
                    raise VCodeError(
                        f"{self.name}: block {b.label!r} names unknown successor {s!r}"
                    )
            for i, inst in enumerate(b.insts):
                if inst.is_terminator() and i != len(b.insts) - 1:
                    raise VCodeError(
                        f"{self.name}: terminator {inst!r} is not last in block {b.label!r}"
                    )
                for t in inst.branch_targets():
                    if t not in b.succs:
                        raise VCodeError(
                            f"{self.name}: {inst!r} in block {b.label!r} branches to {t!r}, "
                            f"which is not among its successors {b.succs}"
                        )
        sizes: dict[int, VReg] = {}
        for inst in self.instructions():
            for r in (*inst.defs(), *inst.uses()):
                if isinstance(r, VReg):
                    seen = sizes.setdefault(r.id, r)
                    if seen != r:
                        raise VCodeError(
                            f"{self.name}: virtual register id {r.id} used as both {seen!r} and {r!r}"
                        )


@dataclass(frozen=True)
class MachineTarget:
    """Everything the generic passes may know about an ISA.

    * ``allocatable``: per class, the registers the allocator may hand out, in preference
      order (put caller-saved registers first so leaf functions save nothing).
    * ``callee_saved``: registers a function must preserve (the allocator reports which of
      them it used so the frame plan saves them).
    * ``scratch``: per class, registers reserved for spill reloads/stores; never allocated and
      never named by selected instructions.  Give at least as many as the most same-class
      virtual operands one instruction has.
    * ``make_move(dst, src, size)``: a register-to-register copy of ``size`` bytes.
    * ``make_spill(slot, src, vreg)`` / ``make_reload(dst, slot, vreg)``: store / load a
      physical register to / from a spill slot (the vreg tells the width).
    * ``latency(inst)``: cycles until the result of ``inst`` is available (scheduler).
    * ``slot_align(size)``: alignment of a spill slot of that size.
    """

    name: str
    allocatable: Mapping[RegClass, tuple[PReg, ...]]
    callee_saved: frozenset[PReg]
    scratch: Mapping[RegClass, tuple[PReg, ...]]
    make_move: Callable[[Reg, Reg, int], MachInst]
    make_spill: Callable[[SpillSlot, PReg, VReg], MachInst]
    make_reload: Callable[[PReg, SpillSlot, VReg], MachInst]
    latency: Callable[[MachInst], int] = field(default=lambda inst: 1)
    slot_align: Callable[[int], int] = field(default=lambda size: min(max(size, 8), 64))

    def __post_init__(self) -> None:
        for cls, regs in self.allocatable.items():
            for r in regs:
                if r.cls is not cls:
                    raise VCodeError(f"{self.name}: {r!r} listed as allocatable {cls.value}")
            if len(set(regs)) != len(regs):
                raise VCodeError(f"{self.name}: duplicate allocatable {cls.value} registers")
            overlap = set(regs) & set(self.scratch.get(cls, ()))
            if overlap:
                raise VCodeError(f"{self.name}: {sorted(overlap)} are both allocatable and scratch")

    def all_scratch(self) -> frozenset[PReg]:
        return frozenset(r for regs in self.scratch.values() for r in regs)
