"""x86-64 encoding glue and the function assembler.

Glue (usable on its own, e.g. for hand-written stubs):

* :func:`encode` — encode one iced-x86 ``Instruction`` at the buffer's current offset;
* :func:`encode_branch` — ``jmp``/``jcc``/``call`` to a buffer label, rel32 (or rel8) with a
  fix-up, so the label may be bound before or after;
* :func:`encode_rip_relative` — an instruction whose memory operand is ``[rip + label]``
  (constant-pool loads), with a rel32 fix-up on its displacement.

:func:`to_iced` turns an :class:`X86Inst` with physical registers into an iced instruction,
choosing each register's view (r64, r32, cl, xmm, ymm, zmm, k) from the ``Code``'s operand
kinds, and the EVEX write-mask ``{k}``/``{z}`` from ``X86Inst.mask``/``zeroing``.

:func:`assemble` is the pipeline a selector calls: schedule, allocate, plan the frame, emit
prologue, blocks and epilogues, finish the buffer.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from iced_x86 import (
    Code,
    Encoder,
    Instruction,
    MemoryOperand,
    OpCodeInfo,
    OpCodeOperandKind,
    Register,
)

from .. import jit
from ..abi import SYSV_AMD64, CallConv, FrameLayout, plan_frame
from ..buffer import CodeBuffer, FinishedCode, Label
from ..regalloc import Allocation, allocate
from ..schedule import schedule_function
from ..vcode import MachineTarget, PReg, RegClass, VCodeError, VCodeFunction
from . import fixups
from . import inst as I
from . import regs as R


class EncodeError(ValueError):
    """An instruction iced-x86 cannot encode, or one that still names a virtual register."""


def encode(buf: CodeBuffer, instr: Instruction) -> int:
    """Encode ``instr`` at ``buf.offset`` (as its address) and append it; return its offset."""
    enc = Encoder(64)
    at = buf.offset
    try:
        enc.encode(instr, at)
    except ValueError as e:
        raise EncodeError(f"cannot encode {instr}: {e}") from None
    buf.put(enc.take_buffer())
    return at


def _encode_with_offsets(buf: CodeBuffer, instr: Instruction) -> tuple[int, int, Any]:
    enc = Encoder(64)
    at = buf.offset
    try:
        enc.encode(instr, at)
    except ValueError as e:
        raise EncodeError(f"cannot encode {instr}: {e}") from None
    offsets = enc.get_constant_offsets()
    data = enc.take_buffer()
    buf.put(data)
    return at, len(data), offsets


def encode_branch(buf: CodeBuffer, code: int, label: Label) -> int:
    """A near branch (``JMP_REL32_64``, ``JNE_REL8_64``, ``CALL_REL32_64``...) to ``label``.
    The displacement is the last 1 or 4 bytes of the instruction; a rel8 form whose target is
    out of range makes :meth:`CodeBuffer.finish` raise :class:`FixupRangeError`."""
    kinds = OpCodeInfo(code).op_kinds()
    if len(kinds) != 1 or _KIND_NAMES.get(kinds[0], "") not in ("BR64_1", "BR64_4"):
        raise EncodeError(f"{_name(code)} is not a near relative branch")
    short = _KIND_NAMES[kinds[0]] == "BR64_1"
    at = buf.offset
    # Encode with the branch pointing at itself; the field is then overwritten by the fix-up.
    encode(buf, Instruction.create_branch(code, at))
    end = buf.offset
    size = 1 if short else 4
    buf.patch_bytes(end - size, bytes(size))
    buf.add_fixup(fixups.REL8 if short else fixups.REL32, label, at=end - size, pc=end)
    return at


def encode_rip_relative(
    buf: CodeBuffer, make: Callable[[MemoryOperand], Instruction], label: Label
) -> int:
    """Encode ``make(MemoryOperand(RIP, ...))`` with its displacement fixed up to ``label``."""
    at = buf.offset
    instr = make(MemoryOperand(Register.RIP, displ=at, displ_size=8))
    at, length, offs = _encode_with_offsets(buf, instr)
    if not offs.has_displacement or offs.displacement_size != 4:
        raise EncodeError(f"{instr} has no 32-bit RIP-relative displacement")
    field = at + offs.displacement_offset
    buf.patch_bytes(field, bytes(4))
    buf.add_fixup(fixups.REL32, label, at=field, pc=at + length)
    return at


_KIND_NAMES: dict[int, str] = {
    getattr(OpCodeOperandKind, n): n
    for n in dir(OpCodeOperandKind)
    if n.isupper() and isinstance(getattr(OpCodeOperandKind, n), int)
}


def _name(code: int) -> str:
    return I._code_name(code)


@cache
def _operand_shapes(code: int) -> tuple[str, ...]:
    """Per operand: 'r64', 'r32', 'r16', 'r8', 'v16', 'v32', 'v64', 'k' (an opmask), 'imm',
    'imm64', 'mem', 'rm<view>' (register or memory), 'br'."""
    out = []
    for k in OpCodeInfo(code).op_kinds():
        n = _KIND_NAMES.get(k, "")
        if n.startswith("BR"):
            out.append("br")
        elif n == "IMM64":
            out.append("imm64")
        elif n.startswith("IMM"):
            out.append("imm")
        elif n.startswith("MEM"):
            out.append("mem")
        else:
            view = None
            for prefix, v in (
                ("R64", "r64"),
                ("R32", "r32"),
                ("R16", "r16"),
                ("R8", "r8"),
                ("XMM", "v16"),
                ("YMM", "v32"),
                ("ZMM", "v64"),
                ("K_", "k"),
            ):
                if n.startswith(prefix):
                    view = v
            view = view or {"CL": "r8", "AL": "r8", "AX": "r16", "EAX": "r32", "RAX": "r64"}.get(n)
            if view is None:
                raise EncodeError(f"{_name(code)}: operand kind {n} is not supported")
            out.append(("rm" + view) if ("_OR_MEM" in n or n.endswith("_RM")) else view)
    return tuple(out)


def _view_bits(shape: str) -> int:
    s = shape.removeprefix("rm")
    return 0 if s == "k" else int(s[1:])


MemResolver = Callable[[I.Operand], MemoryOperand]


def to_iced(inst: I.X86Inst, resolve_mem: MemResolver) -> Instruction:
    """The iced instruction for ``inst``; memory operands go through ``resolve_mem``."""
    shapes = _operand_shapes(inst.code)
    ops = [op for op in inst.ops if not isinstance(op, I.LabelOp)]
    if len(ops) != len(shapes):
        raise EncodeError(
            f"{inst!r}: {_name(inst.code)} takes {len(shapes)} operands, got {len(ops)}"
        )
    parts: list[str] = []
    args: list[Any] = []
    for op, shape in zip(ops, shapes, strict=True):
        if isinstance(op, I.RegOp):
            if not isinstance(op.reg, PReg):
                raise EncodeError(f"{inst!r}: {op.reg!r} is still virtual; allocate first")
            if shape in ("mem", "imm", "imm64", "br"):
                raise EncodeError(f"{inst!r}: a register where {_name(inst.code)} wants {shape}")
            parts.append("reg")
            args.append(R.iced_register(op.reg, _view_bits(shape)))
        elif isinstance(op, I.ImmOp):
            if shape not in ("imm", "imm64"):
                raise EncodeError(f"{inst!r}: an immediate where {_name(inst.code)} wants {shape}")
            parts.append("i64" if shape == "imm64" else "i32")
            args.append(op.value)
        else:
            if not (shape == "mem" or shape.startswith("rm")):
                raise EncodeError(f"{inst!r}: memory where {_name(inst.code)} wants {shape}")
            parts.append("mem")
            args.append(resolve_mem(op))
    factory = getattr(Instruction, "create_" + "_".join(parts) if parts else "create", None)
    if factory is None:
        raise EncodeError(f"{inst!r}: no iced-x86 constructor for operands {parts}")
    try:
        out = factory(inst.code, *args)
    except (ValueError, TypeError) as e:
        raise EncodeError(f"{inst!r}: {e}") from None
    if inst.mask is not None:
        if not isinstance(inst.mask, PReg) or inst.mask.cls is not RegClass.MASK:
            raise EncodeError(f"{inst!r}: the write-mask {inst.mask!r} is not an opmask register")
        out.op_mask = R.iced_register(inst.mask, 0)
        out.zeroing_masking = inst.zeroing
    return out


def _mem_operand(base: PReg | None, index: PReg | None, scale: int, disp: int) -> MemoryOperand:
    b = R.iced_register(base, 64) if base is not None else Register.NONE
    x = R.iced_register(index, 64) if index is not None else Register.NONE
    return MemoryOperand(b, x, scale, disp, 1 if disp else 0)


# ---------------------------------------------------------------------------------------------
# The assembler
# ---------------------------------------------------------------------------------------------

_INVERT = {a: b for a, b in zip(I.CONDITIONS[::2], I.CONDITIONS[1::2], strict=True)}
_INVERT.update({b: a for a, b in list(_INVERT.items())})


def _cc_of(code: int) -> str:
    return _name(code).split("_")[0][1:].lower()


@dataclass(frozen=True)
class Assembled:
    finished: FinishedCode
    allocation: Allocation
    frame: FrameLayout
    function: VCodeFunction  # after scheduling and allocation
    block_offsets: dict[str, int]

    @property
    def code(self) -> bytes:
        return self.finished.code

    def load(self, restype: Any, argtypes: Sequence[Any] = ()) -> Callable[..., Any]:
        """JIT-load the code and return a callable for the entry block.  The callable owns
        the mapping (``fn.owner.close()`` unmaps it)."""
        loaded = jit.load(self.code)
        return loaded.function(restype, argtypes)

    def disassemble(self, notes: dict[int, str] | None = None) -> list[str]:
        """Intel-syntax lines `offset: instruction`; ``notes`` puts a comment line before
        the instruction at an offset (the backend names the source of each block)."""
        from iced_x86 import Decoder, Formatter, FormatterSyntax

        fmt = Formatter(FormatterSyntax.INTEL)
        dec = Decoder(64, self.code[: self.finished.code_size], ip=0)
        out = []
        for ins in dec:
            if notes and ins.ip in notes:
                out.append(notes[ins.ip])
            out.append(f"{ins.ip:4x}: {fmt.format(ins)}")
        return out


class _Emitter:
    def __init__(self, buf: CodeBuffer, frame: FrameLayout, conv: CallConv, fp: bool):
        self.buf = buf
        self.frame = frame
        self.conv = conv
        self.fp = fp

    def mem(self, op: I.Operand) -> MemoryOperand:
        if isinstance(op, I.MemOp):
            for r in (op.base, op.index):
                if r is not None and not isinstance(r, PReg):
                    raise EncodeError(f"address register {r!r} is still virtual")
            return _mem_operand(op.base, op.index, op.scale, op.disp)  # type: ignore[arg-type]
        if isinstance(op, I.SlotOp):
            return _mem_operand(R.RSP, None, 1, self.frame.slot_offset(op.slot))
        if isinstance(op, I.ArgOp):
            if self.frame.realign:
                return _mem_operand(R.RBP, None, 1, self.frame.incoming_arg_fp_offset(op.offset))
            return _mem_operand(R.RSP, None, 1, self.frame.incoming_arg_offset(op.offset))
        raise EncodeError(f"operand {op!r} is not a memory operand")

    def inst(self, inst: I.X86Inst) -> None:
        const = [op for op in inst.ops if isinstance(op, I.ConstOp)]
        if const:
            label = self.buf.constant(const[0].data, const[0].align)

            def make(m: MemoryOperand) -> Instruction:
                return to_iced(inst, lambda op: m if isinstance(op, I.ConstOp) else self.mem(op))

            encode_rip_relative(self.buf, make, label)
        else:
            encode(self.buf, to_iced(inst, self.mem))

    def raw(self, instr: Instruction) -> None:
        encode(self.buf, instr)

    def prologue(self) -> None:
        f = self.frame
        rsp, rbp = Register.RSP, Register.RBP
        rest = f.size
        if self.fp:
            self.raw(Instruction.create_reg(Code.PUSH_R64, rbp))
            self.raw(Instruction.create_reg_reg(Code.MOV_R64_RM64, rbp, rsp))
            rest -= 8
        if rest:
            self.raw(Instruction.create_reg_i32(Code.SUB_RM64_IMM32, rsp, rest))
        if f.realign:
            self.raw(Instruction.create_reg_i32(Code.AND_RM64_IMM8, rsp, -f.realign))
        for reg, off, _n in f.saves:
            m = _mem_operand(R.RSP, None, 1, off)
            if reg.cls is RegClass.INT:
                self.raw(Instruction.create_mem_reg(Code.MOV_RM64_R64, m, R.iced_register(reg, 64)))
            else:
                self.raw(
                    Instruction.create_mem_reg(Code.MOVUPS_XMMM128_XMM, m, R.iced_register(reg, 16))
                )

    def epilogue(self) -> None:
        f = self.frame
        rsp, rbp = Register.RSP, Register.RBP
        for reg, off, _n in f.saves:
            m = _mem_operand(R.RSP, None, 1, off)
            if reg.cls is RegClass.INT:
                self.raw(Instruction.create_reg_mem(Code.MOV_R64_RM64, R.iced_register(reg, 64), m))
            else:
                self.raw(
                    Instruction.create_reg_mem(Code.MOVUPS_XMM_XMMM128, R.iced_register(reg, 16), m)
                )
        if self.fp:
            self.raw(Instruction.create_reg_reg(Code.MOV_R64_RM64, rsp, rbp))
            self.raw(Instruction.create_reg(Code.POP_R64, rbp))
        elif f.size:
            self.raw(Instruction.create_reg_i32(Code.ADD_RM64_IMM32, rsp, f.size))


def assemble(
    fn: VCodeFunction,
    target: MachineTarget,
    conv: CallConv = SYSV_AMD64,
    *,
    frame_pointer: bool = False,
    schedule: bool = True,
    outgoing_args: int = 0,
) -> Assembled:
    """Schedule (optional), allocate, plan the frame and encode ``fn``.

    ``frame_pointer`` must match the target (``x86_64_target(frame_pointer=...)``): with it,
    rbp is not allocatable and holds the frame pointer.  ``outgoing_args`` reserves
    ``[rsp, rsp + n)`` for stack arguments of calls the function makes (write them with
    ``I.store(I.mem(R.RSP, off), v)``).
    """
    if frame_pointer and R.RBP in target.allocatable.get(RegClass.INT, ()):
        raise VCodeError(f"{target.name} allocates rbp; use x86_64_target(frame_pointer=True)")
    for b in fn.blocks:
        for ins in b.insts:
            if not isinstance(ins, I.X86Inst):
                raise VCodeError(f"{fn.name}: {ins!r} is not an x86 instruction")
    last = fn.blocks[-1] if fn.blocks else None
    if last is not None and (not last.insts or not last.insts[-1].is_terminator()):
        raise VCodeError(f"{fn.name}: the last block {last.label!r} falls off the end")
    body = schedule_function(fn, target) if schedule else fn
    alloc = allocate(body, target)
    out = alloc.function
    makes_calls = any(
        isinstance(x, I.X86Inst) and x.side_effect and x.flow is I.Flow.NORMAL and x.clobber
        for x in out.instructions()
    )
    frame = plan_frame(
        conv,
        alloc.spill_slots,
        alloc.used_callee_saved,
        outgoing=outgoing_args,
        frame_pointer=frame_pointer,
        leaf=not makes_calls and outgoing_args == 0,
    )
    buf = CodeBuffer(fn.name)
    labels = {b.label: buf.new_label(b.label) for b in out.blocks}
    em = _Emitter(buf, frame, conv, frame_pointer)
    em.prologue()
    offsets: dict[str, int] = {}
    for bi, b in enumerate(out.blocks):
        buf.bind(labels[b.label])
        offsets[b.label] = buf.offset
        nxt = out.blocks[bi + 1].label if bi + 1 < len(out.blocks) else None
        for ins in b.insts:
            assert isinstance(ins, I.X86Inst)
            if ins.flow is I.Flow.JUMP:
                (t,) = ins.branch_targets()
                if t != nxt:
                    encode_branch(buf, ins.code, labels[t])
            elif ins.flow is I.Flow.BRANCH:
                taken, other = ins.branch_targets()
                cc = _cc_of(ins.code)
                if taken == nxt:
                    encode_branch(buf, I.jcc_code(_INVERT[cc]), labels[other])
                else:
                    encode_branch(buf, ins.code, labels[taken])
                    if other != nxt:
                        encode_branch(buf, Code.JMP_REL32_64, labels[other])
            elif ins.flow is I.Flow.RETURN:
                em.epilogue()
                em.inst(ins)
            else:
                em.inst(ins)
    finished = buf.finish()
    return Assembled(finished, alloc, frame, out, offsets)


def call_address(fnptr: Any) -> int:
    """The integer address of a ctypes function pointer (to ``mov_imm`` it into a register)."""
    return ctypes.cast(fnptr, ctypes.c_void_p).value or 0
