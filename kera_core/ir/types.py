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
    "tparam": 9,
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
        self.elem.encode(w)

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


Dim = int | Sym


def display_dim(d: Dim, dim_names: tuple[str, ...] | None = None) -> str:
    if dim_names is None:
        dim_names = DISPLAY_DIMS.get()
    return str(d) if isinstance(d, int) else d.display(dim_names)


@dataclass(frozen=True, eq=True)
class Tensor(Type):
    elem: Prim
    shape: tuple[Dim, ...]
    space: str = "host"

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["tensor"])
        self.elem.encode(w)
        w.uvar(len(self.shape))
        for d in self.shape:
            if isinstance(d, int):
                w.u8(0)
                w.uvar(d)
            else:
                w.u8(1)
                w.uvar(d.index)
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
    """Nominal and structural at once: the name and the field list are both identity."""

    name: str
    fields: tuple[tuple[str, Type], ...]

    def encode(self, w: Writer) -> None:
        w.u8(_TAG["struct"])
        w.str(self.name)
        w.uvar(len(self.fields))
        for fname, ftype in self.fields:
            w.str(fname)
            ftype.encode(w)

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
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
        self.inner.encode(w)

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
            p.encode(w)
        self.result.encode(w)
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


def strip_ref(t: Type) -> Type:
    return t.inner if isinstance(t, Ref) else t


def substitute(t: Type, binding: dict[int, Dim]) -> Type:
    """Replace symbolic dimensions by what a call site bound them to."""
    if isinstance(t, Tensor):
        shape = tuple(binding.get(d.index, d) if isinstance(d, Sym) else d for d in t.shape)
        return Tensor(t.elem, shape, t.space)
    if isinstance(t, Ref):
        return Ref(substitute(t.inner, binding), t.mutable)
    if isinstance(t, Struct):
        return Struct(t.name, tuple((n, substitute(ft, binding)) for n, ft in t.fields))
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
