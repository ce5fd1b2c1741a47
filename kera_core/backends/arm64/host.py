"""Running the arm64 artifact natively, on an ARM64 host: the same bytes, JIT-loaded into
this process (kera_core/native/jit.py maps them W^X and synchronises the instruction cache)
and called through ctypes by the shared host runner (kera_core/native/host.py), with the
ctx cells holding the C library's ``fmod``/``fmodf``/``memcpy`` and ctypes callbacks for
alloc, free and print — where the unicorn runner (emulate.py) holds ``svc`` stubs.

This machine is x86-64, so this path has not run here: :func:`runs_natively` is false and
``kera run --target arm64`` uses the emulator.
"""

from __future__ import annotations

import platform

from kera_core.backends.arm64 import select as S
from kera_core.interp.api import RunResult
from kera_core.native import host
from kera_core.native.host import Loaded

CELLS = host.HostCells(
    target="arm64",
    count=S.CTX_CELLS,
    steps=S.CTX_STEPS,
    alloc=S.CTX_ALLOC,
    free=S.CTX_FREE,
    memcpy=S.CTX_MEMCPY,
    funcs=S.CTX_FUNCS,
    print=S.CTX_PRINT,
    c_math=((S.CTX_FMOD, "fmod"), (S.CTX_FMODF, "fmodf")),  # fma is fmadd: no call
)


def runs_natively() -> bool:
    """Whether this process runs on an ARM64 Linux host."""
    return platform.system() == "Linux" and platform.machine() in ("aarch64", "arm64")


def run(
    codes: list[tuple[str, bytes]], source, fn: str, inputs: dict, dims=None, **kw
) -> RunResult:
    loaded = Loaded(codes)
    try:
        return host.run(loaded, CELLS, source, fn, inputs, dims, **kw)
    finally:
        loaded.close()
