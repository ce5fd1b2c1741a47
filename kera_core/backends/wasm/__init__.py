"""The WebAssembly backend: WAT selected from the loop program, assembled by wasmtime, run
in wasmtime.

`lower_wat` emits one exported function and the functions it calls (docs/targets/wasm.md);
`assemble` turns the text into a module with the graph fingerprint and the semantics version
in custom sections;
`run_wasm` runs it and returns the interpreter's RunResult form; `unsupported` says what
cannot be compiled.
"""

from __future__ import annotations

import wasmtime

from kera_core.backends.wasm.compile import lower_wat, unsupported
from kera_core.backends.wasm.runtime import WasmRunError, run_wasm
from kera_core.ir.semantics import SEMANTICS_VERSION

SECTION = "kera.fingerprint"
SEMANTICS_SECTION = "kera.semantics"  # LEB128: the semantics version the module was built under


def _leb(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def custom_section(name: str, payload: bytes) -> bytes:
    body = _leb(len(name.encode())) + name.encode() + payload
    return b"\x00" + _leb(len(body)) + body


def assemble(wat: str, fingerprint: bytes) -> bytes:
    """The binary module, with ``kera.fingerprint`` (the 32 raw bytes of the graph hash) and
    ``kera.semantics`` (the semantics version, LEB128)."""
    return (
        bytes(wasmtime.wat2wasm(wat))
        + custom_section(SECTION, fingerprint)
        + custom_section(SEMANTICS_SECTION, _leb(SEMANTICS_VERSION))
    )


def read_fingerprint(wasm: bytes) -> bytes | None:
    """The payload of the ``kera.fingerprint`` custom section, if the module has one."""
    return _custom(wasm, SECTION)


def read_semantics(wasm: bytes) -> int:
    """The semantics version a module was built under (1: before the section existed)."""
    payload = _custom(wasm, SEMANTICS_SECTION)
    if not payload:
        return 1
    n, shift = 0, 0
    for b in payload:
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    return n


def _custom(wasm: bytes, name: str) -> bytes | None:
    """The payload of the custom section ``name``, if the module has one."""
    if wasm[:4] != b"\x00asm":
        return None
    i = 8
    while i < len(wasm):
        sid = wasm[i]
        i += 1
        size, shift = 0, 0
        while True:
            b = wasm[i]
            i += 1
            size |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        end = i + size
        if sid == 0:
            nlen, shift, j = 0, 0, i
            while True:
                b = wasm[j]
                j += 1
                nlen |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            if wasm[j : j + nlen] == name.encode():
                return wasm[j + nlen : end]
        i = end
    return None


__all__ = [
    "SECTION",
    "SEMANTICS_SECTION",
    "read_semantics",
    "WasmRunError",
    "assemble",
    "lower_wat",
    "read_fingerprint",
    "run_wasm",
    "unsupported",
]
