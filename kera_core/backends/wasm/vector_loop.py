"""SIMD bodies for the `for` loops the optimizer marked with ``lanes`` (opt/vectorize.py).

``lanes = L`` promises that L consecutive iterations may run at once and give the same
bits: every carried tensor is rank 1 and written only at the induction variable `i`,
read (if at all) only at `i`, the body is straight-line scalar code acting on each
element alone, and no iteration can raise a checked error. When, in addition, every
value of the body is of one float type `p` with `L` = 128 / bits(p), every operation has
a lane-wise form (`simd.vectorizable_op`), every tensor is read at `i` exactly, and the
loop updates its carried tensors in place, the loop runs `L` iterations per step with
`v128` loads, lane-wise operations and stores, and the remaining `< L` iterations run
the scalar body. Each lane computes exactly the scalar iteration's operations, so the
bits are the scalar loop's. Any other loop keeps its scalar body.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.backends.wasm import simd
from kera_core.ir.node import Node, Value
from kera_core.ir.types import Prim, Tensor, strip_ref


@dataclass
class VectorLoop:
    p: Prim
    nodes: list[Node]
    i: Value | None


def plan(fe, n: Node) -> VectorLoop | None:
    """The vector form of `for` node ``n``, or None when it keeps its scalar body."""
    g = fe.g
    lanes = n.attr("lanes")
    if not lanes or g.node(n.inputs[0]).attr("inclusive", False):
        return None
    nc = len(n.types)
    if nc == 0 or fe.mod.plans.loop(n).owned != set(range(nc)):
        return None
    elems = {strip_ref(t).elem for t in n.types if isinstance(strip_ref(t), Tensor)}
    if len(elems) != 1:
        return None
    p = elems.pop()
    if not simd.is_vector_float(p) or lanes != simd.lanes(p):
        return None
    body = g.regions[n.regions[0]]
    nodes = g.region_nodes(body)
    params = {x.attr("index"): x for x in nodes if x.op == "param"}
    i = Value(params[0].hash, 0) if 0 in params else None
    kind: dict[Value, str] = {}  # "vec" (a v128), "tensor" (an address), "i"
    if i is not None:
        kind[i] = "i"
    for x in nodes:
        out = x.out(0) if x.types else None
        t = strip_ref(x.types[0]) if x.types else None
        if x.op == "param":
            if x.attr("index") == 0:
                continue
            if isinstance(t, Tensor):
                if t.rank != 1 or t.elem != p:
                    return None
                kind[out] = "tensor"
            elif t == p:
                kind[out] = "vec"  # a scalar, splatted before the loop
            else:
                kind[out] = "other"  # allowed only if unused
        elif x.op == "const":
            if t != p:
                return None
            kind[out] = "vec"
        elif x.op == "index":
            if len(x.inputs) != 2 or x.inputs[1] != i or kind.get(x.inputs[0]) != "tensor":
                return None
            kind[out] = "vec"
        elif x.op == "update":
            if len(x.inputs) != 3 or x.inputs[1] != i or kind.get(x.inputs[0]) != "tensor":
                return None
            if kind.get(x.inputs[2]) != "vec":
                return None
            kind[out] = "tensor"
        elif simd.vectorizable_op(x.op, p) and t == p:
            if any(kind.get(v) != "vec" for v in x.inputs):
                return None
            kind[out] = "vec"
        else:
            return None
    return VectorLoop(p, nodes, i)


def emit(fe, vl: VectorLoop, i: str, h: str, vt: str, sg: str, args: list) -> None:
    """Run whole groups of L iterations from induction local ``i`` while ``h − i ≥ L``.

    ``args`` are the body's region arguments (the induction local, the carried locals, the
    captured locals); ``i`` is left at the first iteration not yet run.
    """
    p = vl.p
    lanes = simd.lanes(p)
    lg = simd.log2_size(p)
    idx = f"(local.get {i})" if vt == "i32" else f"(i32.wrap_i64 (local.get {i}))"
    local: dict[Value, str] = {}
    for x in vl.nodes:  # splats (constants, captured scalars) before the loop
        if x.op == "param" and x.attr("index") != 0:
            name = args[x.attr("index")]
            if name is None:
                continue
            if isinstance(strip_ref(x.types[0]), Tensor):
                local[x.out(0)] = name
            elif strip_ref(x.types[0]) == p:
                local[x.out(0)] = s = fe.local("v128", "sp")
                fe.emit(f"local.set {s} {simd.splat(p, f'(local.get {name})')}")
        elif x.op == "const":
            from kera_core.backends.wasm.emit import const

            local[x.out(0)] = s = fe.local("v128", "sp")
            fe.emit(f"local.set {s} {simd.splat(p, const(p, int(x.attr('value'))))}")
    brk, top = fe.label("vbrk"), fe.label("vtop")
    fe.emit(f"(block {brk} (loop {top}")
    fe.depth += 1
    fe.emit(f"(br_if {brk} (i32.eqz ({vt}.lt_{sg} (local.get {i}) (local.get {h}))))")
    fe.emit(
        f"(br_if {brk} ({vt}.lt_u ({vt}.sub (local.get {h}) (local.get {i})) ({vt}.const {lanes})))"
    )

    def at(v: Value) -> str:
        return f"(i32.add (local.get {local[v]}) (i32.shl {idx} (i32.const {lg})))"

    def get(v: Value) -> str:
        return f"(local.get {local[v]})"

    for x in vl.nodes:
        if x.op in ("param", "const"):
            continue
        if x.op == "index":
            local[x.out(0)] = r = fe.local("v128", "vx")
            fe.emit(f"local.set {r} {simd.load(at(x.inputs[0]))}")
        elif x.op == "update":
            fe.emit(simd.store(at(x.inputs[0]), get(x.inputs[2])))
            local[x.out(0)] = local[x.inputs[0]]
        else:
            local[x.out(0)] = r = fe.local("v128", "vx")
            fe.emit(f"local.set {r} {simd.op(fe.mod, x.op, p, *[get(v) for v in x.inputs])}")
    fe.emit(f"local.set {i} ({vt}.add (local.get {i}) ({vt}.const {lanes}))")
    fe.emit(f"br {top}")
    fe.depth -= 1
    fe.emit("))")
