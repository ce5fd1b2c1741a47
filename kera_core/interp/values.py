"""Run-time values: how Kera types map to numpy, and how host data comes in and goes out.

| Kera type | value in the interpreter |
|---|---|
| `bool`, integers, floats | a numpy scalar of the matching dtype (`np.float32`, `np.int64`, …) |
| `E[d1, …, dk]` | a C-contiguous numpy array of that dtype and shape |
| a struct | a tuple of its field values, in declaration order |
| the effect token | :data:`TOKEN` |

Host code passes structs as dicts (field -> value) and gets them back as dicts.
"""

from __future__ import annotations

import numpy as np

from kera_core.interp.errors import InputError, InterpError
from kera_core.interp.fp import canon
from kera_core.ir.dims import Step, solve
from kera_core.ir.dims import value as dims_value_of
from kera_core.ir.types import (
    DimError,
    Prim,
    Ref,
    Struct,
    Sym,
    Tensor,
    TokenType,
    Type,
    Unit,
    dim_syms,
    dim_value,
    display_dim,
    holds_tensor,
    strip_ref,
)

DTYPES: dict[str, type] = {
    "bool": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "u8": np.uint8,
    "u16": np.uint16,
    "u32": np.uint32,
    "u64": np.uint64,
    "f32": np.float32,
    "f64": np.float64,
}


class _Token:
    __slots__ = ()

    def __repr__(self) -> str:
        return "TOKEN"


TOKEN = _Token()


def dtype_of(p: Prim) -> type:
    return DTYPES[p.name]


def concrete_shape(t: Tensor, dims: tuple[int, ...] | dict[int, int]) -> tuple[int, ...]:
    out = []
    for d in t.shape:
        if isinstance(d, int):
            out.append(d)
            continue
        try:
            out.append(dim_value(d, dims))
        except (KeyError, IndexError):
            missing = [k for k in dim_syms(d) if k not in dims] if isinstance(dims, dict) else []
            k = missing[0] if missing else dim_syms(d)[0]
            raise InterpError("R0006", f"dimension ${k} is not bound") from None
        except DimError as e:
            raise InterpError("R0003", f"dimension `{display_dim(d)}` is not a size: {e}") from None
    return tuple(out)


def concrete_type(t: Type, dims: dict[int, int]) -> Type:
    """``t`` with every symbolic dimension replaced by its bound size."""
    t = strip_ref(t)
    if isinstance(t, Tensor):
        return Tensor(t.elem, concrete_shape(t, dims), t.space)
    if isinstance(t, Struct):
        return Struct(t.name, tuple((n, concrete_type(ft, dims)) for n, ft in t.fields), t.soa)
    return t


def bind_dims(t: Type, value, dims: dict[int, int], what: str, node: bytes | None = None) -> bool:
    """Bind the symbolic dimensions of ``t`` from the shape of ``value``, checking the ones
    already bound (R0003): an axis `N` or `N + 1` binds `N`, one whose symbols are all
    bound is checked (docs/language.md §7.2). True when an axis with two or more unbound
    symbols was left for later (:func:`bind_all` comes back to it)."""
    t = strip_ref(t)
    if isinstance(t, Struct):  # a struct's or a tuple's tensors, field by field
        later = False
        for k, (fname, ft) in enumerate(t.fields):
            if holds_tensor(ft):
                part = value[fname] if isinstance(value, dict) else value[k]
                later |= bind_dims(ft, part, dims, f"{what}.{fname}", node)
        return later
    if not isinstance(t, Tensor):
        return False
    shape = np.shape(value)
    if len(shape) != t.rank:
        raise InputError("R0005", f"{what}: expected a rank-{t.rank} tensor, got shape {shape}")
    later = False
    for axis, (d, n) in enumerate(zip(t.shape, shape, strict=True)):
        n = int(n)
        if isinstance(d, int):
            if d != n:
                raise InterpError("R0003", f"{what}: dimension {axis} is {n}, expected {d}", node)
            continue
        free = [k for k in dim_syms(d) if k not in dims]
        if len(free) > 1:
            later = True
            continue
        step = Step(0, axis, d, free[0] if free else None)
        try:
            if free:
                got = solve(step, n, dims.__getitem__)
                if not isinstance(got, int) or got < 0:
                    raise DimError("no size fits")
                dims[free[0]] = got
                continue
            want = dims_value_of(d, dims.__getitem__)
        except DimError:
            raise InterpError(
                "R0003",
                f"{what}: dimension {axis} is {n}, which `{display_dim(d)}` is for no size",
                node,
            ) from None
        if want != n:
            earlier = "an earlier argument bound it to" if isinstance(d, Sym) else "expected"
            raise InterpError(
                "R0003", f"{what}: dimension {axis} is {n}, but {earlier} {want}", node
            )
    return later


def bind_all(types, values, dims: dict[int, int], whats, node: bytes | None = None) -> None:
    """:func:`bind_dims` over all arguments, again while an axis waits for a dimension
    that a later argument binds."""
    while True:
        before = len(dims)
        later = False
        for t, v, what in zip(types, values, whats, strict=True):
            later |= bind_dims(t, v, dims, what, node)
        if not later or len(dims) == before:
            return


# --- host values in ---------------------------------------------------------------------


def _scalar_in(p: Prim, v, what: str):
    dt = dtype_of(p)
    if isinstance(v, np.ndarray):
        if v.shape != ():
            raise InputError("R0005", f"{what}: expected a `{p.name}` scalar, got shape {v.shape}")
        v = v[()]
    if isinstance(v, np.generic) and v.dtype != np.dtype(dt):
        narrower = v.dtype.itemsize <= np.dtype(dt).itemsize
        if not (v.dtype.kind in "iu" and p.is_int) and not (
            v.dtype.kind == "f" and p.is_float and narrower
        ):
            # a numpy f64 for an f32 parameter would be rounded silently: refuse it
            raise InputError("R0005", f"{what}: expected `{p.name}`, got {v.dtype}")
    if p.name == "bool":
        if not isinstance(v, bool | np.bool_):
            raise InputError("R0005", f"{what}: expected a bool, got {v!r}")
        return np.bool_(v)
    if p.is_int:
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
            raise InputError("R0005", f"{what}: expected an integer (`{p.name}`), got {v!r}")
        info = np.iinfo(dt)
        if not info.min <= int(v) <= info.max:
            raise InputError("R0005", f"{what}: {int(v)} does not fit in `{p.name}`")
        return dt(int(v))
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | float | np.integer | np.floating):
        raise InputError("R0005", f"{what}: expected a number (`{p.name}`), got {v!r}")
    return canon(dt(v))


def value_in(t: Type, v, what: str):
    """Convert one host argument to the interpreter's representation of type ``t``."""
    t = strip_ref(t)
    if isinstance(t, Prim):
        return _scalar_in(t, v, what)
    if isinstance(t, Tensor):
        dt = np.dtype(dtype_of(t.elem))
        if isinstance(v, np.ndarray):
            if v.dtype != dt:
                ok = (v.dtype.kind in "iu" and dt.kind in "iu") or (
                    v.dtype.kind == "f" and dt.kind == "f" and v.dtype.itemsize <= dt.itemsize
                )
                if not ok:
                    raise InputError(
                        "R0005", f"{what}: expected elements of `{t.elem.name}`, got {v.dtype}"
                    )
                if dt.kind in "iu":
                    info = np.iinfo(dt)
                    if v.size and (v.min() < info.min or v.max() > info.max):
                        raise InputError("R0005", f"{what}: values do not fit in `{t.elem.name}`")
            arr = np.array(v, dtype=dt, copy=True, order="C")
        else:
            try:
                arr = np.array(v, dtype=dt, order="C")
            except (TypeError, ValueError, OverflowError) as e:
                raise InputError("R0005", f"{what}: cannot read as `{t.elem.name}`: {e}") from None
        if arr.ndim != t.rank:
            raise InputError(
                "R0005", f"{what}: expected a rank-{t.rank} tensor, got shape {arr.shape}"
            )
        return canon(arr)
    if isinstance(t, Struct):
        if isinstance(v, dict):
            missing = [f for f, _ in t.fields if f not in v]
            extra = [k for k in v if t.field_index(k) is None]
            if missing or extra:
                raise InputError(
                    "R0005",
                    f"{what}: struct `{t.name}` needs fields {[f for f, _ in t.fields]}"
                    + (f"; missing {missing}" if missing else "")
                    + (f"; unknown {extra}" if extra else ""),
                )
            return tuple(value_in(ft, v[f], f"{what}.{f}") for f, ft in t.fields)
        if isinstance(v, tuple | list) and len(v) == len(t.fields):
            return tuple(
                value_in(ft, x, f"{what}.{f}") for (f, ft), x in zip(t.fields, v, strict=True)
            )
        raise InputError("R0005", f"{what}: expected a `{t.name}` (a dict of its fields)")
    raise InputError("R0005", f"{what}: cannot pass a value of type `{t}`")


# --- values out ------------------------------------------------------------------------


def value_out(t: Type, v):
    """The host form of a result: arrays and numpy scalars as they are, structs as dicts."""
    t = strip_ref(t)
    if isinstance(t, Struct):
        return {f: value_out(ft, x) for (f, ft), x in zip(t.fields, v, strict=True)}
    return v


def raw_bytes(t: Type, v) -> bytes:
    """The little-endian bytes of a value: elements in row-major order, struct fields in order."""
    t = strip_ref(t)
    if isinstance(t, Struct):
        if isinstance(v, dict):
            v = tuple(v[f] for f, _ in t.fields)
        return b"".join(raw_bytes(ft, x) for (_, ft), x in zip(t.fields, v, strict=True))
    if isinstance(t, Prim | Tensor):
        elem = t if isinstance(t, Prim) else t.elem
        dt = np.dtype(dtype_of(elem)).newbyteorder("<")
        return np.ascontiguousarray(np.asarray(v), dtype=dt).tobytes()
    if isinstance(t, Unit | TokenType):
        return b""
    raise TypeError(f"no byte form for `{t}`")


def flat_items(name: str, t: Type, v):
    """(dotted name, type, value) for each leaf of a value: structs become `p.pos.x`."""
    t = strip_ref(t)
    if isinstance(t, Struct):
        vals = tuple(v[f] for f, _ in t.fields) if isinstance(v, dict) else v
        for (f, ft), x in zip(t.fields, vals, strict=True):
            yield from flat_items(f"{name}.{f}", ft, x)
    else:
        yield name, t, v


def is_tensor_type(t: Type) -> bool:
    return isinstance(strip_ref(t), Tensor)


__all__ = [
    "DTYPES",
    "TOKEN",
    "Ref",
    "bind_all",
    "bind_dims",
    "concrete_shape",
    "concrete_type",
    "dtype_of",
    "flat_items",
    "raw_bytes",
    "value_in",
    "value_out",
]
