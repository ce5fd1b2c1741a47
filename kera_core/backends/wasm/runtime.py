"""Run a lowered function in wasmtime and hand back a :class:`RunResult`.

The host side of the ABI in docs/targets/wasm.md: inputs are checked and canonicalised
by the interpreter's own `value_in`/`bind_dims` (so bad arguments fail the same way),
tensors are written into linear memory through the module's `kera_alloc` export, dims
and scalars are passed as parameters, and results come back as values or addresses.
Outputs are built into the interpreter's `Output`/`RunResult`, so the bytes and the
digest are computed by the very same functions.

Tensors go straight through a numpy view of linear memory (one copy in, canonicalised
there; one copy out into the dtype `value_out` expects), taken afresh after every
`kera_alloc`, since growing the memory may move it. `WasmInstance` keeps one instance
with its inputs in memory for repeated calls (benchmarks); `run_wasm` is one call of it.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import struct
import threading
from collections import OrderedDict

import numpy as np
import wasmtime

from kera_core.backends.wasm.select import wtype
from kera_core.interp import printing
from kera_core.interp.api import RunResult, bind_inputs, entry_signature
from kera_core.interp.errors import InputError, InterpError
from kera_core.interp.fp import canon
from kera_core.interp.values import DTYPES, bind_dims, dtype_of, value_in
from kera_core.ir.graph import Graph
from kera_core.ir.types import Tensor, strip_ref
from kera_core.loops import ir
from kera_core.loops.lower import program_of
from kera_core.loops.run import flatten_value
from kera_core.loops.run_abi import cell, from_cell, result_of

DEFAULT_FUEL = 20_000_000_000  # about 2.5–5 s of WebAssembly here (4–8·10⁹ fuel/s)
DEFAULT_MEMORY = 1 << 30
WASM_STACK = 2 << 20  # at most wasmtime's async stack size (2 MiB; not settable here)

ERRORS = {
    1: ("R0001", "index out of bounds"),
    2: ("R0002", "integer division by zero"),
    3: ("R0003", "shapes do not agree"),
    4: ("R0004", "reduction of an empty tensor"),
    9: ("R0009", "out of memory: the WebAssembly heap cannot grow further"),
    11: ("R0011", "the step of `step_by` is not positive"),
    12: ("R0012", "recursion too deep"),
}


class WasmRunError(InterpError):
    """A run that stopped for a reason of the machine, not of the program (fuel, memory)."""

    machine_limit = True  # `kera run --target all` reports it as the target stopping


def _engine(fuel: bool) -> wasmtime.Engine:
    cfg = wasmtime.Config()
    cfg.consume_fuel = fuel
    # room for RECURSION_LIMIT nested calls of large functions (wasmtime's default is
    # 512 KiB; the host thread's native stack, 8 MiB here, holds it)
    cfg.max_wasm_stack = WASM_STACK
    return wasmtime.Engine(cfg)


_ENGINE: wasmtime.Engine | None = None


def engine() -> wasmtime.Engine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = _engine(True)
    return _ENGINE


_MODULES: dict[bytes, wasmtime.Module] = {}


def _module(eng: wasmtime.Engine, wasm: bytes) -> wasmtime.Module:
    """Compile once per distinct module (compilation costs milliseconds; a run may not)."""
    key = hashlib.sha3_256(wasm).digest()
    mod = _MODULES.get(key)
    if mod is None:
        if len(_MODULES) >= 64:
            _MODULES.clear()
        mod = _MODULES[key] = wasmtime.Module(eng, wasm)
    return mod


class _Machine:
    """A store with one instance of a module — what a run needs, kept for the next run of
    the same module: a fresh instance costs its store's teardown and the page faults of
    memory the operating system zero-fills as inputs and results are written (at 10⁶
    elements, more than the call)."""

    def __init__(self, key: tuple, wasm: bytes, memory_limit: int) -> None:
        self.key = key
        eng = engine()
        self.store = store = wasmtime.Store(eng)
        store.set_limits(memory_size=memory_limit)
        module = _module(eng, wasm)
        self.sink = _PrintSink()
        imports = []
        if any(i.module == "kera" and i.name == "print" for i in module.imports):
            imports.append(_print_import(store, self.sink))  # only `! io` functions
        inst = wasmtime.Instance(store, module, imports)
        self.exports = ex = inst.exports(store)
        self.mem: wasmtime.Memory = ex["memory"]
        self.heap: wasmtime.Global = ex["kera_heap"]
        self.top: wasmtime.Global = ex["kera_top"]
        self.empty = (self.heap.value(store), self.top.value(store))

    def reset(self) -> None:
        """An empty heap again (the memory keeps its size and its pages)."""
        self.heap.set_value(self.store, self.empty[0])
        self.top.set_value(self.store, self.empty[1])


class _PrintSink:
    def __init__(self) -> None:
        self.printed: list[str] = []
        self.stdout = None


_POOL: OrderedDict[tuple, _Machine] = OrderedDict()
_POOL_LOCK = threading.Lock()
POOL_SIZE = 8  # machines kept (one per module and memory limit)
POOL_BYTES = 256 << 20  # a machine whose memory grew beyond this is not kept


def _module_key(wasm: bytes) -> bytes:
    return hashlib.sha3_256(wasm).digest()


def _take(wasm: bytes, memory_limit: int) -> _Machine:
    key = (_module_key(wasm), memory_limit)
    with _POOL_LOCK:
        m = _POOL.pop(key, None)
    return m if m is not None else _Machine(key, wasm, memory_limit)


def _give(m: _Machine) -> None:
    if m.mem.data_len(m.store) > POOL_BYTES:
        return
    m.reset()
    m.sink.stdout = None
    with _POOL_LOCK:
        _POOL[m.key] = m
        while len(_POOL) > POOL_SIZE:
            _POOL.popitem(last=False)


def run_wasm(
    wasm: bytes,
    graph: Graph,
    fn_name: str,
    inputs: dict[str, object],
    dims: dict[str, int] | None = None,
    *,
    provenance=None,
    fuel: int = DEFAULT_FUEL,
    memory_limit: int = DEFAULT_MEMORY,
    stdout=None,
) -> RunResult:
    """Run export ``fn_name`` of ``wasm`` (lowered from ``graph``) on host ``inputs``, on a
    pooled instance of the module (its heap emptied after the run)."""
    machine = _take(wasm, memory_limit)
    try:
        inst = WasmInstance(
            wasm,
            graph,
            fn_name,
            inputs,
            dims,
            provenance=provenance,
            fuel=fuel,
            memory_limit=memory_limit,
            stdout=stdout,
            machine=machine,
        )
        res = inst.call()
    finally:
        _give(machine)
    assert res is not None
    return res


class WasmInstance:
    """One instance of a lowered function with its inputs in linear memory, to call repeatedly.

    The constructor checks the inputs exactly as `run_wasm` does (the interpreter's
    `bind_inputs`, so bad arguments fail the same way), instantiates the module once and
    writes the inputs into linear memory once, in the ABI of docs/targets/wasm.md:
    dimensions, then every parameter flattened as the loop program has it (a struct's
    fields one by one), scalars by value, tensors as the address of their elements. Each
    `call()`:

    * refuels the store to ``fuel`` and clears `kera_error`;
    * writes the `&mut` parameters' inputs again (the function updates them in place);
    * saves `kera_heap` and `kera_top`, calls the export, reads the outputs (unless
      ``read=False``), then restores both, so everything the call allocated is freed and
      memory does not grow from call to call;
    * returns the same `RunResult` as `run_wasm` (``None`` with ``read=False``), or raises
      the same errors (a trap leaves the instance usable for another call).

    ``memory_bytes`` is the current size of linear memory.
    """

    def __init__(
        self,
        wasm: bytes,
        graph: Graph,
        fn_name: str,
        inputs: dict[str, object],
        dims: dict[str, int] | None = None,
        *,
        provenance=None,
        fuel: int = DEFAULT_FUEL,
        memory_limit: int = DEFAULT_MEMORY,
        stdout=None,
        machine: _Machine | None = None,
    ) -> None:
        src = graph if provenance is None else _WithProv(graph, provenance)
        sig = entry_signature(src, fn_name)
        self.lf = program_of(graph, fn_name).functions[fn_name]
        vals, bound = bind_inputs(sig, inputs, dims, _value_in)
        self.sig, self.fn, self.bound, self.fuel = sig, sig.function, bound, fuel
        if machine is None:
            key = (_module_key(wasm), memory_limit)
            machine = _Machine(key, wasm, memory_limit)
        self.machine = machine
        self.store = machine.store
        self.store.set_fuel(fuel)  # (writing the inputs calls `kera_alloc`)
        self.printed = machine.sink.printed
        machine.sink.stdout = stdout
        self.exports = ex = machine.exports
        self.mem = machine.mem
        self._func = ex[fn_name]
        self._heap = machine.heap
        self._top = machine.top
        self._err: wasmtime.Global = ex["kera_error"]
        self._alloc = ex["kera_alloc"]
        self.slots: dict[str, list[int]] = {}  # a parameter's flattened argument positions
        self.mutable: list[tuple[int, np.ndarray]] = []  # (address, input) of `&mut` buffers
        # the dimensions first (a function may have dimensions and no value parameters:
        # `fn fresh[N]() -> T[N]`), then every value parameter's slots, filled by `_put`
        self.args: list = [int(bound[i]) for i in range(self.fn.type.n_dims)]
        self.args += [None] * sum(len(g) for g in self.lf.params)
        for k, v in enumerate(vals):
            self._put(k, v)

    def set_input(self, name: str, value) -> None:
        """Replace one input before the next call; its dimensions may not change (R0003)."""
        params = [n for n, _ in self.sig.value_params]
        if name not in params:
            raise InputError("R0005", f"`{self.fn.name}` has no parameter {name}")
        k = params.index(name)
        t = self.sig.value_params[k][1]
        v = _value_in(t, value, f"input `{name}`")
        try:
            bind_dims(t, v, dict(self.bound), f"input `{name}`")
        except InterpError as e:
            raise InputError(e.code, e.message) from None
        self._put(k, v)

    def _put(self, k: int, v) -> None:
        """Value parameter ``k``'s arguments: scalars by value, each tensor in a block of
        linear memory (allocated on the first write, overwritten in place after that: its
        size follows from the type and the dimensions, which do not change)."""
        t = self.fn.type.params[k]
        group = self.lf.params[k]
        leaves: list = []
        flatten_value(t, v, leaves)
        first = self.fn.type.n_dims + sum(len(g) for g in self.lf.params[:k])
        for j, (x, val) in enumerate(zip(group, leaves, strict=True)):
            slot = first + j
            if not isinstance(x, ir.Buf):
                self.args[slot] = _scalar_arg(x.type, cell(x.type, val))
                continue
            arr = np.asarray(val).reshape(-1)
            dt = np.dtype(DTYPES[x.elem]).newbyteorder("<")
            ptr = self.args[slot]
            if ptr is None:
                try:
                    ptr = self.args[slot] = _i32(self._alloc(self.store, arr.size * dt.itemsize))
                except wasmtime.Trap as e:  # kera_alloc could not grow the memory: R0009
                    raise _trap_error(self.store, self.exports, e) from None
                if x.mutable:
                    self.mutable.append((ptr & _U32, arr.astype(dt, copy=True)))
            elif x.mutable:
                self.mutable = [
                    (a, arr.astype(dt, copy=True) if a == ptr & _U32 else old)
                    for a, old in self.mutable
                ]
            # the memory may have grown (and moved): take the view after allocating
            dst = self._view(ptr & _U32, dt, arr.size)
            np.copyto(dst, arr, casting="unsafe")
            _canon_in_place(dst)  # value_in's canon, on the copy in memory

    @property
    def memory_bytes(self) -> int:
        return self.mem.data_len(self.store)

    def _bytes(self) -> np.ndarray:
        """All of linear memory as a uint8 array (valid until the memory next grows)."""
        n = self.mem.data_len(self.store)
        at = ctypes.cast(self.mem.data_ptr(self.store), ctypes.c_void_p).value
        return np.frombuffer((ctypes.c_ubyte * n).from_address(at), np.uint8)

    def _view(self, at: int, dt: np.dtype, count: int) -> np.ndarray:
        """``count`` elements of ``dt`` at ``at`` (no copy)."""
        n = count * dt.itemsize
        mem = self._bytes()
        if at + n > len(mem):
            raise WasmRunError("R0008", f"a block of {n} bytes at {at} lies outside linear memory")
        return mem[at : at + n].view(dt)

    def _read(self, at: int, elem: str, count: int) -> np.ndarray:
        dt = np.dtype(DTYPES[elem])
        return self._view(at & _U32, dt.newbyteorder("<"), count).astype(dt)  # the one copy

    def call(self, read: bool = True) -> RunResult | None:
        """Call the export on the inputs in memory; the `RunResult` (``None`` if not ``read``)."""
        store = self.store
        heap, top = self._heap.value(store), self._top.value(store)
        for at, arr in self.mutable:
            self._view(at, arr.dtype, arr.size)[:] = arr
        self._err.set_value(store, 0)
        self.printed.clear()
        store.set_fuel(self.fuel)
        try:
            try:
                res = self._func(store, *self.args)
            except wasmtime.Trap as e:
                raise _trap_error(store, self.exports, e) from None
            except wasmtime.WasmtimeError as e:  # pragma: no cover - a limit hit outside a trap
                raise WasmRunError("R0009", str(e)) from None
            if not read:
                return None
            res = [] if res is None else (list(res) if isinstance(res, list | tuple) else [res])
            results = [x for g in self.lf.results for x in g]
            io = [
                r & _U32 if isinstance(x, ir.Buf) else _bits(x.type, r)
                for x, r in zip(results, res, strict=True)
            ]
            return result_of(
                self.sig, self.bound, self.lf, io, 0, self._read, "".join(self.printed)
            )
        finally:
            self._heap.set_value(store, heap)
            self._top.set_value(store, top)


def _canon_in_place(a: np.ndarray) -> None:
    """Canonicalise the NaNs of a float block in linear memory (`min` finds one cheaply)."""
    if a.dtype.kind == "f" and a.size and np.isnan(a.min()):
        canon(a)


_U32 = 0xFFFFFFFF  # an i32 address comes back signed: addresses ≥ 2 GiB are negative


def _i32(v: int) -> int:
    v &= _U32
    return v - (1 << 32) if v >> 31 else v


def _value_in(t, v, what: str):
    """`value_in`, except that a tensor already of the right dtype and rank is not copied.

    For such an array `value_in` makes a C-order copy and canonicalises its NaNs; the
    caller makes that copy straight into linear memory and canonicalises it there.
    """
    t = strip_ref(t)
    if (
        isinstance(t, Tensor)
        and type(v) is np.ndarray
        and v.dtype == np.dtype(dtype_of(t.elem))
        and v.ndim == t.rank
    ):
        return v
    return value_in(t, v, what)


def _scalar_arg(t: str, bits: int):
    """A scalar's io cell as the WebAssembly value wasmtime passes."""
    if t == "f32":
        return struct.unpack("<f", struct.pack("<I", bits & _U32))[0]
    if t == "f64":
        return struct.unpack("<d", struct.pack("<Q", bits & ((1 << 64) - 1)))[0]
    if wtype(t) == "i64":
        bits &= (1 << 64) - 1
        return bits - (1 << 64) if bits >> 63 else bits
    return _i32(bits)


def _bits(t: str, r) -> int:
    """A WebAssembly result value as its bits (the low end of a cell)."""
    if t == "f32":
        return struct.unpack("<I", struct.pack("<f", r))[0]
    if t == "f64":
        return struct.unpack("<Q", struct.pack("<d", r))[0]
    return int(r) & ((1 << 64) - 1)


def _print_import(store, sink: _PrintSink) -> wasmtime.Func:
    """`kera.print(desc, len, value, shape)`: format as the interpreter does (printing.py).

    ``desc`` is the JSON descriptor in the module's data: ``{"text": …}``, ``{"elem": …}``
    (a scalar whose bits are ``value``) or ``{"elem": …, "rank": r}`` (a tensor whose
    elements start at address ``value``, its r dims as i64 at ``shape``).
    """
    i32, i64 = wasmtime.ValType.i32(), wasmtime.ValType.i64()
    ty = wasmtime.FuncType([i32, i32, i64, i32], [])

    def host(caller, desc_at: int, desc_len: int, value: int, shape_at: int) -> None:
        mem = caller["memory"]
        desc = json.loads(bytes(mem.read(caller, desc_at, desc_at + desc_len)))
        if "text" in desc:
            s = desc["text"]
        elif "rank" not in desc:
            s = printing.format_value(from_cell(desc["elem"], value & ((1 << 64) - 1)))
        else:
            r = desc["rank"]
            raw = bytes(mem.read(caller, shape_at, shape_at + 8 * r))
            shape = tuple(int(x) for x in np.frombuffer(raw, "<i8"))
            dt = np.dtype(DTYPES[desc["elem"]])
            n = int(np.prod(shape, dtype=np.int64)) if shape else 1
            at = value & ((1 << 64) - 1)
            data = bytes(mem.read(caller, at, at + n * dt.itemsize)) if n else b""
            arr = np.frombuffer(data, dtype=dt.newbyteorder("<")).astype(dt).reshape(shape)
            s = printing.format_value(canon(arr) if dt.kind == "f" else arr)
        sink.printed.append(s)
        if sink.stdout is not None:
            sink.stdout.write(s)

    return wasmtime.Func(store, ty, host, access_caller=True)


class _WithProv:
    def __init__(self, graph, provenance) -> None:
        self.graph = graph
        self.provenance = provenance


def _trap_error(store, ex, trap: wasmtime.Trap) -> InterpError:
    code = ex["kera_error"].value(store)
    if code in ERRORS:
        c, msg = ERRORS[code]
        kind = WasmRunError if c == "R0009" else InterpError  # memory: the machine's limit
        return kind(c, f"{msg} (WebAssembly trap)")
    text = str(trap)
    if "fuel" in text:
        return WasmRunError(
            "R0007",
            "out of fuel: the WebAssembly run exceeded its instruction budget "
            "(`kera run --fuel N` raises it)",
        )
    return WasmRunError("R0008", f"WebAssembly trap: {text.splitlines()[0]}")
