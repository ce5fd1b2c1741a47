"""The evaluator: regions, loops, calls and effects over the content-addressed graph.

A region activation evaluates the region's nodes once each, in the graph's
topological order (`Graph.region_nodes`), into numbered slots; an `if` runs only the
region it selects, loops run their body once per iteration, a `call` runs the callee's
region with the callee's dimensions bound from the argument shapes.

**In-place updates.** `update` (a functional store) must not copy a whole tensor per
element written, or a loop filling `y[i]` would be quadratic. Every tensor held by a
slot (in any live activation, itself or inside a struct or tuple value) or by a loop
driver is counted in ``self.held``; a slot
is released right after its last use. When `update` finds that nobody else holds its
tensor, it writes in place — the same "the old value is dead" reasoning a backend
uses, made exact by counting.
"""

from __future__ import annotations

import io
import sys
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np

from kera_core.interp import printing
from kera_core.interp.errors import InterpError
from kera_core.interp.ops_impl import HANDLERS, check_indices, slice_region
from kera_core.interp.values import TOKEN, bind_all, concrete_shape
from kera_core.ir.cycles import RECURSION_LIMIT, resolve
from kera_core.ir.dims import check_exprs, exprs_of_function
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region
from kera_core.ir.ops import REGISTRY
from kera_core.ir.types import Tensor, strip_ref

CONTROL = (
    "for",
    "while",
    "if",
    "call",
    "update",
    "update_slice",
    "param",
    "print",
    "move_to",
    "copy_to",
)


@dataclass
class Step:
    node: Node
    handler: object  # a HANDLERS function, or None for control ops
    ins: tuple[int, ...]
    out: int  # first output slot
    n_out: int
    kill: tuple[int, ...]  # input slots whose last use is this step
    dead_out: tuple[bool, ...]  # outputs nobody reads


@dataclass
class Plan:
    """A region compiled to slot numbers, with each slot's last use precomputed."""

    steps: list[Step]
    n_slots: int
    params: list[list[int]]  # region param index -> slots that read it (unread ones left out)
    yields: tuple[int, ...]

    def __post_init__(self) -> None:
        self.fast = [(s.node, s.handler, s.ins, s.out, s.kill, s.dead_out) for s in self.steps]


@dataclass
class Ctx:
    """What the operations of one function activation may consult."""

    dims: dict[int, int]
    fn: Function
    depth: int = 0  # calls of ``fn``'s recursive component in progress (ir/cycles.py)


@dataclass
class Machine:
    graph: Graph
    stdout: TextIO | None = None
    max_steps: int | None = None
    plans: dict[bytes, Plan] = field(default_factory=dict)
    by_hash: dict[bytes, Function] = field(default_factory=dict)
    held: dict[int, int] = field(default_factory=dict)  # id(array) -> holders
    steps_left: int | None = None
    copies: int = 0  # tensors `update` had to copy (another holder was still alive)
    _dim_exprs: dict[bytes, tuple] = field(default_factory=dict)  # fn hash -> its DimExprs

    def __post_init__(self) -> None:
        self.by_hash = {f.hash: f for f in self.graph.functions.values()}
        self.steps_left = self.max_steps
        missing = sorted(set(REGISTRY) - set(HANDLERS) - set(CONTROL))
        assert not missing, f"ops without an implementation: {missing}"

    # --- holding tensors -------------------------------------------------------------
    def hold(self, v) -> None:
        """Count the tensors ``v`` holds: itself, or those of a struct or tuple value (a
        Python tuple), which are as much in use as a slot's own."""
        if type(v) is np.ndarray:
            k = id(v)
            self.held[k] = self.held.get(k, 0) + 1
        elif type(v) is tuple:
            for x in v:
                self.hold(x)

    def release(self, v) -> None:
        if type(v) is np.ndarray:
            k = id(v)
            c = self.held[k] - 1
            if c:
                self.held[k] = c
            else:
                del self.held[k]
        elif type(v) is tuple:
            for x in v:
                self.release(x)

    # --- plans ------------------------------------------------------------------------
    def plan(self, region_hash: bytes) -> Plan:
        p = self.plans.get(region_hash)
        if p is None:
            p = self.plans[region_hash] = self._compile(self.graph.regions[region_hash])
        return p

    def _compile(self, region: Region) -> Plan:
        nodes = self.graph.region_nodes(region)
        slot: dict[tuple[bytes, int], int] = {}
        params: list[list[int]] = [[] for _ in region.params]
        order: list[Node] = []
        for n in nodes:
            if n.op == "param":
                s = len(slot)
                slot[(n.hash, 0)] = s
                params[n.attr("index")].append(s)
            else:
                order.append(n)
                n_out = max(len(n.types), 1)
                for i in range(n_out):
                    slot[(n.hash, i)] = len(slot)
        last: dict[int, int] = {}
        ins_of: list[tuple[int, ...]] = []
        for k, n in enumerate(order):
            ins = tuple(slot[(v.node, v.index)] for v in n.inputs)
            ins_of.append(ins)
            for s in ins:
                last[s] = k
        yields = tuple(slot[(v.node, v.index)] for v in region.yields)
        end = len(order)
        for s in yields:
            last[s] = end
        used = set(last)
        steps = []
        for k, n in enumerate(order):
            kill = tuple(sorted({s for s in ins_of[k] if last[s] == k}))
            out = slot[(n.hash, 0)]
            n_out = max(len(n.types), 1)
            dead = tuple((out + i) not in used for i in range(n_out))
            handler = None if n.op in CONTROL else HANDLERS[n.op]
            steps.append(Step(n, handler, ins_of[k], out, n_out, kill, dead))
        params = [[s for s in ss if s in used] for ss in params]  # unread params stay empty
        return Plan(steps, len(slot), params, yields)

    # --- activations -------------------------------------------------------------------
    def run_region(self, region_hash: bytes, args: list, ctx: Ctx) -> list:
        """Evaluate one activation of a region on ``args``; returns what it yields."""
        plan = self.plans.get(region_hash) or self.plan(region_hash)
        slots: list = [None] * plan.n_slots
        held = self.held
        ndarray = np.ndarray
        for i, ss in enumerate(plan.params):
            v = args[i]
            for s in ss:
                slots[s] = v
                if type(v) is ndarray:
                    held[id(v)] = held.get(id(v), 0) + 1
                elif type(v) is tuple:  # a struct's tensors (`hold`)
                    self.hold(v)
        for node, h, ins, out, kill, dead in plan.fast:
            vals = [slots[s] for s in ins]
            for s in kill:
                v = slots[s]
                slots[s] = None
                if type(v) is ndarray:
                    k = id(v)
                    c = held[k] - 1
                    if c:
                        held[k] = c
                    else:
                        del held[k]
                elif type(v) is tuple:
                    self.release(v)
            if h is not None:
                v = h(node, ctx, *vals)
                if not dead[0]:
                    slots[out] = v
                    if type(v) is ndarray:
                        held[id(v)] = held.get(id(v), 0) + 1
                    elif type(v) is tuple:
                        self.hold(v)
                continue
            for i, v in enumerate(self._control(node, vals, ctx)):
                if not dead[i]:
                    slots[out + i] = v
                    if type(v) is ndarray:
                        held[id(v)] = held.get(id(v), 0) + 1
                    elif type(v) is tuple:
                        self.hold(v)
        result = [slots[s] for s in plan.yields]
        for s in plan.yields:
            if slots[s] is not None:
                self.release(slots[s])
                slots[s] = None
        return result

    def _tick(self, node: Node) -> None:
        if self.steps_left is not None:
            self.steps_left -= 1
            if self.steps_left < 0:
                raise InterpError("R0007", f"more than {self.max_steps} loop iterations", node.hash)

    # --- control, calls, effects ---------------------------------------------------------
    def _control(self, node: Node, vals: list, ctx: Ctx) -> tuple:
        op = node.op
        if op == "update":
            t = vals[0]
            idx = check_indices(t, vals[1:-1], node)
            if id(t) in self.held or not t.flags.writeable:
                t = t.copy()
                self.copies += 1
            t[idx] = vals[-1]
            return (t,)
        if op == "update_slice":  # in place when no one else holds the tensor, as `update`
            t = vals[0]
            region = slice_region(t, vals[1:-1], node, ctx)
            if id(t) in self.held or not t.flags.writeable:
                t = t.copy()
                self.copies += 1
            t[region] = vals[-1]
            return (t,)
        if op == "if":
            region = node.regions[0] if bool(vals[0]) else node.regions[1]
            return tuple(self.run_region(region, vals[1:], ctx))
        if op == "for":
            return self._for(node, vals, ctx)
        if op == "while":
            return self._while(node, vals, ctx)
        if op == "call":
            callee = self.by_hash[resolve(node.attr("callee"), ctx.fn)]
            return tuple(self.call(callee, vals, node, ctx))
        if op == "print":
            self._print(node, vals[1:])
            return (TOKEN,)
        if op in ("move_to", "copy_to"):
            return (TOKEN, vals[1])  # the space is a type-level fact; the bits do not change
        raise InterpError("R0008", f"no implementation of `{op}`", node.hash)

    def _for(self, node: Node, vals: list, ctx: Ctx) -> tuple:
        steps, ty = vals[0]
        n_carried = len(node.types)
        carried = vals[1 : 1 + n_carried]
        captured = vals[1 + n_carried :]
        for v in captured:
            self.hold(v)
        region = node.regions[0]
        for i in steps:
            self._tick(node)
            carried = self.run_region(region, [ty(i), *carried, *captured], ctx)
        for v in captured:
            self.release(v)
        return tuple(carried)

    def _while(self, node: Node, vals: list, ctx: Ctx) -> tuple:
        n_carried = len(node.types)
        carried = vals[:n_carried]
        captured = vals[n_carried:]
        cond_r, body_r = node.regions
        for v in captured:
            self.hold(v)
        while True:
            for v in carried:  # the condition only reads the carried values
                self.hold(v)
            (c,) = self.run_region(cond_r, [*carried, *captured], ctx)
            for v in carried:
                self.release(v)
            if not bool(c):
                break
            self._tick(node)
            carried = self.run_region(body_r, [*carried, *captured], ctx)
        for v in captured:
            self.release(v)
        return tuple(carried)

    def call(self, fn: Function, args: list, node: Node | None = None, ctx=None) -> list:
        """Run ``fn`` on region arguments (token first if it has effects)."""
        dims: dict[int, int] = {}
        first = 1 if fn.type.effects else 0
        where = node.hash if node is not None else None
        whats = [f"argument {i + 1} of `{fn.name}`" for i in range(len(fn.type.params))]
        bind_all(fn.type.params, args[first:], dims, whats, where)
        if len(dims) < fn.type.n_dims and node is not None and ctx is not None:
            # dimensions only the result type fixes: the call's own result type, in the
            # caller's dimensions, gives them (language.md §7.2)
            rt = strip_ref(node.types[first]) if len(node.types) > first else None
            if ("result", -1) in fn.outputs and isinstance(rt, Tensor):
                shape = concrete_shape(rt, ctx.dims)
                held = np.broadcast_to(np.empty((), np.int8), shape)
                bind_all(
                    (*fn.type.params, fn.type.result),
                    [*args[first:], held],
                    dims,
                    [*whats, f"the result of `{fn.name}`"],
                    where,
                )
        if len(dims) < fn.type.n_dims:
            raise InterpError(
                "R0006", f"`{fn.name}` has dimensions its arguments do not determine", where
            )
        depth = 0
        if fn.component is not None:  # semantics.md §9: R0012 past RECURSION_LIMIT
            inside = ctx is not None and ctx.fn.component == fn.component
            depth = ctx.depth + 1 if inside else 1
            if depth > RECURSION_LIMIT:
                raise InterpError(
                    "R0012",
                    f"a call of `{fn.name}` would be call {RECURSION_LIMIT + 1} of its"
                    f" recursive cycle in progress at once (the limit is {RECURSION_LIMIT})",
                    where,
                )
        self.check_dims(fn, dims, where)
        return self.run_region(fn.region, list(args), Ctx(dims, fn, depth))

    def check_dims(self, fn: Function, dims: dict[int, int], where: bytes | None = None) -> None:
        """On entering ``fn``: every dimension expression in its types must be a size under
        the bound dimensions (R0003), on every target at this same point (§7.5)."""
        exprs = self._dim_exprs.get(fn.hash)
        if exprs is None:
            exprs = self._dim_exprs[fn.hash] = exprs_of_function(self.graph, fn)
        if exprs:
            why = check_exprs(exprs, dims)
            if why is not None:
                raise InterpError("R0003", f"`{fn.name}`: {why}", where)

    def _print(self, node: Node, vals: list) -> None:
        text = node.attr("text")
        if text is not None:
            s = text
        else:
            s = printing.format_value(vals[0], self.graph.type_of(node.inputs[1]))
        out = self.stdout if self.stdout is not None else sys.stdout
        out.write(s)


def new_buffer() -> io.StringIO:
    return io.StringIO()
