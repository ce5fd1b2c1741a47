"""The ARM64 function assembler: schedule, allocate, plan the AAPCS64 frame, emit the
prologue, blocks and epilogues into a :class:`CodeBuffer` with ARM64 fix-ups.

Every function has a frame record (``stp x29, x30`` at ``record_offset``, x29 pointing at
it), so calls need no special casing; callee-saved x19-x28 are saved as 8 bytes, v8-v15 as
their low 8 bytes (``str d``), as AAPCS64 asks.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..abi import AAPCS64, FrameLayout, plan_frame
from ..buffer import CodeBuffer, FinishedCode
from ..regalloc import Allocation, allocate
from ..schedule import schedule_function
from ..vcode import MachineTarget, RegClass, VCodeError, VCodeFunction
from . import fixups
from . import inst as I
from . import regs as R
from .encode import encode, encode_branch

_BRANCH_KIND = {"b": fixups.BRANCH26, "b.cond": fixups.COND_BRANCH19}


@dataclass(frozen=True)
class Assembled:
    finished: FinishedCode
    allocation: Allocation
    frame: FrameLayout
    function: VCodeFunction
    listing: list[str]

    @property
    def code(self) -> bytes:
        return self.finished.code

    def disassemble(self) -> list[str]:
        return self.listing


class _Emitter:
    def __init__(self, buf: CodeBuffer, frame: FrameLayout):
        self.buf = buf
        self.frame = frame
        self.lines: list[str] = []

    def word(self, w: int, text: str) -> None:
        at = self.buf.put_u32(w)
        self.lines.append(f"{at:5x}: {text}")

    def inst(self, inst: I.A64Inst) -> None:
        self.word(*encode(inst, lambda s: self.frame.slot_offset(s.slot)))

    def branch(self, inst: I.A64Inst, label) -> None:
        at = self.buf.offset
        w, text = encode_branch(inst, 0)
        self.word(w, text.rsplit(" ", 1)[0] + f" {label.name}")
        kind = fixups.COND_BRANCH19 if inst.op in ("cbz", "cbnz") else _BRANCH_KIND[inst.op]
        self.buf.add_fixup(kind, label, at=at, pc=at)

    def sp_adjust(self, op: str, n: int) -> None:
        hi, lo = n >> 12 << 12, n & 0xFFF
        if n >> 24:
            raise VCodeError(f"a frame of {n} bytes is too large")
        for part in (hi, lo):
            if part:
                self.inst(I.A64Inst(op, (I.RegOp(R.SP, I.DEF), I.RegOp(R.SP), I.ImmOp(part))))

    def prologue(self) -> None:
        f = self.frame
        self.sp_adjust("sub_i", f.size)
        rec = f.record_offset
        assert rec is not None
        x16 = R.XREGS[16]
        if rec <= 504:
            self.inst(I.A64Inst("stp", (I.RegOp(R.FP), I.RegOp(R.LR), I.RegOp(R.SP), I.ImmOp(rec))))
            self.inst(I.add_imm(R.FP, R.SP, rec))
        else:  # beyond stp's reach: address the record through x16 (scratch, free here)
            self.inst(I.add_imm(x16, R.SP, rec))
            self.inst(I.A64Inst("stp", (I.RegOp(R.FP), I.RegOp(R.LR), I.RegOp(x16), I.ImmOp(0))))
            self.inst(I.mov(R.FP, x16))
        for reg, off, _n in f.saves:
            view = "x" if reg.cls is RegClass.INT else "d"
            self.inst(I.store("str", reg, I.MemOp(R.SP, None, off), view))

    def epilogue(self) -> None:
        f = self.frame
        for reg, off, _n in f.saves:
            view = "x" if reg.cls is RegClass.INT else "d"
            self.inst(I.load("ldr", reg, I.MemOp(R.SP, None, off), view))
        rec = f.record_offset
        assert rec is not None
        if rec <= 504:
            self.inst(I.A64Inst("ldp", (I.RegOp(R.FP), I.RegOp(R.LR), I.RegOp(R.SP), I.ImmOp(rec))))
        else:
            x16 = R.XREGS[16]
            self.inst(I.add_imm(x16, R.SP, rec))
            self.inst(I.A64Inst("ldp", (I.RegOp(R.FP), I.RegOp(R.LR), I.RegOp(x16), I.ImmOp(0))))
        self.sp_adjust("add_i", f.size)


MAX_RECORD = 4095  # add's immediate reach for the frame record


def assemble(
    fn: VCodeFunction,
    target: MachineTarget,
    *,
    schedule: bool = True,
    outgoing_args: int = 0,
) -> Assembled:
    for b in fn.blocks:
        for ins in b.insts:
            if not isinstance(ins, I.A64Inst):
                raise VCodeError(f"{fn.name}: {ins!r} is not an ARM64 instruction")
    last = fn.blocks[-1]
    if not last.insts or not last.insts[-1].is_terminator():
        raise VCodeError(f"{fn.name}: the last block {last.label!r} falls off the end")
    body = schedule_function(fn, target) if schedule else fn
    alloc = allocate(body, target)
    out = alloc.function
    frame = plan_frame(
        AAPCS64,
        alloc.spill_slots,
        alloc.used_callee_saved,
        outgoing=-(-outgoing_args // 8) * 8,
        frame_pointer=True,
        leaf=False,
    )
    if frame.record_offset is not None and frame.record_offset > MAX_RECORD:
        raise VCodeError(f"{fn.name}: a frame of {frame.size} bytes is beyond stp's reach")
    buf = CodeBuffer(fn.name)
    labels = {b.label: buf.new_label(b.label) for b in out.blocks}
    em = _Emitter(buf, frame)
    em.lines.append(f"{fn.name}:")
    em.prologue()
    for bi, b in enumerate(out.blocks):
        buf.bind(labels[b.label])
        em.lines.append(f"{b.label}:")
        nxt = out.blocks[bi + 1].label if bi + 1 < len(out.blocks) else None
        for ins in b.insts:
            assert isinstance(ins, I.A64Inst)
            if ins.flow is I.Flow.JUMP:
                (t,) = ins.branch_targets()
                if t != nxt:
                    em.branch(ins, labels[t])
            elif ins.flow is I.Flow.BRANCH:
                taken, other = ins.branch_targets()
                if taken == nxt:
                    em.branch(_inverted(ins), labels[other])
                else:
                    em.branch(ins, labels[taken])
                    if other != nxt:
                        em.branch(I.jump(other), labels[other])
            elif ins.flow is I.Flow.RETURN:
                em.epilogue()
                em.inst(ins)
            else:
                em.inst(ins)
    finished = buf.finish()
    return Assembled(finished, alloc, frame, out, em.lines)


def _inverted(ins: I.A64Inst) -> I.A64Inst:
    if ins.op == "b.cond":
        return I.A64Inst("b.cond", ins.ops, cond=I.invert(ins.cond), flags="r", flow=ins.flow)
    return I.A64Inst("cbnz" if ins.op == "cbz" else "cbz", ins.ops, flow=ins.flow)
