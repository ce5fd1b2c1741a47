"""Inlining small private callees into their callers.

A call runs the callee's region on the call's inputs (the effect token first when the
callee has effects), with the callee's dimensions bound from the argument shapes. The
inlined form emits the callee's body in the caller with each region parameter replaced
by the call's input at the same position; the token is just one more positional value,
so effects keep their order.

Dimensions: the callee's types speak of its own ``Sym(k)`` and its body reads
``dim{k}``. Matching each parameter type against the caller's argument type gives a
binding ``k -> Sym(j)`` (the caller's dimension) or ``k -> n`` (a static size); the body
is rewritten under it (:func:`retarget`) — types substituted, ``dim{k}`` replaced by the
caller's ``dim{j}`` or the constant ``n``. A call whose arguments bind some ``k`` two
different ways, or not at all, is not inlined (the run-time check R0003 stays); nor is
one where a dimension expression (`N + 1`) is involved — in a parameter, an argument or
anywhere in the callee's types — since binding it or entering the callee checks it.

Only private functions with at most ``max_nodes`` non-leaf nodes whose body cannot fail
at the call site are inlined (see ``replacement_safe``), so no checked error moves; with
``exported``, exported ones too (a target without calls — verilog — inlines every call it
can). A private function whose every call was inlined is removed from the graph; exported
functions are never removed (they are the graph's identity).
"""

from __future__ import annotations

from kera_core.ir.dims import exprs_of_function
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Value
from kera_core.ir.types import I64, Dim, DimExpr, Struct, Sym, Tensor, Type, strip_ref
from kera_core.opt.rewrite import (
    RegionPass,
    Site,
    all_regions,
    call_counts,
    identity_binding,
    replacement_safe,
    retarget,
)

LEAVES = ("param", "const", "dim")


def bind(binding: dict[int, Dim], callee_t: Type, arg_t: Type) -> bool:
    """Extend ``binding`` so that ``callee_t`` (callee dims) matches ``arg_t`` (caller's)."""
    c, a = strip_ref(callee_t), strip_ref(arg_t)
    if isinstance(c, Tensor):
        if not isinstance(a, Tensor) or a.rank != c.rank or a.elem != c.elem:
            return False
        for dc, da in zip(c.shape, a.shape, strict=True):
            if isinstance(dc, DimExpr) or isinstance(da, DimExpr):
                return False  # solved and checked at the call (R0003): not moved
            if isinstance(dc, Sym):
                if binding.setdefault(dc.index, da) != da:
                    return False
            elif dc != da:
                return False
        return True
    if isinstance(c, Struct):
        if not isinstance(a, Struct) or a.name != c.name or len(a.fields) != len(c.fields):
            return False
        return all(
            bind(binding, fc, fa) for (_, fc), (_, fa) in zip(c.fields, a.fields, strict=True)
        )
    return True


class Inline(RegionPass):
    name = "inline"

    def __init__(self, max_nodes: int = 48, exported: bool = False) -> None:
        self.max_nodes = max_nodes
        self.exported = exported

    def start(self, g: Graph) -> None:
        self.called_before = {h for h, c in call_counts(g).items() if c}
        self.retargeted: dict = {}
        self.sizes: dict[bytes, int] = {}

    def size(self, f: Function) -> int:
        s = self.sizes.get(f.hash)
        if s is None:
            s = sum(
                1
                for rh in all_regions(self.g, self.an, f.region)
                for n in self.an.order(rh)
                if n.op not in LEAVES
            )
            self.sizes[f.hash] = s
        return s

    def rewrite(self, site: Site) -> list[Value | None] | None:
        n = site.new
        if n.op != "call":
            return None
        f = self.an.fns.get(n.attr("callee"))
        if f is None or (f.exported and not self.exported) or f.component is not None:
            # (a recursive function's body names its component's members by position)
            return None
        if self.size(f) > self.max_nodes:
            return None
        args = n.inputs[1:] if f.type.effects else n.inputs
        binding: dict[int, Dim] = {}
        for pt, v in zip(f.type.params, args, strict=True):
            if not bind(binding, pt, self.g.type_of(v)):
                return None
        if any(k not in binding for k in range(f.type.n_dims)):
            return None
        if exprs_of_function(self.g, f):
            return None  # its dimension expressions are checked when it is entered
        rh = f.region
        if not identity_binding(binding, f.type.n_dims):
            dims = {k: self._dim_value(d) for k, d in binding.items()}
            rh = retarget(self.g, self.an, rh, binding, dims, self.retargeted)
        emitted: list[Node] = []
        outs: list[Value | None] = list(self.clone(rh, list(n.inputs), emitted))
        if len(outs) != len(n.types):
            return None
        return outs if replacement_safe(site, outs, emitted) else None

    def _dim_value(self, d: Dim) -> Value:
        if isinstance(d, Sym):
            return self.g.add(Node("dim", (), (I64,), {"index": d.index})).out(0)
        return self.g.add(Node("const", (), (I64,), {"type": I64, "value": int(d)})).out(0)

    def finish(self) -> None:
        """Remove private functions whose every call site was inlined by this pass."""
        g = self.g
        was_called = {self.fnmap.get(h, h) for h in self.called_before}
        while True:
            counts = call_counts(g)
            gone = [
                name
                for name, f in g.functions.items()
                if not f.exported and f.hash in was_called and not counts.get(f.hash)
            ]
            if not gone:
                return
            for name in gone:
                del g.functions[name]
