"""wasm and x86-64 on the same generated programs: raw result bytes equal to each other and
to the interpreter's.

Both backends select from one loop program (docs/lowering.md), so this is the check that
they spell it alike: expression-style and imperative programs (`tests.programs`,
`tests.imperative_programs`), plain and optimized (the optimizer's `lanes` loops run
lane-wise on wasm), ordinary and adversarial inputs, several sizes. The wasm module is a
*poisoned* build (every fresh block filled with 0xA5 bytes), so a read of memory the loop
program never wrote would change the bits. A run the interpreter stops for its step
budget (R0007) is compared on x86-64 only: wasm bounds a run by fuel, not steps.

``KERA_FUZZ_EXAMPLES=N`` draws N programs of each kind (default 25; the issue's run:
5000 of each).
"""

from __future__ import annotations

import os
import platform

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.backends.wasm import assemble, lower_wat, run_wasm
from kera_core.backends.x86_64 import compile as X
from kera_core.backends.x86_64.runtime import Loaded, run
from kera_core.interp import InterpError
from kera_core.interp.api import entry_signature
from kera_core.interp.api import run_function as reference
from kera_core.interp.gen import InputGenerator
from kera_core.opt import optimize
from tests import imperative_programs, programs
from tests.tools import tool_missing

FUZZ = int(os.environ.get("KERA_FUZZ_EXAMPLES", "25"))
STEPS = 20_000
SETTINGS = settings(
    max_examples=FUZZ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _outcome(run_it) -> tuple:
    try:
        r = run_it()
    except InterpError as e:
        return ("error", e.code)
    return ("ok", tuple((o.key, str(o.type), o.raw) for o in r.outputs), r.digest())


def check_source(src: str, seed: int, size: int) -> int:
    if platform.machine() not in ("x86_64", "AMD64"):
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    m = a.module
    isa = X.isa_for()
    compared = 0
    for graph in (m.graph, optimize(m.graph).graph):
        src_of = m if graph is m.graph else graph
        for f in graph.exported():
            name = f.name
            if X.unsupported(graph, name):
                continue
            wasm = assemble(lower_wat(graph, name, poison=True), graph.fingerprint())
            data, _ = X.build(graph, name, isa)
            loaded = Loaded(X.read(data, graph)[1])
            sig = entry_signature(src_of, name)
            try:
                for adversarial in (False, True):
                    dims = dict.fromkeys(range(len(sig.dim_names)), size)
                    gen = InputGenerator(seed + size, adversarial=adversarial)
                    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
                    named = {sig.dim_names[i]: n for i, n in dims.items()}
                    want = _outcome(
                        lambda: reference(src_of, name, inputs, named, max_steps=STEPS)  # noqa: B023
                    )
                    got_x86 = _outcome(
                        lambda: run(loaded, src_of, name, inputs, named, max_steps=STEPS)  # noqa: B023
                    )
                    assert got_x86 == want, ("x86_64", name, size, seed, adversarial)
                    if want == ("error", "R0007"):
                        continue
                    prov = m.provenance if graph is m.graph else None
                    got_wasm = _outcome(
                        lambda: run_wasm(wasm, graph, name, inputs, named, provenance=prov)  # noqa: B023
                    )
                    assert got_wasm == want, ("wasm", name, size, seed, adversarial)
                    compared += 1
            finally:
                loaded.close()
    return compared


@SETTINGS
@given(prog=programs.program(), seed=st.integers(0, 2**32 - 1), size=st.sampled_from([0, 1, 3, 17]))
def test_generated_programs(prog, seed: int, size: int) -> None:
    check_source(programs.render(prog), seed, size)


@SETTINGS
@given(
    prog=imperative_programs.imperative_program(),
    seed=st.integers(0, 2**32 - 1),
    size=st.sampled_from([0, 1, 2, 5, 17]),
)
def test_generated_imperative_programs(prog, seed: int, size: int) -> None:
    check_source(imperative_programs.render(prog), seed, size)


@pytest.mark.parametrize("size", [0, 1, 4, 5, 17, 1025])
def test_a_known_program_is_compared(size: int) -> None:
    """The harness compares something: a program both targets run, at every size."""
    src = (
        "pub fn f[N](x: &f32[N], y: &mut f32[N]) -> f32 {\n"
        "    for i in 0..N { y[i] = exp(x[i]) * 0.5 + y[i]; }\n"
        "    sum(x * y) + dot(x, x)\n}\n"
    )
    assert check_source(src, 7, size) == 4
