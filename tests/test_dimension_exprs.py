"""Dimension expressions in types (docs/language.md §7.5): `f32[N + 1]`, `f32[2 * N]`,
`f32[N / 2]`, `N - 1`, constants as dimensions.

* one normal form: `N + 1` and `1 + N` are one type, with one encoding and one hash, and a
  `.keg` accepts only the normal form;
* the checker: mismatched forms, divisions that never divide, affine rules, binding at a
  call (solving `N + 1 = M`), dimensions no call can bind;
* run time: the interpreter, the loop program and every runnable target agree bit for bit,
  errors (R0003) included, at sizes 0, 1, odd and large;
* the front ends: hover spells `f32[N + 1]`, the formatter spaces it, `kera run` solves
  `--dims` and generates inputs of shape `N + 1`.
"""

from __future__ import annotations

import platform
from types import SimpleNamespace

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp.api import run_function as reference
from kera_core.ir.encoding import Writer
from kera_core.ir.types import (
    F32,
    DimError,
    DimExpr,
    Sym,
    Tensor,
    dim_add,
    dim_affine,
    dim_scale,
    dim_subst,
    dim_value,
)
from kera_core.loops import run_function as loop_run
from kera_core.targets import get, run_module
from tests.outcomes import analyzed, outcome, runnable_target, same_as_reference
from tests.tools import tool_missing

N, M = Sym(0), Sym(1)

# --- the normal form ----------------------------------------------------------------------


def test_one_normal_form_one_hash() -> None:
    a, b = dim_add(N, 1), dim_add(1, N)
    assert a == b == DimExpr(((0, 1),), 1, 1)
    assert Tensor(F32, (a,)).hash == Tensor(F32, (b,)).hash
    assert Tensor(F32, (a,)).hash != Tensor(F32, (N,)).hash
    assert dim_add(dim_scale(N, 2), dim_scale(N, 3)) == dim_scale(N, 5)
    assert dim_add(N, N, -1) == 0  # a static size again
    assert dim_add(dim_add(N, 1), 1, -1) == N  # a plain symbol again
    assert dim_scale(dim_scale(N, 2), 1, 2) == N
    # common factors leave the divisor: (2N + 2) / 4 = (N + 1) / 2
    assert dim_scale(dim_add(dim_scale(N, 2), 2), 1, 4) == DimExpr(((0, 1),), 1, 2)
    # terms sorted by symbol, whatever the order written
    assert dim_add(M, N) == dim_add(N, M) == DimExpr(((0, 1), (1, 1)), 0, 1)
    with pytest.raises(DimError):
        dim_affine({}, 5, 2)


def test_display_reads_back() -> None:
    names = ("N", "M")
    cases = {
        dim_add(N, 1): "N + 1",
        dim_scale(N, 2): "2 * N",
        dim_add(10, N, -1): "10 - N",
        dim_scale(N, 1, 2): "N / 2",
        dim_scale(dim_add(N, 1), 1, 2): "(N + 1) / 2",
        dim_add(dim_scale(N, 2), M, -1): "2 * N - M",
    }
    for d, text in cases.items():
        assert d.display(names) == text
        src = f"pub fn f[N, M](x: &f32[N], y: &f32[M]) -> f32[{text}] {{ zeros() }}\n"
        a = analyze(src)
        assert not a.has_errors, (text, [str(x) for x in a.diagnostics])
        assert a.module.graph.functions["f"].type.result == Tensor(F32, (d,))


def test_substitution_and_value() -> None:
    d = dim_scale(dim_add(N, 1), 1, 2)  # (N + 1) / 2
    assert dim_subst(d, {0: dim_scale(M, 2)}) == dim_scale(dim_add(dim_scale(M, 2), 1), 1, 2)
    assert dim_value(d, {0: 7}) == 4
    with pytest.raises(DimError):
        dim_value(d, {0: 6})
    with pytest.raises(DimError):
        dim_value(dim_add(N, 1, -1), {0: 0})  # N - 1 at N = 0


def test_keg_accepts_only_the_normal_form() -> None:
    from kera_core.keg.cursor import Cursor, decode_type
    from kera_core.keg.errors import KegError

    def _cursor(data: bytes) -> Cursor:
        return Cursor(data, 0, len(data), "types")

    t = Tensor(F32, (dim_scale(dim_add(N, 1), 1, 2), 4))
    assert decode_type(_cursor(t.canonical)) == t

    def encoded(terms, const, div) -> bytes:
        w = Writer()
        w.u8(2)
        F32.encode(w)
        w.uvar(1)
        w.u8(2)
        w.uvar(len(terms))
        for k, c in terms:
            w.uvar(k)
            w.svar(c)
        w.svar(const)
        w.uvar(div)
        w.str("host")
        return w.getvalue()

    assert decode_type(_cursor(encoded([(0, 1)], 1, 1))) == Tensor(F32, (dim_add(N, 1),))
    for bad in ([(0, 2)], 2, 4), ([(0, 1)], 0, 1), ([(1, 1), (0, 1)], 0, 1), ([(0, 0)], 3, 1):
        with pytest.raises(KegError):
            decode_type(_cursor(encoded(*bad)))


# --- the checker --------------------------------------------------------------------------


def errors(src: str) -> list[tuple[str, str, str]]:
    """(code, the text the span covers, message) of each error."""
    a = analyze(src)
    return [
        (d.code, src[d.span.start : d.span.end], d.message) for d in a.diagnostics if d.is_error
    ]


CHECKER = [
    # a dimension expression is a type: `N + 1` is not `N`
    ("pub fn f[N](x: &f32[N]) -> f32[N + 1] { x * 2.0 }", "K0309", "x * 2.0", "f32[N + 1]"),
    (
        "pub fn f[N](x: &f32[N], y: &f32[N + 1]) -> f32[N] { x + y }",
        "K0305",
        "x + y",
        "",
    ),
    # a static size: its divisions are exact, its value a size
    ("pub fn f(x: &f32[5 / 2]) -> f32 { 1.0 }", "K0321", "5 / 2", "not a whole number"),
    ("pub fn f(x: &f32[1 - 2]) -> f32 { 1.0 }", "K0321", "1 - 2", "below zero"),
    ("pub fn f[N](x: &f32[(2 * N + 1) / 2]) -> f32 { 1.0 }", "K0321", "(2 * N + 1) / 2", "never"),
    ("pub fn f[N](x: &f32[N / 0]) -> f32 { 1.0 }", "K0321", "/", "division by zero"),
    # affine only, the division last
    ("pub fn f[N, M](x: &f32[N * M]) -> f32 { 1.0 }", "K0321", "N * M", "affine"),
    ("pub fn f[N, M](x: &f32[N / M]) -> f32 { 1.0 }", "K0321", "N / M", "divided by a number"),
    ("pub fn f[N](x: &f32[2 * (N / 4)]) -> f32 { 1.0 }", "K0321", "2 * (N / 4)", "division last"),
    ("pub fn f[N, M](x: &f32[N / 2 + M]) -> f32 { 1.0 }", "K0321", "N / 2 + M", "division last"),
    # binding at a call: solvable, or a static size that fits no size of N
    (
        "fn p[N](x: &f32[2 * N]) -> f32 { 1.0 }\npub fn f(x: &f32[5]) -> f32 { p(x) }",
        "K0302",
        "x",
        "no size of `N`",
    ),
    (
        "fn g[N](x: &f32[N], y: &f32[N + 1]) -> f32 { 1.0 }\n"
        "pub fn f[M](x: &f32[M], y: &f32[M]) -> f32 { g(x, y) }",
        "K0302",
        "y",
        "expects `N + 1` = M + 1",
    ),
    (
        "fn g[N](x: &f32[N], y: &f32[N]) -> f32 { 1.0 }\n"
        "pub fn f[M](x: &f32[M], y: &f32[M + 1]) -> f32 { g(x, y) }",
        "K0310",
        "y",
        "from an earlier argument",
    ),
    # a constant dimension has an integer type and a size
    ("const K: f32 = 4.0;\npub fn f(x: &f32[K]) -> f32 { 1.0 }", "K0321", "K", "integer type"),
    ("const K: i64 = 0 - 3;\npub fn f(x: &f32[K]) -> f32 { 1.0 }", "K0321", "K", "between 0"),
    ("pub fn f(x: &f32[Q]) -> f32 { 1.0 }", "K0201", "Q", "unknown dimension"),
]


@pytest.mark.parametrize(("src", "code", "at", "says"), CHECKER, ids=[c[0][:50] for c in CHECKER])
def test_checker(src: str, code: str, at: str, says: str) -> None:
    errs = errors(src + "\n")
    assert len(errs) == 1, errs
    assert errs[0][0] == code and errs[0][1] == at and says in errs[0][2], errs


def test_unsolvable_dimensions() -> None:
    """`N + M` alone binds neither; with `M` bound by another parameter it binds `N`."""
    errs = errors("pub fn f[N, M](x: &f32[N + M]) -> f32 { 1.0 }\n")
    assert [(c, at) for c, at, _ in errs] == [("K0310", "N"), ("K0310", "M")], errs
    assert "a form a call can solve" in errs[0][2]
    m = analyzed("pub fn f[N, M](x: &f32[N + M], y: &f32[M]) -> f32[N] { zeros() }\n")
    r = reference(m, "f", {"x": np.ones(7, np.float32), "y": np.ones(3, np.float32)})
    assert r.outputs[0].value.shape == (4,) and r.dims == {"N": 4, "M": 3}


def test_dimensions_fixed_by_the_result_type() -> None:
    errs = errors(
        "fn fill[N, M](x: &f32[N]) -> f32[M] { zeros() }\n"
        "pub fn f[K](x: &f32[K]) -> f32 { let y = fill(x); 1.0 }\n"
    )
    assert [(c, at) for c, at, _ in errs] == [("K0310", "fill(x)")], errs
    assert "expected type" in errs[0][2]
    errs = errors("pub fn f[N, M](x: &f32[N + M]) -> f32 { 1.0 }\n")
    assert [c for c, _, _ in errs] == ["K0310", "K0310"], errs
    # an entry point takes it from the host: `dims` (`kera run --dims`), R0006 without
    m = analyzed("pub fn f[N, M](x: &f32[N]) -> f32[M] {\n    zeros()\n}\n")
    x = {"x": np.ones(3, np.float32)}
    assert reference(m, "f", x, {"M": 5}).outputs[0].value.shape == (5,)
    assert outcome(lambda: reference(m, "f", x)) == "error R0006"
    assert outcome(lambda: loop_run(m, "f", x, {"M": 5})) == outcome(
        lambda: reference(m, "f", x, {"M": 5})
    )


def test_a_failing_constant_is_reported_once() -> None:
    errs = errors("const K: i64 = 1 / 0;\npub fn f(x: &f32[K]) -> f32 { 1.0 }\n")
    assert [e[0] for e in errs] == ["K0317"], errs


def test_constant_dimensions_are_static_sizes() -> None:
    m = analyzed(
        "const K: i64 = 2 + 2;\nconst W: u8 = K as u8 * 2;\n"
        "pub fn f(x: &f32[K, W]) -> f32[K + 1] { zeros() }\n"
        "pub fn g(x: &f32[4, 8]) -> f32[5] { zeros() }\n"
    )
    f, g = m.graph.functions["f"], m.graph.functions["g"]
    assert f.type == g.type and f.type.hash == g.type.hash


def test_shapes_compare_by_normal_form() -> None:
    m = analyzed(
        "pub fn f[N](x: &f32[N + 1], y: &f32[1 + N]) -> f32[2 + N - 1] {\n"
        "    let z: f32[(2 * N + 2) / 2] = x + y;\n    z\n}\n"
    )
    assert m.graph.functions["f"].type.result == Tensor(F32, (dim_add(N, 1),))


# --- run time: every target the same bits -------------------------------------------------

PROGRAM = """
const K: i64 = 2 + 2;

/// append one element, without `concat`
pub fn push[N](x: &f32[N], v: f32) -> f32[N + 1] {
    let mut y: f32[1 + N] = zeros();
    for i in 0..N { y[i] = x[i]; }
    y[N] = v;
    y
}

/// forward differences: one element fewer
pub fn diff[N](x: &f32[N + 1]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = x[i + 1] - x[i]; }
    y
}

/// sums of neighbouring pairs: half as many
pub fn pairs[N](x: &f32[2 * N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = x[2 * i] + x[2 * i + 1]; }
    y
}

/// every other element: `N / 2` must divide (R0003 on entry otherwise)
pub fn evens[N](x: &f32[N]) -> f32[N / 2] {
    let mut y: f32[N / 2] = zeros();
    for i in 0..N / 2 { y[i] = x[2 * i]; }
    y
}

pub fn tail[N](x: &f32[N]) -> f32[N - 1] {
    let mut y: f32[N - 1] = zeros();
    for i in 1..N { y[i - 1] = x[i] * 0.5; }
    y
}

/// calls that solve: push binds N = M, diff binds N = M + 1 - 1
pub fn roundtrip[M](x: &f32[M]) -> f32[M] {
    let p = push(x, 1.5);
    diff(&p) + x
}

/// pairs binds N = M / 2, checked where it is called
pub fn halves[M](x: &f32[M]) -> f32[M / 2] {
    pairs(x)
}

fn first_of_pair[N](x: &f32[2 * N]) -> f32 {
    x[0]
}

/// a binding checked only at the call: M odd is R0003 there, M = 0 is R0001 inside
pub fn first[M](x: &f32[M]) -> f32 {
    first_of_pair(x) + 1.0
}

pub fn elementwise[N](x: &f32[N + 1], y: &f32[1 + N]) -> f32[N + 1] {
    x * y + sqrt(x * x)
}

pub fn fixed(x: &f32[K]) -> f32[K + 1] {
    push(x, 2.0)
}

/// `M` is fixed by the result type alone: the caller's expected type gives it
fn fill[N, M](x: &f32[N]) -> f32[M] {
    let mut y: f32[M] = zeros();
    for i in 0..M { y[i] = x[i % N]; }
    y
}

/// the result fixes `M`, then `x` fixes `N`
fn skip[N, M](x: &f32[N + M]) -> f32[M] {
    let mut y: f32[M] = zeros();
    for i in 0..M { y[i] = x[N + i]; }
    y
}

pub fn cycle[K](x: &f32[K]) -> f32[2 * K + 1] {
    fill(x)
}

pub fn cycle3[K](x: &f32[K]) -> f32 {
    let y: f32[3] = fill(x);
    y[2]
}

pub fn drop2[K](x: &f32[K + 2]) -> f32[K] {
    skip(x)
}

/// shape operations meet dimension expressions: element counts compare by normal form
pub fn as_pairs[N](x: &f32[2 * N]) -> f32[N, 2] {
    reshape(x)
}

pub fn flat3[N](x: &f32[N + 1, 3]) -> f32[3 * N + 3] {
    reshape(x)
}

pub fn total[N](x: &f32[N + 1]) -> f32 {
    sum(x)
}

pub fn append1[N](x: &f32[N], y: &f32[1]) -> f32[N + 1] {
    concat(x, y, 0)
}
"""

SIZES = [0, 1, 2, 7, 1025]
ONE_VECTOR = (
    *("diff", "pairs", "evens", "tail", "roundtrip", "halves", "first", "cycle", "cycle3"),
    *("drop2", "as_pairs", "total"),
)


def cases():
    rng = np.random.default_rng(5)
    for n in SIZES:
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        yield "push", n, {"x": x, "v": np.float32(0.25)}
        for fn in ONE_VECTOR:
            yield fn, n, {"x": x}
        yield "elementwise", n, {"x": x, "y": y}
        yield "append1", n, {"x": x, "y": y[:1] if n else np.ones(1, np.float32)}
        yield "flat3", n, {"x": rng.standard_normal((n, 3)).astype(np.float32)}
    yield "fixed", 4, {"x": np.arange(4, dtype=np.float32)}
    yield "elementwise", 3, {"x": np.ones(3, np.float32), "y": np.ones(4, np.float32)}


@pytest.fixture(scope="module")
def program():
    return analyzed(PROGRAM)


def test_reference_values(program) -> None:
    """The interpreter computes what the kernels mean (numpy), and fails where it must."""
    x = np.arange(7, dtype=np.float32) * np.float32(1.5)
    run = lambda fn, **kw: reference(program, fn, kw).outputs[0].value  # noqa: E731
    assert run("push", x=x, v=np.float32(9)).tolist() == [*x.tolist(), 9.0]
    assert run("diff", x=x).tolist() == np.diff(x).tolist()
    assert run("pairs", x=x[:6]).tolist() == (x[0:6:2] + x[1:6:2]).tolist()
    assert run("evens", x=x[:6]).tolist() == x[0:6:2].tolist()
    assert run("tail", x=x).tolist() == (x[1:] * np.float32(0.5)).tolist()
    assert run("fixed", x=x[:4]).tolist() == [*x[:4].tolist(), 2.0]

    def want(fn: str, n: int) -> str:
        if fn in ("diff", "elementwise") and n == 0:
            return "error R0003"  # N + 1 = 0: no size of N
        if fn in ("pairs", "evens", "halves", "first") and n % 2:
            return "error R0003"  # 2 * N = n, or N / 2 on entry, or at the call
        if fn == "tail" and n == 0:
            return "error R0003"  # N - 1 on entry
        if fn == "first" and n == 0:
            return "error R0001"  # N = 0, then x[0]
        if fn in ("cycle", "cycle3") and n == 0:
            return "error R0002"  # i % N with N = 0
        if fn in ("total", "flat3") and n == 0:
            return "error R0003"  # N + 1 = 0
        if fn == "as_pairs" and n % 2:
            return "error R0003"  # 2 * N = n
        if fn == "drop2" and n < 2:
            return "error R0003"  # K + 2 elements
        if fn == "elementwise" and n == 3:
            return "error R0003"  # inputs of 3 and 4 elements
        return "ok"

    for fn, n, inputs in cases():
        got = outcome(lambda: reference(program, fn, inputs))  # noqa: B023
        assert got.split(" ")[0 : 2 if got.startswith("error") else 1] == want(fn, n).split(" "), (
            fn,
            n,
            got,
        )


def test_loop_program_agrees(program) -> None:
    for fn, n, inputs in cases():
        same_as_reference(program, fn, inputs, lambda: loop_run(program, fn, inputs), fn, n)  # noqa: B023


def _target(tname: str, program) -> None:
    t = runnable_target(tname)
    for fn, n, inputs in cases():
        assert not t.unsupported(program.graph, fn), (tname, fn)
        same_as_reference(
            program,
            fn,
            inputs,
            lambda: run_module(t, program, fn, inputs),  # noqa: B023
            tname,
            fn,
            n,
        )


def test_wasm_agrees(program) -> None:
    try:
        get("wasm")
    except ImportError as e:
        tool_missing(f"the wasm target needs wasmtime: {e}")
    _target("wasm", program)


def test_x86_64_agrees(program) -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    _target("x86_64", program)


def test_arm64_agrees(program) -> None:
    try:
        get("arm64")
    except ImportError as e:
        tool_missing(f"the arm64 target cannot load here: {e}")
    _target("arm64", program)


CALLS = {"roundtrip", "halves", "first", "cycle", "cycle3", "drop2", "fixed"}


def test_verilog_agrees(program) -> None:
    """The hardware target, on the functions without calls (a call that binds dimension
    expressions is not inlined: `unsupported` says so), at the smaller sizes (it simulates)."""
    t = runnable_target("verilog")
    for fn, n, inputs in cases():
        why = t.unsupported(program.graph, fn)
        if fn in CALLS:
            assert why and "calls" in why[0], (fn, why)
            continue
        assert not why, (fn, why)
        if n <= 7:
            run = lambda fn=fn, inputs=inputs: run_module(t, program, fn, inputs)  # noqa: E731
            same_as_reference(program, fn, inputs, run, fn, n)


def test_ptx_assembles(program) -> None:
    """No GPU runs here (scripts/gpu-check.sh does): the PTX of every function the target
    takes assembles with ptxas, dimension expressions and their checks included."""
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    texts = [
        P.compiled(program.graph, f.name).selected.text
        for f in program.graph.exported()
        if not P.unsupported(program.graph, f.name)
    ]
    assert len(texts) >= 6
    P.ptxas(P.batch(texts), "sm_80")


def test_keg_round_trip_runs_the_same(program) -> None:
    """A `.keg` of the program (dimension expressions in its types) reads back verified,
    with the same fingerprint, and runs the same."""
    from kera_core.keg import read_keg, write_keg

    k = read_keg(write_keg(program.graph, program.provenance))
    assert k.graph.fingerprint() == program.graph.fingerprint()
    back = SimpleNamespace(graph=k.graph, provenance=program.provenance)
    for fn, n, inputs in cases():
        if n <= 7:
            run = lambda fn=fn, inputs=inputs: reference(back, fn, inputs)  # noqa: E731
            same_as_reference(program, fn, inputs, run, fn, n)


def test_optimized_graph_agrees(program) -> None:
    """The optimizer keeps every dimension check where it was (no inlining moves one)."""
    from kera_core.opt import optimize

    r = optimize(program.graph)
    assert r.report.converged
    opt = SimpleNamespace(graph=r.graph, provenance=program.provenance)
    for fn, n, inputs in cases():
        same_as_reference(program, fn, inputs, lambda: reference(opt, fn, inputs), fn, n)  # noqa: B023
        same_as_reference(program, fn, inputs, lambda: loop_run(opt, fn, inputs), fn, n)  # noqa: B023


# --- front ends -----------------------------------------------------------------------------


def test_hover_spells_the_expression() -> None:
    from kera_core.ide import hover
    from kera_core.workspace import Document

    src = (
        "const K: i64 = 4;\n"
        "pub fn diff[N](x: &f32[N + 1]) -> f32[N] {\n"
        "    let y: f32[2 * N, K - 1] = zeros();\n    zeros()\n}\n"
    )
    a = Document("file:///tmp/dims.kera", src, 1).analysis()
    assert not [d for d in a.diagnostics if d.is_error], [str(d) for d in a.diagnostics]

    def at(needle: str) -> str:
        h = hover.hover(a, src.index(needle))
        assert h is not None, needle
        return h.markdown

    assert "pub fn diff[N](x: &f32[N + 1]) -> f32[N]" in at("diff")
    assert "let y: f32[2 * N, 3]" in at("y:")
    assert "N: dimension" in at("N + 1")
    assert "const K: i64 = 4" in at("K - 1")


def test_formatter_spaces_dimension_expressions() -> None:
    from kera_core.fmt import format_text

    src = "pub fn f[N](x: &f32[N+1], y: &f32[ 2*N ,( N-1 )/2]) -> f32[N] {\n    zeros()\n}\n"
    want = "pub fn f[N](x: &f32[N + 1], y: &f32[2 * N, (N - 1) / 2]) -> f32[N] {\n    zeros()\n}\n"
    assert format_text(src).text == want
    assert format_text(want).text == want


def test_cli_run_solves_dims_and_generates_inputs(tmp_path, capsys) -> None:
    from kera_core.cli import main

    p = tmp_path / "d.kera"
    p.write_text(PROGRAM)
    assert main(["run", str(p), "--entry", "diff", "--dims", "N=5", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "input x f32[6]" in out and "result f32[5]" in out.replace(" =", ""), out
    assert main(["run", str(p), "--entry", "pairs", "--dims", "N=3"]) == 0
    assert "input x f32[6]" in capsys.readouterr().out
    # N / 2 of an odd N: the run fails with R0003, as on every target
    rc = main(["run", str(p), "--entry", "evens", "--dims", "N=5"])
    assert rc != 0 and "R0003" in capsys.readouterr().out + capsys.readouterr().err
