"""The ARM64 encoder, form by form: our bytes against GNU ``as`` (our text assembled) and
against capstone (our bytes decoded, and capstone's text assembled again by GNU ``as``).

Needs ``aarch64-linux-gnu-as``/``-objcopy`` (apt ``binutils-aarch64-linux-gnu``) and
``capstone`` (pip).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kera_core.native.arm64 import encode as E
from kera_core.native.arm64 import inst as I
from kera_core.native.arm64 import regs as R
from kera_core.native.vcode import SpillSlot
from tests.tools import tool_missing

X, V = R.XREGS, R.VREGS
AS = "aarch64-linux-gnu-as"
OBJCOPY = "aarch64-linux-gnu-objcopy"


def samples() -> list[I.A64Inst]:
    out: list[I.A64Inst] = []
    regs3 = [(X[0], X[1], X[2]), (X[28], X[17], X[30]), (X[9], X[9], X[15])]
    for op in ("add", "sub", "and", "orr", "eor", "orn", "sdiv", "udiv", "lslv", "lsrv", "asrv"):
        for d, n, m in regs3:
            out.append(I.rrr(op, d, n, m))
    out.append(I.rrr("sub", X[3], R.XZR, X[4]))
    out.append(I.rrr("orn", X[3], R.XZR, X[4]))
    for d, n in ((X[0], X[1]), (X[30], X[29])):
        out.append(I.mov(d, n))
    out.append(I.mov(V[0], V[31]))
    out.append(I.A64Inst("mov", (I.RegOp(X[5], I.DEF), I.RegOp(R.SP, I.USE))))
    for imm in (0, 1, 4095, 4096, 8 << 12, 4095 << 12):
        out.append(I.add_imm(X[1], X[2], imm))
        out.append(I.sub_imm(R.SP, R.SP, imm))
        out.append(I.cmp_imm(X[7], imm))
    out.append(I.add_imm(X[3], R.SP, 24))
    out.append(I.cmp(X[3], X[27]))
    out.append(I.A64Inst("tst", (I.RegOp(X[3]), I.RegOp(X[4])), flags="w"))
    out.append(I.rrrr("madd", X[0], X[1], X[2], R.XZR))
    out.append(I.rrrr("msub", X[5], X[6], X[7], X[8]))
    for cond in I.CONDS[:14]:
        out.append(I.csel("csel", X[1], X[2], X[3], cond))
        out.append(I.cset(X[4], cond))
        out.append(I.csel("fcsel", V[1], V[2], V[3], cond, "d"))
    out.append(I.csel("csinc", X[1], X[2], X[3], "ge"))
    out.append(I.csel("csneg", X[1], X[2], X[2], "ge"))
    out.append(I.csel("fcsel", V[1], V[2], V[3], "vs", "s"))
    for op in ("sbfm", "ubfm"):
        for immr, imms in ((0, 7), (0, 15), (0, 31), (0, 2), (0, 63), (1, 63)):
            out.append(I.bfm(op, X[3], X[4], immr, imms))
    for imm, sh in ((0, 0), (0xFFFF, 16), (0x1234, 32), (7, 48)):
        out.append(I.movz(X[2], imm, sh))
        out.append(I.movn(X[2], imm, sh))
        out.append(I.movk(X[2], imm, sh))
    for op, sz in E._LDST:
        size = E._LDST[(op, sz)][1]
        t = V[3] if sz in "dsq" else X[3]
        for m in (
            I.MemOp(X[4]),
            I.MemOp(X[4], None, size * 5),
            I.MemOp(R.SP, None, size * 4095),
            I.MemOp(X[4], X[5]),
            I.MemOp(X[4], X[5], shift=False),
        ):
            out.append(I.A64Inst(op, (I.RegOp(t, I.DEF), m), sz))
    for sz in "sd":
        for op in E._F2:
            out.append(I.rrr(op, V[0], V[1], V[31], sz))
        for op in E._F1:
            out.append(I.rr(op, V[8], V[9], sz))
        out.append(I.rrrr("fmadd", V[0], V[1], V[2], V[3], sz))
        out.append(I.fcmp(V[4], V[5], sz))
    for op, sz in E._CVT:
        word, dv, sv = E._CVT[(op, sz)]
        d = V[6] if dv in "ds" else X[6]
        n = V[7] if sv in "ds" else X[7]
        out.append(I.rr(op, d, n, sz))
    out.append(I.A64Inst("mrs_fpcr", (I.RegOp(X[9], I.DEF),)))
    out.append(I.A64Inst("msr_fpcr", (I.RegOp(X[9]),)))
    out.append(I.blr(X[16]))
    out.append(I.ret())
    out.append(I.A64Inst("svc", (I.ImmOp(3),)))
    out.append(I.A64Inst("brk", (I.ImmOp(0x7),)))
    out.append(I.A64Inst("nop"))
    out.append(I.A64Inst("stp", (I.RegOp(R.FP), I.RegOp(R.LR), I.RegOp(R.SP), I.ImmOp(16))))
    out.append(I.A64Inst("ldp", (I.RegOp(R.FP), I.RegOp(R.LR), I.RegOp(R.SP), I.ImmOp(-64))))
    for k in (0, 2, 3, 4):
        out.append(I.add_lsl(X[0], X[1], X[2], k))
    out.append(I.add_lsl(X[28], X[17], X[30], 63))
    return out + neon_samples()


def neon_samples() -> list[I.A64Inst]:
    """Every NEON form, both arrangements, on low, high and repeated registers."""
    out: list[I.A64Inst] = []
    vregs3 = [(V[0], V[1], V[2]), (V[31], V[17], V[30]), (V[9], V[9], V[28])]
    for arr in ("4s", "2d"):
        for op in E._V3:
            for d, n, m in vregs3:
                out.append(I.vop(op[2:], d, n, m, arr=arr, acc=op == "v.fmla"))
        for op in E._V2:
            out.append(I.vop(op[2:], V[8], V[9], arr=arr))
            out.append(I.vop(op[2:], V[31], V[0], arr=arr))
        for n in (V[0], V[31], V[7]):
            out.append(I.dup(V[5], n, arr))
        for n in (X[0], X[28], X[7]):
            out.append(I.dup(V[30], n, arr))
    for op in E._VB3:
        for d, n, m in vregs3:
            out.append(I.vop(op[2:], d, n, m, arr="16b", acc=op in ("v.bsl", "v.bit", "v.bif")))
    for op in E._VB2:
        out.append(I.vop(op[2:], V[3], V[29], arr="16b"))
    return out


BRANCHES = (
    [(I.jump("x"), d) for d in (0, 4, -4, 1 << 20, -(1 << 27))]
    + [(I.branch(c, "x", "y"), d) for c in ("eq", "ne", "ge", "lt", "vs") for d in (8, -8, 1 << 19)]
    + [(I.cbz(op, X[3], "x", "y"), d) for op in ("cbz", "cbnz") for d in (12, -1 << 20)]
)


def encoded() -> list[tuple[int, str]]:
    out = [E.encode(i, lambda s: 8 * s.slot.index) for i in samples()]
    out += [E.encode_branch(i, d) for i, d in BRANCHES]
    slot = I.A64Inst("str", (I.RegOp(X[1]), I.SlotOp(SpillSlot(3, 8, 8))), "x")
    out.append(E.encode(slot, lambda s: 8 * s.slot.index))
    return out


def gnu_as(lines: list[str]) -> list[int]:
    if shutil.which(AS) is None or shutil.which(OBJCOPY) is None:
        tool_missing(f"{AS} is not installed (apt binutils-aarch64-linux-gnu)")
    with tempfile.TemporaryDirectory() as d:
        src = Path(d, "a.s")
        src.write_text(".text\n" + "".join(f"{ln}\n" for ln in lines))
        r = subprocess.run([AS, "-o", f"{d}/a.o", str(src)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        subprocess.run(
            [OBJCOPY, "-O", "binary", "-j", ".text", f"{d}/a.o", f"{d}/a.bin"], check=True
        )
        data = Path(d, "a.bin").read_bytes()
    return [int.from_bytes(data[k : k + 4], "little") for k in range(0, len(data), 4)]


def test_every_form_matches_gnu_as() -> None:
    enc = encoded()
    got = gnu_as([t for _, t in enc])
    assert len(got) == len(enc)
    bad = [(t, hex(w), hex(g)) for (w, t), g in zip(enc, got, strict=True) if w != g]
    assert not bad, bad


def test_every_form_matches_capstone() -> None:
    try:
        import capstone
    except ImportError:
        tool_missing("capstone is not installed (pip install capstone)")
    md = capstone.Cs(capstone.CS_ARCH_ARM64, capstone.CS_MODE_ARM)
    enc = encoded()
    texts = []
    for k, (w, t) in enumerate(enc):
        ins = list(md.disasm(w.to_bytes(4, "little"), 4 * k))
        assert len(ins) == 1, f"capstone cannot decode {t} ({w:#010x})"
        op = ins[0].op_str
        # capstone prints branch targets as absolute addresses: make them relative again
        if ins[0].mnemonic.startswith(("b", "cb")) and "#0x" in op and "[" not in op:
            head, _, target = op.rpartition("#")
            op = f"{head}.{int(target, 16) - 4 * k:+d}"
        texts.append(f"{ins[0].mnemonic} {op}")
        # capstone and our text name the same operation
        base = t.split()[0].split(".")[0]
        assert ins[0].mnemonic.split(".")[0] in _ALIASES.get(base, {base}), (t, texts[-1])
    got = gnu_as(texts)
    bad = [(t, c, hex(w), hex(g)) for (w, t), c, g in zip(enc, texts, got, strict=True) if w != g]
    assert not bad, bad


_ALIASES = {
    "sub": {"sub", "neg"},
    "orn": {"orn", "mvn"},
    "madd": {"madd", "mul"},
    "mov": {"mov", "orr"},
    "sbfm": {"sbfm", "sxtb", "sxth", "sxtw", "sbfx", "asr", "sbfiz"},
    "ubfm": {"ubfm", "uxtb", "uxth", "ubfx", "lsr", "lsl", "ubfiz"},
    "movz": {"movz", "mov"},
    "movn": {"movn", "mov"},
    "csinc": {"csinc", "cinc"},
    "csneg": {"csneg", "cneg"},
    "lsl": {"lsl", "lslv"},
    "lsr": {"lsr", "lsrv"},
    "asr": {"asr", "asrv"},
    "add": {"add", "mov"},
    "sub_i": {"sub"},
    "not": {"not", "mvn"},
    "dup": {"dup", "mov"},
    "orr": {"orr", "mov"},
}


@pytest.mark.parametrize("bad", [I.add_imm(X[1], X[2], 4097), I.movz(X[1], 1, 8)])
def test_out_of_range_operands_are_refused(bad) -> None:
    with pytest.raises(E.EncodeError):
        E.encode(bad)
