"""Each optimizer pass on small graphs built from source: what it does and what it must not."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import InterpError, run_function
from kera_core.interp.ops_impl import HANDLERS
from kera_core.ir.graph import Graph
from kera_core.ir.node import Node
from kera_core.ir.types import PRIMS
from kera_core.ir.verify import verify
from kera_core.opt import CSE, DCE, ConstFold, Fuse, Inline, Vectorize, optimize
from kera_core.opt.fold import const_node, evaluate


def module(src: str):
    a = analyze(src)
    assert not a.has_errors, [d.message for d in a.diagnostics if d.is_error]
    return a.module


def nodes_of(g: Graph, fn: str):
    """Every node of function ``fn``, nested regions included (shared nodes once per region)."""
    out = []
    for rh in g.all_regions(g.functions[fn].region):
        out.extend(g.region_nodes(rh))
    return out


def ops(g: Graph, fn: str) -> list[str]:
    return [n.op for n in nodes_of(g, fn)]


def run(g: Graph, m, fn: str, **inputs):
    try:
        r = run_function(SimpleNamespace(graph=g, provenance=m.provenance), fn, inputs)
    except InterpError as e:
        return ("error", e.code)
    return [o.raw for o in r.outputs], r.printed


def same(m, g2: Graph, fn: str, **inputs):
    want = run(m.graph, m, fn, **inputs)
    assert run(g2, m, fn, **inputs) == want
    return want


F32 = np.float32


# --- constant folding ----------------------------------------------------------------------


def test_fold_uses_the_interpreters_values():
    m = module(
        """
        pub fn f(x: i32) -> i32 { x + (3i32 - 10i32) * 2147483647i32 }
        pub fn g(a: f32) -> f32 { a + 1.0f32 / 3.0f32 + (0.0f32 / 0.0f32) * 0.0f32 }
        pub fn h() -> f32 { exp(1.0f32) + sqrt(2.0f32) + tanh(0.5f32) }
        pub fn k() -> u8 { (250u8 + 10u8) >> 1u8 }
        """
    )
    r = optimize(m.graph, passes=[ConstFold()])
    g = r.graph
    for fn in ("f", "g", "h", "k"):
        assert not any(
            n.op in ("sub", "div", "exp", "sqrt", "tanh", "shr") for n in nodes_of(g, fn)
        )
    assert ops(g, "h") == ["const"]
    assert same(m, g, "h") == run(m.graph, m, "h")
    same(m, g, "f", x=5)
    same(m, g, "g", a=F32(2.0))
    same(m, g, "k")
    # the NaN is the canonical one, the wrap-around is the interpreter's
    (c,) = [n for n in nodes_of(g, "k") if n.op == "const"]
    assert c.attr("value") == ((250 + 10) % 256) >> 1


def test_fold_leaves_checked_errors_for_run_time():
    m = module(
        """
        pub fn d(x: i64) -> i64 { x + 10i64 / 0i64 }
        pub fn r(x: i64) -> i64 { x + 10i64 % (3i64 - 3i64) }
        """
    )
    g = optimize(m.graph).graph
    assert "div" in ops(g, "d") and "rem" in ops(g, "r")
    assert same(m, g, "d", x=1) == ("error", "R0002")
    assert same(m, g, "r", x=1) == ("error", "R0002")


def test_fold_never_fuses_multiply_add():
    # (1 + 2^-23)^2 - (1 + 2^-22) is 0 with two roundings and 2^-46 with one
    m = module(
        """
        pub fn c() -> f32 {
            1.00000011920928955078125f32 * 1.00000011920928955078125f32
                - 1.0000002384185791015625f32
        }
        pub fn v(a: f32, b: f32, c: f32) -> f32 { a * b + c }
        """
    )
    g = optimize(m.graph).graph
    assert "fma" not in ops(g, "v") and {"mul", "add"} <= set(ops(g, "v"))
    (c,) = nodes_of(g, "c")
    assert c.op == "const" and c.attr("value") == 0  # +0.0: two roundings
    assert same(m, g, "c") == run(m.graph, m, "c")


def test_const_node_round_trips_through_the_interpreter():
    for name, values in [
        ("f32", [F32(-0.0), F32(np.inf), F32(1e-45), F32(3.5)]),
        ("f64", [np.float64(-0.0), np.float64(5e-324)]),
        ("i8", [np.int8(-128), np.int8(127)]),
        ("u64", [np.uint64(2**64 - 1)]),
        ("bool", [np.bool_(True), np.bool_(False)]),
    ]:
        for v in values:
            c = const_node(v, PRIMS[name])
            assert c is not None
            got = HANDLERS["const"](c, None)
            assert np.asarray(got).tobytes() == np.asarray(v).tobytes()
    assert const_node(np.float64(1.0), PRIMS["f32"]) is None  # wrong type: not folded
    # a handler that raises gives no value: the node is left for run time
    i64 = PRIMS["i64"]
    div = Node("div", (), (i64,))
    one = const_node(np.int64(1), i64)
    zero = const_node(np.int64(0), i64)
    assert evaluate(div, [one, zero]) is None
    assert evaluate(div, [one, one]) == 1


def test_fold_select_if_and_struct_forwarding():
    m = module(
        """
        struct P { x: f32, y: f32 }
        pub fn s(a: f32, b: f32) -> f32 { if 2i64 > 1i64 { a } else { b } }
        pub fn t(a: f32) -> f32 {
            let mut r: f32 = a;
            if 1i64 == 2i64 { r = r * 2.0f32; } else { r = r + 1.0f32; }
            r
        }
        pub fn u(a: f32, b: f32) -> f32 { let p = P { x: a, y: b }; p.y * p.x }
        pub fn w(a: f32) -> f32 { let mut p = P { x: a, y: a }; p.x = 2.0f32; p.x + p.y }
        """
    )
    g = optimize(m.graph).graph
    assert ops(g, "s") == ["param"]
    assert "if" not in ops(g, "t")
    assert "struct" not in ops(g, "u") and "field" not in ops(g, "u")
    assert "field" not in ops(g, "w") and "set_field" not in ops(g, "w")
    same(m, g, "s", a=F32(1), b=F32(2))
    same(m, g, "t", a=F32(1))
    same(m, g, "u", a=F32(3), b=F32(4))
    same(m, g, "w", a=F32(3))


def test_fold_keeps_a_failing_value_it_would_drop():
    # `select` on a constant: the other operand could fail, so it must still run
    m = module(
        """
        pub fn f[N](x: &f32[N], k: i64) -> f32 {
            let v = x[k];
            let u = x[0i64];
            if 3i64 > 2i64 { u } else { v }
        }
        """
    )
    g = optimize(m.graph).graph
    x = np.ones(3, F32)
    assert same(m, g, "f", x=x, k=7) == ("error", "R0001")
    assert same(m, g, "f", x=x, k=1)[0] == [np.float32(1).tobytes()]


def test_fold_empty_constant_range():
    m = module(
        """
        pub fn f[N](x: &f32[N]) -> f32 {
            let mut s: f32 = 1.5f32;
            for i in 5i64..2i64 { s = s + x[i]; }
            s
        }
        """
    )
    g = optimize(m.graph).graph
    assert "for" not in ops(g, "f")
    same(m, g, "f", x=np.ones(2, F32))


# --- CSE -------------------------------------------------------------------------------------


def test_cse_is_hash_consing_and_region_boundaries():
    m = module(
        """
        fn h[M](v: &f32[M], p: f32, q: f32) -> f32 {
            let mut s: f32 = 0.0f32;
            for i in 0..M { s = s + p * q * v[i]; }
            s
        }
        pub fn dup[N](x: &f32[N], a: f32) -> f32 { h(x, a, a) }
        pub fn inv[N](x: &f32[N], a: f32) -> f32 {
            let mut s: f32 = 0.0f32;
            let mut m: f32 = a;
            for i in 0..N { if 1i64 > 2i64 { m = 5.0f32; } s = s + x[i] * m; }
            s + m
        }
        pub fn same(c: bool, a: f32) -> f32 { if c { a } else { a } }
        """
    )
    g = optimize(m.graph).graph
    (loop,) = [n for n in nodes_of(g, "dup") if n.op == "for"]
    assert len(loop.inputs) == 1 + 1 + 2  # range, s, then `a` once and `x`
    (loop,) = [n for n in nodes_of(g, "inv") if n.op == "for"]
    assert len(loop.types) == 1  # `m` became a capture
    assert ops(g, "same") == ["param"]
    x = np.arange(4, dtype=F32)
    same(m, g, "dup", x=x, a=F32(0.5))
    same(m, g, "inv", x=x, a=F32(0.5))
    same(m, g, "same", c=True, a=F32(2))
    # CSE alone leaves an already-canonical graph alone
    assert optimize(g, passes=[CSE()]).graph.fingerprint() == g.fingerprint()


def test_cse_never_hoists_out_of_a_region():
    m = module(
        """
        pub fn f[N](x: &f32[N], a: f32) -> f32 {
            let outside = a * a;
            let mut s: f32 = outside;
            for i in 0..N { s = s + a * a * x[i]; }
            s
        }
        """
    )
    g = optimize(m.graph).graph
    (loop,) = [n for n in nodes_of(g, "f") if n.op == "for"]
    body = g.region_nodes(loop.regions[0])
    assert "mul" in [n.op for n in body]  # `a * a` is still computed inside the loop
    assert verify(g) == []


# --- DCE -------------------------------------------------------------------------------------


def test_dce_removes_dead_carried_values_and_captures():
    m = module(
        """
        pub fn f[N](x: &f32[N], a: f32) -> f32 {
            let mut s: f32 = 0.0f32;
            let mut count: i64 = 0i64;
            let mut junk: f32 = a;
            for i in 0..N { s = s + x[i]; count += 1i64; junk = junk * a; }
            s
        }
        """
    )
    before = [n for n in nodes_of(m.graph, "f") if n.op == "for"][0]
    g = optimize(m.graph, passes=[DCE()]).graph
    (loop,) = [n for n in nodes_of(g, "f") if n.op == "for"]
    assert len(before.types) == 3 and len(loop.types) == 1
    assert len(loop.inputs) == 3  # range, s, x: `a` was only read by `junk`
    same(m, g, "f", x=np.arange(5, dtype=F32), a=F32(3))


def test_dce_keeps_a_dead_value_that_can_fail():
    m = module(
        """
        pub fn f[N](x: &f32[N]) -> f32 {
            let mut s: f32 = 0.0f32;
            let mut junk: f32 = 0.0f32;
            for i in 0..N { s = s + x[i]; junk = junk + x[i + 5i64]; }
            s
        }
        """
    )
    g = optimize(m.graph).graph
    (loop,) = [n for n in nodes_of(g, "f") if n.op == "for"]
    assert len(loop.types) == 2
    assert same(m, g, "f", x=np.ones(3, F32)) == ("error", "R0001")


# --- inlining --------------------------------------------------------------------------------


INLINE_SRC = """
fn scaled_sum[M](v: &f32[M], k: f32) -> f32 { sum(v) * k }
fn size[M](v: &f32[M]) -> i64 { M }
fn risky[M](v: &f32[M], j: i64) -> f32 { v[j] }
fn say(t: f32) ! io { print(t); print("\\n"); }
pub fn f[N](x: &f32[N], a: f32) -> f32 {
    let w: f32[4] = [a, a, 1.0f32, 2.0f32];
    scaled_sum(x, a) + scaled_sum(&w, 2.0f32) + (size(x) + size(&w)) as f32
}
pub fn g[N](x: &f32[N], j: i64) -> f32 { risky(x, j) + risky(x, j + 1i64) }
pub fn p(t: f32) -> f32 ! io { say(t); say(t + 1.0f32); t }
"""


def test_inline_binds_dimensions_and_removes_the_callee():
    m = module(INLINE_SRC)
    r = optimize(m.graph)
    g = r.graph
    assert "call" not in ops(g, "f")
    assert {"scaled_sum", "size", "say"}.isdisjoint(g.functions)
    # `size(&w)` became the constant 4, `size(x)` the caller's own dimension
    assert any(n.op == "const" and n.attr("value") == 4 for n in nodes_of(g, "f"))
    assert any(n.op == "dim" and n.attr("index") == 0 for n in nodes_of(g, "f"))
    x = np.arange(6, dtype=F32)
    same(m, g, "f", x=x, a=F32(0.25))
    assert "call" not in ops(g, "p")
    assert same(m, g, "p", t=F32(1.5))[1] == "1.5\n2.5\n"
    assert verify(g) == []


def test_inline_keeps_a_call_whose_body_can_fail():
    m = module(INLINE_SRC)
    g = optimize(m.graph, passes=[Inline()]).graph
    assert "call" in ops(g, "g") and "risky" in g.functions
    x = np.arange(3, dtype=F32)
    assert same(m, g, "g", x=x, j=2) == ("error", "R0001")


def test_exported_functions_are_never_removed():
    m = module(
        """
        pub fn helper(a: f32) -> f32 { a * 2.0f32 }
        pub fn user(a: f32) -> f32 { helper(a) + 1.0f32 }
        """
    )
    g = optimize(m.graph).graph
    assert set(g.functions) == {"helper", "user"}
    assert [f.name for f in g.exported()] == ["helper", "user"]


# --- fusion ------------------------------------------------------------------------------------


FUSE_SRC = """
pub fn fusable[N](x: &f32[N], a: f32) -> f32[N] {
    let mut t: f32[N] = zeros();
    for i in 0..N { t[i] = x[i] * a; }
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = t[i] + 1.0f32; }
    y
}
pub fn shifted[N](x: &f32[N], a: f32) -> f32[N] {
    let mut t: f32[N] = zeros();
    for i in 0..N { t[i] = x[i] * a; }
    let mut y: f32[N] = zeros();
    for i in 0..N - 1i64 { y[i] = t[i + 1i64] + 1.0f32; }
    y
}
pub fn reads_whole[N](x: &f32[N], a: f32) -> f32[N] {
    let mut t: f32[N] = zeros();
    for i in 0..N { t[i] = x[i] * a; }
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = t[i] + sum(&t); }
    y
}
"""


def test_fuse_merges_elementwise_loops():
    m = module(FUSE_SRC)
    g = optimize(m.graph).graph
    assert ops(g, "fusable").count("for") == 1
    assert ops(g, "shifted").count("for") == 2  # reads t[i + 1]: not the same element
    assert ops(g, "reads_whole").count("for") == 2  # reads all of t
    for n in (0, 1, 7):
        x = np.linspace(-1, 1, n).astype(F32)
        for fn in ("fusable", "shifted", "reads_whole"):
            same(m, g, fn, x=x, a=F32(3))


def test_fuse_chains_loops_that_update_one_tensor():
    m = module(
        """
        pub fn chain[N](x: &f32[N], y: &mut f32[N], a: f32) {
            for i in 0..N { y[i] = a * x[i] + y[i]; }
            for i in 0..N { y[i] = y[i] * y[i]; }
            for i in 0..N { y[i] = y[i] - x[i]; }
        }
        pub fn back[N](x: &f32[N], y: &mut f32[N]) {
            for i in 0..N { y[i] = x[i] + y[i]; }
            for i in 0..N { y[i] = y[i] + 1.0f32; }
            for i in 1..N { y[i] = y[i - 1i64] + 1.0f32; }
        }
        """
    )
    g = optimize(m.graph).graph
    (loop,) = [n for n in nodes_of(g, "chain") if n.op == "for"]
    assert loop.attr("lanes") == 4
    body = [n.op for n in g.region_nodes(loop.regions[0])]
    assert body.count("update") == 1 and body.count("index") == 2  # x[i] and y[i], once each
    assert ops(g, "back").count("for") == 2  # reads y[i - 1]: a true dependence
    for n in (0, 1, 6):
        x = np.linspace(-2, 2, n).astype(F32)
        y = np.linspace(1, 3, n).astype(F32)
        same(m, g, "chain", x=x, y=y, a=F32(0.5))
        same(m, g, "back", x=x, y=y)


def test_fuse_alone():
    m = module(FUSE_SRC)
    g = optimize(m.graph, passes=[Fuse()]).graph
    assert ops(g, "fusable").count("for") == 1
    assert verify(g) == []


# --- vectorize ----------------------------------------------------------------------------------


def test_vectorize_annotates_elementwise_loops_only():
    m = module(
        """
        pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
            for i in 0..N { y[i] = a * x[i] + y[i]; }
        }
        pub fn twice[N](x: &f64[N]) -> f64[N] {
            let mut y: f64[N] = zeros();
            for i in 0..N { y[i] = x[i] * 2.0; }
            y
        }
        pub fn dot[N](x: &f32[N], y: &f32[N]) -> f32 {
            let mut acc: f32 = 0.0f32;
            for i in 0..N { acc += x[i] * y[i]; }
            acc
        }
        pub fn ahead[N](x: &f32[N]) -> f32[N] {
            let mut y: f32[N] = zeros();
            for i in 0..N { y[i] = x[i + 1i64]; }
            y
        }
        """
    )
    r = optimize(m.graph, passes=[Vectorize()])
    g = r.graph

    def lanes(fn):
        return [n.attr("lanes") for n in nodes_of(g, fn) if n.op == "for"]

    assert lanes("saxpy") == [4]
    assert lanes("twice") == [2]
    assert lanes("dot") == [None]  # a reduction: the order of the sum matters
    assert lanes("ahead") == [None]  # x[i + 1] may be out of bounds
    # an annotation only: same bits, but a different hash
    assert g.fingerprint() != m.graph.fingerprint()
    x = np.arange(5, dtype=F32)
    same(m, g, "saxpy", a=F32(2), x=x, y=x)
    assert optimize(g, passes=[Vectorize()]).graph.fingerprint() == g.fingerprint()


# --- the manager -------------------------------------------------------------------------------


def test_fixpoint_report_and_idempotence():
    m = module(FUSE_SRC + INLINE_SRC)
    fp = m.graph.fingerprint()
    r = optimize(m.graph)
    assert m.graph.fingerprint() == fp  # the input is left alone
    rep = r.report
    assert rep.converged and rep.iterations >= 2
    assert [x.name for x in rep.runs[:6]] == ["inline", "fold", "cse", "dce", "fuse", "vectorize"]
    assert not any(x.changed for x in rep.runs[-6:])  # the last round changed nothing
    assert rep.nodes_before == len(m.graph.nodes) and rep.nodes_after == len(r.graph.nodes)
    assert rep.fingerprint_after == r.graph.fingerprint() != fp
    again = optimize(r.graph)
    assert again.graph.fingerprint() == r.graph.fingerprint() and again.report.iterations == 1


def test_passes_by_name():
    m = module(FUSE_SRC)
    by_name = optimize(m.graph, passes=["fuse", "vectorize"]).graph
    by_object = optimize(m.graph, passes=[Fuse(), Vectorize()]).graph
    assert by_name.fingerprint() == by_object.fingerprint()
    with pytest.raises(ValueError):
        optimize(m.graph, passes=["nope"])


def test_max_iterations_is_respected():
    m = module(INLINE_SRC)
    r = optimize(m.graph, max_iterations=1)
    assert r.report.iterations == 1 and not r.report.converged


def test_format_report_has_a_row_per_run():
    from kera_core.opt import format_report

    m = module(FUSE_SRC)
    r = optimize(m.graph)
    text = format_report(r.report)
    assert text.count("\n") >= len(r.report.runs) + 2
    assert "fixpoint" in text and r.graph.fingerprint().hex() in text


ERRORS_SRC = """
fn half(v: f32) -> f32 { v * 0.5f32 }
pub fn two_errors[N](x: &f32[N], k: i64, d: i64) -> f32 {
    let q: i64 = 10i64 / d;
    let v = x[k];
    let u = half(x[k + 1i64]);
    v + u + (q as f32) + (if 1i64 > 0i64 { 1.0f32 } else { x[k + 2i64] })
}
pub fn other_order[N](x: &f32[N], k: i64, d: i64) -> f32 {
    let v = x[k];
    let q: i64 = 10i64 / d;
    (q as f32) + v
}
"""


@pytest.mark.parametrize("fn", ["two_errors", "other_order"])
def test_the_first_error_stays_the_first(fn):
    m = module(ERRORS_SRC)
    g = optimize(m.graph).graph
    x = np.ones(3, F32)
    outcomes = [same(m, g, fn, x=x, k=k, d=d) for k in (0, 1, 2, 9) for d in (0, 1)]
    assert ("error", "R0001") in outcomes and ("error", "R0002") in outcomes
