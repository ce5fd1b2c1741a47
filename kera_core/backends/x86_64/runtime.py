"""Running x86-64 code in this process: the JIT, the run's context, inputs and outputs.

The code runs on the calling thread through ctypes. It never takes the process down:
every index and integer division is checked by the loop program, loops count steps against
the context's budget, and every allocation goes through :class:`Heap`, which refuses
requests past the run's memory limit (R0009) and frees whatever a failed run left.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from typing import TextIO

import numpy as np

from kera_core.backends.x86_64 import select as S
from kera_core.interp import printing
from kera_core.interp.api import Output, RunResult, _Tee
from kera_core.interp.errors import InterpError
from kera_core.interp.fp import canon
from kera_core.interp.values import DTYPES, concrete_type, value_out
from kera_core.ir.types import Struct, strip_ref
from kera_core.loops import ir
from kera_core.loops.interp import imm_value
from kera_core.loops.run import flatten_value, prepare
from kera_core.native import jit

DEFAULT_MEMORY = 1 << 30  # bytes a run may allocate
NO_LIMIT = 1 << 62
CODE_NAMES = {v: k for k, v in S.ERROR_NUMBERS.items()}

_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_uint64)
_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_PRINT = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_void_p)


class Printer:
    """`print` from native code: the site names the loop program's Print statement; the
    runtime formats exactly as the interpreter does (interp/printing.py)."""

    def __init__(self, program, out: TextIO) -> None:
        self.sites = S.print_sites(program)
        self.out = out
        self.callback = _PRINT(self._print)

    def _print(self, site: int, value: int, offset: int, shape_at: int) -> None:
        st = self.sites[int(site)]
        if st.text is not None:
            self.out.write(st.text)
            return
        if isinstance(st.value, ir.Buf):
            rank = len(st.shape)
            dims = list((ctypes.c_int64 * rank).from_address(shape_at)) if rank else []
            dt = np.dtype(DTYPES[st.value.elem])
            count = int(np.prod(dims)) if dims else 1
            if count:
                raw = (ctypes.c_char * (count * dt.itemsize)).from_address(
                    value + offset * dt.itemsize
                )
                arr = np.frombuffer(raw, dtype=dt, count=count).reshape(dims)
            else:
                arr = np.zeros(dims, dtype=dt)
            self.out.write(printing.format_value(canon(arr) if dt.kind == "f" else arr))
            return
        self.out.write(printing.format_value(_from_cell(st.value.type, value)))


def _c_functions() -> dict[str, int]:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    return {
        "fmod": ctypes.cast(libm.fmod, ctypes.c_void_p).value,
        "fmodf": ctypes.cast(libm.fmodf, ctypes.c_void_p).value,
        "fma": ctypes.cast(libm.fma, ctypes.c_void_p).value,
        "fmaf": ctypes.cast(libm.fmaf, ctypes.c_void_p).value,
        "memcpy": ctypes.cast(libc.memcpy, ctypes.c_void_p).value,
    }


_C = None


class Heap:
    """The run's allocations: zeroed, 64-byte aligned, bounded, all freed at the end."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.live: dict[int, tuple[object, int]] = {}
        self.alloc_cb = _ALLOC(self._alloc)
        self.free_cb = _FREE(self._free)

    def _alloc(self, nbytes: int) -> int:
        n = max(int(nbytes), 1)
        if self.used + n > self.limit:
            return 0
        raw = np.zeros(n + 64, dtype=np.uint8)
        addr = raw.ctypes.data
        addr += (-addr) % 64
        self.live[addr] = (raw, n)
        self.used += n
        return addr

    def _free(self, addr: int) -> None:
        got = self.live.pop(int(addr or 0), None)
        if got is not None:
            self.used -= got[1]

    def take(self, addr: int, elem: str, count: int, params: dict) -> np.ndarray:
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
        raise InterpError("R0008", "x86_64: a result points outside the run's memory")


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


def _cell(t: str, v) -> int:
    a = np.asarray(v, dtype=DTYPES[t])
    if t in ("f32", "f64"):
        a = canon(a)
        width = a.dtype.itemsize
        return int(a.view({4: np.uint32, 8: np.uint64}[width]))
    return int(a.astype(np.int64)) & ((1 << 64) - 1) if t != "u64" else int(a)


def _from_cell(t: str, bits: int):
    """A result cell (the value's bits in the low end of 64) as the numpy scalar."""
    width = 8 if t == "bool" else ir.BITS[t]
    return imm_value(ir.Imm(t, bits & ((1 << width) - 1)))


def run(
    loaded: Loaded,
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
    fn = sig.function
    lf = prog.functions[fn_name]
    keep: list[np.ndarray] = []
    params_at: dict[int, np.ndarray] = {}
    cells: list[int] = [bound[i] for i in range(fn.type.n_dims)]
    for group, (t, v) in zip(lf.params, zip(fn.type.params, args, strict=True), strict=True):
        flat: list = []
        flatten_value(t, v, flat)
        for x, val in zip(group, flat, strict=True):
            if isinstance(x, ir.Buf):
                # value_in made a private, C-ordered, canonicalised copy: the code may write it
                arr = val.reshape(-1)
                if arr.size == 0:
                    arr = np.zeros(1, dtype=arr.dtype)  # a valid address for an empty buffer
                keep.append(arr)
                params_at[arr.ctypes.data] = arr
                cells.append(arr.ctypes.data)
            else:
                cells.append(_cell(x.type, val))
    n_out = sum(len(gr) for gr in lf.results)
    io = (ctypes.c_uint64 * (len(cells) + n_out))(*cells)
    heap = Heap(memory_limit)
    global _C
    if _C is None:
        _C = _c_functions()
    ctx = (ctypes.c_uint64 * S.CTX_CELLS)()
    ctx[S.CTX_STEPS] = max_steps if max_steps is not None else NO_LIMIT
    ctx[S.CTX_ALLOC] = ctypes.cast(heap.alloc_cb, ctypes.c_void_p).value
    ctx[S.CTX_FREE] = ctypes.cast(heap.free_cb, ctypes.c_void_p).value
    ctx[S.CTX_FMOD], ctx[S.CTX_FMODF] = _C["fmod"], _C["fmodf"]
    ctx[S.CTX_FMA], ctx[S.CTX_FMAF] = _C["fma"], _C["fmaf"]
    ctx[S.CTX_MEMCPY] = _C["memcpy"]
    ctx[S.CTX_FUNCS] = ctypes.addressof(loaded.table)
    tee = _Tee(stdout)
    printer = Printer(prog, tee)
    ctx[S.CTX_PRINT] = ctypes.cast(printer.callback, ctypes.c_void_p).value
    t0 = time.perf_counter()
    rc = loaded.entry[fn_name](ctypes.addressof(io), ctypes.addressof(ctx))
    if call_times is not None:  # bench/x86_bench.py: the native call alone
        call_times.append(time.perf_counter() - t0)
    if rc:
        heap.live.clear()
        code = CODE_NAMES.get(int(rc), "R0008")
        msg = (
            "step limit reached"
            if code == "R0007"
            else "memory limit reached"
            if code == "R0009"
            else "checked error"
        )
        raise InterpError(code, f"x86_64: {msg}")
    dim_of = {d.id: bound[i] for i, d in enumerate(lf.dims)}
    at = len(cells)
    outs: list[Output] = []
    for (kind, i), group, shapes in zip(fn.outputs, lf.results, lf.result_shapes, strict=True):
        vals = []
        for x, shape in zip(group, shapes, strict=True):
            bits = io[at]
            at += 1
            if isinstance(x, ir.Buf):
                sh = tuple(_dim(d, dim_of) for d in shape)
                count = int(np.prod(sh)) if sh else 1
                arr = heap.take(bits, x.elem, count, params_at).reshape(sh)
                vals.append(canon(arr) if arr.dtype.kind == "f" else arr)
            else:
                vals.append(_from_cell(x.type, bits))
        if kind == "result":
            name, key, t = "result", "result", fn.type.result
        else:
            name, key, t = sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i])
        ct = concrete_type(t, bound)
        value = _rebuild(strip_ref(t), iter(vals))
        outs.append(Output(name, ct, value_out(ct, value), key))
    heap.live.clear()
    return RunResult(
        fn.name,
        outs,
        {sig.dim_names[i]: n for i, n in sorted(bound.items())},
        tee.buf.getvalue(),
        "io" in fn.type.effects,
    )


def _dim(d, dim_of) -> int:
    if isinstance(d, ir.Imm):
        return d.bits
    return dim_of[d.id]


def _rebuild(t, it):
    """The output value of type `t` from its flattened leaves (structs become tuples)."""
    if isinstance(t, Struct):
        return tuple(_rebuild(strip_ref(ft), it) for _, ft in t.fields)
    return next(it)
