"""Variables without a value — unit-typed, or left so by an error — assigned inside a region
(`if`, `for`, `while`, the statements after an early `return` in a block): lowering neither
threads them nor fails on them (a fuzzed edit found both crashes)."""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp.api import run_function

UNIT_ASSIGNED = """fn f(a: f32) -> f32 {
    let mut u = ();
    { if a > 1.0 { return a; } u = (); }
    if a > 0.5 { u = (); }
    for i in 0..3 { u = (); }
    let mut n: i64 = 0;
    while n < 2 { u = (); n += 1; }
    a * 2.0
}
"""


@pytest.mark.parametrize(("a", "want"), [(3.0, 3.0), (0.75, 1.5), (0.25, 0.5)])
def test_a_unit_variable_assigned_in_regions_lowers_and_runs(a, want):
    analysis = analyze(UNIT_ASSIGNED)
    assert analysis.diagnostics == []
    out = run_function(analysis.module, "f", {"a": np.float32(a)}).outputs[0].value
    assert np.asarray(out).tobytes() == np.float32(want).tobytes()


@pytest.mark.parametrize(
    "body",
    [
        "{ if a > 1.0 { return a; } n = qq; }",  # the rest after an early return
        "if a > 1.0 { n = qq; }",
        "for i in 0..3 { n = qq; }",
        "while a > 2.0 { n = qq; }",
        "let mut m = qq; if a > 1.0 { m = 1.0; }",  # an error's variable, carried or not
    ],
)
def test_a_variable_an_error_left_without_value_is_reported_not_a_crash(body):
    text = f"fn f(a: f32) -> f32 {{\n    let mut n: f32 = 1.0;\n    {body}\n    n\n}}\n"
    analysis = analyze(text)
    assert [d.code for d in analysis.diagnostics] and all(
        d.code == "K0201" for d in analysis.diagnostics
    )
    assert not analysis.module.functions["f"].lowers
