"""In-place updates of loop-carried tensors on the wasm target, through nested loops.

The loop program plans them (docs/lowering.md, "Memory"); here each program compares
output bytes with the interpreter, including those where sharing would be wrong (the old
value is still read after the inner loop), and the loops users write — a rebuilt carried
tensor, swaps, conditional stores, clamps — run in linear memory that does not grow with
the number of rounds.
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.backends.wasm.runtime import WasmInstance
from kera_core.targets.wasm import TARGET
from tests.test_loops_agree import MEMORY
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


def _memory_after(src: str, inputs: dict) -> int:
    m = module(src)
    small = {k: v[:9] for k, v in inputs.items()}
    compare(m, "f", small, {})  # the bits (the interpreter is slow at the size below)
    art = TARGET.lower(m.graph, m.provenance, "f")
    inst = WasmInstance(art.data, m.graph, "f", inputs, provenance=m.provenance)
    inst.call()
    return inst.memory_bytes


@pytest.mark.parametrize("name", sorted(MEMORY))
def test_carried_tensors_need_memory_independent_of_the_round_count(name: str) -> None:
    n = 1 << 15  # 128 KiB per f32 buffer: a buffer kept per round would grow the memory
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n).astype(np.float32)
    inputs = {"x": x, "v": x} if "v:" in MEMORY[name] else {"x": x}
    short = _memory_after(MEMORY[name].format(T=2), inputs)
    long = _memory_after(MEMORY[name].format(T=24), inputs)
    assert long == short, (short, long)
    assert long <= 6 * n * 4 + (1 << 16), long  # a few N-element buffers at most
