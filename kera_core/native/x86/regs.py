"""The x86-64 register file as :class:`PReg` values, and their iced-x86 spellings."""

from __future__ import annotations

from ..vcode import PReg, RegClass

GPR_NAMES = ("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi") + tuple(
    f"r{i}" for i in range(8, 16)
)
GPRS: tuple[PReg, ...] = tuple(PReg(n, RegClass.INT, i) for i, n in enumerate(GPR_NAMES))
(RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11, R12, R13, R14, R15) = GPRS

# One FLOAT allocation unit per vector register number: xmm{i}, ymm{i} and zmm{i} are views.
XMMS: tuple[PReg, ...] = tuple(PReg(f"xmm{i}", RegClass.FLOAT, i) for i in range(32))
XMM0, XMM1, XMM2, XMM3, XMM4, XMM5, XMM6, XMM7 = XMMS[:8]
XMM8, XMM9, XMM10, XMM11, XMM12, XMM13, XMM14, XMM15 = XMMS[8:16]

FLAGS = PReg("rflags", RegClass.FLAGS, 0)

# The AVX-512 opmask registers (never allocated: an instruction names the one it uses).
KS: tuple[PReg, ...] = tuple(PReg(f"k{i}", RegClass.MASK, i) for i in range(8))

_GPR_VIEWS = {
    64: GPR_NAMES,
    32: ("eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi")
    + tuple(f"r{i}d" for i in range(8, 16)),
    16: ("ax", "cx", "dx", "bx", "sp", "bp", "si", "di") + tuple(f"r{i}w" for i in range(8, 16)),
    8: ("al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil") + tuple(f"r{i}l" for i in range(8, 16)),
}
_VEC_VIEWS = {16: "xmm", 32: "ymm", 64: "zmm"}


def iced_register(reg: PReg, view: int) -> int:
    """The iced-x86 ``Register`` value for ``reg`` seen at ``view``: a GPR width in bits
    (64/32/16/8) or a vector width in bytes (16 = xmm, 32 = ymm, 64 = zmm); an opmask
    register has one view (``view`` is ignored)."""
    from iced_x86 import Register

    if reg.cls is RegClass.INT:
        names = _GPR_VIEWS.get(view)
        if names is None:
            raise ValueError(f"no {view}-bit view of general register {reg!r}")
        return getattr(Register, names[reg.index].upper())
    if reg.cls is RegClass.FLOAT:
        prefix = _VEC_VIEWS.get(view)
        if prefix is None:
            raise ValueError(f"no {view}-byte view of vector register {reg!r}")
        return getattr(Register, f"{prefix}{reg.index}".upper())
    if reg.cls is RegClass.MASK:
        return getattr(Register, f"K{reg.index}")
    raise ValueError(f"{reg!r} has no encodable register operand")
