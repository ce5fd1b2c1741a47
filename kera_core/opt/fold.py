"""Constant folding, computed by the reference interpreter itself.

A scalar operation whose operands are all constants is evaluated with the interpreter's
own handler (``kera_core.interp.ops_impl.HANDLERS``) on the interpreter's own constant
values, and replaced by a constant holding the result's bits. The folder has no
arithmetic of its own, so it cannot disagree with the semantics; an operation whose
handler raises a checked error (integer division by zero, a cast to bool) is left for
run time, where it fails as it always did.

Also: `select` on a constant condition, `if` on a constant condition (the taken region
is inlined), a `for` over a constant empty range (its outputs are its initial values),
`field` of a `struct` / `set_field` (the field's value is forwarded), `index` of an
`update` at the same indices (the stored element is forwarded), and an `update` of an
`update` at the same indices (the first store is overwritten). Each of these
drops or moves values, so each is checked by :func:`replacement_safe`.

Never folded: `a*b+c` into `fma` (FMA is its own opcode), anything on tensors.
"""

from __future__ import annotations

import numpy as np

from kera_core.interp.fp import FORMATS
from kera_core.interp.ops_impl import HANDLERS
from kera_core.interp.values import DTYPES
from kera_core.ir.node import Node, Value
from kera_core.ir.types import Prim
from kera_core.opt.facts import const_int
from kera_core.opt.rewrite import RegionPass, Site, replacement_safe

FOLDABLE = frozenset(
    {
        "add", "sub", "mul", "div", "rem", "minimum", "maximum", "and", "or", "xor",
        "shl", "shr", "eq", "ne", "lt", "le", "gt", "ge", "land", "lor", "neg", "not",
        "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "fma", "cast", "select", "floor",
        "ceil", "trunc", "round", "round_half_away", "copysign", "exp2", "log2", "expm1",
        "log1p", "hypot", "sin", "cos", "tan", "atan2", "pow", "erf", "erfc",
    }
)  # fmt: skip


def const_node(value, t: Prim) -> Node | None:
    """The `const` node holding the interpreter value ``value`` of type ``t`` (None if the
    value is not exactly a scalar of that type)."""
    a = np.asarray(value)
    if a.shape != () or a.dtype != np.dtype(DTYPES[t.name]):
        return None
    if t.is_float:
        bits = int(a.view(FORMATS[t.name].udtype)[()])
    elif t.name == "bool":
        bits = int(bool(a))
    else:
        bits = int(a)
    return Node("const", (), (t,), {"type": t, "value": bits})


def evaluate(node: Node, consts: list[Node]):
    """Run the interpreter's handler for ``node`` on constant operands; None if it raises."""
    vals = [HANDLERS["const"](c, None) for c in consts]
    try:
        with np.errstate(all="ignore"):
            return HANDLERS[node.op](node, None, *vals)
    except Exception:  # a checked error (InterpError) or anything else: leave it for run time
        return None


class ConstFold(RegionPass):
    name = "fold"

    def rewrite(self, site: Site) -> list[Value | None] | None:
        n = site.new
        op = n.op
        if op in FOLDABLE:
            ins = [site.node(v) for v in n.inputs]
            if all(x.op == "const" for x in ins) and isinstance(n.types[0], Prim):
                r = evaluate(n, ins)
                c = const_node(r, n.types[0]) if r is not None else None
                if c is not None:
                    return [self.g.add(c).out(0)]
                return None
        if op == "select":
            c = const_int(site.node(n.inputs[0]))
            if c is not None:
                outs = [n.inputs[1] if c else n.inputs[2]]
                return outs if replacement_safe(site, outs, []) else None
        elif op == "if":
            c = const_int(site.node(n.inputs[0]))
            if c is not None:
                emitted: list[Node] = []
                outs = self.clone(n.regions[0 if c else 1], list(n.inputs[1:]), emitted)
                return list(outs) if replacement_safe(site, list(outs), emitted) else None
        elif op == "for":
            return self._empty_for(site)
        elif op == "field":
            return self._field(site)
        elif op == "index":
            src = site.node(n.inputs[0])
            if src.op == "update" and src.inputs[1:-1] == n.inputs[1:]:
                out = [src.inputs[-1]]  # reading back what was just stored
                return out if replacement_safe(site, out, []) else None
        elif op == "update":
            src = site.node(n.inputs[0])
            if src.op == "update" and src.inputs[1:-1] == n.inputs[1:-1]:
                # the element stored first is overwritten: store into the older tensor
                emitted = [self.g.add(Node("update", (src.inputs[0], *n.inputs[1:]), n.types))]
                out = [emitted[0].out(0)]
                return out if replacement_safe(site, out, emitted) else None
        return None

    def _empty_for(self, site: Site):
        n = site.new
        rng = site.node(n.inputs[0])
        if rng.op != "range":
            return None
        lo, hi = (const_int(site.node(v)) for v in rng.inputs)
        if lo is None or hi is None:
            return None
        count = hi - lo + (1 if rng.attr("inclusive", False) else 0)
        if count > 0:
            return None
        outs: list[Value | None] = list(n.inputs[1 : 1 + len(n.types)])
        return outs if replacement_safe(site, outs, []) else None

    def _field(self, site: Site):
        n = site.new
        i = n.attr("index")
        src = site.node(n.inputs[0])
        emitted: list[Node] = []
        if src.op == "struct":
            out = src.inputs[i]
        elif src.op == "set_field":
            if src.attr("index") == i:
                out = src.inputs[1]
            else:
                f = self.g.add(Node("field", (src.inputs[0],), n.types, n.attrs))
                emitted.append(f)
                out = f.out(0)
        else:
            return None
        return [out] if replacement_safe(site, [out], emitted) else None
