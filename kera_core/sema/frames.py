"""Values, bindings and region frames used while lowering one function.

A :class:`Frame` is one region under construction. Regions are closed: a name
from an enclosing region becomes a positional parameter of the inner one (a
*capture*), allocated on first use, and the enclosing control-flow node passes
the outer value in. Mutable variables assigned inside a region are pre-bound
as parameters too (*carried* values) and yielded at the end, which turns
mutation into explicit value flow.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.ir.node import Value
from kera_core.ir.types import Type
from kera_core.source import Span


class ErrorType(Type):
    """The type of an expression that already has a diagnostic; silences cascades."""

    def encode(self, w) -> None:  # pragma: no cover - never hashed
        raise AssertionError("error values never reach the graph")

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return "{error}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ErrorType)

    def __hash__(self) -> int:
        return 0


ERR = ErrorType()


class NeverType(Type):
    """The type of `return`, `break` and `continue`: control does not go on from here."""

    def encode(self, w) -> None:  # pragma: no cover - never hashed
        raise AssertionError("never values never reach the graph")

    def display(self, dim_names: tuple[str, ...] = ()) -> str:
        return "!"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NeverType)

    def __hash__(self) -> int:
        return 1


NEVER = NeverType()


class Val:
    """An expression's result: a graph value (None for `()` and errors) and its type.

    Immutable by convention; a plain slotted class rather than a frozen dataclass, whose
    ``__init__`` sets each field through ``object.__setattr__`` (one is made per lowered
    expression)."""

    __slots__ = ("value", "type")

    def __init__(self, value: Value | None, type: Type) -> None:
        self.value = value
        self.type = type

    @property
    def is_err(self) -> bool:
        return self.type.__class__ is ErrorType  # isinstance: ErrorType has no subclass

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Val:
            return NotImplemented
        return (self.value, self.type) == (other.value, other.type)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.value, self.type))

    def __repr__(self) -> str:
        return f"Val(value={self.value!r}, type={self.type!r})"


ERR_VAL = Val(None, ERR)


@dataclass
class Binding:
    name: str
    val: Val
    mutable: bool
    span: Span
    kind: str = "local"  # local | param | loop | dim
    # `let r = &mut y;`: ``r`` names ``y`` itself (no value of its own): reads, writes and
    # `&mut` uses of ``r`` resolve to the variable named ``alias`` (docs/language.md §9)
    alias: str | None = None
    # the binding is a `&mut` parameter (or resolves to one): it may be passed on where a
    # `&T` or `&mut T` is expected without writing `&`/`&mut`
    mutref: bool = False
    # `let r = &mut y[i, ..];`: ``r`` names that region of ``alias``: (the slice's axes, the
    # hidden bindings holding its bounds, the view's type) — sema/lower_views.py
    view: tuple | None = None

    @property
    def reborrowable(self) -> bool:
        """Passed by name where a borrow is wanted: a `&mut` parameter or reference variable."""
        return self.mutref or self.alias is not None


class Scope(dict):
    """One scope of a frame: name -> :class:`Binding`, in binding order, which also keeps
    its hidden `$` names (the effect token, exit flags) apart, in the same order, so a
    region's carried names are read without walking every local in scope (a long body
    binds thousands). Every change goes through ``[]=``, ``del`` or ``setdefault``."""

    __slots__ = ("flags",)

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.flags: dict[str, None] = {k: None for k in self if k[:1] == "$"}

    def __setitem__(self, name: str, b: Binding) -> None:
        if name[:1] == "$":
            self.flags[name] = None
        dict.__setitem__(self, name, b)

    def __delitem__(self, name: str) -> None:
        self.flags.pop(name, None)
        dict.__delitem__(self, name)

    def setdefault(self, name: str, b: Binding) -> Binding:  # type: ignore[override]
        if name[:1] == "$":
            self.flags.setdefault(name, None)
        return dict.setdefault(self, name, b)

    def _unsupported(self, *args, **kw):
        raise TypeError("a Scope changes through []=, del and setdefault only")

    pop = popitem = update = clear = __ior__ = _unsupported  # type: ignore[assignment]


@dataclass
class Frame:
    parent: Frame | None
    params: list[Type]
    scopes: list[Scope] = field(default_factory=lambda: [Scope()])
    captures: dict[Value, int] = field(default_factory=dict)  # outer value -> param index
    # (id of the frame a value is from, the value) -> the value as seen here: a capture
    # through many frames is walked once per frame, not once per read (`capture`)
    seen_from: dict = field(default_factory=dict)
    capture_inputs: list[Value] = field(default_factory=list)
    capture_start: int = 0
    carried: list[str] = field(default_factory=list)
    captured: dict[str, Binding] = field(default_factory=dict)  # outer bindings read here
    # each carried name's value on entry (a region yields it where an error left the name
    # without one: the function has an error, so that graph is never used)
    entry: dict[str, Value] = field(default_factory=dict)

    def lookup_local(self, name: str) -> Binding | None:
        for scope in reversed(self.scopes):
            b = scope.get(name)
            if b is not None:
                return b
        return None

    def visible_names(self) -> set[str]:
        names: set[str] = set()
        f: Frame | None = self
        while f is not None:
            for s in f.scopes:
                names.update(n for n in s if n[:1] not in ("$", "#"))  # flags, hidden index
            f = f.parent
        return names
