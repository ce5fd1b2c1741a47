"""A constant index far past any buffer (2^31 - 1, 2^32 + 1, 2^40) compiles on every
target and fails at run time with the interpreter's checked error (R0001) — the address
is never formed. (Found by fuzzing: the wasm backend folded `index * width` into an
`i32.const` outside the 32-bit range, and assembling the module failed.)"""

from __future__ import annotations

import pytest

from kera_core import targets
from kera_core.analysis import analyze
from kera_core.cli.run import run_seeded
from kera_core.interp import InterpError

INDICES = (2147483647, 4294967297, 1 << 40)
SOURCE = "\n".join(
    f"""
pub fn read{k}[N](x: &f32[N]) -> f32 {{ x[{i}] }}
pub fn write{k}[N](x: &mut i64[N]) {{ x[{i}] = 7; }}
pub fn first_ok{k}[N](x: &f64[N]) -> f64 {{ if N > {i} {{ x[{i}] }} else {{ 0.5 }} }}
"""
    for k, i in enumerate(INDICES)
)


def _outcome(module, fn: str, target: str) -> str:
    try:
        return run_seeded(module, fn, seed=1, target=target).digest()
    except InterpError as e:
        return e.code


@pytest.mark.parametrize("target", [t.name for t in targets.available()])
def test_constant_indices_past_the_32_bit_range(target: str) -> None:
    a = analyze(SOURCE)
    assert not a.has_errors, a.diagnostics
    t = targets.get(target)
    runs = getattr(t, "cannot_run_here", lambda: None)() is None and hasattr(t, "run")
    for f in a.module.graph.exported():
        if t.unsupported(a.module.graph, f.name):
            continue
        t.lower(a.module.graph, a.module.provenance, f.name)  # builds: no exception
        if runs:
            want = _outcome(a.module, f.name, "interp")
            assert want == "R0001" or f.name.startswith("first_ok"), want
            assert _outcome(a.module, f.name, target) == want, (target, f.name)
