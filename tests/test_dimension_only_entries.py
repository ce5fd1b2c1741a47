"""An entry whose dimensions no value parameter binds (`fn fresh[N]() -> T[N]`, or dims
next to scalars only) gets them from the caller: every target that runs here computes the
interpreter's bytes. (Found by fuzzing: the wasm runner passed the dimensions only while
writing the first value parameter, so an entry without one trapped with "too few
parameters".)"""

from __future__ import annotations

import pytest

from kera_core import targets
from kera_core.analysis import analyze
from kera_core.cli.run import run_seeded

SOURCE = """
struct Body { x: f32, v: f32 }

pub fn fresh[N]() -> Body[N] { zeros() }

pub fn ramp[N](step: i32) -> i32[N] {
    let mut out: i32[N] = zeros();
    for i in 0..N { out[i] = (i as i32) * step; }
    out
}

pub fn grid[M, N]() -> f64[M, N] {
    let mut g: f64[M, N] = zeros();
    for i in 0..M { for j in 0..N { g[i, j] = (i * N + j) as f64 / 3.0; } }
    g
}
"""


def _runners() -> list[str]:
    return [
        t.name for t in targets.runners() if getattr(t, "cannot_run_here", lambda: None)() is None
    ]


@pytest.mark.parametrize("target", _runners())
def test_an_entry_without_value_parameters_gets_its_dimensions(target: str) -> None:
    a = analyze(SOURCE)
    assert not a.has_errors, a.diagnostics
    for fn in ("fresh", "ramp", "grid"):
        t = targets.get(target)
        if t.unsupported(a.module.graph, fn):
            continue
        want = run_seeded(a.module, fn, seed=3, target="interp")
        got = run_seeded(a.module, fn, seed=3, target=target)
        assert got.digest() == want.digest(), (target, fn)
