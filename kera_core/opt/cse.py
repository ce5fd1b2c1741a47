"""Common subexpressions: hash-consing, plus merging at region boundaries.

Equal nodes are one node by construction (the store is keyed by hash), and every pass
re-inserts what it rebuilds, so rewrites that make two nodes equal merge them. This pass
adds what hashing alone cannot see, always without moving a value into or out of a
region (regions are closed; hoisting would change which values a region captures):

* the same value passed twice into a control node (two captures, or two `if` inputs)
  becomes one input and one parameter;
* a loop-carried value the body yields back unchanged is loop-invariant: it becomes a
  capture, and the loop's output for it is the initial value itself;
* an `if` output that both regions yield as the same parameter (or the same constant)
  is that input (or constant) itself;

  (both redirect users away from the node, which may then die or be reached later, so
  they apply only when nothing in the node's cone can fail — docs/optimizer.md);
* `select(c, a, a)` is `a`; an `if` whose two regions are the same region is that
  region inlined.
"""

from __future__ import annotations

from kera_core.ir.node import Node, Value
from kera_core.opt.rewrite import RegionPass, Site, replacement_safe, select_region


class CSE(RegionPass):
    name = "cse"

    def rewrite(self, site: Site) -> list[Value | None] | None:
        n = site.new
        if n.op == "select" and n.inputs[1] == n.inputs[2]:
            outs: list[Value | None] = [n.inputs[1]]
            return outs if replacement_safe(site, outs, []) else None
        if n.op == "if":
            if n.regions[0] == n.regions[1]:
                emitted: list[Node] = []
                outs = list(self.clone(n.regions[0], list(n.inputs[1:]), emitted))
                if replacement_safe(site, outs, emitted):
                    return outs
            return self._if_forward(site) or self._merge_inputs(site, 1, 0)
        if n.op == "for":
            n_car = len(n.types)
            return self._invariant(site) or self._merge_inputs(site, 1 + n_car, 1 + n_car)
        if n.op == "while":
            n_car = len(n.types)
            return self._invariant(site) or self._merge_inputs(site, n_car, n_car)
        return None

    # --- duplicate inputs -----------------------------------------------------------------
    def _merge_inputs(self, site: Site, first_input: int, first_param: int):
        """Inputs from ``first_input`` on map to params from ``first_param`` on (1:1)."""
        n = site.new
        seen: dict[Value, int] = {}
        alias: dict[int, int] = {}
        for k, v in enumerate(n.inputs[first_input:]):
            if v in seen:
                alias[first_param + k] = first_param + seen[v]
            else:
                seen[v] = k
        if not alias:
            return None
        r0 = self.g.regions[n.regions[0]]
        keep = [j for j in range(len(r0.params)) if j not in alias]
        regs = tuple(
            select_region(
                self.g, self.an, rh, keep, list(range(len(self.g.regions[rh].yields))), alias
            )
            for rh in n.regions
        )
        shift = first_input - first_param
        ins = n.inputs[:first_input] + tuple(n.inputs[j + shift] for j in keep if j >= first_param)
        new = self.g.add(Node(n.op, ins, n.types, n.attrs, regs))
        return [new.out(i) for i in range(len(n.types))]

    # --- loop-invariant carried values ----------------------------------------------------
    def _invariant(self, site: Site):
        n = site.new
        g = self.g
        if not site.scope.ff(n.out(0)):
            return None  # a user moves away from the loop: it must not be able to fail
        n_car = len(n.types)
        is_for = n.op == "for"
        base = 1 if is_for else 0  # position of carried value 0 among the inputs and params
        body = g.regions[n.regions[-1]]
        inv = []
        for k in range(n_car):
            y = body.yields[k]
            yn = g.nodes[y.node]
            if (
                yn.op == "param"
                and yn.attr("index") == base + k
                and site.scope.ff(n.inputs[base + k])
            ):
                inv.append(k)
        if not inv:
            return None
        if len(inv) == n_car:
            if not is_for:
                return None  # the loop still runs (it may not terminate): keep one value
            outs0: list[Value | None] = list(n.inputs[1 : 1 + n_car])
            return outs0 if replacement_safe(site, outs0, []) else None
        moved = [base + k for k in inv]
        n_params = len(body.params)
        keep = [p for p in range(n_params) if p not in moved] + moved
        regs = []
        for rh in n.regions:
            r = g.regions[rh]
            ys = list(range(len(r.yields)))
            if rh == n.regions[-1]:
                ys = [i for i in ys if i not in inv]
            regs.append(select_region(g, self.an, rh, keep, ys))
        ins = tuple(v for p, v in enumerate(n.inputs) if p not in moved)
        ins += tuple(n.inputs[p] for p in moved)
        types = tuple(t for i, t in enumerate(n.types) if i not in inv)
        new = g.add(Node(n.op, ins, types, _with_results(n.attrs, types), tuple(regs)))
        outs: list[Value | None] = []
        idx = 0
        for i in range(n_car):
            if i in inv:
                outs.append(n.inputs[base + i])
            else:
                outs.append(new.out(idx))
                idx += 1
        return outs

    # --- `if` outputs that do not depend on the branch --------------------------------------
    def _if_forward(self, site: Site):
        n = site.new
        g = self.g
        if not site.scope.ff(n.out(0)):
            return None  # a user moves away from the `if`: it must not be able to fail
        r_then, r_else = (g.regions[h] for h in n.regions)
        outs: list[Value | None] = [n.out(i) for i in range(len(n.types))]
        changed = False
        for o, (a, b) in enumerate(zip(r_then.yields, r_else.yields, strict=True)):
            if a != b or o not in site.used:
                continue
            an = g.nodes[a.node]
            if an.op == "param":
                v = n.inputs[1 + an.attr("index")]
                if site.scope.ff(v):
                    outs[o] = v
                    changed = True
            elif an.op in ("const", "dim"):
                outs[o] = g.add(an).out(0)
                changed = True
        return outs if changed else None


def _with_results(attrs, types):
    return tuple((k, types if k == "results" else v) for k, v in attrs if k != "lanes")


__all__ = ["CSE"]
