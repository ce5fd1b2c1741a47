"""A reference interpreter for the x86 subset in :mod:`.inst` — virtual or physical registers.

It runs a :class:`VCodeFunction` before or after allocation, so "the allocated program
computes what the virtual-register program computes" can be checked without the CPU, and a
selection bug can be told from an encoding bug.  Integers are 64-bit two's complement;
float registers hold the low double only (the subset has no packed arithmetic).  Memory is a
dict of 8-byte cells keyed by address; spill slots and incoming stack arguments are cells of
their own.  Flags are modelled as the signed/unsigned comparison result of the last
``cmp``.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from iced_x86 import Code

from ..vcode import Reg, VCodeFunction
from . import inst as I
from . import regs as R

_M64 = (1 << 64) - 1


def _s64(v: int) -> int:
    v &= _M64
    return v - (1 << 64) if v >> 63 else v


class InterpError(RuntimeError):
    pass


@dataclass
class Machine:
    regs: dict[Reg, Any] = field(default_factory=dict)
    memory: dict[Any, Any] = field(default_factory=dict)
    flags: tuple[int, int] | None = None  # (signed compare, unsigned compare) of the last cmp
    steps: int = 0


def _bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", x))[0]


def _float(b: int) -> float:
    return struct.unpack("<d", struct.pack("<q", _s64(b)))[0]


def _cmp(a: int, b: int) -> tuple[int, int]:
    sa, sb = _s64(a), _s64(b)
    ua, ub = a & _M64, b & _M64
    return ((sa > sb) - (sa < sb), (ua > ub) - (ua < ub))


_COND = {
    "e": lambda s, u: s == 0,
    "ne": lambda s, u: s != 0,
    "l": lambda s, u: s < 0,
    "le": lambda s, u: s <= 0,
    "g": lambda s, u: s > 0,
    "ge": lambda s, u: s >= 0,
    "b": lambda s, u: u < 0,
    "be": lambda s, u: u <= 0,
    "a": lambda s, u: u > 0,
    "ae": lambda s, u: u >= 0,
}

_INT_ALU = {
    Code.ADD_R64_RM64: lambda a, b: a + b,
    Code.ADD_RM64_IMM32: lambda a, b: a + b,
    Code.SUB_R64_RM64: lambda a, b: a - b,
    Code.SUB_RM64_IMM32: lambda a, b: a - b,
    Code.AND_R64_RM64: lambda a, b: a & b,
    Code.AND_RM64_IMM32: lambda a, b: a & b,
    Code.OR_R64_RM64: lambda a, b: a | b,
    Code.OR_RM64_IMM32: lambda a, b: a | b,
    Code.XOR_R64_RM64: lambda a, b: a ^ b,
    Code.XOR_RM64_IMM32: lambda a, b: a ^ b,
    Code.IMUL_R64_RM64: lambda a, b: a * b,
}
_SD_ALU = {
    Code.ADDSD_XMM_XMMM64: lambda a, b: a + b,
    Code.SUBSD_XMM_XMMM64: lambda a, b: a - b,
    Code.MULSD_XMM_XMMM64: lambda a, b: a * b,
    Code.DIVSD_XMM_XMMM64: lambda a, b: a / b,
}
_VSD_ALU = {
    Code.VEX_VADDSD_XMM_XMM_XMMM64: lambda a, b: a + b,
    Code.VEX_VSUBSD_XMM_XMM_XMMM64: lambda a, b: a - b,
    Code.VEX_VMULSD_XMM_XMM_XMMM64: lambda a, b: a * b,
    Code.VEX_VDIVSD_XMM_XMM_XMMM64: lambda a, b: a / b,
}
_MOVES = {
    Code.MOV_R64_RM64,
    Code.MOVAPS_XMM_XMMM128,
    Code.VEX_VMOVAPS_YMM_YMMM256,
    Code.EVEX_VMOVAPS_XMM_K1Z_XMMM128,
    Code.EVEX_VMOVAPS_YMM_K1Z_YMMM256,
    Code.EVEX_VMOVAPS_ZMM_K1Z_ZMMM512,
    Code.MOVSD_XMM_XMMM64,
    Code.MOVUPS_XMM_XMMM128,
    Code.EVEX_VMOVSD_XMM_K1Z_M64,
}
_STORES = {
    Code.MOV_RM64_R64,
    Code.MOVSD_XMMM64_XMM,
    Code.MOVUPS_XMMM128_XMM,
    Code.EVEX_VMOVSD_M64_K1_XMM,
}


def run(
    fn: VCodeFunction,
    regs: Mapping[Reg, Any] | None = None,
    memory: Mapping[Any, Any] | None = None,
    *,
    max_steps: int = 1_000_000,
) -> Machine:
    """Run ``fn`` from its entry block until ``ret``; return the final machine state.

    ``memory`` keys: integer addresses (8-byte cells), ``("arg", offset)`` for incoming stack
    arguments; spill slots are keyed by the slot object.
    """
    m = Machine(dict(regs or {}), dict(memory or {}))
    labels = [b.label for b in fn.blocks]
    bi, ii = 0, 0

    def get(r: Reg) -> Any:
        if r not in m.regs:
            raise InterpError(f"{fn.name}: read of {r!r} before it was written")
        return m.regs[r]

    def addr(op: I.Operand) -> Any:
        if isinstance(op, I.MemOp):
            a = get(op.base) if op.base is not None else 0
            if op.index is not None:
                a += get(op.index) * op.scale
            return (a + op.disp) & _M64
        if isinstance(op, I.SlotOp):
            return op.slot
        if isinstance(op, I.ArgOp):
            return ("arg", op.offset)
        if isinstance(op, I.ConstOp):
            return ("const", op.data)
        raise InterpError(f"{op!r} is not memory")

    def read(op: I.Operand) -> Any:
        if isinstance(op, I.RegOp):
            return get(op.reg)
        if isinstance(op, I.ImmOp):
            return op.value
        a = addr(op)
        if isinstance(op, I.ConstOp):
            return _float(int.from_bytes(op.data[:8], "little", signed=True))
        if a not in m.memory:
            raise InterpError(f"{fn.name}: read of unwritten memory {a!r}")
        return m.memory[a]

    while True:
        block = fn.blocks[bi]
        if ii >= len(block.insts):
            bi, ii = bi + 1, 0  # fall through
            if bi >= len(fn.blocks):
                raise InterpError(f"{fn.name}: fell off the end")
            continue
        ins = block.insts[ii]
        ii += 1
        m.steps += 1
        if m.steps > max_steps:
            raise InterpError(f"{fn.name}: more than {max_steps} steps")
        if not isinstance(ins, I.X86Inst):
            raise InterpError(f"not an x86 instruction: {ins!r}")
        c, ops = ins.code, ins.ops
        if ins.flow is I.Flow.RETURN:
            return m
        if ins.flow is I.Flow.JUMP:
            bi, ii = labels.index(ins.branch_targets()[0]), 0
        elif ins.flow is I.Flow.BRANCH:
            if m.flags is None:
                raise InterpError(f"{fn.name}: branch before any compare")
            cc = I._code_name(c).split("_")[0][1:].lower()
            taken, other = ins.branch_targets()
            bi, ii = labels.index(taken if _COND[cc](*m.flags) else other), 0
        elif c in _MOVES or c in _STORES:
            dst, src = ops
            val = read(src)
            if isinstance(dst, I.RegOp):
                m.regs[dst.reg] = val
            else:
                m.memory[addr(dst)] = val
        elif c in (Code.MOV_RM64_IMM32, Code.MOV_R64_IMM64):
            m.regs[ops[0].reg] = _s64(ops[1].value)
        elif c in _INT_ALU:
            m.regs[ops[0].reg] = _s64(_INT_ALU[c](read(ops[0]), read(ops[1])))
        elif c in (Code.CMP_R64_RM64, Code.CMP_RM64_IMM32):
            m.flags = _cmp(read(ops[0]), read(ops[1]))
        elif c in (Code.SHL_RM64_CL, Code.SAR_RM64_CL):
            n = get(R.RCX) & 63
            v = read(ops[0])
            m.regs[ops[0].reg] = _s64(v << n) if c == Code.SHL_RM64_CL else _s64(v) >> n
        elif c == Code.CQO:
            m.regs[R.RDX] = -1 if _s64(get(R.RAX)) < 0 else 0
        elif c == Code.IDIV_RM64:
            d = _s64(read(ops[0]))
            hi, lo = get(R.RDX), get(R.RAX)
            n = (_s64(hi) << 64) | (lo & _M64)
            if d == 0:
                raise InterpError("idiv by zero (#DE)")
            q = abs(n) // abs(d) * (1 if (n < 0) == (d < 0) else -1)
            m.regs[R.RAX] = _s64(q)
            m.regs[R.RDX] = _s64(n - q * d)
        elif c in _SD_ALU:
            m.regs[ops[0].reg] = _SD_ALU[c](read(ops[0]), read(ops[1]))
        elif c in _VSD_ALU:
            m.regs[ops[0].reg] = _VSD_ALU[c](read(ops[1]), read(ops[2]))
        elif c == Code.MOVQ_XMM_RM64:
            m.regs[ops[0].reg] = _float(read(ops[1]))
        elif c == Code.MOVQ_RM64_XMM:
            m.regs[ops[0].reg] = _bits(read(ops[1]))
        elif c == Code.CVTSI2SD_XMM_RM64:
            m.regs[ops[0].reg] = float(_s64(read(ops[1])))
        else:
            raise InterpError(f"{fn.name}: the interpreter does not model {ins!r}")
