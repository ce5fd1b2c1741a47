"""The pure operations of kera_core/ir/ops.py, one small function each.

Each handler takes the node and its evaluated operands and returns the node's single
output. Control flow, calls and effects live in :mod:`kera_core.interp.machine`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

from kera_core.interp import elementary, fp, mathfns, reduce
from kera_core.interp.errors import InterpError, index_error
from kera_core.interp.values import concrete_shape, dtype_of
from kera_core.ir.node import Node
from kera_core.ir.types import Prim, Struct

Handler = Callable[..., object]
HANDLERS: dict[str, Handler] = {}


def handles(*names: str):
    def deco(fn: Handler) -> Handler:
        for n in names:
            HANDLERS[n] = fn
        return fn

    return deco


_FLOAT_SCALARS = (np.float32, np.float64)


def _is_float(x) -> bool:
    t = type(x)
    if t is np.ndarray:
        return x.dtype.kind == "f"
    return t in _FLOAT_SCALARS


def _scalar_back(r, like):
    """Keep scalars scalars: numpy 0-d results become numpy scalars again."""
    if isinstance(r, np.ndarray) and r.ndim == 0:
        return r[()]
    return r


def _both_scalar(a, b) -> bool:
    return not isinstance(a, np.ndarray) and not isinstance(b, np.ndarray)


# --- leaves ------------------------------------------------------------------------------


@handles("const")
def _const(node: Node, ctx):
    t: Prim = node.attr("type")
    v = int(node.attr("value"))
    if t.is_float:
        f = fp.FORMATS[t.name]
        return fp.canon(f.const(v & ((1 << f.bits) - 1)))
    if t.name == "bool":
        return np.bool_(v != 0)
    bits = t.bits
    v &= (1 << bits) - 1
    if t.is_signed and v >> (bits - 1):
        v -= 1 << bits
    return dtype_of(t)(v)


@handles("dim")
def _dim(node: Node, ctx):
    return np.int64(ctx.dims[node.attr("index")])


# --- arithmetic ----------------------------------------------------------------------------


def _float_or_wrap(op):
    def h(node: Node, ctx, a, b):
        r = op(a, b)
        t = type(r)
        if t in _FLOAT_SCALARS:
            return fp.nan_of(t) if r != r else r
        if t is np.ndarray and r.dtype.kind == "f":
            return fp.canon(r)
        return r

    return h


# Python's operators dispatch to numpy's scalar fast paths (a ufunc call on two numpy
# scalars costs ~10x more); on numpy scalars and arrays they are the same IEEE operations.
HANDLERS["add"] = _float_or_wrap(operator.add)
HANDLERS["sub"] = _float_or_wrap(operator.sub)
HANDLERS["mul"] = _float_or_wrap(operator.mul)


def _check_divisor(b, node: Node) -> None:
    if np.any(np.asarray(b) == 0):
        raise InterpError("R0002", "integer division by zero", node.hash)


def _int_div_rem(a, b, node: Node):
    """Truncating quotient and remainder (sign of the dividend); MIN / -1 wraps to MIN."""
    _check_divisor(b, node)
    a_arr, b_arr = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if a_arr.dtype.kind == "u":
        return np.floor_divide(a_arr, b_arr), np.remainder(a_arr, b_arr)
    minus_one = b_arr == -1
    bb = np.where(minus_one, b_arr.dtype.type(1), b_arr)
    r = np.fmod(a_arr, bb)  # C semantics: sign of the dividend; never MIN % -1
    q = (a_arr - r) // bb  # exact
    q = np.where(minus_one, np.negative(a_arr), q)  # wrapping negation
    r = np.where(minus_one, a_arr.dtype.type(0), r)
    return q, r


@handles("div")
def _div(node: Node, ctx, a, b):
    if _is_float(a):
        return fp.canon(a / b)
    q, _ = _int_div_rem(a, b, node)
    return _scalar_back(q, a)


@handles("rem")
def _rem(node: Node, ctx, a, b):
    if _is_float(a):
        return fp.canon(np.fmod(a, b))  # exact (C fmod)
    _, r = _int_div_rem(a, b, node)
    return _scalar_back(r, a)


@handles("minimum")
def _minimum(node: Node, ctx, a, b):
    return _scalar_back(fp.minimum(a, b), a)


@handles("maximum")
def _maximum(node: Node, ctx, a, b):
    return _scalar_back(fp.maximum(a, b), a)


@handles("fma")
def _fma(node: Node, ctx, a, b, c):
    return _scalar_back(fp.fma(a, b, c), a)


# --- bits ------------------------------------------------------------------------------------

HANDLERS["and"] = lambda node, ctx, a, b: a & b
HANDLERS["or"] = lambda node, ctx, a, b: a | b
HANDLERS["xor"] = lambda node, ctx, a, b: a ^ b
HANDLERS["land"] = lambda node, ctx, a, b: a & b  # both bool
HANDLERS["lor"] = lambda node, ctx, a, b: a | b

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _shift_count(a, c):
    a = np.asarray(a)
    u = _UNSIGNED[a.dtype.itemsize]
    width = a.dtype.itemsize * 8
    cnt = np.asarray(c).astype(u) & u(width - 1)  # the count modulo the bit width
    return a, u, cnt


@handles("shl")
def _shl(node: Node, ctx, a, c):
    arr, u, cnt = _shift_count(a, c)
    r = np.left_shift(arr.view(u), cnt).astype(u).view(arr.dtype)
    return _scalar_back(r, a)


@handles("shr")
def _shr(node: Node, ctx, a, c):
    arr, u, cnt = _shift_count(a, c)
    r = np.right_shift(arr, cnt.astype(arr.dtype))  # arithmetic for signed, logical otherwise
    return _scalar_back(np.asarray(r).astype(arr.dtype), a)


# --- comparisons -------------------------------------------------------------------------------

HANDLERS["eq"] = lambda node, ctx, a, b: a == b
HANDLERS["ne"] = lambda node, ctx, a, b: a != b
HANDLERS["lt"] = lambda node, ctx, a, b: a < b
HANDLERS["le"] = lambda node, ctx, a, b: a <= b
HANDLERS["gt"] = lambda node, ctx, a, b: a > b
HANDLERS["ge"] = lambda node, ctx, a, b: a >= b


# --- unary --------------------------------------------------------------------------------------


@handles("neg")
def _neg(node: Node, ctx, a):
    return fp.canon(-a)  # floats: flip the sign bit; integers wrap


@handles("not")
def _not(node: Node, ctx, a):
    return ~a  # logical on bool, bitwise on integers


@handles("abs")
def _abs(node: Node, ctx, a):
    return fp.canon(abs(a))  # floats: clear the sign bit; integers wrap (abs(MIN) == MIN)


# --- the exact functions (docs/semantics.md §6.8): numpy's are exact IEEE operations ---------


@handles("floor", "ceil", "trunc", "round", "round_half_away")
def _exact(node: Node, ctx, a):
    with np.errstate(all="ignore"):
        if node.op == "round_half_away":
            m = np.abs(a)
            t = np.trunc(m)
            # m - t is exact (Sterbenz for m >= 1; t = 0 below); inf - inf is NaN: not a tie
            r = np.copysign(np.where(m - t >= 0.5, t + 1, t).astype(m.dtype), a)
        else:
            fn = {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.rint}
            r = fn[node.op](a)
    return _scalar_back(fp.canon(np.asarray(r, dtype=np.asarray(a).dtype)), a)


@handles("copysign")
def _copysign(node: Node, ctx, a, b):
    # a NaN second operand counts as positive (its sign bit is no part of the value, §3)
    b = np.where(np.isnan(b), np.asarray(1, np.asarray(b).dtype), b)
    r = np.copysign(a, b).astype(np.result_type(a, b))
    return _scalar_back(fp.canon(np.asarray(r)), a if isinstance(a, np.ndarray) else b)


# --- the elementary functions of docs/semantics.md §6.9: one step list (interp/elementary.py) --


@handles(*elementary.UNARY)
def _elementary(node: Node, ctx, a):
    return _scalar_back(elementary.unary(node.op, a), a)


@handles(*elementary.BINARY)
def _elementary2(node: Node, ctx, a, b):
    r = elementary.binary(node.op, a, b)
    return _scalar_back(r, a if isinstance(a, np.ndarray) else b)


def _unary_float(name: str):
    fn = mathfns.UNARY[name]

    def h(node: Node, ctx, a):
        return _scalar_back(fn(a), a)

    return h


for _n in mathfns.UNARY:
    HANDLERS[_n] = _unary_float(_n)


@handles("cast")
def _cast(node: Node, ctx, a):
    to: Prim = node.attr("to")
    src = np.asarray(a)
    if to.name == "bool":
        raise InterpError("R0008", "a cast to bool is not a Kera operation", node.hash)
    if to.is_float:
        f = fp.FORMATS[to.name]
        r = fp.float_to_float(src, f) if src.dtype.kind == "f" else fp.int_to_float(src, f)
    elif src.dtype.kind == "f":
        r = fp.float_to_int(src, dtype_of(to))
    else:
        r = src.astype(dtype_of(to))  # integers wrap; bool gives 0 or 1
    return _scalar_back(np.asarray(r), a)


@handles("select")
def _select(node: Node, ctx, c, a, b):
    return a if bool(c) else b


# --- tensors ----------------------------------------------------------------------------------------


def check_indices(t: np.ndarray, idx, node: Node) -> tuple[int, ...]:
    if len(idx) == 1:
        i = int(idx[0])
        n = t.shape[0]
        if 0 <= i < n:
            return (i,)
        raise index_error(i, n, 0, node.hash)
    out = []
    for axis, (i, n) in enumerate(zip(idx, t.shape, strict=True)):
        iv = int(i)
        if not 0 <= iv < n:
            raise index_error(iv, n, axis, node.hash)
        out.append(iv)
    return tuple(out)


@handles("index")
def _index(node: Node, ctx, t, *idx):
    return t[check_indices(t, idx, node)]


def slice_region(t: np.ndarray, bounds, node: Node, ctx) -> tuple:
    """The numpy index of the region a ``slice``/``update_slice`` node takes, every bound
    checked (docs/semantics.md §7.8): an index ``0 ≤ i < n``, a range ``0 ≤ lo ≤ hi ≤ n``
    whose length is the type's (R0001 otherwise)."""
    want = concrete_shape(node.attr("type"), ctx.dims)
    out: list = []
    k = 0
    kept = 0
    for axis, a in enumerate(node.attr("axes")):
        n = t.shape[axis]
        if a == "index":
            i = int(bounds[k])
            k += 1
            if not 0 <= i < n:
                raise index_error(i, n, axis, node.hash)
            out.append(i)
            continue
        if a == "all":
            out.append(slice(None))
            kept += 1
            continue
        lo = int(bounds[k])
        hi = int(bounds[k + 1]) if a == "range" else n
        k += 2 if a == "range" else 1
        if not (0 <= lo <= hi <= n and hi - lo == want[kept]):
            raise InterpError(
                "R0001",
                f"slice {lo}..{hi} is out of bounds for dimension {axis} of size {n}",
                node.hash,
            )
        out.append(slice(lo, hi))
        kept += 1
    return tuple(out)


@handles("slice")
def _slice(node: Node, ctx, t, *bounds):
    return np.array(t[slice_region(t, bounds, node, ctx)], copy=True)


@handles("full")
def _full(node: Node, ctx, v):
    t = node.attr("type")
    return np.full(concrete_shape(t, ctx.dims), v, dtype=dtype_of(t.elem))


@handles("array")
def _array(node: Node, ctx, *elems):
    return np.stack([np.asarray(e) for e in elems])


def _nonempty(x, node: Node, what: str):
    if np.asarray(x).size == 0:
        raise InterpError("R0004", f"`{what}` of an empty tensor", node.hash)


def _along(node: Node, x, what: str, checked: bool, eps=None):
    """``what(x, …, axis)`` (docs/semantics.md §7.6): an empty axis is R0004 for the checked
    operations, whatever the other dimensions."""
    axis = node.attr("axis")
    x = np.asarray(x)
    if checked and x.shape[axis] == 0:
        raise InterpError("R0004", f"`{what}` along an empty axis", node.hash)
    return reduce.along(what, x, axis, eps)


@handles("sum")
def _sum(node: Node, ctx, x):
    if node.attr("axis") is not None:
        return _along(node, x, "sum", False)
    return reduce.total(x)


@handles("mean")
def _mean(node: Node, ctx, x):
    integer = np.asarray(x).dtype.kind != "f"
    if node.attr("axis") is not None:
        return _along(node, x, "mean", integer)
    if integer:
        _nonempty(x, node, "mean")
    return reduce.mean(x)


@handles("max")
def _max(node: Node, ctx, x):
    if node.attr("axis") is not None:
        return _along(node, x, "max", True)
    _nonempty(x, node, "max")
    return reduce.reduce_max(x)


@handles("min")
def _min(node: Node, ctx, x):
    if node.attr("axis") is not None:
        return _along(node, x, "min", True)
    _nonempty(x, node, "min")
    return reduce.reduce_min(x)


@handles("argmax")
def _argmax(node: Node, ctx, x):
    if node.attr("axis") is not None:
        return _along(node, x, "argmax", True)
    _nonempty(x, node, "argmax")
    return reduce.argmax(x)


@handles("argmin")
def _argmin(node: Node, ctx, x):
    if node.attr("axis") is not None:
        return _along(node, x, "argmin", True)
    _nonempty(x, node, "argmin")
    return reduce.argmin(x)


@handles("dot")
def _dot(node: Node, ctx, x, y):
    _same_shape(x, y, node, "dot")
    return reduce.dot(x, y)


def _same_shape(x, y, node: Node, what: str) -> None:
    if np.shape(x) != np.shape(y):
        raise InterpError("R0003", f"`{what}` of shapes {np.shape(x)} and {np.shape(y)}", node.hash)


@handles("matmul")
def _matmul(node: Node, ctx, a, b):
    if np.shape(a)[-1] != np.shape(b)[0]:
        raise InterpError("R0003", f"`matmul` of shapes {np.shape(a)} and {np.shape(b)}", node.hash)
    return reduce.matmul(a, b)


@handles("softmax")
def _softmax(node: Node, ctx, x):
    if node.attr("axis") is not None:
        return _along(node, x, "softmax", True)
    _nonempty(x, node, "softmax")
    return reduce.softmax(x)


@handles("layernorm")
def _layernorm(node: Node, ctx, x, eps):
    if node.attr("axis") is not None:
        return _along(node, x, "layernorm", False, eps)
    return reduce.layernorm(x, eps)


@handles("conv1d")
def _conv1d(node: Node, ctx, x, k):
    return reduce.conv1d(x, k)


# --- shape operations (docs/semantics.md §7.7) -----------------------------------------------------
#
# Every result is a fresh array (never a view of an operand: the machine updates a tensor in
# place when no one else holds it).


def _count_check(node: Node, got: int, want: int, what: str) -> None:
    if got != want:
        raise InterpError("R0003", f"`{what}`: {got} elements where {want} are needed", node.hash)


@handles("transpose")
def _transpose(node: Node, ctx, x):
    return np.array(np.transpose(np.asarray(x), node.attr("perm")), copy=True, order="C")


@handles("reshape")
def _reshape(node: Node, ctx, x):
    shape = concrete_shape(node.attr("type"), ctx.dims)
    x = np.asarray(x)
    _count_check(node, x.size, int(np.prod(shape, dtype=np.int64)), "reshape")
    return np.array(x.reshape(shape), copy=True)


@handles("broadcast_to")
def _broadcast_to(node: Node, ctx, x):
    shape = concrete_shape(node.attr("type"), ctx.dims)
    return np.array(np.broadcast_to(np.asarray(x), shape), copy=True)


@handles("outer")
def _outer(node: Node, ctx, u, v):
    with np.errstate(all="ignore"):
        return fp.canon(np.multiply.outer(np.asarray(u), np.asarray(v)))


@handles("concat")
def _concat(node: Node, ctx, *xs):
    t = node.attr("type")
    axis = node.attr("axis")
    want = concrete_shape(t, ctx.dims)[axis]
    _count_check(node, sum(np.shape(x)[axis] for x in xs), want, "concat")
    return np.concatenate([np.asarray(x) for x in xs], axis=axis)


@handles("stack")
def _stack(node: Node, ctx, *xs):
    return np.stack([np.asarray(x) for x in xs], axis=node.attr("axis"))


@handles("where")
def _where(node: Node, ctx, c, a, b):
    r = np.where(c, a, b)
    return r[()] if r.ndim == 0 else r


@handles("clone")
def _clone(node: Node, ctx, x):
    return np.array(x, copy=True)


def _indices_as(t, n: int):
    """``i as E`` for i = 0 … n−1 (semantics.md §5)."""
    i = np.arange(n, dtype=np.int64)
    if t.is_float:
        return fp.int_to_float(i, fp.FORMATS[t.name])
    return i.astype(dtype_of(t))


@handles("arange")
def _arange(node: Node, ctx, *start_step):
    t = node.attr("type")
    (n,) = concrete_shape(t, ctx.dims)
    r = _indices_as(t.elem, n)
    if start_step:
        start, step = start_step
        with np.errstate(all="ignore"):
            r = start + r * step
    return fp.canon(np.asarray(r, dtype=dtype_of(t.elem)))


@handles("linspace")
def _linspace(node: Node, ctx, lo, hi):
    t = node.attr("type")
    (n,) = concrete_shape(t, ctx.dims)
    f = fp.FORMATS[t.elem.name]
    with np.errstate(all="ignore"):
        div = fp.int_to_float(np.int64(max(n - 1, 1)), f)[()]
        step = (hi - lo) / div
        r = lo + _indices_as(t.elem, n) * step
    r = np.asarray(r, dtype=dtype_of(t.elem))
    if n >= 2:
        r[n - 1] = hi
    return fp.canon(r)


# --- structs ------------------------------------------------------------------------------------------


@handles("struct")
def _struct(node: Node, ctx, *fields):
    return tuple(fields)


@handles("field")
def _field(node: Node, ctx, s):
    return s[node.attr("index")]


@handles("set_field")
def _set_field(node: Node, ctx, s, v):
    i = node.attr("index")
    return (*s[:i], v, *s[i + 1 :])


@handles("range")
def _range(node: Node, ctx, lo, hi):
    """A range value: the Python ``range`` of its integers (exact: no wrap-around at the
    type's maximum) and the scalar type its elements take."""
    stop = int(hi) + 1 if node.attr("inclusive", False) else int(hi)
    return (range(int(lo), stop), type(lo))


@handles("range_rev")
def _range_rev(node: Node, ctx, r):
    return (r[0][::-1], r[1])


@handles("range_step")
def _range_step(node: Node, ctx, r, k):
    if int(k) <= 0:
        raise InterpError(
            "R0011", f"the step of `step_by` must be positive, got {int(k)}", node.hash
        )
    return (r[0][:: int(k)], r[1])


def struct_type(node: Node) -> Struct:
    return node.attr("type")


__all__ = ["HANDLERS", "check_indices"]
