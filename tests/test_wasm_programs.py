"""Generated programs on the wasm target: the interpreter's output bytes, every time.

Hypothesis draws well-typed programs (`tests.programs`), a seed and a dimension size
(empty, tiny, the default, across the 1024-element reduction tile); every exported
function the wasm target supports runs on ordinary and adversarial inputs (NaNs,
infinities, subnormals, signed zeros, huge and tiny magnitudes) and must give the
interpreter's raw output bytes and digest, or the interpreter's checked-error code.

200 examples under every profile: one example costs a few milliseconds (analysis,
lowering, two runs per function), so the test takes about 30 s on two shared cores.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.cli.run import _resolve_dims
from kera_core.interp import InterpError, run_function
from kera_core.interp.api import entry_signature
from kera_core.interp.gen import InputGenerator
from kera_core.targets.wasm import TARGET
from tests.programs import program, render

EXAMPLES = 200


def _outcome(fn):
    try:
        r = fn()
    except InterpError as e:
        return e.code
    return [(o.key, str(o.type), o.raw) for o in r.outputs], r.digest()


def _inputs(m, name: str, seed: int, adversarial: bool, size: int | None):
    sig = entry_signature(m, name)
    user = {n: size for n in sig.dim_names} if size is not None else {}
    dims, _ = _resolve_dims(sig, user, {})
    gen = InputGenerator(seed, adversarial)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    return inputs, {sig.dim_names[i]: n for i, n in dims.items()}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    program(),
    st.integers(0, 2**32 - 1),
    st.sampled_from([None, 0, 1, 2, 17, 1024, 1025]),
)
def test_generated_programs_adversarial_same_bytes(prog, seed: int, size: int | None) -> None:
    a = analyze(render(prog))
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    m = a.module
    checked = 0
    for f in m.graph.exported():
        if TARGET.unsupported(m.graph, f.name):
            continue
        art = TARGET.lower(m.graph, m.provenance, f.name)
        for adversarial in (True, False):
            inputs, dims = _inputs(m, f.name, seed, adversarial, size)
            ref = _outcome(lambda: run_function(m, f.name, inputs, dims))  # noqa: B023
            got = _outcome(
                lambda: TARGET.run(art, m.graph, f.name, inputs, dims, provenance=m.provenance)  # noqa: B023
            )
            assert got == ref, (f.name, adversarial, seed, size)
        checked += 1
    # `f0` is always public and generated programs use only supported constructs.
    assert checked >= 1
