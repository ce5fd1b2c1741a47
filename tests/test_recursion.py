"""Recursion (issue 15): a recursive component is hashed as one unit (docs/graph.md
"Recursion"), so renaming or reordering its members changes no hash; recursive programs
give the same raw bytes on every runnable target, and a call past the depth limit is R0012
everywhere (docs/semantics.md §9); ptx and verilog refuse recursion at compile time."""

from __future__ import annotations

import pytest

from kera_core.analysis import analyze
from kera_core.interp.api import run_function
from kera_core.ir.cycles import RECURSION_LIMIT
from kera_core.ir.node import Function
from kera_core.ir.verify import verify
from kera_core.keg.errors import KegError
from kera_core.keg.reader import read_keg
from kera_core.keg.writer import write_keg
from kera_core.loops.run import run_function as loops_run
from tests.outcomes import analyzed, outcome, runnable_target, same_as_reference

PROGRAM = """
pub fn fact(n: i64) -> i64 {
    if n <= 1 {
        return 1;
    }
    n * fact(n - 1)
}

pub fn fib(n: i64) -> i64 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

fn is_even(n: i64) -> bool {
    if n == 0 {
        return true;
    }
    is_odd(n - 1)
}

fn is_odd(n: i64) -> bool {
    if n == 0 {
        return false;
    }
    is_even(n - 1)
}

pub fn parity(n: i64) -> bool {
    is_even(n)
}

pub fn ack(m: i64, n: i64) -> i64 {
    if m == 0 {
        return n + 1;
    }
    if n == 0 {
        return ack(m - 1, 1);
    }
    ack(m - 1, ack(m, n - 1))
}

fn range_sum[N](x: &f32[N], lo: i64, hi: i64) -> f32 {
    if hi - lo <= 2 {
        let mut s = 0.0;
        for i in lo..hi {
            s = s + x[i];
        }
        return s;
    }
    let mid = lo + (hi - lo) / 2;
    range_sum(x, lo, mid) + range_sum(x, mid, hi)
}

pub fn tree_sum[N](x: f32[N]) -> f32 {
    range_sum(&x, 0, N)
}

fn fill(v: &mut f32[4], k: i64) {
    if k < 4 {
        v[k] = k as f32 * 1.5;
        fill(v, k + 1);
    }
}

pub fn filled() -> f32[4] {
    let mut v = [0.0f32, 0.0, 0.0, 0.0];
    fill(&mut v, 0);
    v
}

fn doubled[N](x: f32[N], k: i64) -> f32[N] {
    if k == 0 {
        return x;
    }
    doubled(x * 2.0, k - 1)
}

pub fn scaled[N](x: f32[N]) -> f32[N] {
    doubled(x, 3)
}
"""

XS = [float(i) * 0.1 - 1.3 for i in range(37)]
CASES = [
    ("fact", {"n": 20}),
    ("fact", {"n": -3}),
    ("fib", {"n": 12}),
    ("parity", {"n": 7}),
    ("parity", {"n": RECURSION_LIMIT - 1}),  # the deepest chain that fits
    ("parity", {"n": RECURSION_LIMIT}),  # one call too many: R0012
    ("ack", {"m": 2, "n": 3}),
    ("ack", {"m": 1, "n": 1100}),  # Ackermann nests n calls deep: R0012
    ("tree_sum", {"x": XS}),
    ("tree_sum", {"x": []}),
    ("filled", {}),
    ("scaled", {"x": [1.0, -2.5, 3.25]}),
]


def _fingerprints(src: str) -> dict[str, bytes]:
    return {f.name: f.hash for f in analyzed(src).graph.functions.values()}


def test_recursive_functions_check_and_verify() -> None:
    m = analyzed(PROGRAM)
    assert verify(m.graph) == []
    members = {f.name for f in m.graph.functions.values() if f.component is not None}
    assert members == {"fact", "fib", "is_even", "is_odd", "ack", "range_sum", "fill", "doubled"}
    even, odd = m.graph.functions["is_even"], m.graph.functions["is_odd"]
    assert even.component == odd.component and {even.index, odd.index} == {0, 1}


def test_renaming_a_member_of_a_cycle_changes_no_hash() -> None:
    renamed = PROGRAM.replace("is_odd", "odd_one").replace("is_even", "even_one")
    before, after = _fingerprints(PROGRAM), _fingerprints(renamed)
    assert after["odd_one"] == before["is_odd"]
    assert after["even_one"] == before["is_even"]
    assert after["parity"] == before["parity"]
    assert analyzed(renamed).graph.fingerprint() == analyzed(PROGRAM).graph.fingerprint()


def test_reordering_functions_changes_no_hash() -> None:
    parts = PROGRAM.strip().split("\n\n")
    shuffled = "\n\n".join(reversed(parts))
    assert _fingerprints(shuffled) == _fingerprints(PROGRAM)


def test_a_body_change_inside_a_cycle_moves_every_member_hash() -> None:
    changed = PROGRAM.replace("return false;", "return n == 0;")
    before, after = _fingerprints(PROGRAM), _fingerprints(changed)
    assert after["is_odd"] != before["is_odd"]
    assert after["is_even"] != before["is_even"]  # one component: hashed together
    assert after["fact"] == before["fact"]


def test_keg_round_trips_and_verifies_components() -> None:
    m = analyzed(PROGRAM)
    data = write_keg(m.graph, m.provenance)
    back = read_keg(data).graph
    assert {n: f.hash for n, f in back.functions.items()} == _fingerprints(PROGRAM)
    assert write_keg(back, read_keg(data).provenance) == data
    # members numbered the other way round no longer hash to their component
    g = read_keg(data).graph
    for name in ("is_even", "is_odd"):
        f = g.functions[name]
        g.functions[name] = Function(
            f.name, f.type, f.region, f.exported, f.outputs, f.component, 1 - f.index
        )
    assert any(v.kind == "component" for v in verify(g)), verify(g)
    with pytest.raises(KegError, match="does not hash to its members"):
        read_keg(write_keg(g))


@pytest.mark.parametrize(("fn", "inputs"), CASES, ids=lambda c: str(c))
def test_reference_and_loop_program_agree(fn: str, inputs: dict) -> None:
    m = analyzed(PROGRAM)
    want = outcome(lambda: run_function(m, fn, inputs))
    assert outcome(lambda: loops_run(m, fn, inputs)) == want


def test_the_depth_limit_is_r0012() -> None:
    m = analyzed(PROGRAM)
    assert outcome(lambda: run_function(m, "parity", {"n": RECURSION_LIMIT})) == "error R0012"
    assert outcome(lambda: run_function(m, "ack", {"m": 1, "n": 1100})) == "error R0012"
    assert outcome(lambda: run_function(m, "parity", {"n": RECURSION_LIMIT - 1})).startswith("ok")
    assert run_function(m, "fact", {"n": 10}).outputs[0].value == 3628800
    assert bool(run_function(m, "parity", {"n": 7}).outputs[0].value) is False


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64"])
def test_every_runnable_target_gives_the_reference_bytes(tname: str) -> None:
    target = runnable_target(tname)
    m = analyzed(PROGRAM)
    arts = {}
    for fn, inputs in CASES:
        assert not target.unsupported(m.graph, fn), target.unsupported(m.graph, fn)
        if fn not in arts:
            arts[fn] = target.lower(m.graph, m.provenance, fn)
        same_as_reference(
            m,
            fn,
            inputs,
            lambda: target.run(arts[fn], m.graph, fn, inputs, provenance=m.provenance),  # noqa: B023
            tname,
        )


@pytest.mark.parametrize("tname", ["ptx", "verilog"])
def test_targets_without_a_call_stack_refuse_recursion(tname: str) -> None:
    from kera_core.targets import get

    m = analyzed(PROGRAM)
    why = get(tname).unsupported(m.graph, "filled")
    assert why and "recursive function `fill`" in why[0] and tname in why[0], why


def test_recursion_through_a_generic_function_is_k0322() -> None:
    a = analyze("pub fn f<T: Float>(x: T, n: i64) -> T { if n > 0 { f(x, n - 1) } else { x } }")
    assert [d.code for d in a.diagnostics if d.is_error] == ["K0322"]


def test_equal_recursive_functions_are_one_member_under_two_names() -> None:
    src = (
        "fn r(d: i64) -> i64 { if d <= 0 { return 0; } 1 + r(d - 1) }\n"
        "fn s(d: i64) -> i64 { if d <= 0 { return 0; } 1 + s(d - 1) }\n"
        "pub fn both(d: i64) -> i64 { r(d) + s(d) }\n"
    )
    m = analyzed(src)
    assert m.graph.functions["r"].hash == m.graph.functions["s"].hash
    assert verify(m.graph) == []
    assert read_keg(write_keg(m.graph)).graph.fingerprint() == m.graph.fingerprint()
    assert outcome(lambda: run_function(m, "both", {"d": 5})) == outcome(
        lambda: loops_run(m, "both", {"d": 5})
    )


def test_native_targets_refuse_frames_the_depth_limit_would_overflow() -> None:
    """1024 nested calls of a function with 500 values live across its recursive call need
    more native stack than a run has: x86-64 refuses it when compiling (never a crash)."""
    from kera_core.targets import get

    k = 500
    body = "".join(f"    let v{i} = a * {i}.5 + {i}.25;\n" for i in range(k))
    src = (
        "fn big(a: f64, d: i64) -> f64 {\n    if d <= 0 {\n        return a;\n    }\n"
        + body
        + "    let s = 0.0"
        + "".join(f" + v{i}" for i in range(k))
        + ";\n    let r = big(s * 0.001, d - 1);\n    r"
        + "".join(f" * v{i}" for i in range(k))
        + "\n}\npub fn go(a: f64, d: i64) -> f64 { big(a, d) }\n"
    )
    m = analyzed(src)
    why = get("x86_64").unsupported(m.graph, "go")
    assert why and why[0].startswith("recursion: 1024 nested calls"), why


def test_edits_next_to_and_inside_a_cycle_match_a_cold_analysis() -> None:
    """An edit in a caller of a recursive function takes the one-function path; an edit
    inside a member lowers its component again, as one unit (sema/incremental.py), not the
    file; both equal a cold analysis, graph included."""
    from kera_core.source import Span
    from kera_core.workspace import Document

    doc = Document("file:///rec.kera", PROGRAM, 1)
    doc.analysis()
    for version, (needle, new) in enumerate(
        [("is_even(n)\n", "is_even(n + 2)\n"), ("return false;", "return n != 0;")], start=2
    ):
        start = doc.text.index(needle)
        doc.edit(Span(start, start + len(needle)), new)
        doc.version = version
        a, cold = doc.analysis(), analyze(doc.text)
        assert a.diagnostics == cold.diagnostics
        assert a.module.graph.fingerprint() == cold.module.graph.fingerprint()
        assert {n: f.hash for n, f in a.module.graph.functions.items()} == {
            n: f.hash for n, f in cold.module.graph.functions.items()
        }
    assert doc.lowerings == {"function": 2, "module": 1}
