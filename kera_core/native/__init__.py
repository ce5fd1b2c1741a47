"""The shared native machine layer under the x86-64 and ARM64 backends.

Modules: :mod:`.vcode` (virtual-register code and the target description),
:mod:`.liveness`, :mod:`.regalloc` (linear scan), :mod:`.schedule` (list scheduler),
:mod:`.buffer` (code buffer, labels, fix-ups, constant pool), :mod:`.abi` (calling
conventions and frame planning), :mod:`.jit` (W^X loader), :mod:`.cpu` (x86 feature
detection), and the ISA subpackages :mod:`.x86` and :mod:`.arm64`.  See ``docs/native.md``.
"""
