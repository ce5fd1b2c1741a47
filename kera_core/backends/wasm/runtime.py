"""Run a lowered function in wasmtime and hand back a :class:`RunResult`.

The host side of the ABI in docs/targets/wasm.md: inputs are checked and canonicalised
by the interpreter's own `value_in`/`bind_dims` (so bad arguments fail the same way),
tensors are written into linear memory through the module's `kera_alloc` export, dims
and scalars are passed as parameters, and results come back as values or addresses.
Outputs are built into the interpreter's `Output`/`RunResult`, so the bytes and the
digest are computed by the very same functions.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import wasmtime

from kera_core.backends.wasm import structs
from kera_core.interp import printing
from kera_core.interp.api import Output, RunResult, _user_dims, entry_signature
from kera_core.interp.errors import InputError, InterpError
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
    src = graph if provenance is None else _WithProv(graph, provenance)
    sig = entry_signature(src, fn_name)
    fn = sig.function
    bound = _user_dims(sig, dims or {})
    unknown = sorted(set(inputs) - set(sig.param_names))
    if unknown:
        raise InputError("R0005", f"`{fn_name}` has no parameter(s) {', '.join(unknown)}")
    vals = []
    for name, t in sig.value_params:
        if name not in inputs:
            raise InputError("R0005", f"missing input `{name}: {t}`")
        v = value_in(t, inputs[name], f"input `{name}`")
        try:
            bind_dims(t, v, bound, f"input `{name}`")
        except InterpError as e:
            raise InputError(e.code, e.message) from None
        vals.append(v)
    missing = [sig.dim_names[i] for i in range(fn.type.n_dims) if i not in bound]
    if missing:
        raise InputError("R0006", f"no size for dimension(s) {', '.join(missing)}")

    eng = engine()
    store = wasmtime.Store(eng)
    store.set_fuel(fuel)
    store.set_limits(memory_size=memory_limit)
    module = _module(eng, wasm)
    printed: list[str] = []
    imports = []
    if any(i.module == "kera" and i.name == "print" for i in module.imports):
        imports.append(_print_import(store, printed, stdout))  # only `! io` functions import it
    inst = wasmtime.Instance(store, module, imports)
    ex = inst.exports(store)
    mem = ex["memory"]
    alloc = ex["kera_alloc"]
    args: list = [int(bound[i]) for i in range(fn.type.n_dims)]
    for t, v in zip(fn.type.params, vals, strict=True):
        t = strip_ref(t)
        if isinstance(t, Tensor):
            raw = np.ascontiguousarray(v, dtype=np.dtype(dtype_of(t.elem)).newbyteorder("<"))
            data = raw.tobytes()
            ptr = alloc(store, len(data))
            if data:
                mem.write(store, data, ptr)
            args.append(ptr)
        elif isinstance(t, Struct):
            ptr = alloc(store, structs.size(t))
            mem.write(store, _struct_bytes(t, v), ptr)
            args.append(ptr)
        else:
            args.append(_scalar_arg(t, v))
    try:
        res = ex[fn_name](store, *args)
    except wasmtime.Trap as e:
        raise _trap_error(store, ex, e) from None
    except wasmtime.WasmtimeError as e:  # pragma: no cover - e.g. a limit hit outside a trap
        raise WasmRunError("R0009", str(e)) from None
    res = [] if res is None else (list(res) if isinstance(res, list | tuple) else [res])
    outs: list[Output] = []
    real = [(k, i) for k, i in fn.outputs]
    for (kind, i), r in zip(real, res, strict=True):
        if kind == "result":
            name, key, t = "result", "result", fn.type.result
        else:
            name, key, t = sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i])
        ct = concrete_type(t, bound)
        outs.append(Output(name, ct, value_out(ct, _read(store, mem, ct, r)), key))
    return RunResult(
        fn.name,
        outs,
        {sig.dim_names[i]: n for i, n in sorted(bound.items())},
        "".join(printed),
        "io" in fn.type.effects,
    )


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


def _read(store, mem, t, r):
    if isinstance(t, Struct):
        return _read_struct(store, mem, t, r)
    if isinstance(t, Tensor):
        dt = np.dtype(dtype_of(t.elem)).newbyteorder("<")
        shape = tuple(int(d) for d in t.shape)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        data = mem.read(store, r, r + n * dt.itemsize) if n else b""
        return np.frombuffer(bytes(data), dtype=dt).astype(dtype_of(t.elem)).reshape(shape)
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
            "R0007", "out of fuel: the WebAssembly run exceeded its instruction budget"
        )
    return WasmRunError("R0008", f"WebAssembly trap: {text.splitlines()[0]}")
