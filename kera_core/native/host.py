"""Running native code on this machine, in this process: the JIT-loaded functions, the
run's context cells, inputs and outputs. Shared by every native backend whose code runs on
the host CPU (x86-64 here; ARM64 on an ARM64 host) — only the ctx cell layout differs
(:class:`HostCells`).

The code runs on the calling thread through ctypes. It never takes the process down: every
index and integer division is checked by the loop program, loops count steps against the
context's budget, and every allocation goes through :class:`Heap`, which refuses requests
past the run's memory limit (R0009) and frees whatever a failed run left.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
import time
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from kera_core.interp.api import RunResult, _Tee
from kera_core.interp.errors import InterpError
from kera_core.interp.values import DTYPES
from kera_core.loops import run_abi
from kera_core.loops.run import prepare
from kera_core.native import jit

DEFAULT_MEMORY = 1 << 30  # bytes a run may allocate
NO_LIMIT = 1 << 62

_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_PRINT = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p)


@dataclass(frozen=True)
class HostCells:
    """Where a backend's code finds each thing in its ctx cells."""

    target: str  # for messages
    count: int
    steps: int
    alloc: int
    free: int
    memcpy: int
    funcs: int  # a table of every function's entry address, in program order
    print: int
    c_math: tuple[tuple[int, str], ...]  # (cell, C library function): fmod, fmodf, fma, …


class Printer:
    """`print` from native code: the site names the loop program's Print statement; the
    host formats exactly as the interpreter does."""

    def __init__(self, program, out: TextIO) -> None:
        self.sites = run_abi.print_sites(program)
        self.out = out
        self.callback = _PRINT(self._print)

    def _print(self, site: int, value: int, offset: int, shape_at: int) -> None:
        st = self.sites[int(site)]
        rank = len(st.shape)
        dims = list((ctypes.c_int64 * rank).from_address(shape_at)) if rank else []
        self.out.write(run_abi.printed_text(st, value, offset, dims, ctypes.string_at))


_C: dict[str, int] | None = None


def _c_function(name: str) -> int:
    global _C
    if _C is None:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        libm = ctypes.CDLL(ctypes.util.find_library("m"))
        _C = {
            n: ctypes.cast(getattr(libm, n), ctypes.c_void_p).value
            for n in ("fmod", "fmodf", "fma", "fmaf")
        }
        _C["memcpy"] = ctypes.cast(libc.memcpy, ctypes.c_void_p).value
    return _C[name]


class BlockPool:
    """Large blocks of finished runs (and of buffers a run freed), kept for the next
    allocation: memory the OS handed out once is not faulted in and zeroed page by page
    again (a fresh 40 MB result costs about as much in page faults as `a*x+y` costs in
    arithmetic). A block is handed out again only when nothing outside the pool holds it —
    a result the caller still has is a view of its block, so that block waits — and is
    zeroed first. At most ``capacity`` bytes are kept; the oldest go first."""

    MIN_BYTES = 1 << 20  # smaller blocks: numpy's allocator is as good
    _FREE_REFS = 3  # the pool's list, the loop variable, getrefcount's argument

    def __init__(self, capacity: int = 512 << 20) -> None:
        self.capacity = capacity
        self.blocks: list[np.ndarray] = []
        self.bytes = 0
        self.lock = threading.Lock()

    def take(self, need: int) -> np.ndarray | None:
        """A free block of at least ``need`` bytes (and not much more), or None."""
        if need < self.MIN_BYTES:
            return None
        with self.lock:
            for k in range(len(self.blocks)):
                raw = self.blocks[k]
                if need <= raw.nbytes <= 2 * need and sys.getrefcount(raw) <= self._FREE_REFS:
                    del self.blocks[k]
                    self.bytes -= raw.nbytes
                    return raw
        return None

    def give(self, raw: np.ndarray) -> None:
        if raw.nbytes < self.MIN_BYTES or raw.nbytes > self.capacity:
            return
        with self.lock:
            self.blocks.append(raw)
            self.bytes += raw.nbytes
            while self.bytes > self.capacity:
                self.bytes -= self.blocks.pop(0).nbytes


POOL = BlockPool()


class Heap:
    """The run's allocations: zeroed, 64-byte aligned, bounded, all freed at the end (large
    blocks go back to :data:`POOL` for later runs)."""

    def __init__(self, limit: int, pool: BlockPool = POOL) -> None:
        self.limit = limit
        self.used = 0
        self.live: dict[int, tuple[object, int]] = {}
        self.pool = pool
        self.alloc_cb = _ALLOC(self._alloc)
        self.free_cb = _FREE(self._free)

    def _alloc(self, nbytes: int) -> int:
        n = max(int(nbytes), 1)
        if self.used + n > self.limit:
            return 0
        raw = self.pool.take(n + 64)
        if raw is None:
            raw = np.zeros(n + 64, dtype=np.uint8)
            addr = raw.ctypes.data
            addr += (-addr) % 64
        else:
            addr = raw.ctypes.data
            addr += (-addr) % 64
            start = addr - raw.ctypes.data
            raw[start : start + n].fill(0)
        self.live[addr] = (raw, n)
        self.used += n
        return addr

    def _free(self, addr: int) -> None:
        got = self.live.pop(int(addr or 0), None)
        if got is not None:
            self.used -= got[1]
            self.pool.give(got[0])

    def close(self) -> None:
        """The run is over: every block still live goes to the pool (a result's block is
        taken again only once the caller drops the result)."""
        for raw, _ in self.live.values():
            self.pool.give(raw)
        self.live.clear()

    def take(self, addr: int, elem: str, count: int, params: dict, target: str) -> np.ndarray:
        """The `count` elements at `addr` as an array that owns them: a view of the heap
        block (kept alive by the view) or of the parameter array, never a dangling pointer."""
        dt = np.dtype(DTYPES[elem])
        if count == 0:
            return np.zeros(0, dtype=dt)
        got = self.live.get(addr)
        if got is not None:
            raw = got[0]
            start = addr - raw.ctypes.data
            return raw[start : start + count * dt.itemsize].view(dt)
        arr = params.get(addr)
        if arr is not None:
            return arr[:count]
        raise InterpError("R0008", f"{target}: a result points outside the run's memory")


class Loaded:
    """The functions of one artifact in executable memory, and their table."""

    def __init__(self, codes: list[tuple[str, bytes]]) -> None:
        self.code = {name: jit.load(c) for name, c in codes}
        self.table = (ctypes.c_uint64 * max(len(codes), 1))(
            *[self.code[n].address for n, _ in codes]
        )
        self.entry = {
            name: self.code[name].function(ctypes.c_int64, (ctypes.c_void_p, ctypes.c_void_p))
            for name, _ in codes
        }

    def close(self) -> None:
        for c in self.code.values():
            c.close()


def run(
    loaded: Loaded,
    cells_of: HostCells,
    source,
    fn_name: str,
    inputs: dict,
    dims: dict | None = None,
    *,
    stdout: TextIO | None = None,
    max_steps: int | None = None,
    memory_limit: int = DEFAULT_MEMORY,
    call_times: list | None = None,
) -> RunResult:
    sig, args, bound, prog = prepare(source, fn_name, inputs, dims)
    lf = prog.functions[fn_name]
    params_at: dict[int, np.ndarray] = {}

    def put(arr: np.ndarray) -> int:
        # value_in made a private, C-ordered, canonicalised copy: the code may write it
        if arr.size == 0:
            arr = np.zeros(1, dtype=arr.dtype)  # a valid address for an empty buffer
        params_at[arr.ctypes.data] = arr
        return arr.ctypes.data

    cells = run_abi.input_cells(sig, args, bound, lf, put)
    n_out = sum(len(gr) for gr in lf.results)
    io = (ctypes.c_uint64 * (len(cells) + n_out))(*cells)
    heap = Heap(memory_limit)
    c = cells_of
    ctx = (ctypes.c_uint64 * c.count)()
    ctx[c.steps] = max_steps if max_steps is not None else NO_LIMIT
    ctx[c.alloc] = ctypes.cast(heap.alloc_cb, ctypes.c_void_p).value
    ctx[c.free] = ctypes.cast(heap.free_cb, ctypes.c_void_p).value
    for k, name in c.c_math:
        ctx[k] = _c_function(name)
    ctx[c.memcpy] = _c_function("memcpy")
    ctx[c.funcs] = ctypes.addressof(loaded.table)
    tee = _Tee(stdout)
    printer = Printer(prog, tee)
    ctx[c.print] = ctypes.cast(printer.callback, ctypes.c_void_p).value
    t0 = time.perf_counter()
    rc = loaded.entry[fn_name](ctypes.addressof(io), ctypes.addressof(ctx))
    if call_times is not None:  # bench/x86_bench.py: the native call alone
        call_times.append(time.perf_counter() - t0)
    try:
        run_abi.check_rc(rc, c.target)

        def read(addr: int, elem: str, count: int) -> np.ndarray:
            return heap.take(addr, elem, count, params_at, c.target)

        return run_abi.result_of(sig, bound, lf, list(io), len(cells), read, tee.buf.getvalue())
    finally:
        heap.close()
