"""A data-driven x86-64 instruction type implementing the vcode protocol.

An :class:`X86Inst` is an iced-x86 ``Code`` (which fixes the mnemonic, operand widths and
encoding) plus operands, each with a *role*: read (``USE``), written (``DEF``) or both
(``USEDEF``).  Registers the instruction touches without naming them as operands (``idiv``
reads and writes rax and rdx, ``cqo`` writes rdx) are ``implicit_uses`` / ``implicit_defs``;
the condition flags are named with ``flags="w"``/``"r"``/``"rw"``.  From that data alone the
instruction answers ``defs()``, ``uses()``, memory read/write and so on; the encoder
(:mod:`.emit`) derives each register operand's width (r64, r32, cl, xmm, ymm, zmm) from the
``Code``'s operand kinds, so one operand type serves every instruction.

To add an instruction, write a helper like the ones below that returns
``X86Inst(Code.X, (operands...), flags=..., implicit_uses=..., ...)``; nothing else changes.

A *fixed register* is requested by putting the :class:`PReg` itself in an operand (or in the
implicit lists) and moving values in and out with :func:`mov`; the allocator keeps other
values out of that register while it is live.

An EVEX instruction's write-mask ``{k}`` is ``mask`` (an opmask :class:`PReg` of
``regs.KS``, read by the instruction), with ``zeroing`` for ``{z}``.  Merge masking keeps the
destination's unselected elements, so such a destination is ``USEDEF`` — except for the
blends (``vblendmps``), which take them from their first source: there it is a ``DEF``.
An opmask register as an operand (``vcmpps k1, …``, ``vpmovm2d zmm, k1``) is a ``RegOp``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from iced_x86 import Code, OpCodeInfo

from ..vcode import PReg, Reg, RegClass, SpillSlot
from . import regs as R


class Role(enum.Enum):
    USE = "use"
    DEF = "def"
    USEDEF = "usedef"

    @property
    def reads(self) -> bool:
        return self is not Role.DEF

    @property
    def writes(self) -> bool:
        return self is not Role.USE


USE, DEF, USEDEF = Role.USE, Role.DEF, Role.USEDEF


@dataclass(frozen=True)
class RegOp:
    reg: Reg
    role: Role = USE


@dataclass(frozen=True)
class MemOp:
    """``[base + index*scale + disp]``; ``role`` says whether memory is read and/or written.
    base/index are always read."""

    base: Reg | None
    index: Reg | None = None
    scale: int = 1
    disp: int = 0
    role: Role = USE


@dataclass(frozen=True)
class SlotOp:
    """A spill slot; its offset is resolved from the frame layout at emission."""

    slot: SpillSlot
    role: Role = USE


@dataclass(frozen=True)
class ArgOp:
    """An incoming stack argument at ``offset`` (from :meth:`CallConv.assign_args`)."""

    offset: int
    role: Role = USE


@dataclass(frozen=True)
class ConstOp:
    """A RIP-relative reference to a constant-pool literal (``data`` aligned to ``align``)."""

    data: bytes
    align: int = 16
    role: Role = USE


@dataclass(frozen=True)
class ImmOp:
    value: int


@dataclass(frozen=True)
class LabelOp:
    target: str  # a block label


Operand = RegOp | MemOp | SlotOp | ArgOp | ConstOp | ImmOp | LabelOp
MEMORY_OPERANDS = (MemOp, SlotOp, ArgOp, ConstOp)


class Flow(enum.Enum):
    NORMAL = "normal"
    JUMP = "jump"  # unconditional jump to ops[0]
    BRANCH = "branch"  # conditional: to ops[0] if taken, else to ops[1]
    RETURN = "return"  # the emitter puts the epilogue before it


@dataclass(frozen=True)
class X86Inst:
    code: int
    ops: tuple[Operand, ...] = ()
    implicit_uses: tuple[PReg, ...] = ()
    implicit_defs: tuple[PReg, ...] = ()
    clobber: tuple[PReg, ...] = ()
    flags: str = ""  # "", "r", "w" or "rw": condition flags read / written
    flow: Flow = Flow.NORMAL
    side_effect: bool = False
    move: bool = False  # ops == (RegOp(dst, DEF), RegOp(src, USE)), a plain full copy
    mask: PReg | None = None  # EVEX write-mask {k} (read)
    zeroing: bool = False  # {z}: unselected elements are zeroed rather than kept

    # -- the vcode protocol -----------------------------------------------------------------
    # defs and uses are asked for by every pass (liveness, scheduling, allocation, rewriting):
    # computed once per instruction (immutable) and handed out as tuples
    def defs(self) -> tuple[Reg, ...]:
        got = self.__dict__.get("_defs")
        if got is None:
            got = tuple(self._defs_list())
            object.__setattr__(self, "_defs", got)
        return got

    def uses(self) -> tuple[Reg, ...]:
        got = self.__dict__.get("_uses")
        if got is None:
            got = tuple(self._uses_list())
            object.__setattr__(self, "_uses", got)
        return got

    def _defs_list(self) -> list[Reg]:
        out: list[Reg] = [op.reg for op in self.ops if isinstance(op, RegOp) and op.role.writes]
        out.extend(self.implicit_defs)
        if "w" in self.flags:
            out.append(R.FLAGS)
        return _dedup(out)

    def _uses_list(self) -> list[Reg]:
        out: list[Reg] = []
        for op in self.ops:
            if isinstance(op, RegOp) and op.role.reads:
                out.append(op.reg)
            elif isinstance(op, MemOp):
                if op.base is not None:
                    out.append(op.base)
                if op.index is not None:
                    out.append(op.index)
        out.extend(self.implicit_uses)
        if self.mask is not None:
            out.append(self.mask)
        if "r" in self.flags:
            out.append(R.FLAGS)
        return _dedup(out)

    def clobbers(self) -> list[PReg]:
        return list(self.clobber)

    def is_move(self) -> tuple[Reg, Reg] | None:
        if not self.move:
            return None
        dst, src = self.ops
        assert isinstance(dst, RegOp) and isinstance(src, RegOp)
        return dst.reg, src.reg

    def branch_targets(self) -> list[str]:
        return [op.target for op in self.ops if isinstance(op, LabelOp)]

    def is_terminator(self) -> bool:
        return self.flow is not Flow.NORMAL

    def has_side_effect(self) -> bool:
        return self.side_effect

    def reads_memory(self) -> bool:
        return any(isinstance(op, MEMORY_OPERANDS) and op.role.reads for op in self.ops)

    def writes_memory(self) -> bool:
        return any(isinstance(op, MEMORY_OPERANDS) and op.role.writes for op in self.ops)

    def rename(self, mapping: Mapping[Reg, Reg]) -> X86Inst:
        def m(r):
            return mapping.get(r, r) if r is not None else None

        ops: list[Operand] = []
        for op in self.ops:
            if isinstance(op, RegOp):
                op = replace(op, reg=m(op.reg))
            elif isinstance(op, MemOp):
                op = replace(op, base=m(op.base), index=m(op.index))
            ops.append(op)
        return replace(
            self,
            ops=tuple(ops),
            implicit_uses=tuple(m(r) for r in self.implicit_uses),
            implicit_defs=tuple(m(r) for r in self.implicit_defs),
            mask=m(self.mask),
        )

    # -- presentation -----------------------------------------------------------------------
    @property
    def mnemonic(self) -> str:
        return _code_name(self.code).split("_")[0].lower()

    def __repr__(self) -> str:
        parts = []
        for op in self.ops:
            if isinstance(op, RegOp):
                parts.append(repr(op.reg))
            elif isinstance(op, MemOp):
                inner = " + ".join(
                    x
                    for x in (
                        repr(op.base) if op.base is not None else "",
                        f"{op.index!r}*{op.scale}" if op.index is not None else "",
                        str(op.disp) if op.disp else "",
                    )
                    if x
                )
                parts.append(f"[{inner or 0}]")
            elif isinstance(op, SlotOp):
                parts.append(f"[{op.slot!r}]")
            elif isinstance(op, ArgOp):
                parts.append(f"[arg+{op.offset}]")
            elif isinstance(op, ConstOp):
                parts.append(f"[const {op.data[:8].hex()}]")
            elif isinstance(op, ImmOp):
                parts.append(str(op.value))
            else:
                parts.append(op.target)
        if self.mask is not None and parts:
            parts[0] += f"{{{self.mask!r}}}" + ("{z}" if self.zeroing else "")
        return f"{self.mnemonic} {', '.join(parts)}".strip()


def _dedup(regs: Sequence[Reg]) -> list[Reg]:
    seen: set[Reg] = set()
    out = []
    for r in regs:
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


_CODE_NAMES: dict[int, str] = {}


def _code_name(code: int) -> str:
    if not _CODE_NAMES:
        for name in dir(Code):
            if name.isupper() or "_" in name:
                val = getattr(Code, name)
                if isinstance(val, int):
                    _CODE_NAMES.setdefault(val, name)
    return _CODE_NAMES.get(code, f"code{code}")


def op_count(code: int) -> int:
    return OpCodeInfo(code).op_count


# ---------------------------------------------------------------------------------------------
# Helpers: integer (64-bit) instructions
# ---------------------------------------------------------------------------------------------


def _fits32(v: int) -> bool:
    return -(1 << 31) <= v < (1 << 31)


def mov(dst: Reg, src: Reg) -> X86Inst:
    """Register copy of the right class: ``mov r64, r64`` or ``movaps xmm, xmm``."""
    if dst.cls is not src.cls:
        raise ValueError(f"mov between classes: {dst!r} <- {src!r}; use movq_to_xmm/movq_from_xmm")
    if dst.cls is RegClass.INT:
        return X86Inst(Code.MOV_R64_RM64, (RegOp(dst, DEF), RegOp(src, USE)), move=True)
    size = max(getattr(dst, "size", 16), getattr(src, "size", 16), 16)
    return vmov(dst, src, size)


def vmov(dst: Reg, src: Reg, size: int) -> X86Inst:
    """Full-width vector copy of ``size`` bytes (16: movaps, 32: vmovaps ymm, 64: zmm)."""
    high = any(isinstance(r, PReg) and r.index >= 16 for r in (dst, src))
    if size <= 16:
        code = Code.EVEX_VMOVAPS_XMM_K1Z_XMMM128 if high else Code.MOVAPS_XMM_XMMM128
    elif size == 32:
        code = Code.EVEX_VMOVAPS_YMM_K1Z_YMMM256 if high else Code.VEX_VMOVAPS_YMM_YMMM256
    else:
        code = Code.EVEX_VMOVAPS_ZMM_K1Z_ZMMM512
    return X86Inst(code, (RegOp(dst, DEF), RegOp(src, USE)), move=True)


def mov_imm(dst: Reg, value: int) -> X86Inst:
    """``dst = value`` (64-bit; sign-extended imm32 form when it fits)."""
    value = _wrap64(value)
    if _fits32(value):
        return X86Inst(Code.MOV_RM64_IMM32, (RegOp(dst, DEF), ImmOp(value)))
    return X86Inst(Code.MOV_R64_IMM64, (RegOp(dst, DEF), ImmOp(value)))


def _wrap64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


_ALU_RR = {
    "add": Code.ADD_R64_RM64,
    "sub": Code.SUB_R64_RM64,
    "and": Code.AND_R64_RM64,
    "or": Code.OR_R64_RM64,
    "xor": Code.XOR_R64_RM64,
    "imul": Code.IMUL_R64_RM64,
}
_ALU_RI = {
    "add": Code.ADD_RM64_IMM32,
    "sub": Code.SUB_RM64_IMM32,
    "and": Code.AND_RM64_IMM32,
    "or": Code.OR_RM64_IMM32,
    "xor": Code.XOR_RM64_IMM32,
}


def alu(op: str, dst: Reg, src: Reg) -> X86Inst:
    """Two-address ``dst = dst <op> src`` for op in add/sub/and/or/xor/imul; writes flags."""
    return X86Inst(_ALU_RR[op], (RegOp(dst, USEDEF), RegOp(src, USE)), flags="w")


def alu_imm(op: str, dst: Reg, value: int) -> X86Inst:
    if not _fits32(value):
        raise ValueError(f"{op} immediate {value} does not fit in 32 bits; put it in a register")
    return X86Inst(_ALU_RI[op], (RegOp(dst, USEDEF), ImmOp(value)), flags="w")


def add(dst: Reg, src: Reg) -> X86Inst:
    return alu("add", dst, src)


def sub(dst: Reg, src: Reg) -> X86Inst:
    return alu("sub", dst, src)


def imul(dst: Reg, src: Reg) -> X86Inst:
    return alu("imul", dst, src)


def cmp(a: Reg, b: Reg) -> X86Inst:
    return X86Inst(Code.CMP_R64_RM64, (RegOp(a, USE), RegOp(b, USE)), flags="w")


def cmp_imm(a: Reg, value: int) -> X86Inst:
    if not _fits32(value):
        raise ValueError(f"cmp immediate {value} does not fit in 32 bits")
    return X86Inst(Code.CMP_RM64_IMM32, (RegOp(a, USE), ImmOp(value)), flags="w")


def shl_cl(dst: Reg) -> X86Inst:
    """``dst <<= cl``: the count must be in rcx (a fixed register)."""
    return X86Inst(Code.SHL_RM64_CL, (RegOp(dst, USEDEF), RegOp(R.RCX, USE)), flags="w")


def sar_cl(dst: Reg) -> X86Inst:
    return X86Inst(Code.SAR_RM64_CL, (RegOp(dst, USEDEF), RegOp(R.RCX, USE)), flags="w")


def cqo() -> X86Inst:
    """Sign-extend rax into rdx:rax."""
    return X86Inst(Code.CQO, (), implicit_uses=(R.RAX,), implicit_defs=(R.RDX,))


def idiv(divisor: Reg) -> X86Inst:
    """Signed divide rdx:rax by ``divisor``: quotient in rax, remainder in rdx.  Traps on
    division by zero and on MIN / -1: selection must guard both."""
    return X86Inst(
        Code.IDIV_RM64,
        (RegOp(divisor, USE),),
        implicit_uses=(R.RAX, R.RDX),
        implicit_defs=(R.RAX, R.RDX),
        flags="w",
    )


def load(dst: Reg, mem: MemOp | SlotOp | ArgOp) -> X86Inst:
    """64-bit load ``dst = [mem]``."""
    return X86Inst(Code.MOV_R64_RM64, (RegOp(dst, DEF), replace(mem, role=USE)))


def store(mem: MemOp | SlotOp, src: Reg) -> X86Inst:
    """64-bit store ``[mem] = src``."""
    return X86Inst(Code.MOV_RM64_R64, (replace(mem, role=DEF), RegOp(src, USE)))


def mem(base: Reg | None, disp: int = 0, index: Reg | None = None, scale: int = 1) -> MemOp:
    if scale not in (1, 2, 4, 8):
        raise ValueError(f"scale must be 1, 2, 4 or 8, not {scale}")
    if not _fits32(disp):
        raise ValueError(f"displacement {disp} does not fit in 32 bits")
    return MemOp(base, index, scale, disp)


# ---------------------------------------------------------------------------------------------
# Helpers: scalar double / vector
# ---------------------------------------------------------------------------------------------

_SD = {
    "add": Code.ADDSD_XMM_XMMM64,
    "sub": Code.SUBSD_XMM_XMMM64,
    "mul": Code.MULSD_XMM_XMMM64,
    "div": Code.DIVSD_XMM_XMMM64,
}
_VSD = {
    "add": Code.VEX_VADDSD_XMM_XMM_XMMM64,
    "sub": Code.VEX_VSUBSD_XMM_XMM_XMMM64,
    "mul": Code.VEX_VMULSD_XMM_XMM_XMMM64,
    "div": Code.VEX_VDIVSD_XMM_XMM_XMMM64,
}


def sd(op: str, dst: Reg, src: Reg) -> X86Inst:
    """Two-address SSE2 ``dst = dst <op> src`` on the low double (add/sub/mul/div)."""
    return X86Inst(_SD[op], (RegOp(dst, USEDEF), RegOp(src, USE)))


def addsd(dst: Reg, src: Reg) -> X86Inst:
    return sd("add", dst, src)


def mulsd(dst: Reg, src: Reg) -> X86Inst:
    return sd("mul", dst, src)


def subsd(dst: Reg, src: Reg) -> X86Inst:
    return sd("sub", dst, src)


def vsd(op: str, dst: Reg, a: Reg, b: Reg) -> X86Inst:
    """Three-address AVX ``dst = a <op> b`` (upper lane of dst copied from ``a``)."""
    return X86Inst(_VSD[op], (RegOp(dst, DEF), RegOp(a, USE), RegOp(b, USE)))


def movsd_load(dst: Reg, m: MemOp | SlotOp | ArgOp | ConstOp) -> X86Inst:
    return X86Inst(Code.MOVSD_XMM_XMMM64, (RegOp(dst, DEF), replace(m, role=USE)))


def movsd_store(m: MemOp | SlotOp, src: Reg) -> X86Inst:
    return X86Inst(Code.MOVSD_XMMM64_XMM, (replace(m, role=DEF), RegOp(src, USE)))


def movaps(dst: Reg, src: Reg) -> X86Inst:
    return vmov(dst, src, 16)


def movq_to_xmm(dst: Reg, src: Reg) -> X86Inst:
    """Bit copy of a GPR into the low 64 bits of an xmm register."""
    return X86Inst(Code.MOVQ_XMM_RM64, (RegOp(dst, DEF), RegOp(src, USE)))


def movq_from_xmm(dst: Reg, src: Reg) -> X86Inst:
    return X86Inst(Code.MOVQ_RM64_XMM, (RegOp(dst, DEF), RegOp(src, USE)))


def cvtsi2sd(dst: Reg, src: Reg) -> X86Inst:
    """``dst = (double) src`` (64-bit signed integer).  The hardware keeps dst's upper lane;
    a scalar value does not care, so dst is a pure definition here (no false dependence
    for the allocator; a selector that needs the upper lane must not use this helper)."""
    return X86Inst(Code.CVTSI2SD_XMM_RM64, (RegOp(dst, DEF), RegOp(src, USE)))


# ---------------------------------------------------------------------------------------------
# Control flow
# ---------------------------------------------------------------------------------------------

CONDITIONS = (
    "o",
    "no",
    "b",
    "ae",
    "e",
    "ne",
    "be",
    "a",
    "s",
    "ns",
    "p",
    "np",
    "l",
    "ge",
    "le",
    "g",
)


def jcc_code(cc: str, short: bool = False) -> int:
    if cc not in CONDITIONS:
        raise ValueError(f"unknown condition {cc!r}; one of {CONDITIONS}")
    return getattr(Code, f"J{cc.upper()}_{'REL8' if short else 'REL32'}_64")


def jmp(target: str) -> X86Inst:
    return X86Inst(Code.JMP_REL32_64, (LabelOp(target),), flow=Flow.JUMP)


def branch(cc: str, taken: str, not_taken: str) -> X86Inst:
    """``if cc goto taken else goto not_taken`` reading the flags.  Emitted as ``jcc taken``
    plus ``jmp not_taken`` unless ``not_taken`` is the next block in layout."""
    return X86Inst(jcc_code(cc), (LabelOp(taken), LabelOp(not_taken)), flags="r", flow=Flow.BRANCH)


def ret(*results: PReg) -> X86Inst:
    """Return; ``results`` are the registers holding the return values (kept live)."""
    return X86Inst(Code.RETNQ, (), implicit_uses=tuple(results), flow=Flow.RETURN, side_effect=True)


def call(
    target: Reg,
    *,
    args: Sequence[PReg] = (),
    results: Sequence[PReg] = (),
    clobbers: Sequence[PReg] = (),
) -> X86Inst:
    """Indirect call through a register.  ``args`` are the argument registers it reads,
    ``results`` the registers it defines, ``clobbers`` everything else it may destroy (pass
    ``conv.call_clobbers()``; results are removed from it)."""
    res = tuple(results)
    return X86Inst(
        Code.CALL_RM64,
        (RegOp(target, USE),),
        implicit_uses=tuple(args),
        implicit_defs=res,
        clobber=tuple(
            sorted((c for c in clobbers if c not in res), key=lambda p: (p.cls.value, p.index))
        ),
        side_effect=True,
        flags="w",
    )
