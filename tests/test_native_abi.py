"""Calling conventions and frame planning, checked on paper and by running code."""

from __future__ import annotations

import ctypes
import itertools

import pytest
from iced_x86 import Code, Instruction, MemoryOperand, Register

from kera_core.native.abi import AAPCS64, SYSV_AMD64, FrameError, RegLoc, StackLoc, plan_frame
from kera_core.native.arm64 import regs as A
from kera_core.native.buffer import CodeBuffer
from kera_core.native.jit import load
from kera_core.native.vcode import Block, RegClass, SpillSlot, VCodeFunction, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86 import regs as R
from kera_core.native.x86.emit import assemble, call_address, encode
from kera_core.native.x86.target import x86_64_target
from tests.tools import native_only

linux = native_only(needs_x86=False)
i64, f64 = ctypes.c_int64, ctypes.c_double
INT, FLOAT = RegClass.INT, RegClass.FLOAT
CALLEE = (R.RBX, R.R12, R.R13, R.R14, R.R15, R.RBP)


def _disjoint(spans):
    spans = sorted(spans)
    return all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))


@pytest.mark.parametrize("fp", [False, True])
@pytest.mark.parametrize("n_saved", range(7))
@pytest.mark.parametrize("n_slots", range(6))
def test_sysv_frames_keep_sp_16_aligned(fp, n_saved, n_slots):
    slots = [SpillSlot(k, 8, 8) for k in range(n_slots)]
    saved = [r for r in CALLEE[:n_saved] if not (fp and r is R.RBP)]
    f = plan_frame(SYSV_AMD64, slots, saved, frame_pointer=fp, outgoing=16 if n_slots % 2 else 0)
    assert (f.size + 8) % 16 == 0  # entry rsp is 8 mod 16; after the prologue it is 0 mod 16
    spans = [(f.slot_offset(s), f.slot_offset(s) + 8) for s in slots]
    spans += [(off, off + n) for _, off, n in f.saves]
    spans.append((0, f.outgoing))
    if fp:
        assert f.record_offset == f.size - 8  # saved rbp just below the return address
        spans.append((f.record_offset, f.size))
    assert _disjoint(spans)
    assert all(0 <= a and b <= f.size for a, b in spans)
    assert {r for r, _, _ in f.saves} == set(saved)
    assert f.incoming_arg_offset(0) == f.size + 8


def test_aapcs64_frames_save_the_low_half_of_v8_v15():
    slots = [SpillSlot(0, 16, 16), SpillSlot(1, 8, 8), SpillSlot(2, 8, 8)]
    saved = [A.XREGS[19], A.XREGS[20], A.XREGS[21], A.VREGS[8], A.VREGS[9]]
    f = plan_frame(AAPCS64, slots, saved, frame_pointer=True)
    assert f.size % 16 == 0
    sizes = {r: n for r, _, n in f.saves}
    assert sizes[A.VREGS[8]] == 8 and sizes[A.XREGS[19]] == 8
    assert f.record_offset == f.size - 16  # x29, x30
    assert f.slot_offset(slots[0]) % 16 == 0
    # a 16-byte vector value does not survive a call in v8 (only d8 is preserved)
    assert A.VREGS[8] in AAPCS64.call_clobbers(16)
    assert A.VREGS[8] not in AAPCS64.call_clobbers(8)
    assert A.XREGS[19] not in AAPCS64.call_clobbers(16)


def test_vector_slots_realign_with_a_frame_pointer_only():
    slots = [SpillSlot(0, 32, 32), SpillSlot(1, 64, 64), SpillSlot(2, 8, 8)]
    with pytest.raises(FrameError, match="frame pointer"):
        plan_frame(SYSV_AMD64, slots, [R.RBX])
    f = plan_frame(SYSV_AMD64, slots, [R.RBX], frame_pointer=True)
    assert f.realign == 64
    assert f.slot_offset(slots[0]) % 32 == 0 and f.slot_offset(slots[1]) % 64 == 0
    with pytest.raises(FrameError):
        f.incoming_arg_offset(0)
    assert f.incoming_arg_fp_offset(8) == 8 + 8 + 8


def test_argument_assignment():
    a = SYSV_AMD64.assign_args([INT] * 8)
    assert a.locations[:6] == tuple(RegLoc(r) for r in (R.RDI, R.RSI, R.RDX, R.RCX, R.R8, R.R9))
    assert a.locations[6:] == (StackLoc(0, 8), StackLoc(8, 8)) and a.stack_bytes == 16
    mixed = SYSV_AMD64.assign_args([INT, FLOAT] * 9)
    assert mixed.locations[0] == RegLoc(R.RDI) and mixed.locations[1] == RegLoc(R.XMM0)
    assert mixed.locations[15] == RegLoc(R.XMMS[7])
    assert [loc for loc in mixed.locations if isinstance(loc, StackLoc)] == [
        StackLoc(0, 8),
        StackLoc(8, 8),
        StackLoc(16, 8),
        StackLoc(24, 8),
    ]
    arm = AAPCS64.assign_args([FLOAT, INT] * 9)
    assert arm.locations[1] == RegLoc(A.XREGS[0]) and arm.locations[0] == RegLoc(A.VREGS[0])
    assert arm.stack_bytes == 16


def _load_args(conv_locs, vregs):
    insts = []
    for v, loc in zip(vregs, conv_locs, strict=True):
        if isinstance(loc, RegLoc):
            insts.append(I.mov(v, loc.reg))
        elif v.cls is INT:
            insts.append(I.load(v, I.ArgOp(loc.offset)))
        else:
            insts.append(I.movsd_load(v, I.ArgOp(loc.offset)))
    return insts


@linux
@pytest.mark.parametrize("fp", [False, True])
def test_eight_integer_arguments_two_on_the_stack(fp):
    vs = [VReg(k, INT) for k in range(8)]
    acc = VReg(20, INT)
    insts = _load_args(SYSV_AMD64.assign_args([INT] * 8).locations, vs)
    insts.append(I.mov_imm(acc, 0))
    for k, v in enumerate(vs):
        w = VReg(30 + k, INT)
        insts += [I.mov_imm(w, k + 1), I.imul(w, v), I.add(acc, w)]
    insts += [I.mov(R.RAX, acc), I.ret(R.RAX)]
    fn = VCodeFunction("eight", [Block("entry", insts)])
    asm = assemble(fn, x86_64_target(frame_pointer=fp), frame_pointer=fp)
    f = asm.load(i64, (i64,) * 8)
    args = [3, -5, 7, 11, -13, 17, 1000003, -99991]
    assert f(*args) == sum((k + 1) * a for k, a in enumerate(args))
    f.owner.close()


@linux
def test_mixed_int_and_double_arguments():
    kinds = [INT, FLOAT] * 9  # 9 ints (3 on the stack), 9 doubles (1 on the stack)
    vs = [VReg(k, c) for k, c in enumerate(kinds)]
    insts = _load_args(SYSV_AMD64.assign_args(kinds).locations, vs)
    acc = VReg(100, FLOAT)
    tmp = VReg(101, FLOAT)
    insts.append(I.movaps(acc, vs[1]))
    for v in vs[2:]:
        if v.cls is INT:
            insts += [I.cvtsi2sd(tmp, v), I.sd("mul", acc, tmp)]
        else:
            insts.append(I.sd("add", acc, v))
    insts.append(I.sd("sub", acc, vs[3]))
    insts += [I.movaps(R.XMM0, acc), I.ret(R.XMM0)]
    fn = VCodeFunction("mixed", [Block("entry", insts)])
    asm = assemble(fn, x86_64_target())
    f = asm.load(f64, [i64 if c is INT else f64 for c in kinds])
    args = [(k + 2) if c is INT else (0.5 + k / 8) for k, c in enumerate(kinds)]
    want = args[1]
    for a, c in zip(args[2:], kinds[2:], strict=True):
        want = want * float(a) if c is INT else want + a
    want = want - args[3]
    assert f(*args) == want
    f.owner.close()


MAGIC = [0x1111111111111111 * (k + 1) for k in range(6)]


def _harness():
    """harness(fnptr, out, a, b, c, d): load magic values into rbx, rbp, r12-r15, call
    fnptr(a, b, c, d), then store those registers and rsp (before/after) to out[0..7]."""
    buf = CodeBuffer("harness")
    e = lambda ins: encode(buf, ins)  # noqa: E731
    saved = [Register.RBX, Register.RBP, Register.R12, Register.R13, Register.R14, Register.R15]
    for r in saved:
        e(Instruction.create_reg(Code.PUSH_R64, r))
    e(Instruction.create_reg_i32(Code.SUB_RM64_IMM32, Register.RSP, 24))  # 8+48+24 = 80
    e(Instruction.create_mem_reg(Code.MOV_RM64_R64, MemoryOperand(Register.RSP), Register.RSI))
    e(Instruction.create_reg_reg(Code.MOV_R64_RM64, Register.RAX, Register.RDI))
    for dst, src in ((Register.RDI, Register.RDX), (Register.RSI, Register.RCX)):
        e(Instruction.create_reg_reg(Code.MOV_R64_RM64, dst, src))
    e(Instruction.create_reg_reg(Code.MOV_R64_RM64, Register.RDX, Register.R8))
    e(Instruction.create_reg_reg(Code.MOV_R64_RM64, Register.RCX, Register.R9))
    for r, m in zip(saved, MAGIC, strict=True):
        e(Instruction.create_reg_i64(Code.MOV_R64_IMM64, r, m))
    e(
        Instruction.create_mem_reg(
            Code.MOV_RM64_R64, MemoryOperand(Register.RSP, displ=8, displ_size=1), Register.RSP
        )
    )
    e(Instruction.create_reg(Code.CALL_RM64, Register.RAX))
    e(Instruction.create_reg_mem(Code.MOV_R64_RM64, Register.R11, MemoryOperand(Register.RSP)))
    for k, r in enumerate(saved):
        e(
            Instruction.create_mem_reg(
                Code.MOV_RM64_R64,
                MemoryOperand(Register.R11, displ=8 * k, displ_size=1 if k else 0),
                r,
            )
        )
    e(
        Instruction.create_mem_reg(
            Code.MOV_RM64_R64, MemoryOperand(Register.R11, displ=48, displ_size=1), Register.RSP
        )
    )
    e(
        Instruction.create_reg_mem(
            Code.MOV_R64_RM64, Register.R10, MemoryOperand(Register.RSP, displ=8, displ_size=1)
        )
    )
    e(
        Instruction.create_mem_reg(
            Code.MOV_RM64_R64, MemoryOperand(Register.R11, displ=56, displ_size=1), Register.R10
        )
    )
    e(Instruction.create_reg_i32(Code.ADD_RM64_IMM32, Register.RSP, 24))
    for r in reversed(saved):
        e(Instruction.create_reg(Code.POP_R64, r))
    e(Instruction.create(Code.RETNQ))
    return load(buf.finish().code)


def _pressure(n: int, fp_target: bool):
    """f(a, b, c, d) with ``n`` live values: uses callee-saved registers and spills."""
    vs = [VReg(k, INT) for k in range(4)]
    insts = [I.mov(v, p) for v, p in zip(vs, SYSV_AMD64.int_args, strict=False)]
    vals = []
    for k in range(n):
        v = VReg(10 + k, INT)
        insts += [I.mov(v, vs[k % 4]), I.alu_imm("add", v, k * 3), I.imul(v, vs[(k + 1) % 4])]
        vals.append(v)
    acc = VReg(200, INT)
    insts.append(I.mov_imm(acc, 1))
    for v in vals:
        insts += [I.alu("xor", acc, v), I.alu_imm("add", acc, 1)]
    insts += [I.mov(R.RAX, acc), I.ret(R.RAX)]

    def model(*xs):
        r = 1
        for k in range(n):
            v = ((xs[k % 4] + 3 * k) * xs[(k + 1) % 4]) & ((1 << 64) - 1)
            r = ((r ^ v) + 1) & ((1 << 64) - 1)
        return r - (1 << 64) if r >> 63 else r

    return VCodeFunction(f"p{n}", [Block("entry", insts)]), model


@linux
@pytest.mark.parametrize("n,fp", [(5, False), (12, False), (19, False), (30, True), (31, False)])
def test_callee_saved_registers_are_preserved(n, fp):
    harness = _harness()
    fn, model = _pressure(n, fp)
    asm = assemble(fn, x86_64_target(frame_pointer=fp), frame_pointer=fp)
    if n >= 12:
        assert asm.allocation.used_callee_saved
    callee = asm.load(i64, (i64,) * 4)
    h = harness.function(
        i64, (ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), i64, i64, i64, i64)
    )
    out = (ctypes.c_uint64 * 8)()
    args = (3, 5, -7, 11)
    assert h(call_address(callee.raw), out, *args) == model(*args)
    assert list(out[:6]) == MAGIC
    assert out[6] == out[7]  # rsp restored
    callee.owner.close()
    harness.close()


def _rsp_probe():
    """probe() returns rsp mod 16 as seen on entry (8 when the caller was aligned)."""
    buf = CodeBuffer("probe")
    encode(buf, Instruction.create_reg_reg(Code.MOV_R64_RM64, Register.RAX, Register.RSP))
    encode(buf, Instruction.create_reg_i32(Code.AND_RM64_IMM32, Register.RAX, 15))
    encode(buf, Instruction.create(Code.RETNQ))
    return load(buf.finish().code)


@linux
@pytest.mark.parametrize("n_live", [0, 1, 8, 15, 16, 25])
@pytest.mark.parametrize("fp", [False, True])
def test_stack_is_aligned_at_calls(n_live, fp):
    probe = _rsp_probe()
    base = VReg(0, INT)
    vals = [VReg(1 + k, INT) for k in range(n_live)]
    fptr, res = VReg(100, INT), VReg(101, INT)
    insts = [I.mov(base, R.RDI)]
    for k, v in enumerate(vals):
        insts += [I.mov(v, base), I.alu_imm("add", v, k)]
    insts += [
        I.mov_imm(fptr, call_address(probe.address)),
        I.call(fptr, results=(R.RAX,), clobbers=SYSV_AMD64.call_clobbers()),
        I.mov(res, R.RAX),
    ]
    for v in vals:
        insts.append(I.alu("add", res, v))
    insts += [I.mov(R.RAX, res), I.ret(R.RAX)]
    fn = VCodeFunction("aligned", [Block("entry", insts)])
    asm = assemble(fn, x86_64_target(frame_pointer=fp), frame_pointer=fp)
    f = asm.load(i64, (i64,))
    b = 1000
    assert f(b) == 8 + sum(b + k for k in range(n_live))
    f.owner.close()
    probe.close()
