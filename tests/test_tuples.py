"""Tuples and multiple return values (issue 15, item 3): the checker's rules and diagnostics,
what a tuple's type hashes to, and programs with tuple results, arguments, locals, patterns
and prints giving the interpreter's bits on the loop program and on every runnable target.

A tuple is the anonymous struct with fields `0`, `1`, … (ir/types.py `tuple_type`), so it
takes the struct path through the graph, the loop layer and every backend's ABI."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from kera_core.interp.api import run_function as reference
from kera_core.ir.types import F32, F64, I64, Prim, Struct, tuple_type
from kera_core.loops import lower_program, run_function
from kera_core.loops.target import CPU, GRID
from kera_core.targets import run_module
from tests import outcomes
from tests.outcomes import (
    analyzed,
    generated_inputs,
    outcome,
    runnable_target,
    same_as_reference,
    spanned,
)
from tests.tools import tool_missing

SRC = """\
struct P { x: f32, y: i32 }

fn kahan[N](x: &f32[N]) -> (f32, f32) {
    let mut s = 0.0f32;
    let mut c = 0.0f32;
    for i in 0..N {
        let y = x[i] - c;
        let t = s + y;
        c = (t - s) - y;
        s = t;
    }
    (s, c)
}

pub fn total[N](x: &f32[N]) -> (f32, f32) ! io {
    let (s, c) = kahan(x);
    print((s, c));
    print("\\n");
    (s - c, c)
}

pub fn mixed[N](x: &f64[N], q: (i32, bool)) -> ((f64, i64), (i32,), P) ! io {
    let (k, flag) = q;
    let (_, (m,)) = (sum(x), (max(x),));
    print((k, (flag,), P { x: 1.5, y: -2 }));
    print("\\n");
    let mut t = (m, 0);
    if flag {
        t.1 = k as i64 * 3;
    }
    (t, (k + 1,), P { x: 0.25, y: k })
}

pub fn update(t: (f32, (i64, f32))) -> (f32, (i64, f32)) {
    let mut u = t;
    u.0 += 1.0;
    u.1 = ((u.1).0 * 2, -(t.1).1);
    let (mut a, (b, c)) = u;
    a = a * c;
    (a, (b - 1, c))
}

pub fn single(a: f32) -> (f32,) {
    let (b,) = (a * 2.0,);
    (b,)
}

pub fn early[N](x: &f32[N]) -> (f32, i64) {
    for i in 0..N {
        if x[i] > 0.5 {
            return (x[i], i);
        }
    }
    (0.0, -1)
}

pub fn carried[N](x: &f32[N]) -> (f32, f32) {
    let mut t = (0.0f32, -1.0f32);
    for i in 0..N {
        t = (t.0 + x[i], maximum(t.1, x[i]));
    }
    t
}

pub fn swapped(a: i32, b: i32) -> (i32, i32) {
    let (mut p, mut q) = (a, b);
    let r = p;
    p = q;
    q = r;
    (p, q)
}
"""

FNS = ("total", "mixed", "update", "single", "early", "carried", "swapped")
CALL_FREE = ("update", "single", "early", "carried", "swapped")  # what verilog runs


@pytest.fixture(scope="module")
def m():
    return analyzed(SRC)


CASES = [(n, seed, adv) for n in (0, 1, 5, 17) for seed, adv in ((1, False), (2, True))]


# --- the checker ------------------------------------------------------------------------------


def errors(src: str) -> list[tuple[str, str, str]]:
    return [(d.code, spanned(src, d.span), d.message) for d in outcomes.errors(src)]


@pytest.mark.parametrize(
    ("body", "code", "at", "message"),
    [
        (
            "let (a, b, c) = pair(); a",
            "K0320",
            "(a, b, c)",
            "3 elements, but the value is a tuple of 2",
        ),
        ("let (a,) = pair(); a", "K0320", "(a,)", "1 element, but the value is a tuple of 2"),
        ("let (a, b) = 1.0f32; a", "K0320", "(a, b)", "the value is `f32`"),
        (
            "let t = pair(); t.2",
            "K0204",
            "2",
            "`(f32, f32)` has no field `2`: its 2 elements are `.0`, `.1`",
        ),
        ("let t = pair(); t.x", "K0204", "x", "has no field `x`"),
        (
            "let t: (f32, i32) = pair(); t.0",
            "K0301",
            "pair()",
            "expected `(f32, i32)`, found `(f32, f32)`",
        ),
        ("let (k, k) = pair(); k", "K0202", "k", "`k` is bound twice"),
        ("let (a, b) = pair(); a = b; a", "K0405", "a", "immutable"),
        ("let t = (1.0f32, ()); 1.0", "K0301", "()", "a tuple holds numbers"),
        ("let t = pair(); t.0.1", "K0100", "0.1", "write `(t.0).1`"),
    ],
)
def test_checker_diagnostics(body: str, code: str, at: str, message: str) -> None:
    src = f"fn pair() -> (f32, f32) {{ (1.0, 2.0) }}\npub fn f() -> f32 {{ {body} }}\n"
    got = errors(src)
    assert len(got) == 1, got
    assert got[0][0] == code and got[0][1] == at and message in got[0][2], got


def test_a_tuple_holds_host_tensors_but_no_borrows() -> None:
    """Tensors in tuples: tests/test_struct_tensors.py. A borrow is no element, and a
    tensor in another memory space travels on its own."""
    src = "pub fn f[N](x: &f32[N]) -> (f32[N], f32) { (x, 1.0) }\n"
    ((code, at, message),) = errors(src)
    assert code == "K0301" and at == "x" and "not `&f32[N]`" in message, message
    src = "pub fn f[N](x: f32[N] @device) -> (f32[N] @device, f32) { (x, 1.0) }\n"
    ((code, at, message),) = errors(src)
    assert code == "K0323" and at == "f32[N] @device" and "host memory" in message, message


def test_expected_types_reach_the_elements_and_parentheses_are_not_tuples() -> None:
    src = (
        "pub fn f(a: (f32)) -> (f32, u8) {\n"
        "    let (b) = a;\n"
        "    let () = ();\n"
        "    let t: (f32, u8) = (b, 2);\n"
        "    t\n"
        "}\n"
    )
    ft = analyzed(src).graph.functions["f"].type
    assert ft.params == (F32,)
    assert ft.result == tuple_type((F32, Prim("u8"))) and str(ft.result) == "(f32, u8)"


def test_a_tuple_of_copy_values_is_copied_and_patterns_shadow() -> None:
    src = (
        "pub fn f[N](x: f32[N]) -> f32 {\n"
        "    let t = (1.0f32, 2);\n"
        "    let u = t;\n"
        "    let y = x;\n"
        "    let (x, _) = u;\n"  # a scalar `x` shadows the moved tensor
        "    t.0 + u.0 + x + sum(&y)\n"
        "}\n"
    )
    assert errors(src) == []


# --- the type and the fingerprint -------------------------------------------------------------


def test_a_tuple_type_is_structural() -> None:
    a, b = tuple_type((F32, I64)), tuple_type((F32, I64))
    assert a == b and a.hash == b.hash and a.is_tuple
    assert tuple_type((F32, F64)).hash != a.hash
    assert tuple_type((F32,)).hash != F32.hash
    assert str(tuple_type((F32, tuple_type((I64,))))) == "(f32, (i64,))"
    named = Struct("T", (("0", F32), ("1", I64)))  # a declared struct is never a tuple
    assert named.hash != a.hash and not named.is_tuple


def fingerprint(src: str) -> bytes:
    return analyzed(src).graph.fingerprint()


def test_fingerprint_ignores_the_names_a_pattern_binds() -> None:
    base = fingerprint(SRC)
    renamed = SRC.replace("let (s, c) = kahan(x);", "let (sum1, comp) = kahan(x);").replace(
        'print((s, c));\n    print("\\n");\n    (s - c, c)',
        'print((sum1, comp));\n    print("\\n");\n    (sum1 - comp, comp)',
    )
    renamed = renamed.replace(
        "let (mut a, (b, c)) = u;\n    a = a * c;\n    (a, (b - 1, c))",
        "let (mut p, (q, r)) = u;\n    p = p * r;\n    (p, (q - 1, r))",
    )
    assert renamed != SRC
    assert fingerprint(renamed) == base
    changed = SRC.replace("pub fn single(a: f32) -> (f32,)", "pub fn single(a: f32) -> (f32,)\n")
    assert fingerprint(changed) == base  # layout
    widened = SRC.replace("let mut t = (0.0f32, -1.0f32);", "let mut t = (0.0f32, -2.0f32);")
    assert fingerprint(widened) != base


# --- running: the interpreter, the loop program and every target ------------------------------


def test_print_writes_tuples_as_rust_debug_does(m) -> None:
    x = np.array([1.0, 2.0], np.float32)
    assert reference(m, "total", {"x": x}).printed == "(3.0, 0.0)\n"
    q = {"0": np.int32(5), "1": np.bool_(True)}
    got = reference(m, "mixed", {"x": np.array([0.5], np.float64), "q": q})
    assert got.printed == "(5, (true,), {1.5, -2})\n"
    r = got["result"]  # outputs are dicts by field name, `0`, `1`, … for a tuple
    assert (r["0"]["0"], r["0"]["1"], r["1"]["0"]) == (0.5, 15, 6)
    assert (r["2"]["x"], r["2"]["y"]) == (0.25, 5)


def test_the_loop_program_gives_the_interpreters_bits(m) -> None:
    for fn in FNS:
        progs = {t: lower_program(m.graph, fn, t) for t in (CPU, GRID)}
        for n, seed, adv in CASES:
            a = generated_inputs(m, fn, n, seed, adv)
            want = outcome(lambda: reference(m, fn, a))  # noqa: B023
            assert want.startswith("ok ") or (n == 0 and want == "error R0004"), (fn, n, want)
            for t, prog in progs.items():
                got = outcome(lambda: run_function(m, fn, a, program=prog))  # noqa: B023
                assert got == want, (fn, n, seed, adv, t)


def _target(tname: str, m, fns) -> None:
    t = runnable_target(tname)
    for fn in fns:
        assert not t.unsupported(m.graph, fn), (tname, fn, t.unsupported(m.graph, fn))
        for n, seed, adv in CASES:
            a = generated_inputs(m, fn, n, seed, adv)
            same_as_reference(m, fn, a, lambda: run_module(t, m, fn, a), tname, fn, n, seed)  # noqa: B023


def test_wasm_gives_the_interpreters_bits(m) -> None:
    _target("wasm", m, FNS)


def test_x86_64_gives_the_interpreters_bits(m) -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    _target("x86_64", m, FNS)


def test_arm64_gives_the_interpreters_bits(m) -> None:
    _target("arm64", m, FNS)


def test_verilog_gives_the_interpreters_bits(m) -> None:
    t = runnable_target("verilog")
    for fn in CALL_FREE:
        assert not t.unsupported(m.graph, fn), (fn, t.unsupported(m.graph, fn))
        a = generated_inputs(m, fn, 3, 1)
        same_as_reference(m, fn, a, lambda: run_module(t, m, fn, a), "verilog", fn)  # noqa: B023


def test_ptx_assembles_with_ptxas(m) -> None:
    """The GPU target compiles tuple results, arguments and patterns (it runs them where a
    CUDA device is, through `kera run --target ptx`; here ptxas checks the assembly)."""
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    texts = []
    for fn in FNS:
        assert not P.unsupported(m.graph, fn), (fn, P.unsupported(m.graph, fn))
        texts.append(P.compiled(m.graph, fn).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)
