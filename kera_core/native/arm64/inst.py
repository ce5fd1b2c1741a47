"""A data-driven ARM64 instruction type implementing the vcode protocol.

An :class:`A64Inst` is an operation name (``op``, one of :data:`kera_core.native.arm64.encode.FORMS`),
a width (``sz``: ``x``/``w`` for the integer forms, ``d``/``s`` for scalar floats, ``q`` for a
whole v-register) and operands, each register with a *role* (``USE``, ``DEF``, ``USEDEF``),
like :class:`kera_core.native.x86.inst.X86Inst`.  The encoder (:mod:`.encode`) turns one into
one 32-bit word (and its assembly text) once every register is physical.

Operands: :class:`RegOp`, :class:`ImmOp`, :class:`MemOp` (``[base, #disp]`` or
``[base, index, lsl #scale]``), :class:`SlotOp` (a spill slot, resolved from the frame) and
:class:`LabelOp` (a block).  Conditions (``csel``, ``b.cond``) are in ``cond``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

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
class ImmOp:
    value: int


@dataclass(frozen=True)
class MemOp:
    """``[base, #disp]`` (``index is None``) or ``[base, index, lsl #shift]``."""

    base: Reg
    index: Reg | None = None
    disp: int = 0
    shift: bool = True  # scale the index by the access size


@dataclass(frozen=True)
class SlotOp:
    slot: SpillSlot


@dataclass(frozen=True)
class LabelOp:
    target: str


Operand = RegOp | ImmOp | MemOp | SlotOp | LabelOp


class Flow(enum.Enum):
    NORMAL = "normal"
    JUMP = "jump"
    BRANCH = "branch"  # b.cond / cbz / cbnz: taken target first, then the fall-through one
    RETURN = "return"


CONDS = ("eq", "ne", "hs", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al")


def invert(cond: str) -> str:
    return CONDS[CONDS.index(cond) ^ 1]


LOADS = frozenset({"ldr", "ldrb", "ldrh", "ldrsb", "ldrsh", "ldrsw"})
STORES = frozenset({"str", "strb", "strh"})


@dataclass(frozen=True)
class A64Inst:
    op: str
    ops: tuple[Operand, ...] = ()
    sz: str = "x"
    cond: str = ""
    implicit_uses: tuple[PReg, ...] = ()
    implicit_defs: tuple[PReg, ...] = ()
    clobber: tuple[PReg, ...] = ()
    flags: str = ""
    flow: Flow = Flow.NORMAL
    side_effect: bool = False
    move: bool = False

    def defs(self) -> list[Reg]:
        out: list[Reg] = [op.reg for op in self.ops if isinstance(op, RegOp) and op.role.writes]
        out.extend(self.implicit_defs)
        if "w" in self.flags:
            out.append(R.NZCV)
        return _dedup(out)

    def uses(self) -> list[Reg]:
        out: list[Reg] = []
        for op in self.ops:
            if isinstance(op, RegOp) and op.role.reads:
                out.append(op.reg)
            elif isinstance(op, MemOp):
                out.append(op.base)
                if op.index is not None:
                    out.append(op.index)
        out.extend(self.implicit_uses)
        if "r" in self.flags:
            out.append(R.NZCV)
        return [r for r in _dedup(out) if r is not R.SP and r is not R.XZR]

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
        return self.op in LOADS

    def writes_memory(self) -> bool:
        return self.op in STORES

    def rename(self, mapping: Mapping[Reg, Reg]) -> A64Inst:
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
        )

    def __repr__(self) -> str:
        parts = []
        for op in self.ops:
            if isinstance(op, RegOp):
                parts.append(repr(op.reg))
            elif isinstance(op, ImmOp):
                parts.append(f"#{op.value}")
            elif isinstance(op, MemOp):
                inner = repr(op.base) + (f", {op.index!r}" if op.index is not None else "")
                parts.append(f"[{inner}{f', #{op.disp}' if op.disp else ''}]")
            elif isinstance(op, SlotOp):
                parts.append(f"[{op.slot!r}]")
            else:
                parts.append(op.target)
        name = self.op + (f".{self.cond}" if self.cond else "")
        return f"{name}.{self.sz} {', '.join(parts)}".strip()


def _dedup(regs: Sequence[Reg]) -> list[Reg]:
    seen: set[Reg] = set()
    out = []
    for r in regs:
        if r not in seen:
            seen.add(r)
            out.append(r)
    return out


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def mov(dst: Reg, src: Reg) -> A64Inst:
    """A full register copy: ``mov xd, xn`` or ``mov vd.16b, vn.16b``."""
    if dst.cls is not src.cls:
        raise ValueError(f"mov between classes: {dst!r} <- {src!r}")
    if dst.cls is RegClass.INT:
        return A64Inst("mov", (RegOp(dst, DEF), RegOp(src, USE)), "x", move=True)
    return A64Inst("mov", (RegOp(dst, DEF), RegOp(src, USE)), "q", move=True)


def rrr(op: str, d: Reg, n: Reg, m: Reg, sz: str = "x", flags: str = "") -> A64Inst:
    return A64Inst(op, (RegOp(d, DEF), RegOp(n, USE), RegOp(m, USE)), sz, flags=flags)


def rr(op: str, d: Reg, n: Reg, sz: str = "x") -> A64Inst:
    return A64Inst(op, (RegOp(d, DEF), RegOp(n, USE)), sz)


def rrrr(op: str, d: Reg, n: Reg, m: Reg, a: Reg, sz: str = "x") -> A64Inst:
    return A64Inst(op, (RegOp(d, DEF), RegOp(n, USE), RegOp(m, USE), RegOp(a, USE)), sz)


def add_imm(d: Reg, n: Reg, imm: int) -> A64Inst:
    return A64Inst("add_i", (RegOp(d, DEF), RegOp(n, USE), ImmOp(imm)))


def sub_imm(d: Reg, n: Reg, imm: int) -> A64Inst:
    return A64Inst("sub_i", (RegOp(d, DEF), RegOp(n, USE), ImmOp(imm)))


def cmp(a: Reg, b: Reg) -> A64Inst:
    return A64Inst("cmp", (RegOp(a, USE), RegOp(b, USE)), "x", flags="w")


def cmp_imm(a: Reg, imm: int) -> A64Inst:
    return A64Inst("cmp_i", (RegOp(a, USE), ImmOp(imm)), "x", flags="w")


def fcmp(a: Reg, b: Reg, sz: str) -> A64Inst:
    return A64Inst("fcmp", (RegOp(a, USE), RegOp(b, USE)), sz, flags="w")


def csel(op: str, d: Reg, n: Reg, m: Reg, cond: str, sz: str = "x") -> A64Inst:
    """``csel``/``csinc``/``csneg``/``fcsel`` ``d = cond ? n : f(m)``; reads the flags."""
    return A64Inst(op, (RegOp(d, DEF), RegOp(n, USE), RegOp(m, USE)), sz, cond=cond, flags="r")


def cset(d: Reg, cond: str) -> A64Inst:
    """``d = cond ? 1 : 0`` (``csinc d, xzr, xzr, !cond``)."""
    return A64Inst("cset", (RegOp(d, DEF),), "x", cond=cond, flags="r")


def bfm(op: str, d: Reg, n: Reg, immr: int, imms: int) -> A64Inst:
    """``sbfm``/``ubfm`` (64-bit): sign/zero extension and bit-field extraction."""
    return A64Inst(op, (RegOp(d, DEF), RegOp(n, USE), ImmOp(immr), ImmOp(imms)))


def movz(d: Reg, imm16: int, shift: int) -> A64Inst:
    return A64Inst("movz", (RegOp(d, DEF), ImmOp(imm16), ImmOp(shift)))


def movn(d: Reg, imm16: int, shift: int) -> A64Inst:
    return A64Inst("movn", (RegOp(d, DEF), ImmOp(imm16), ImmOp(shift)))


def movk(d: Reg, imm16: int, shift: int) -> A64Inst:
    return A64Inst("movk", (RegOp(d, USEDEF), ImmOp(imm16), ImmOp(shift)))


def mov_imm(d: Reg, value: int) -> list[A64Inst]:
    """``d = value`` (64 bits) as ``movz``/``movn`` and ``movk``s; never touches the flags."""
    value &= (1 << 64) - 1
    halves = [(value >> (16 * k)) & 0xFFFF for k in range(4)]
    if halves.count(0xFFFF) > halves.count(0):
        first = next((k for k in range(4) if halves[k] != 0xFFFF), 0)
        out = [movn(d, halves[first] ^ 0xFFFF, 16 * first)]
        out += [movk(d, halves[k], 16 * k) for k in range(first + 1, 4) if halves[k] != 0xFFFF]
        return out
    first = next((k for k in range(4) if halves[k] != 0), 0)
    out = [movz(d, halves[first], 16 * first)]
    out += [movk(d, halves[k], 16 * k) for k in range(first + 1, 4) if halves[k] != 0]
    return out


def load(op: str, t: Reg, m: MemOp | SlotOp, sz: str = "x") -> A64Inst:
    """``ldr``/``ldrb``/``ldrh``/``ldrsb``/``ldrsh``/``ldrsw`` ``t, [m]``; ``sz`` is the
    register view (``x``, ``w``, ``d``, ``s``, ``q``)."""
    return A64Inst(op, (RegOp(t, DEF), m), sz)


def store(op: str, t: Reg, m: MemOp | SlotOp, sz: str = "x") -> A64Inst:
    return A64Inst(op, (RegOp(t, USE), m), sz, side_effect=True)


def jump(target: str) -> A64Inst:
    return A64Inst("b", (LabelOp(target),), flow=Flow.JUMP)


def branch(cond: str, taken: str, not_taken: str) -> A64Inst:
    return A64Inst(
        "b.cond", (LabelOp(taken), LabelOp(not_taken)), cond=cond, flags="r", flow=Flow.BRANCH
    )


def cbz(op: str, r: Reg, taken: str, not_taken: str) -> A64Inst:
    """``cbz``/``cbnz r`` to ``taken``, else ``not_taken``."""
    return A64Inst(op, (RegOp(r, USE), LabelOp(taken), LabelOp(not_taken)), flow=Flow.BRANCH)


def ret(*results: PReg) -> A64Inst:
    return A64Inst("ret", (), implicit_uses=tuple(results), flow=Flow.RETURN, side_effect=True)


def blr(
    target: Reg,
    *,
    args: Sequence[PReg] = (),
    results: Sequence[PReg] = (),
    clobbers: Sequence[PReg] = (),
) -> A64Inst:
    """``blr target``: an indirect call (AAPCS64)."""
    res = tuple(results)
    return A64Inst(
        "blr",
        (RegOp(target, USE),),
        implicit_uses=tuple(args),
        implicit_defs=res,
        clobber=tuple(
            sorted((c for c in clobbers if c not in res), key=lambda p: (p.cls.value, p.index))
        ),
        side_effect=True,
        flags="w",
    )


def add_lsl(d: Reg, n: Reg, m: Reg, shift: int) -> A64Inst:
    """``add xd, xn, xm, lsl #shift`` (an element's address)."""
    return A64Inst("add_lsl", (RegOp(d, DEF), RegOp(n, USE), RegOp(m, USE), ImmOp(shift)))


# --- Advanced SIMD (NEON): whole q registers; ``arr`` is ``4s``/``2d`` (``16b`` bitwise) ----


def vop(op: str, d: Reg, *srcs: Reg, arr: str, acc: bool = False) -> A64Inst:
    """The vector form ``v.<op>``: ``d = op(srcs…)``; ``acc``: d is read too (``fmla``,
    ``bsl``/``bit``/``bif``)."""
    return A64Inst(
        "v." + op, (RegOp(d, USEDEF if acc else DEF), *(RegOp(s, USE) for s in srcs)), arr
    )


def dup(d: Reg, n: Reg, arr: str) -> A64Inst:
    """Broadcast lane 0 of v-register n (``dup vd.4s, vn.s[0]``) or general register n
    (``dup vd.4s, wn`` / ``dup vd.2d, xn``) to every lane of d."""
    op = "v.dup_gen" if n.cls is RegClass.INT else "v.dup_elem"
    return A64Inst(op, (RegOp(d, DEF), RegOp(n, USE)), arr)
