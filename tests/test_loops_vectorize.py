"""The shared vector plan (kera_core/loops/vectorize.py): which `lanes` loops run as vectors,
how their values are classified and how many vectors a step jams — decided from a target
description alone, for any backend."""

from __future__ import annotations

from kera_core.analysis import analyze
from kera_core.loops import ir
from kera_core.loops.ir import Imm
from kera_core.loops.lower import lower_program
from kera_core.loops.vectorize import VectorTarget, plan

OPS = frozenset({"add", "sub", "mul", "div", "sqrt", "fma", "minimum", "maximum", "select"})
WIDE = VectorTarget(width_bytes=32, registers=14, ops=OPS)
NARROW = VectorTarget(width_bytes=16, registers=30, ops=OPS)


def plans(src: str, fn: str, target: VectorTarget = WIDE) -> list:
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    f = lower_program(a.module.graph, fn).functions[fn]
    out: list = []
    defined: set[int] = {v.id for v in f.dims}
    for group in f.params:
        defined.update(x.id for x in group if isinstance(x, ir.Var))

    def walk(stmts):
        for s in stmts:
            if isinstance(s, ir.Loop):
                if s.mark == "lanes":
                    out.append(plan(s, set(defined), target))
                defined.add(s.var.id)
                walk(s.body)
            elif isinstance(s, (ir.Op, ir.Load)):
                defined.add(s.dst.id)
            elif isinstance(s, ir.If):
                walk(s.then)
                walk(s.orelse)
            elif isinstance(s, ir.While):
                walk(s.cond)
                walk(s.body)

    walk(f.body)
    return out


def test_the_canonical_sums_lanes_are_one_vector_loop_with_an_inner_chain() -> None:
    (p,) = [p for p in plans("pub fn s[N](x: &f32[N]) -> f32 { sum(x) }", "s") if p]
    assert p.inner and p.elem == "f32" and p.width == 8
    assert p.step == 16  # the 16 lanes of §7.1: two f32 vectors, two independent chains
    (q,) = [p for p in plans("pub fn s[N](x: &f64[N]) -> f64 { sum(x) }", "s") if p]
    assert q.width == 4 and q.jam == 4 and q.step == 16
    (r,) = [p for p in plans("pub fn s[N](x: &f64[N]) -> f64 { sum(x) }", "s", NARROW) if p]
    assert r.width == 2 and r.step == 8  # NEON-sized vectors: the jam is capped at 4


def test_a_fused_dot_varies_per_lane_and_keeps_its_accumulator() -> None:
    src = "pub fn d[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }"
    (p,) = [p for p in plans(src, "d") if p]
    assert p.inner and p.reassigned & p.varying  # the lane accumulator is defined again


def test_matmul_columns_jam_within_the_register_budget() -> None:
    src = "pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }"
    # a block of 4 rows (4 accumulators a lane), then single rows (1 accumulator)
    block, single = [p for p in plans(src, "mm") if p]
    assert block.inner and len(block.reassigned & block.varying) == 4
    assert block.jam == 2 and block.step == 16  # 2 × 4 accumulators + loads in 14 registers
    assert single.jam == 4 and single.step == 32
    tight = VectorTarget(width_bytes=32, registers=5, ops=OPS)
    assert all(p.jam == 1 for p in plans(src, "mm", tight) if p)


def test_elementwise_loops_jam_copies_within_the_register_budget() -> None:
    src = "pub fn f[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }"
    ps = [p for p in plans(src, "f") if p]
    assert ps and all(p.jam == 4 and not p.inner for p in ps)  # 14 registers: 3 per copy
    few = VectorTarget(width_bytes=32, registers=7, ops=OPS)
    assert all(p.jam == 2 for p in plans(src, "f", few) if p)
    none = VectorTarget(width_bytes=32, registers=3, ops=OPS)
    assert all(p.jam == 1 for p in plans(src, "f", none) if p)


def test_what_stays_scalar() -> None:
    # integers: no float lanes
    assert not any(plans("pub fn f[N](x: &i32[N]) -> i32[N] { x + x }", "f"))
    # an operation the target lacks as a vector instruction
    few = VectorTarget(width_bytes=32, registers=14, ops=frozenset({"add"}))
    assert not any(plans("pub fn f[N](x: &f32[N]) -> f32[N] { x * x }", "f", few))
    # mixed float types in one loop
    src = "pub fn f[N](x: &f32[N], y: &f64[N]) -> f64 { sum(x) as f64 + sum(y) }"
    assert all(p is None or p.elem in ("f32", "f64") for p in plans(src, "f"))


def test_a_loop_that_carries_a_value_across_lanes_is_refused() -> None:
    i, j = ir.Var(1, "i64", "i"), ir.Var(2, "i64", "j")
    acc, x = ir.Var(3, "f32", "acc"), ir.Var(4, "f32", "x")
    buf = ir.Buf(1, "f32", ir.Imm("i64", 64))
    zero = ir.Imm("i64", 0)
    n = ir.Imm("i64", 64)
    # acc lives outside and is updated by every lane: a reduction, not independent lanes
    body = [ir.Load(x, buf, i), ir.Op(acc, "add", (acc, x))]
    assert plan(ir.Loop(i, zero, n, body, "lanes"), {acc.id}, WIDE) is None
    # a store every lane makes to one cell
    body = [ir.Load(x, buf, i), ir.Store(buf, zero, x)]
    assert plan(ir.Loop(i, zero, n, body, "lanes"), set(), WIDE) is None
    # a gather (stride 2) and control flow stay scalar
    body = [ir.Op(j, "add", (i, i)), ir.Load(x, buf, j), ir.Store(buf, i, x)]
    assert plan(ir.Loop(i, zero, n, body, "lanes"), set(), WIDE) is None
    body = [ir.Load(x, buf, i), ir.If(ir.Imm("bool", 1), [ir.Store(buf, i, x)], [])]
    assert plan(ir.Loop(i, zero, n, body, "lanes"), set(), WIDE) is None
    # the same body unmarked, or counted, is never planned
    body = [ir.Load(x, buf, i), ir.Store(buf, i, x)]
    assert plan(ir.Loop(i, zero, n, body, "lanes"), set(), WIDE) is not None
    assert plan(ir.Loop(i, zero, n, body, "seq"), set(), WIDE) is None
    assert plan(ir.Loop(i, zero, n, body, "lanes", counted=True), set(), WIDE) is None


def test_the_plan_lists_the_invariants_vector_code_reads_once_each() -> None:
    src = "pub fn f[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + a * y + 2.5 }"
    ps = [p for p in plans(src, "f") if p]
    assert ps
    inv = ps[0].invariants()
    kinds = sorted("imm" if isinstance(x, Imm) else "var" for x in inv)
    assert kinds == ["imm", "var"]  # `a` once (read twice), the constant 2.5 once
    body = ir.assigned(ps[0].loop.body)
    assert all(not isinstance(x, ir.Var) or x.id not in body for x in inv)


def test_a_lane_index_used_as_a_value_keeps_the_loop_scalar() -> None:
    """`y[i] = i as f32` in a `lanes` loop: the index is data, which would need integer lanes;
    the plan refuses (it classified the conversion as uniform before, and the x86 selector
    then read the index's register where only the step's first lane index was defined)."""
    i = ir.Var(1, "i64", "i")
    n = ir.Var(2, "i64", "n")
    out = ir.Buf(3, "f32", n, "host", "temp", True, "y")
    v = ir.Var(4, "f32")
    loop = ir.Loop(i, Imm("i64", 0), n, [ir.Op(v, "convert", (i,)), ir.Store(out, i, v)], "lanes")
    assert plan(loop, {n.id}, WIDE) is None
    # a float computed from a load at the index is still planned
    x = ir.Buf(5, "f32", n, "host", "param", False, "x")
    w = ir.Var(6, "f32")
    ok = ir.Loop(i, Imm("i64", 0), n, [ir.Load(w, x, i), ir.Store(out, i, w)], "lanes")
    assert plan(ok, {n.id}, WIDE) is not None


# --- mixed widths: binary32 widened to binary64 and narrowed back ----------------------------

_INT64 = frozenset(
    f"{op}:{t}"
    for t in ("i64", "u64")
    for op in ("add", "sub", "and", "or", "shl", "shr", "select")
) | {"eq:i64", "bitcast:f64>u64", "bitcast:u64>f64", "bitcast:f64>i64", "bitcast:i64>f64"}
_CONVERTS = frozenset({"convert:f32>f64", "convert:f64>f32"})
_MASKS = frozenset({"and:bool", "or:bool", "select:bool"})
MIXED = VectorTarget(
    width_bytes=16,
    registers=22,
    ops=OPS | {"neg", "abs", "lt", "gt", "ge", "le", "eq", "ne"},
    int_ops=_INT64 | _CONVERTS | _MASKS,
    narrow_lanes=True,
)


def test_binary32_exp_runs_in_binary64_lanes_where_the_target_holds_half_width_values() -> None:
    """exp/log/tanh/sigmoid on f32 evaluate in binary64 (semantics.md §6.2–§6.5): on a target
    with narrow lanes the plan's lanes are f64's, the f32 argument and result half-width; a
    target without them (or without the conversions) keeps the loop scalar."""
    for fn in ("exp", "log", "tanh", "sigmoid"):
        src = f"pub fn f[N](x: &f32[N]) -> f32[N] {{ {fn}(x) }}"
        (p,) = [p for p in plans(src, "f", MIXED) if p]
        assert p.elem == "f64" and p.width == 2, fn
        loads = [s for s in p.loop.body if isinstance(s, ir.Load)]
        assert loads and all(p.half(s.dst) for s in loads), fn  # f32: the low half
        ops = [s for s in p.loop.body if isinstance(s, ir.Op) and s.dst.id in p.varying]
        assert any(s.op == "convert" and s.dst.type == "f64" for s in ops), fn
        assert any(s.op == "convert" and s.dst.type == "f32" for s in ops), fn
        # a mask is as wide as what it compared: binary64 full, the exceptions' binary32 half
        masks = [s for s in ops if s.dst.type == "bool" and s.op not in ("and", "or")]
        assert all(p.half(s.dst) == (s.args[0].type == "f32") for s in masks), fn
        for target in (
            VectorTarget(**{**MIXED.__dict__, "narrow_lanes": False}),
            VectorTarget(**{**MIXED.__dict__, "int_ops": MIXED.int_ops - _CONVERTS}),
        ):
            assert not [p for p in plans(src, "f", target) if p], fn


def test_a_mask_of_one_width_never_selects_values_of_another() -> None:
    """A comparison of f64 values choosing between f32 values, or of f32 values choosing
    between f64 values: the mask's lanes are not the values' — the loop stays scalar. A
    comparison of f32 values choosing between f32 values in a binary64 loop is planned, its
    mask half-width like the values."""
    src = "pub fn f[N](x: &f32[N], y: &f64[N]) -> f32[N] { where(y > 0.0, x, x * 2.0) }"
    assert not any(plans(src, "f", MIXED))
    src = "pub fn f[N](x: &f32[N], y: &f64[N]) -> f64[N] { where(x > 0.0, y, x as f64) }"
    assert not any(plans(src, "f", MIXED))
    src = "pub fn f[N](x: &f32[N], y: &f64[N]) -> f64[N] { where(x > 0.0, x, -x) as f64 * y }"
    (p,) = [p for p in plans(src, "f", MIXED) if p]
    assert p.elem == "f64" and p.width == 2
    (cmp,) = [s for s in p.loop.body if isinstance(s, ir.Op) and s.op == "gt"]
    (sel,) = [s for s in p.loop.body if isinstance(s, ir.Op) and s.op == "select"]
    assert p.half(cmp.dst) and p.half(sel.dst)
