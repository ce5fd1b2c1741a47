"""x86-64 CPU feature detection.

:func:`detect` runs two tiny JIT'd stubs (encoded with iced-x86): ``cpuid`` for the feature
bits and, when the OS has enabled XSAVE, ``xgetbv(0)`` for XCR0 — whether the OS saves the
YMM and ZMM state across context switches.  An ISA extension is reported *usable* only when
the CPU has it and the OS enabled its register state.  If the JIT is unavailable the flags
come from ``/proc/cpuinfo`` (the kernel already hides extensions it does not support).  The
result is a frozen dataclass, computed once per process.
"""

from __future__ import annotations

import ctypes
import functools
import platform
from dataclasses import dataclass


@dataclass(frozen=True)
class CpuFeatures:
    source: str  # "cpuid", "proc" or "none"
    sse2: bool = False
    avx: bool = False
    avx2: bool = False
    fma: bool = False
    avx512f: bool = False
    avx512bw: bool = False
    avx512dq: bool = False
    avx512vl: bool = False
    os_ymm: bool = False  # XCR0 has the SSE and AVX state bits
    os_zmm: bool = False  # XCR0 has the opmask and both ZMM state bits
    xcr0: int | None = None
    vendor: str = ""

    @property
    def avx512(self) -> bool:
        """F, BW, DQ and VL together: what a zmm backend would require."""
        return self.avx512f and self.avx512bw and self.avx512dq and self.avx512vl


XCR0_SSE = 1 << 1
XCR0_AVX = 1 << 2
XCR0_ZMM = (1 << 5) | (1 << 6) | (1 << 7)  # opmask, ZMM_Hi256, Hi16_ZMM


def _bit(word: int, n: int) -> bool:
    return bool((word >> n) & 1)


def features_from_cpuid(
    leaf1: tuple[int, int, int, int],
    leaf7: tuple[int, int, int, int],
    xcr0: int | None,
    vendor: str = "",
    source: str = "cpuid",
) -> CpuFeatures:
    """Decode raw registers: ``leaf1``/``leaf7`` are (eax, ebx, ecx, edx) of cpuid leaf 1 and
    leaf 7 sub-leaf 0; ``xcr0`` is ``None`` when the OS has not enabled XSAVE."""
    _, _, ecx1, edx1 = leaf1
    _, ebx7, _, _ = leaf7
    osxsave = _bit(ecx1, 27)
    x = xcr0 if (osxsave and xcr0 is not None) else 0
    os_ymm = x & (XCR0_SSE | XCR0_AVX) == (XCR0_SSE | XCR0_AVX)
    os_zmm = os_ymm and x & XCR0_ZMM == XCR0_ZMM
    avx = _bit(ecx1, 28) and os_ymm
    return CpuFeatures(
        source=source,
        sse2=_bit(edx1, 26),
        avx=avx,
        avx2=avx and _bit(ebx7, 5),
        fma=avx and _bit(ecx1, 12),
        avx512f=os_zmm and _bit(ebx7, 16),
        avx512dq=os_zmm and _bit(ebx7, 17),
        avx512bw=os_zmm and _bit(ebx7, 30),
        avx512vl=os_zmm and _bit(ebx7, 31),
        os_ymm=os_ymm,
        os_zmm=os_zmm,
        xcr0=xcr0 if osxsave else None,
        vendor=vendor,
    )


def _stubs():
    """JIT the cpuid and xgetbv stubs; returns (loaded code, cpuid fn, xgetbv fn)."""
    from iced_x86 import Code, Instruction, MemoryOperand, Register

    from . import jit
    from .buffer import CodeBuffer
    from .x86.emit import encode

    buf = CodeBuffer("cpu-stubs")
    e = functools.partial(encode, buf)
    # void cpuid(uint32 leaf [edi], uint32 subleaf [esi], uint32 out[4] [rdx])
    e(Instruction.create_reg(Code.PUSH_R64, Register.RBX))  # rbx is callee-saved
    e(Instruction.create_reg_reg(Code.MOV_R64_RM64, Register.R8, Register.RDX))
    e(Instruction.create_reg_reg(Code.MOV_R32_RM32, Register.EAX, Register.EDI))
    e(Instruction.create_reg_reg(Code.MOV_R32_RM32, Register.ECX, Register.ESI))
    e(Instruction.create(Code.CPUID))
    for i, reg in enumerate((Register.EAX, Register.EBX, Register.ECX, Register.EDX)):
        m = MemoryOperand(Register.R8, displ=4 * i, displ_size=1 if i else 0)
        e(Instruction.create_mem_reg(Code.MOV_RM32_R32, m, reg))
    e(Instruction.create_reg(Code.POP_R64, Register.RBX))
    e(Instruction.create(Code.RETNQ))
    xgetbv_at = buf.offset
    # uint64 xgetbv(uint32 xcr [edi])
    e(Instruction.create_reg_reg(Code.MOV_R32_RM32, Register.ECX, Register.EDI))
    e(Instruction.create(Code.XGETBV))
    e(Instruction.create_reg_u32(Code.SHL_RM64_IMM8, Register.RDX, 32))
    e(Instruction.create_reg_reg(Code.OR_R64_RM64, Register.RAX, Register.RDX))
    e(Instruction.create(Code.RETNQ))
    fin = buf.finish()
    code = jit.load(fin.code)
    u32 = ctypes.c_uint32
    cpuid = code.function(None, (u32, u32, ctypes.POINTER(u32)))
    xgetbv = code.function(ctypes.c_uint64, (u32,), xgetbv_at)
    return code, cpuid, xgetbv


def read_cpuid() -> CpuFeatures:
    """Features from the JIT'd cpuid/xgetbv stubs (raises if the JIT is unavailable)."""
    code, cpuid_fn, xgetbv_fn = _stubs()
    try:
        out = (ctypes.c_uint32 * 4)()

        def cpuid(leaf: int, sub: int = 0) -> tuple[int, int, int, int]:
            cpuid_fn(leaf, sub, out)
            return out[0], out[1], out[2], out[3]

        l0 = cpuid(0)
        vendor = b"".join(r.to_bytes(4, "little") for r in (l0[1], l0[3], l0[2])).decode(
            "ascii", "replace"
        )
        leaf1 = cpuid(1)
        leaf7 = cpuid(7, 0) if l0[0] >= 7 else (0, 0, 0, 0)
        xcr0 = int(xgetbv_fn(0)) if _bit(leaf1[2], 27) else None
        return features_from_cpuid(leaf1, leaf7, xcr0, vendor, "cpuid")
    finally:
        code.close()


def read_proc_cpuinfo(path: str = "/proc/cpuinfo") -> CpuFeatures:
    """Features from the ``flags`` line of ``/proc/cpuinfo``."""
    flags: set[str] = set()
    vendor = ""
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "flags" and not flags:
                flags = set(value.split())
            elif key == "vendor_id" and not vendor:
                vendor = value.strip()
    os_ymm = "avx" in flags
    os_zmm = "avx512f" in flags
    return CpuFeatures(
        source="proc",
        sse2="sse2" in flags,
        avx="avx" in flags,
        avx2="avx2" in flags,
        fma="fma" in flags,
        avx512f="avx512f" in flags,
        avx512bw="avx512bw" in flags,
        avx512dq="avx512dq" in flags,
        avx512vl="avx512vl" in flags,
        os_ymm=os_ymm,
        os_zmm=os_zmm,
        vendor=vendor,
    )


def _is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


@functools.cache
def detect() -> CpuFeatures:
    """This machine's usable x86-64 features (cached).  Non-x86 hosts get ``source="none"``."""
    if not _is_x86_64():
        return CpuFeatures(source="none")
    from .jit import JITError

    try:
        return read_cpuid()
    except (JITError, OSError, ImportError):
        try:
            return read_proc_cpuinfo()
        except OSError:
            return CpuFeatures(source="none")
