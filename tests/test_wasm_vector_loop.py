"""SIMD bodies for `for` loops the optimizer marked with `lanes` (the loop program marks
them `lanes`; the shared vector plan takes them on a target that does not count steps).

The optimized graph's module must give the interpreter's bytes (of the unoptimized and of
the optimized graph) for every size around the lane width, including empty ranges,
ranges that do not start at 0 and adversarial values; the loops that qualify must be
lane-wise in the WAT, the others not.
"""

from __future__ import annotations

import glob
import os

import pytest

from kera_core.backends.wasm import lower_wat, vector
from kera_core.backends.wasm.select import fname
from kera_core.cli.opt import carry_provenance
from kera_core.interp import run_function
from kera_core.loops import ir, vectorize
from kera_core.loops.lower import program_of
from kera_core.opt import optimize
from kera_core.targets.wasm import TARGET
from tests.test_wasm import ROOT, example, module, outcome, seeded

SRC = """
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N { y[i] = a * x[i] + y[i]; }
}
pub fn poly64[N](x: &f64[N]) -> f64[N] {
    let mut y: f64[N] = zeros();
    for i in 0..N { y[i] = sqrt(abs(x[i] * x[i] - 2.0)) / (x[i] + 0.5); }
    y
}
pub fn two_outputs[N](x: &f32[N], y: &f32[N]) -> f32[N] {
    let mut s: f32[N] = zeros();
    let mut d: f32[N] = zeros();
    for i in 0..N { s[i] = x[i] + y[i]; d[i] = minimum(x[i], y[i]) - maximum(x[i], 1.5); }
    s * d
}
pub fn from_one[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 1..N { y[i] = exp(x[i]) * 0.25; }
    y
}
pub fn with_compare[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = if x[i] < 0.0 { -x[i] } else { x[i] * 2.0 }; }
    y
}
pub fn with_cast[N](x: &i32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = x[i] as f32 * 0.5; }
    y
}
"""
VECTOR = ["saxpy", "poly64", "two_outputs", "from_one", "with_cast"]
SCALAR = ["with_compare"]


def _optimized(m):
    return optimize(m.graph).graph


def _compare_opt(m, g, name: str, inputs: dict, dims: dict) -> None:
    prov = carry_provenance(m.provenance, g)
    art = TARGET.lower(g, prov, name)
    ref = outcome(lambda: run_function(m, name, inputs, dims))
    got = outcome(lambda: TARGET.run(art, g, name, inputs, dims, provenance=prov))
    assert got == ref, name


@pytest.mark.parametrize("name", VECTOR + SCALAR)
def test_optimized_loops_match_the_interpreter(name: str) -> None:
    m = module(SRC)
    g = _optimized(m)
    for size in (0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 1025):
        for seed, adversarial in ((1, False), (2, True)):
            inputs, dims = seeded(m, name, seed, adversarial, size)
            _compare_opt(m, g, name, inputs, dims)


def _source_loop_plans(g, name: str) -> list:
    """The wasm target's vector plans of the function's source-level (counted) loops."""
    lf = program_of(g, name).functions[name]
    out: list = []

    def walk(stmts: list, defined: set) -> None:
        for s in stmts:
            if isinstance(s, ir.Loop):
                if s.counted:
                    out.append(vectorize.plan(s, defined, vector.TARGET))
                walk(s.body, defined | ir.assigned(s.body))
            defined = defined | ir.assigned([s])

    walk(lf.body, {d.id for d in lf.dims} | {x.id for g in lf.params for x in g})
    return out


def test_qualifying_loops_are_lane_wise_and_the_others_are_not() -> None:
    g = _optimized(module(SRC))
    for name in VECTOR:
        plans = _source_loop_plans(g, name)
        assert plans and all(p is not None for p in plans), name
        wat = lower_wat(g, name)
        start = wat.index(f"(func {fname(name)} ")
        assert "v128.store" in wat[start:] and "relaxed" not in wat, name
    for name in SCALAR:
        assert all(p is None for p in _source_loop_plans(g, name)), name
    # without the optimizer's promise a loop keeps its scalar body
    assert all(p is None for p in _source_loop_plans(module(SRC).graph, "saxpy"))


def _has_lanes(g, name: str) -> bool:
    fn = g.functions[name]
    return any(
        n.op == "for" and n.attr("lanes")
        for rh in g.all_regions(fn.region)
        for n in g.region_nodes(rh)
    )


def test_examples_optimized_match_the_interpreter() -> None:
    """Every example function whose optimized graph has a loop marked `lanes`."""
    seen = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.kera"))):
        m = example(path)
        g = _optimized(m)
        for f in g.exported():
            if f.name not in m.graph.functions or TARGET.unsupported(g, f.name):
                continue
            if not _has_lanes(g, f.name):
                continue
            seen += 1
            for seed, adversarial in ((1, False), (1, True)):
                inputs, dims = seeded(m, f.name, seed, adversarial)
                _compare_opt(m, g, f.name, inputs, dims)
    assert seen >= 3
