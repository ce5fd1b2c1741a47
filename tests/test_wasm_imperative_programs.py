"""Generated imperative programs on the wasm target: the interpreter's output bytes.

Hypothesis draws well-typed imperative programs (`tests.imperative_programs`: carried
`let mut` tensors updated in loops and branches, nested and `while` loops, early exits,
structs rebuilt each iteration, calls), a seed and a size. Every exported function the
wasm target supports runs on ordinary and adversarial inputs, compiled from the graph as
it is and from the optimized graph, and must give the interpreter's (unoptimized
module's) raw output bytes and digest, or its checked-error code. Some examples also
run their outermost `ROUNDS` loops 300 times, with N <= 5, under a 4 MiB memory limit:
the live data is a few hundred bytes, and the heap an iteration allocates is given back
at its end (or kept where a carried value may point into it, which 300 rounds of such
small tensors still fit), so the module must not run out of memory (R0009).

150 examples (derandomized under the `ci` profile) take about 12 s of CPU;
`KERA_FUZZ_EXAMPLES=20000 pytest tests/test_wasm_imperative_programs.py` fuzzes longer.
The regression programs below were found that way.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.cli.opt import carry_provenance
from kera_core.interp import run_function
from kera_core.opt import optimize
from kera_core.targets.wasm import TARGET
from tests.imperative_programs import imperative_program, render
from tests.test_wasm_programs import _inputs, _outcome

EXAMPLES = int(os.environ.get("KERA_FUZZ_EXAMPLES", "150"))
SIZES = [0, 1, 2, 5, 17, 33]
LIMIT = 4 << 20


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def check_program(src: str, seed: int, size: int, limit_run: bool = False) -> int:
    """Every supported exported function, plain and optimized, against the interpreter."""
    m = _module(src)
    g = optimize(m.graph).graph
    prov = carry_provenance(m.provenance, g)
    checked = 0
    for f in m.graph.exported():
        if TARGET.unsupported(m.graph, f.name):
            continue
        arts = [(m.graph, m.provenance, TARGET.lower(m.graph, m.provenance, f.name))]
        if f.name in g.functions and not TARGET.unsupported(g, f.name):
            arts.append((g, prov, TARGET.lower(g, prov, f.name)))
        for adversarial in (False, True):
            inputs, dims = _inputs(m, f.name, seed, adversarial, size)
            ref = _outcome(lambda: run_function(m, f.name, inputs, dims))  # noqa: B023
            for graph, pv, art in arts:
                got = _outcome(
                    lambda: TARGET.run(art, graph, f.name, inputs, dims, provenance=pv)  # noqa: B023
                )
                assert got == ref, (f.name, adversarial, seed, size, graph is g)
        checked += 1
    return checked


def check_memory(src: str, seed: int, size: int) -> None:
    """The round loops run 300 times in 4 MiB: never R0009 where the interpreter finishes."""
    m = _module(src)
    g = optimize(m.graph).graph
    prov = carry_provenance(m.provenance, g)
    for f in m.graph.exported():
        if TARGET.unsupported(m.graph, f.name):
            continue
        inputs, dims = _inputs(m, f.name, seed, False, size)
        ref = _outcome(lambda: run_function(m, f.name, inputs, dims))  # noqa: B023
        for graph, pv in ((m.graph, m.provenance), (g, prov)):
            if f.name not in graph.functions or TARGET.unsupported(graph, f.name):
                continue
            art = TARGET.lower(graph, pv, f.name)
            got = _outcome(
                lambda art=art, graph=graph, pv=pv, name=f.name, inputs=inputs, dims=dims: (
                    TARGET.run(art, graph, name, inputs, dims, provenance=pv, memory_limit=LIMIT)
                )
            )
            assert got == ref, (f.name, seed, size, graph is g)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    imperative_program(),
    st.integers(0, 2**32 - 1),
    st.sampled_from(SIZES),
    st.integers(0, 9),
)
def test_generated_imperative_programs_same_bytes(prog, seed: int, size: int, mem: int) -> None:
    assert check_program(render(prog), seed, size) >= 1
    if mem == 0 and "ROUNDS" in "".join(f["text"] for f in prog["fns"]):
        check_memory(render(prog, rounds=300), seed, min(size, 5))


# --- regressions found by fuzzing ---------------------------------------------------------

REGRESSIONS: dict[str, str] = {
    # integer `minimum`/`maximum` (scalar, fused, alone) hit an assertion in rt.scalar
    "int_minimum_maximum": """
pub fn f0[N](x: &i32[N], a: i32) -> i32[N] { x + minimum(x, a) }
pub fn f1[N](x: &u8[N], y: &u8[N]) -> u8[N] { maximum(x, y) }
pub fn f2(a: i64, b: i64) -> i64 { minimum(a, b) - maximum(a, b) }
pub fn f3[N](x: &u64[N], a: u64) -> u64 { sum(minimum(x, a)) }
""",
    # the same node (`z * 2.0`) fused into its consumer in one region and yielded by a
    # nested one: the fused set was function-wide, so the branch yielded `$deferred`
    "fused_node_recurs_in_a_branch": """
pub fn f0[N](x: &f32[N], z: &f32[N], a: f32) -> f32[N] {
    (if a > 0.0 { x * 2.0 } else { z * 2.0 }) / (z * 2.0)
}
pub fn f1[N](x: &f32[N], z: &f32[N], a: f32) -> f32[N] {
    let s = sum(if a > 0.0 { z * 2.0 + x } else { x * 1.0 });
    if s > 0.0 { z * 2.0 } else { x * 3.0 }
}
""",
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regressions(name: str) -> None:
    for size in SIZES:
        for seed in (1, 2):
            check_program(REGRESSIONS[name], seed, size)
