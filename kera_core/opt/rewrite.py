"""Rewriting a content-addressed graph: every change re-hashes everything above it.

A node's hash covers its inputs' hashes and its regions' hashes, a region's hash covers
its yields, and a function's hash covers its region; a call names its callee by hash. So
rewriting one node means new nodes for all its users, a new region, new nodes for the
control node that owns the region, and so on up to the function — and new call nodes in
every caller. :class:`RegionPass` does this bottom-up once per pass:

* functions are visited callees first, so a call node can be pointed at its callee's new
  hash (``fnmap``) when the caller is rebuilt;
* each region is rebuilt once per *(region hash, parameter bounds)* (memoised): its nested
  regions first, then each node with its rewritten inputs, then the pass's ``rewrite``
  hook, which may replace the node's outputs with other values;
* new nodes go into a copy of the store (insertion is deduplication, so CSE is free) and
  the pass ends with :func:`gc`, which keeps only what the functions reach.

Helpers build the pieces passes need: :func:`clone` (a region's body emitted with its
parameters bound to given values — inlining), :func:`select_region` (the same region with
parameters dropped, reordered or merged, and yields dropped — positional renumbering),
:func:`retarget` (a callee's body with its dimension parameters bound to the caller's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kera_core.ir.cycles import component_hash
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.types import Dim, Sym, Type, substitute
from kera_core.opt.facts import Analysis, Facts, Scope, cone_reaches, region_uses


class Site:
    """One node being rebuilt: the old node, the new one (inputs rewritten), its context."""

    __slots__ = ("p", "scope", "old", "new", "used")

    def __init__(self, p: RegionPass, scope: Scope, old: Node, new: Node, used: set[int]):
        self.p = p
        self.scope = scope
        self.old = old
        self.new = new
        self.used = used  # output indices the enclosing region uses

    @property
    def g(self) -> Graph:
        return self.p.g

    def node(self, v: Value) -> Node:
        return self.p.g.nodes[v.node]


class RegionPass:
    """Base of the passes: a bottom-up rebuild of every function with a per-node hook."""

    name = "pass"
    orders: dict[bytes, list[Node]] | None = None  # shared region orders (set by the manager)

    def run(self, g: Graph) -> Graph:
        self.g = copy_store(g)
        self.an = Analysis(self.g, self.orders)
        self.memo: dict[tuple[bytes, Facts], bytes] = {}
        self.fnmap: dict[bytes, bytes] = {}
        self.start(g)
        new: dict[str, Function] = {}
        # a recursive component is rehashed once all its members are rebuilt (in their
        # index order, docs/optimizer.md), before any function outside it that calls it
        members: dict[bytes, list[tuple[Function, Function]]] = {}
        size = Counter(f.component for f in g.functions.values() if f.component is not None)
        # (functions of equal text are one member under two names: one body per index)
        for f in callee_first(g, self.an):
            rh = self.region(f.region, ())
            nf = Function(f.name, f.type, rh, f.exported, f.outputs)
            if f.component is not None:
                done = members.setdefault(f.component, [])
                done.append((f, nf))
                if len(done) < size[f.component]:
                    continue
                done.sort(key=lambda p: p[0].index)
                ch = component_hash(list({old.index: b.hash for old, b in done}.values()))
                for old, b in done:
                    nf = Function(b.name, b.type, b.region, b.exported, b.outputs, ch, old.index)
                    self.fnmap[old.hash] = nf.hash
                    self.an.add_function(nf)
                    new[nf.name] = nf
                continue
            self.fnmap[f.hash] = nf.hash
            self.an.add_function(nf)
            new[f.name] = nf
        self.g.functions = {name: new[name] for name in g.functions}
        self.finish()
        return gc(self.g)

    # --- hooks ---------------------------------------------------------------------------
    def start(self, g: Graph) -> None:
        """Called before anything is rebuilt (``g`` is the pass's input)."""

    def finish(self) -> None:
        """Called once every function is rebuilt (``self.g.functions`` is the new set)."""

    def rewrite(self, site: Site) -> list[Value | None] | None:
        """Replacement values for ``site.old``'s outputs, or None to keep ``site.new``."""
        return None

    def rewrite_region(self, scope: Scope, rh: bytes) -> bytes:
        """A chance to rewrite a whole rebuilt region (``scope`` is the old region's)."""
        return rh

    # --- the walk ------------------------------------------------------------------------
    def region(self, rh: bytes, facts: Facts) -> bytes:
        key = (rh, facts)
        done = self.memo.get(key)
        if done is not None:
            return done
        g = self.g
        r = g.regions[rh]
        scope = self.an.scope(rh, facts)
        uses = region_uses(self.an, rh)
        env: dict[Value, Value] = {}
        for n in self.an.order(rh):
            ins = tuple(env.get(v, v) for v in n.inputs)
            regs = n.regions
            if regs:
                subf = scope.sub_facts_of(n.op, ins, len(n.types), len(regs))
                regs = tuple(self.region(x, f) for x, f in zip(regs, subf, strict=True))
            attrs = n.attrs
            if n.op == "call":
                callee = n.attr("callee")
                if callee in self.fnmap and self.fnmap[callee] != callee:
                    attrs = tuple((k, self.fnmap[callee] if k == "callee" else v) for k, v in attrs)
            if ins == n.inputs and regs == n.regions and attrs is n.attrs:
                new = n
            else:
                new = g.add(Node(n.op, ins, n.types, attrs, regs))
            outs = self.rewrite(Site(self, scope, n, new, uses.get(n.hash, set())))
            if outs is None:
                if new is not n:
                    for i in range(len(n.types)):
                        env[Value(n.hash, i)] = Value(new.hash, i)
            else:
                for i, v in enumerate(outs):
                    if v is not None:
                        env[Value(n.hash, i)] = v
        yields = tuple(env.get(y, y) for y in r.yields)
        out = rh if yields == r.yields else g.add_region(Region(r.params, yields)).hash
        out = self.rewrite_region(scope, out)
        self.memo[key] = out
        return out

    # --- helpers for hooks -----------------------------------------------------------------
    def clone(self, rh: bytes, args: list[Value | None], emitted: list[Node] | None = None):
        return clone(self.g, self.an, rh, args, emitted)


# --- building blocks ---------------------------------------------------------------------


def copy_store(g: Graph) -> Graph:
    out = Graph()
    out.nodes = dict(g.nodes)
    out.regions = dict(g.regions)
    out.functions = dict(g.functions)
    return out


def param_value(g: Graph, index: int, t: Type) -> Value:
    """The value of parameter ``index`` (of type ``t``) of whatever region it is used in."""
    return g.add(Node("param", (), (t,), {"index": index, "type": t})).out(0)


def clone(
    g: Graph,
    an: Analysis,
    rh: bytes,
    args: list[Value | None],
    emitted: list[Node] | None = None,
    yields: Iterable[int] | None = None,
) -> list[Value]:
    """Emit region ``rh``'s body into the current region with parameter ``j`` bound to
    ``args[j]``; returns what it yields (only ``yields``' positions if given).

    Nested regions are closed, so they are reused as they are. A parameter bound to
    None must not be used by the selected yields.
    """
    r = g.regions[rh]
    sel = list(range(len(r.yields))) if yields is None else list(yields)
    order = (
        an.order(rh)
        if yields is None
        else g.region_nodes(Region(r.params, tuple(r.yields[i] for i in sel)))
    )
    env: dict[Value, Value] = {}
    for n in order:
        if n.op == "param":
            a = args[n.attr("index")]
            if a is None:
                raise AssertionError(f"parameter {n.attr('index')} was dropped but is used")
            env[Value(n.hash, 0)] = a
            continue
        ins = tuple(env.get(v, v) for v in n.inputs)
        new = n if ins == n.inputs else Node(n.op, ins, n.types, n.attrs, n.regions)
        new = g.add(new)
        if emitted is not None:
            emitted.append(new)
        if new is not n:
            for i in range(len(n.types)):
                env[Value(n.hash, i)] = Value(new.hash, i)
    return [env.get(r.yields[i], r.yields[i]) for i in sel]


def select_region(
    g: Graph,
    an: Analysis,
    rh: bytes,
    keep: list[int],
    keep_yields: list[int],
    alias: dict[int, int] | None = None,
) -> bytes:
    """Region ``rh`` renumbered: new parameter ``k`` is old parameter ``keep[k]``; old
    parameter ``j`` in ``alias`` reads old parameter ``alias[j]`` instead; only the yields
    at ``keep_yields`` remain, in that order."""
    r = g.regions[rh]
    alias = alias or {}
    pos = {old: new for new, old in enumerate(keep)}
    args: list[Value | None] = []
    for j in range(len(r.params)):
        src = alias.get(j, j)
        args.append(param_value(g, pos[src], r.params[src]) if src in pos else None)
    ys = clone(g, an, rh, args, yields=keep_yields)
    params = tuple(r.params[j] for j in keep)
    return g.add_region(Region(params, tuple(ys))).hash


def _subst_attr(v, binding: dict[int, Dim]):
    if isinstance(v, Type):
        return substitute(v, binding)
    if isinstance(v, tuple):
        return tuple(_subst_attr(x, binding) for x in v)
    return v


def retarget(
    g: Graph,
    an: Analysis,
    rh: bytes,
    binding: dict[int, Dim],
    dims: dict[int, Value],
    memo: dict,
) -> bytes:
    """Region ``rh`` of a callee, rewritten into a caller's dimensions: symbolic dimension
    ``k`` in every type becomes ``binding[k]`` and each ``dim{k}`` node becomes ``dims[k]``
    (a `dim` or `const` leaf of the caller). Nested regions are rewritten too."""
    key = (rh, tuple(sorted((k, str(d)) for k, d in binding.items())))
    if key in memo:
        return memo[key]
    r = g.regions[rh]
    env: dict[Value, Value] = {}
    for n in an.order(rh):
        if n.op == "dim":
            env[Value(n.hash, 0)] = dims[n.attr("index")]
            continue
        ins = tuple(env.get(v, v) for v in n.inputs)
        regs = tuple(retarget(g, an, x, binding, dims, memo) for x in n.regions)
        types = tuple(substitute(t, binding) for t in n.types)
        attrs = tuple((k, _subst_attr(v, binding)) for k, v in n.attrs)
        new = g.add(Node(n.op, ins, types, attrs, regs))
        for i in range(len(n.types)):
            env[Value(n.hash, i)] = Value(new.hash, i)
    params = tuple(substitute(t, binding) for t in r.params)
    yields = tuple(env.get(y, y) for y in r.yields)
    out = g.add_region(Region(params, yields)).hash
    memo[key] = out
    return out


def identity_binding(binding: dict[int, Dim], n_dims: int) -> bool:
    return all(binding.get(k) == Sym(k) for k in range(n_dims))


def substitute_values(g: Graph, an: Analysis, rh: bytes, mapping: dict[Value, Value]) -> bytes:
    """Region ``rh`` with every use of a value in ``mapping`` redirected (values not
    depending on a mapped value keep their nodes)."""
    r = g.regions[rh]
    env = dict(mapping)
    mapped_nodes = {v.node for v in mapping}
    for n in an.order(rh):
        if n.hash in mapped_nodes:
            continue
        ins = tuple(env.get(v, v) for v in n.inputs)
        if ins == n.inputs:
            continue
        new = g.add(Node(n.op, ins, n.types, n.attrs, n.regions))
        for i in range(len(n.types)):
            env[Value(n.hash, i)] = Value(new.hash, i)
    yields = tuple(env.get(y, y) for y in r.yields)
    return g.add_region(Region(r.params, yields)).hash


def replacement_safe(site: Site, outs: list[Value | None], emitted: list[Node]) -> bool:
    """Whether replacing ``site.new`` by ``outs`` (built from its inputs and the ``emitted``
    nodes) keeps every checked error where it was (docs/optimizer.md).

    The emitted nodes must not be able to fail; inputs no longer used must be droppable;
    and the inputs whose cones can fail must still be reached at the same point of the
    evaluation order: allowed when there are none, or when there is exactly one and the
    node has a single used output whose replacement reads it.
    """
    scope = site.scope
    for n in emitted:
        if scope.node_fallible(n):
            return False
    inputs = set(site.new.inputs)
    used = sorted(site.used)
    starts = [outs[i] for i in used if i < len(outs) and outs[i] is not None]
    reached = cone_reaches(site.g, starts, inputs)
    for v in inputs - reached:
        if not scope.droppable(v):
            return False
    risky = [v for v in inputs if not scope.ff(v)]
    if not risky:
        return True
    return len(risky) == 1 and len(used) == 1 and risky[0] in reached


# --- whole-graph utilities ------------------------------------------------------------------


def callees_of(g: Graph, an: Analysis | None, f: Function) -> list[bytes]:
    out: list[bytes] = []
    seen: set[bytes] = set()
    for rh in all_regions(g, an, f.region):
        for n in an.order(rh) if an is not None else g.region_nodes(rh):
            if n.op == "call":
                c = n.attr("callee")
                if c not in seen:
                    seen.add(c)
                    out.append(c)
    return out


def all_regions(g: Graph, an: Analysis | None, root: bytes) -> list[bytes]:
    """``root`` and every region nested in it (each once), using ``an``'s cached orders."""
    if an is None:
        return list(g.all_regions(root))
    out: list[bytes] = []
    seen: set[bytes] = set()
    stack = [root]
    while stack:
        r = stack.pop()
        if r in seen:
            continue
        seen.add(r)
        out.append(r)
        for n in an.order(r):
            stack.extend(reversed(n.regions))
    return out


def callee_first(g: Graph, an: Analysis | None = None) -> list[Function]:
    """Every function, each after the functions it calls (ties in name order)."""
    by_hash: dict[bytes, list[Function]] = {}
    for f in g.functions.values():
        by_hash.setdefault(f.hash, []).append(f)
    order: list[Function] = []
    state: dict[str, int] = {}
    for root in sorted(g.functions.values(), key=lambda f: f.name):
        stack: list[tuple[Function, list[bytes] | None]] = [(root, None)]
        while stack:
            f, pending = stack.pop()
            if pending is None:
                if state.get(f.name):
                    continue
                state[f.name] = 1
                pending = callees_of(g, an, f)
                if f.component is not None:  # its component's members, named by position
                    pending += [m.hash for m in g.functions.values() if m.component == f.component]
            if pending:
                c = pending.pop()
                stack.append((f, pending))
                for callee in sorted(by_hash.get(c, []), key=lambda x: x.name):
                    if not state.get(callee.name):
                        stack.append((callee, None))
                        break
                continue
            state[f.name] = 2
            order.append(f)
    return order


def gc(g: Graph) -> Graph:
    """A store holding exactly what the functions reach (nodes, regions), same functions."""
    out = Graph()
    out.functions = dict(g.functions)
    stack = [f.region for f in g.functions.values()]
    while stack:
        rh = stack.pop()
        r = g.regions.get(rh)
        if rh in out.regions or r is None:
            continue  # a missing region is left for the validator to report
        out.regions[rh] = r
        seen_stack = [y.node for y in r.yields]
        while seen_stack:
            h = seen_stack.pop()
            n = g.nodes.get(h)
            if h in out.nodes or n is None:
                continue
            out.nodes[h] = n
            seen_stack.extend(v.node for v in n.inputs)
            stack.extend(n.regions)
    return out


def call_counts(g: Graph) -> dict[bytes, int]:
    """How many call nodes name each function hash (each distinct node once per region)."""
    counts: dict[bytes, int] = {}
    seen_regions: set[bytes] = set()
    for f in g.functions.values():
        for rh in g.all_regions(f.region):
            if rh in seen_regions:
                continue
            seen_regions.add(rh)
            for n in g.region_nodes(rh):
                if n.op == "call":
                    c = n.attr("callee")
                    counts[c] = counts.get(c, 0) + 1
    return counts
