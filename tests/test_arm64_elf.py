"""The arm64 artifact as a real static Linux ELF under qemu-aarch64 (the ABI end to end):
raw result bytes, printed text and checked errors equal to the interpreter's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.backends.arm64 import compile as A
from kera_core.interp import InterpError
from kera_core.interp.api import entry_signature
from kera_core.interp.api import run_function as reference
from kera_core.interp.gen import InputGenerator
from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
STEPS = 20_000


def elf():
    from kera_core.backends.arm64 import elf as E

    missing = E.tools_missing()
    if missing:
        tool_missing(missing)
    return E


def outcome(run_it) -> str:
    try:
        return "ok " + run_it().digest()
    except InterpError as e:
        return "error " + e.code


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_function_as_an_elf(path: Path) -> None:
    E = elf()
    m = analyze(path.read_text()).module
    ran = 0
    for f in m.graph.exported():
        comp = A.compiled(m.graph, f.name)
        if E.unsupported(comp, f.name):
            continue
        sig = entry_signature(m, f.name)
        for size, adversarial in ((0, False), (3, True), (17, False)):
            dims = dict.fromkeys(range(len(sig.dim_names)), size)
            gen = InputGenerator(size + 1, adversarial=adversarial)
            inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
            named = {sig.dim_names[i]: n for i, n in dims.items()}
            want = outcome(lambda: reference(m, f.name, inputs, named, max_steps=STEPS))  # noqa: B023
            got = outcome(lambda: E.run_elf(comp, m, f.name, inputs, named, max_steps=STEPS))  # noqa: B023
            assert got == want, (f.name, size, adversarial)
            ran += 1
    assert ran or all(
        E.unsupported(A.compiled(m.graph, f.name), f.name) for f in m.graph.exported()
    )


SRC = """
pub fn shout[N](x: &f32[N]) -> f32 ! io { print(x); print("and "); print(x[0]); sum(x) }
pub fn bump(x: &mut i32[4]) { x[1] = x[1] + 7; }
pub fn spin(n: i64) -> i64 { let mut s: i64 = 0; while s < n { s = s + 0; } s }
pub fn at[N](x: &f32[N], i: i64) -> f32 { x[i] }
pub fn big[N](x: &f32[N]) -> f32[N] { x * 2.0 }
pub fn fm(a: f32, b: f32) -> f32 { a % b }
"""


def test_prints_mutable_parameters_and_checked_errors() -> None:
    E = elf()
    a = analyze(SRC)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    m = a.module

    def both(fn, inputs, dims=None, **kw):
        comp = A.compiled(m.graph, fn)
        want = outcome(lambda: reference(m, fn, inputs, dims, **kw))
        got = outcome(lambda: E.run_elf(comp, m, fn, inputs, dims, **kw))
        assert got == want, fn
        return got

    x = np.array([1.5, -0.0, np.nan], dtype=np.float32)
    both("shout", {"x": x})
    assert E.run_elf(A.compiled(m.graph, "shout"), m, "shout", {"x": x}).printed.count("and") == 1
    both("bump", {"x": np.arange(4, dtype=np.int32)})
    assert both("spin", {"n": 5}, max_steps=1000) == "error R0007"
    assert both("at", {"x": x, "i": 3}) == "error R0001"
    got = outcome(
        lambda: E.run_elf(
            A.compiled(m.graph, "big"),
            m,
            "big",
            {"x": np.zeros(4096, np.float32)},
            memory_limit=4096,
        )
    )
    assert got == "error R0009"
    assert E.unsupported(A.compiled(m.graph, "fm"), "fm")  # float % needs the C library
