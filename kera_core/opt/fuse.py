"""Loop fusion: two `for` loops over the same range become one.

``L1`` and ``L2`` are `for` nodes of one region with the *same range value* (hash-consing
makes `0..N` one node), and ``L2`` reads some of ``L1``'s results as captures. The fused
loop runs, in each iteration ``i``, ``L1``'s body and then ``L2``'s body, carrying both
loops' values. That is only the same computation when ``L2``, at iteration ``i``, sees
what it saw before — ``L1``'s *final* values — which this pass proves as follows:

* every result of ``L1`` that ``L2`` reads is a rank-1 tensor that ``L1``'s body yields as
  ``update(t, i, v)`` of its own carried parameter ``t``: iteration ``i`` writes element
  ``i`` and nothing else, so after ``L1``'s iteration ``i`` element ``i`` is final;
* ``L2``'s body reads it only as ``index(t, i)``: element ``i`` at iteration ``i``.

So ``L2``'s iteration ``i`` may read the value ``L1``'s part of the fused body just
yielded. Also required: neither loop carries the effect token (prints would interleave);
no other input of ``L2`` depends on ``L1`` (the fused node would depend on itself);
``L2`` reads ``L1``'s results only as captures (not as carried initial values).

Checked errors: iterations interleave, so at most one of the two bodies may be able to
fail, the loops' inputs must not be able to fail, and if ``L2``'s body can fail no node
that can fail may lie between ``L1`` and ``L2`` in the region's evaluation order. Then the
first error of the fused loop is the first error of the two loops (docs/optimizer.md).

The step limit (R0007, a host setting) counts iterations; a fused loop takes fewer.
"""

from __future__ import annotations

from kera_core.ir.node import Node, Region, Value
from kera_core.ir.types import TOKEN, Tensor, strip_ref
from kera_core.opt.facts import Facts, Scope
from kera_core.opt.rewrite import RegionPass, clone, param_value, substitute_values


class Fuse(RegionPass):
    name = "fuse"

    def rewrite_region(self, scope: Scope, rh: bytes) -> bytes:
        for _ in range(1000):
            pair = self._find(rh, scope.facts)
            if pair is None:
                return rh
            rh = self._fuse(rh, *pair)
        return rh

    # --- finding a pair ----------------------------------------------------------------
    def _find(self, rh: bytes, facts: Facts):
        an, g = self.an, self.g
        order = an.order(rh)
        if sum(1 for n in order if n.op == "for") < 2:
            return None
        s = an.scope(rh, facts)
        pos = {n.hash: i for i, n in enumerate(order)}
        uses: dict[Value, int] = {}
        for n in order:
            for v in n.inputs:
                uses[v] = uses.get(v, 0) + 1
        for v in g.regions[rh].yields:
            uses[v] = uses.get(v, 0) + 1
        for l2 in order:
            if l2.op != "for":
                continue
            for v in l2.inputs[1:]:
                l1 = g.nodes[v.node]
                if l1.op == "for" and l1 is not l2 and l1.inputs[0] == l2.inputs[0]:
                    if self._can_fuse(s, order, pos, uses, l1, l2):
                        return l1, l2
        return None

    def _param_node(self, rh: bytes, index: int) -> Node | None:
        for n in self.an.order(rh):
            if n.op == "param" and n.attr("index") == index:
                return n
        return None

    def _elementwise_param(self, rh: bytes, index: int, yield_at: int | None) -> bool:
        """Parameter ``index`` of loop body ``rh`` is read only as ``index(p, i)``, and (if
        ``yield_at`` is given) yield ``yield_at`` is ``p`` or ``update(p, i, v)``, the only
        other use of ``p``."""
        g, an = self.g, self.an
        p, i = self._param_node(rh, index), self._param_node(rh, 0)
        if p is None:
            return yield_at is None  # an unused capture; an unused carried value is not
        if i is None:
            return False
        pv, iv = p.out(0), i.out(0)
        ys = g.regions[rh].yields
        upd = None
        if yield_at is not None:
            y = ys[yield_at]
            u = g.nodes[y.node]
            if y != pv:
                if u.op != "update" or u.inputs[:2] != (pv, iv) or len(u.inputs) != 3:
                    return False
                upd = u.hash
        if any(y == pv for k, y in enumerate(ys) if k != yield_at):
            return False
        for n in an.order(rh):
            if pv not in n.inputs:
                continue
            if n.op == "index" and n.inputs == (pv, iv):
                continue
            if n.hash == upd and pv not in n.inputs[1:]:
                continue
            return False
        return True

    def _can_fuse(self, s: Scope, order, pos, uses, l1: Node, l2: Node) -> bool:
        g, an = self.g, self.an
        if any(g.type_of(v) == TOKEN for v in l1.inputs + l2.inputs):
            return False
        n2 = len(l2.types)
        consumed = {p: v.index for p, v in enumerate(l2.inputs) if v.node == l1.hash}
        carried_in = {p: m for p, m in consumed.items() if p < 1 + n2}
        if len(set(carried_in.values())) != len(carried_in):
            return False
        others = [v for p, v in enumerate(l2.inputs) if p not in consumed]
        if self._depends_on(others, l1.hash):
            return False
        body1, body2 = l1.regions[0], l2.regions[0]
        b1 = g.regions[body1]
        i1 = self._param_node(body1, 0)
        for m in set(consumed.values()):
            # L1 writes element i of result m at iteration i, and nothing else of it
            u = g.nodes[b1.yields[m].node]
            t = self._param_node(body1, 1 + m)
            if (
                u.op != "update"
                or t is None
                or i1 is None
                or len(u.inputs) != 3
                or u.inputs[0] != t.out(0)
                or u.inputs[1] != i1.out(0)
                or not isinstance(strip_ref(u.types[0]), Tensor)
            ):
                return False
        for p, m in carried_in.items():
            # one tensor threaded through both loops: L1's result m goes nowhere else,
            # and each body touches only element i of it
            if uses.get(Value(l1.hash, m), 0) != 1:
                return False
            if not self._elementwise_param(body1, 1 + m, m):
                return False
            if not self._elementwise_param(body2, p, p - 1):
                return False
        for p in consumed:
            if p not in carried_in and not self._elementwise_param(body2, p, None):
                return False
        f1, f2 = s.sub_facts(l1)[0], s.sub_facts(l2)[0]
        ff1, ff2 = an.region_ff(body1, f1), an.region_ff(body2, f2)
        if not (ff1 or ff2):
            return False
        if not all(s.ff(v) for v in list(l1.inputs) + others):
            return False
        if not ff2 and any(
            s.node_fallible(order[k]) for k in range(pos[l1.hash] + 1, pos[l2.hash])
        ):
            return False
        return True

    def _depends_on(self, values: list[Value], target: bytes) -> bool:
        g = self.g
        seen: set[bytes] = set()
        stack = [v.node for v in values]
        while stack:
            h = stack.pop()
            if h == target:
                return True
            if h in seen:
                continue
            seen.add(h)
            stack.extend(v.node for v in g.nodes[h].inputs)
        return False

    # --- building the fused loop ---------------------------------------------------------
    def _fuse(self, rh: bytes, l1: Node, l2: Node) -> bytes:
        g, an = self.g, self.an
        n1, n2 = len(l1.types), len(l2.types)
        b1, b2 = g.regions[l1.regions[0]], g.regions[l2.regions[0]]
        consumed = {p: v.index for p, v in enumerate(l2.inputs) if v.node == l1.hash}
        merged = {p - 1: m for p, m in consumed.items() if p < 1 + n2}  # L2 carried j <- m
        own2 = [j for j in range(n2) if j not in merged]  # L2's carried values kept apart
        kept2 = [p for p in range(1 + n2, len(l2.inputs)) if p not in consumed]
        caps1 = list(range(1 + n1, len(l1.inputs)))
        params = (
            [b1.params[0]]
            + list(b1.params[1 : 1 + n1])
            + [b2.params[1 + j] for j in own2]
            + [b1.params[p] for p in caps1]
            + [b2.params[p] for p in kept2]
        )

        def P(j: int) -> Value:
            return param_value(g, j, params[j])

        base1 = 1 + n1 + len(own2)
        args1 = [P(0)] + [P(1 + k) for k in range(n1)]
        args1 += [P(base1 + q) for q in range(len(caps1))]
        y1 = clone(g, an, l1.regions[0], args1)
        base2 = base1 + len(caps1)
        args2 = [P(0)]
        for j in range(n2):
            args2.append(y1[merged[j]] if j in merged else P(1 + n1 + own2.index(j)))
        for p in range(1 + n2, len(l2.inputs)):
            args2.append(y1[consumed[p]] if p in consumed else P(base2 + kept2.index(p)))
        y2 = clone(g, an, l2.regions[0], args2)
        ys = list(y1)
        for j, m in merged.items():
            ys[m] = y2[j]  # the threaded tensor leaves the iteration after L2's write
        ys += [y2[j] for j in own2]
        body = g.add_region(Region(tuple(params), tuple(ys)))
        ins = (
            (l1.inputs[0],)
            + l1.inputs[1 : 1 + n1]
            + tuple(l2.inputs[1 + j] for j in own2)
            + tuple(l1.inputs[p] for p in caps1)
            + tuple(l2.inputs[p] for p in kept2)
        )
        types = l1.types + tuple(l2.types[j] for j in own2)
        attrs = tuple((k, types if k == "results" else v) for k, v in l1.attrs if k != "lanes")
        f = g.add(Node("for", ins, types, attrs, (body.hash,)))
        mapping = {Value(l1.hash, k): f.out(k) for k in range(n1)}
        for j in range(n2):
            k = merged[j] if j in merged else n1 + own2.index(j)
            mapping[Value(l2.hash, j)] = f.out(k)
        return substitute_values(g, an, rh, mapping)
