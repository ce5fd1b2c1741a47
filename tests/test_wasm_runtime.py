"""The wasm host runtime: `WasmInstance`, the repeated-call API, against `run_wasm`.

One instance, its inputs written once, called again and again: every call must give the
interpreter's bytes and digest (the same `RunResult` as `run_wasm`), linear memory must
not grow from call to call (`kera_heap` is restored), and a trap or an exhausted fuel
budget must report the right code even after earlier successful calls, leaving the
instance usable.
"""

from __future__ import annotations

import io
import os

import numpy as np
import pytest

from kera_core.backends.wasm.runtime import WasmInstance, run_wasm
from kera_core.interp import InterpError, run_function
from kera_core.targets.wasm import TARGET
from tests.test_wasm import ROOT, example, module, outcome, seeded

SRC = """
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N { y[i] = a * x[i] + y[i]; }
}
pub fn scaled[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn softmax_of[N](x: &f32[N]) -> f32[N] { softmax(x) }
pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
pub fn flags[N](x: &i32[N]) -> bool[N] { x > 0 }
pub fn read[N](x: &f32[N], i: i64) -> f32 { x[i] }
pub fn quot[N](x: &i32[N], b: i32) -> i32 { sum(x) / b }
pub fn count(n: i64) -> i64 {
    let mut s: i64 = 0;
    for i in 0..n { s += i % 3; }
    s
}
"""

RNG = np.random.default_rng(7)
F = lambda *s: RNG.standard_normal(s).astype(np.float32)  # noqa: E731

CASES = {
    "saxpy": {"a": np.float32(1.5), "x": F(3000), "y": F(3000)},
    "scaled": {"a": np.float32(-0.5), "x": F(2049), "y": F(2049)},
    "total": {"x": F(5000)},
    "softmax_of": {"x": F(1500)},
    "mm": {"a": F(17, 9), "b": F(9, 13)},
    "flags": {"x": RNG.integers(-5, 5, 100).astype(np.int32)},
}


def instance(name: str, inputs: dict, **kw) -> tuple[WasmInstance, object]:
    m = module(SRC)
    art = TARGET.lower(m.graph, m.provenance, name)
    return WasmInstance(art.data, m.graph, name, inputs, provenance=m.provenance, **kw), m


def digest_of(r) -> tuple:
    return [(o.key, str(o.type), o.raw) for o in r.outputs], r.digest()


@pytest.mark.parametrize("name", sorted(CASES))
def test_repeated_calls_give_the_interpreters_bytes_and_memory_does_not_grow(name) -> None:
    inputs = CASES[name]
    inst, m = instance(name, inputs)
    ref = outcome(lambda: run_function(m, name, inputs))
    first = inst.call()
    assert digest_of(first) == ref
    size = inst.memory_bytes
    for k in range(50):
        if k % 7 == 3:
            assert inst.call(read=False) is None
            continue
        assert digest_of(inst.call()) == ref
    assert inst.memory_bytes == size
    # run_wasm is the one-call form of the same thing
    art = TARGET.lower(m.graph, m.provenance, name)
    once = run_wasm(art.data, m.graph, name, inputs, provenance=m.provenance)
    assert digest_of(once) == ref
    assert once.dims == first.dims and once.function == first.function


def test_outputs_do_not_alias_linear_memory() -> None:
    inputs = CASES["scaled"]
    inst, _ = instance("scaled", inputs)
    a = inst.call().outputs[0].value
    keep = a.copy()
    assert not np.shares_memory(a, inst._bytes())
    for _ in range(3):
        inst.call()
    assert np.array_equal(a, keep)
    a[:] = 0  # a result is the caller's to change
    assert np.array_equal(inst.call().outputs[0].value, keep)


def test_inputs_are_not_changed_and_nan_inputs_are_canonicalised() -> None:
    x = F(1024)
    bits = x.view(np.uint32)
    bits[5] = 0x7F800001  # a signalling NaN with a payload
    bits[9] = 0xFFC00123  # a negative quiet NaN with a payload
    before = x.copy()
    inputs = {"a": np.float32(2), "x": x, "y": F(1024)}
    inst, m = instance("scaled", inputs)
    ref = outcome(lambda: run_function(m, "scaled", inputs))
    assert digest_of(inst.call()) == ref
    assert np.array_equal(x.view(np.uint32), before.view(np.uint32))
    out = inst.call().outputs[0].value.view(np.uint32)
    assert out[5] == out[9] == 0x7FC00000


def test_inputs_of_other_dtypes_and_layouts_go_through_value_in() -> None:
    m = module(SRC)
    art = TARGET.lower(m.graph, m.provenance, "mm")
    a = np.asfortranarray(RNG.standard_normal((6, 4)))  # f64: refused, as by the interpreter
    with pytest.raises(InterpError) as e:
        run_wasm(art.data, m.graph, "mm", {"a": a, "b": F(4, 3)}, provenance=m.provenance)
    assert e.value.code == "R0005"
    a32 = np.asfortranarray(F(6, 4))  # not C-contiguous: copied in row-major order
    b16 = RNG.standard_normal((4, 3)).astype(np.float16)  # widened
    inputs = {"a": a32, "b": b16}
    ref = outcome(lambda: run_function(m, "mm", inputs))
    assert digest_of(run_wasm(art.data, m.graph, "mm", inputs, provenance=m.provenance)) == ref
    with pytest.raises(InterpError) as e:
        run_wasm(art.data, m.graph, "mm", {"a": F(6), "b": b16}, provenance=m.provenance)
    assert e.value.code == "R0005"


def test_traps_after_successful_calls_report_their_codes() -> None:
    inst, _ = instance("read", {"x": np.arange(4, dtype=np.float32), "i": 3})
    assert float(inst.call().outputs[0].value) == 3.0
    inst.set_input("i", 4)
    for _ in range(2):
        with pytest.raises(InterpError) as e:
            inst.call()
        assert e.value.code == "R0001"
    inst.set_input("i", 1)
    assert float(inst.call().outputs[0].value) == 1.0
    inst.set_input("x", np.array([5, 6, 7, 8], np.float32))
    assert float(inst.call().outputs[0].value) == 6.0

    q, _ = instance("quot", {"x": np.arange(5, dtype=np.int32), "b": 3})
    size = q.memory_bytes
    assert int(q.call().outputs[0].value) == 3
    q.set_input("b", 0)
    with pytest.raises(InterpError) as e:
        q.call()
    assert e.value.code == "R0002"
    q.set_input("b", 2)
    assert int(q.call().outputs[0].value) == 5
    assert q.memory_bytes == size


def test_set_input_checks_like_the_constructor() -> None:
    inst, _ = instance("read", {"x": np.arange(4, dtype=np.float32), "i": 0})
    with pytest.raises(InterpError) as e:
        inst.set_input("x", np.zeros(5, np.float32))  # would change N
    assert e.value.code == "R0003"
    with pytest.raises(InterpError) as e:
        inst.set_input("i", 1.5)
    assert e.value.code == "R0005"
    with pytest.raises(InterpError) as e:
        inst.set_input("nope", 1)
    assert e.value.code == "R0005"
    assert float(inst.call().outputs[0].value) == 0.0


def test_fuel_is_refilled_per_call_and_exhaustion_is_r0007() -> None:
    inst, m = instance("count", {"n": 1000}, fuel=200_000)
    for _ in range(20):  # 20 calls need more than one budget: each call is refuelled
        assert int(inst.call().outputs[0].value) == 999
    inst.set_input("n", 10**9)
    with pytest.raises(InterpError, match="out of fuel") as e:
        inst.call()
    assert e.value.code == "R0007"
    inst.set_input("n", 1000)
    assert int(inst.call().outputs[0].value) == 999
    art = TARGET.lower(m.graph, m.provenance, "count")
    with pytest.raises(InterpError) as e:
        run_wasm(art.data, m.graph, "count", {"n": 10**9}, provenance=m.provenance, fuel=10_000)
    assert e.value.code == "R0007"


def test_inputs_beyond_the_memory_limit_are_r0009() -> None:
    m = module(SRC)
    art = TARGET.lower(m.graph, m.provenance, "total")
    big = np.zeros(1 << 20, np.float32)  # 4 MiB against a 1 MiB limit
    with pytest.raises(InterpError) as e:
        run_wasm(
            art.data, m.graph, "total", {"x": big}, provenance=m.provenance, memory_limit=1 << 20
        )
    assert e.value.code == "R0009"


@pytest.mark.parametrize(
    ("path", "name"),
    [("particles.kera", "advance"), ("pid.kera", "pid_step"), ("transfer.kera", "maybe_print")],
)
def test_structs_and_printing_on_repeated_calls(path: str, name: str) -> None:
    m = example(os.path.join(ROOT, "examples", path))
    assert not TARGET.unsupported(m.graph, name)
    inputs, dims = seeded(m, name, 3, False)
    if name == "maybe_print":
        inputs["enabled"] = True
    ref = run_function(m, name, inputs, dims)
    art = TARGET.lower(m.graph, m.provenance, name)
    out = io.StringIO()
    inst = WasmInstance(art.data, m.graph, name, inputs, dims, provenance=m.provenance, stdout=out)
    size = inst.memory_bytes
    for _ in range(5):
        r = inst.call()
        assert digest_of(r) == digest_of(ref)
        assert r.printed == ref.printed
    assert out.getvalue() == ref.printed * 5
    assert inst.memory_bytes == size


def test_one_off_runs_share_a_pooled_instance_and_stay_exact() -> None:
    """`run_wasm` takes a pooled instance of the module and empties its heap afterwards:
    runs with other inputs and sizes, after a trap and after printing, give the
    interpreter's bytes, and the memory does not grow from run to run."""
    from kera_core.backends.wasm import runtime

    m = module(SRC)
    art = TARGET.lower(m.graph, m.provenance, "quot")
    sizes = []
    for k, (n, b) in enumerate([(300, 7), (5000, 0), (17, -3), (5000, 5), (5000, 0), (4, 1)]):
        x = RNG.integers(-9, 9, n).astype(np.int32)
        inputs = {"x": x, "b": np.int32(b)}
        got = outcome(lambda: run_wasm(art.data, m.graph, "quot", inputs, provenance=m.provenance))  # noqa: B023
        want = outcome(lambda: run_function(m, "quot", inputs))  # noqa: B023
        assert got == want, (k, n, b)
        pooled = [mm for mm in runtime._POOL.values() if mm.key[0] == runtime._module_key(art.data)]
        assert len(pooled) == 1
        sizes.append(pooled[0].mem.data_len(pooled[0].store))
    assert sizes[3:] == [sizes[3]] * 3  # the same pages, run after run
