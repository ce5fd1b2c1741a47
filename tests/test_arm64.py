"""The arm64 target under unicorn: raw result bytes (through the digest) and checked errors
equal to the interpreter's, for every example function, generated programs, every scalar
primitive at the edges, reductions at tile and lane boundaries and hostile runs.
``KERA_FUZZ_EXAMPLES=2000`` fuzzes longer (the default is a modest count: emulation is
slower than native code).

Needs ``unicorn`` (pip).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.backends.arm64 import compile as A
from kera_core.interp import InterpError
from kera_core.interp.api import entry_signature
from kera_core.interp.api import run_function as reference
from kera_core.interp.gen import InputGenerator
from kera_core.interp.values import DTYPES
from kera_core.opt import optimize
from kera_core.targets import get
from tests import imperative_programs, programs
from tests.outcomes import example_program, examples
from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = examples()  # the files and the package directories
FUZZ = int(os.environ.get("KERA_FUZZ_EXAMPLES", "20"))
STEPS = 20_000


def emulator():
    try:
        from kera_core.backends.arm64 import emulate
    except ImportError:  # pragma: no cover
        tool_missing("unicorn is not installed (pip install unicorn)")
    try:
        import unicorn  # noqa: F401
    except ImportError:
        tool_missing("unicorn is not installed (pip install unicorn)")
    return emulate


def outcome(run_it) -> str:
    try:
        return "ok " + run_it().digest()
    except InterpError as e:
        return "error " + e.code


def machine_for(graph, name: str):
    em = emulator()
    data, _ = A.build(graph, name)
    return em, em.Machine(A.read(data, graph)[1])


class X86:
    """The x86-64 backend's outcome for the same run, where this machine is an x86-64 one
    (issue 19 compares arm64's bytes with both the interpreter's and x86-64's)."""

    def __init__(self, graph, name: str) -> None:
        self.loaded = None
        if platform.machine() in ("x86_64", "AMD64"):
            from kera_core.backends.x86_64 import compile as X
            from kera_core.backends.x86_64.runtime import Loaded, run

            self.run = run
            self.loaded = Loaded(X.read(X.build(graph, name, X.isa_for(None))[0], graph)[1])

    def outcome(self, src, name, inputs, named) -> str | None:
        if self.loaded is None:
            return None
        loaded = self.loaded
        return outcome(lambda: self.run(loaded, src, name, inputs, named, max_steps=STEPS))

    def close(self) -> None:
        if self.loaded is not None:
            self.loaded.close()


def check(module, graph, name: str, sizes=(0, 1, 3, 17), seeds=(1,), shapes=None) -> set[str]:
    """Raw result bytes (or the error) equal to the interpreter's and, on an x86-64 machine,
    to the x86-64 backend's; every dimension = each of `sizes`, or each tuple in `shapes`
    gives the dimensions in order."""
    em, machine = machine_for(graph, name)
    x86 = X86(graph, name)
    src = module if graph is module.graph else graph
    sig = entry_signature(src, name)
    seen = set()
    try:
        cases = [(sum(d), d) for d in shapes] if shapes else []
        for size, shape in cases or [(n, (n,) * len(sig.dim_names)) for n in sizes]:
            for seed in seeds:
                for adversarial in (False, True):
                    dims = dict(enumerate(shape))
                    gen = InputGenerator(seed + size, adversarial=adversarial)
                    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
                    named = {sig.dim_names[i]: n for i, n in dims.items()}
                    want = outcome(lambda: reference(src, name, inputs, named, max_steps=STEPS))  # noqa: B023
                    got = outcome(
                        lambda: em.run(machine, src, name, inputs, named, max_steps=STEPS)  # noqa: B023
                    )
                    assert got == want, (name, size, seed, adversarial)
                    other = x86.outcome(src, name, inputs, named)
                    assert other in (None, got), ("x86_64", name, size, seed, adversarial)
                    seen.add(want)
    finally:
        machine.close()
        x86.close()
    return seen


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_function(path: Path) -> None:
    m = example_program(path)
    for f in m.graph.exported():
        assert not A.unsupported(m.graph, f.name), A.unsupported(m.graph, f.name)
        check(m, m.graph, f.name)


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def check_source(src: str, seed: int, size: int) -> None:
    m = _module(src)
    g = optimize(m.graph).graph
    for f in m.graph.exported():
        check(m, m.graph, f.name, sizes=(size,), seeds=(seed,))
        if f.name in g.functions:
            check(m, g, f.name, sizes=(size,), seeds=(seed,))


_SETTINGS = settings(
    max_examples=FUZZ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@_SETTINGS
@given(prog=programs.program(), seed=st.integers(0, 2**32 - 1), size=st.sampled_from([0, 1, 3, 17]))
def test_generated_programs(prog, seed: int, size: int) -> None:
    check_source(programs.render(prog), seed, size)


@_SETTINGS
@given(
    prog=imperative_programs.imperative_program(),
    seed=st.integers(0, 2**32 - 1),
    size=st.sampled_from([0, 1, 2, 5, 17]),
)
def test_generated_imperative_programs(prog, seed: int, size: int) -> None:
    check_source(imperative_programs.render(prog), seed, size)


INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


def scalar_ops_source() -> str:
    fns = []
    for t in INTS:
        fns.append(
            f"pub fn ops_{t}(a: {t}, b: {t}) -> {t} {{ let d = if b == 0 {{ 1 as {t} }} else {{ b }}; "
            f"(a + b) ^ (a - b) ^ (a * b) ^ (a / d) ^ (a % d) ^ (a & b) ^ (a | b) ^ (a << b) "
            f"^ (a >> b) ^ !a ^ minimum(a, b) ^ maximum(a, b) }}"
        )
        fns.append(
            f"pub fn each_{t}(a: {t}, b: {t}) -> {t}[8] {{ let d = if b == 0 {{ 1 as {t} }} else {{ b }}; "
            f"[a / d, a % d, a << b, a >> b, minimum(a, b), maximum(a, b), abs(a), -a] }}"
        )
        fns.append(
            f"pub fn cmp_{t}(a: {t}, b: {t}) -> bool[4] {{ [a < b, a <= b, a > b, a == b] }}"
        )
        for to in [*INTS, "f32", "f64"]:
            fns.append(f"pub fn cast_{t}_{to}(a: {t}) -> {to} {{ a as {to} }}")
    for t in ("f32", "f64"):
        fns.append(
            f"pub fn ops_{t}(a: {t}, b: {t}, c: {t}) -> {t}[12] {{ [a + b, a - b, a * b, a / b, a % b, "
            f"sqrt(a), fma(a, b, c), minimum(a, b), maximum(a, b), -a, abs(a), exp(a)] }}"
        )
        fns.append(
            f"pub fn cmp_{t}(a: {t}, b: {t}) -> bool[6] {{ [a == b, a != b, a < b, a <= b, a > b, a >= b] }}"
        )
        for to in [*INTS, "f32", "f64"]:
            fns.append(f"pub fn cast_{t}_{to}(a: {t}) -> {to} {{ a as {to} }}")
    return "\n".join(fns) + "\n"


def test_every_scalar_primitive_at_the_edges() -> None:
    m = _module(scalar_ops_source())
    for f in m.graph.exported():
        check(m, m.graph, f.name, sizes=(0,), seeds=tuple(range(8)))


EDGE_F64 = [
    0.0,
    -0.0,
    1.0,
    -1.5,
    2.5,
    0.5,
    -0.5,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    float("inf"),
    float("-inf"),
    float("nan"),
    2.0**63,
    -(2.0**63),
    2.0**64,
    2.0**31,
    -(2.0**31) - 1,
    255.9,
    -128.5,
    65535.5,
    1e300,
    4503599627370497.0,
]
EDGE_I64 = [
    0,
    1,
    -1,
    2**63 - 1,
    -(2**63),
    2**31 - 1,
    -(2**31),
    2**32,
    255,
    256,
    -129,
    63,
    64,
    65,
    127,
    128,
    1 << 53,
    (1 << 53) + 1,
]


def test_chosen_edge_values() -> None:
    """NaN payloads, ±0, subnormals, infinities, MIN / -1, shifts past the width, casts out
    of range: each primitive on each edge value, against the interpreter."""
    m = _module(scalar_ops_source())
    names = {f.name for f in m.graph.exported()}
    em = emulator()
    machines: dict = {}

    def go(name, inputs):
        if name not in machines:
            machines[name] = machine_for(m.graph, name)[1]
        want = outcome(lambda: reference(m, name, inputs))
        got = outcome(lambda: em.run(machines[name], m, name, inputs))
        assert got == want, (name, inputs)

    nan_payloads = [np.uint64(0x7FF0000000000001), np.uint64(0xFFF8000000000123)]
    f64s = [np.float64(v) for v in EDGE_F64] + [
        np.array(p).view(np.float64)[()] for p in nan_payloads
    ]
    for t in ("f32", "f64"):
        ft = {"f32": np.float32, "f64": np.float64}[t]
        with np.errstate(all="ignore"):
            vals = [np.asarray(v).astype(ft)[()] for v in f64s]
        vals += (
            [np.uint32(0x7F800001).view(np.float32), np.uint32(0x00000001).view(np.float32)]
            if t == "f32"
            else []
        )
        for a in vals:
            for to in [*INTS, "f32", "f64"]:
                go(f"cast_{t}_{to}", {"a": a})
        for a in vals[::2]:
            for b in vals[::3]:
                go(f"ops_{t}", {"a": a, "b": b, "c": vals[1]})
                go(f"cmp_{t}", {"a": a, "b": b})
    for t in INTS:
        dt = np.dtype(DTYPES[t])
        vals = sorted({int(np.array(v).astype(np.int64).astype(dt)) for v in EDGE_I64})
        for a in vals:
            for to in [*INTS, "f32", "f64"]:
                go(f"cast_{t}_{to}", {"a": dt.type(a)})
            for b in vals[::2] + [-1 % (1 << dt.itemsize * 8) if t[0] == "u" else -1]:
                b = np.array(b).astype(dt)[()] if t[0] == "u" else dt.type(b)
                go(f"each_{t}", {"a": dt.type(a), "b": b})
        assert f"each_{t}" in names


REDUCTIONS = """
pub fn s32[N](x: &f32[N]) -> f32 { sum(x) }
pub fn d64[N](x: &f64[N], y: &f64[N]) -> f64 { dot(x, y) }
pub fn am[N](x: &f32[N]) -> i64 { argmax(x) }
pub fn mx[N](x: &f64[N]) -> f64 { max(x) + min(x) }
"""


def test_reductions_at_tile_and_lane_boundaries() -> None:
    m = _module(REDUCTIONS)
    for f in m.graph.exported():
        check(m, m.graph, f.name, sizes=(0, 1, 15, 16, 17, 1024, 1025, 3073))


HOSTILE = """
pub fn spin(n: i64) -> i64 { let mut i = 0; while i >= 0 { i = i + n * 0; } i }
pub fn oob[N](x: &f32[N], i: i64) -> f32 { x[i] }
pub fn divz(a: i32, b: i32) -> i32 { a / b }
pub fn big[N](x: &f32[N]) -> f32 { let z: f32[N] = zeros(); sum(z + x) }
"""


def test_hostile_runs_end_in_the_interpreters_error() -> None:
    m = _module(HOSTILE)
    g = m.graph

    def native(name, inputs, dims=None, **kw):
        em, machine = machine_for(g, name)
        return outcome(lambda: em.run(machine, m, name, inputs, dims, **kw))

    assert native("spin", {"n": 3}, max_steps=10_000) == "error R0007"
    x = np.arange(4, dtype=np.float32)
    for i in (-1, 4, 1 << 40, -(1 << 63)):
        assert native("oob", {"x": x, "i": i}) == "error R0001"
    assert native("oob", {"x": x, "i": 3}) == outcome(lambda: reference(m, "oob", {"x": x, "i": 3}))
    assert native("divz", {"a": 7, "b": 0}) == "error R0002"
    imin = np.int32(-(2**31))
    assert native("divz", {"a": imin, "b": -1}) == outcome(
        lambda: reference(m, "divz", {"a": imin, "b": -1})
    )
    # past a 1 MiB limit: refused with R0009, the process carries on
    big = np.zeros(1 << 20, dtype=np.float32)
    assert native("big", {"x": big}, memory_limit=1 << 20) == "error R0009"
    assert native("big", {"x": x}) == outcome(lambda: reference(m, "big", {"x": x}))


def test_a_fault_in_the_emulator_is_reported_not_crashed() -> None:
    em = emulator()
    from kera_core.native.arm64 import inst as I
    from kera_core.native.arm64.encode import encode

    # ldr x0, [x5] with x5 = 0: an unmapped page
    word = encode(I.load("ldr", I.R.XREGS[0], I.MemOp(I.R.XREGS[5])))[0]
    machine = em.Machine([("f", word.to_bytes(4, "little") + (0xD65F03C0).to_bytes(4, "little"))])
    machine.uc.reg_write(machine.A.UC_ARM64_REG_X5, 0)
    with pytest.raises(InterpError) as e:
        machine.call("f", [], 0, 10, 1 << 20, None)
    assert e.value.code == "R0008"


def test_the_artifact_carries_the_fingerprint_and_refuses_another_graph() -> None:
    emulator()
    m = _module("pub fn f[N](x: &f32[N]) -> f32 { sum(x) }")
    other = _module("pub fn f[N](x: &f32[N]) -> f32 { max(x) }")
    t = get("arm64")
    art = t.lower(m.graph, m.provenance, "f")
    assert A.fingerprint_of(art.data) == m.graph.fingerprint()
    assert "fadd s" in art.text and "msr fpcr" in art.text
    with pytest.raises(A.ArtifactError):
        t.run(art, other.graph, "f", {"x": np.ones(3, np.float32)})
    with pytest.raises(A.ArtifactError):
        A.read(b"not an artifact" * 4)
    r = t.run(art, m.graph, "f", {"x": np.ones(3, np.float32)}, provenance=m.provenance)
    assert r.digest() == reference(m, "f", {"x": np.ones(3, np.float32)}).digest()


def test_printing_functions_print_as_the_interpreter_does() -> None:
    m = _module(
        'pub fn p[N](x: &f64[N], k: i32) -> f64 ! io { print("k = "); print(k); print(x); '
        "print(-0.0 * x[0]); sum(x) }"
    )
    em, machine = machine_for(m.graph, "p")
    x = np.array([1.5, float("nan"), -0.0])
    got = em.run(machine, m, "p", {"x": x, "k": np.int32(-3)})
    want = reference(m, "p", {"x": x, "k": np.int32(-3)})
    assert got.digest() == want.digest() and got.printed == want.printed and "k = -3" in got.printed


def test_the_listing_is_gnu_assembly() -> None:
    m = _module("pub fn f(a: f64, b: f64) -> f64 { minimum(a, b) * fma(a, b, a) }")
    text = get("arm64").preview(m.graph, m.provenance, "f")
    assert "fmin d" in text and "fmadd d" in text and "fminnm" not in text
