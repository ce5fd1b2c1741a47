"""Fused elementwise loops: expression trees over tensors, evaluated one element at a time.

An elementwise operation whose tensor result has exactly one use — as an operand of
another elementwise operation, or of a float `sum`/`mean`/`dot` in the same region — is
not written to a buffer of its own: its consumer computes it element by element inside
its own loop. `a * x + y` is one loop and one result buffer; `sum(x * y)` and `dot(x, y)`
read their operands once and allocate nothing per element.

This changes no result. A deferred operation cannot fail (integer `/` and `%` are never
deferred), so the order of checked errors is the reference order; it reads only values
that are not written again before its consumer runs (buffers are immutable except the
in-place updates of a loop body, and a region with such updates defers nothing); and
every element is computed by the very same scalar or lane-wise instruction.

A tree whose operations all have lane-wise forms (`simd.vectorizable_op`) over one float
type, whose tensor operands all have the result's shape and whose other operands are
scalars, runs as a `f32x4`/`f64x2` loop with a scalar tail; any other tree runs the
scalar loop (with NumPy broadcasting through `FnEmitter.broadcast_index`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.backends.wasm import rt, simd
from kera_core.ir.node import Node, Region
from kera_core.ir.types import Prim, Tensor, strip_ref

#: Operations the emitter lowers with `FnEmitter.elementwise`, one element at a time.
ELEMENTWISE = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div",
        "rem",
        "minimum",
        "maximum",
        "fma",
        "and",
        "or",
        "xor",
        "shl",
        "shr",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "land",
        "lor",
        "neg",
        "not",
        "abs",
        "sqrt",
        "cast",
        "exp",
        "log",
        "tanh",
        "sigmoid",
    }
)
FLOAT_REDUCTIONS = frozenset({"sum", "mean", "dot"})


def _elem(t) -> Prim:
    t = strip_ref(t)
    return t.elem if isinstance(t, Tensor) else t


def can_fail(n: Node, in_types) -> bool:
    return n.op in ("div", "rem") and not _elem(in_types[0]).is_float


def plan(g, region: Region, nodes: list[Node], inplace: bool) -> set[bytes]:
    """The nodes of ``region`` whose tensor result its single consumer computes inline."""
    if inplace:
        return set()
    uses: dict[tuple[bytes, int], list[Node]] = {}
    for x in nodes:
        for v in x.inputs:
            uses.setdefault((v.node, v.index), []).append(x)
    yielded = {(v.node, v.index) for v in region.yields}
    out: set[bytes] = set()
    for n in nodes:
        if n.op not in ELEMENTWISE or not isinstance(strip_ref(n.types[0]), Tensor):
            continue
        if can_fail(n, [g.type_of(v) for v in n.inputs]) or (n.hash, 0) in yielded:
            continue
        us = uses.get((n.hash, 0), [])
        if len(us) != 1:
            continue
        u = us[0]
        if u.op in ELEMENTWISE and isinstance(strip_ref(u.types[0]), Tensor):
            out.add(n.hash)
        elif u.op in FLOAT_REDUCTIONS and _elem(n.types[0]).is_float:
            out.add(n.hash)
    return out


# --- expression trees ------------------------------------------------------------------


@dataclass
class Leaf:
    """A tensor in linear memory at address ``addr`` (a WAT expression)."""

    addr: str
    t: Tensor


@dataclass
class Scalar:
    expr: str
    p: Prim


@dataclass
class Op:
    """Elementwise ``op`` (``to``: the target type of a cast) with result type ``t``."""

    op: str
    p_in: Prim
    t: Tensor
    args: list = field(default_factory=list)
    to: Prim | None = None


def tree(fe, env, n: Node) -> Op:
    """The expression tree of elementwise node ``n``, through its deferred operands."""
    args = []
    for v in n.inputs:
        src = fe.g.nodes[v.node]
        t = strip_ref(fe.g.type_of(v))
        if src.hash in fe.deferred:
            args.append(tree(fe, env, src))
        elif isinstance(t, Tensor):
            args.append(Leaf(fe.val(env, v), t))
        else:
            args.append(Scalar(fe.val(env, v), t))
    p_in = _elem(fe.g.type_of(n.inputs[0]))
    to = n.attr("to") if n.op == "cast" else None
    return Op(n.op, p_in, strip_ref(n.types[0]), args, to)


def scalar_at(fe, x, out: Tensor, i: str) -> str:
    """Element ``i`` (an i32 expression, a flat index into shape ``out``) of tree ``x``."""
    from kera_core.backends.wasm.emit import load, size_of

    if isinstance(x, Scalar):
        return x.expr
    if isinstance(x, Leaf):
        k = fe.broadcast_index(x.t, out, i)
        return load(x.t.elem, f"(i32.add {x.addr} (i32.mul {k} (i32.const {size_of(x.t.elem)})))")
    k = fe.broadcast_index(x.t, out, i)
    args = [scalar_at(fe, a, x.t, k) for a in x.args]
    if x.op == "cast":
        return rt.cast(fe.mod, x.p_in, x.to, args[0])
    return rt.scalar(fe.mod, x.op, x.p_in, *args)


def vector_ok(x, out: Tensor, p: Prim) -> bool:
    """Whether tree ``x`` can be computed lane-wise in float type ``p`` at shape ``out``."""
    if isinstance(x, Scalar):
        return x.p == p
    if tuple(x.t.shape) != tuple(out.shape) or x.t.elem != p:
        return False
    if isinstance(x, Leaf):
        return True
    return (
        x.op != "cast"
        and x.p_in == p
        and simd.vectorizable_op(x.op, p)
        and all(vector_ok(a, out, p) for a in x.args)
    )


def vector_at(fe, x, i: str, q: int, splats: dict[int, str]) -> str:
    """The v128 of elements ``i + q·L …`` of a tree that `vector_ok` accepted."""
    if isinstance(x, Scalar):
        return f"(local.get {splats[id(x)]})"
    if isinstance(x, Leaf):
        lg = simd.log2_size(x.t.elem)
        return simd.load(f"(i32.add {x.addr} (i32.shl {i} (i32.const {lg})))", 16 * q)
    return simd.op(fe.mod, x.op, x.p_in, *[vector_at(fe, a, i, q, splats) for a in x.args])


def _splats(fe, x, p: Prim, splats: dict[int, str]) -> None:
    """Splat every scalar operand of ``x`` into a v128 local once, before the loop."""
    if isinstance(x, Scalar):
        if id(x) not in splats:
            s = splats[id(x)] = fe.local("v128", "sp")
            fe.emit(f"local.set {s} {simd.splat(p, x.expr)}")
    elif isinstance(x, Op):
        for a in x.args:
            _splats(fe, a, p, splats)


# --- loops -------------------------------------------------------------------------------


def emit_map(fe, x: Op) -> str:
    """A fresh buffer holding every element of tree ``x``; the local with its address."""
    from kera_core.backends.wasm.emit import size_of, store

    t = x.t
    p = t.elem
    buf = fe.alloc(t)
    if not (simd.is_vector_float(p) and vector_ok(x, t, p)):
        fe.loop_elems(t, buf, lambda i: scalar_at(fe, x, t, f"(local.get {i})"))
        return buf
    splats: dict[int, str] = {}
    _splats(fe, x, p, splats)
    n, i = fe.local("i32", "n"), fe.local("i32", "i")
    nv = fe.local("i32", "nv")
    fe.emit(f"local.set {n} (i32.wrap_i64 {fe.count(t)})")
    fe.emit(f"local.set {nv} (i32.and (local.get {n}) (i32.const {-simd.lanes(p)}))")
    fe.emit(f"local.set {i} (i32.const 0)")
    lg = simd.log2_size(p)
    at = f"(i32.add (local.get {buf}) (i32.shl (local.get {i}) (i32.const {lg})))"
    _counted(
        fe, i, nv, simd.lanes(p), simd.store(at, vector_at(fe, x, f"(local.get {i})", 0, splats))
    )
    addr = f"(i32.add (local.get {buf}) (i32.mul (local.get {i}) (i32.const {size_of(p)})))"
    _counted(fe, i, n, 1, store(p, addr, scalar_at(fe, x, t, f"(local.get {i})")))
    return buf


def _counted(fe, i: str, end: str, step: int, body: str) -> None:
    """``while i < end: body; i += step``."""
    brk, top = fe.label("brk"), fe.label("top")
    fe.emit(f"(block {brk} (loop {top}")
    fe.depth += 1
    fe.emit(f"(br_if {brk} (i32.ge_u (local.get {i}) (local.get {end})))")
    fe.emit(body)
    fe.emit(f"local.set {i} (i32.add (local.get {i}) (i32.const {step}))")
    fe.emit(f"br {top}")
    fe.depth -= 1
    fe.emit("))")


def emit_sum(fe, x, t: Tensor) -> str:
    """The canonical float sum of the elements of tree ``x`` (shape ``t``); its local."""
    p = t.elem
    if isinstance(x, Leaf):
        s = fe.local(p.name, "s")
        cnt = f"(i32.wrap_i64 {fe.count(t)})"
        fe.emit(f"local.set {s} (call {simd.sum_helper(fe.mod, p)} {x.addr} {cnt})")
        return s
    vec = None
    if vector_ok(x, t, p):
        splats: dict[int, str] = {}
        _splats(fe, x, p, splats)

        def vec(i: str, q: int) -> str:
            return vector_at(fe, x, i, q, splats)

    lines, res = simd.canonical_sum(
        fe.mod,
        p,
        f"(i32.wrap_i64 {fe.count(t)})",
        vec,
        lambda i: scalar_at(fe, x, t, i),
        fe.local,
        fe.label,
    )
    for ln in lines:
        fe.emit(ln)
    return res
