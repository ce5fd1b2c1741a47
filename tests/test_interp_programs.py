"""The evaluator on whole programs: control flow, structs, effects, ownership, errors."""

from __future__ import annotations

import io

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import InputError, InterpError, run_function
from kera_core.interp.machine import Machine
from kera_core.interp.printing import format_float
from kera_core.interp.values import TOKEN
from kera_core.sema.literals import unescape

SRC = """
pub struct V { pub x: f32, pub y: f32 }
pub struct P { pub pos: V, pub id: i32 }

pub fn captured_copy[N](x: &f32[N]) -> f32 {
    let mut s: f32 = 0.0;
    for i in 0..N {
        let mut t: f32[N] = zeros();
        t = t + x;
        t[0] = 100.0;
        s += t[0] + t[N - 1];
    }
    s
}
pub fn alias_select[N](x: &f32[N], c: bool) -> f32[N] {
    let mut a: f32[N] = zeros();
    a = a + x;
    let mut b = if c { a } else { zeros() };
    b[0] = 7.0;
    b
}
pub fn keep_old[N](x: &f32[N]) -> f32 {
    let mut a: f32[N] = zeros();
    a = a + x;
    let before = sum(&a);
    a[0] = 1000.0;
    before + sum(&a)
}
pub fn fill[N](z: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = i as f32; }
    y
}
pub fn bump[N](y: &mut f32[N], k: i64) {
    y[k] += 1.0;
}
pub fn twice[N](y: &mut f32[N]) {
    bump(&mut y, 0);
    bump(&mut y, 0);
}
pub fn early(x: i64) -> i64 {
    let mut i = 0;
    let mut acc = 0;
    while true {
        i += 1;
        if i > x { break; }
        if i % 2 == 0 { continue; }
        acc += i;
    }
    acc
}
pub fn ret_in_loop[N](x: &f32[N]) -> i64 {
    for i in 0..N {
        if x[i] < 0.0 { return i; }
    }
    -1
}
pub fn guarded_read[N](x: &f32[N], i: i64) -> f32 {
    if i < N && x[i] > 0.0 { x[i] } else { 0.0 }
}
pub fn read(x: &f32[3], i: i64) -> f32 { x[i] }
pub fn grid(a: f32, b: f32) -> f32[2, 2] { [[a, b], [b, a]] }
pub fn incl(n: u8) -> u64 {
    let mut c: u64 = 0;
    for k in 250u8..=n { c += 1; }
    c
}
pub fn forever() -> i64 {
    let mut i = 0;
    while i >= 0 { i = (i + 1) % 10; }
    i
}
pub fn swap(p: P) -> P {
    let mut q = p;
    q.pos = V { x: p.pos.y, y: p.pos.x };
    q.id += 1;
    q
}
pub fn talk(x: f32, v: &f32[3] @host) -> f32 ! io {
    print("x = ");
    print(x);
    print("\\tv = ");
    print(v);
    print("\\n\\u{3A3}\\\\\\"");
    x
}
pub fn transfer_back[N](x: f32[N] @host) -> f32[N] @host ! transfer {
    let d = move_to(x, device);
    copy_to(&d, host)
}
"""

_M = None


def module():
    global _M
    if _M is None:
        a = analyze(SRC)
        assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
        _M = a.module
    return _M


X = np.array([1, 2, 3, 4], np.float32)


def run(fn, inputs, **kw):
    return run_function(module(), fn, inputs, **kw)


def test_values_are_values_even_when_updated_in_place():
    assert run("captured_copy", {"x": X})["result"] == 4 * (100 + 4)
    assert run("alias_select", {"x": X, "c": True})["result"].tolist() == [7, 2, 3, 4]
    assert run("alias_select", {"x": X, "c": False})["result"].tolist() == [7, 0, 0, 0]
    assert run("keep_old", {"x": X})["result"] == 10 + 1009


def test_inputs_are_never_modified():
    y = X.copy()
    r = run("twice", {"y": y})
    assert r["y"].tolist() == [3, 2, 3, 4]
    assert y.tolist() == [1, 2, 3, 4]


def test_filling_a_loop_updates_in_place():
    m = module()
    fn = m.graph.functions["fill"]
    machine = Machine(m.graph)
    with np.errstate(all="ignore"):
        (y,) = machine.call(fn, [np.zeros(1000, np.float32)])
    assert y.tolist() == list(range(1000))
    assert machine.copies == 0
    assert machine.held == {}


def test_loops_break_continue_return():
    assert run("early", {"x": 10})["result"] == 1 + 3 + 5 + 7 + 9
    assert run("ret_in_loop", {"x": np.array([1, 2, -3, -4], np.float32)})["result"] == 2
    assert run("ret_in_loop", {"x": X})["result"] == -1
    assert run("incl", {"n": np.uint8(255)})["result"] == 6  # 250..=255, no wrap-around
    assert run("incl", {"n": np.uint8(10)})["result"] == 0


def test_short_circuit_guards_a_read():
    assert run("guarded_read", {"x": X, "i": 10})["result"] == 0.0
    assert run("guarded_read", {"x": X, "i": 2})["result"] == 3.0


@pytest.mark.parametrize("i", [-1, 3, 2**40])
def test_out_of_bounds_is_a_checked_error(i):
    with pytest.raises(InterpError) as e:
        run("read", {"x": np.zeros(3, np.float32), "i": i})
    assert e.value.code == "R0001"
    assert e.value.node is not None


def test_nested_arrays():
    assert run("grid", {"a": 1.0, "b": 2.0})["result"].tolist() == [[1, 2], [2, 1]]


def test_structs_in_and_out():
    p = {"pos": {"x": 1.0, "y": 2.0}, "id": 41}
    r = run("swap", {"p": p})["result"]
    assert r["pos"]["x"] == 2.0 and r["pos"]["y"] == 1.0 and r["id"] == 42
    with pytest.raises(InputError):
        run("swap", {"p": {"pos": {"x": 1.0}, "id": 1}})


def test_print_format_and_escapes():
    buf = io.StringIO()
    r = run(
        "talk", {"x": np.float32(0.1), "v": np.array([1, -0.0, np.inf], np.float32)}, stdout=buf
    )
    want = 'x = 0.1\tv = [1.0, -0.0, inf]\n\u03a3\\"'
    assert buf.getvalue() == want
    assert r.printed == want and r.has_io
    assert r["result"] == np.float32(0.1)


def test_transfers_keep_the_bits():
    r = run("transfer_back", {"x": X})
    assert r["result"].tolist() == X.tolist()
    assert str(r.outputs[0].type) == "f32[4]"


def test_step_limit():
    with pytest.raises(InterpError) as e:
        run("forever", {}, max_steps=1000)
    assert e.value.code == "R0007"


def test_bad_arguments():
    with pytest.raises(InputError) as e:
        run("read", {"x": np.zeros(4, np.float32), "i": 0})
    assert e.value.code == "R0003"
    with pytest.raises(InputError):
        run("read", {"x": np.zeros(3, np.float64), "i": 0})  # would round silently
    with pytest.raises(InputError):
        run("read", {"x": np.zeros(3, np.float32)})
    with pytest.raises(InputError):
        run("read", {"x": np.zeros(3, np.float32), "i": 0, "j": 1})
    with pytest.raises(InputError):
        run("incl", {"n": 256})
    with pytest.raises(InputError) as e:
        run("nope", {})
    assert "exported functions" in e.value.message
    with pytest.raises(InputError):
        run("captured_copy", {"x": X[None, :]})


def test_dims_conflict_between_inputs():
    src = "pub fn f[N](a: &f32[N], b: &f32[N]) -> f32 { dot(a, b) }"
    m = analyze(src).module
    with pytest.raises(InputError) as e:
        run_function(m, "f", {"a": np.zeros(3, np.float32), "b": np.zeros(4, np.float32)})
    assert e.value.code == "R0003"
    with pytest.raises(InputError):
        run_function(m, "f", {"a": X, "b": X}, {"N": 5})


def test_empty_tensors():
    src = """
    pub fn s[N](x: &f32[N]) -> f32 { sum(x) }
    pub fn m[N](x: &f32[N]) -> f32 { max(x) }
    pub fn a[N](x: &f32[N]) -> f32 { mean(x) }
    """
    m = analyze(src).module
    e0 = np.zeros(0, np.float32)
    assert run_function(m, "s", {"x": e0})["result"] == 0.0
    assert np.isnan(run_function(m, "a", {"x": e0})["result"])
    with pytest.raises(InterpError) as e:
        run_function(m, "m", {"x": e0})
    assert e.value.code == "R0004"


def test_machine_runs_a_graph_without_provenance():
    g = module().graph
    r = run_function(g, "read", {"arg0": np.arange(3, dtype=np.float32), "arg1": 2})
    assert r["result"] == 2.0
    assert TOKEN is not None


def test_print_helpers():
    assert unescape(r"a\tb\n\u{1F600}\0\\") == "a\tb\n\U0001f600\0\\"
    assert format_float(np.float32(1e-45)) == "1e-45"
    assert format_float(np.float32(16777216.0)) == "16777216.0"
    assert format_float(np.float64(1e16)) == "1e+16"
    assert format_float(np.float32(np.nan)) == "NaN"
    for v in (0.1, 1.5e-5, 123456.789, 1e-4, 9.999e15, 2.0**-1074, 1.7976931348623157e308):
        assert format_float(np.float64(v)) == repr(v)
