"""What every compiled target's run shares with its host: checked-error numbers, print
sites, and the io cells a function is called with and returns in.

A compiled function is called as ``int64 f(uint64 *io, uint64 *ctx)``: ``io`` holds the
dimension sizes, then every flattened parameter (a scalar's bits in the low end of 64, a
buffer's address), then one cell per flattened result; it returns 0 or a checked error's
number (:data:`ERROR_NUMBERS`). ``print(site, value, offset, shape*)`` names a site of
:func:`print_sites`. The ctx cells (steps, host helpers) are each target's own.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kera_core.interp import printing
from kera_core.interp.api import Output, RunResult
from kera_core.interp.errors import InterpError
from kera_core.interp.fp import canon
from kera_core.interp.values import DTYPES, concrete_type, value_out
from kera_core.ir.types import Struct, strip_ref
from kera_core.loops import ir
from kera_core.loops.interp import imm_value
from kera_core.loops.run import flatten_value

ERROR_NUMBERS = {
    "R0001": 1,
    "R0002": 2,
    "R0003": 3,
    "R0004": 4,
    "R0007": 7,
    "R0009": 9,
    "R0011": 11,
    "R0012": 12,
}
CODE_NAMES = {v: k for k, v in ERROR_NUMBERS.items()}


def print_sites(program: ir.Program) -> dict[int, ir.Print]:
    """Every `print` of a program by site number: function index << 20 | ordinal, in the
    statement walk order (the host rebuilds the same table from the same program)."""
    out: dict[int, ir.Print] = {}
    for k, lf in enumerate(program.functions.values()):
        found: list[ir.Print] = []
        _walk_prints(lf.body, found)
        for j, st in enumerate(found):
            out[(k << 20) | j] = st
    return out


def _walk_prints(stmts: list, found: list) -> None:
    for st in stmts:
        if isinstance(st, ir.Print):
            found.append(st)
        for attr in ("cond", "body", "then", "orelse"):
            inner = getattr(st, attr, None)
            if isinstance(inner, list):
                _walk_prints(inner, found)


def cell(t: str, v) -> int:
    """A scalar as an io cell: its bits in the low end of 64 (floats canonicalised)."""
    a = np.asarray(v, dtype=DTYPES[t])
    if t in ("f32", "f64"):
        a = canon(a)
        return int(a.view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize]))
    return int(a.astype(np.int64)) & ((1 << 64) - 1) if t != "u64" else int(a)


def from_cell(t: str, bits: int):
    """A result cell (the value's bits in the low end of 64) as the numpy scalar."""
    width = 8 if t == "bool" else ir.BITS[t]
    return imm_value(ir.Imm(t, bits & ((1 << width) - 1)))


def input_cells(sig, args, bound, lf, put_buffer: Callable[[np.ndarray], int]) -> list[int]:
    """The io cells of a call: dimension sizes, then every flattened parameter; a buffer
    (flat, C-ordered, the run's own copy) is placed by ``put_buffer(array) -> address``."""
    fn = sig.function
    cells: list[int] = [bound[i] for i in range(fn.type.n_dims)]
    for group, (t, v) in zip(lf.params, zip(fn.type.params, args, strict=True), strict=True):
        flat: list = []
        flatten_value(t, v, flat)
        for x, val in zip(group, flat, strict=True):
            if isinstance(x, ir.Buf):
                cells.append(put_buffer(np.ascontiguousarray(val).reshape(-1)))
            else:
                cells.append(cell(x.type, val))
    return cells


def check_rc(rc: int, target: str) -> None:
    """Raise the checked error a call returned (0: none)."""
    if rc:
        code = CODE_NAMES.get(int(rc), "R0008")
        msg = {"R0007": "step limit reached", "R0009": "memory limit reached"}
        raise InterpError(code, f"{target}: {msg.get(code, 'checked error')}")


def result_of(
    sig, bound, lf, io: list[int], at: int, read_array: Callable, printed: str
) -> RunResult:
    """The run's outputs from the io cells after the call (result cells from ``at``); a
    buffer is read with ``read_array(address, elem, count)``."""
    fn = sig.function
    outs: list[Output] = []
    for (kind, i), group, shapes in zip(fn.outputs, lf.results, lf.result_shapes, strict=True):
        vals = []
        for x, shape in zip(group, shapes, strict=True):
            bits = io[at]
            at += 1
            if isinstance(x, ir.Buf):
                sh = lf.sizes(shape, bound)
                count = int(np.prod(sh)) if sh else 1
                arr = read_array(bits, x.elem, count).reshape(sh)
                vals.append(canon(arr) if arr.dtype.kind == "f" else arr)
            else:
                vals.append(from_cell(x.type, bits))
        if kind == "result":
            t = fn.type.result
            name, key = "result", "result"
        else:
            name, key, t = sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i])
        ct = concrete_type(t, bound)
        value = _rebuild(strip_ref(t), iter(vals))
        outs.append(Output(name, ct, value_out(ct, value), key))
    return RunResult(
        fn.name,
        outs,
        {sig.dim_names[i]: n for i, n in sorted(bound.items())},
        printed,
        "io" in fn.type.effects,
    )


def _rebuild(t, it):
    """The output value of type `t` from its flattened leaves (structs become tuples)."""
    if isinstance(t, Struct):
        return tuple(_rebuild(strip_ref(ft), it) for _, ft in t.fields)
    return next(it)


def printed_text(st: ir.Print, value: int, offset: int, dims: list[int], read: Callable) -> str:
    """What a `print` site writes, formatted exactly as the interpreter prints: its text, a
    scalar from its cell, or the buffer at ``value`` (elements from ``offset``, ``dims``)
    whose bytes ``read(address, nbytes)`` gives."""
    if st.text is not None:
        return st.text
    if isinstance(st.value, ir.Buf):
        dt = np.dtype(DTYPES[st.value.elem])
        count = int(np.prod(dims)) if dims else 1
        if count:
            raw = read(value + offset * dt.itemsize, count * dt.itemsize)
            arr = np.frombuffer(raw, dtype=dt, count=count).reshape(dims)
        else:
            arr = np.zeros(dims, dtype=dt)
        return printing.format_value(canon(arr) if dt.kind == "f" else arr)
    return printing.format_value(from_cell(st.value.type, value))
