"""Constant tables (language.md §3.3): `const W: f32[5] = [...]` and 2-D `const M: f32[r, c]
= [[...], ...]` — evaluated when the program is checked, used as if the literal were
written at the use (indexing, `&W`, reductions, broadcasting), the same bits on the
interpreter and on every compiled target that runs here; the fingerprint of a function
follows the entries it reads; each mistake in a table is one diagnostic with a code and
the span of the entry or row at fault; a table cannot be assigned to or borrowed `&mut`."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kera_core import targets
from kera_core.analysis import analyze
from kera_core.fmt import format_text
from kera_core.interp.api import run_function
from tests.outcomes import analyzed, outcome, runnable_target, spanned

TABLES = """\
/// Taps of the smoothing stencil.
const TAPS: i64 = 5;
const HALF: i64 = TAPS / 2;
const W: f32[TAPS] = [0.0625, 0.25, 0.375, 0.25, 0.0625];
/// The same weights, scaled: elements may name constants and other tables' elements.
const SCALE: f32 = 2.0;
const W2: f32[3] = [W[0] * SCALE, -W[2], (W[4] + 1.0) / SCALE];
const FIRST: f32 = W[1];
/// Half-byte CRC-32 table (reflected polynomial 0xEDB88320).
const CRC_T: u32[16] = [
    0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC, 0x76DC4190, 0x6B6B51F4, 0x4DB26158,
    0x5005713C, 0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C, 0x9B64C2B0, 0x86D3D2D4,
    0xA00AE278, 0xBDBDF21C,
];
/// Gauss-Legendre, 3 points on [-1, 1].
const GL_X: f64[3] = [-0.7745966692414834, 0.0, 0.7745966692414834];
const GL_W: f64[3] = [5.0 / 9.0, 8.0 / 9.0, 5.0 / 9.0];
/// Abramowitz-Stegun coefficients of the normal CDF (Black-Scholes).
const BS_A: f32[5] = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];
const ROT: f32[3, 3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];
const SOBEL: i32[3, 3] = [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]];
const ROWS: f32[2, TAPS] = [W, [1.0, 2.0, 3.0, 4.0, f32::PI]];
const EDGES: i64[4] = [i64::MIN, -1, 0, i64::MAX];
const WRAP: i8[2] = [(127i8 + 1i8), -128i8 as i8];
const MASK: bool[4] = [true, false, 1 < 2, !true];
const BYTES: u8[3] = [0xFF, 1 + 2, 255u8 >> 4];

pub fn smooth[N](x: &f32[N]) -> f32[N] {
    let mut y: f32[N] = zeros();
    for i in HALF..N - HALF {
        let mut acc = 0.0;
        for k in 0..TAPS {
            acc += W[k] * x[i + k - HALF];
        }
        y[i] = acc;
    }
    y
}

pub fn crc32[N](d: &u8[N]) -> u32 {
    let mut c: u32 = 0xFFFFFFFF;
    for i in 0..N {
        c = c ^ (d[i] as u32);
        c = (c >> 4) ^ CRC_T[(c & 15) as i64];
        c = (c >> 4) ^ CRC_T[(c & 15) as i64];
    }
    c ^ 0xFFFFFFFF
}

pub fn quad(a: f64, b: f64) -> f64 {
    let h = (b - a) / 2.0;
    let m = (b + a) / 2.0;
    let mut s = 0.0;
    for k in 0..3 {
        let t = m + h * GL_X[k];
        s += GL_W[k] * (t * t * t - 2.0 * t);
    }
    s * h
}

pub fn cnd_poly(x: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.2316419 * abs(x));
    let mut p = 0.0;
    for j in 0..5 {
        p = (p + BS_A[4 - j]) * k;
    }
    p
}

pub fn rotate(v: &f32[3]) -> f32[3] {
    matmul(&ROT, v)
}

pub fn rotate_by_hand(v: &f32[3]) -> f32[3] {
    let mut out: f32[3] = zeros();
    for i in 0..3 {
        for j in 0..3 {
            out[i] += ROT[i, j] * v[j];
        }
    }
    out
}

pub fn sobel_at(img: &i32[3, 3]) -> i32 {
    let mut g = 0;
    for i in 0..3 {
        for j in 0..3 {
            g += SOBEL[i, j] * img[i, j];
        }
    }
    g
}

pub fn whole(x: &f32[5]) -> f32[5] {
    W * x + sum(W) + dot(&W, x) + W2[1] + FIRST + ROWS[1, 4]
}

pub fn rows(x: &f32[5]) -> f32[2, 5] {
    ROWS * x
}

pub fn picks(i: i64) -> i64 {
    let j = if i < 0 { 0 } else { i % 4 };
    EDGES[j] + (WRAP[0] as i64) + (WRAP[1] as i64) + (BYTES[j % 3] as i64)
}

pub fn masked(x: &f32[4]) -> f32 {
    let mut s = 0.0;
    for i in 0..4 {
        if MASK[i] {
            s += x[i];
        }
    }
    s
}

pub fn copy_and_change(i: i64) -> f32 {
    let mut w = W;
    w[0] = 9.0;
    w[i % 5] + W[0]
}
"""

INPUTS = {
    "smooth": {"x": np.linspace(-2.0, 3.0, 11, dtype=np.float32)},
    "crc32": {"d": np.frombuffer(b"123456789", dtype=np.uint8).copy()},
    "quad": {"a": np.float64(-0.5), "b": np.float64(2.25)},
    "cnd_poly": {"x": np.float32(-0.75)},
    "rotate": {"v": np.array([1.5, -2.0, 0.25], dtype=np.float32)},
    "rotate_by_hand": {"v": np.array([1.5, -2.0, 0.25], dtype=np.float32)},
    "sobel_at": {"img": np.arange(9, dtype=np.int32).reshape(3, 3) * 7 - 20},
    "whole": {"x": np.array([1.0, -2.0, 0.5, 4.0, -0.25], dtype=np.float32)},
    "rows": {"x": np.array([1.0, -2.0, 0.5, 4.0, -0.25], dtype=np.float32)},
    "picks": {"i": np.int64(6)},
    "masked": {"x": np.array([1.0, 10.0, 100.0, 1000.0], dtype=np.float32)},
    "copy_and_change": {"i": np.int64(6)},
}


def _module():
    return analyzed(TABLES)


def test_the_tables_give_their_values_on_the_interpreter() -> None:
    m = _module()

    def run(name):
        return run_function(m, name, INPUTS[name])["result"]

    x = INPUTS["smooth"]["x"]
    w = np.array([0.0625, 0.25, 0.375, 0.25, 0.0625], dtype=np.float32)
    y = run("smooth")
    assert y.dtype == np.float32 and y[0] == 0 and y[-1] == 0
    for i in range(2, 9):
        want = np.float32(0)
        for k in range(5):
            want = np.float32(want + w[k] * x[i + k - 2])
        assert y[i] == want, i
    assert int(run("crc32")) == 0xCBF43926  # the CRC-32 check value of "123456789"
    a, b = -0.5, 2.25  # 3-point Gauss-Legendre is exact on a cubic
    exact = (b**4 - a**4) / 4 - (b**2 - a**2)
    assert run("quad") == pytest.approx(exact, rel=1e-12)
    assert run("rotate").tolist() == [2.0, 1.5, 0.25]
    assert run("rotate_by_hand").tolist() == [2.0, 1.5, 0.25]
    img = INPUTS["sobel_at"]["img"]
    sob = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])
    assert int(run("sobel_at")) == int((sob * img).sum())
    xs = INPUTS["whole"]["x"]
    got = run("whole")
    extra = np.float32(w.sum()) + np.float32(np.dot(w, xs)) - w[2] + w[1] + np.float32(np.pi)
    assert got == pytest.approx(w * xs + extra, rel=1e-6)
    assert run("rows").shape == (2, 5) and run("rows")[0].tolist() == (w * xs).tolist()
    # j = 2: EDGES[2] = 0; WRAP = [-128, -128] (127 + 1 wraps); BYTES[2] = 255 >> 4 = 15
    assert int(run("picks")) == 0 - 128 - 128 + 15
    assert run("masked") == np.float32(1.0 + 100.0)
    assert run("copy_and_change") == np.float32(0.25 + 0.0625)  # w[1] + W[0]: W unchanged


def test_a_table_is_the_literal_written_at_the_use() -> None:
    """A function reading a table has the graph (so the fingerprint) of the same function
    with the literal written out: the table is inlined, nothing else."""
    by_name = analyzed(
        "const W: f32[3] = [1.0, 2.5, -0.5];\n"
        "pub fn f(x: &f32[3], i: i64) -> f32 { sum(W * x) + W[i] }\n"
    )
    written = analyzed(
        "pub fn f(x: &f32[3], i: i64) -> f32 {\n"
        "    let w: f32[3] = [1.0, 2.5, -0.5];\n"
        "    sum(w * x) + w[i]\n"
        "}\n"
    )
    assert by_name.graph.fingerprint() == written.graph.fingerprint()


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64", "verilog"])
def test_every_target_gives_the_interpreters_bytes(tname: str) -> None:
    t = runnable_target(tname)
    m = _module()
    ran = 0
    for name, inputs in INPUTS.items():
        want = outcome(lambda: run_function(m, name, inputs))  # noqa: B023
        assert want.startswith("ok "), (name, want)
        why = t.unsupported(m.graph, name)
        if why:  # refused when compiled, never a wrong answer: say what and why
            assert tname == "verilog", (tname, name, why)
            assert all(isinstance(w, str) and w.strip() for w in why), why
            with pytest.raises(ValueError, match=f"verilog cannot compile `{name}`: "):
                t.lower(m.graph, m.provenance, name)
            continue
        got = outcome(lambda: targets.run_module(t, m, name, inputs))  # noqa: B023
        assert got == want, (tname, name)
        ran += 1
    assert ran >= len(INPUTS) // 2, ran


def test_the_optimized_graph_gives_the_same_bytes() -> None:
    from kera_core.interp.api import entry_signature
    from kera_core.opt import optimize

    m = _module()
    opt = optimize(m.graph)
    for name, inputs in INPUTS.items():
        want = outcome(lambda: run_function(m, name, inputs))  # noqa: B023
        # the optimized graph names its parameters arg0, arg1, …: the same values by position
        params = [p for p, _ in entry_signature(opt, name).value_params]
        renamed = dict(zip(params, inputs.values(), strict=True))
        got = outcome(lambda: run_function(opt, name, renamed))  # noqa: B023
        assert got == want, name


LOOPED = """\
const T: u32[4] = [3, 5, 7, 11];
const M: f32[2, 3] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
pub fn mix[N](d: &u32[N]) -> u32 {
    let mut c: u32 = 1;
    for i in 0..N {
        c = c * T[(d[i] & 3) as i64] + T[(i % 4) as i64];
    }
    c
}
pub fn rows[N](x: &f32[N]) -> f32 {
    let mut s = 0.0;
    for i in 0..N {
        for j in 0..3 {
            s += M[i % 2, j] * x[i];
        }
    }
    s
}
pub fn edited[N](x: &f32[N]) -> f32 {
    let mut s = 0.0;
    for i in 0..N {
        let mut w = M;
        w[0, 0] = x[i];
        s += sum(w);
    }
    s + M[0, 0]
}
fn inner(k: i64) -> u32 { let mut a: u32 = 0; for j in 0..k { a += T[j % 4]; } a }
pub fn calls[N](x: &u32[N]) -> u32 { let mut a: u32 = 0; for i in 0..N { a += inner(i as i64) ^ x[i]; } a }
"""


def _loops_allocating(stmts, depth: int = 0) -> list[int]:
    from kera_core.loops import ir

    out = []
    for s in stmts:
        if isinstance(s, ir.Alloc) and depth:
            out.append(depth)
        for attr in ("body", "cond", "then", "orelse"):
            inner = getattr(s, attr, None)
            if isinstance(inner, list):
                out += _loops_allocating(inner, depth + isinstance(s, (ir.Loop, ir.While)))
    return out


def test_a_table_read_in_a_loop_is_built_once_per_call() -> None:
    """The loop program builds a table read inside a loop once, on the function's entry (a
    CRC over N bytes does not rebuild its table N times); an update of a copy copies it
    each time, and the table itself stays as it was."""
    from kera_core.loops.lower import program_of
    from kera_core.loops.target import CPU, GRID

    m = analyzed(LOOPED)
    for target in (CPU, GRID):
        for fn in ("mix", "rows", "inner"):
            body = program_of(m.graph, fn if fn != "inner" else "calls", target)
            for lf in body.functions.values():
                assert not _loops_allocating(lf.body), (fn, lf.name)
    rng = np.random.default_rng(3)
    for fn in ("mix", "rows", "edited", "calls"):
        for n in (0, 1, 5, 13):
            if fn in ("mix", "calls"):
                x = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
            else:
                x = rng.standard_normal(n).astype(np.float32)
            key = "d" if fn == "mix" else "x"
            want = outcome(lambda: run_function(m, fn, {key: x}))  # noqa: B023
            assert want.startswith("ok "), want
            for tname in ("wasm", "x86_64", "arm64"):
                t = runnable_target(tname)
                got = outcome(lambda: targets.run_module(t, m, fn, {key: x}))  # noqa: B023
                assert got == want, (tname, fn, n)
    total = run_function(m, "edited", {"x": np.ones(3, np.float32)})
    assert float(np.asarray(total.outputs[0].value)) == 3 * (1 + 2 + 3 + 4 + 5 + 6) + 1.0


# --- fingerprints ----------------------------------------------------------------------

FP = """\
const W: f32[3] = [1.0, 2.0, 3.0];
const M: i32[2, 2] = [[1, 2], [3, 4]];
const N: f32 = 7.0;
pub fn reads_w(i: i64) -> f32 { W[i] }
pub fn reads_m(i: i64) -> i32 { M[i, 0] }
pub fn unrelated(x: f32) -> f32 { x * N }
"""


def _fingerprints(src: str) -> dict[str, bytes]:
    return {f.name: f.hash for f in analyzed(src).graph.exported()}


def test_changing_one_entry_changes_only_the_fingerprints_of_its_readers() -> None:
    before = _fingerprints(FP)
    after = _fingerprints(FP.replace("[1.0, 2.0, 3.0]", "[1.0, 2.0, 3.5]"))
    assert after["reads_w"] != before["reads_w"]
    assert after["reads_m"] == before["reads_m"]
    assert after["unrelated"] == before["unrelated"]
    after_m = _fingerprints(FP.replace("[3, 4]", "[3, 5]"))
    assert after_m["reads_m"] != before["reads_m"]
    assert after_m["reads_w"] == before["reads_w"]
    # the same values, written otherwise, are the same table only when they lower alike:
    # a suffix changes nothing (the element type is the table's)
    same = _fingerprints(FP.replace("[1.0, 2.0, 3.0]", "[1.0f32, 2.0, 3.0]"))
    assert same == before


def test_an_edit_of_an_entry_in_the_editor_equals_a_cold_analysis() -> None:
    from kera_core.source import Span
    from kera_core.workspace import Document

    doc = Document("file:///t.kera", FP, 1)
    doc.analysis()
    at = FP.index("3.0]")
    doc.edit(Span(at, at + 3), "3.5")
    doc.version = 2
    warm = doc.analysis().module.graph
    cold = analyze(doc.text).module.graph
    assert warm.fingerprint() == cold.fingerprint()
    assert run_function(doc.analysis().module, "reads_w", {"i": np.int64(2)})["result"] == 3.5


def test_edits_of_tables_in_the_editor_equal_cold_analyses() -> None:
    """Each edit — an entry, a ragged row and back, a wrong element type, the shape's
    constant, a use that assigns — analysed incrementally is what a cold open gives."""
    from kera_core.workspace import Document
    from tests.test_incremental_equals_cold import _replaced, _same_as_cold

    doc = Document("file:///tables.kera", TABLES, 1)
    _same_as_cold(doc)
    for needle, new in [
        ("0.375", "0.5"),
        ("[0.0, 0.0, 1.0]]", "[0.0, 1.0]]"),
        ("[0.0, 1.0]]", "[0.0, 0.0, 1.0]]"),
        ("[[-1, 0, 1]", "[[-1, 0.5, 1]"),
        ("[[-1, 0.5, 1]", "[[-1, 0, 1]"),
        ("const TAPS: i64 = 5;", "const TAPS: i64 = 4;"),
        ("const TAPS: i64 = 4;", "const TAPS: i64 = 5;"),
        ("w[0] = 9.0;", "W[0] = 9.0;"),
        ("W[0] = 9.0;", "w[0] = 9.0;"),
        ("const FIRST: f32 = W[1];", "const FIRST: f32 = W[7];"),
    ]:
        _replaced(doc, needle, new)


# --- errors ----------------------------------------------------------------------------

ERRORS = [
    # (source, code, the text the span covers, a piece of the message)
    ("const W: f32[3] = [1.0, 2.0];", "K0302", "[1.0, 2.0]", "has 2 elements"),
    ("const W: f32[2] = [1.0, 2.0, 3.0];", "K0302", "[1.0, 2.0, 3.0]", "it needs 2"),
    ("const M: f32[2, 2] = [[1.0, 2.0], [3.0]];", "K0302", "[3.0]", "`M[1]` has 1 element"),
    ("const M: f32[2, 2] = [[1.0, 2.0], 3.0];", "K0301", "3.0", "an element of constant `M`"),
    ("const M: f32[2] = [[1.0, 2.0], 3.0];", "K0301", "[1.0, 2.0]", "expected `f32`"),
    ("const T: i32[3] = [1, 2.5, 3];", "K0301", "2.5", "expected `i32`, found `f64`"),
    ("const T: f32[2] = [1.0, 2.0f64];", "K0301", "2.0f64", "found `f64`"),
    ("const T: u8[2] = [1, 256];", "K0307", "256", "does not fit in `u8`"),
    ("fn g() -> i64 { 1 }\nconst T: i64[2] = [1, g()];", "K0315", "g()", "not a call"),
    ("const T: f32[2] = [1.0, x];", "K0315", "x", "not a constant"),
    ("const T: i32[2] = [1 / 0, 2];", "K0317", "1 / 0", "division by zero"),
    ("const W: f32[2] = [1.0, 2.0];\nconst X: f32 = W[2];", "K0317", "W[2]", "R0001"),
    ("const T: f32[2] = [T[1], 1.0];", "K0315", "T", "refers to itself"),
    ("const S: f32 = 2.0;\nconst T: f32[S] = [1.0, 2.0];", "K0321", "S", "integer type"),
    ("const T: f32[Q] = [1.0];", "K0201", "Q", "shape of constant `T`"),
    ("const T: f32[2] = 1.0;", "K0301", "1.0", "expected `f32[2]`, found `f32`"),
    ("const T: f32[2] @device = [1.0, 2.0];", "K0301", "T", "declare `f32[2]`"),
    ("const T: &f32[2] = [1.0, 2.0];", "K0301", "T", "not a borrow"),
    ("const T: f32[2.5] = [1.0];", "K0104", "2.5", "expected a dimension"),  # no follow-on
    (
        "const W: f32[2] = [1.0, 2.0];\npub fn f() -> f32 { W[0] = 3.0; W[0] }",
        "K0311",
        "W",
        "cannot assign to constant `W`",
    ),
    (
        "const W: f32[2] = [1.0, 2.0];\npub fn f() -> f32 { W += 1.0; W[0] }",
        "K0311",
        "W",
        "cannot assign to constant `W`",
    ),
    (
        "const C: i64 = 2;\npub fn f() -> i64 { C = 3; C }",
        "K0311",
        "C",
        "cannot assign to constant `C`",
    ),
    (
        "const W: f32[2] = [1.0, 2.0];\nfn g(w: &mut f32[2]) { w[0] = 0.0; }\n"
        "pub fn f() -> f32 { g(&mut W); W[0] }",
        "K0311",
        "&mut W",
        "cannot borrow constant `W` as mutable",
    ),
]


@pytest.mark.parametrize(("src", "code", "at", "says"), ERRORS)
def test_each_mistake_is_one_diagnostic_at_its_place(src, code, at, says) -> None:
    diags = [d for d in analyze(src).diagnostics if d.is_error]
    assert [d.code for d in diags] == [code], [str(d) for d in diags]
    assert spanned(src, diags[0].span) == at
    assert says in diags[0].message, diags[0].message


def test_a_failed_table_is_reported_once_not_at_each_use() -> None:
    src = (
        "const W: f32[3] = [1.0, 2.0];\n"
        "pub fn f(i: i64) -> f32 { W[i] + W[0] }\n"
        "pub fn g() -> f32 { sum(W) }\n"
    )
    assert [d.code for d in analyze(src).diagnostics if d.is_error] == ["K0302"]


def test_a_local_of_the_same_name_is_a_variable() -> None:
    m = analyzed(
        "const W: f32[2] = [1.0, 2.0];\n"
        "pub fn f() -> f32 { let mut W: f32[2] = [5.0, 6.0]; W[0] = 7.0; W[0] + W[1] }\n"
    )
    assert run_function(m, "f", {})["result"] == np.float32(13.0)


# --- tools -----------------------------------------------------------------------------


def test_hover_on_a_table_shows_its_type_and_does_not_fail() -> None:
    from kera_core.ide.hover import hover
    from kera_core.workspace import Document

    a = Document("file:///tables.kera", TABLES, 1).analysis()
    for needle, shown in [
        ("W[k]", "const W: f32[5] = [0.0625"),
        ("CRC_T[(c", "const CRC_T: u32[16] = ["),
        ("ROT[i, j]", "const ROT: f32[3, 3] = [[0.0, -1.0"),
        ("ROWS: f32", "const ROWS: f32[2, 5]"),
        ("SOBEL[i", "const SOBEL: i32[3, 3]"),
    ]:
        h = hover(a, TABLES.index(needle) + 1)
        assert h is not None and shown in h.markdown, (needle, h)
    # a long table shows its start, on one line
    big = "const BIG: u32[256] = [\n" + ",\n".join(str(i * 7) for i in range(256)) + "\n];\n"
    src = big + "pub fn f(i: i64) -> u32 { BIG[i] }\n"
    h = hover(Document("file:///big.kera", src, 1).analysis(), src.index("BIG[i]") + 1)
    assert h is not None and "const BIG: u32[256] = [0, 7, 14," in h.markdown, h
    assert "…" in h.markdown and len(h.markdown) < 400 and "1785" not in h.markdown


def test_every_editor_query_over_a_file_of_tables_answers() -> None:
    """Hover, definition, references, signature help and completion at every offset, and
    the whole-file queries, on the file of tables: no query fails; the table's uses in
    functions and in other constants are its references, and a rename renames them."""
    from kera_core.ide import completion, hover, inlay, navigation, outline, signature, tokens
    from kera_core.source import Span
    from kera_core.workspace import Document

    a = Document("file:///tables.kera", TABLES, 1).analysis()
    size = len(TABLES.encode())
    outline.document_symbols(a)
    tokens.semantic_tokens(a)
    inlay.inlay_hints(a, Span(0, size))
    for at in range(size):
        hover.hover(a, at)
        navigation.definition(a, at)
        navigation.references(a, at)
        signature.signature_help(a, at)
        if at % 5 == 0:
            completion.complete(a, at)
    decl = TABLES.index("W: f32")
    assert navigation.definition(a, TABLES.index("W[k]")) == Span(decl, decl + 1)
    uses = [TABLES[r.start : r.end + 3] for r in navigation.references(a, decl)]
    assert "W[0]" in uses and "W, [" in uses and "W[k]" in uses, uses  # W2, ROWS, smooth
    edits = navigation.rename(a, decl, "WEIGHTS")
    assert len(edits) == len(uses) and {e.new_text for e in edits} == {"WEIGHTS"}


def test_the_formatter_keeps_a_table_and_is_idempotent() -> None:
    once = format_text(TABLES)
    assert once.ok, once.diagnostics
    again = format_text(once.text)
    assert again.ok and not again.changed
    assert analyze(once.text).module.graph.fingerprint() == _module().graph.fingerprint()
    squeezed = "const M:f32[2,2]=[[1.0,2.0],[3.0,4.0]];\nconst T:i32[3]=[1,\n2,3];\n"
    pretty = format_text(squeezed)
    assert pretty.ok and "const M: f32[2, 2] = [[1.0, 2.0], [3.0, 4.0]];" in pretty.text
    assert not format_text(pretty.text).changed


def test_kera_fmt_check_accepts_a_formatted_table(tmp_path) -> None:
    p = tmp_path / "t.kera"
    p.write_text(format_text(TABLES).text)
    r = subprocess.run(
        [sys.executable, "-m", "kera_core", "fmt", "--check", str(p)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
