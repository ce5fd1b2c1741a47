"""The loop forms of language.md §6.9 — `for v in x` over a vector's elements, reversed and
stepped ranges — through every stage: the integers each range form walks (the interpreter
against Python's own `range`, at the types' extremes too), the same bits on the loop
program's interpreter and on every target that runs here, R0011 for a step that is not
positive, the checker's diagnostics, and the fingerprint rule (an element loop is its
index loop; a reversed or stepped range is a graph of its own)."""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp.api import run_function as reference
from kera_core.interp.values import DTYPES
from kera_core.ir.types import PRIMS
from kera_core.loops import lower_program
from kera_core.loops import run_function as run_loop_program
from kera_core.loops.target import CPU, GRID
from kera_core.opt import optimize
from kera_core.targets import run_module
from tests.outcomes import analyzed, outcome, runnable_target, same_as_reference

TARGETS = ["wasm", "x86_64", "arm64", "verilog"]

# (source form, what it walks given Python's range `r` of `lo..hi` or `lo..=hi`, and `k`)
FORMS = {
    "fwd": ("lo..hi", lambda r, k: r),
    "fwd_incl": ("lo..=hi", lambda r, k: r),
    "rev": ("(lo..hi).rev()", lambda r, k: r[::-1]),
    "rev_incl": ("(lo..=hi).rev()", lambda r, k: r[::-1]),
    "step": ("(lo..hi).step_by(k)", lambda r, k: r[::k]),
    "step_incl": ("(lo..=hi).step_by(k)", lambda r, k: r[::k]),
    "step_rev": ("(lo..hi).step_by(k).rev()", lambda r, k: r[::k][::-1]),
    "rev_step": ("(lo..=hi).rev().step_by(k)", lambda r, k: r[::-1][::k]),
    "rev_rev": ("(lo..hi).rev().rev()", lambda r, k: r),
    "step_step": ("(lo..hi).step_by(k).step_by(2)", lambda r, k: r[::k][::2]),
}
INCLUSIVE = {name for name, (src, _) in FORMS.items() if "..=" in src}
MASK = (1 << 64) - 1


def _walk_source(t: str) -> str:
    """One function per form: a wrapping polynomial hash of the integers in their order."""
    out = []
    for name, (form, _) in FORMS.items():
        out.append(
            f"pub fn {name}(lo: {t}, hi: {t}, k: {t}) -> i64 {{\n"
            "    let mut h = 0;\n"
            f"    for i in {form} {{\n"
            "        h = h * 1000003 + (i as i64) + 1;\n"
            "    }\n"
            "    h\n"
            "}\n"
        )
    return "\n".join(out)


def _expected(name: str, lo: int, hi: int, k: int) -> int:
    r = range(lo, hi + 1 if name in INCLUSIVE else hi)
    h = 0
    for i in FORMS[name][1](r, k):
        h = (h * 1000003 + (i & MASK) + 1) & MASK
    return h - (1 << 64) if h >> 63 else h


def _limits(t: str) -> tuple[int, int]:
    bits = PRIMS[t].bits
    if t.startswith("u"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _cases(t: str) -> list[tuple[int, int, int]]:
    """(lo, hi, k): empty, one element, odd and even lengths, a step past the end, both
    ends of the type."""
    small = [(0, 0, 1), (0, 1, 1), (0, 1, 5), (0, 7, 1), (0, 7, 2), (0, 7, 3), (3, 10, 4)]
    small += [(2, 9, 100), (5, 2, 1), (5, 4, 2), (4, 4, 3)]
    lo, hi = _limits(t)
    edge = [(hi - 5, hi, 1), (hi - 6, hi, 2), (lo, lo + 5, 2), (lo, lo + 4, 1)]
    if t.startswith("i"):
        small += [(-4, 4, 3), (-7, -1, 2)]
        edge += [(lo, hi, 1 << (PRIMS[t].bits - 2))]  # the whole type, a few big steps
    if PRIMS[t].bits <= 8:
        edge += [(lo, hi, 1), (lo, hi, 7)]  # every value of the type
    return small + edge


def _short(r: range) -> bool:
    try:
        return len(r) <= 1000
    except OverflowError:  # longer than sys.maxsize
        return False


TYPES = ["i64", "i32", "u8", "i8", "u64"]


@pytest.fixture(scope="module", params=TYPES)
def walks(request):
    t = request.param
    return t, analyzed(_walk_source(t))


def test_each_form_walks_the_integers_of_pythons_range(walks) -> None:
    """The interpreter is the definition: `(a..b).rev()` is `range(a, b)[::-1]`,
    `.step_by(k)` is `[::k]`, any chain of them composes, at every type's extremes."""
    t, m = walks
    dtype = DTYPES[t]
    for name in FORMS:
        for lo, hi, k in _cases(t):
            if not _short(FORMS[name][1](range(lo, hi + 1), k)):
                continue  # the whole type without a step: too long to interpret
            got = reference(m, name, {"lo": dtype(lo), "hi": dtype(hi), "k": dtype(k)})
            want = _expected(name, lo, hi, k)
            assert int(got.outputs[0].value) == want, (t, name, lo, hi, k)


def _agree_everywhere(m, name: str, inputs: dict, dims=None) -> str:
    """The loop program (both composite shapes, plain and optimized) and every target that
    runs here have the interpreter's outcome: the same result bytes or error code."""
    want = outcome(lambda: reference(m, name, inputs, dims))
    g = optimize(m.graph).graph
    positional = {f"arg{i}": v for i, v in enumerate(inputs.values())}  # no names in `g`
    for graph, src, given in ((m.graph, m, inputs), (g, g, positional)):
        for shape in (CPU, GRID):
            prog = lower_program(graph, name, shape)
            got = outcome(lambda: run_loop_program(src, name, given, dims, program=prog))  # noqa: B023
            assert got == want, (name, inputs, shape, graph is g)
    for tname in TARGETS:
        t = runnable_target(tname)
        same_as_reference(m, name, inputs, lambda t=t: run_module(t, m, name, inputs, dims), tname)
    return want


@pytest.mark.parametrize("t", ["i64", "u8", "i8", "u64"])
def test_every_target_walks_the_same_integers(t: str) -> None:
    m = analyzed(_walk_source(t))
    dtype = DTYPES[t]
    lo_t, hi_t = _limits(t)
    cases = [(0, 0, 1), (0, 1, 3), (0, 7, 2), (3, 10, 4), (2, 9, 100), (hi_t - 6, hi_t, 2)]
    cases += [(lo_t, lo_t + 4, 1)]
    for name in FORMS:
        for lo, hi, k in cases:
            inputs = {"lo": dtype(lo), "hi": dtype(hi), "k": dtype(k)}
            assert _agree_everywhere(m, name, inputs).startswith("ok"), (name, lo, hi, k)


def test_a_step_that_is_not_positive_is_R0011_everywhere() -> None:
    """Checked when the loop starts — before any iteration, so also for an empty range."""
    m = analyzed(_walk_source("i64"))
    for name in ("step", "step_rev", "rev_step", "step_step"):
        for lo, hi, k in ((0, 5, 0), (0, 5, -1), (3, 3, 0), (0, 5, -(1 << 63))):
            inputs = {"lo": np.int64(lo), "hi": np.int64(hi), "k": np.int64(k)}
            assert _agree_everywhere(m, name, inputs) == "error R0011", (name, lo, hi, k)
    u = analyzed(_walk_source("u8"))
    inputs = {"lo": np.uint8(0), "hi": np.uint8(5), "k": np.uint8(0)}
    assert _agree_everywhere(u, "step", inputs) == "error R0011"


ELEMENTS = """
pub fn weighted[N](x: &f32[N]) -> f32 {
    let mut s = 0.0f32;
    for v in x {
        s = s * 0.5 + v;
    }
    s
}

pub fn owned[N](x: &f64[N]) -> f64 {
    let y = x * 2.0;
    let mut s = 0.0;
    for v in y {
        s = s * 0.25 + v;
    }
    for v in &y {
        s -= v;
    }
    s + y[0]
}

pub fn expression[N](x: &i32[N], z: &i32[N]) -> i32 {
    let mut s = 0i32;
    for v in x * z + 1i32 {
        s = s * 3i32 + v;
    }
    s
}

pub fn exits[N](x: &i32[N]) -> i32 {
    let mut s = 0i32;
    for v in x {
        if v < 0i32 {
            continue;
        }
        if s > 100000i32 {
            break;
        }
        s = s * 2i32 + v;
    }
    s
}

pub fn nested[N](x: &f32[N], w: &mut f32[N]) {
    for i in (0..N).rev() {
        let mut acc = 0.0f32;
        for v in x {
            acc = acc * 0.5 + v;
        }
        w[i] = acc + w[i];
    }
    for i in (0..N).step_by(3) {
        w[i] = -w[i];
    }
}

pub fn fixed(x: &f32[5]) -> f32 {
    let mut s = 0.0f32;
    for v in x {
        s = s * 2.0 + v;
    }
    s
}

pub fn early[N](x: &f32[N]) -> f32 {
    for v in x {
        if v > 0.5 {
            return v;
        }
    }
    -1.0
}
"""


@pytest.mark.parametrize("n", [0, 1, 2, 5, 17])
def test_element_loops_agree_everywhere(n: int) -> None:
    m = analyzed(ELEMENTS)
    rng = np.random.default_rng(n)
    f32 = rng.standard_normal(n).astype(np.float32)
    f64 = rng.standard_normal(n)
    i32 = rng.integers(-50, 50, n).astype(np.int32)
    runs = {
        "weighted": {"x": f32},
        "owned": {"x": f64},
        "expression": {"x": i32, "z": i32[::-1].copy()},
        "exits": {"x": i32},
        "nested": {"x": f32, "w": f32[::-1].copy()},
        "early": {"x": f32},
    }
    for name, inputs in runs.items():
        want = _agree_everywhere(m, name, inputs)
        assert want.startswith("ok") or (name == "owned" and n == 0), (name, want)
    _agree_everywhere(m, "fixed", {"x": rng.standard_normal(5).astype(np.float32)})


def test_element_loop_values() -> None:
    """`for v in x` visits x[0], x[1], … in order: the interpreter's numbers."""
    m = analyzed(ELEMENTS)
    x = np.array([1.0, -2.0, 3.0, 0.75], dtype=np.float32)
    s = np.float32(0.0)
    for v in x:
        s = np.float32(s * np.float32(0.5) + v)
    assert reference(m, "weighted", {"x": x}).outputs[0].value == s
    w = np.zeros(4, dtype=np.float32)
    r = reference(m, "nested", {"x": x, "w": w}).outputs
    assert list(r[0].value) == [-s, s, s, -s]
    assert reference(m, "early", {"x": x}).outputs[0].value == np.float32(1.0)
    assert reference(m, "exits", {"x": np.array([3, -1, 4], np.int32)}).outputs[0].value == 10


# --- fingerprints ---------------------------------------------------------------------------


def _fingerprint(src: str, name: str = "f") -> str:
    m = analyzed(src)
    return m.graph.functions[name].hash.hex()


SAME_AS_INDEX_LOOP = [
    (
        "pub fn f[N](x: &f32[N]) -> f32 { let mut s = 0.0f32; for v in x { s += v * v; } s }",
        "pub fn f[N](x: &f32[N]) -> f32 {"
        " let mut s = 0.0f32; for i in 0..N { let v = x[i]; s += v * v; } s }",
    ),
    (
        "pub fn f[N](x: &f32[N]) -> f32 { let mut s = 0.0f32; for v in &x { s += v; } s }",
        "pub fn f[N](x: &f32[N]) -> f32 { let mut s = 0.0f32; for v in x { s += v; } s }",
    ),
    (
        "pub fn f(x: &i32[4]) -> i32 { let mut s = 0i32; for v in x { s = s * 2i32 + v; } s }",
        "pub fn f(x: &i32[4]) -> i32 {"
        " let mut s = 0i32; for i in 0..4 { let v = x[i]; s = s * 2i32 + v; } s }",
    ),
    (  # a body that may exit: the element is read under the body's guard, as the `let` is
        "pub fn f[N](x: &i32[N]) -> i32 { let mut s = 0i32;"
        " for v in x { if v < 0i32 { break; } s += v; } s }",
        "pub fn f[N](x: &i32[N]) -> i32 { let mut s = 0i32;"
        " for i in 0..N { let v = x[i]; if v < 0i32 { break; } s += v; } s }",
    ),
    (  # an expression: evaluated once, before the loop
        "pub fn f[N](x: &f64[N]) -> f64 { let mut s = 0.0; for v in x * 2.0 { s += v; } s }",
        "pub fn f[N](x: &f64[N]) -> f64 {"
        " let mut s = 0.0; let t = x * 2.0; for i in 0..N { let v = t[i]; s += v; } s }",
    ),
    (  # nested in another loop: the same captures
        "pub fn f[N](x: &f32[N], w: &mut f32[N]) {"
        " for j in 0..N { let mut a = 0.0f32; for v in x { a += v; } w[j] = a; } }",
        "pub fn f[N](x: &f32[N], w: &mut f32[N]) {"
        " for j in 0..N { let mut a = 0.0f32; for i in 0..N { let v = x[i]; a += v; } w[j] = a; } }",
    ),
]


@pytest.mark.parametrize(("sugar", "index_loop"), SAME_AS_INDEX_LOOP)
def test_an_element_loop_fingerprints_as_its_index_loop(sugar: str, index_loop: str) -> None:
    assert _fingerprint(sugar) == _fingerprint(index_loop)


def test_reversed_and_stepped_ranges_are_graphs_of_their_own() -> None:
    """`range_rev` / `range_step` nodes: not the forward loop, not each other, and the
    spelled-out index arithmetic is another graph again."""
    body = "{ let mut s = 0; for i in RANGE { s = s * 3 + i; } s }"
    ranges = [
        "0..n",
        "(0..n).rev()",
        "(0..n).step_by(2)",
        "(0..n).step_by(3)",
        "(0..n).step_by(2).rev()",
        "(0..n).rev().step_by(2)",
    ]
    prints = {_fingerprint(f"pub fn f(n: i64) -> i64 {body.replace('RANGE', r)}") for r in ranges}
    assert len(prints) == len(ranges)
    spelled = "pub fn f(n: i64) -> i64 { let mut s = 0; for j in 0..n { let i = n - 1 - j; s = s * 3 + i; } s }"
    assert _fingerprint(spelled) not in prints
    # formatting and names do not count
    again = "pub fn f(m: i64) -> i64 {\n    let mut t = 0;\n    for k in ( 0..m ).rev() {\n        t = t * 3 + k;\n    }\n    t\n}\n"
    assert _fingerprint(again) in prints


# --- the checker --------------------------------------------------------------------------

DIAGNOSTICS = [
    ("for v in &mut x { }", "K0112", "&mut x", "not in Kera"),
    ("for v in y2 { }", "K0112", "y2", "needs views"),
    ("for v in 3.0 { }", "K0301", "3.0", "a range `a..b` or a 1-D tensor"),
    ("for v in x.rev() { }", "K0112", "x.rev()", "only a range has `.rev()`"),
    ("for i in (0..N).step_by(0) { }", "K0307", "0", "must be positive, found 0"),
    ("for i in (0..N).step_by(-2) { }", "K0307", "-2", "found -2"),
    ("for i in (0..N).step_by(1, 2) { }", "K0303", "(0..N).step_by(1, 2)", "one argument"),
    ("for i in (0..N).step_by() { }", "K0303", "(0..N).step_by()", "one argument"),
    ("for i in (0..N).rev(1) { }", "K0303", "(0..N).rev(1)", "no arguments"),
    ("for i in (0..N).step_by(2i32) { }", "K0301", "(0..N).step_by(2i32)", "must be `i64`"),
    ("for i in (0..N).chunks(2) { }", "K0112", "(0..N).chunks(2)", "no function `chunks`"),
    ("for i in (0..N).sum() { }", "K0112", "(0..N).sum()", "call `sum((0..N))`"),
]


@pytest.mark.parametrize(("stmt", "code", "at", "message"), DIAGNOSTICS)
def test_one_diagnostic_per_unsupported_loop(stmt: str, code: str, at: str, message: str) -> None:
    src = f"pub fn f[N, M](x: &mut f32[N], y2: &f32[N, M]) {{\n    {stmt}\n}}\n"
    errors = [d for d in analyze(src).diagnostics if d.is_error]
    assert len(errors) == 1, [str(d) for d in errors]
    (d,) = errors
    assert d.code == code and message in d.message, d.message
    assert src[d.span.start : d.span.end] == at


OWNERSHIP = [
    ("let mut y = x * 1.0;\n    for v in y {\n        y[0] = v;\n    }", "K0403", "y[0] = v"),
    ("let mut y = x * 1.0;\n    for v in &y {\n        y = y * v;\n    }", "K0403", "y = y * v"),
    ("let y = x * 1.0;\n    for v in y {\n        let z = y;\n    }", "K0404", "y"),
    ("for v in &x {\n        x[0] = v;\n    }", "K0403", "x[0] = v"),
    ("let d = copy_to(x, device);\n    for v in &d { }", "K0406", "&d"),
]


@pytest.mark.parametrize(("body", "code", "at"), OWNERSHIP)
def test_the_iterated_tensor_is_borrowed_for_the_whole_loop(body: str, code: str, at: str) -> None:
    src = f"pub fn f[N](x: &mut f32[N]) ! transfer {{\n    {body}\n}}\n"
    errors = [d for d in analyze(src).diagnostics if d.is_error and d.code != "K0401"]
    assert [d.code for d in errors] == [code], [str(d) for d in errors]  # (K0401: moved twice)
    assert src[errors[0].span.start : errors[0].span.end] == at


def test_reading_and_writing_other_tensors_is_fine() -> None:
    src = (
        "pub fn f[N](x: &f32[N], w: &mut f32[N]) -> f32 {\n"
        "    let y = x * 1.0;\n"
        "    let mut s = 0.0f32;\n"
        "    for v in y {\n"
        "        w[0] = v + y[0];\n"
        "        s += sum(&y);\n"
        "    }\n"
        "    s + sum(y)\n"
        "}\n"
    )
    assert not [str(d) for d in analyze(src).diagnostics if d.is_error]


def test_the_example_loops() -> None:
    """examples/bits.kera: `fnv1a` over the elements, `interleaved_xor` stepped,
    `to_binary` reversed — the numbers Python gives."""
    from pathlib import Path

    m = analyzed((Path(__file__).resolve().parent.parent / "examples" / "bits.kera").read_text())
    for data in (b"", b"a", b"kera", b"stepped!x"):
        x = np.frombuffer(data, np.uint8)
        even = odd = 0
        for b in data[::2]:
            even ^= b
        for b in data[1::2]:
            odd ^= b
        assert reference(m, "interleaved_xor", {"bytes": x}).outputs[0].value == even << 8 | odd
    out = np.zeros(8, np.uint8)
    got = reference(m, "to_binary", {"x": np.uint64(0b1011_0010), "out": out}).outputs[0].value
    assert list(got) == [1, 0, 1, 1, 0, 0, 1, 0]


def test_the_hidden_index_is_never_suggested() -> None:
    src = "pub fn f[N](x: &f32[N]) -> f32 {\n    let mut s = 0.0f32;\n    for v in x {\n        s += j;\n    }\n    s\n}\n"
    (d,) = [d for d in analyze(src).diagnostics if d.is_error]
    assert d.code == "K0201" and "#" not in d.message, d.message


def test_reversed_and_stepped_loops_survive_a_keg_round_trip() -> None:
    """`range_rev` and `range_step` are opcodes like any other: the .keg reader verifies and
    keeps them, and the graph read back runs with the same result."""
    from kera_core.keg import read_keg, write_keg

    m = analyzed(_walk_source("i32") + ELEMENTS)
    data = write_keg(m.graph, m.provenance)
    k = read_keg(data)
    assert k.graph.fingerprint() == m.graph.fingerprint()
    assert write_keg(k.graph, k.provenance) == data
    inputs = {"lo": np.int32(-3), "hi": np.int32(11), "k": np.int32(4)}
    for name in FORMS:
        back = reference(k.graph, name, {f"arg{i}": v for i, v in enumerate(inputs.values())})
        assert back.digest() == reference(m, name, inputs).digest()


@pytest.mark.parametrize(
    ("rng", "step_can_fail"),
    [("(0..N).rev()", None), ("(0..N).step_by(2)", False), ("(0..=N - 1).step_by(k).rev()", True)],
)
def test_the_optimizer_knows_reversed_and_stepped_indices_are_in_bounds(rng, step_can_fail):
    """`x[i]` over a reversed or stepped `0..N` cannot fail (docs/optimizer.md): the loop's
    integers are among those of `0..N`; only a step that is not a positive constant can."""
    from kera_core.opt.facts import Analysis

    src = f"pub fn f[N](x: &f32[N], k: i64) -> f32 {{ let mut s = 0.0f32; for i in {rng} {{ s += x[i]; }} s }}"
    m = analyzed(src)
    an = Analysis(m.graph)
    fn = m.graph.functions["f"]
    scope = an.scope(fn.region)
    ops = {n.op: n for n in an.order(fn.region)}
    assert not scope.node_fallible(ops["for"])
    if step_can_fail is not None:
        assert scope.node_fallible(ops["range_step"]) is step_can_fail


def test_the_imperative_generator_draws_the_new_loop_forms() -> None:
    """Every target's generated-program agreement tests see these loops (guard against a
    generator that silently stopped drawing them); what it draws checks cleanly."""
    from hypothesis import HealthCheck, given, settings

    from tests.draws import assert_draws
    from tests.imperative_programs import imperative_program, render

    assert_draws(
        imperative_program(),
        render,
        (".rev()", ".step_by(", "for v", "loop {", "(match (", " => ", "true => ", "TAB["),
    )

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(imperative_program())
    def checks_cleanly(prog) -> None:
        src = render(prog)
        assert not analyze(src).has_errors, src

    checks_cleanly()
