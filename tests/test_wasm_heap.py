"""The heap inside a call: loop iterations give back what they allocate (emit.py).

Each program allocates per iteration (a temporary tensor used twice, a rebuilt struct, a
canonical sum's tile totals). Under a memory limit far below the total of those
allocations, the module must still finish with the interpreter's bytes; loops whose
carried values may point into their own allocations keep them, and stay correct.
"""

from __future__ import annotations

import numpy as np

from kera_core.targets.wasm import TARGET
from tests.test_wasm import compare, module, outcome

SRC = """
struct P { a: f32, n: i64 }
struct Q { p: P, w: f64 }
pub fn temporaries[N](x: &f32[N], rounds: i64) -> f32 {
    let mut acc: f32 = 0.0;
    for r in 0..rounds {
        let t = x * 2.0;
        acc = acc + t[0] * t[N - 1] + sum(&t);
    }
    acc
}
pub fn rebuild(rounds: i64) -> Q {
    let mut q = Q { p: P { a: 0.0, n: 0 }, w: 1.0 };
    for r in 0..rounds {
        let fresh = P { a: q.p.a + 0.5, n: q.p.n + r };
        q = Q { p: fresh, w: q.w * 1.0001 };
    }
    q
}
pub fn nested[N](x: &f32[N], rounds: i64) -> f32[N] {
    let mut y: f32[N] = zeros();
    for r in 0..rounds {
        let mut k: i64 = 0;
        while k < N {
            let t = x * 0.5;
            y[k] = y[k] + t[k] + t[0];
            k += 1;
        }
    }
    y
}
pub fn keeps[N](x: &f32[N], rounds: i64) -> f32[N] {
    let mut y: f32[N] = x * 1.0;
    for r in 0..rounds { y = y * 0.5 + x; }
    y
}
"""
LIMIT = 2 << 20  # 2 MiB of linear memory


def _run(name: str, inputs: dict, dims: dict, limit: int = LIMIT):
    m = module(SRC)
    art = TARGET.lower(m.graph, m.provenance, name)
    return outcome(
        lambda: TARGET.run(
            art, m.graph, name, inputs, dims, provenance=m.provenance, memory_limit=limit
        )
    )


def test_temporaries_are_freed_every_iteration() -> None:
    m = module(SRC)
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    # 3000 rounds × 4 kB = 12 MB of temporaries, in 2 MiB
    got = _run("temporaries", {"x": x, "rounds": 3000}, {"N": 1000})
    assert not isinstance(got, str), got
    compare(m, "temporaries", {"x": x, "rounds": 50}, {"N": 1000})
    from kera_core.interp import run_function

    ref = outcome(lambda: run_function(m, "temporaries", {"x": x, "rounds": 3000}, {"N": 1000}))
    assert got == ref


def test_a_rebuilt_struct_is_moved_down_each_iteration() -> None:
    m = module(SRC)
    # 200k rounds × 2 blocks of 24 + 16 bytes ≈ 8 MB without freeing
    got = _run("rebuild", {"rounds": 200_000}, {})
    assert not isinstance(got, str), got
    for rounds in (0, 1, 2, 7, 1000):
        compare(m, "rebuild", {"rounds": rounds}, {})


def test_nested_loops_free_at_each_level() -> None:
    m = module(SRC)
    x = np.arange(300, dtype=np.float32) / 7
    got = _run("nested", {"x": x, "rounds": 30}, {"N": 300})  # 30·300 temporaries of 1.2 kB
    assert not isinstance(got, str), got
    compare(m, "nested", {"x": x, "rounds": 3}, {"N": 300})


def test_a_loop_whose_carried_tensor_is_fresh_each_iteration_keeps_it() -> None:
    m = module(SRC)
    x = np.linspace(0, 3, 33, dtype=np.float32)
    for rounds in (0, 1, 5, 40):
        compare(m, "keeps", {"x": x, "rounds": rounds}, {"N": 33})
