"""The code buffer: labels, fix-ups (x86 and ARM64 kinds), constant pool, alignment."""

from __future__ import annotations

import ctypes
import struct

import capstone
import pytest
from iced_x86 import Code, Decoder, Instruction, Register

from kera_core.native import cpu, jit
from kera_core.native.arm64 import fixups as A64
from kera_core.native.buffer import BufferError, CodeBuffer, FixupRangeError
from kera_core.native.x86.emit import encode, encode_branch, encode_rip_relative
from tests.tools import native_only, tool_missing

native = native_only()


def decode_all(code: bytes):
    return list(Decoder(64, code, ip=0))


@native
def test_forward_and_backward_labels_run():
    buf = CodeBuffer()
    loop, done, skip = buf.new_label("loop"), buf.new_label("done"), buf.new_label("skip")
    encode(buf, Instruction.create_reg_reg(Code.XOR_R32_RM32, Register.EAX, Register.EAX))
    encode(buf, Instruction.create_reg_reg(Code.MOV_R64_RM64, Register.RCX, Register.RDI))
    encode(buf, Instruction.create_reg_i32(Code.TEST_RM64_IMM32, Register.RCX, -1))
    encode_branch(buf, Code.JE_REL32_64, done)  # forward, label not bound yet
    buf.bind(loop)
    encode(buf, Instruction.create_reg_i32(Code.ADD_RM64_IMM32, Register.RAX, 3))
    encode(buf, Instruction.create_reg_i32(Code.SUB_RM64_IMM32, Register.RCX, 1))
    encode_branch(buf, Code.JNE_REL8_64, loop)  # backward, short
    encode_branch(buf, Code.JMP_REL32_64, skip)
    encode(buf, Instruction.create(Code.UD2))  # jumped over
    buf.bind(skip)
    encode(buf, Instruction.create_reg_i32(Code.ADD_RM64_IMM32, Register.RAX, 1000))
    buf.bind(done)
    encode(buf, Instruction.create(Code.RETNQ))
    fin = buf.finish()
    ins = decode_all(fin.code)
    targets = {i.code: i.near_branch_target for i in ins if i.is_jcc_short_or_near or i.is_jmp_near}
    assert targets[Code.JE_REL32_64] == fin.offset(done)
    assert targets[Code.JNE_REL8_64] == fin.offset(loop)
    assert targets[Code.JMP_REL32_64] == fin.offset(skip)
    with jit.load(fin.code) as code:
        f = code.function(ctypes.c_int64, (ctypes.c_int64,))
        assert f(0) == 0
        assert f(5) == 15 + 1000


def test_rel8_out_of_range_is_a_clear_error():
    buf = CodeBuffer("far")
    far = buf.new_label("far")
    encode_branch(buf, Code.JMP_REL8_64, far)
    buf.put(b"\x90" * 200)
    buf.bind(far)
    with pytest.raises(FixupRangeError, match=r"rel8.*200"):
        buf.finish()
    ok = CodeBuffer()
    near = ok.new_label()
    encode_branch(ok, Code.JMP_REL8_64, near)
    ok.put(b"\x90" * 127)
    ok.bind(near)
    fin = ok.finish()
    assert decode_all(fin.code)[0].near_branch_target == 129


def test_label_errors():
    buf = CodeBuffer()
    a = buf.new_label("a")
    buf.bind(a)
    with pytest.raises(BufferError, match="already bound"):
        buf.bind(a)
    b = buf.new_label("b")
    encode_branch(buf, Code.JMP_REL32_64, b)
    with pytest.raises(BufferError, match="never bound"):
        buf.finish()
    other = CodeBuffer().new_label("foreign")
    buf2 = CodeBuffer()
    with pytest.raises(BufferError, match="does not belong"):
        buf2.bind(other)
    with pytest.raises(BufferError, match="power of two"):
        buf2.align(3)


def test_alignment_padding_uses_the_filler():
    buf = CodeBuffer()
    buf.put(b"\xc3")
    buf.align(16, b"\xcc")
    assert buf.offset == 16 and buf.read(1, 15) == b"\xcc" * 15
    arm = CodeBuffer()
    arm.put_u32(0xD65F03C0)
    arm.align(16, (0xD503201F).to_bytes(4, "little"))
    assert arm.offset == 16
    with pytest.raises(BufferError, match="filler"):
        bad = CodeBuffer()
        bad.put(b"\x00")
        bad.align(8, b"\x00\x00\x00\x00")


def test_constant_pool_alignment_and_dedup():
    buf = CodeBuffer()
    buf.put(b"\xc3" * 5)
    c16 = buf.constant(b"A" * 16, 16)
    c32 = buf.constant(b"B" * 32, 32)
    c64 = buf.constant(b"C" * 64, 64)
    again = buf.constant(b"A" * 16, 16)
    c8 = buf.constant(struct.pack("<d", 1.5), 8)
    assert again == c16
    assert len({c16, c32, c64, c8}) == 4
    fin = buf.finish()
    assert fin.code_size == 5
    for lab, data, al in ((c16, b"A" * 16, 16), (c32, b"B" * 32, 32), (c64, b"C" * 64, 64)):
        off = fin.offset(lab)
        assert off >= fin.code_size and off % al == 0
        assert fin.code[off : off + len(data)] == data
    assert fin.alignment == 64
    assert fin.code.count(b"A" * 16) == 1  # deduplicated


def test_dedup_takes_the_stricter_alignment():
    buf = CodeBuffer()
    buf.put(b"\x90" * 3)
    a = buf.constant(b"X" * 32, 16)
    b = buf.constant(b"X" * 32, 32)
    assert a == b
    assert buf.finish().offset(a) % 32 == 0


@native
def test_rip_relative_pool_loads_run():
    buf = CodeBuffer()
    c = buf.constant(struct.pack("<dd", 2.5, -1.0), 16)
    encode_rip_relative(
        buf, lambda m: Instruction.create_reg_mem(Code.MOVAPD_XMM_XMMM128, Register.XMM0, m), c
    )
    encode(buf, Instruction.create(Code.RETNQ))
    fin = buf.finish()
    with jit.load(fin.code) as code:
        assert code.function(ctypes.c_double)() == 2.5


@native
def test_32_byte_aligned_pool_constant_is_usable_by_vmovaps():
    if not cpu.detect().avx:
        tool_missing("vmovaps ymm needs a CPU with AVX (DESIGN.md: these machines have AVX2)")
    buf = CodeBuffer()
    buf.put(b"\x90")  # misalign the code end on purpose
    c = buf.constant(struct.pack("<4d", 7.25, 1, 2, 3), 32)
    make = lambda m: Instruction.create_reg_mem(Code.VEX_VMOVAPS_YMM_YMMM256, Register.YMM0, m)  # noqa: E731
    encode_rip_relative(buf, make, c)  # faults if the constant is not 32-byte aligned
    encode(buf, Instruction.create(Code.VEX_VZEROUPPER))
    encode(buf, Instruction.create(Code.RETNQ))
    fin = buf.finish()
    with jit.load(fin.code) as code:
        assert code.function(ctypes.c_double)() == 7.25


def test_finished_buffer_is_closed():
    buf = CodeBuffer()
    buf.put(b"\xc3")
    buf.finish()
    with pytest.raises(BufferError, match="finished"):
        buf.put(b"\x90")


# -- ARM64 fix-up kinds, checked by disassembling with capstone -----------------------------

ARM64 = getattr(capstone, "CS_ARCH_ARM64", None) or capstone.CS_ARCH_AARCH64


def arm_disasm(code: bytes) -> list[tuple[int, str, str]]:
    md = capstone.Cs(ARM64, capstone.CS_MODE_ARM)
    return [(i.address, i.mnemonic, i.op_str) for i in md.disasm(code, 0)]


def arm_branch_program():
    buf = CodeBuffer("arm")
    top, fwd, lit, odd = (buf.new_label(n) for n in ("top", "fwd", "lit", "odd"))
    NOP = 0xD503201F
    buf.bind(top)
    buf.put_u32(NOP)
    refs = []
    for word, kind, label in (
        (0x14000000, A64.BRANCH26, fwd),  # b fwd
        (0x54000001, A64.COND_BRANCH19, top),  # b.ne top
        (0x10000000, A64.ADR21, odd),  # adr x0, odd (a byte address)
        (0xB4000001, A64.COND_BRANCH19, fwd),  # cbz x1, fwd
        (0x36180002, A64.TEST_BRANCH14, top),  # tbz w2, #3, top
        (0x58000003, A64.LOAD_LITERAL19, lit),  # ldr x3, lit
        (0x94000000, A64.BRANCH26, top),  # bl top
    ):
        at = buf.put_u32(word)
        buf.add_fixup(kind, label, at=at, pc=at)
        refs.append(at)
    for _ in range(5):
        buf.put_u32(NOP)
    buf.bind(fwd)
    buf.put_u32(0xD65F03C0)  # ret
    buf.bind(lit)
    buf.put(b"\x00" * 11)
    buf.bind(odd)  # adr may point at any byte
    buf.put(b"\x00")
    return buf, refs, (top, fwd, lit, odd)


def test_arm64_fixups_patch_the_right_bits():
    buf, refs, (top, fwd, lit, odd) = arm_branch_program()
    fin = buf.finish()
    lines = {a: (m, ops) for a, m, ops in arm_disasm(fin.code[: fin.offset(fwd) + 4])}
    t, f, lt, od = fin.offset(top), fin.offset(fwd), fin.offset(lit), fin.offset(odd)
    assert od % 4 == 3
    expect = [
        ("b", "", f),
        ("b.ne", "", t),
        ("adr", "x0, ", od),
        ("cbz", "x1, ", f),
        ("tbz", "w2, #3, ", t),
        ("ldr", "x3, ", lt),
        ("bl", "", t),
    ]
    for at, (mn, prefix, target) in zip(refs, expect, strict=True):
        got_mn, ops = lines[at]
        assert got_mn == mn
        assert ops.startswith(prefix)
        assert int(ops.removeprefix(prefix).lstrip("#"), 0) == target, (mn, ops)
    # the other bits of each instruction were kept
    assert int.from_bytes(fin.code[refs[1] : refs[1] + 4], "little") & 0xFF00001F == 0x54000001
    adr = int.from_bytes(fin.code[refs[2] : refs[2] + 4], "little")
    delta = od - refs[2]
    assert (adr >> 29) & 3 == delta & 3 and (adr >> 5) & 0x7FFFF == delta >> 2


def test_arm64_fixup_range_and_alignment_errors():
    buf = CodeBuffer()
    lab = buf.new_label("far")
    at = buf.put_u32(0x54000000)
    buf.add_fixup(A64.COND_BRANCH19, lab, at=at, pc=at)
    buf.put(b"\x00" * (1 << 20))  # 1 MiB: one past the b.cond range
    buf.bind(lab)
    with pytest.raises(FixupRangeError, match="imm19"):
        buf.finish()
    buf = CodeBuffer()
    lab = buf.new_label("odd")
    at = buf.put_u32(0x14000000)
    buf.add_fixup(A64.BRANCH26, lab, at=at, pc=at)
    buf.put(b"\x00\x00")
    buf.bind(lab)
    with pytest.raises(FixupRangeError, match="multiple of 4"):
        buf.finish()
    buf = CodeBuffer()
    lab = buf.new_label("tb")
    at = buf.put_u32(0x36000000)
    buf.add_fixup(A64.TEST_BRANCH14, lab, at=at, pc=at)
    buf.put(b"\x00" * (1 << 15))
    buf.bind(lab)
    with pytest.raises(FixupRangeError, match="imm14"):
        buf.finish()


def test_arm64_negative_adr():
    buf = CodeBuffer()
    lab = buf.new_label("back")
    buf.bind(lab)
    buf.put(b"\x00" * 5)
    at = buf.put_u32(0x10000005)  # adr x5, back
    buf.add_fixup(A64.ADR21, lab, at=at, pc=at)
    fin = buf.finish()
    ((_, mn, ops),) = arm_disasm(fin.code[at : at + 4])
    target = int(ops.split("#")[1], 0)  # disassembled at address 0: the target is the delta
    assert mn == "adr" and target - (1 << 64) == -5


def test_fixup_outside_the_code_is_rejected():
    buf = CodeBuffer()
    lab = buf.new_label()
    with pytest.raises(BufferError, match="outside"):
        buf.add_fixup(A64.BRANCH26, lab, at=0, pc=0)
