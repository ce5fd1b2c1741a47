"""Running x86-64 code in this process: the ctx cell layout of this backend's code, on the
shared host runner (kera_core/native/host.py: the JIT-loaded functions, the heap, print,
inputs and outputs)."""

from __future__ import annotations

from kera_core.backends.x86_64 import select as S
from kera_core.interp.api import RunResult
from kera_core.native import host
from kera_core.native.host import DEFAULT_MEMORY, NO_LIMIT, Loaded

__all__ = ["CELLS", "DEFAULT_MEMORY", "NO_LIMIT", "Loaded", "run"]

CELLS = host.HostCells(
    target="x86_64",
    count=S.CTX_CELLS,
    steps=S.CTX_STEPS,
    alloc=S.CTX_ALLOC,
    free=S.CTX_FREE,
    memcpy=S.CTX_MEMCPY,
    funcs=S.CTX_FUNCS,
    print=S.CTX_PRINT,
    # the SSE2 level calls the C library's correctly rounded fma (AVX2 has vfmadd)
    c_math=((S.CTX_FMOD, "fmod"), (S.CTX_FMODF, "fmodf"), (S.CTX_FMA, "fma"), (S.CTX_FMAF, "fmaf")),
)


def run(
    loaded: Loaded, source, fn_name: str, inputs: dict, dims: dict | None = None, **kw
) -> RunResult:
    """Run `fn_name` of a loaded x86-64 artifact (keywords as :func:`host.run`)."""
    return host.run(loaded, CELLS, source, fn_name, inputs, dims, **kw)
