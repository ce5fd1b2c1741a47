"""The ARM64 encoder: one :class:`~.inst.A64Inst` (physical registers) → one 32-bit word and
its GNU assembler text.  Our own tables, for exactly the forms the backend emits; every form
is checked against capstone and GNU ``as`` in tests/test_arm64_encode.py.

Integer forms are 64-bit (``sz='x'``) except where a 32-bit view is named (``sz='w'``: the
float conversions that saturate to 32 bits and ``fmov`` of single-precision bits).
"""

from __future__ import annotations

from collections.abc import Callable

from ..vcode import PReg, RegClass
from . import regs as R
from .inst import CONDS, A64Inst, ImmOp, LabelOp, MemOp, RegOp, SlotOp


class EncodeError(ValueError):
    """An instruction this encoder has no form for, or an operand out of range."""


def reg_text(r, view: str) -> str:
    if not isinstance(r, PReg):
        raise EncodeError(f"{r!r} is still virtual; allocate first")
    if r.cls is RegClass.INT:
        if r is R.SP or r.name == "sp":
            return "sp" if view == "x" else "wsp"
        if r.index == 31:
            return "xzr" if view == "x" else "wzr"
        return f"{view}{r.index}"
    if view == "16b":
        return f"v{r.index}.16b"
    return f"{view}{r.index}"


def _n(r) -> int:
    if not isinstance(r, PReg):
        raise EncodeError(f"{r!r} is still virtual; allocate first")
    return r.index


def _u(value: int, bits: int, what: str) -> int:
    if not 0 <= value < (1 << bits):
        raise EncodeError(f"{what} {value} does not fit in {bits} bits")
    return value


_ALU = {  # shifted-register forms, 64-bit
    "add": 0x8B000000,
    "sub": 0xCB000000,
    "and": 0x8A000000,
    "orr": 0xAA000000,
    "eor": 0xCA000000,
    "orn": 0xAA200000,
}
_DP2 = {
    "sdiv": 0x9AC00C00,
    "udiv": 0x9AC00800,
    "lslv": 0x9AC02000,
    "lsrv": 0x9AC02400,
    "asrv": 0x9AC02800,
}
_DP2_TEXT = {"lslv": "lsl", "lsrv": "lsr", "asrv": "asr"}
_CSEL = {"csel": 0x9A800000, "csinc": 0x9A800400, "csneg": 0xDA800400}
_F2 = {
    "fadd": 0x1E202800,
    "fsub": 0x1E203800,
    "fmul": 0x1E200800,
    "fdiv": 0x1E201800,
    "fmax": 0x1E204800,
    "fmin": 0x1E205800,
}
_F1 = {
    "fmov": 0x1E204000,
    "fabs": 0x1E20C000,
    "fneg": 0x1E214000,
    "fsqrt": 0x1E21C000,
    "frintn": 0x1E244000,
}
_FTYPE = {"s": 0, "d": 1}

# Loads and stores: (unsigned-offset base word, access bytes) per (op, register view).
_LDST = {
    ("ldr", "x"): (0xF9400000, 8),
    ("str", "x"): (0xF9000000, 8),
    ("ldr", "w"): (0xB9400000, 4),
    ("str", "w"): (0xB9000000, 4),
    ("ldrsw", "x"): (0xB9800000, 4),
    ("ldrh", "w"): (0x79400000, 2),
    ("strh", "w"): (0x79000000, 2),
    ("ldrsh", "x"): (0x79800000, 2),
    ("ldrb", "w"): (0x39400000, 1),
    ("strb", "w"): (0x39000000, 1),
    ("ldrsb", "x"): (0x39800000, 1),
    ("ldr", "d"): (0xFD400000, 8),
    ("str", "d"): (0xFD000000, 8),
    ("ldr", "s"): (0xBD400000, 4),
    ("str", "s"): (0xBD000000, 4),
    ("ldr", "q"): (0x3DC00000, 16),
    ("str", "q"): (0x3D800000, 16),
}

# Moves between the register files and conversions: (word, dst view, src view).
_CVT = {
    ("fmov_to_f", "d"): (0x9E670000, "d", "x"),
    ("fmov_to_f", "s"): (0x1E270000, "s", "w"),
    ("fmov_to_i", "d"): (0x9E660000, "x", "d"),
    ("fmov_to_i", "s"): (0x1E260000, "w", "s"),
    ("scvtf", "d"): (0x9E620000, "d", "x"),
    ("scvtf", "s"): (0x9E220000, "s", "x"),
    ("ucvtf", "d"): (0x9E630000, "d", "x"),
    ("ucvtf", "s"): (0x9E230000, "s", "x"),
    ("fcvtzs", "xd"): (0x9E780000, "x", "d"),
    ("fcvtzs", "xs"): (0x9E380000, "x", "s"),
    ("fcvtzs", "wd"): (0x1E780000, "w", "d"),
    ("fcvtzs", "ws"): (0x1E380000, "w", "s"),
    ("fcvtzu", "xd"): (0x9E790000, "x", "d"),
    ("fcvtzu", "xs"): (0x9E390000, "x", "s"),
    ("fcvtzu", "wd"): (0x1E790000, "w", "d"),
    ("fcvtzu", "ws"): (0x1E390000, "w", "s"),
    ("fcvt", "ds"): (0x1E22C000, "d", "s"),
    ("fcvt", "sd"): (0x1E624000, "s", "d"),
}
_CVT_TEXT = {"fmov_to_f": "fmov", "fmov_to_i": "fmov"}

# Advanced SIMD (NEON) on whole q registers, ``sz`` the arrangement: ``4s`` (f32) or ``2d``
# (f64) for the float forms (bit 22 is sz), ``16b`` for the bitwise ones.  The op names are
# ``v.`` + the mnemonic, so a vector form never meets a scalar one in a table.
_VSZ = {"4s": 0, "2d": 1}
_V3 = {  # Vd, Vn, Vm (fmla: Vd += Vn * Vm, one rounding)
    "v.fadd": 0x4E20D400,
    "v.fsub": 0x4EA0D400,
    "v.fmul": 0x6E20DC00,
    "v.fdiv": 0x6E20FC00,
    "v.fmax": 0x4E20F400,
    "v.fmin": 0x4EA0F400,
    "v.fmla": 0x4E20CC00,
    "v.fcmeq": 0x4E20E400,
    "v.fcmge": 0x6E20E400,
    "v.fcmgt": 0x6EA0E400,
}
_V2 = {"v.fneg": 0x6EA0F800, "v.fabs": 0x4EA0F800, "v.fsqrt": 0x6EA1F800}
_VB3 = {  # .16b; bsl/bit/bif read Vd too
    "v.bsl": 0x6E601C00,
    "v.bit": 0x6EA01C00,
    "v.bif": 0x6EE01C00,
    "v.and": 0x4E201C00,
    "v.orr": 0x4EA01C00,
    "v.eor": 0x6E201C00,
}
_VB2 = {"v.not": 0x6E205800}
_DUP_IMM5 = {"4s": 0b00100, "2d": 0b01000}  # element size s / d, index 0
NEON_FORMS = (*_V3, *_V2, *_VB3, *_VB2, "v.dup_elem", "v.dup_gen")

FORMS = (
    *_ALU,
    *_DP2,
    *_CSEL,
    *_F2,
    *_F1,
    *{k[0] for k in _LDST},
    *{k[0] for k in _CVT},
    "mov",
    "add_i",
    "sub_i",
    "cmp",
    "cmp_i",
    "tst",
    "madd",
    "msub",
    "sbfm",
    "ubfm",
    "movz",
    "movn",
    "movk",
    "cset",
    "fcmp",
    "fcsel",
    "fmadd",
    "mrs_fpcr",
    "msr_fpcr",
    "blr",
    "ret",
    "svc",
    "brk",
    "nop",
    "stp",
    "ldp",
    "add_lsl",
    *NEON_FORMS,
)

SlotResolver = Callable[[SlotOp], int]


def _regs(inst: A64Inst) -> list:
    return [op.reg for op in inst.ops if isinstance(op, RegOp)]


def _imms(inst: A64Inst) -> list[int]:
    return [op.value for op in inst.ops if isinstance(op, ImmOp)]


def encode(inst: A64Inst, slot: SlotResolver | None = None) -> tuple[int, str]:
    """The word and the assembly text of a non-branch instruction."""
    op, sz = inst.op, inst.sz
    rs = _regs(inst)
    im = _imms(inst)
    if op in _ALU:
        d, n, m = rs
        w = _ALU[op] | _n(m) << 16 | _n(n) << 5 | _n(d)
        return w, f"{op} {reg_text(d, 'x')}, {reg_text(n, 'x')}, {reg_text(m, 'x')}"
    if op == "mov":
        d, n = rs
        if sz == "x":
            if n is R.SP or d is R.SP:
                return 0x91000000 | _n(n) << 5 | _n(
                    d
                ), f"mov {reg_text(d, 'x')}, {reg_text(n, 'x')}"
            w = 0xAA0003E0 | _n(n) << 16 | _n(d)
            return w, f"mov {reg_text(d, 'x')}, {reg_text(n, 'x')}"
        w = 0x4EA01C00 | _n(n) << 16 | _n(n) << 5 | _n(d)
        return w, f"mov {reg_text(d, '16b')}, {reg_text(n, '16b')}"
    if op == "add_lsl":  # add xd, xn, xm, lsl #k
        d, n, m = rs
        (k,) = im
        w = 0x8B000000 | _n(m) << 16 | _u(k, 6, "shift") << 10 | _n(n) << 5 | _n(d)
        return w, f"add {reg_text(d, 'x')}, {reg_text(n, 'x')}, {reg_text(m, 'x')}, lsl #{k}"
    if op.startswith("v."):
        return _neon(inst, rs)
    if op in _DP2:
        d, n, m = rs
        w = _DP2[op] | _n(m) << 16 | _n(n) << 5 | _n(d)
        return (
            w,
            f"{_DP2_TEXT.get(op, op)} {reg_text(d, 'x')}, {reg_text(n, 'x')}, {reg_text(m, 'x')}",
        )
    if op in ("add_i", "sub_i", "cmp_i"):
        if op == "cmp_i":
            n, (imm,) = rs[0], im
            d = R.XZR
            base = 0xF1000000
        else:
            d, n = rs
            (imm,) = im
            base = 0x91000000 if op == "add_i" else 0xD1000000
        sh = 0
        if imm >= 4096 and imm % 4096 == 0 and imm >> 12 < 4096:
            imm, sh = imm >> 12, 1
        _u(imm, 12, "immediate")
        w = base | sh << 22 | imm << 10 | _n(n) << 5 | _n(d)
        shift = ", lsl #12" if sh else ""
        if op == "cmp_i":
            return w, f"cmp {reg_text(n, 'x')}, #{imm}{shift}"
        return w, f"{op[:3]} {reg_text(d, 'x')}, {reg_text(n, 'x')}, #{imm}{shift}"
    if op in ("cmp", "tst"):
        n, m = rs
        base = 0xEB00001F if op == "cmp" else 0xEA00001F
        return base | _n(m) << 16 | _n(n) << 5, f"{op} {reg_text(n, 'x')}, {reg_text(m, 'x')}"
    if op in ("madd", "msub"):
        d, n, m, a = rs
        w = (0x9B000000 if op == "madd" else 0x9B008000) | _n(m) << 16 | _n(a) << 10
        w |= _n(n) << 5 | _n(d)
        t = ", ".join(reg_text(r, "x") for r in (d, n, m, a))
        return w, f"{op} {t}"
    if op in _CSEL:
        d, n, m = rs
        w = _CSEL[op] | _n(m) << 16 | CONDS.index(inst.cond) << 12 | _n(n) << 5 | _n(d)
        return w, f"{op} {reg_text(d, 'x')}, {reg_text(n, 'x')}, {reg_text(m, 'x')}, {inst.cond}"
    if op == "cset":
        (d,) = rs
        inv = CONDS.index(inst.cond) ^ 1
        w = 0x9A800400 | 31 << 16 | inv << 12 | 31 << 5 | _n(d)
        return w, f"cset {reg_text(d, 'x')}, {inst.cond}"
    if op in ("sbfm", "ubfm"):
        d, n = rs
        immr, imms = im
        w = (0x93400000 if op == "sbfm" else 0xD3400000) | _u(immr, 6, "immr") << 16
        w |= _u(imms, 6, "imms") << 10 | _n(n) << 5 | _n(d)
        return w, f"{op} {reg_text(d, 'x')}, {reg_text(n, 'x')}, #{immr}, #{imms}"
    if op in ("movz", "movn", "movk"):
        (d,) = rs
        imm, shift = im
        if shift not in (0, 16, 32, 48):
            raise EncodeError(f"{op}: shift {shift}")
        base = {"movz": 0xD2800000, "movn": 0x92800000, "movk": 0xF2800000}[op]
        w = base | (shift // 16) << 21 | _u(imm, 16, "imm16") << 5 | _n(d)
        return w, f"{op} {reg_text(d, 'x')}, #{imm}, lsl #{shift}"
    if (op, sz) in _LDST:
        return _ldst(inst, slot)
    if op in _F2:
        d, n, m = rs
        w = _F2[op] | _FTYPE[sz] << 22 | _n(m) << 16 | _n(n) << 5 | _n(d)
        return w, f"{op} {reg_text(d, sz)}, {reg_text(n, sz)}, {reg_text(m, sz)}"
    if op in _F1:
        d, n = rs
        w = _F1[op] | _FTYPE[sz] << 22 | _n(n) << 5 | _n(d)
        return w, f"{op} {reg_text(d, sz)}, {reg_text(n, sz)}"
    if op == "fmadd":
        d, n, m, a = rs
        w = 0x1F000000 | _FTYPE[sz] << 22 | _n(m) << 16 | _n(a) << 10 | _n(n) << 5 | _n(d)
        return w, f"fmadd {', '.join(reg_text(r, sz) for r in (d, n, m, a))}"
    if op == "fcmp":
        n, m = rs
        w = 0x1E202000 | _FTYPE[sz] << 22 | _n(m) << 16 | _n(n) << 5
        return w, f"fcmp {reg_text(n, sz)}, {reg_text(m, sz)}"
    if op == "fcsel":
        d, n, m = rs
        w = 0x1E200C00 | _FTYPE[sz] << 22 | _n(m) << 16 | CONDS.index(inst.cond) << 12
        w |= _n(n) << 5 | _n(d)
        return w, f"fcsel {reg_text(d, sz)}, {reg_text(n, sz)}, {reg_text(m, sz)}, {inst.cond}"
    if (op, sz) in _CVT:
        word, dv, sv = _CVT[(op, sz)]
        d, n = rs
        return word | _n(n) << 5 | _n(
            d
        ), f"{_CVT_TEXT.get(op, op)} {reg_text(d, dv)}, {reg_text(n, sv)}"
    if op == "mrs_fpcr":
        (d,) = rs
        return 0xD53B4400 | _n(d), f"mrs {reg_text(d, 'x')}, fpcr"
    if op == "msr_fpcr":
        (n,) = rs
        return 0xD51B4400 | _n(n), f"msr fpcr, {reg_text(n, 'x')}"
    if op == "blr":
        (n,) = rs
        return 0xD63F0000 | _n(n) << 5, f"blr {reg_text(n, 'x')}"
    if op == "ret":
        return 0xD65F03C0, "ret"
    if op in ("svc", "brk"):
        (imm,) = im
        base = 0xD4000001 if op == "svc" else 0xD4200000
        return base | _u(imm, 16, "imm16") << 5, f"{op} #{imm}"
    if op == "nop":
        return 0xD503201F, "nop"
    if op in ("stp", "ldp"):
        a, b, base = rs
        (off,) = im
        view = sz
        scale = 8
        if off % scale or not -64 <= off // scale < 64:
            raise EncodeError(f"{op}: offset {off}")
        word = {("stp", "x"): 0xA9000000, ("ldp", "x"): 0xA9400000}[(op, sz)]
        w = word | ((off // scale) & 0x7F) << 15 | _n(b) << 10 | _n(base) << 5 | _n(a)
        return w, f"{op} {reg_text(a, view)}, {reg_text(b, view)}, [{reg_text(base, 'x')}, #{off}]"
    raise EncodeError(f"no ARM64 form for {inst!r}")


def _vreg(r, arr: str) -> str:
    if not isinstance(r, PReg) or r.cls is not RegClass.FLOAT:
        raise EncodeError(f"{r!r} is not a physical v-register")
    return f"v{r.index}.{arr}"


def _neon(inst: A64Inst, rs: list) -> tuple[int, str]:
    op, sz = inst.op, inst.sz
    name = op[2:]
    if op in _V3 or op in _V2:
        if sz not in _VSZ:
            raise EncodeError(f"{inst!r}: arrangement {sz}")
        word = (_V3.get(op) or _V2[op]) | _VSZ[sz] << 22
        if op in _V3:
            d, n, m = rs
            w = word | _n(m) << 16 | _n(n) << 5 | _n(d)
            return w, f"{name} {_vreg(d, sz)}, {_vreg(n, sz)}, {_vreg(m, sz)}"
        d, n = rs
        return word | _n(n) << 5 | _n(d), f"{name} {_vreg(d, sz)}, {_vreg(n, sz)}"
    if op in _VB3:
        d, n, m = rs
        w = _VB3[op] | _n(m) << 16 | _n(n) << 5 | _n(d)
        return w, f"{name} {_vreg(d, '16b')}, {_vreg(n, '16b')}, {_vreg(m, '16b')}"
    if op in _VB2:
        d, n = rs
        return _VB2[op] | _n(n) << 5 | _n(d), f"{name} {_vreg(d, '16b')}, {_vreg(n, '16b')}"
    if op in ("v.dup_elem", "v.dup_gen"):
        d, n = rs
        if sz not in _DUP_IMM5:
            raise EncodeError(f"{inst!r}: arrangement {sz}")
        if op == "v.dup_elem":  # dup vd.4s, vn.s[0]
            w = 0x4E000400 | _DUP_IMM5[sz] << 16 | _n(n) << 5 | _n(d)
            return w, f"dup {_vreg(d, sz)}, {_vreg(n, sz[-1])}[0]"
        if n.cls is not RegClass.INT:  # type: ignore[union-attr]
            raise EncodeError(f"{inst!r}: dup from a general register")
        w = 0x4E000C00 | _DUP_IMM5[sz] << 16 | _n(n) << 5 | _n(d)
        return w, f"dup {_vreg(d, sz)}, {reg_text(n, 'w' if sz == '4s' else 'x')}"
    raise EncodeError(f"no ARM64 form for {inst!r}")


def _ldst(inst: A64Inst, slot: SlotResolver | None) -> tuple[int, str]:
    word, size = _LDST[(inst.op, inst.sz)]
    t = inst.ops[0].reg  # type: ignore[union-attr]
    m = inst.ops[1]
    tt = reg_text(t, inst.sz)
    if isinstance(m, SlotOp):
        if slot is None:
            raise EncodeError(f"{inst!r}: a spill slot needs a frame")
        m = MemOp(R.SP, None, slot(m))
    if not isinstance(m, MemOp):
        raise EncodeError(f"{inst!r}: the second operand is not memory")
    if m.index is None:
        if m.disp % size or not 0 <= m.disp // size < 4096:
            raise EncodeError(f"{inst!r}: offset {m.disp} is not a scaled unsigned 12-bit one")
        w = word | (m.disp // size) << 10 | _n(m.base) << 5 | _n(t)
        off = f", #{m.disp}" if m.disp else ""
        return w, f"{inst.op} {tt}, [{reg_text(m.base, 'x')}{off}]"
    s = 1 if (m.shift and size > 1) else 0
    w = (word - 0x01000000) | 0x00206800 | _n(m.index) << 16 | s << 12 | _n(m.base) << 5 | _n(t)
    shift = f", lsl #{size.bit_length() - 1}" if s else ""
    return w, f"{inst.op} {tt}, [{reg_text(m.base, 'x')}, {reg_text(m.index, 'x')}{shift}]"


def encode_branch(inst: A64Inst, delta: int = 0) -> tuple[int, str]:
    """A branch word with displacement ``delta`` (bytes from the instruction) and its text
    (``.+delta``, which GNU as resolves the same way)."""
    rel = f".{delta:+d}"
    if inst.op == "b":
        return 0x14000000 | ((delta >> 2) & 0x3FFFFFF), f"b {rel}"
    if inst.op == "b.cond":
        return 0x54000000 | ((delta >> 2) & 0x7FFFF) << 5 | CONDS.index(
            inst.cond
        ), f"b.{inst.cond} {rel}"
    if inst.op in ("cbz", "cbnz"):
        r = inst.ops[0].reg  # type: ignore[union-attr]
        base = 0xB4000000 if inst.op == "cbz" else 0xB5000000
        return base | ((delta >> 2) & 0x7FFFF) << 5 | _n(r), f"{inst.op} {reg_text(r, 'x')}, {rel}"
    raise EncodeError(f"{inst!r} is not a branch")


def is_branch(inst: A64Inst) -> bool:
    return any(isinstance(op, LabelOp) for op in inst.ops)
