"""The W^X JIT loader and CPU feature detection."""

from __future__ import annotations

import ctypes
import gc

import pytest
from iced_x86 import Code, Instruction, Register

from kera_core.native import cpu, jit
from kera_core.native.buffer import CodeBuffer
from kera_core.native.x86.emit import encode
from tests.tools import native_only

pytestmark = native_only()


def const_code(value: int) -> bytes:
    buf = CodeBuffer()
    encode(buf, Instruction.create_reg_i64(Code.MOV_R64_IMM64, Register.RAX, value))
    encode(buf, Instruction.create(Code.RETNQ))
    return buf.finish().code


def test_calls_a_function_returning_a_constant():
    with jit.load(const_code(-123456789012345)) as code:
        f = code.function(ctypes.c_int64)
        assert f() == -123456789012345


def test_mapping_is_read_execute_then_gone():
    code = jit.load(const_code(7))
    addr = code.address
    assert jit.mapping_permissions(addr) == "r-xp"
    assert code.size % 4096 == 0
    code.close()
    perms = jit.mapping_permissions(addr)
    assert (
        perms is None or "x" not in perms
    )  # unmapped (the range may be reused, never as our code)


def test_never_writable_and_executable(monkeypatch):
    lib = jit._lib()
    calls = []

    class Spy:
        def mmap(self, addr, size, prot, flags, fd, off):
            calls.append(("mmap", prot))
            return lib.mmap(addr, size, prot, flags, fd, off)

        def mprotect(self, addr, size, prot):
            calls.append(("mprotect", prot))
            return lib.mprotect(addr, size, prot)

        def munmap(self, addr, size):
            calls.append(("munmap", 0))
            return lib.munmap(addr, size)

    monkeypatch.setattr(jit, "_libc", Spy())
    code = jit.load(const_code(1))
    assert code.function(ctypes.c_int64)() == 1
    code.close()
    assert [c for c, _ in calls] == ["mmap", "mprotect", "munmap"]
    for _, prot in calls:
        assert not (prot & jit.PROT_WRITE and prot & jit.PROT_EXEC)
    assert calls[0][1] == jit.PROT_READ | jit.PROT_WRITE
    assert calls[1][1] == jit.PROT_READ | jit.PROT_EXEC


def test_call_after_close_is_an_error_not_a_crash():
    code = jit.load(const_code(5))
    f = code.function(ctypes.c_int64)
    code.close()
    code.close()  # idempotent
    with pytest.raises(jit.JITError, match="unmapped"):
        f()
    with pytest.raises(jit.JITError):
        code.function(ctypes.c_int64)


def test_garbage_collection_unmaps_but_functions_keep_code_alive():
    code = jit.load(const_code(9))
    addr = code.address
    f = code.function(ctypes.c_int64)
    del code
    gc.collect()
    assert jit.mapping_permissions(addr) == "r-xp"  # f still owns it
    assert f() == 9
    del f
    gc.collect()
    perms = jit.mapping_permissions(addr)
    assert perms is None or "x" not in perms


def test_labels_offsets_and_bad_input():
    buf = CodeBuffer()
    encode(buf, Instruction.create_reg_i32(Code.MOV_R32_IMM32, Register.EAX, 1))
    encode(buf, Instruction.create(Code.RETNQ))
    second = buf.new_label("second")
    buf.bind(second)
    encode(buf, Instruction.create_reg_i32(Code.MOV_R32_IMM32, Register.EAX, 2))
    encode(buf, Instruction.create(Code.RETNQ))
    fin = buf.finish()
    with jit.load(fin.code, fin.labels) as code:
        assert code.function(ctypes.c_int32)() == 1
        assert code.function(ctypes.c_int32, (), second)() == 2
        with pytest.raises(jit.JITError, match="unknown label"):
            code.function(ctypes.c_int32, (), "nope")
        with pytest.raises(jit.JITError, match="outside"):
            code.address_of(10_000)
    with pytest.raises(jit.JITError):
        jit.load(b"")


def _proc_flags() -> set[str]:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def test_cpu_features_agree_with_proc_cpuinfo():
    feats = cpu.detect()
    assert feats is cpu.detect()  # cached
    assert feats.source == "cpuid"
    flags = _proc_flags()
    for name in ("sse2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"):
        assert getattr(feats, name) == (name in flags), name
    assert feats.os_ymm == ("avx" in flags)
    assert cpu.read_proc_cpuinfo().avx2 == feats.avx2
    if feats.avx:
        assert feats.xcr0 is not None and feats.xcr0 & 0b110 == 0b110


def test_avx2_and_fma_agree_with_proc_cpuinfo():
    flags = _proc_flags()
    feats = cpu.detect()
    assert feats.avx2 == ("avx2" in flags) and feats.fma == ("fma" in flags)


def test_feature_decoding_respects_the_os_state():
    leaf1 = (0, 0, (1 << 28) | (1 << 27) | (1 << 12), 1 << 26)  # avx, osxsave, fma; sse2
    leaf7 = (0, (1 << 5) | (1 << 16) | (1 << 17) | (1 << 30) | (1 << 31), 0, 0)
    full = cpu.features_from_cpuid(leaf1, leaf7, 0b1110_0111)
    assert full.avx2 and full.fma and full.avx512 and full.os_zmm
    no_zmm = cpu.features_from_cpuid(leaf1, leaf7, 0b0000_0111)
    assert no_zmm.avx2 and not no_zmm.avx512f and not no_zmm.os_zmm
    no_ymm = cpu.features_from_cpuid(leaf1, leaf7, 0b0000_0011)
    assert no_ymm.sse2 and not no_ymm.avx and not no_ymm.avx2 and not no_ymm.fma
    no_xsave = cpu.features_from_cpuid((0, 0, 1 << 28, 1 << 26), leaf7, None)
    assert not no_xsave.avx and no_xsave.xcr0 is None
