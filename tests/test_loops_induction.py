"""Affine indices of straight-line loops (kera_core/loops/induction.py): which loads and
stores a backend may address by stepping, with which base and step, and which index
statements only they read — on hand-built loops and on matmul's k loop as lowered."""

from __future__ import annotations

from kera_core.analysis import analyze
from kera_core.loops import induction, ir
from kera_core.loops.induction import ONE, ZERO, Affine
from kera_core.loops.ir import Imm
from kera_core.loops.lower import lower_program


class Fn:
    """A tiny builder of loop-program statements."""

    def __init__(self) -> None:
        self.n = 0

    def var(self, t: str = "i64") -> ir.Var:
        self.n += 1
        return ir.Var(self.n, t)

    def buf(self, elem: str = "f32") -> ir.Buf:
        self.n += 1
        return ir.Buf(self.n, elem, Imm("i64", 100), role="param")


def loop_of(k: ir.Var, body: list) -> tuple[ir.Loop, ir.LFunction]:
    loop = ir.Loop(k, Imm("i64", 0), Imm("i64", 8), body)
    return loop, ir.LFunction("f", [], [], [loop], [], [])


def i64(n: int) -> Imm:
    return Imm("i64", n & ((1 << 64) - 1))


def test_matmul_shaped_indices_are_affine_and_their_arithmetic_unused() -> None:
    f = Fn()
    k, cols, j, row, acc = f.var(), f.var(), f.var(), f.var(), f.var("f32")
    a, b = f.buf(), f.buf()
    t, bi, ai = f.var(), f.var(), f.var()
    y, x, p = f.var("f32"), f.var("f32"), f.var("f32")
    body = [
        ir.Op(t, "mul", (k, cols)),
        ir.Op(bi, "add", (t, j)),
        ir.Load(y, b, bi),
        ir.Op(ai, "add", (row, k)),
        ir.Load(x, a, ai),
        ir.Op(p, "mul", (x, y)),
        ir.Op(acc, "add", (acc, p)),
    ]
    loop, fn = loop_of(k, body)
    plan = induction.plan(loop, ir.reads(fn))
    assert plan is not None
    forms = {buf.id: form for buf, _, form in plan.access.values()}
    assert forms == {b.id: Affine(j, cols), a.id: Affine(row, ONE)}
    assert plan.unused == {id(body[0]), id(body[1]), id(body[3])}


def test_subtraction_copies_and_constants_fold() -> None:
    f = Fn()
    k, n, d, e, g = f.var(), f.var(), f.var(), f.var(), f.var()
    buf, v = f.buf(), f.var("f32")
    body = [
        ir.Op(d, "sub", (n, k)),  # n - k: step -1
        ir.Op(e, "select", (Imm("bool", 1), d, k)),  # a copy of d
        ir.Op(g, "mul", (e, i64(3))),  # 3n - 3k
        ir.Load(v, buf, g),
    ]
    loop, fn = loop_of(k, body)
    plan = induction.plan(loop, ir.reads(fn))
    (access,) = plan.access.values()
    assert access[2] == Affine(("mul", n, i64(3)), i64(-3))


def test_a_read_before_the_write_or_a_twice_written_index_is_not_stepped() -> None:
    f = Fn()
    k, t, u = f.var(), f.var(), f.var()
    buf, v, w = f.buf(), f.var("f32"), f.var("f32")
    # t is read (last iteration's value) before this iteration writes it
    loop, fn = loop_of(k, [ir.Load(v, buf, t), ir.Op(t, "add", (k, i64(1)))])
    assert induction.plan(loop, ir.reads(fn)) is None
    # u is written twice: its value at the load is not one affine form
    body = [ir.Op(u, "add", (k, i64(1))), ir.Op(u, "add", (u, u)), ir.Load(w, buf, u)]
    loop, fn = loop_of(k, body)
    assert induction.plan(loop, ir.reads(fn)) is None


def test_a_quadratic_or_constant_index_is_not_stepped() -> None:
    f = Fn()
    k, sq, c = f.var(), f.var(), f.var()
    buf, v, w = f.buf(), f.var("f32"), f.var("f32")
    body = [ir.Op(sq, "mul", (k, k)), ir.Load(v, buf, sq), ir.Load(w, buf, c)]
    loop, fn = loop_of(k, body)
    assert induction.plan(loop, ir.reads(fn)) is None


def test_an_index_read_elsewhere_is_still_computed() -> None:
    f = Fn()
    k, t, out = f.var(), f.var(), f.var()
    buf, v = f.buf(), f.var("f32")
    body = [ir.Op(t, "add", (k, i64(2))), ir.Load(v, buf, t), ir.Op(out, "add", (t, t))]
    loop = ir.Loop(k, Imm("i64", 0), Imm("i64", 8), body)
    fn = ir.LFunction("f", [], [], [loop], [[out]], [[()]])
    plan = induction.plan(loop, ir.reads(fn))
    assert len(plan.access) == 1 and plan.unused == set()
    # …but an index statement whose result nothing reads is left out with the rest
    fn = ir.LFunction("f", [], [], [loop], [], [])
    assert induction.plan(loop, ir.reads(fn)).unused == {id(body[0]), id(body[2])}
    # read after the loop (the function's result): kept too
    body = [ir.Op(t, "add", (k, i64(2))), ir.Load(v, buf, t)]
    loop = ir.Loop(k, Imm("i64", 0), Imm("i64", 8), body)
    fn = ir.LFunction("f", [], [], [loop], [[t]], [[()]])
    assert induction.plan(loop, ir.reads(fn)).unused == set()


def test_a_loop_with_control_inside_is_not_straight() -> None:
    f = Fn()
    k, kk = f.var(), f.var()
    inner = ir.Loop(kk, ZERO, Imm("i64", 4), [])
    loop, fn = loop_of(k, [inner])
    assert not induction.straight(loop) and induction.plan(loop, ir.reads(fn)) is None


def test_the_lowered_matmul_k_loop_steps_both_operands() -> None:
    a = analyze("pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }")
    fn = lower_program(a.module.graph, "mm").functions["mm"]
    reads = ir.reads(fn)
    k_loops = []

    def walk(stmts: list) -> None:
        for s in stmts:
            if isinstance(s, ir.Loop):
                if induction.straight(s) and any(isinstance(x, ir.Load) for x in s.body):
                    k_loops.append(s)
                walk(s.body)

    walk(fn.body)
    assert k_loops
    for loop in k_loops:  # every load of a row of a and of a column of b is stepped
        p = induction.plan(loop, reads)
        assert p is not None
        loads = [s for s in loop.body if isinstance(s, ir.Load)]
        assert {id(s) for s in loads} == set(p.access)
        steps = {form.step for _, _, form in p.access.values()}
        assert ONE in steps and any(isinstance(s, ir.Var) for s in steps)  # 1 and the cols
        assert p.unused  # the index arithmetic
