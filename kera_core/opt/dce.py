"""Dead code: unused outputs of control nodes, and the parameters nobody reads.

A node nobody uses is already gone: a region holds exactly the nodes its yields reach,
and every pass ends by dropping unreachable nodes, regions and (after inlining) private
functions. What remains dead is *positional*: a loop-carried value nobody reads after
the loop (and that no live carried value depends on), an `if` output nobody reads, and a
captured value no region reads. Parameters are positional and part of a region's hash,
and a control node passes its inputs positionally, so removing one means removing the
input, the parameter, and (for carried values) the yield and the output, then
renumbering the rest (:func:`select_region`).

A value is only removed when computing it cannot fail (``Scope.droppable``): a dead
value whose computation could raise a checked error is still computed, so the run fails
exactly as before (docs/semantics.md §9).
"""

from __future__ import annotations

from kera_core.ir.node import Node, Value
from kera_core.opt.facts import params_reached
from kera_core.opt.rewrite import RegionPass, Site, select_region


def _results(attrs, types):
    return tuple((k, types if k == "results" else v) for k, v in attrs if k != "lanes")


class DCE(RegionPass):
    name = "dce"

    def rewrite(self, site: Site) -> list[Value | None] | None:
        op = site.new.op
        if op == "for":
            return self._loop(site, carried_at=1)
        if op == "while":
            return self._loop(site, carried_at=0)
        if op == "if":
            return self._if(site)
        return None

    def _loop(self, site: Site, carried_at: int):
        """`for` (params i, carried, captured) or `while` (params carried, captured)."""
        n = site.new
        g, an = self.g, self.an
        n_car = len(n.types)
        body_h = n.regions[-1]
        body = g.regions[body_h]
        facts = site.scope.sub_facts(n)[-1]
        bscope = an.scope(body_h, facts)
        carried = range(carried_at, carried_at + n_car)
        fixed: set[int] = set()  # params the node needs whatever the outputs
        if n.op == "while":
            cond = g.regions[n.regions[0]]
            fixed = params_reached(an, n.regions[0], list(cond.yields))
        live = set(site.used) | {p - carried_at for p in fixed if p in carried}
        while True:
            need = params_reached(an, body_h, [body.yields[k] for k in live]) | fixed
            grown = live | {p - carried_at for p in need if p in carried}
            if grown != live:
                live = grown
                continue
            stuck = {
                k
                for k in range(n_car)
                if k not in live
                and not (
                    bscope.droppable(body.yields[k])
                    and site.scope.droppable(n.inputs[carried_at + k])
                )
            }
            if not stuck:
                break
            live |= stuck
        keep = list(range(carried_at))  # the induction variable of a `for`
        keep += [carried_at + k for k in sorted(live)]
        for p in range(carried_at + n_car, len(body.params)):
            if p in need or not site.scope.droppable(n.inputs[p]):
                keep.append(p)
        if len(keep) == len(body.params):
            return None
        ys = sorted(live)
        regs = []
        for rh in n.regions:
            is_body = rh == body_h and len(regs) == len(n.regions) - 1
            regs.append(select_region(g, an, rh, keep, ys if is_body else [0]))
        # `for` inputs are (range, params 1..); `while` inputs are the params themselves
        ins = (n.inputs[0],) * carried_at + tuple(n.inputs[p] for p in keep[carried_at:])
        types = tuple(n.types[k] for k in ys)
        new = g.add(Node(n.op, ins, types, _results(n.attrs, types), tuple(regs)))
        pos = {k: i for i, k in enumerate(ys)}
        return [new.out(pos[k]) if k in pos else None for k in range(n_car)]

    def _if(self, site: Site):
        n = site.new
        g, an = self.g, self.an
        regions = [g.regions[h] for h in n.regions]
        facts = site.scope.sub_facts(n)
        scopes = [an.scope(h, f) for h, f in zip(n.regions, facts, strict=True)]
        n_out = len(n.types)
        live = set(site.used)
        for o in range(n_out):
            if o not in live and not all(
                s.droppable(r.yields[o]) for s, r in zip(scopes, regions, strict=True)
            ):
                live.add(o)
        ys = sorted(live)
        need: set[int] = set()
        for h, r in zip(n.regions, regions, strict=True):
            need |= params_reached(an, h, [r.yields[o] for o in ys])
        n_params = len(regions[0].params)
        keep = [
            p for p in range(n_params) if p in need or not site.scope.droppable(n.inputs[1 + p])
        ]
        if len(keep) == n_params and len(ys) == n_out:
            return None
        regs = tuple(select_region(g, an, h, keep, ys) for h in n.regions)
        ins = (n.inputs[0],) + tuple(n.inputs[1 + p] for p in keep)
        types = tuple(n.types[o] for o in ys)
        new = g.add(Node(n.op, ins, types, _results(n.attrs, types), regs))
        pos = {o: i for i, o in enumerate(ys)}
        return [new.out(pos[o]) if o in pos else None for o in range(n_out)]
