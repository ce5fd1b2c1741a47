"""Borrows in variables and `swap` (docs/language.md §9, docs/ownership.md §5–6).

* a reference variable is an alias: `let r = &mut y; f(r)` has the graph (and fingerprint)
  of `f(&mut y)`, a `&mut` parameter passed on by name the graph of `&mut p` / `&p`, and
  `swap(&mut a, &mut b)` the graph of the three assignments through a temporary;
* programs using them compute the reference interpreter's bits on the loop program and on
  every runnable target (wasm, x86-64 at each level, arm64);
* a swap of carried buffers in a loop exchanges the buffers' handles (O(1), no element
  copied) where buffers are handles, and stages one copy per cycle, freed in the same
  iteration, where they are fixed memories.

The checker's diagnostics are in tests/ownership_corpus/ (8xx cases, ok/025–027).
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.interp.api import run_function as reference
from kera_core.loops import ir
from kera_core.loops.lower import program_of
from kera_core.loops.run import run_function as loop_run
from tests.outcomes import analyzed, outcome, runnable_target, same_as_reference

HELPERS = """
fn fill[N](y: &mut f32[N], v: f32) {
    for i in 0..N {
        y[i] = v + y[i];
    }
}

fn total[N](x: &f32[N]) -> f32 {
    sum(x)
}
"""


def fn_hash(src: str, name: str = "f") -> bytes:
    return analyzed(HELPERS + src).graph.functions[name].hash


@pytest.mark.parametrize(
    ("alias", "direct"),
    [
        (
            "let r = &mut y; fill(r, 2.0); r[0] = 1.0; total(&y)",
            "fill(&mut y, 2.0); y[0] = 1.0; total(&y)",
        ),
        (
            "let r: &mut f32[N] = &mut y; r += x; r[1] *= 3.0; total(r)",
            "y += x; y[1] *= 3.0; total(&y)",
        ),
        ("let v = &y; total(v)", "total(&y)"),
        ("let v: &f32[N] = &y; total(v) + v[0]", "total(&y) + y[0]"),
        (
            "for i in 0..N { let r = &mut y; r[i] = 2.0; } total(&y)",
            "for i in 0..N { y[i] = 2.0; } total(&y)",
        ),
        (
            "let r = &mut y; for i in 0..N { r[i] += 1.0; } total(r)",
            "for i in 0..N { y[i] += 1.0; } total(&y)",
        ),
    ],
)
def test_a_reference_variable_disappears_in_the_graph(alias: str, direct: str) -> None:
    body = "fn f[N](x: &f32[N]) -> f32 {{ let mut y = x * 2.0; {} }}"
    assert fn_hash(body.format(alias)) == fn_hash(body.format(direct))


def test_a_mut_param_passed_on_by_name_is_a_reborrow() -> None:
    by_name = "fn f[N](p: &mut f32[N]) -> f32 { fill(p, 1.0); total(p) }"
    spelled = "fn f[N](p: &mut f32[N]) -> f32 { fill(&mut p, 1.0); total(&p) }"
    assert fn_hash(by_name) == fn_hash(spelled)


@pytest.mark.parametrize("t", ["f32[N]", "f32"])
def test_swap_is_a_rename(t: str) -> None:
    init = "x * 2.0" if t != "f32" else "x[0]"
    head = f"fn f[N](x: &f32[N]) -> {t} {{ let mut a: {t} = {init}; let mut b: {t} = {init} + 1.0;"
    swapped = head + " for k in 0..3 { a += 1.0; swap(&mut a, &mut b); } a - b }"
    by_hand = head + " for k in 0..3 { a += 1.0; let t = a; a = b; b = t; } a - b }"
    assert fn_hash(swapped) == fn_hash(by_hand)


PROGRAMS = {
    "ref_vars": """
pub fn f[N](x: &f32[N], z: &f32[N]) -> f32[N] {
    let mut y = x * 2.0;
    let r = &mut y;
    fill(r, 0.5);
    for i in 0..N {
        r[i] = r[i] * z[i];
    }
    let v = &y;
    let s = total(v);
    y + s
}
""",
    "ping_pong": """
fn step[N](src: &f32[N], dst: &mut f32[N]) {
    for i in 0..N {
        let l = if i > 0 { src[i - 1] } else { src[i] };
        let h = if i + 1 < N { src[i + 1] } else { src[i] };
        dst[i] = (l + src[i] + h) / 3.0;
    }
}

pub fn f[N](x: &f32[N], z: &f32[N]) -> f32[N] {
    let mut a = x * 1.0;
    let mut b = z * 1.0;
    let mut c: f32[N] = zeros();
    let mut lo = x[0];
    let mut hi: f32 = 2.0;
    for k in 0..5 {
        step(&a, &mut b);
        swap(&mut a, &mut b);
        if k % 2 == 0 {
            swap(&mut b, &mut c);
            swap(&mut lo, &mut hi);
        }
    }
    a * lo + b - c * hi
}
""",
    "mut_params": """
fn rotate[N](a: &mut f32[N], b: &mut f32[N], c: &mut f32[N]) {
    swap(a, b);
    let r = &mut c;
    swap(r, b);
    r[0] += 1.0;
}

pub fn f[N](x: &f32[N], z: &f32[N]) -> f32[N] {
    let mut a = x * 1.0;
    let mut b = z * 1.0;
    let mut c = x + z;
    let mut k: i64 = 0;
    while k < 4 {
        rotate(&mut a, &mut b, &mut c);
        k += 1;
    }
    a - b * c
}
""",
    # scalars behind `&mut`: the result is a parameter's old value, which the write-back of
    # the parameters must not change (the loop program copies it out first)
    # the callee's new value of a `&mut` parameter is never read (overwritten through a
    # reference variable): the parameter's memory is the caller's and must not be freed
    "dead_mut_output": """
fn peek[N](x: &f32[N], w: &mut f32[N]) -> f32 {
    let mut s: f32 = 0.0;
    for i in 0..N {
        s += x[i] - w[i];
    }
    s
}

fn reset[N](x: &f32[N], w: &mut f32[N]) -> f32 {
    let c = peek(x, w);
    let r = &mut w;
    r = x * 2.0;
    c
}

pub fn f[N](x: &f32[N], z: &f32[N]) -> f32[N] {
    let mut y = z * 1.0;
    let c = reset(x, &mut y);
    y + c
}
""",
    "scalar_mut_params": """
fn exchange(a: &mut f32, b: &mut f32) -> f32 {
    swap(a, b);
    a
}

fn replace(a: &mut f32) -> f32 {
    let old = a;
    a = 2.0;
    old
}

pub fn f[N](x: &f32[N], z: &f32[N]) -> f32[N] {
    let mut s = sum(x);
    let mut t = sum(z);
    let u = exchange(&mut s, &mut t);
    let r = &mut t;
    let v = replace(r);
    x * (u - s) + z * (v + t)
}
""",
}


def _inputs(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal(n).astype(np.float32),
        "z": rng.standard_normal(n).astype(np.float32),
    }


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_loop_program_matches_the_interpreter(name: str, n: int) -> None:
    m = analyzed(HELPERS + PROGRAMS[name])
    inputs = _inputs(n, n)
    same_as_reference(m, "f", inputs, lambda: loop_run(m, "f", inputs), name, n)


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_target_matches_the_interpreter(tname: str, name: str) -> None:
    target = runnable_target(tname)
    m = analyzed(HELPERS + PROGRAMS[name])
    assert not target.unsupported(m.graph, "f"), target.unsupported(m.graph, "f")
    art = target.lower(m.graph, m.provenance, "f")
    for n in (0, 1, 5, 33):
        inputs = _inputs(n, 100 + n)
        same_as_reference(
            m,
            "f",
            inputs,
            lambda: target.run(art, m.graph, "f", inputs, provenance=m.provenance),  # noqa: B023
            tname,
            name,
            n,
        )


SWAP_LOOP = """
pub fn f[N](x: &f32[N], t: i64) -> f32[N] {
    let mut a = x * 1.0;
    let mut b: f32[N] = zeros();
    let mut c = x * 2.0;
    for k in 0..t {
        for i in 0..N {
            b[i] = a[i] * 0.5 + c[i];
        }
        swap(&mut a, &mut b);
        if k % 3 == 1 {
            swap(&mut b, &mut c);
            swap(&mut a, &mut c);
        }
    }
    a - b * c
}
"""


def _round_loop(fn: ir.LFunction) -> ir.Loop:
    return [s for s in fn.body if isinstance(s, ir.Loop) and s.counted][-1]


def test_swap_in_a_loop_exchanges_buffer_handles() -> None:
    """The ping-pong is O(1) per iteration where buffers are handles: no element copied."""
    m = analyzed(SWAP_LOOP)
    loop = _round_loop(program_of(m.graph, "f").functions["f"])
    assert [type(s).__name__ for s in loop.body[-1:]] == ["Exchange"]
    assert not [s for s in loop.body if isinstance(s, ir.Copy | ir.Alloc)]
    x = np.arange(8, dtype=np.float32)
    for t in (0, 1, 2, 3, 4, 50):
        inputs = {"x": x, "t": np.int64(t)}
        want = outcome(lambda: reference(m, "f", inputs))  # noqa: B023
        assert outcome(lambda: loop_run(m, "f", inputs)) == want, t  # noqa: B023


def test_swap_with_fixed_memories_stages_one_copy_per_cycle() -> None:
    """Where buffers cannot trade places (a circuit's RAMs), a 2-cycle is three copies through
    one temporary, allocated and freed in the iteration: memory does not grow with `t`."""
    from kera_core.loops.target import FIXED_MEMORIES

    m = analyzed(SWAP_LOOP)
    prog = program_of(m.graph, "f", FIXED_MEMORIES)
    loop = _round_loop(prog.functions["f"])
    copies = [s for s in loop.body if isinstance(s, ir.Copy)]
    allocs = [s for s in loop.body if isinstance(s, ir.Alloc)]
    frees = [s for s in loop.body if isinstance(s, ir.Free)]
    assert len(copies) == 3 and len(allocs) == len(frees) == 1
    assert not any(isinstance(s, ir.Exchange) for s in loop.body)
    x = np.arange(8, dtype=np.float32)
    for t in (0, 1, 2, 3, 4, 50):
        inputs = {"x": x, "t": np.int64(t)}
        want = outcome(lambda: reference(m, "f", inputs))  # noqa: B023
        got = outcome(lambda: loop_run(m, "f", inputs, program=prog))  # noqa: B023
        assert got == want, t


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64"])
def test_exchanged_handles_on_every_target(tname: str) -> None:
    target = runnable_target(tname)
    m = analyzed(SWAP_LOOP)
    art = target.lower(m.graph, m.provenance, "f")
    for n, t in ((0, 3), (1, 4), (9, 7), (33, 50)):
        inputs = {"x": np.linspace(-1, 1, n, dtype=np.float32), "t": np.int64(t)}
        same_as_reference(
            m,
            "f",
            inputs,
            lambda: target.run(art, m.graph, "f", inputs, provenance=m.provenance),  # noqa: B023
            tname,
            n,
            t,
        )


def test_hover_shows_the_borrow_type() -> None:
    from kera_core.ide.hover import hover
    from kera_core.workspace import Document

    src = """fn f[N](x: &f32[N], p: &mut f32[N]) -> f32 {
    let mut y = x * 2.0;
    let r = &mut y;
    r[0] = 1.0;
    let q: &mut f32[N] = &mut p;
    swap(r, q);
    let v = &y;
    y[0] + v[1]
}
"""
    a = Document("file:///borrow.kera", src).analysis()
    assert a.diagnostics == []

    def md(needle: str) -> str:
        h = hover(a, len(src[: src.index(needle)].encode()))
        assert h is not None, needle
        return h.markdown

    assert "let r: &mut f32[N]" in md("r[0]")  # a use shows the declaration's type
    assert "let q: &mut f32[N]" in md("q: &mut")
    assert "let v: &f32[N]" in md("v[1]")
    assert "fn swap(a: &mut T, b: &mut T) -> ()" in md("swap(")
