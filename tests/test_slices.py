"""Slices and views (docs/language.md §6.14, docs/semantics.md §7.8, docs/graph.md).

* types: a range's length is a dimension in normal form (`x[1..N]` is `f32[N - 1]`,
  `x[k..k + 4]` is `f32[4]`), an index drops its axis (`a[i, ..]` of `f32[M, N]` is `f32[N]`);
* the checker's diagnostics (K0326–K0328, K0304, K0311, K0402, K0405);
* the graph: a slice read by value is a `slice` node; `&mut a[i, ..]` passed to a call is
  slice → call → `update_slice`; a view held in a variable is an alias with no node;
* values against numpy, checked errors (R0001) at sizes 0, 1, odd and large;
* the same raw bytes on the loop program and every runnable target as the interpreter;
* a contiguous read view is the tensor's own buffer in the loop program (nothing copied).
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import InterpError
from kera_core.interp.api import run_function as reference
from kera_core.ir.types import Ref, Tensor
from kera_core.loops import ir
from kera_core.loops.lower import program_of
from kera_core.loops.run import run_function as loop_run
from tests.outcomes import analyzed, runnable_target, same_as_reference

HELPERS = """
fn scale[N](v: &mut f32[N], k: f32) {
    for j in 0..N {
        v[j] = v[j] * k + 1.0;
    }
}

fn total[N](x: &f32[N]) -> f32 {
    sum(x)
}
"""


def _fn(src: str, name: str = "f"):
    return analyzed(HELPERS + src).graph.functions[name]


# --- types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sig", "body"),
    [
        ("(x: &f32[N]) -> f32[N - 1]", "x[1..N]"),
        ("(x: &f32[N]) -> f32[N - 1]", "x[1..]"),
        ("(x: &f32[N]) -> f32[N - 2]", "x[1..N - 1]"),
        ("(x: &f32[N]) -> f32[N]", "x[..]"),
        ("(x: &f32[N]) -> f32[N / 2]", "x[..N / 2]"),
        ("(x: &f32[N]) -> f32[N / 2]", "x[N / 2..]"),
        ("(x: &f32[N], k: i64) -> f32[4]", "x[k..k + 4]"),
        ("(x: &f32[N], k: i64) -> f32[3]", "x[2 * k + 1..2 * (k + 2)]"),
        ("(a: &f32[M, N]) -> f32[N]", "a[0, ..]"),
        ("(a: &f32[M, N]) -> f32[M]", "a[.., 1]"),
        ("(a: &f32[M, N]) -> f32[M - 1, N]", "a[1.., ..]"),
        ("(a: &f32[M, N], j: i64) -> f32[2]", "a[1..3, j]"),
        ("(a: &f32[M, N]) -> f32[M, N - 2]", "a[.., 1..N - 1]"),
    ],
)
def test_a_slice_has_the_type_its_bounds_give(sig: str, body: str) -> None:
    dims = "M, N" if "M" in sig else "N"
    analyzed(f"fn f[{dims}]{sig} {{ {body} }}")


def test_a_view_is_passed_where_a_borrow_of_its_type_is_wanted() -> None:
    src = "fn f[M, N](a: &f32[M, N]) -> f32 { let mut m = a * 1.0; scale(&mut m[0, ..], 2.0);"
    analyzed(HELPERS + src + " total(&m[1, ..]) + total(&a[.., 0]) + sum(a[0, ..]) }")


def test_hover_shows_the_view_type() -> None:
    from kera_core.ide import hover
    from kera_core.workspace import Document

    src = "fn f[M, N](a: &f32[M, N]) -> f32 {\n    let mut m = a * 1.0;\n"
    src += "    let r = &mut m[1.., ..];\n    sum(a[0, 1..])\n}\n"
    a = Document("file:///views.kera", src, 1).analysis()
    assert not a.diagnostics
    at = src.index("1..]") + 2
    h = hover.hover(a, len(src[:at].encode()))
    assert h is not None and "`f32[N - 1]`" in h.markdown.replace("```kera\n", "`").replace(
        "\n```", "`"
    )
    r = hover.hover(a, len(src[: src.index("r = &mut")].encode()))
    assert r is not None and "&mut f32[M - 1, N]" in r.markdown


# --- diagnostics -------------------------------------------------------------------------------

DIAGNOSTICS = [
    ("K0326", "fn f(s: f32) -> f32 { let t = s[1..]; s }"),
    ("K0304", "fn f[N](x: &f32[N]) -> f32 { sum(x[1.., 0]) }"),
    ("K0304", "fn f[M, N](a: &f32[M, N]) -> f32 { sum(a[..]) }"),
    ("K0327", "fn f[N](x: &f32[N], k: i32) -> f32 { sum(x[k..]) }"),
    ("K0327", "fn f[N](x: &f32[N]) -> f32 { sum(x[0..=1]) }"),
    ("K0327", "fn f[N](x: &f32[N]) -> f32 { sum(x[0.5..]) }"),
    ("K0328", "fn f[N](x: &f32[N], k: i64) -> f32 { sum(x[k..N]) }"),
    ("K0328", "fn f[N](x: &f32[N]) -> f32 { sum(x[3..1]) }"),
    ("K0311", "fn f[N](x: &f32[N]) { scale(&mut (x * 2.0)[..], 1.0); }"),
    ("K0311", "fn f[N](x: &f32[N]) { let mut y = x * 1.0; let r = &mut y[..][1..]; }"),
    ("K0301", "fn f[N](x: &f32[N]) { let mut y = x * 1.0; let r: &mut f32[N] = &mut y[1..]; }"),
    ("K0301", "fn f[N](x: &f32[N]) { let mut y = x * 1.0; y[..] = 1.0; }"),
    ("K0405", "fn f[N](x: &f32[N]) { scale(&mut x[..], 1.0); }"),
    ("K0405", "fn f[N](x: &f32[N]) { x[1..] = x[..N - 1]; }"),
    ("K0301", "fn f[N](x: &f32[N]) { let mut y = x * 1.0; y[1..] = x; }"),
    (
        "K0402",
        "fn two[N](a: &mut f32[N], b: &mut f32[N]) { a[0] = b[0]; }\n"
        "fn f[M, N](a: &f32[M, N]) { let mut m = a * 1.0; two(&mut m[0, ..], &mut m[1, ..]); }",
    ),
    (
        "K0402",
        "fn f[M, N](a: &f32[M, N]) { let mut m = a * 1.0; let r = &mut m[0, ..];"
        " let s = &mut m[1, ..]; r[0] = 1.0; s[0] = 1.0; }",
    ),
    (
        "K0403",
        "fn f[M, N](a: &f32[M, N]) -> f32 { let mut m = a * 1.0; let v = &m[0, ..];"
        " m[0, 0] = 1.0; v[0] }",
    ),
]


@pytest.mark.parametrize(("code", "src"), DIAGNOSTICS)
def test_the_checker_reports_bad_slices(code: str, src: str) -> None:
    a = analyze(HELPERS + src)
    codes = [d.code for d in a.diagnostics if d.is_error]
    assert code in codes, [str(d) for d in a.diagnostics]
    for d in a.diagnostics:
        assert d.span.end > d.span.start and d.message


# --- the graph --------------------------------------------------------------------------------


def test_a_mut_view_argument_is_sliced_then_written_back() -> None:
    g = analyzed(
        HELPERS + "fn f[M, N](a: &f32[M, N]) -> f32[M, N] {"
        " let mut m = a * 1.0; scale(&mut m[1, ..], 2.0); m }"
    ).graph
    ops = [n.op for n in g.region_nodes(g.functions["f"].region)]
    assert ops.index("slice") < ops.index("call") < ops.index("update_slice")


@pytest.mark.parametrize(
    ("alias", "direct"),
    [
        (
            "let r = &mut m[i, ..]; scale(r, 2.0); r[0] = 1.0;",
            "scale(&mut m[i, ..], 2.0); m[i, ..] = { let mut v = m[i, ..]; v[0] = 1.0; v };",
        ),
        ("let r = &mut m[.., 1..]; r += 1.0;", "m[.., 1..] += 1.0;"),
        ("let r = &mut m[i, ..]; let s = &mut r[1..]; s[0] = 2.0;", "m[i, ..][1..][0] = 2.0;"),
    ],
)
def test_a_view_variable_is_an_alias_of_its_region(alias: str, direct: str) -> None:
    body = "fn f[M, N](a: &f32[M, N], i: i64) -> f32[M, N] {{ let mut m = a * 1.0; {} m }}"
    assert _fn(body.format(alias)).hash == _fn(body.format(direct)).hash


def test_a_contiguous_read_view_copies_nothing() -> None:
    """A row is the matrix's own buffer at an offset (a reduction reads it in place); a
    column is gathered into a buffer of its own. (A view passed to a user function is
    copied into a buffer for the call, as the loop program passes whole buffers.)"""

    def stmts(block: list):
        for s in block:
            yield s
            for part in ("body", "cond", "then", "orelse"):
                inner = getattr(s, part, None)
                if isinstance(inner, list):
                    yield from stmts(inner)

    def moves(body: str) -> tuple[int, int]:
        m = analyzed(f"pub fn f[M, N](a: &f32[M, N], i: i64) -> f32 {{ {body} }}")
        fn = program_of(m.graph, "f").functions["f"]
        got = list(stmts(fn.body))
        return sum(isinstance(s, ir.Alloc) for s in got), sum(isinstance(s, ir.Copy) for s in got)

    whole = moves("sum(a)")
    assert moves("sum(&a[i, 1..])") == whole
    assert moves("sum(a[1.., ..])") == whole
    assert moves("sum(&a[.., i])") == (whole[0] + 1, whole[1])


def test_a_store_through_a_row_view_copies_nothing() -> None:
    """`r[j] += v` with `let r = &mut m[i, ..];` is a store into `m`'s buffer: no buffer is
    allocated or copied inside the loops (the graph's slice → update → update_slice)."""
    m = analyzed(
        "pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] { let mut m = a * 1.0;"
        " for i in 0..M { let r = &mut m[i, ..]; for j in 0..N { r[j] += x[j]; } r[0] = 1.0; }"
        " m }"
    )
    fn = program_of(m.graph, "f").functions["f"]
    loops = [s for s in fn.body if isinstance(s, ir.Loop) and s.mark != "lanes"]

    def moves(block: list) -> int:
        n = 0
        for s in block:
            n += isinstance(s, (ir.Alloc, ir.Copy))
            for part in ("body", "cond", "then", "orelse"):
                inner = getattr(s, part, None)
                if isinstance(inner, list):
                    n += moves(inner)
        return n

    assert loops and moves(loops) == 0


# --- values and checked errors --------------------------------------------------------------

PROGRAMS = {
    "rows": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut m = a * 1.0;
    for i in 0..M {
        scale(&mut m[i, ..], 0.5);
        let s = total(&m[i, ..]);
        m[i, ..] += s * x;
    }
    m
}
""",
    "columns": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut m = a * 1.0;
    for j in 0..N {
        scale(&mut m[.., j], x[j]);
        m[.., j] -= mean(m[.., j]);
    }
    m
}
""",
    "blocks": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut m = a * 1.0;
    let r = &mut m[1.., ..];
    r *= 2.0;
    r[0, ..] = clone(x);
    let c = &mut m[.., 1..];
    c += 1.0;
    m[..M - 1, ..N - 1] -= a[1.., 1..];
    m
}
""",
    "split": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut y = x * 1.0;
    let head = sum(&y[..N / 2]);
    let tail = sum(y[N / 2..]);
    y[..N / 2] += tail;
    y[N / 2..] -= head;
    let mut m = a * 1.0;
    for i in 0..M {
        m[i, ..] = m[i, ..] * y;
    }
    m
}
""",
    "windows": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut m = a * 1.0;
    for i in 0..M {
        for k in 0..N - 1 {
            let w = &mut m[i, k..k + 2];
            w[1] += w[0] * x[k];
        }
    }
    m
}
""",
    "elements": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut s: f32 = 0.0;
    for e in x[1..] {
        s = s * 0.5 + e;
    }
    let mut m = a * 1.0;
    for i in 0..M {
        for e in &a[i, ..N / 2] {
            m[i, 0] += e * s;
        }
    }
    m
}
""",
    "view_loop": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut m = a * 1.0;
    for i in 0..M {
        let r = &mut m[i, ..];
        for j in 0..N {
            r[j] += x[j] * 2.0;
        }
        r[0] = r[N - 1];
        let c = &mut m[.., i % N];
        c[0] -= 1.0;
    }
    m
}
""",
    "out_of_bounds": """
pub fn f[M, N](a: &f32[M, N], x: &f32[N]) -> f32[M, N] {
    let mut m = a * 1.0;
    m[.., 0] += sum(x[2..5]);
    m[M / 2, ..] = clone(x);
    m
}
""",
}


def _inputs(m: int, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "a": rng.standard_normal((m, n)).astype(np.float32),
        "x": rng.standard_normal(n).astype(np.float32),
    }


def _numpy(name: str, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    m = a.copy()
    f = np.float32
    if name == "rows":
        for i in range(m.shape[0]):
            m[i] = m[i] * f(0.5) + f(1.0)
            # the sum's order of additions is Kera's own (bits are compared across targets)
            m[i] += m[i].sum(dtype=np.float64).astype(f) * x
    elif name == "blocks":
        m[1:] *= f(2.0)
        if m.shape[0] > 1:
            m[1] = x
        m[:, 1:] += f(1.0)
        m[:-1, :-1] -= a[1:, 1:]
    elif name == "split":
        y = x.copy()
        h = y.shape[0] // 2
        head, tail = y[:h].sum(dtype=np.float64), y[h:].sum(dtype=np.float64)
        y[:h] += f(tail)
        y[h:] -= f(head)
        m = m * y
    elif name == "windows":
        for i in range(m.shape[0]):
            for k in range(m.shape[1] - 1):
                m[i, k + 1] += m[i, k] * x[k]
    return m


@pytest.mark.parametrize("name", ["blocks", "split", "windows", "rows"])
@pytest.mark.parametrize(("mm", "n"), [(2, 2), (3, 4), (4, 6), (7, 10)])
def test_values_match_numpy(name: str, mm: int, n: int) -> None:
    m = analyzed(HELPERS + PROGRAMS[name])
    inputs = _inputs(mm, n, mm * 10 + n)
    got = reference(m, "f", inputs).outputs[0].value
    want = _numpy(name, inputs["a"], inputs["x"])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 9, 1001])
def test_out_of_bounds_is_r0001(n: int) -> None:
    m = analyzed(HELPERS + PROGRAMS["out_of_bounds"])
    for mm in (0, 1, 2, 5):
        inputs = _inputs(mm, n, n)
        try:
            r = reference(m, "f", inputs).outputs[0].value
        except InterpError as e:
            # `x[2..5]` needs 5 ≤ N; `m[M / 2, ..]` needs M / 2 < M, i.e. M ≥ 1
            assert e.code == "R0001" and (n < 5 or mm == 0), (n, mm, e)
            continue
        assert n >= 5 and mm >= 1
        want = inputs["a"].copy()
        want[:, 0] += inputs["x"][2:5].sum(dtype=np.float64).astype(np.float32)
        want[mm // 2] = inputs["x"]
        np.testing.assert_allclose(r, want, rtol=1e-6, atol=1e-6)


def test_a_window_past_the_end_is_r0001() -> None:
    src = "pub fn f[N](x: &f32[N], k: i64) -> f32 { sum(&x[k..k + 3]) }"
    m = analyzed(src)
    x = np.arange(5, dtype=np.float32)
    assert reference(m, "f", {"x": x, "k": np.int64(2)}).outputs[0].value == 9.0
    for k in (-1, 3, 2**62, -(2**63)):
        with pytest.raises(InterpError) as e:
            reference(m, "f", {"x": x, "k": np.int64(k)})
        assert e.value.code == "R0001"


# --- every target ------------------------------------------------------------------------------

SIZES = [(0, 0), (1, 1), (1, 2), (3, 4), (2, 5), (5, 8), (4, 33)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_loop_program_matches_the_interpreter(name: str) -> None:
    m = analyzed(HELPERS + PROGRAMS[name])
    for mm, n in SIZES:
        inputs = _inputs(mm, n, mm + n)
        same_as_reference(m, "f", inputs, lambda: loop_run(m, "f", inputs), name, mm, n)  # noqa: B023


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_target_matches_the_interpreter(tname: str, name: str) -> None:
    target = runnable_target(tname)
    m = analyzed(HELPERS + PROGRAMS[name])
    assert not target.unsupported(m.graph, "f"), target.unsupported(m.graph, "f")
    art = target.lower(m.graph, m.provenance, "f")
    for mm, n in SIZES:
        inputs = _inputs(mm, n, 100 + mm + n)
        same_as_reference(
            m,
            "f",
            inputs,
            lambda: target.run(art, m.graph, "f", inputs, provenance=m.provenance),  # noqa: B023
            tname,
            name,
            mm,
            n,
        )


def test_types_in_the_graph() -> None:
    g = analyzed("fn f[M, N](a: &f32[M, N]) -> f32 { let v = &a[1.., 2]; sum(v) }").graph
    f = g.functions["f"]
    (s,) = [n for n in g.region_nodes(f.region) if n.op == "slice"]
    assert s.attr("axes") == ("from", "index")
    t = s.types[0]
    assert (
        isinstance(t, Tensor)
        and t.shape[0].display(("M", "N")) == "M - 1"
        and not isinstance(t, Ref)
    )
