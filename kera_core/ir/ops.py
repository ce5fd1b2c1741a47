"""The opcode registry: each operation's arity, effect, type rule and meaning, in one place.

A type rule takes the input types and the node's attributes and returns the output
types, or raises :class:`TypeRuleError` with a readable message. The graph builder
uses these rules to type what it builds, and :mod:`kera_core.ir.verify` re-runs
them over a finished graph, so a node whose stored types disagree with its inputs
is caught wherever it came from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import gcd

from kera_core.ir.types import (
    BOOL,
    I64,
    TOKEN,
    Dim,
    DimExpr,
    FnType,
    Prim,
    RangeType,
    Ref,
    Struct,
    Sym,
    Tensor,
    Type,
    dim_names_for_display,
    dim_scale,
    display_dim,
    strip_ref,
)


class TypeRuleError(Exception):
    """An operation was applied to operands of the wrong types or shapes."""

    def __init__(self, message: str, code: str = "K0301") -> None:
        super().__init__(message)
        self.code = code


Rule = Callable[[tuple[Type, ...], dict], tuple[Type, ...]]


@dataclass(frozen=True)
class OpInfo:
    name: str
    arity: int | None  # None: variadic
    rule: Rule
    effect: str | None
    doc: str


REGISTRY: dict[str, OpInfo] = {}


def op(name: str, arity: int | None, doc: str, effect: str | None = None):
    def deco(rule: Rule) -> Rule:
        REGISTRY[name] = OpInfo(name, arity, rule, effect, doc)
        return rule

    return deco


def info(name: str) -> OpInfo:
    return REGISTRY[name]


def infer(name: str, inputs: tuple[Type, ...], attrs: dict) -> tuple[Type, ...]:
    spec = REGISTRY[name]
    if spec.arity is not None and len(inputs) != spec.arity:
        raise TypeRuleError(f"`{name}` takes {spec.arity} operand(s), got {len(inputs)}", "K0303")
    return spec.rule(inputs, attrs)


def infer_named(
    name: str, inputs: tuple[Type, ...], attrs: dict, dim_names: tuple[str, ...]
) -> tuple[Type, ...]:
    """:func:`infer` with ``dim_names`` spelling symbolic dimensions in its error messages.

    A type rule is a pure function of its inputs that reads the display names only to
    word a failure, so it runs bare, and again with the names set only when it fails: the
    common path pays no context switch."""
    try:
        return infer(name, inputs, attrs)
    except TypeRuleError:
        pass
    with dim_names_for_display(dim_names):
        return infer(name, inputs, attrs)


# --- shape helpers -------------------------------------------------------------


def value_type(t: Type) -> Type:
    """Reading through a shared or mutable reference gives the referenced value."""
    return strip_ref(t)


def broadcast_shapes(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """NumPy-style broadcasting, right-aligned; a dimension broadcasts only if it is 1.

    Two symbolic dimensions must be the same symbol; a symbol against a static size
    other than 1 is an error (the size is not known to match).
    """
    if a == b or not b:  # the common cases (equal shapes, a scalar): what the loop gives
        return a
    if not a:
        return b
    out: list[Dim] = []
    for i in range(1, max(len(a), len(b)) + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da == db:
            out.append(da)
        elif da == 1:
            out.append(db)
        elif db == 1:
            out.append(da)
        else:
            raise TypeRuleError(f"cannot broadcast dimension {da} against {db}", "K0305")
    return tuple(reversed(out))


def _shape_space(t: Type) -> tuple[tuple[Dim, ...], str | None]:
    if isinstance(t, Tensor):
        return t.shape, t.space
    return (), None


def _elementwise(types: tuple[Type, ...], check_elem: Callable[[Prim], bool], what: str) -> tuple:
    """Common part of elementwise rules: operand elements equal, shapes broadcast."""
    vals = [value_type(t) for t in types]
    elem: Prim | None = None
    shape: tuple[Dim, ...] = ()
    space: str | None = None
    for t in vals:
        if isinstance(t, Prim):
            e = t
        elif isinstance(t, Tensor):
            e = t.elem
        else:
            raise TypeRuleError(f"expected {what}, found `{t}`", "K0308")
        if not check_elem(e):
            raise TypeRuleError(f"expected {what}, found `{t}`", "K0308")
        if elem is None:
            elem = e
        elif e != elem:
            raise TypeRuleError(
                f"operands have different element types: `{vals[0]}` and `{t}`"
                " (use `as` to convert)",
                "K0301",
            )
        s, sp = _shape_space(t)
        if sp is not None:
            if space is not None and sp != space:
                raise TypeRuleError(
                    f"operands live in different memory spaces: @{space} and @{sp}", "K0406"
                )
            space = sp
        shape = broadcast_shapes(shape, s)
    assert elem is not None
    return elem, shape, space


def _make(elem: Prim, shape: tuple[Dim, ...], space: str | None) -> Type:
    if not shape and space is None:
        return elem
    return Tensor(elem, shape, space or "host")


def _numeric(p: Prim) -> bool:
    return p.name != "bool"


def _float(p: Prim) -> bool:
    return p.is_float


def _integral(p: Prim) -> bool:
    return p.is_int or p.name == "bool"


# --- leaves ----------------------------------------------------------------------


@op("const", 0, "a constant; attr `value` is the integer value or the IEEE-754 bit pattern")
def _const(inputs, attrs):
    return (attrs["type"],)


@op("param", 0, "the region's parameter number `index`, of type `type`")
def _param(inputs, attrs):
    return (attrs["type"],)


@op("dim", 0, "the run-time size bound to the function's dimension parameter `index`")
def _dim(inputs, attrs):
    return (I64,)


# --- elementwise arithmetic --------------------------------------------------------

for _name, _doc in [
    ("add", "a + b, rounded once (IEEE-754) or wrapping"),
    ("sub", "a - b, rounded once or wrapping"),
    ("mul", "a * b, rounded once or wrapping"),
    ("div", "a / b; integer division truncates toward zero, x / 0 is a checked error"),
    ("rem", "remainder with the sign of the dividend"),
    ("minimum", "the smaller operand; NaN if either is NaN; -0 < +0"),
    ("maximum", "the larger operand; NaN if either is NaN; -0 < +0"),
]:

    @op(_name, 2, _doc)
    def _arith(inputs, attrs):
        return (_make(*_elementwise(inputs, _numeric, "a number or numeric tensor")),)


for _name, _doc in [
    ("and", "bitwise and (logical and on bool)"),
    ("or", "bitwise or (logical or on bool)"),
    ("xor", "bitwise exclusive or"),
    ("shl", "shift left, the count taken modulo the bit width"),
    ("shr", "shift right (arithmetic for signed types), count modulo the bit width"),
]:

    @op(_name, 2, _doc)
    def _bits(inputs, attrs):
        return (_make(*_elementwise(inputs, _integral, "an integer or bool")),)


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):

    @op(_name, 2, "IEEE-754 comparison (false with NaN, except `ne`); integer comparison")
    def _cmp(inputs, attrs):
        _, shape, space = _elementwise(inputs, lambda p: True, "comparable operands")
        return (_make(BOOL, shape, space),)


@op("land", 2, "logical and of two bools (both sides are evaluated; they are pure)")
def _land(inputs, attrs):
    return (_make(*_elementwise(inputs, lambda p: p == BOOL, "bool")),)


@op("lor", 2, "logical or of two bools (both sides are evaluated; they are pure)")
def _lor(inputs, attrs):
    return (_make(*_elementwise(inputs, lambda p: p == BOOL, "bool")),)


@op("neg", 1, "negation: flips the sign bit of floats, wraps for integers")
def _neg(inputs, attrs):
    return (_make(*_elementwise(inputs, _numeric, "a number")),)


@op("not", 1, "logical not of bool, bitwise not of integers")
def _not(inputs, attrs):
    return (_make(*_elementwise(inputs, _integral, "a bool or integer")),)


@op("abs", 1, "absolute value (clears the sign bit of floats; wraps for the minimum integer)")
def _abs(inputs, attrs):
    return (_make(*_elementwise(inputs, _numeric, "a number")),)


for _name in ("exp", "log", "sqrt", "tanh", "sigmoid"):

    @op(_name, 1, "elementwise; defined in docs/semantics.md as a fixed sequence of operations")
    def _unary_float(inputs, attrs):
        return (_make(*_elementwise(inputs, _float, "a float or float tensor")),)


for _name, _doc in [
    ("floor", "the largest integer <= x, elementwise (exact; -0 and the sign of zero kept)"),
    ("ceil", "the smallest integer >= x, elementwise (exact; ceil(-0.5) = -0)"),
    ("trunc", "x rounded toward zero, elementwise (exact; trunc(-0.7) = -0)"),
    ("round", "x rounded to the nearest integer, ties to even, elementwise (exact)"),
    ("round_half_away", "x rounded to the nearest integer, ties away from zero (exact)"),
]:

    @op(_name, 1, _doc + "; docs/semantics.md §6.8")
    def _exact_float(inputs, attrs):
        return (_make(*_elementwise(inputs, _float, "a float or float tensor")),)


@op(
    "copysign",
    2,
    "the magnitude of the first operand with the sign bit of the second (a NaN "
    "second operand counts as positive), elementwise; docs/semantics.md §6.8",
)
def _copysign(inputs, attrs):
    return (_make(*_elementwise(inputs, _float, "a float or float tensor")),)


for _name, _doc in [
    ("exp2", "2 to the power x"),
    ("log2", "the base-2 logarithm of x"),
    ("expm1", "e^x - 1, accurate near 0"),
    ("log1p", "log(1 + x), accurate near 0"),
    ("sin", "the sine of x (radians)"),
    ("cos", "the cosine of x (radians)"),
    ("tan", "the tangent of x (radians)"),
    ("erf", "the error function of x"),
    ("erfc", "the complementary error function 1 - erf(x), without cancellation"),
]:

    @op(_name, 1, _doc + ", elementwise; a fixed step list, docs/semantics.md §6.9")
    def _elementary_float(inputs, attrs):
        return (_make(*_elementwise(inputs, _float, "a float or float tensor")),)


@op(
    "hypot",
    2,
    "sqrt(x^2 + y^2) without undue overflow or underflow, elementwise; a fixed step list, "
    "docs/semantics.md §6.9",
)
def _hypot(inputs, attrs):
    return (_make(*_elementwise(inputs, _float, "a float or float tensor")),)


for _name, _doc in [
    ("atan2", "the angle of the point (x, y) for operands (y, x), in [-pi, pi]"),
    ("pow", "x to the power y (C99 Annex F for zeros, infinities and negative x)"),
]:

    @op(_name, 2, _doc + ", elementwise; a fixed step list, docs/semantics.md §6.9")
    def _elementary_float2(inputs, attrs):
        return (_make(*_elementwise(inputs, _float, "a float or float tensor")),)


@op("fma", 3, "a*b+c with one rounding; the only fused operation in Kera")
def _fma(inputs, attrs):
    return (_make(*_elementwise(inputs, _float, "a float or float tensor")),)


@op("cast", 1, "convert each element to `to` (saturating float->int, NaN -> 0)")
def _cast(inputs, attrs):
    t = value_type(inputs[0])
    to: Prim = attrs["to"]
    if isinstance(t, Prim):
        return (to,)
    if isinstance(t, Tensor):
        return (Tensor(to, t.shape, t.space),)
    raise TypeRuleError(f"cannot cast `{t}` to `{to}`", "K0313")


@op("select", 3, "the second operand if the bool scalar is true, else the third (whole values)")
def _select(inputs, attrs):
    c, a, b = (value_type(t) for t in inputs)
    if c != BOOL:
        raise TypeRuleError(f"select needs a bool condition, found `{c}`")
    if a != b:
        raise TypeRuleError(f"select branches differ: `{a}` and `{b}`")
    return (a,)


# --- tensors -----------------------------------------------------------------------


def _tensor_arg(t: Type, what: str) -> Tensor:
    v = value_type(t)
    if not isinstance(v, Tensor):
        raise TypeRuleError(f"{what} expects a tensor, found `{t}`", "K0308")
    return v


def _index_types(inputs: tuple[Type, ...], rank: int) -> None:
    if len(inputs) != rank:
        raise TypeRuleError(f"expected {rank} index(es), found {len(inputs)}", "K0304")
    for t in inputs:
        if not (isinstance(t, Prim) and t.is_int):
            raise TypeRuleError(f"an index must be an integer, found `{t}`", "K0301")


@op("index", None, "read one element: tensor, then one integer index per dimension")
def _index(inputs, attrs):
    t = _tensor_arg(inputs[0], "indexing")
    _index_types(inputs[1:], t.rank)
    return (t.elem,)


@op("update", None, "a copy of the tensor with one element replaced (a functional store)")
def _update(inputs, attrs):
    t = _tensor_arg(inputs[0], "assignment")
    _index_types(inputs[1:-1], t.rank)
    v = value_type(inputs[-1])
    if v != t.elem:
        raise TypeRuleError(f"cannot store `{v}` into an element of `{t}`", "K0301")
    return (t,)


# --- slices (docs/language.md §6.14, docs/semantics.md §7.8) ------------------------------------

# how a slice takes each axis of its tensor, and how many integer operands that axis has
SLICE_AXES = {"index": 1, "range": 2, "from": 1, "all": 0}


def slice_operand_count(axes: tuple) -> int:
    return sum(SLICE_AXES[a] for a in axes)


def _slice_rule(t: Tensor, operands: tuple[Type, ...], attrs: dict) -> Tensor:
    """Check a slice's attributes and operands against its tensor; its result type."""
    axes = attrs.get("axes")
    to = attrs.get("type")
    if not isinstance(axes, tuple) or any(a not in SLICE_AXES for a in axes):
        raise TypeRuleError(f"a slice needs `axes` (one of {sorted(SLICE_AXES)} per axis)", "K0326")
    if len(axes) != t.rank:
        raise TypeRuleError(f"expected {t.rank} index(es), found {len(axes)}", "K0304")
    if len(operands) != slice_operand_count(axes):
        raise TypeRuleError(
            f"the slice takes {slice_operand_count(axes)} bound(s), found {len(operands)}", "K0303"
        )
    for o in operands:
        if not (isinstance(o, Prim) and o.is_int):
            raise TypeRuleError(f"a slice bound must be an integer, found `{o}`", "K0327")
    kept = [k for k, a in enumerate(axes) if a != "index"]
    if (
        not isinstance(to, Tensor)
        or to.elem != t.elem
        or to.space != t.space
        or to.rank != len(kept)
        or any(to.shape[j] != t.shape[k] for j, k in enumerate(kept) if axes[k] == "all")
    ):
        raise TypeRuleError(f"`{to}` is not a slice of `{t}` along {axes}", "K0326")
    return to


@op(
    "slice",
    None,
    "a copy of a region of a tensor: per axis (attr `axes`) one index (`index`, the axis is "
    "dropped), `lo`, `hi` (`range`: elements lo … hi−1), `lo` (`from`: lo to the end) or "
    "nothing (`all`); the result type is `type`",
)
def _slice(inputs, attrs):
    t = _tensor_arg(inputs[0], "slicing")
    return (_slice_rule(t, inputs[1:], attrs),)


@op(
    "update_slice",
    None,
    "a copy of the tensor with the region `slice` (same attrs and bounds) reads replaced by "
    "the last operand (a functional store through a view)",
)
def _update_slice(inputs, attrs):
    t = _tensor_arg(inputs[0], "assignment")
    to = _slice_rule(t, inputs[1:-1], attrs)
    v = value_type(inputs[-1])
    if v != to:
        raise TypeRuleError(f"cannot store `{v}` into the slice `{to}` of `{t}`", "K0301")
    return (t,)


@op("full", 1, "a tensor of type `type` with every element equal to the operand")
def _full(inputs, attrs):
    t: Tensor = attrs["type"]
    if value_type(inputs[0]) != t.elem:
        raise TypeRuleError(f"fill value `{inputs[0]}` does not match `{t.elem}`", "K0301")
    return (t,)


@op("array", None, "a tensor from its elements in order (stacking tensors adds a dimension)")
def _array(inputs, attrs):
    if not inputs:
        raise TypeRuleError("an array literal needs at least one element", "K0301")
    e = value_type(inputs[0])
    for t in inputs[1:]:
        if value_type(t) != e:
            raise TypeRuleError(f"array elements differ: `{e}` and `{t}`", "K0301")
    if isinstance(e, Prim):
        return (Tensor(e, (len(inputs),)),)
    if isinstance(e, Tensor) and e.space == "host":
        return (Tensor(e.elem, (len(inputs), *e.shape)),)
    raise TypeRuleError(f"array elements must be numbers or host tensors, found `{e}`", "K0301")


def reduced_axis(t: Tensor, attrs: dict) -> int | None:
    """The ``axis`` attribute of a reduction or composite (None: the whole tensor), checked
    against the operand's rank."""
    axis = attrs.get("axis")
    if axis is None:
        return None
    if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < t.rank:
        raise TypeRuleError(f"axis {axis} is out of range for `{t}` (rank {t.rank})", "K0316")
    return axis


def _reduced(elem: Prim, t: Tensor, attrs: dict) -> Type:
    """The result of reducing ``t`` to ``elem``s: a scalar, or ``t`` without the axis."""
    axis = reduced_axis(t, attrs)
    if axis is None:
        return elem
    shape = t.shape[:axis] + t.shape[axis + 1 :]
    return Tensor(elem, shape, t.space) if shape else elem


for _name, _doc in [
    ("sum", "sum of all elements in the canonical reduction order (docs/semantics.md)"),
    ("max", "largest element; NaN if any element is NaN"),
    ("min", "smallest element; NaN if any element is NaN"),
    ("mean", "sum / count, each step rounded once"),
]:

    @op(_name, 1, _doc + "; attr `axis`: along that axis only (the axis is removed)")
    def _reduce(inputs, attrs):
        t = _tensor_arg(inputs[0], "a reduction")
        if not t.elem.is_float and not t.elem.is_int:
            raise TypeRuleError(f"cannot reduce `{t}`", "K0308")
        return (_reduced(t.elem, t, attrs),)


@op("argmax", 1, "index of the largest element; ties break to the lowest index; attr `axis`")
def _argmax(inputs, attrs):
    t = _tensor_arg(inputs[0], "argmax")
    return (_reduced(I64, t, attrs),)


@op("argmin", 1, "index of the smallest element; ties break to the lowest index; attr `axis`")
def _argmin(inputs, attrs):
    t = _tensor_arg(inputs[0], "argmin")
    return (_reduced(I64, t, attrs),)


@op("dot", 2, "sum of elementwise products of two equal-shape vectors, canonical order")
def _dot(inputs, attrs):
    a = _tensor_arg(inputs[0], "dot")
    b = _tensor_arg(inputs[1], "dot")
    if a.rank != 1 or b.rank != 1:
        raise TypeRuleError(f"dot expects two vectors, found `{a}` and `{b}`", "K0302")
    if a.elem != b.elem:
        raise TypeRuleError(f"dot operands differ: `{a}` and `{b}`", "K0301")
    if a.shape != b.shape:
        raise TypeRuleError(f"dot operands have different lengths: `{a}` and `{b}`", "K0302")
    return (a.elem,)


@op("matmul", 2, "[M, K] x [K, N] -> [M, N] (or matrix-vector), k summed in increasing order")
def _matmul(inputs, attrs):
    a = _tensor_arg(inputs[0], "matmul")
    b = _tensor_arg(inputs[1], "matmul")
    if a.rank not in (1, 2) or b.rank not in (1, 2) or a.rank + b.rank < 3:
        raise TypeRuleError(
            f"matmul expects a matrix and a matrix or vector, found `{a}` and `{b}`", "K0302"
        )
    if a.elem != b.elem:
        raise TypeRuleError(f"matmul operands differ: `{a}` and `{b}`", "K0301")
    if a.space != b.space:
        raise TypeRuleError(f"matmul operands live in @{a.space} and @{b.space}", "K0406")
    if a.shape[-1] != b.shape[0]:
        raise TypeRuleError(
            f"matmul inner dimensions differ: `{a}` has {display_dim(a.shape[-1])} columns, "
            f"`{b}` has {display_dim(b.shape[0])} rows",
            "K0306",
        )
    return (Tensor(a.elem, a.shape[:-1] + b.shape[1:], a.space),)


@op(
    "softmax",
    1,
    "exp(x - max(x)) / sum(exp(x - max(x))) over a vector; attr `axis`: along that axis",
)
def _softmax(inputs, attrs):
    t = _tensor_arg(inputs[0], "softmax")
    if not t.elem.is_float:
        raise TypeRuleError(f"softmax expects floats, found `{t}`", "K0308")
    reduced_axis(t, attrs)
    return (t,)


@op("layernorm", 2, "(x - mean) / sqrt(var + eps) over a vector; attr `axis`: along that axis")
def _layernorm(inputs, attrs):
    t = _tensor_arg(inputs[0], "layernorm")
    if not t.elem.is_float or value_type(inputs[1]) != t.elem:
        raise TypeRuleError(f"layernorm expects a float vector and an `{t.elem}` eps", "K0301")
    reduced_axis(t, attrs)
    return (t,)


@op("conv1d", 2, "out[i] = sum_j x[i + j] * k[j], x read as 0 past its end; out has x's shape")
def _conv1d(inputs, attrs):
    x = _tensor_arg(inputs[0], "conv1d")
    k = _tensor_arg(inputs[1], "conv1d")
    if x.rank != 1 or k.rank != 1 or x.elem != k.elem or not x.elem.is_float:
        raise TypeRuleError(f"conv1d expects two float vectors, found `{x}` and `{k}`", "K0302")
    return (x,)


# --- shape operations (docs/semantics.md §7.7) ---------------------------------------------
#
# New opcodes (no existing opcode gained an attribute, so every existing fingerprint is
# unchanged). The data-movement operations copy elements' bits unchanged; `outer`, `arange`
# (with a start and step) and `linspace` round.


def element_count(shape: tuple[Dim, ...]) -> tuple[int, tuple]:
    """A shape's element count as (product of its static sizes, its symbolic factors
    sorted: a symbol's index, or a dimension expression's normal form)."""
    n = 1
    syms: list[tuple] = []
    for d in shape:
        if isinstance(d, int):
            n *= d
        else:
            if isinstance(d, DimExpr) and d.div == 1:  # `2 * N + 2` counts as 2 · (N + 1)
                g = gcd(d.const, *(c for _, c in d.terms))
                n *= g
                d = dim_scale(d, 1, g)
            syms.append((d.index,) if isinstance(d, Sym) else (-1, d.terms, d.const, d.div))
    return n, tuple(sorted(syms))


def same_count(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool | None:
    """Do two shapes have the same element count: True (for every size of the dimensions),
    False (both static and different), None (known only at run time: checked, R0003)."""
    ca, cb = element_count(a), element_count(b)
    if ca == cb:
        return True
    if not ca[1] and not cb[1]:
        return False
    return None


def _axis_in(axis, n: int, what: str) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool) or not 0 <= axis < n:
        raise TypeRuleError(f"axis {axis} is out of range for {what}", "K0316")
    return axis


@op("transpose", 1, "axes permuted: result axis i is input axis `perm[i]` (exact)")
def _transpose(inputs, attrs):
    t = _tensor_arg(inputs[0], "transpose")
    perm = attrs.get("perm")
    if not isinstance(perm, tuple) or sorted(perm) != list(range(t.rank)):
        raise TypeRuleError(
            f"transpose of `{t}` needs a permutation of its {t.rank} axes, found {perm}", "K0316"
        )
    return (Tensor(t.elem, tuple(t.shape[p] for p in perm), t.space),)


@op("reshape", 1, "the elements in row-major order under the shape of `type` (exact)")
def _reshape(inputs, attrs):
    t = _tensor_arg(inputs[0], "reshape")
    to: Tensor = attrs["type"]
    if t.elem != to.elem:
        raise TypeRuleError(f"cannot reshape `{t}` into `{to}`: element types differ", "K0301")
    if t.space != to.space:
        raise TypeRuleError(f"cannot reshape `{t}` into `{to}`: memory spaces differ", "K0406")
    if same_count(t.shape, to.shape) is False:
        raise TypeRuleError(
            f"cannot reshape `{t}` ({element_count(t.shape)[0]} elements) into `{to}` "
            f"({element_count(to.shape)[0]} elements)",
            "K0302",
        )
    return (to,)


@op("broadcast_to", 1, "the operand repeated NumPy-style to the shape of `type` (exact)")
def _broadcast_to(inputs, attrs):
    x = value_type(inputs[0])
    to: Tensor = attrs["type"]
    if isinstance(x, Prim):
        shape: tuple[Dim, ...] = ()
        elem = x
    elif isinstance(x, Tensor):
        shape, elem = x.shape, x.elem
        if x.space != to.space:
            raise TypeRuleError(f"cannot broadcast `{x}` to `{to}`: memory spaces differ", "K0406")
    else:
        raise TypeRuleError(f"broadcast_to expects a number or tensor, found `{x}`", "K0308")
    if elem != to.elem:
        raise TypeRuleError(f"cannot broadcast `{x}` to `{to}`: element types differ", "K0301")
    if len(shape) > to.rank:
        raise TypeRuleError(f"cannot broadcast `{x}` to `{to}`: it has fewer axes", "K0305")
    for i in range(1, len(shape) + 1):
        d, dt = shape[-i], to.shape[-i]
        if d != dt and d != 1:
            raise TypeRuleError(
                f"cannot broadcast `{x}` to `{to}`: dimension {display_dim(d)} against "
                f"{display_dim(dt)}",
                "K0305",
            )
    return (to,)


@op("outer", 2, "out[i, j] = u[i] * v[j], each product rounded once (integers wrap)")
def _outer(inputs, attrs):
    u = _tensor_arg(inputs[0], "outer")
    v = _tensor_arg(inputs[1], "outer")
    if u.rank != 1 or v.rank != 1:
        raise TypeRuleError(f"outer expects two vectors, found `{u}` and `{v}`", "K0302")
    if u.elem != v.elem:
        raise TypeRuleError(f"outer operands differ: `{u}` and `{v}`", "K0301")
    if not _numeric(u.elem):
        raise TypeRuleError(f"outer expects numbers, found `{u}`", "K0308")
    if u.space != v.space:
        raise TypeRuleError(f"outer operands live in @{u.space} and @{v.space}", "K0406")
    return (Tensor(u.elem, (u.shape[0], v.shape[0]), u.space),)


@op("concat", None, "the operands joined along `axis`; the result type is `type` (exact)")
def _concat(inputs, attrs):
    to: Tensor = attrs["type"]
    axis = _axis_in(attrs.get("axis"), to.rank, f"`{to}` (rank {to.rank})")
    if not inputs:
        raise TypeRuleError("concat needs at least one tensor", "K0303")
    static = isinstance(to.shape[axis], int)
    total = 0
    for it in inputs:
        t = _tensor_arg(it, "concat")
        if t.elem != to.elem:
            raise TypeRuleError(f"concat operands differ: `{t}` and `{to.elem}`", "K0301")
        if t.space != to.space:
            raise TypeRuleError(f"concat operands live in @{t.space} and @{to.space}", "K0406")
        if t.rank != to.rank:
            raise TypeRuleError(f"concat operands differ in rank: `{t}` and `{to}`", "K0302")
        for k in range(to.rank):
            if k != axis and t.shape[k] != to.shape[k]:
                raise TypeRuleError(
                    f"concat operands differ on axis {k}: `{t}` and `{to}`"
                    f" (only axis {axis} may differ)",
                    "K0302",
                )
        d = t.shape[axis]
        static = static and isinstance(d, int)
        total += d if isinstance(d, int) else 0
    if static and total != to.shape[axis]:
        raise TypeRuleError(
            f"concat along axis {axis} gives {total} elements, not {to.shape[axis]}", "K0302"
        )
    return (to,)


@op("stack", None, "the operands (one type) stacked along a new axis `axis` (exact)")
def _stack(inputs, attrs):
    if not inputs:
        raise TypeRuleError("stack needs at least one tensor", "K0303")
    t = _tensor_arg(inputs[0], "stack")
    for it in inputs[1:]:
        if value_type(it) != t:
            raise TypeRuleError(f"stack operands differ: `{t}` and `{it}`", "K0302")
    axis = _axis_in(attrs.get("axis"), t.rank + 1, f"stacking `{t}` (axes 0 to {t.rank})")
    return (Tensor(t.elem, (*t.shape[:axis], len(inputs), *t.shape[axis:]), t.space),)


@op(
    "where",
    3,
    "elementwise: the element of the second operand where the bool is true, else the third's",
)
def _where(inputs, attrs):
    c, a, b = (value_type(t) for t in inputs)
    cond = c.elem if isinstance(c, Tensor) else c
    if cond != BOOL:
        raise TypeRuleError(f"where needs a bool condition, found `{c}`", "K0308")
    elem, shape, space = _elementwise((a, b), lambda p: True, "a value or tensor")
    cshape, cspace = _shape_space(c)
    if cspace is not None and space is not None and cspace != space:
        raise TypeRuleError(
            f"operands live in different memory spaces: @{cspace} and @{space}", "K0406"
        )
    return (_make(elem, broadcast_shapes(cshape, shape), space or cspace),)


@op("clone", 1, "an owned copy of a tensor (also of a borrowed one)")
def _clone(inputs, attrs):
    return (_tensor_arg(inputs[0], "clone"),)


@op("arange", None, "element i is `i as E`, or `start + (i as E) * step` (each rounded)")
def _arange(inputs, attrs):
    to: Tensor = attrs["type"]
    if to.rank != 1:
        raise TypeRuleError(f"arange makes a vector, not `{to}`", "K0302")
    if not _numeric(to.elem):
        raise TypeRuleError(f"arange makes numbers, not `{to}`", "K0308")
    if len(inputs) not in (0, 2):
        raise TypeRuleError("arange takes no operands or a start and a step", "K0303")
    for it in inputs:
        if value_type(it) != to.elem:
            raise TypeRuleError(f"arange's start and step must be `{to.elem}`, found `{it}`")
    return (to,)


@op("linspace", 2, "n points from lo to hi: lo + (i as F) * ((hi - lo) / ((n - 1) as F)), last hi")
def _linspace(inputs, attrs):
    to: Tensor = attrs["type"]
    if to.rank != 1:
        raise TypeRuleError(f"linspace makes a vector, not `{to}`", "K0302")
    if not to.elem.is_float:
        raise TypeRuleError(f"linspace makes floats, not `{to}`", "K0308")
    for it in inputs:
        if value_type(it) != to.elem:
            raise TypeRuleError(f"linspace's ends must be `{to.elem}`, found `{it}`")
    return (to,)


# --- structs -------------------------------------------------------------------------


@op("struct", None, "a struct value of type `type` from its fields, in declaration order")
def _struct(inputs, attrs):
    t: Struct = attrs["type"]
    if len(inputs) != len(t.fields):
        raise TypeRuleError(f"`{t.name}` has {len(t.fields)} fields", "K0312")
    for (fname, ftype), it in zip(t.fields, inputs, strict=True):
        if value_type(it) != ftype:
            raise TypeRuleError(f"field `{fname}` is `{ftype}`, found `{it}`", "K0301")
    return (t,)


@op("field", 1, "field number `index` of a struct")
def _field(inputs, attrs):
    t = value_type(inputs[0])
    if not isinstance(t, Struct):
        raise TypeRuleError(f"`{t}` has no fields", "K0204")
    return (t.fields[attrs["index"]][1],)


@op("set_field", 2, "a copy of the struct with field number `index` replaced")
def _set_field(inputs, attrs):
    t = value_type(inputs[0])
    if not isinstance(t, Struct):
        raise TypeRuleError(f"`{t}` has no fields", "K0204")
    if value_type(inputs[1]) != t.fields[attrs["index"]][1]:
        raise TypeRuleError("field type mismatch", "K0301")
    return (t,)


# --- control flow, calls, effects ------------------------------------------------------


@op("range", 2, "the half-open integer range [a, b) (`inclusive`: [a, b])")
def _range(inputs, attrs):
    a, b = value_type(inputs[0]), value_type(inputs[1])
    if not (isinstance(a, Prim) and a.is_int) or a != b:
        raise TypeRuleError(f"range bounds must be the same integer type, found `{a}`, `{b}`")
    return (RangeType(a),)


@op("range_rev", 1, "the elements of a range in reverse order (`(a..b).rev()`)")
def _range_rev(inputs, attrs):
    r = value_type(inputs[0])
    if not isinstance(r, RangeType):
        raise TypeRuleError(f"`rev` reverses a range, not `{r}`")
    return (r,)


@op(
    "range_step",
    2,
    "every k-th element of a range, its first included (`(a..b).step_by(k)`); k is of the "
    "range's integer type and must be positive: k <= 0 is a checked error (R0011)",
)
def _range_step(inputs, attrs):
    r, k = value_type(inputs[0]), value_type(inputs[1])
    if not isinstance(r, RangeType):
        raise TypeRuleError(f"`step_by` steps through a range, not `{r}`")
    if k != r.elem:
        raise TypeRuleError(f"the step of a range of `{r.elem}` must be `{r.elem}`, found `{k}`")
    return (r,)


def _declared(inputs, attrs):
    return tuple(attrs["results"])


for _name, _doc in [
    (
        "for",
        "for loop: inputs range, carried..., captured...; body region(i, carried..., "
        "captured...) yields the next carried values; outputs the final carried values",
    ),
    (
        "while",
        "while loop: inputs carried..., captured...; regions cond(carried, captured) -> "
        "bool and body(carried, captured) -> carried; outputs the final carried values",
    ),
    (
        "if",
        "if: inputs cond, carried..., captured...; regions then/else(carried..., "
        "captured...) yield (value?, carried...); outputs the same",
    ),
    ("call", "call the function whose hash is `callee` (type `fn`); outputs its outputs"),
]:
    REGISTRY[_name] = OpInfo(_name, None, _declared, None, _doc)


@op(
    "print",
    None,
    "write a value (or attr `text`) to standard output; token in, token out",
    effect="io",
)
def _print(inputs, attrs):
    if not inputs or inputs[0] != TOKEN or len(inputs) > 2:
        raise TypeRuleError("print takes the effect token and at most one value")
    return (TOKEN,)


for _name in ("move_to", "copy_to"):

    @op(
        _name,
        2,
        "transfer a tensor to memory space `space`; token in, token out",
        effect="transfer",
    )
    def _transfer(inputs, attrs):
        t = _tensor_arg(inputs[1], "a transfer")
        return (TOKEN, Tensor(t.elem, t.shape, attrs["space"]))


def fn_attr_type(attrs: dict) -> FnType:
    return attrs["fn"]


__all__ = [
    "REGISTRY",
    "OpInfo",
    "TypeRuleError",
    "broadcast_shapes",
    "infer",
    "info",
    "value_type",
    "Ref",
]
