"""Which tensor updates the wasm target may do in place (docs/targets/wasm.md, "Tensors are values").

Tensors are values: `update` returns a new tensor, and by default the emitter copies.
A loop-carried tensor whose value flows *linearly* through the loop body may instead be
copied once when the loop starts and then written in place: the old value is dead the
moment the new one exists (docs/semantics.md §9).

The flow from the body's parameter to its yield is a chain of links, each consuming the
current value exactly once:

* an ``update`` of it (then the update's result is current);
* an inner ``for``/``while`` that carries it in a slot the inner loop itself updates in
  place — the inner loop takes the buffer over instead of copying it ("handed over");
* an ``if`` that takes it as an input, where in *each* branch the value flows linearly
  (possibly through no link at all) to the same yield position — the branches then
  update the buffer in place.

Every other use of the current value must be a pure reader (``SAFE_READERS``) that the
next link depends on, so it runs before the buffer changes; at the yield, readers are
free. The chain of a loop slot must end at the slot's own yield position.

Plans are per *role*: the decisions for a region hold where it is emitted as the body of
the loop (or the branch of the ``if``) they were made for, and the emitter passes them
down explicitly (`Context`) — a region with the same hash may recur elsewhere where its
input is shared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.ir.graph import Graph
from kera_core.ir.node import Node, Region, Value
from kera_core.ir.types import Tensor, strip_ref


@dataclass
class Context:
    """In-place decisions for one region in one role."""

    updates: set[bytes] = field(default_factory=set)  # update nodes done in place
    handed: set[tuple[bytes, int]] = field(default_factory=set)  # (inner loop, slot)
    ifs: set[tuple[bytes, int]] = field(default_factory=set)  # (if node, input position)

    def merge(self, other: Context) -> None:
        self.updates |= other.updates
        self.handed |= other.handed
        self.ifs |= other.ifs


@dataclass
class LoopPlan:
    owned: set[int]  # carried slots copied once on entry, then updated in place
    body: Context


@dataclass
class _Chain:
    end: int  # the yield position the value reaches
    links: int  # updates and inner-loop hand-overs, counted through branches
    ctx: Context


class Planner:
    def __init__(self, g: Graph, safe_readers: frozenset[str] | set[str]) -> None:
        self.g = g
        self.safe = safe_readers
        self.loops: dict[bytes, LoopPlan] = {}
        self.ifs: dict[tuple[bytes, int], tuple[int, list[Context]] | None] = {}
        self._if_links: dict[tuple[bytes, int], int] = {}
        self._uses: dict[bytes, dict[Value, list[Node]]] = {}

    # --- loops ------------------------------------------------------------------------
    def loop(self, loop: Node) -> LoopPlan:
        plan = self.loops.get(loop.hash)
        if plan is not None:
            return plan
        plan = self.loops[loop.hash] = LoopPlan(set(), Context())
        body = self.g.regions[loop.regions[-1]]
        off = 1 if loop.op == "for" else 0
        params = {x.attr("index"): x for x in self.g.region_nodes(body) if x.op == "param"}
        for k, t in enumerate(loop.types):
            p = params.get(off + k)
            if p is None or not isinstance(strip_ref(t), Tensor):
                continue
            ch = self._follow(body, p.out(0))
            if ch is not None and ch.end == k and ch.links > 0:
                plan.owned.add(k)
                plan.body.merge(ch.ctx)
        return plan

    def branch_contexts(self, n: Node, positions: set[int]) -> list[Context]:
        """The contexts of ``if`` node ``n``'s branches when its inputs at ``positions``
        (0-based among the branch arguments) are owned links."""
        out = [Context() for _ in n.regions]
        for j in positions:
            plan = self.ifs.get((n.hash, j))
            if plan is not None:
                for c, b in zip(out, plan[1], strict=True):
                    c.merge(b)
        return out

    # --- chains -----------------------------------------------------------------------
    def _uses_in(self, region: Region) -> dict[Value, list[Node]]:
        uses = self._uses.get(region.hash)
        if uses is None:
            uses = self._uses[region.hash] = {}
            for x in self.g.region_nodes(region):
                for v in x.inputs:
                    uses.setdefault(v, []).append(x)
        return uses

    def _follow(self, region: Region, start: Value) -> _Chain | None:
        """Follow ``start`` through ``region`` to its yield, or None if not linear."""
        uses = self._uses_in(region)
        yields = list(region.yields)
        ch = _Chain(-1, 0, Context())
        cur = start
        while True:
            us = uses.get(cur, [])
            links = [(u, s) for u in us if (s := self._link(u, cur)) is not None]
            others = [u for u in us if all(u is not lk for lk, _ in links)]
            if cur in yields:
                if yields.count(cur) != 1 or links:
                    return None
                if any(u.op not in self.safe for u in others):
                    return None
                ch.end = yields.index(cur)
                return ch
            if len(links) != 1:
                return None
            link, slot = links[0]
            if sum(1 for v in link.inputs if v == cur) != 1:
                return None
            anc = self._ancestors(link)
            if any(u.op not in self.safe or u.hash not in anc for u in others):
                return None
            if link.op == "update":
                ch.ctx.updates.add(link.hash)
                ch.links += 1
                cur = link.out(0)
            elif link.op in ("for", "while"):
                ch.ctx.handed.add((link.hash, slot))
                ch.links += 1
                cur = link.out(slot)
            else:  # if: the chain goes on from the output the branches yield it at
                j = list(link.inputs[1:]).index(cur)
                end, _ = self.ifs[(link.hash, j)]  # type: ignore[misc]
                ch.ctx.ifs.add((link.hash, j))
                ch.links += self._if_links[(link.hash, j)]
                cur = link.out(end)

    def _link(self, u: Node, cur: Value) -> int | None:
        """How ``u`` continues the chain of ``cur`` (see the module docstring), or None."""
        if u.op == "update":
            return 0 if u.inputs[0] == cur else None
        if u.op in ("for", "while"):
            off = 1 if u.op == "for" else 0
            carried = list(u.inputs[off : off + len(u.types)])
            if cur not in carried:
                return None
            slot = carried.index(cur)
            return slot if slot in self.loop(u).owned else None
        if u.op == "if" and cur in u.inputs[1:]:
            j = list(u.inputs[1:]).index(cur)
            return j if self._plan_if(u, j) is not None else None
        return None

    def _plan_if(self, n: Node, j: int) -> tuple[int, list[Context]] | None:
        key = (n.hash, j)
        if key in self.ifs:
            return self.ifs[key]
        self.ifs[key] = None  # a region cannot contain itself, but be safe
        ends, ctxs, links = set(), [], 0
        for rh in n.regions:
            region = self.g.regions[rh]
            params = {x.attr("index"): x for x in self.g.region_nodes(region) if x.op == "param"}
            p = params.get(j)
            if p is None:
                return None
            ch = self._follow(region, p.out(0))
            if ch is None:
                return None
            ends.add(ch.end)
            ctxs.append(ch.ctx)
            links += ch.links
        if len(ends) != 1:
            return None
        self.ifs[key] = (ends.pop(), ctxs)
        self._if_links[key] = links
        return self.ifs[key]

    def _ancestors(self, n: Node) -> set[bytes]:
        seen: set[bytes] = set()
        stack = [v.node for v in n.inputs]
        while stack:
            h = stack.pop()
            if h in seen:
                continue
            seen.add(h)
            stack.extend(v.node for v in self.g.nodes[h].inputs)
        return seen
