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

import numpy as np
import wasmtime

from kera_core.backends.wasm import structs
from kera_core.interp import printing
from kera_core.interp.api import Output, RunResult, bind_inputs, entry_signature
from kera_core.interp.errors import InputError, InterpError
from kera_core.interp.fp import canon
from kera_core.interp.values import bind_dims, concrete_type, dtype_of, value_in, value_out
from kera_core.ir.graph import Graph
from kera_core.ir.types import Prim, Struct, Tensor, strip_ref

DEFAULT_FUEL = 2_000_000_000
DEFAULT_MEMORY = 1 << 30

ERRORS = {
    1: ("R0001", "index out of bounds"),
    2: ("R0002", "integer division by zero"),
    4: ("R0004", "reduction of an empty tensor"),
    9: ("R0009", "out of memory: the WebAssembly heap cannot grow further"),
}


class WasmRunError(InterpError):
    """A run that stopped for a reason of the machine, not of the program (fuel, memory)."""


def _engine(fuel: bool) -> wasmtime.Engine:
    cfg = wasmtime.Config()
    cfg.consume_fuel = fuel
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
    """Run export ``fn_name`` of ``wasm`` (lowered from ``graph``) on host ``inputs``."""
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
    )
    res = inst.call()
    assert res is not None
    return res


class WasmInstance:
    """One instance of a lowered function with its inputs in linear memory, to call repeatedly.

    The constructor checks the inputs exactly as `run_wasm` does (the interpreter's
    `value_in`/`bind_dims`, so bad arguments fail the same way), instantiates the module
    once, and writes the inputs into linear memory once. Each `call()`:

    * refuels the store to ``fuel`` and clears `kera_error`;
    * saves `kera_heap`, calls the export, reads the outputs (unless ``read=False``),
      then restores `kera_heap`, so everything the call allocated is freed and memory
      does not grow from call to call;
    * returns the same `RunResult` as `run_wasm` (``None`` with ``read=False``), or
      raises the same errors (a trap leaves the instance usable for another call).

    The inputs stay valid across calls because the module never writes a parameter's
    block (tensors are values: an update copies, a linear loop copies once on entry).
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
    ) -> None:
        src = graph if provenance is None else _WithProv(graph, provenance)
        sig = entry_signature(src, fn_name)
        fn = sig.function
        vals, bound = bind_inputs(sig, inputs, dims, _value_in)

        self.sig, self.fn, self.bound, self.fuel, self.stdout = sig, fn, bound, fuel, stdout
        eng = engine()
        self.store = store = wasmtime.Store(eng)
        store.set_fuel(fuel)
        store.set_limits(memory_size=memory_limit)
        module = _module(eng, wasm)
        self.printed: list[str] = []
        imports = []
        if any(i.module == "kera" and i.name == "print" for i in module.imports):
            imports.append(_print_import(store, self.printed, stdout))  # only `! io` functions
        inst = wasmtime.Instance(store, module, imports)
        self.exports = ex = inst.exports(store)
        self.mem: wasmtime.Memory = ex["memory"]
        self._func = ex[fn_name]
        self._heap: wasmtime.Global = ex["kera_heap"]
        self._err: wasmtime.Global = ex["kera_error"]
        self._alloc = ex["kera_alloc"]
        self.args: list = [int(bound[i]) for i in range(fn.type.n_dims)]
        self.args += [None] * len(vals)
        for k, v in enumerate(vals):
            self._put(k, v)
        self.outputs = [
            ("result", "result", fn.type.result)
            if kind == "result"
            else (sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i]))
            for kind, i in fn.outputs
        ]
        self.out_types = [concrete_type(t, bound) for _, _, t in self.outputs]

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
        """Value parameter ``k``: a scalar argument, or a block written into linear memory.

        A block is allocated on the first write and overwritten in place after that (its
        size follows from the type and the dimensions, which do not change).
        """
        t = strip_ref(self.fn.type.params[k])
        slot = self.fn.type.n_dims + k
        if not isinstance(t, Tensor | Struct):
            self.args[slot] = _scalar_arg(t, v)
            return
        if isinstance(t, Tensor):
            dt = np.dtype(dtype_of(t.elem)).newbyteorder("<")
            shape, nbytes = v.shape, v.size * dt.itemsize
        else:
            data = np.frombuffer(_struct_bytes(t, v), np.uint8)
            dt, shape, nbytes = data.dtype, data.shape, data.size
        ptr = self.args[slot]
        if ptr is None:
            try:
                ptr = self.args[slot] = self._alloc(self.store, nbytes)
            except wasmtime.Trap as e:  # kera_alloc could not grow the memory: R0009
                raise _trap_error(self.store, self.exports, e) from None
        # the memory may have grown (and moved): take the view after allocating
        dst = self._view(ptr & _U32, dt, shape)
        if isinstance(t, Tensor):
            np.copyto(dst, v, casting="unsafe")
            _canon_in_place(dst)  # value_in's canon, on the copy in memory
        else:
            dst[:] = data

    @property
    def memory_bytes(self) -> int:
        return self.mem.data_len(self.store)

    def _bytes(self) -> np.ndarray:
        """All of linear memory as a uint8 array (valid until the memory next grows)."""
        n = self.mem.data_len(self.store)
        at = ctypes.cast(self.mem.data_ptr(self.store), ctypes.c_void_p).value
        return np.frombuffer((ctypes.c_ubyte * n).from_address(at), np.uint8)

    def _view(self, at: int, dt: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """The block at ``at`` as an array of ``dt`` and ``shape`` (no copy)."""
        n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        mem = self._bytes()
        if at + n > len(mem):
            raise WasmRunError("R0008", f"a block of {n} bytes at {at} lies outside linear memory")
        return mem[at : at + n].view(dt).reshape(shape)

    def call(self, read: bool = True) -> RunResult | None:
        """Call the export on the inputs in memory; the `RunResult` (``None`` if not ``read``)."""
        store = self.store
        heap = self._heap.value(store)
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
            outs = [
                Output(name, ct, value_out(ct, self._read(ct, r)), key)
                for (name, key, _), ct, r in zip(self.outputs, self.out_types, res, strict=True)
            ]
        finally:
            self._heap.set_value(store, heap)
        return RunResult(
            self.fn.name,
            outs,
            {self.sig.dim_names[i]: n for i, n in sorted(self.bound.items())},
            "".join(self.printed),
            "io" in self.fn.type.effects,
        )

    def _read(self, t, r):
        if isinstance(t, Struct):
            return _read_struct(self.store, self.mem, t, r & _U32)
        if isinstance(t, Tensor):
            dt = np.dtype(dtype_of(t.elem)).newbyteorder("<")
            shape = tuple(int(d) for d in t.shape)
            return self._view(r & _U32, dt, shape).astype(dtype_of(t.elem))  # the one copy
        return _scalar_out(t, r)


def _canon_in_place(a: np.ndarray) -> None:
    """Canonicalise the NaNs of a float block in linear memory (`min` finds one cheaply)."""
    if a.dtype.kind == "f" and a.size and np.isnan(a.min()):
        canon(a)


_U32 = 0xFFFFFFFF  # an i32 address comes back signed: addresses ≥ 2 GiB are negative


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


def _print_import(store, printed: list[str], stdout) -> wasmtime.Func:
    """`kera.print(desc, len, value, shape)`: format as the interpreter does (printing.py).

    ``desc`` is the JSON descriptor the emitter put in a data segment: ``{"text": …}``,
    ``{"elem": …}`` (a scalar at ``value``), ``{"elem": …, "rank": r}`` (a tensor at
    ``value``, its r dims as i64 at ``shape``) or ``{"struct": [[offset, field], …]}``.
    """
    i32 = wasmtime.ValType.i32()
    ty = wasmtime.FuncType([i32, i32, i32, i32], [])

    def host(caller, desc_at: int, desc_len: int, ptr: int, shape_at: int) -> None:
        mem = caller["memory"]
        desc = json.loads(bytes(mem.read(caller, desc_at, desc_at + desc_len)))
        if "text" in desc:
            s = desc["text"]
        else:
            s = printing.format_value(_print_value(caller, mem, desc, ptr, shape_at))
        printed.append(s)
        if stdout is not None:
            stdout.write(s)

    return wasmtime.Func(store, ty, host, access_caller=True)


def _elem_at(caller, mem, name: str, at: int):
    dt = np.dtype(dtype_of(Prim(name))).newbyteorder("<")
    data = bytes(mem.read(caller, at, at + dt.itemsize))
    return np.frombuffer(data, dtype=dt).astype(dtype_of(Prim(name)))[0]


def _struct_at(caller, mem, fields: list, at: int) -> tuple:
    return tuple(
        _struct_at(caller, mem, f, at + off)
        if isinstance(f, list)
        else _elem_at(caller, mem, f, at + off)
        for off, f in fields
    )


def _print_value(caller, mem, desc: dict, ptr: int, shape_at: int):
    if "struct" in desc:
        return _struct_at(caller, mem, desc["struct"], ptr)
    if "rank" not in desc:
        return _elem_at(caller, mem, desc["elem"], ptr)
    r = desc["rank"]
    shape = tuple(
        int(x) for x in np.frombuffer(bytes(mem.read(caller, shape_at, shape_at + 8 * r)), "<i8")
    )
    p = Prim(desc["elem"])
    dt = np.dtype(dtype_of(p)).newbyteorder("<")
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    data = bytes(mem.read(caller, ptr, ptr + n * dt.itemsize)) if n else b""
    return np.frombuffer(data, dtype=dt).astype(dtype_of(p)).reshape(shape)


class _WithProv:
    def __init__(self, graph, provenance) -> None:
        self.graph = graph
        self.provenance = provenance


def _scalar_arg(p: Prim, v):
    if p.is_float:
        return float(v)
    return int(v)


def _struct_bytes(t: Struct, v) -> bytes:
    """The block of a struct value: one 8-byte slot per scalar leaf (structs.py)."""
    out = bytearray()
    for (_, ft), x in zip(t.fields, v, strict=True):
        ft = strip_ref(ft)
        if isinstance(ft, Struct):
            out += _struct_bytes(ft, x)
        else:
            raw = np.asarray(x, dtype=np.dtype(dtype_of(ft)).newbyteorder("<")).tobytes()
            out += raw.ljust(structs.SLOT, b"\0")
    return bytes(out)


def _read_struct(store, mem, t: Struct, addr: int):
    vals = []
    for k, (_, ft) in enumerate(t.fields):
        ft = strip_ref(ft)
        at = addr + structs.offset(t, k)
        if isinstance(ft, Struct):
            vals.append(_read_struct(store, mem, ft, at))
        else:
            dt = np.dtype(dtype_of(ft)).newbyteorder("<")
            data = bytes(mem.read(store, at, at + dt.itemsize))
            vals.append(np.frombuffer(data, dtype=dt).astype(dtype_of(ft))[0])
    return tuple(vals)


def _scalar_out(t: Prim, r):
    dt = dtype_of(t)
    if t.is_float:
        bits = np.array(r, dtype=np.float64 if t.name == "f64" else np.float32)
        return bits[()]
    if t.name == "bool":
        return np.bool_(r != 0)
    width = t.bits
    v = int(r) & ((1 << width) - 1)
    if t.is_signed and v >> (width - 1):
        v -= 1 << width
    return dt(v)


def _trap_error(store, ex, trap: wasmtime.Trap) -> InterpError:
    code = ex["kera_error"].value(store)
    if code in ERRORS:
        c, msg = ERRORS[code]
        return InterpError(c, f"{msg} (WebAssembly trap)")
    text = str(trap)
    if "fuel" in text:
        return WasmRunError(
            "R0007",
            "out of fuel: the WebAssembly run exceeded its instruction budget "
            "(`kera run --fuel N` raises it)",
        )
    return WasmRunError("R0008", f"WebAssembly trap: {text.splitlines()[0]}")
