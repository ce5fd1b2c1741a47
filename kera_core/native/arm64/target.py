"""The ARM64 :class:`MachineTarget` (AAPCS64): register file, scratch choice, spill code.

Allocatable integer registers: x0-x13 (caller-saved) then x19-x28 (callee-saved); x14-x17
are the scratch registers (four: ``msub``/``fmadd`` name four registers) (x16/x17 are IP0/IP1, which the ABI lets a veneer destroy), x18 is
the platform register, x29/x30 are the frame record, x31 is SP/XZR.  Float: v0-v7, v16-v27
(caller-saved), then v8-v15 (whose low 8 bytes a callee preserves); v28-v31 are scratch.
"""

from __future__ import annotations

from ..vcode import MachineTarget, MachInst, PReg, Reg, RegClass, SpillSlot, VReg
from . import inst as I
from . import regs as R

X, V = R.XREGS, R.VREGS
INT_SCRATCH = (X[16], X[17], X[15], X[14])
FLOAT_SCRATCH = (V[31], V[30], V[29], V[28])
INT_ORDER = (*X[0:14], *X[19:29])
FLOAT_ORDER = (*V[0:8], *V[16:28], *V[8:16])
CALLEE_SAVED = frozenset((*X[19:29], *V[8:16]))


def _move(dst: Reg, src: Reg, size: int) -> MachInst:
    return I.mov(dst, src)


def _view(reg: PReg, v: VReg) -> str:
    if reg.cls is RegClass.INT:
        return "x"
    return "q" if v.size > 8 else "d"


def spill_store(slot: SpillSlot, src: PReg, v: VReg) -> I.A64Inst:
    return I.store("str", src, I.SlotOp(slot), _view(src, v))


def spill_reload(dst: PReg, slot: SpillSlot, v: VReg) -> I.A64Inst:
    return I.load("ldr", dst, I.SlotOp(slot), _view(dst, v))


_LATENCY = {"sdiv": 12, "udiv": 12, "fdiv": 10, "fsqrt": 12, "madd": 3, "msub": 3}
_LATENCY |= {"v.fdiv": 10, "v.fsqrt": 12, "v.fmla": 4, "v.bsl": 2, "v.bit": 2, "v.bif": 2}


def latency(inst: MachInst) -> int:
    if not isinstance(inst, I.A64Inst):
        return 1
    if inst.reads_memory():
        return 4
    if inst.op in _LATENCY:
        return _LATENCY[inst.op]
    if inst.op.startswith(("f", "v.f", "v.dup")):
        return 3
    return 1


def arm64_target() -> MachineTarget:
    return MachineTarget(
        name="arm64",
        allocatable={RegClass.INT: INT_ORDER, RegClass.FLOAT: FLOAT_ORDER},
        callee_saved=CALLEE_SAVED,
        scratch={RegClass.INT: INT_SCRATCH, RegClass.FLOAT: FLOAT_SCRATCH},
        make_move=_move,
        make_spill=spill_store,
        make_reload=spill_reload,
        latency=latency,
        slot_align=lambda size: 8 if size <= 8 else 16,
    )
