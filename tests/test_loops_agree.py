"""The loop program computes the graph interpreter's bits (raw bytes, through the digest) and
the same checked errors — for every example function, generated programs (expression-style
and imperative, plain and optimized), and reductions at every tile and lane boundary.

A mismatch found here is in the lowering (kera_core/loops), never in a backend.
``KERA_FUZZ_EXAMPLES=2000 pytest tests/test_loops_agree.py`` fuzzes longer.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.interp import InterpError
from kera_core.interp.api import entry_signature
from kera_core.interp.api import run_function as reference
from kera_core.interp.gen import InputGenerator
from kera_core.loops import lower_program, run_function
from kera_core.loops.target import CPU, GRID
from kera_core.opt import optimize
from tests import imperative_programs, programs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
FUZZ = int(os.environ.get("KERA_FUZZ_EXAMPLES", "60"))
STEPS = 20_000


def outcome(run) -> str:
    try:
        r = run()
    except InterpError as e:
        return "error " + e.code
    return "ok " + r.digest()


def agree(module, graph, name: str, size: int, seed: int, adversarial: bool, target=CPU) -> str:
    src = module if graph is module.graph else graph
    # an optimized graph names its parameters arg0, arg1, …: its own signature, else both
    # sides would fail alike on the inputs (R0005) and "agree" without running anything
    sig = entry_signature(src, name)
    dims = {i: size for i in range(len(sig.dim_names))}
    gen = InputGenerator(seed, adversarial=adversarial)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    named = {sig.dim_names[i]: n for i, n in dims.items()}
    want = outcome(lambda: reference(src, name, inputs, named, max_steps=STEPS))
    assert want != "error R0005", "the inputs do not fit the function: nothing was compared"
    prog = lower_program(graph, name, target)
    got = outcome(lambda: run_function(src, name, inputs, named, program=prog, max_steps=STEPS))
    assert got == want, (name, size, seed, adversarial, target)
    return want


@pytest.mark.parametrize("target", [CPU, GRID], ids=["cpu", "grid"])
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_function(path: Path, target) -> None:
    m = analyze(path.read_text()).module
    outcomes = set()
    for f in m.graph.exported():
        for size in (0, 1, 3, 17):
            for adversarial in (False, True):
                outcomes.add(agree(m, m.graph, f.name, size, size + 7, adversarial, target))
    assert any(o.startswith("ok") for o in outcomes)


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def check_source(src: str, seed: int, size: int) -> None:
    """Both shapes of the composites (loops/target.py), plain and optimized."""
    m = _module(src)
    g = optimize(m.graph).graph
    for f in m.graph.exported():
        for adversarial in (False, True):
            target = GRID if adversarial else CPU
            agree(m, m.graph, f.name, size, seed, adversarial)
            agree(m, m.graph, f.name, size, seed, adversarial, GRID)
            if f.name in g.functions:
                agree(m, g, f.name, size, seed, adversarial, target)


_SETTINGS = settings(
    max_examples=FUZZ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@_SETTINGS
@given(programs.program(), st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 3, 17]))
def test_generated_programs(prog, seed: int, size: int) -> None:
    check_source(programs.render(prog), seed, size)


@_SETTINGS
@given(
    imperative_programs.imperative_program(),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0, 1, 2, 5, 17]),
)
def test_generated_imperative_programs(prog, seed: int, size: int) -> None:
    check_source(imperative_programs.render(prog), seed, size)


REDUCTIONS = """
pub fn s32[N](x: &f32[N]) -> f32 { sum(x) }
pub fn s64[N](x: &f64[N]) -> f64 { sum(x) }
pub fn d32[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn m64[N](x: &f64[N]) -> f64 { mean(x) }
pub fn mx[N](x: &f32[N]) -> f32 { max(x) }
pub fn mn[N](x: &f64[N]) -> f64 { min(x) }
pub fn am[N](x: &f32[N]) -> i64 { argmax(x) }
pub fn si[N](x: &i32[N]) -> i32 { sum(x) }
pub fn mxi[N](x: &i32[N]) -> i32 { max(x) }
pub fn mnu[N](x: &u8[N]) -> u8 { min(x) }
"""


@pytest.mark.parametrize(
    "n", [0, 1, 15, 16, 17, 31, 1023, 1024, 1025, 2047, 2048, 3073, 5 * 1024 + 3]
)
def test_reductions_at_tile_and_lane_boundaries(n: int) -> None:
    m = _module(REDUCTIONS)
    for f in m.graph.exported():
        for adversarial in (False, True):
            agree(m, m.graph, f.name, n, n, adversarial)
            agree(m, m.graph, f.name, n, n, adversarial, GRID)


@pytest.mark.parametrize(
    "tiles", [2, 3, 5, 6, 7, 9, 12, 13, 16, 17, 23, 31, 32, 33, 255, 256, 257, 300]
)
def test_the_level_tree_is_the_left_complete_tile_tree(tiles: int) -> None:
    """The grid shape's tile tree (pairs at distance 1, 2, 4, …) against the reference's
    recursive left-complete tree, at tile counts around and between powers of two, with a
    partial last tile; large and small magnitudes mixed so a different tree shows in the
    bits."""
    m = _module("pub fn s[N](x: &f32[N]) -> f32 { sum(x) }")
    n = tiles * 1024 - 5
    rng = np.random.default_rng(tiles)
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    want = reference(m, "s", {"x": x}).digest()
    for target in (CPU, GRID):
        prog = lower_program(m.graph, "s", target)
        assert run_function(m, "s", {"x": x}, program=prog).digest() == want, target


def peak(src: str, name: str, inputs: dict) -> int:
    m = _module(src)
    r = run_function(m, name, inputs)
    want = reference(m, name, inputs)
    assert r.digest() == want.digest()
    return r.peak_bytes  # type: ignore[attr-defined]


# The loops users write, each at T rounds over N elements: memory must not grow with T.
MEMORY = {
    "rebuilt": "pub fn f[N](x: &f32[N], v: &f32[N]) -> f32[N] {{ let mut p = x * 1.0; "
    "for t in 0..{T} {{ p = p + 0.5 * v; }} p }}",
    "swap": "pub fn f[N](x: &f32[N]) -> f32[N] {{ let mut a = x * 1.0; for t in 0..{T} {{ "
    "for i in 0..N {{ let j = N - 1 - i; if i < j {{ let s = a[i]; a[i] = a[j]; a[j] = s; }} }} }} a }}",
    "under_if": "pub fn f[N](x: &f32[N]) -> f32[N] {{ let mut y = x * 1.0; for t in 0..{T} {{ "
    "for i in 0..N {{ if y[i] > 0.0 {{ y[i] = y[i] - 1.0; }} }} }} y }}",
    "clamp": "pub fn f[N](x: &f32[N]) -> f32[N] {{ let mut a = x * 1.0; for t in 0..{T} {{ "
    "for i in 0..N {{ a[i] = if a[i] < 0.5 {{ a[i] }} else {{ 0.5 }}; }} }} a }}",
    "and_or": "pub fn f[N](x: &f32[N]) -> f32[N] {{ let mut a = x * 1.0; for t in 0..{T} {{ "
    "for i in 0..N {{ if a[i] > 0.0 && a[i] < 2.0 || a[i] > 9.0 {{ a[i] = a[i] * 0.5; }} }} }} a }}",
}


@pytest.mark.parametrize("name", sorted(MEMORY))
def test_carried_tensors_need_memory_independent_of_the_round_count(name: str) -> None:
    n = 64
    rng = np.random.default_rng(5)
    x = rng.standard_normal(n).astype(np.float32)
    inputs = {"x": x, "v": x} if "v:" in MEMORY[name] else {"x": x}
    short = peak(MEMORY[name].format(T=2), "f", inputs)
    long = peak(MEMORY[name].format(T=40), "f", inputs)
    assert long == short, (short, long)
    assert long <= 4 * n * 4 + 2048, long  # a few N-element buffers at most


def _allocs(stmts) -> list:
    from kera_core.loops import ir

    out = []
    for s in stmts:
        if isinstance(s, ir.Alloc) and not isinstance(s.buf.size, ir.Imm):
            out.append(s.buf)
        for attr in ("body", "then", "orelse", "cond"):
            inner = getattr(s, attr, None)
            if isinstance(inner, list):
                out += _allocs(inner)
    return out


@pytest.mark.parametrize(
    ("src", "buffers"),
    [
        ("pub fn f[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }", 1),
        ("pub fn f[N](x: &f32[N], y: &f32[N]) -> f32 { sum(x * y) + mean(x - y) }", 0),
        ("pub fn f[N](x: &f64[N]) -> f64 { max(exp(x) * 2.0) }", 0),
        # used twice: computed once, into a buffer
        ("pub fn f[N](x: &f32[N]) -> f32[N] { let t = x * 2.0; t + t }", 2),
        # integer division is never deferred (its checks stay in the reference order)
        ("pub fn f[N](x: &i32[N], y: &i32[N]) -> i32 { sum(x / y) }", 1),
    ],
)
def test_elementwise_chains_are_fused_into_their_consumer(src: str, buffers: int) -> None:
    m = _module(src)
    prog = lower_program(m.graph, "f")
    assert len(_allocs(prog.functions["f"].body)) == buffers
    for size in (0, 5, 40):
        agree(m, m.graph, "f", size, size, True)
