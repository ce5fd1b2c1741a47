"""Vectorisation: annotate elementwise `for` loops with a logical lane count.

An annotation only: the pass adds the attribute ``lanes`` to a `for` node whose body is
an *elementwise map*, and changes nothing else. The graph's meaning is unchanged — the
interpreter ignores the attribute — but the attribute is part of the node's hash, so the
optimized graph has its own fingerprint (``kera fingerprint`` reports the unoptimized
graph's; docs/optimizer.md).

``lanes = L`` promises a backend that it may run ``L`` consecutive iterations at once
(one SIMD instruction per scalar operation) and get the same bits, because:

* every carried value is a rank-1 tensor, yielded as ``update(t, i, v)`` of its own
  carried parameter at the induction variable ``i``, and read (if at all) only as
  ``index(t, i)``: iteration ``i`` touches element ``i`` only, so iterations are
  independent;
* the body is straight-line scalar code: no regions, calls, effects or reductions, only
  operations that act on each element alone, each rounded exactly as the scalar code;
* the body cannot raise a checked error (all indexing provably in bounds), so there is
  no "first failing iteration" for a vector loop to reconstruct.

``L`` is the number of elements of the widest element type in the body per 128-bit
vector (the width WebAssembly SIMD, SSE and NEON share): 4 for `f32`, 2 for `f64`.
"""

from __future__ import annotations

from kera_core.ir.node import Node, Value
from kera_core.ir.types import TOKEN, Prim, Tensor, strip_ref
from kera_core.opt.facts import Analysis, Scope
from kera_core.opt.rewrite import RegionPass, Site

VECTOR_BITS = 128

SCALAR_OPS = frozenset(
    {
        "const", "param", "dim", "add", "sub", "mul", "div", "rem", "minimum", "maximum",
        "and", "or", "xor", "shl", "shr", "eq", "ne", "lt", "le", "gt", "ge", "land",
        "lor", "neg", "not", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "fma",
        "cast", "select", "index", "update",
    }
)  # fmt: skip


def _bits(p: Prim) -> int:
    return 8 if p.name == "bool" else p.bits


def elementwise_lanes(an: Analysis, scope: Scope, n: Node) -> int | None:
    """The lane count of `for` node ``n`` if its body is an elementwise map, else None."""
    g = an.g
    if n.op != "for" or any(g.type_of(v) == TOKEN for v in n.inputs):
        return None
    if g.nodes[n.inputs[0].node].op != "range":
        return None  # lanes are consecutive ascending iterations: not a reversed or stepped range
    n_car = len(n.types)
    if n_car == 0:
        return None
    body_h = n.regions[0]
    body = g.regions[body_h]
    order = an.order(body_h)
    params = {x.attr("index"): x.out(0) for x in order if x.op == "param"}
    i = params.get(0)
    if i is None:
        return None
    carried = {params.get(1 + k) for k in range(n_car)} - {None}
    widest = 0
    for k in range(n_car):
        t = strip_ref(n.types[k])
        if not isinstance(t, Tensor) or t.rank != 1:
            return None
        u = g.nodes[body.yields[k].node]
        if u.op != "update" or u.inputs[0] != params.get(1 + k) or u.inputs[1] != i:
            return None
        widest = max(widest, _bits(t.elem))
    updates = {body.yields[k].node for k in range(n_car)}
    for x in order:
        if x.op not in SCALAR_OPS or x.regions:
            return None
        if x.op == "update" and x.hash not in updates:
            return None
        for pos, v in enumerate(x.inputs):
            if v in carried and not (
                (x.op == "index" and pos == 0 and x.inputs[1:] == (i,))
                or (x.op == "update" and pos == 0)
            ):
                return None
        t = x.types[0]
        if isinstance(t, Tensor) and x.op not in ("param", "update"):
            return None
        if isinstance(t, Prim) and t.is_float:
            widest = max(widest, _bits(t))
    if any(y in carried for y in body.yields):
        return None
    if not an.region_ff(body_h, scope.sub_facts(n)[0]):
        return None
    return max(1, VECTOR_BITS // widest)


class Vectorize(RegionPass):
    name = "vectorize"

    def rewrite(self, site: Site) -> list[Value | None] | None:
        n = site.new
        if n.op != "for":
            return None
        lanes = elementwise_lanes(self.an, site.scope, n)
        if lanes == n.attr("lanes"):
            return None
        attrs = tuple((k, v) for k, v in n.attrs if k != "lanes")
        if lanes is not None:
            attrs += (("lanes", lanes),)
        new = self.g.add(Node(n.op, n.inputs, n.types, attrs, n.regions))
        return [new.out(k) for k in range(len(n.types))]
