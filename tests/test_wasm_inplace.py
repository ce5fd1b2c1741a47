"""In-place updates of loop-carried tensors in the wasm target, through nested loops.

An outer loop whose carried tensor goes linearly through an inner loop that updates it
hands its buffer over: one copy when the outermost loop starts, none per iteration. Each
program compares output bytes with the interpreter, including those where sharing would
be wrong (the old value is still read after the inner loop), and the WAT is checked for the number of copies.
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.backends.wasm import lower_wat
from kera_core.backends.wasm.emit import ModuleEmitter, fname
from tests.test_wasm import compare, module, seeded

SRC = """
pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] {
    let mut c: f32[M, N] = zeros();
    for i in 0..M {
        for j in 0..N {
            let mut acc: f32 = 0.0;
            for k in 0..K { acc += a[i, k] * b[k, j]; }
            c[i, j] = acc;
        }
    }
    c
}
pub fn mm3[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] {
    let mut c: f32[M, N] = zeros();
    for i in 0..M {
        for j in 0..N {
            for k in 0..K { c[i, j] = c[i, j] + a[i, k] * b[k, j]; }
        }
    }
    c
}
pub fn with_while[N](x: &i32[N]) -> i32[N] {
    let mut y: i32[N] = zeros();
    for r in 0..3 {
        let mut j: i64 = 0;
        while j < N { y[j] = y[j] + x[j] * (r as i32 + 1); j += 1; }
    }
    y
}
pub fn old_value_read_after[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    let mut keep: f32 = 0.0;
    for r in 0..4 {
        let before = y[0];
        for j in 0..N { y[j] = y[j] + x[j]; }
        keep = keep + before * y[0];
    }
    y * keep
}
pub fn masked[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { if x[i] > 0.0 { y[i] = x[i]; } }
    y
}
pub fn masked_both[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = x * 1.0;
    for i in 0..N {
        if x[i] > 0.0 { y[i] = x[i] * 2.0; } else { y[i] = y[i] - 1.0; y[0] = y[0] + 1.0; }
    }
    y
}
pub fn if_then_loop[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for r in 0..3 {
        if r != 1 { for j in 0..N { y[j] = y[j] + x[j]; } }
    }
    y
}
pub fn if_reads_old[N](x: &f32[N]) -> f32 {
    let mut y: f32[N] = zeros();
    let mut s: f32 = 0.0;
    for i in 0..N {
        let old = y[0];
        if x[i] > 0.0 { y[0] = x[i]; }
        s = s + old * y[0];
    }
    s
}
pub fn if_yields_other[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { if x[i] > 0.0 { y[i] = x[i]; } else { y = x * 0.5; } }
    y
}
pub fn sum_after[N](x: &f32[N]) -> f32 {
    let mut y: f32[N] = zeros();
    let mut total: f32 = 0.0;
    for r in 0..3 {
        for j in 0..N { y[j] = y[j] + x[j]; }
        total = total + sum(&y);
    }
    total
}
"""
NAMES = [
    "with_while",
    "old_value_read_after",
    "sum_after",
    "masked",
    "masked_both",
    "if_then_loop",
    "if_reads_old",
    "if_yields_other",
]


@pytest.mark.parametrize("name", NAMES)
def test_nested_loops_match_the_interpreter(name: str) -> None:
    m = module(SRC)
    for size in (0, 1, 2, 5, 17):
        for seed, adversarial in ((1, False), (2, True)):
            inputs, dims = seeded(m, name, seed, adversarial, size)
            compare(m, name, inputs, dims)


@pytest.mark.parametrize("name", ["mm", "mm3"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 4), (5, 1, 7), (8, 8, 8), (3, 0, 2)])
def test_matmul_loops_match(name: str, shape) -> None:
    m = module(SRC)
    mm, k, n = shape
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal((mm, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    compare(m, name, {"a": a, "b": b}, {"M": mm, "K": k, "N": n})


def _copies(name: str) -> int:
    """The `memory.copy` instructions in the function's text (executed or not)."""
    m = module(SRC)
    wat = lower_wat(m.graph, name)
    start = wat.index(f"(func {fname(m.graph.functions[name])} ")
    return wat[start : wat.index("\n  )", start)].count("memory.copy")


def _handed_over(name: str) -> int:
    m = module(SRC)
    plans = ModuleEmitter(m.graph, m.graph.functions[name]).plans
    return sum(len(p.body.handed) for p in plans.loops.values())


def test_a_linear_chain_through_inner_loops_copies_once() -> None:
    for name, inner in (("mm", 1), ("mm3", 2), ("with_while", 1), ("sum_after", 1)):
        assert _copies(name) == 1, name  # when the outermost loop starts
        assert _handed_over(name) == inner, name


def _owned(name: str) -> list[set[int]]:
    m = module(SRC)
    mod = ModuleEmitter(m.graph, m.graph.functions[name])
    return [p.owned for p in mod.plans.loops.values()]


def test_updates_under_an_if_stay_in_place() -> None:
    for name in ("masked", "masked_both", "if_then_loop"):
        assert _copies(name) == 1, name  # when the loop starts; none under the `if`
        assert all(o == {0} for o in _owned(name)), name


def test_an_if_that_may_replace_the_tensor_or_an_old_read_keeps_copies() -> None:
    assert _owned("if_yields_other") == [set()]
    assert _owned("if_reads_old") == [set()]


def test_sharing_is_refused_where_the_old_value_is_still_needed() -> None:
    # `before = y[0]` is read after the inner loop ran: the inner loop copies y on every
    # outer iteration instead of taking the outer loop's buffer over
    assert _handed_over("old_value_read_after") == 0
    assert _copies("old_value_read_after") == 1
