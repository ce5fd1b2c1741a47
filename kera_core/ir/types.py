"""Kera types with canonical encodings and hashes.

Every type has one canonical byte encoding (documented in docs/graph.md); its hash
is SHA3-256 over that encoding under the ``type`` domain. Two types match iff
their hashes are equal, which for these frozen dataclasses is the same as ``==``.

Symbolic dimensions are positional (``Sym(0)`` is a function's first dimension
parameter), so renaming ``N`` to ``M`` changes no hash; display names live in the
provenance table.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from math import gcd

from kera_core.ir.encoding import Writer, digest

INT_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOAT_TYPES = ("f32", "f64")
PRIM_NAMES = ("bool", *INT_TYPES, *FLOAT_TYPES)
SPACES = ("host", "device", "pinned", "unified")
EFFECTS = ("io", "alloc", "transfer", "random", "time")

BOUNDS: dict[str, tuple[str, ...]] = {
    "Float": FLOAT_TYPES,
    "Int": INT_TYPES,
    "Num": (*FLOAT_TYPES, *INT_TYPES),
}
"""The bounds of element-type parameters (`fn f<T: Float>`) and the types each admits."""

_TAG = {
    "prim": 1, "tensor": 2, "struct": 3, "ref": 4, "fn": 5, "unit": 6, "token": 7, "range": 8,
    "tparam": 9, "soa": 10,
}  # fmt: skip


DISPLAY_DIMS: ContextVar[tuple[str, ...]] = ContextVar("DISPLAY_DIMS", default=())


@contextmanager
def dim_names_for_display(names: tuple[str, ...]):
    """Within this block, ``str(type)`` spells symbolic dimensions with these names."""
    token = DISPLAY_DIMS.set(names)
    try:
        yield
    finally:
        DISPLAY_DIMS.reset(token)


class _once:
    """A computed attribute stored in the instance's ``__dict__`` on first read (later reads
    are plain dictionary hits): ``functools.cached_property`` without its lock, for pure
    values that two threads may at worst compute twice."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)
        return value


class Type:
    """Base of all types. Subclasses are frozen dataclasses.

    Not an ``abc.ABC``: ``isinstance(t, Tensor)`` runs on every lowered expression, and an
    ``ABCMeta`` class answers it through a Python-level ``__instancecheck__``. The two
    methods every subclass defines raise here instead.
    """

    def encode(self, w: Writer) -> None:
        """Append the canonical encoding (docs/graph.md) to ``w``."""
        raise NotImplementedError(type(self).__name__)

    @_once
    def canonical(self) -> bytes:
        w = Writer()
        self.encode(w)
        return w.getvalue()

    @_once
    def hash(self) -> bytes:
        return digest("type", self.canonical)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        """The type as a user writes it, symbolic dimensions spelled with ``dim_names``."""
        raise NotImplementedError(type(self).__name__)

    def __str__(self) -> str:
        return self.display(DISPLAY_DIMS.get())


@dataclass(frozen=True, eq=True)
class Prim(Type):
    name: str

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["prim"])
        w.str(self.name)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return self.name

    @property
    def is_int(self) -> bool:
        return self.name in INT_TYPES

    @property
    def is_signed(self) -> bool:
        return self.name.startswith("i")

    @property
    def is_float(self) -> bool:
        return self.name in FLOAT_TYPES

    @property
    def bits(self) -> int:
        return 1 if self.name == "bool" else int(self.name[1:])


@dataclass(frozen=True, eq=True)
class TypeParam(Type):
    """An element-type parameter of a generic function: the ``index``-th of its type
    parameters, with its bound (`T: Float`). Positional like :class:`Sym`, so renaming `T`
    changes no hash; ``name`` is for display only. It occurs in a generic function's
    signature, never in the graph: each instance has the parameter replaced
    (:func:`instantiate`)."""

    index: int
    bound: str
    name: str = field(default="", compare=False)

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["tparam"])
        w.uvar(self.index)
        w.str(self.bound)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return self.name or f"$T{self.index}"

    def admits(self, t: Type) -> bool:
        return isinstance(t, Prim) and t.name in BOUNDS[self.bound]


@dataclass(frozen=True, eq=True)
class Unit(Type):
    def encode(self, w: Writer) -> None:
        w.u8(_TAG["unit"])

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return "()"


@dataclass(frozen=True, eq=True)
class TokenType(Type):
    """The effect token threaded through effectful operations."""

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["token"])

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return "token"


@dataclass(frozen=True, eq=True)
class RangeType(Type):
    """`a..b` over an integer type; only used as a `for` loop's iterable."""

    elem: Prim

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["range"])
        w.raw(self.elem.canonical)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return f"range<{self.elem.name}>"


@dataclass(frozen=True, eq=True)
class Sym:
    """A symbolic dimension: the ``index``-th dimension parameter of the function."""

    index: int

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        if self.index < len(dim_names):
            return dim_names[self.index]
        return f"${self.index}"


class DimError(ValueError):
    """A dimension expression that is not a size: a division that is never exact, a
    static value below zero, a product of two symbols (the message says which)."""


@dataclass(frozen=True, eq=True)
class DimExpr:
    """A dimension computed from the function's dimensions: ``(Σ coeff·Sym(index) + const) / div``.

    Always in normal form (build it with :func:`dim_affine` or the ``dim_*`` operations,
    never directly): terms sorted by index with nonzero coefficients, at least one term
    and not a bare symbol, ``div >= 1``, and when ``div > 1`` the coefficients, the
    constant and ``div`` share no common factor. So ``N + 1`` and ``1 + N`` are one value,
    with one encoding and one hash. The division is exact: a value that does not divide
    is a checked error where the dimension is evaluated (docs/language.md §7.5).
    """

    terms: tuple[tuple[int, int], ...]  # (symbol index, coefficient)
    const: int = 0
    div: int = 1

    @property
    def syms(self) -> tuple[int, ...]:
        return tuple(k for k, _ in self.terms)

    def __str__(self) -> str:
        return self.display(DISPLAY_DIMS.get())

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        """As a user writes it: `N + 1`, `2 * N - M`, `10 - N`, `(N + 1) / 2`."""
        parts: list[str] = []
        const = self.const
        if self.terms[0][1] < 0:  # no unary minus in dimensions: `10 - N`, `0 - N`
            parts.append(str(const) if const > 0 else "0")
            const = 0 if const > 0 else const
        for k, c in self.terms:
            name = Sym(k).display(dim_names)
            term = name if abs(c) == 1 else f"{abs(c)} * {name}"
            if parts:
                parts.append(("+ " if c > 0 else "- ") + term)
            else:
                parts.append(term)
        if const:
            parts.append(f"+ {const}" if const > 0 else f"- {-const}")
        out = " ".join(parts)
        if self.div == 1:
            return out
        if len(parts) == 1 and "*" not in out:
            return f"{out} / {self.div}"
        return f"({out}) / {self.div}"


Dim = int | Sym | DimExpr

# a dimension as a linear form: ({symbol: coefficient}, constant, divisor)
_Lin = tuple[dict[int, int], int, int]


def _lin(d: Dim) -> _Lin:
    if isinstance(d, int):
        return {}, d, 1
    if isinstance(d, Sym):
        return {d.index: 1}, 0, 1
    return dict(d.terms), d.const, d.div


def dim_affine(terms: dict[int, int], const: int = 0, div: int = 1) -> Dim:
    """The normal form of ``(Σ terms[k]·Sym(k) + const) / div`` (``div`` != 0).

    Raises DimError when no terms are left and the constant does not divide."""
    if div == 0:
        raise DimError("division by zero in a dimension")
    if div < 0:
        terms = {k: -c for k, c in terms.items()}
        const, div = -const, -div
    items = tuple(sorted((k, c) for k, c in terms.items() if c))
    if div > 1:
        g = div
        for _, c in items:
            g = gcd(g, c)
        g = gcd(g, const)
        if g > 1:
            items = tuple((k, c // g) for k, c in items)
            const //= g
            div //= g
    if not items:
        if const % div:
            raise DimError(f"{const} / {div} is not a whole number")
        return const // div
    if items == ((items[0][0], 1),) and not const and div == 1:
        return Sym(items[0][0])
    return DimExpr(items, const, div)


def dim_add(a: Dim, b: Dim, sign: int = 1) -> Dim:
    """``a + sign·b``. Exact divisions stay exact: ``a/p + b/q = (a·q + b·p) / (p·q)``."""
    ta, ca, da = _lin(a)
    tb, cb, db = _lin(b)
    terms = {k: c * db for k, c in ta.items()}
    for k, c in tb.items():
        terms[k] = terms.get(k, 0) + sign * c * da
    return dim_affine(terms, ca * db + sign * cb * da, da * db)


def dim_scale(a: Dim, num: int, den: int = 1) -> Dim:
    """``a · num / den`` (``den`` != 0; the division exact where it is evaluated)."""
    ta, ca, da = _lin(a)
    return dim_affine({k: c * num for k, c in ta.items()}, ca * num, da * den)


def dim_syms(d: Dim) -> tuple[int, ...]:
    """The symbol indices ``d`` depends on, ascending."""
    if isinstance(d, Sym):
        return (d.index,)
    if isinstance(d, DimExpr):
        return d.syms
    return ()


def dim_subst(d: Dim, binding) -> Dim:
    """``d`` with each ``Sym(k)`` in ``binding`` (a mapping to Dims) replaced."""
    if isinstance(d, int):
        return d
    if isinstance(d, Sym):
        return binding.get(d.index, d)
    out: Dim = dim_affine({}, d.const)
    for k, c in d.terms:
        out = dim_add(out, dim_scale(binding.get(k, Sym(k)), c))
    return dim_scale(out, 1, d.div)


def dim_value(d: Dim, dims) -> int:
    """The size ``d`` has under bound sizes ``dims`` (index -> int; KeyError if one is
    missing). Raises DimError if the division is not exact or the size is negative."""
    if isinstance(d, int):
        return d
    if isinstance(d, Sym):
        return int(dims[d.index])
    num = d.const
    for k, c in d.terms:
        num += c * int(dims[k])
    if num % d.div:
        raise DimError(f"{num} is not divisible by {d.div}")
    n = num // d.div
    if n < 0:
        raise DimError(f"the size would be {n}")
    return n


def display_dim(d: Dim, dim_names: tuple[str, ...] | None = None) -> str:
    if dim_names is None:
        dim_names = DISPLAY_DIMS.get()
    return str(d) if isinstance(d, int) else d.display(dim_names)


def encode_dim(w: Writer, d: Dim) -> None:
    """docs/graph.md: `u8 0, uvar size` | `u8 1, uvar index` | `u8 2, uvar terms,
    (uvar index, svar coefficient)*, svar constant, uvar divisor` (normal form only)."""
    if isinstance(d, int):
        w.u8(0)
        w.uvar(d)
    elif isinstance(d, Sym):
        w.u8(1)
        w.uvar(d.index)
    else:
        w.u8(2)
        w.uvar(len(d.terms))
        for k, c in d.terms:
            w.uvar(k)
            w.svar(c)
        w.svar(d.const)
        w.uvar(d.div)


@dataclass(frozen=True, eq=True)
class Tensor(Type):
    elem: Prim
    shape: tuple[Dim, ...]
    space: str = "host"

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["tensor"])
        w.raw(self.elem.canonical)
        w.uvar(len(self.shape))
        for d in self.shape:
            encode_dim(w, d)
        w.str(self.space)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        dims = ", ".join(display_dim(d, dim_names) for d in self.shape)
        s = f"{self.elem.display(dim_names)}[{dims}]"
        return s if self.space == "host" else f"{s} @{self.space}"

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True, eq=True)
class Struct(Type):
    """Nominal and structural at once: the name and the field list are both identity.

    With ``soa`` it is a tensor of structs (`Body[N]`, language.md §8.1) laid out as a
    structure of arrays: the same name, each field a tensor (or, for a struct or tuple
    field, again a tensor of structs) of the one shape — :func:`soa_of`, :func:`soa_elem`."""

    name: str
    fields: tuple[tuple[str, Type], ...]
    soa: bool = False

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["soa" if self.soa else "struct"])
        w.str(self.name)
        w.uvar(len(self.fields))
        for fname, ftype in self.fields:
            w.str(fname)
            w.raw(ftype.canonical)  # cached on the type: a nested type encoded once

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        if self.soa:
            dims = ", ".join(display_dim(d, dim_names) for d in soa_shape(self))
            return f"{soa_elem(self).display(dim_names)}[{dims}]"
        if self.is_tuple:
            elems = [t.display(dim_names) for _, t in self.fields]
            return "(" + ", ".join(elems) + ("," if len(elems) == 1 else "") + ")"
        return self.name

    @property
    def is_tuple(self) -> bool:
        """A tuple is the struct without a name whose fields are `0`, `1`, … (tuple_type)."""
        return not self.name

    def field_index(self, name: str) -> int | None:
        for i, (f, _) in enumerate(self.fields):
            if f == name:
                return i
        return None


@dataclass(frozen=True, eq=True)
class Ref(Type):
    inner: Type
    mutable: bool = False

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["ref"])
        w.u8(1 if self.mutable else 0)
        w.raw(self.inner.canonical)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return ("&mut " if self.mutable else "&") + self.inner.display(dim_names)


@dataclass(frozen=True, eq=True)
class FnType(Type):
    n_dims: int
    params: tuple[Type, ...]
    result: Type
    effects: tuple[str, ...] = ()  # sorted, unique

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["fn"])
        w.uvar(self.n_dims)
        w.uvar(len(self.params))
        for p in self.params:
            w.raw(p.canonical)
        w.raw(self.result.canonical)
        w.uvar(len(self.effects))
        for e in self.effects:
            w.str(e)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        dims = f"[{', '.join(dim_names[: self.n_dims])}]" if self.n_dims else ""
        ps = ", ".join(p.display(dim_names) for p in self.params)
        s = f"fn{dims}({ps}) -> {self.result.display(dim_names)}"
        if self.effects:
            s += " ! " + ", ".join(self.effects)
        return s


BOOL = Prim("bool")
I64 = Prim("i64")
F32 = Prim("f32")
F64 = Prim("f64")
UNIT = Unit()
TOKEN = TokenType()
PRIMS = {name: Prim(name) for name in PRIM_NAMES}


def tuple_type(elems: tuple[Type, ...]) -> Struct:
    """The tuple `(T0, T1, …)`: an anonymous structural struct with fields `0`, `1`, …, so
    two tuples of the same element types are the same type (docs/graph.md). `()` is ``UNIT``,
    never an empty tuple."""
    assert elems, "the empty tuple is UNIT"
    return Struct("", tuple((str(i), t) for i, t in enumerate(elems)))


def elem_of(t: Type) -> Prim | None:
    """The element type of a scalar or tensor (through references)."""
    if isinstance(t, Ref):
        t = t.inner
    if isinstance(t, Prim):
        return t
    if isinstance(t, Tensor):
        return t.elem
    return None


def holds_tensor(t: Type | None) -> bool:
    """Is ``t`` a tensor, or a struct or tuple with a tensor in it (a move type)?"""
    if isinstance(t, Tensor):
        return True
    return isinstance(t, Struct) and any(holds_tensor(ft) for _, ft in t.fields)


def is_soa(t: Type | None) -> bool:
    """Is ``t`` a tensor of structs (`Body[N]`, through a reference)?"""
    t = t.inner if isinstance(t, Ref) else t
    return isinstance(t, Struct) and t.soa


def soa_of(elem: Struct, shape: tuple[Dim, ...]) -> Struct:
    """The tensor of ``elem`` structs of ``shape`` (language.md §8.1): one tensor per field,
    a struct or tuple field again a tensor of structs. ``elem`` holds only scalars and has a
    field (the resolver checks both)."""
    fields = []
    for fname, ft in elem.fields:
        if isinstance(ft, Struct):
            fields.append((fname, soa_of(ft, shape)))
        else:
            assert isinstance(ft, Prim), ft
            fields.append((fname, Tensor(ft, shape)))
    return Struct(elem.name, tuple(fields), soa=True)


def soa_elem(t: Struct) -> Struct:
    """The element struct of the tensor of structs ``t`` (the inverse of :func:`soa_of`)."""
    fields = []
    for fname, ft in t.fields:
        fields.append((fname, soa_elem(ft) if isinstance(ft, Struct) else ft.elem))  # type: ignore[attr-defined]
    return Struct(t.name, tuple(fields))


def soa_shape(t: Struct) -> tuple[Dim, ...]:
    """The shape of the tensor of structs ``t``: that of each of its field tensors."""
    ft = t.fields[0][1]
    return soa_shape(ft) if isinstance(ft, Struct) else ft.shape  # type: ignore[attr-defined]


def scalar_struct(t: Struct) -> bool:
    """Does the struct (or tuple) ``t`` hold only scalars, through nested structs and
    tuples, and at least one of them: a tensor of structs' element (§8.1)?"""
    for _, ft in t.fields:
        if isinstance(ft, Struct):
            if ft.soa or not scalar_struct(ft):
                return False
        elif not isinstance(ft, Prim):
            return False
    return bool(t.fields)


def strip_ref(t: Type) -> Type:
    return t.inner if isinstance(t, Ref) else t


def substitute(t: Type, binding: dict[int, Dim]) -> Type:
    """Replace symbolic dimensions by what a call site bound them to."""
    if isinstance(t, Tensor):
        shape = tuple(dim_subst(d, binding) for d in t.shape)
        return Tensor(t.elem, shape, t.space)
    if isinstance(t, Ref):
        return Ref(substitute(t.inner, binding), t.mutable)
    if isinstance(t, Struct):
        return Struct(t.name, tuple((n, substitute(ft, binding)) for n, ft in t.fields), t.soa)
    return t


def has_type_params(t: Type) -> bool:
    """Does ``t`` mention an element-type parameter (`T`)?"""
    if isinstance(t, TypeParam):
        return True
    if isinstance(t, Tensor):
        return isinstance(t.elem, TypeParam)
    if isinstance(t, Ref):
        return has_type_params(t.inner)
    if isinstance(t, FnType):
        return any(has_type_params(p) for p in (*t.params, t.result))
    return False


def instantiate(t: Type, args) -> Type:
    """``t`` with each element-type parameter replaced: ``args`` maps a parameter's index
    to its type (a sequence or a dict; a parameter it lacks stays)."""
    if isinstance(t, TypeParam):
        if isinstance(args, dict):
            return args.get(t.index, t)
        return args[t.index] if t.index < len(args) else t
    if isinstance(t, Tensor):
        elem = instantiate(t.elem, args)
        return t if elem is t.elem else Tensor(elem, t.shape, t.space)  # type: ignore[arg-type]
    if isinstance(t, Ref):
        return Ref(instantiate(t.inner, args), t.mutable)
    if isinstance(t, FnType):
        return FnType(
            t.n_dims,
            tuple(instantiate(p, args) for p in t.params),
            instantiate(t.result, args),
            t.effects,
        )
    return t
