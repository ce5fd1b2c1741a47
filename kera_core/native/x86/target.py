"""The x86-64 :class:`MachineTarget`: register file, scratch choice, spill code, latencies."""

from __future__ import annotations

from functools import cache

from iced_x86 import Code, Mnemonic, OpCodeInfo

from ..vcode import MachineTarget, MachInst, PReg, Reg, RegClass, SpillSlot, VReg
from . import inst as I
from . import regs as R

INT_SCRATCH = (R.R11, R.R10)
# three: vblendv/vfmadd read three vector registers, and all three may be spilled
FLOAT_SCRATCH = (R.XMMS[15], R.XMMS[14], R.XMMS[13])

# Caller-saved first: a leaf function that fits in them saves nothing.
_INT_ORDER = (R.RAX, R.RCX, R.RDX, R.RSI, R.RDI, R.R8, R.R9, R.RBX, R.R12, R.R13, R.R14, R.R15)


def _move(dst: Reg, src: Reg, size: int) -> MachInst:
    if dst.cls is RegClass.INT:
        return I.mov(dst, src)
    return I.vmov(dst, src, max(size, 16))


def _float_mem_code(size: int, store: bool, high: bool) -> int:
    if size <= 8:
        if high:
            return Code.EVEX_VMOVSD_M64_K1_XMM if store else Code.EVEX_VMOVSD_XMM_K1Z_M64
        return Code.MOVSD_XMMM64_XMM if store else Code.MOVSD_XMM_XMMM64
    if size == 16:
        if high:
            return Code.EVEX_VMOVUPS_XMMM128_K1Z_XMM if store else Code.EVEX_VMOVUPS_XMM_K1Z_XMMM128
        return Code.MOVUPS_XMMM128_XMM if store else Code.MOVUPS_XMM_XMMM128
    if size == 32:
        if high:
            return Code.EVEX_VMOVUPS_YMMM256_K1Z_YMM if store else Code.EVEX_VMOVUPS_YMM_K1Z_YMMM256
        return Code.VEX_VMOVUPS_YMMM256_YMM if store else Code.VEX_VMOVUPS_YMM_YMMM256
    return Code.EVEX_VMOVUPS_ZMMM512_K1Z_ZMM if store else Code.EVEX_VMOVUPS_ZMM_K1Z_ZMMM512


def spill_store(slot: SpillSlot, src: PReg, v: VReg) -> I.X86Inst:
    """Store ``src`` (holding ``v``) to ``slot``.  Never touches the flags."""
    if src.cls is RegClass.INT:
        return I.X86Inst(Code.MOV_RM64_R64, (I.SlotOp(slot, I.DEF), I.RegOp(src, I.USE)))
    code = _float_mem_code(v.size, True, src.index >= 16)
    return I.X86Inst(code, (I.SlotOp(slot, I.DEF), I.RegOp(src, I.USE)))


def spill_reload(dst: PReg, slot: SpillSlot, v: VReg) -> I.X86Inst:
    if dst.cls is RegClass.INT:
        return I.X86Inst(Code.MOV_R64_RM64, (I.RegOp(dst, I.DEF), I.SlotOp(slot, I.USE)))
    code = _float_mem_code(v.size, False, dst.index >= 16)
    return I.X86Inst(code, (I.RegOp(dst, I.DEF), I.SlotOp(slot, I.USE)))


_LATENCY = {
    Mnemonic.IMUL: 3,
    Mnemonic.IDIV: 40,
    Mnemonic.DIV: 35,
    Mnemonic.ADDSD: 4,
    Mnemonic.SUBSD: 4,
    Mnemonic.MULSD: 4,
    Mnemonic.DIVSD: 14,
    Mnemonic.VADDSD: 4,
    Mnemonic.VSUBSD: 4,
    Mnemonic.VMULSD: 4,
    Mnemonic.VDIVSD: 14,
    Mnemonic.ADDPD: 4,
    Mnemonic.MULPD: 4,
    Mnemonic.VADDPD: 4,
    Mnemonic.VMULPD: 4,
    Mnemonic.VFMADD231PD: 4,
    Mnemonic.VFMADD231SD: 4,
    Mnemonic.CVTSI2SD: 4,
    Mnemonic.SQRTSD: 18,
}


@cache
def _mnemonic(code: int) -> int:
    return OpCodeInfo(code).mnemonic


def latency(inst: MachInst) -> int:
    """Approximate result latency in cycles (a recent Intel/AMD core): loads 5, integer
    multiply 3, FP add/mul/fma 4, divides 14-40, everything else 1."""
    if not isinstance(inst, I.X86Inst):
        return 1
    lat = _LATENCY.get(_mnemonic(inst.code), 1)
    if inst.reads_memory() and not inst.writes_memory():
        lat = max(lat, 1) + 4
    return lat


def x86_64_target(*, frame_pointer: bool = False, avx512: bool = False) -> MachineTarget:
    """The x86-64 register file for the allocator.

    Allocatable: the 16 GPRs minus rsp, minus rbp when it is the frame pointer, minus the two
    scratch registers r10/r11 (13, or 12 with a frame pointer); xmm0-xmm12 (xmm0-12 and
    xmm16-31 with ``avx512``, which then requires every FLOAT instruction selected to have an
    EVEX form, as legacy/VEX encodings cannot name xmm16-31).  Scratch: r11, r10, xmm15,
    xmm14, xmm13 (three: an instruction reading three spilled vectors, like ``vblendvps``,
    still allocates).
    """
    ints = _INT_ORDER if frame_pointer else (*_INT_ORDER, R.RBP)
    floats = R.XMMS[:13] + (R.XMMS[16:32] if avx512 else ())
    name = "x86-64" + ("+fp" if frame_pointer else "") + ("+avx512" if avx512 else "")
    return MachineTarget(
        name=name,
        allocatable={RegClass.INT: ints, RegClass.FLOAT: floats},
        callee_saved=frozenset({R.RBX, R.RBP, R.R12, R.R13, R.R14, R.R15}),
        scratch={RegClass.INT: INT_SCRATCH, RegClass.FLOAT: FLOAT_SCRATCH},
        make_move=_move,
        make_spill=spill_store,
        make_reload=spill_reload,
        latency=latency,
        # Vector slots are accessed with unaligned moves; with a frame pointer the frame can
        # realign SP, so ymm/zmm slots get their natural 32/64-byte alignment.
        slot_align=lambda size: 8 if size <= 8 else (size if frame_pointer else min(size, 16)),
    )
