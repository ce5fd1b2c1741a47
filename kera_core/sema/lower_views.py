"""Slices and views: `x[i, ..]`, `x[.., j]`, `x[lo..hi]`, `x[lo..]`, `x[..hi]` (language.md §6.14).

A slice read by value is a ``slice`` node: in the graph a copy, as `clone` is (the loop
layer reads it in place where it can, docs/lowering.md). A *view* — `&x[…]`, `&mut x[…]`,
`let r = &mut x[…];` — is that value seen through a borrow; writing through a `&mut`
view stores back into ``x`` with ``update_slice`` (docs/graph.md), the way a `&mut`
argument is written back today, so the graph stays functional.

**Lengths.** Each range's length is a dimension of the view's type, computed from the
bounds' graph nodes in the affine normal form of dimensions (kera_core/ir/types.py):
`x[1..N]` of `f32[N]` is `f32[N - 1]`, `x[k..k + 4]` with a run-time `k` is `f32[4]`
(the run-time parts cancel). A length that still depends on a run-time value is K0328.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ir.node import Value
from kera_core.ir.types import I64, Dim, DimError, Prim, Sym, Tensor, dim_add, dim_scale, strip_ref
from kera_core.sema.frames import ERR_VAL, Binding, Val
from kera_core.source import Span
from kera_core.syntax import ast

# a bound as (its dimension part, its run-time atoms: value -> coefficient)
Form = tuple[Dim, dict[Value, int]]


@dataclass(frozen=True)
class ViewSpec:
    """Which region of a tensor a slice takes: ``axes`` and ``operands`` as the ``slice``
    node's (ir/ops.py), and the view's type."""

    axes: tuple[str, ...]
    operands: tuple[Val, ...]
    type: Tensor

    @property
    def attrs(self) -> dict:
        return {"axes": self.axes, "type": self.type}


@dataclass(frozen=True)
class ViewTarget:
    """`&mut x[…]` passed to a `&mut` parameter: the callee's new value of the view is
    stored back into the variable ``name`` (`update_slice`)."""

    name: str
    spec: ViewSpec
    span: Span


def is_slice(e: ast.Expr | None) -> bool:
    """Is ``e`` an index expression with a range among its indices (a slice)?"""
    return isinstance(e, ast.IndexExpr) and any(isinstance(i, ast.RangeExpr) for i in e.indices)


class Views:
    """Mixin of :class:`kera_core.sema.lower.FnLowering` for slices and views."""

    def view_spec(self, base: Val, e: ast.IndexExpr) -> ViewSpec | None:
        """Lower the indices and bounds of the slice ``e`` of ``base`` (left to right);
        None after a diagnostic."""
        t = strip_ref(base.type)
        indices = e.indices
        if not isinstance(t, Tensor):
            self.err(
                "K0326",
                e.span,
                f"cannot slice {self.show(base.type)}: only a tensor has slices",
            )
            return None
        if len(indices) != t.rank:
            self.err(
                "K0304",
                e.span,
                f"{self.show(t)} has {t.rank} dimension(s): a slice takes one index or range"
                f" per dimension, found {len(indices)}",
            )
            return None
        axes: list[str] = []
        operands: list[Val] = []
        shape: list[Dim] = []
        ok = True
        for k, ix in enumerate(indices):
            if not isinstance(ix, ast.RangeExpr):
                v = self.expr(ix, I64)
                if not v.is_err and not (isinstance(v.type, Prim) and v.type.is_int):
                    self.err(
                        "K0301", ix.span, f"an index must be an integer, found {self.show(v.type)}"
                    )
                    v = ERR_VAL
                ok &= not v.is_err
                axes.append("index")
                operands.append(v)
                continue
            if ix.inclusive:
                self.err(
                    "K0327",
                    ix.span,
                    "a slice range leaves out its end: write `lo..hi + 1`, not `lo..=hi`",
                )
                ok = False
                continue
            lo_e, hi_e = ix.bounds
            lo = self.slice_bound(lo_e) if lo_e is not None else None
            hi = self.slice_bound(hi_e) if hi_e is not None else None
            if (lo_e is not None and lo is None) or (hi_e is not None and hi is None):
                ok = False
                continue
            n = t.shape[k]
            if lo is None and hi is None:
                axes.append("all")
                shape.append(n)
                continue
            start: Form = self.form(lo.value) if lo is not None else (0, {})  # type: ignore[arg-type]
            if hi is None:
                axes.append("from")
                operands.append(lo)  # type: ignore[arg-type]
                end: Form = (n, {})
            else:
                axes.append("range")
                operands += [lo if lo is not None else self.const(I64, 0, ix.span), hi]
                end = self.form(hi.value)  # type: ignore[arg-type]
            size = self.length(start, end, ix)
            if size is None:
                ok = False
                continue
            shape.append(size)
        if not ok:
            return None
        return ViewSpec(tuple(axes), tuple(operands), Tensor(t.elem, tuple(shape), t.space))

    def slice_bound(self, e: ast.Expr) -> Val | None:
        v = self.expr(e, I64)
        if v.is_err:
            return None
        if v.type != I64:
            self.err("K0327", e.span, f"a slice bound is an `i64`, not {self.show(v.type)}")
            return None
        return v

    def length(self, start: Form, end: Form, ix: ast.RangeExpr) -> Dim | None:
        """``end - start`` as a dimension: the run-time parts must cancel (K0328)."""
        try:
            size = dim_add(end[0], start[0], -1)
        except DimError:
            size = None
        atoms = dict(end[1])
        for v, c in start[1].items():
            atoms[v] = atoms.get(v, 0) - c
        if size is None or any(atoms.values()):
            self.err(
                "K0328",
                ix.span,
                "the length of this range must follow from the dimensions: bounds like"
                " `1..N`, `..K`, `k..k + 4` (the same run-time start on both sides)",
            )
            return None
        if isinstance(size, int) and size < 0:
            self.err("K0328", ix.span, f"this range runs backwards: its length would be {size}")
            return None
        return size

    def form(self, v: Value) -> Form:
        """An `i64` value as a dimension plus run-time atoms, read off its graph nodes:
        constants and dimensions are dimensions, `+`, `-`, negation, products with a
        constant and exact division of a dimension by a constant keep the form, anything
        else is one atom."""
        n = self.nodes[v.node]
        op = n.op
        try:
            if op == "const" and n.attr("type") == I64:
                bits = int(n.attr("value"))
                return (bits - (1 << 64) if bits >= 1 << 63 else bits), {}
            if op == "dim":
                return Sym(n.attr("index")), {}
            if op in ("add", "sub"):
                (a, av), (b, bv) = (self.form(x) for x in n.inputs)
                sign = 1 if op == "add" else -1
                atoms = dict(av)
                for x, c in bv.items():
                    atoms[x] = atoms.get(x, 0) + sign * c
                return dim_add(a, b, sign), atoms
            if op == "neg":
                a, av = self.form(n.inputs[0])
                return dim_scale(a, -1), {x: -c for x, c in av.items()}
            if op == "mul":
                (a, av), (b, bv) = (self.form(x) for x in n.inputs)
                if isinstance(b, int) and not bv:
                    return dim_scale(a, b), {x: c * b for x, c in av.items()}
                if isinstance(a, int) and not av:
                    return dim_scale(b, a), {x: c * a for x, c in bv.items()}
            if op == "div":
                (a, av), (b, bv) = (self.form(x) for x in n.inputs)
                if isinstance(b, int) and b > 0 and not av and not bv:
                    return dim_scale(a, 1, b), {}
        except DimError:
            pass
        return 0, {v: 1}

    def view_of(self, ref) -> ViewSpec:
        """The region a view reference variable (``Binding.view``) names, its bounds read
        from the hidden bindings that hold them (captured into nested regions like any
        variable)."""
        axes, names, t = ref.view
        operands = []
        for name in names:
            b = self.lookup(name)
            operands.append(b.val if b is not None else ERR_VAL)
        return ViewSpec(axes, tuple(operands), t)

    def hide_bounds(self, name: str, spec: ViewSpec) -> tuple:
        """Bind ``spec``'s bounds to hidden names for the view variable ``name``; its
        ``Binding.view``."""
        scope = self.frame.scopes[-1]
        names = []
        for k, v in enumerate(spec.operands):
            hidden = f"#{name}.{k}"
            scope[hidden] = Binding(hidden, v, False, Span(0, 0))
            names.append(hidden)
        return spec.axes, tuple(names), spec.type

    def slice_val(self, base: Val, spec: ViewSpec, span: Span) -> Val:
        return self.op("slice", [base, *spec.operands], span, spec.attrs)

    def update_slice_val(self, base: Val, spec: ViewSpec, new: Val, span: Span) -> Val:
        return self.op("update_slice", [base, *spec.operands, new], span, spec.attrs)

    def e_slice(self, e: ast.IndexExpr) -> Val:
        """`x[…]` with a range among the indices, read by value: a copy of the region."""
        base = self.expr(e.base, None)
        if base.is_err:
            for ix in e.indices:  # their own diagnostics
                for part in ix.bounds if isinstance(ix, ast.RangeExpr) else (ix,):
                    if part is not None:
                        self.expr(part, I64)
            return ERR_VAL
        spec = self.view_spec(base, e)
        return ERR_VAL if spec is None else self.slice_val(base, spec, e.span)
