"""Binding a function's dimensions at a call, and the dimension expressions it evaluates.

A call binds the callee's dimensions by matching each parameter's shape against the
argument's (docs/language.md §7.2). Which dimension each argument axis binds, and which
axes only check, depends on the parameter types alone, so it is planned once per
function (:func:`binding_plan`) and carried out by every consumer with its own kind of
value: the checker with compile-time dimensions (``Dim``), the interpreter and the host
runners with sizes (``int``), the loop layer with emitted operations.

An axis whose dimension has exactly one symbol not yet bound *solves* for it:
``(c·N + rest) / div = actual`` gives ``N = (actual·div − rest) / c`` — exact and not
negative, or R0003 at run time. An axis whose symbols are all bound *checks*
``actual = value``. Axes are taken parameter by parameter, axis by axis, repeatedly,
until nothing more can be bound; a dimension no axis can bind is K0310 at the
signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from kera_core.ir.types import (
    Dim,
    DimError,
    DimExpr,
    Ref,
    Struct,
    Sym,
    Tensor,
    Type,
    dim_add,
    dim_scale,
    dim_syms,
    dim_value,
)


@dataclass(frozen=True)
class Step:
    """Axis ``axis`` of parameter ``param`` has dimension ``dim``: it binds symbol
    ``solves`` (``None``: every symbol is bound already, and the axis is checked)."""

    param: int
    axis: int
    dim: Dim
    solves: int | None
    path: tuple[int, ...] = ()  # the field indices to the tensor in a struct or tuple


def tensor_leaves(t: Type, path: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Tensor]]:
    """The tensors in a value of type ``t`` (through a reference, then struct and tuple
    fields, in field order) and the field indices that lead to each."""
    t = t.inner if isinstance(t, Ref) else t
    if isinstance(t, Tensor):
        yield path, t
    elif isinstance(t, Struct):
        for k, (_, ft) in enumerate(t.fields):
            yield from tensor_leaves(ft, (*path, k))


def at_path(x, path: tuple[int, ...]):
    """The part of ``x`` (a type, or a value flattened into nested tuples) at ``path``."""
    for k in path:
        x = x.inner if isinstance(x, Ref) else x
        x = x.fields[k][1] if isinstance(x, Struct) else x[k]
    return x.inner if isinstance(x, Ref) else x


_PLANS: dict[tuple, tuple[tuple[Step, ...], tuple[int, ...]]] = {}
_PLANS_MAX = 4096


def binding_plan(params: tuple[Type, ...], n_dims: int) -> tuple[tuple[Step, ...], tuple[int, ...]]:
    """The steps that bind dimensions ``0 .. n_dims-1`` from arguments of types ``params``,
    and the dimensions they leave unbound (ascending).

    A pure function of its arguments (the plan reads only the shapes, which equal types
    share), memoised: it is asked at every call of a function and for every signature."""
    key = (params, n_dims)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[key] = _binding_plan(params, n_dims)
    return plan


def _binding_plan(
    params: tuple[Type, ...], n_dims: int
) -> tuple[tuple[Step, ...], tuple[int, ...]]:
    axes = [
        (i, path, a, d)
        for i, p in enumerate(params)
        for path, t in tensor_leaves(p)
        for a, d in enumerate(t.shape)
    ]
    bound: set[int] = set()
    steps: list[Step] = []
    pending = axes
    while pending:
        later = []
        for i, path, a, d in pending:
            free = [k for k in dim_syms(d) if k not in bound]
            if len(free) > 1:
                later.append((i, path, a, d))
                continue
            steps.append(Step(i, a, d, free[0] if free else None, path))
            bound.update(free)
        if len(later) == len(pending):
            # nothing solvable is left: these axes are checked once their symbols are bound,
            # which they never are; they stay unchecked and their symbols unbound
            break
        pending = later
    return tuple(steps), tuple(k for k in range(n_dims) if k not in bound)


def _rest(d: Dim, skip: int | None, value_of: Callable[[int], Dim]) -> tuple[Dim, int, int]:
    """For ``d = (c·S + Σ others + const) / div``: (Σ others + const with bound values,
    c, div) where S is symbol ``skip`` (c = 0 when there is none)."""
    if isinstance(d, int):
        return d, 0, 1
    if isinstance(d, Sym):
        return (0, 1, 1) if d.index == skip else (value_of(d.index), 0, 1)
    rest: Dim = d.const
    coeff = 0
    for k, c in d.terms:
        if k == skip:
            coeff = c
        else:
            rest = dim_add(rest, dim_scale(value_of(k), c))
    return rest, coeff, d.div


def solve(step: Step, actual: Dim, value_of: Callable[[int], Dim]) -> Dim:
    """The value of ``step.solves`` that gives the axis the size ``actual``: a Dim (an
    int when everything is known). Raises DimError when it is not a whole number."""
    rest, c, div = _rest(step.dim, step.solves, value_of)
    return dim_scale(dim_add(dim_scale(actual, div), rest, -1), 1, c)


def value(d: Dim, value_of: Callable[[int], Dim]) -> Dim:
    """``d`` with its symbols replaced by their bound values (DimError when inexact)."""
    rest, _, div = _rest(d, None, value_of)
    return dim_scale(rest, 1, div)


def bind_sizes(
    params: tuple[Type, ...], shapes: list[tuple[int, ...] | None], n_dims: int
) -> tuple[dict[int, int], str | None]:
    """Carry out the plan on argument ``shapes`` (``None`` for an argument without a
    tensor; a tuple of the fields' shapes for a struct or a tuple): the bound sizes and,
    when the arguments do not fit, why (for R0003)."""
    steps, _ = binding_plan(params, n_dims)
    dims: dict[int, int] = {}
    for s in steps:
        n = at_path(shapes[s.param], s.path)[s.axis]  # type: ignore[index]
        try:
            if s.solves is not None:
                got = solve(s, n, dims.__getitem__)
                if not isinstance(got, int) or got < 0:
                    raise DimError(f"no size makes it {n}")
                dims[s.solves] = got
            else:
                want = value(s.dim, dims.__getitem__)
                if want != n:
                    return (
                        dims,
                        f"dimension {s.axis} of argument {s.param + 1} is {n}, expected {want}",
                    )
        except DimError as e:
            return dims, f"dimension {s.axis} of argument {s.param + 1} is {n}: {e}"
    return dims, None


def dims_in(t: Type) -> Iterator[Dim]:
    """Every dimension written in ``t`` (through references and struct fields)."""
    if isinstance(t, Ref):
        yield from dims_in(t.inner)
    elif isinstance(t, Tensor):
        yield from t.shape
    else:
        for _, ft in getattr(t, "fields", ()):
            yield from dims_in(ft)


def exprs_of_function(graph, fn) -> tuple[DimExpr, ...]:
    """The dimension expressions (not plain symbols or sizes) in ``fn``'s types — its
    signature, every node's output types and type attributes, every region's parameters
    — in a deterministic order. Each is evaluated when the function is entered
    (docs/language.md §7.5), on every target alike."""
    seen: dict[DimExpr, None] = {}

    def add(t) -> None:
        for d in dims_in(t):
            if isinstance(d, DimExpr):
                seen.setdefault(d, None)

    for p in fn.type.params:
        add(p)
    add(fn.type.result)
    for rh in graph.all_regions(fn.region):
        for t in graph.regions[rh].params:
            add(t)
        for n in graph.region_nodes(rh):
            for t in n.types:
                add(t)
            for _, v in n.attrs:
                if isinstance(v, Type):
                    add(v)
    return tuple(seen)


def check_exprs(exprs: tuple[DimExpr, ...], dims: dict[int, int]) -> str | None:
    """Why one of ``exprs`` is not a size under ``dims`` (None when all are)."""
    for d in exprs:
        try:
            dim_value(d, dims)
        except DimError as e:
            return f"dimension `{d}` is not a size: {e}"
    return None


__all__ = [
    "Step",
    "bind_sizes",
    "binding_plan",
    "check_exprs",
    "dims_in",
    "exprs_of_function",
    "solve",
    "value",
]
