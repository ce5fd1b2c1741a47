"""What a pass may assume about the values of one region: index bounds, failure, uses.

Three questions decide whether a rewrite is allowed (docs/optimizer.md, "Why the bits
cannot change"):

* **Can this node fail?** A node is *fallible* if running it may stop the program with a
  checked error (docs/semantics.md §9): an out-of-bounds `index`/`update`, an integer
  division by zero, a reduction of an empty tensor, a `while` (it may not terminate), or a
  control node / call whose body contains such a node.
* **Is this value's cone fallible-free?** A value is *ff* if no node of its cone in this
  region can fail. Only ff values may be dropped, forwarded or moved, because the error a
  run reports is the first failing node in ``Graph.region_nodes`` order, and moving a
  fallible node could change which one that is.
* **Is an index in bounds?** Integer values carry a :class:`Bound` when one is known
  (constants, ``dim`` nodes, loop induction variables, ``±`` a constant), so
  ``x[i]`` in ``for i in 0..N`` over ``x: f32[N]`` is known not to fail.

Facts depend on the region's context (the bounds of its parameters), so a
:class:`Scope` is one region under one tuple of parameter bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Value
from kera_core.ir.types import TOKEN, DimExpr, Prim, Sym, Tensor, Type, strip_ref

_I64 = Prim("i64")


@dataclass(frozen=True)
class Bound:
    """``lo <= v < (dim[sym] if sym is not None else 0) + off`` for an integer value ``v``."""

    lo: int
    sym: int | None
    off: int

    def shifted(self, c: int) -> Bound:
        return Bound(self.lo + c, self.sym, self.off + c)


Facts = tuple[Bound | None, ...]

# Operations that never raise a checked error, whatever their operands.
NEVER_FAIL = frozenset(
    {
        "const", "param", "dim", "add", "sub", "mul", "minimum", "maximum", "and", "or",
        "xor", "shl", "shr", "eq", "ne", "lt", "le", "gt", "ge", "land", "lor", "neg",
        "not", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "fma", "select", "full",
        "array", "sum", "dot", "matmul", "layernorm", "conv1d", "struct", "field",
        "set_field", "range", "range_rev", "print", "move_to", "copy_to", "transpose", "broadcast_to",
        "outer", "stack", "where", "clone", "arange", "linspace", "floor", "ceil", "trunc",
        "round", "round_half_away", "copysign", "exp2", "log2", "expm1", "log1p",
        "hypot", "sin", "cos", "tan", "atan2", "pow", "erf",
        "erfc",
    }
)  # fmt: skip
EFFECTS = frozenset({"print", "move_to", "copy_to"})
_EMPTY_CHECKED = frozenset({"max", "min", "argmax", "argmin", "softmax"})
_SMALL = 1 << 40  # bounds further out than this are not tracked (no wrap-around reasoning)


def value_type(g: Graph, v: Value) -> Type:
    return strip_ref(g.nodes[v.node].types[v.index])


def const_int(n: Node) -> int | None:
    """The value of an integer (or bool) constant node, else None."""
    if n.op != "const":
        return None
    t = n.attr("type")
    if not isinstance(t, Prim) or t.is_float:
        return None
    return int(n.attr("value"))


class Analysis:
    """Per-store memo of fallibility of regions and functions (shared by scopes)."""

    def __init__(self, g: Graph, orders: dict[bytes, list[Node]] | None = None) -> None:
        self.g = g
        self.fns: dict[bytes, Function] = {}
        self._region_ff: dict[tuple[bytes, Facts], bool] = {}
        self._fn_ff: dict[bytes, bool] = {}
        # region hash -> topological order; shareable between passes of one optimize()
        self._orders: dict[bytes, list[Node]] = orders if orders is not None else {}
        self.refresh_functions()

    def refresh_functions(self) -> None:
        self.fns = {f.hash: f for f in self.g.functions.values()}

    def add_function(self, f: Function) -> None:
        self.fns[f.hash] = f

    def order(self, rh: bytes) -> list[Node]:
        """``Graph.region_nodes``, cached (a region's content is fixed by its hash)."""
        o = self._orders.get(rh)
        if o is None:
            o = self._orders[rh] = self.g.region_nodes(rh)
        return o

    def scope(self, rh: bytes, facts: Facts = ()) -> Scope:
        return Scope(self, rh, facts)

    def region_ff(self, rh: bytes, facts: Facts) -> bool:
        key = (rh, facts)
        v = self._region_ff.get(key)
        if v is None:
            self._region_ff[key] = False  # no recursion in Kera; be safe anyway
            s = self.scope(rh, facts)
            v = not any(s.node_fallible(n) for n in self.order(rh))
            self._region_ff[key] = v
        return v

    def fn_ff(self, fn_hash: bytes) -> bool:
        v = self._fn_ff.get(fn_hash)
        if v is None:
            f = self.fns.get(fn_hash)
            # a recursive function can always fail: R0012
            v = f is not None and f.component is None and self.region_ff(f.region, ())
            self._fn_ff[fn_hash] = v
        return v

    def fn_effectful(self, fn_hash: bytes) -> bool:
        f = self.fns.get(fn_hash)
        return f is None or bool(f.type.effects)


class Scope:
    """One region under known parameter bounds: bounds, fallibility and cones of its values."""

    def __init__(self, an: Analysis, rh: bytes, facts: Facts) -> None:
        self.an = an
        self.g = an.g
        self.rh = rh
        self.facts = facts
        self._bounds: dict[Value, Bound | None] = {}
        self._ff: dict[bytes, bool] = {}

    # --- bounds -------------------------------------------------------------------------
    def bound(self, v: Value) -> Bound | None:
        if v in self._bounds:
            return self._bounds[v]
        b = self._bound(v)
        self._bounds[v] = b
        return b

    def _bound(self, v: Value) -> Bound | None:
        shift = 0
        for _ in range(64):
            n = self.g.nodes[v.node]
            if n.op == "param":
                i = n.attr("index")
                b = self.facts[i] if isinstance(i, int) and i < len(self.facts) else None
                return b.shifted(shift) if b is not None else None
            if n.op == "dim":
                return Bound(0, n.attr("index"), 1).shifted(shift)
            c = const_int(n)
            if c is not None:
                return Bound(c, None, c + 1).shifted(shift) if abs(c) < _SMALL else None
            if n.op in ("add", "sub") and n.types[0] == _I64:
                a, b2 = n.inputs
                cb = const_int(self.g.nodes[b2.node])
                ca = const_int(self.g.nodes[a.node]) if n.op == "add" else None
                if cb is not None and abs(cb) < _SMALL:
                    shift += cb if n.op == "add" else -cb
                    v = a
                elif ca is not None and abs(ca) < _SMALL:
                    shift += ca
                    v = b2
                else:
                    return None
                if abs(shift) >= _SMALL:
                    return None
                continue
            return None
        return None

    def range_bound(self, rng: Value) -> Bound | None:
        """The bound of a `for` loop's induction variable over the range value ``rng``."""
        n = self.g.nodes[rng.node]
        while n.op in ("range_rev", "range_step"):  # the same integers, or some of them
            n = self.g.nodes[n.inputs[0].node]
        if n.op != "range":
            return None
        lo, hi = (self.bound(x) for x in n.inputs)
        if lo is None or hi is None:
            return None
        return Bound(lo.lo, hi.sym, hi.off if n.attr("inclusive", False) else hi.off - 1)

    def in_bounds(self, tensor: Value, idx: tuple[Value, ...]) -> bool:
        t = value_type(self.g, tensor)
        if not isinstance(t, Tensor) or len(idx) != t.rank:
            return False
        for d, i in zip(t.shape, idx, strict=True):
            b = self.bound(i)
            if b is None or b.lo < 0:
                return False
            if isinstance(d, Sym):
                if b.sym != d.index or b.off > 0:
                    return False
            elif isinstance(d, DimExpr):  # `N + c`: the bound of `N`, shifted by c
                if d.div != 1 or len(d.terms) != 1 or d.terms[0][1] != 1:
                    return False
                if b.sym != d.terms[0][0] or b.off > d.const:
                    return False
            elif b.sym is not None or b.off > d:
                return False
        return True

    # --- facts for nested regions -------------------------------------------------------
    def sub_facts(self, n: Node) -> list[Facts]:
        """The parameter bounds of each region of control node ``n`` (one tuple per region)."""
        return self.sub_facts_of(n.op, n.inputs, len(n.types), len(n.regions))

    def sub_facts_of(self, op: str, inputs: tuple[Value, ...], n_out: int, n_reg: int):
        if op == "for":
            caps = tuple(self.bound(v) for v in inputs[1 + n_out :])
            return [(self.range_bound(inputs[0]),) + (None,) * n_out + caps]
        if op == "if":
            f = tuple(self.bound(v) for v in inputs[1:])
            return [f, f]
        if op == "while":
            f = (None,) * n_out + tuple(self.bound(v) for v in inputs[n_out:])
            return [f, f]
        return [() for _ in range(n_reg)]

    # --- failure ------------------------------------------------------------------------
    def node_fallible(self, n: Node) -> bool:
        """Whether running ``n`` itself (its regions or callee included) may raise."""
        op = n.op
        if op in NEVER_FAIL:
            return False
        if op in ("div", "rem"):
            t = value_type(self.g, n.inputs[0])
            elem = t.elem if isinstance(t, Tensor) else t
            if isinstance(elem, Prim) and elem.is_float:
                return False
            c = const_int(self.g.nodes[n.inputs[1].node])
            return not c  # None (not a constant) or 0
        if op == "range_step":  # R0011 unless the step is a positive constant
            c = const_int(self.g.nodes[n.inputs[1].node])
            return c is None or c <= 0
        if op == "cast":
            to = n.attr("to")
            return not isinstance(to, Prim) or to.name == "bool"
        if op == "index":
            return not self.in_bounds(n.inputs[0], n.inputs[1:])
        if op == "update":
            return not self.in_bounds(n.inputs[0], n.inputs[1:-1])
        if op in _EMPTY_CHECKED or op == "mean":
            t = value_type(self.g, n.inputs[0])
            if op == "mean" and isinstance(t, Tensor) and t.elem.is_float:
                return False
            return not (
                isinstance(t, Tensor) and all(isinstance(d, int) and d > 0 for d in t.shape)
            )
        if op == "call":
            callee = n.attr("callee")
            return not (isinstance(callee, bytes) and self.an.fn_ff(callee))
        if op in ("for", "if"):
            return not all(
                self.an.region_ff(r, f) for r, f in zip(n.regions, self.sub_facts(n), strict=True)
            )
        return True  # `while` (may not terminate) and anything unknown

    def ff(self, v: Value) -> bool:
        """No node of ``v``'s cone in this region can fail."""
        start = v.node
        if start in self._ff:
            return self._ff[start]
        stack = [(start, 0)]
        visiting: set[bytes] = set()
        while stack:
            h, i = stack.pop()
            if h in self._ff:
                continue
            n = self.g.nodes[h]
            if i == 0:
                visiting.add(h)
                if self.node_fallible(n):
                    self._ff[h] = False
                    visiting.discard(h)
                    continue
            if i < len(n.inputs):
                stack.append((h, i + 1))
                c = n.inputs[i].node
                if c not in self._ff and c not in visiting:
                    stack.append((c, 0))
            else:
                self._ff[h] = all(self._ff.get(x.node, True) for x in n.inputs)
                visiting.discard(h)
        return self._ff[start]

    def droppable(self, v: Value) -> bool:
        """``v`` may stop being computed: its cone cannot fail and it is not an effect token."""
        return self.g.nodes[v.node].types[v.index] != TOKEN and self.ff(v)


def region_uses(an: Analysis, rh: bytes) -> dict[bytes, set[int]]:
    """For each node of region ``rh``, which of its outputs the region uses (yields included)."""
    used: dict[bytes, set[int]] = {}
    for n in an.order(rh):
        for v in n.inputs:
            used.setdefault(v.node, set()).add(v.index)
    for v in an.g.regions[rh].yields:
        used.setdefault(v.node, set()).add(v.index)
    return used


def params_reached(an: Analysis, rh: bytes, yields: list[Value]) -> set[int]:
    """The parameter indices of region ``rh`` that the cones of ``yields`` read."""
    g = an.g
    seen: set[bytes] = set()
    out: set[int] = set()
    stack = [y.node for y in yields]
    while stack:
        h = stack.pop()
        if h in seen:
            continue
        seen.add(h)
        n = g.nodes[h]
        if n.op == "param":
            out.add(n.attr("index"))
            continue
        stack.extend(v.node for v in n.inputs)
    return out


def cone_reaches(g: Graph, starts: list[Value], targets: set[Value]) -> set[Value]:
    """Which of ``targets`` the cones of ``starts`` reach (the walk stops at a target)."""
    found: set[Value] = set()
    target_nodes = {t.node for t in targets}
    seen: set[bytes] = set()
    stack = list(starts)
    while stack:
        v = stack.pop()
        if v in targets:
            found.add(v)
            continue
        if v.node in seen:
            continue
        seen.add(v.node)
        if v.node in target_nodes:
            # another output of a target's node: the node runs, so its inputs do too
            found.update(t for t in targets if t.node == v.node)
            continue
        stack.extend(g.nodes[v.node].inputs)
    return found
