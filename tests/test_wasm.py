"""The wasm target against the reference interpreter: the same output bytes, or a reason.

Every exported function of every example that the target supports runs on the seeded
inputs of `kera run` (ordinary and adversarial) and must give the interpreter's raw
output bytes and result digest; generated programs likewise. Checked errors must carry
the interpreter's code; a runaway loop must end with a clear out-of-fuel error.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from kera_core.analysis import analyze
from kera_core.backends.wasm import SECTION, read_fingerprint
from kera_core.cli.run import _resolve_dims
from kera_core.interp import InterpError, run_function
from kera_core.interp.api import entry_signature
from kera_core.interp.gen import InputGenerator
from kera_core.targets import available, get
from kera_core.targets.wasm import TARGET
from tests.outcomes import example_program, examples
from tests.programs import program, render

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = [str(p) for p in examples()]  # the files and the package directories
_MODULES: dict[str, object] = {}


def module(src: str):
    if src not in _MODULES:
        a = analyze(src)
        assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
        _MODULES[src] = a.module
    return _MODULES[src]


def example(path: str):
    if os.path.isdir(path):  # a package
        if path not in _MODULES:
            _MODULES[path] = example_program(Path(path))
        return _MODULES[path]
    with open(path, encoding="utf-8") as f:
        return module(f.read())


def outcome(fn):
    """(raw bytes per output, digest) or the checked error's code."""
    try:
        r = fn()
    except InterpError as e:
        return e.code
    return [(o.key, str(o.type), o.raw) for o in r.outputs], r.digest()


def compare(m, name: str, inputs: dict, dims: dict) -> None:
    art = TARGET.lower(m.graph, m.provenance, name)
    ref = outcome(lambda: run_function(m, name, inputs, dims))
    got = outcome(lambda: TARGET.run(art, m.graph, name, inputs, dims, provenance=m.provenance))
    assert got == ref, name


def seeded(m, name: str, seed: int, adversarial: bool, size: int | None = None):
    sig = entry_signature(m, name)
    user = {n: size for n in sig.dim_names} if size is not None else {}
    dims, _ = _resolve_dims(sig, user, {})
    gen = InputGenerator(seed, adversarial)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    return inputs, {sig.dim_names[i]: n for i, n in dims.items()}


def _cases():
    for path in EXAMPLES:
        m = example(path)
        for f in m.graph.exported():
            if not TARGET.unsupported(m.graph, f.name):
                yield pytest.param(path, f.name, id=f"{os.path.basename(path)}:{f.name}")


CASES = list(_cases())


def test_the_target_is_registered_with_the_others() -> None:
    names = [t.name for t in available()]
    assert "wasm" in names and "keg" in names
    assert get("wasm") is TARGET


def test_most_examples_are_supported() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("adversarial", [False, True], ids=["ordinary", "adversarial"])
@pytest.mark.parametrize(("path", "name"), CASES)
def test_examples_same_bytes(path: str, name: str, adversarial: bool) -> None:
    m = example(path)
    inputs, dims = seeded(m, name, 1, adversarial)
    compare(m, name, inputs, dims)


@pytest.mark.parametrize("size", [0, 1, 1023, 1025, 3 * 1024 + 17])
@pytest.mark.parametrize("name", ["dot_builtin", "norm", "cosine", "dot_loop"])
def test_reductions_across_tiles(name: str, size: int) -> None:
    """The canonical tree over several (and short) tiles, adversarial values included."""
    m = example(os.path.join(ROOT, "examples", "dot.kera"))
    for adversarial in (False, True):
        inputs, dims = seeded(m, name, 7, adversarial, size)
        compare(m, name, inputs, dims)


# an inclusive range up to the maximum i64 was a gap of the loop program; it is one counted
# walk now (docs/lowering.md, "Ranges") and compiles like any loop
INCLUSIVE_TO_MAX = (
    "pub fn fact(n: i64) -> i64 {\n    let mut s = 0i64;\n"
    "    for i in 0..=9223372036854775807 { s = s + i; }\n    s\n}\n"
)


def test_unsupported_functions_give_reasons(monkeypatch) -> None:
    m = module(INCLUSIVE_TO_MAX)
    assert not TARGET.unsupported(m.graph, "fact")
    # a lowering gap (NotLowered, docs/lowering.md "Limits") reaches the user as a reason,
    # a refusal to compile and a preview that says so — never a wrong number
    import kera_core.backends.wasm.compile as wasm_compile
    from kera_core.loops import NotLowered

    def gap(*args, **kwargs):
        raise NotLowered("an operation the loop program cannot express")

    monkeypatch.setattr(wasm_compile, "program_of", gap)
    m = module(INCLUSIVE_TO_MAX.replace("fact", "fact2"))  # not in the compile cache
    why = TARGET.unsupported(m.graph, "fact2")
    assert why and "cannot express" in why[0]
    with pytest.raises(ValueError, match="cannot compile"):
        TARGET.lower(m.graph, m.provenance, "fact2")
    assert "not supported" in TARGET.preview(m.graph, m.provenance, "fact2")
    monkeypatch.undo()
    assert not TARGET.unsupported(
        example(os.path.join(ROOT, "examples", "saxpy.kera")).graph, "saxpy_fused"
    )


def test_artifact_carries_the_fingerprint() -> None:
    m = example(os.path.join(ROOT, "examples", "saxpy.kera"))
    art = TARGET.lower(m.graph, m.provenance, "saxpy")
    assert art.data[:4] == b"\0asm" and art.suffix == ".wasm"
    assert SECTION.encode() in art.data
    assert read_fingerprint(art.data) == m.graph.fingerprint() == art.fingerprint
    assert '(export "saxpy")' in TARGET.preview(m.graph, m.provenance, "saxpy")


ERRORS = """
pub fn read[N](x: &f32[N], i: i64) -> f32 { x[i] }
pub fn write[N](x: &mut f32[N], i: i64) { x[i] = 1.0; }
pub fn grid(x: &i32[3, 4], i: i64, j: i64) -> i32 { x[i, j] }
pub fn quot(a: i32, b: i32) -> i32 { a / b }
pub fn rest(a: i64, b: i64) -> i64 { a % b }
pub fn small(a: i8, b: i8) -> i8 { a / b }
pub fn biggest[N](x: &f32[N]) -> f32 { max(x) }
pub fn spin(n: i64) -> i64 {
    let mut i = 0;
    while i >= 0 { i = (i + 1) % 7; }
    i + n
}
"""


@pytest.mark.parametrize(
    ("name", "inputs", "code"),
    [
        ("read", {"x": np.zeros(4, np.float32), "i": 4}, "R0001"),
        ("read", {"x": np.zeros(4, np.float32), "i": -1}, "R0001"),
        ("read", {"x": np.arange(4, dtype=np.float32), "i": 3}, None),
        ("write", {"x": np.zeros(2, np.float32), "i": 2}, "R0001"),
        ("grid", {"x": np.zeros((3, 4), np.int32), "i": 0, "j": 4}, "R0001"),
        ("grid", {"x": np.arange(12, dtype=np.int32).reshape(3, 4), "i": 2, "j": 3}, None),
        ("quot", {"a": 7, "b": 0}, "R0002"),
        ("quot", {"a": -(2**31), "b": -1}, None),
        ("rest", {"a": -(2**63), "b": -1}, None),
        ("rest", {"a": 5, "b": 0}, "R0002"),
        ("small", {"a": -128, "b": -1}, None),
        ("biggest", {"x": np.zeros(0, np.float32)}, "R0004"),
    ],
)
def test_checked_errors_have_the_interpreters_codes(name, inputs, code) -> None:
    m = module(ERRORS)
    art = TARGET.lower(m.graph, m.provenance, name)
    ref = outcome(lambda: run_function(m, name, inputs))
    got = outcome(lambda: TARGET.run(art, m.graph, name, inputs, provenance=m.provenance))
    assert got == ref
    if code is not None:
        assert got == code


def test_fuel_exhaustion_is_a_clear_error() -> None:
    m = module(ERRORS)
    art = TARGET.lower(m.graph, m.provenance, "spin")
    with pytest.raises(InterpError, match="out of fuel") as e:
        TARGET.run(art, m.graph, "spin", {"n": 1}, provenance=m.provenance, fuel=100_000)
    assert e.value.code == "R0007"


def test_a_foreign_artifact_is_refused() -> None:
    m = module(ERRORS)
    other = example(os.path.join(ROOT, "examples", "saxpy.kera"))
    art = TARGET.lower(other.graph, other.provenance, "saxpy")
    with pytest.raises(ValueError, match="fingerprint"):
        TARGET.run(art, m.graph, "read", {})


INPLACE = """
pub fn fill[N](z: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = z[i] + y[i]; }
    y
}
pub fn keep[N](x: &f32[N]) -> f32 {
    let mut a: f32[N] = zeros();
    a = a + x;
    let before = sum(&a);
    for i in 0..N { a[i] = 1000.0; }
    before + sum(&a) + sum(x)
}
pub fn swap[N](x: &f32[N]) -> f32 {
    let mut a: f32[N] = zeros();
    let mut b: f32[N] = zeros();
    a = a + x;
    for i in 0..N { let t = a; a = b; b = t; a[i] = 5.0; }
    sum(&a) * 3.0 + sum(&b)
}
pub fn cond[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    let mut k = 0;
    while k < N { if x[k] > 0.0 { y[k] = x[k]; } k += 1; }
    y
}
pub fn twice[N](y: &mut f32[N]) {
    for i in 0..N { y[i] = y[i] * 2.0; }
    for i in 0..N { y[i] = y[i] + 1.0; }
}
"""


@pytest.mark.parametrize("name", ["fill", "keep", "swap", "cond", "twice"])
def test_value_semantics_with_in_place_loops(name: str) -> None:
    m = module(INPLACE)
    for adversarial in (False, True):
        inputs, dims = seeded(m, name, 3, adversarial, 37)
        compare(m, name, inputs, dims)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(program())
def test_generated_programs_same_bytes(prog) -> None:
    m = module(render(prog))
    for f in m.graph.exported():
        if TARGET.unsupported(m.graph, f.name):
            continue
        for adversarial in (False, True):
            inputs, dims = seeded(m, f.name, 5, adversarial)
            compare(m, f.name, inputs, dims)


MATH = """
pub fn m_exp[N](x: &f32[N]) -> f32[N] { exp(x) }
pub fn m_log[N](x: &f32[N]) -> f32[N] { log(x) }
pub fn m_tanh[N](x: &f32[N]) -> f32[N] { tanh(x) }
pub fn m_sigmoid[N](x: &f32[N]) -> f32[N] { sigmoid(x) }
pub fn d_exp[N](x: &f64[N]) -> f64[N] { exp(x) }
pub fn d_log[N](x: &f64[N]) -> f64[N] { log(x) }
pub fn d_tanh[N](x: &f64[N]) -> f64[N] { tanh(x) }
pub fn d_sigmoid[N](x: &f64[N]) -> f64[N] { sigmoid(x) }
"""


@pytest.mark.parametrize("fn", ["exp", "log", "tanh", "sigmoid"])
@pytest.mark.parametrize("fmt", ["m", "d"])
def test_elementary_functions_bit_for_bit(fn: str, fmt: str) -> None:
    """Random bit patterns (NaNs, subnormals, infinities included) and a dense sweep."""
    m = module(MATH)
    rng = np.random.default_rng(11)
    if fmt == "m":
        bits = rng.integers(0, 2**32, 60_000, dtype=np.uint64).astype(np.uint32)
        x = np.concatenate(
            [bits.view(np.float32), np.linspace(-120, 120, 20_000, dtype=np.float32)]
        )
    else:
        bits = rng.integers(0, 2**64 - 1, 30_000, dtype=np.uint64)
        x = np.concatenate([bits.view(np.float64), np.linspace(-800, 800, 20_000)])
    compare(m, f"{fmt}_{fn}", {"x": x}, {})


def test_run_module_is_a_drop_in_runner() -> None:
    """The `kera run --target wasm` runner: the interpreter's signature and result."""
    from kera_core.interp import InputError
    from kera_core.targets.wasm import run_module

    m = example(os.path.join(ROOT, "examples", "saxpy.kera"))
    inputs, dims = seeded(m, "saxpy", 0, False)
    assert (
        run_module(m, "saxpy", inputs, dims).digest()
        == run_function(m, "saxpy", inputs, dims).digest()
    )
    with pytest.raises(InputError, match="max-steps"):
        run_module(m, "saxpy", inputs, dims, max_steps=10)
