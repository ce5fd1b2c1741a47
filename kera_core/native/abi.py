"""Calling conventions as data, and frame planning.

A :class:`CallConv` says where arguments and results go, what a callee must preserve, and
how the stack is aligned.  :func:`plan_frame` turns an allocation's spill slots and used
callee-saved registers into a :class:`FrameLayout`: how many bytes the prologue reserves,
where each register is saved and each slot lives (offsets from the stack pointer after the
prologue), and whether the stack must be realigned for 32/64-byte vector slots.  The plan is
ISA-neutral; each backend spells it in instructions.

Frame shape (addresses grow upwards; ``E`` is the stack pointer on entry)::

    E + entry_sp_offset + k    incoming stack argument at offset k
    E                          (x86: return address)
    E - record ..  E           frame record: saved frame pointer (+ link register on ARM64)
                               padding to keep SP aligned
                               callee-saved register saves
                               spill slots, largest alignment first
    SP .. SP + outgoing        outgoing stack arguments for calls this function makes
    SP = E - size              (size + entry_sp_offset) is a multiple of stack_align
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .arm64 import regs as a64
from .vcode import PReg, RegClass, SpillSlot
from .x86 import regs as x86


class FrameError(ValueError):
    """A frame that cannot be laid out as asked."""


@dataclass(frozen=True)
class RegLoc:
    reg: PReg


@dataclass(frozen=True)
class StackLoc:
    offset: int  # from the stack pointer at the call instruction
    size: int


ArgLoc = RegLoc | StackLoc


@dataclass(frozen=True)
class ArgAssignment:
    locations: tuple[ArgLoc, ...]
    stack_bytes: int  # outgoing area the caller needs (a multiple of the slot size)


@dataclass(frozen=True)
class CallConv:
    name: str
    int_args: tuple[PReg, ...]
    float_args: tuple[PReg, ...]
    int_rets: tuple[PReg, ...]
    float_rets: tuple[PReg, ...]
    callee_saved: frozenset[PReg]
    clobbered: frozenset[PReg]  # everything a call may destroy, flags included
    frame_record: tuple[PReg, ...]  # saved at the top of the frame, lowest address first
    frame_pointer: PReg
    stack_pointer: PReg
    entry_sp_offset: int  # bytes between the call-site SP and the SP on entry
    stack_align: int = 16
    stack_slot: int = 8
    red_zone: int = 0  # bytes below SP a leaf could use; this layer never uses them
    callee_saved_bytes: Mapping[PReg, int] = field(default_factory=dict)  # partial saves

    def saved_bytes(self, reg: PReg) -> int:
        """How many low bytes of ``reg`` a callee preserves (0 if none)."""
        if reg not in self.callee_saved:
            return 0
        if reg in self.callee_saved_bytes:
            return self.callee_saved_bytes[reg]
        return 8 if reg.cls is RegClass.INT else 64

    def call_clobbers(self, value_bytes: int = 8) -> frozenset[PReg]:
        """Registers that do not keep a ``value_bytes``-wide value across a call: the clobbered
        set plus callee-saved registers preserved only partly (AAPCS64 v8-v15 beyond 8 bytes).
        Give this as a call instruction's clobbers."""

        def need(r: PReg) -> int:
            return value_bytes if r.cls is RegClass.FLOAT else min(value_bytes, 8)

        partial = {r for r in self.callee_saved if 0 < self.saved_bytes(r) < need(r)}
        return self.clobbered | partial

    def assign_args(self, params: Sequence[RegClass | tuple[RegClass, int]]) -> ArgAssignment:
        """Locations of parameters, each a class or ``(class, size)``.  Integer and float
        registers are used independently in order; the rest go to the stack in order, each in
        a slot of at least ``stack_slot`` bytes aligned to its size (at most 16)."""
        return self._assign(params, self.int_args, self.float_args)

    def assign_returns(self, results: Sequence[RegClass | tuple[RegClass, int]]) -> ArgAssignment:
        loc = self._assign(results, self.int_rets, self.float_rets)
        if loc.stack_bytes:
            raise FrameError(f"{self.name}: {len(results)} results do not fit in registers")
        return loc

    def _assign(self, params, ints, floats) -> ArgAssignment:
        ni = nf = 0
        stack = 0
        out: list[ArgLoc] = []
        for p in params:
            cls, size = p if isinstance(p, tuple) else (p, 8)
            if cls is RegClass.INT and ni < len(ints):
                out.append(RegLoc(ints[ni]))
                ni += 1
            elif cls is RegClass.FLOAT and nf < len(floats):
                out.append(RegLoc(floats[nf]))
                nf += 1
            elif cls in (RegClass.INT, RegClass.FLOAT):
                slot = max(size, self.stack_slot)
                align = min(slot, 16)
                stack = -(-stack // align) * align
                out.append(StackLoc(stack, size))
                stack += slot
            else:
                raise FrameError(f"{self.name}: cannot pass a {cls.value} value")
        stack = -(-stack // self.stack_slot) * self.stack_slot
        return ArgAssignment(tuple(out), stack)


def _sysv() -> CallConv:
    gprs = x86.GPRS
    callee = frozenset({x86.RBX, x86.RBP, x86.R12, x86.R13, x86.R14, x86.R15})
    clobbered = frozenset(r for r in gprs if r not in callee and r is not x86.RSP)
    clobbered |= frozenset(x86.XMMS) | frozenset(x86.KS) | {x86.FLAGS}
    return CallConv(
        name="sysv-amd64",
        int_args=(x86.RDI, x86.RSI, x86.RDX, x86.RCX, x86.R8, x86.R9),
        float_args=x86.XMMS[:8],
        int_rets=(x86.RAX, x86.RDX),
        float_rets=(x86.XMM0, x86.XMM1),
        callee_saved=callee,
        clobbered=clobbered,
        frame_record=(x86.RBP,),
        frame_pointer=x86.RBP,
        stack_pointer=x86.RSP,
        entry_sp_offset=8,  # the return address
        red_zone=128,
    )


def _aapcs64() -> CallConv:
    x = a64.XREGS
    v = a64.VREGS
    callee_int = frozenset(x[19:29])  # x19-x28; x29/x30 are the frame record
    callee_vec = frozenset(v[8:16])
    clobbered = frozenset(x[0:19]) | frozenset(v[0:8]) | frozenset(v[16:32]) | {a64.NZCV, a64.LR}
    return CallConv(
        name="aapcs64",
        int_args=x[0:8],
        float_args=v[0:8],
        int_rets=x[0:8],
        float_rets=v[0:4],
        callee_saved=callee_int | callee_vec | {a64.FP},
        clobbered=clobbered,
        frame_record=(a64.FP, a64.LR),
        frame_pointer=a64.FP,
        stack_pointer=a64.SP,
        entry_sp_offset=0,
        callee_saved_bytes={r: 8 for r in callee_vec},  # only d8-d15 are preserved
    )


SYSV_AMD64 = _sysv()
AAPCS64 = _aapcs64()


@dataclass(frozen=True)
class FrameLayout:
    conv: CallConv
    size: int  # bytes between the entry SP and the SP after the prologue (frame record incl.)
    saves: tuple[tuple[PReg, int, int], ...]  # (register, offset from SP, bytes)
    slot_offsets: Mapping[int, int]  # spill slot index -> offset from SP
    outgoing: int  # bytes of outgoing stack arguments at [SP, SP + outgoing)
    record_offset: int | None  # offset from SP of the frame record; FP points there
    realign: int  # 0, or the alignment SP must be forced to (frame pointer required)

    def slot_offset(self, slot: SpillSlot) -> int:
        try:
            return self.slot_offsets[slot.index]
        except KeyError:
            raise FrameError(f"{slot!r} is not in this frame") from None

    def incoming_arg_offset(self, stack_offset: int) -> int:
        """Offset from SP (after the prologue) of the incoming stack argument at
        ``stack_offset``.  Not available when the frame realigns SP: use
        :meth:`incoming_arg_fp_offset`."""
        if self.realign:
            raise FrameError(
                "a realigned frame addresses incoming arguments from the frame pointer"
            )
        return self.size + self.conv.entry_sp_offset + stack_offset

    def incoming_arg_fp_offset(self, stack_offset: int) -> int:
        if self.record_offset is None:
            raise FrameError("this frame has no frame pointer")
        rec = len(self.conv.frame_record) * 8
        return rec + self.conv.entry_sp_offset + stack_offset


def plan_frame(
    conv: CallConv,
    spill_slots: Sequence[SpillSlot],
    saved: Sequence[PReg],
    *,
    outgoing: int = 0,
    frame_pointer: bool = False,
    leaf: bool = False,
) -> FrameLayout:
    """Lay out a frame.  ``saved`` are the callee-saved registers the body writes (from the
    allocation); frame-record registers among them are saved by the record.  ``leaf``
    functions (no calls) with nothing to store get an empty frame; every other frame keeps SP
    aligned to ``conv.stack_align`` so calls see the alignment the convention promises."""
    if outgoing < 0 or outgoing % conv.stack_slot:
        raise FrameError(f"outgoing argument area {outgoing} is not a multiple of the slot size")
    record = conv.frame_record if frame_pointer else ()
    rec_bytes = 8 * len(record)
    max_align = max((s.align for s in spill_slots), default=1)
    realign = max_align if max_align > conv.stack_align else 0
    if realign and not frame_pointer:
        raise FrameError(
            f"spill slots aligned to {max_align} bytes need SP realignment, which needs a frame "
            "pointer (plan_frame(..., frame_pointer=True))"
        )
    for s in spill_slots:
        if s.align & (s.align - 1) or s.size <= 0:
            raise FrameError(f"bad spill slot {s!r}")

    def up(n: int, a: int) -> int:
        return -(-n // a) * a

    at = outgoing
    slot_offsets: dict[int, int] = {}
    for s in sorted(spill_slots, key=lambda s: (-s.align, s.index)):
        at = up(at, s.align)
        slot_offsets[s.index] = at
        at += s.size
    saves: list[tuple[PReg, int, int]] = []
    seen: set[PReg] = set()
    for r in sorted(saved, key=lambda r: (r.cls.value, r.index)):
        if r in record or r in seen:
            continue
        seen.add(r)
        n = conv.saved_bytes(r)
        if n == 0:
            raise FrameError(f"{r!r} is not callee-saved in {conv.name}")
        n = min(n, 16) if r.cls is RegClass.FLOAT else n
        at = up(at, n)
        saves.append((r, at, n))
        at += n
    body = at
    if leaf and body == 0 and not record:
        return FrameLayout(conv, 0, (), {}, 0, None, 0)
    align = max(conv.stack_align, realign)
    size = body + rec_bytes
    while (size + conv.entry_sp_offset) % conv.stack_align or (
        realign and (size - rec_bytes) % realign
    ):
        size += 8
    return FrameLayout(
        conv=conv,
        size=size,
        saves=tuple(saves),
        slot_offsets=slot_offsets,
        outgoing=outgoing,
        record_offset=size - rec_bytes if record else None,
        realign=realign if align > conv.stack_align else 0,
    )


RECURSION_STACK = 3 << 20
"""The native stack (bytes) the nested calls of recursive functions may take: x86-64 runs on
the host thread's stack (8 MiB), the arm64 emulator maps 4 MiB (docs/native.md)."""


def check_recursion_stack(prog, frames: dict[str, int]) -> None:
    """Refuse (:class:`VCodeError`) a program whose recursive functions could overflow the
    native stack before the checked depth limit stops them: each recursive component can be
    ``RECURSION_LIMIT`` calls deep, each call taking at most its largest member's frame
    (``frames``: bytes per loop function, its return address included), and a chain of
    calls passes through each component at most once (the components form a DAG)."""
    from kera_core.ir.cycles import RECURSION_LIMIT
    from kera_core.native.vcode import VCodeError

    worst: dict[bytes, int] = {}
    for name, lf in prog.functions.items():
        if lf.component is not None:
            worst[lf.component] = max(worst.get(lf.component, 0), frames[name])
    need = RECURSION_LIMIT * sum(worst.values())
    if need > RECURSION_STACK:
        raise VCodeError(
            f"recursion: {RECURSION_LIMIT} nested calls of frames up to "
            f"{max(worst.values())} bytes need {need} bytes of stack, more than the "
            f"{RECURSION_STACK} a native run has"
        )
