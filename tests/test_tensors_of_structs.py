"""Tensors of structs (`Body[N]`, issue 15 item 6): the checker's rules and diagnostics,
what the types, graphs and fingerprints are, and programs that read, write, fill, iterate,
pass and return them giving the interpreter's bits on the loop program and on every
runnable target.

A tensor of structs is laid out as a structure of arrays: the graph holds it as a struct of
tensors (one per field), `bodies[i].x` reads the tensor `bodies.x` at `i`, and the loop
layer flattens it into one buffer per field (docs/language.md §8.1, docs/lowering.md), so no
backend has code for it."""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.cli import run as run_cli
from kera_core.interp.api import run_function as reference
from kera_core.ir.types import (
    F32,
    PRIMS,
    Ref,
    Struct,
    Sym,
    Tensor,
    holds_tensor,
    is_soa,
    soa_elem,
    soa_of,
    soa_shape,
)
from kera_core.keg import read_keg, write_keg
from kera_core.loops import lower_program, run_function
from kera_core.loops.target import CPU, GRID
from kera_core.targets import run_module
from tests.outcomes import (
    analyzed,
    errors,
    generated_inputs,
    outcome,
    runnable_target,
    same_as_reference,
    spanned,
)
from tests.tools import tool_missing

SRC = """\
struct Vec2 { x: f32, y: f32 }
struct Body { pos: Vec2, v: f32, m: f32, tag: (i32, f32) }

fn pull[N](bodies: &Body[N], i: i64) -> f32 {
    let me = bodies[i];
    let mut a: f32 = 0.0;
    for j in 0..N {
        a += bodies[j].m * (bodies[j].pos.x - me.pos.x);
    }
    a
}

pub fn step[N](bodies: &mut Body[N], dt: f32) {
    for i in 0..N {
        bodies[i].v += dt * pull(bodies, i);
    }
    for i in 0..N {
        bodies[i].pos.x = bodies[i].pos.x + dt * bodies[i].v;
        bodies[i].tag.0 += 1;
    }
}

pub fn energy[N](bodies: &Body[N]) -> f32 {
    let mut e: f32 = 0.0;
    for b in bodies {
        e += 0.5 * b.m * b.v * b.v + b.tag.1;
    }
    e
}

pub fn ring[N](r: f32) -> Body[N] {
    let mut out: Body[N] = zeros();
    for i in 0..N {
        let t = (i as f32) * r;
        out[i] = Body { pos: Vec2 { x: t, y: -t }, v: r, m: 1.0, tag: (i as i32, t) };
        out[i].pos = Vec2 { x: out[i].pos.y, y: out[i].pos.x };
    }
    out
}

pub fn swap_ends[N](mut bodies: Body[N]) -> (Body[N], f32) {
    let first = bodies[0];
    bodies[0] = bodies[N - 1];
    bodies[N - 1] = first;
    let s = sum(&bodies.m);
    (bodies, s)
}

pub fn through[N](bodies: Body[N], dt: f32) -> Body[N] {
    let mut b = bodies;
    step(&mut b, dt);
    b
}

pub fn grid[N, M](cells: &mut Vec2[N, M]) {
    for i in 0..N {
        for j in 0..M {
            cells[i, j].x += cells[i, j].y * 2.0;
        }
    }
}
"""

FNS = ("step", "energy", "ring", "swap_ends", "through", "grid")
CALL_FREE = ("energy", "ring", "grid")  # what verilog runs


@pytest.fixture(scope="module")
def m():
    return analyzed(SRC)


CASES = [(n, seed, adv) for n in (1, 5) for seed, adv in ((1, False), (2, True))]


# --- types and graphs -------------------------------------------------------------------------


def test_the_type_is_a_struct_of_tensors(m) -> None:
    body = m.env.structs["Body"]
    params = m.graph.functions["step"].type.params
    t = params[0]
    assert isinstance(t, Ref) and t.mutable and is_soa(t)
    soa = t.inner
    assert soa == soa_of(body, (Sym(0),)) and soa_elem(soa) == body
    assert soa_shape(soa) == (Sym(0),) and holds_tensor(soa)
    assert dict(soa.fields)["v"] == Tensor(F32, (Sym(0),))
    assert dict(soa.fields)["tag"] == Struct(
        "", (("0", Tensor(PRIMS["i32"], (Sym(0),))), ("1", Tensor(F32, (Sym(0),)))), soa=True
    )
    assert soa.display(("N",)) == "Body[N]"
    assert dict(soa.fields)["pos"].display(("N",)) == "Vec2[N]"
    assert dict(soa.fields)["tag"].display(("N",)) == "(i32, f32)[N]"
    # a struct of tensors that happens to have the same fields is another type
    assert Struct(soa.name, soa.fields) != soa


def test_an_element_field_reads_the_fields_tensor() -> None:
    """`bodies[i].x` and `bodies.x[i]` are one graph: the field's tensor, then the index."""
    head = "struct B { x: f32, v: f32 }\n"
    one = analyzed(head + "pub fn f[N](b: &B[N], i: i64) -> f32 { b[i].x * b[i].v }\n")
    two = analyzed(head + "pub fn f[N](b: &B[N], i: i64) -> f32 { b.x[i] * b.v[i] }\n")
    assert one.graph.fingerprint() == two.graph.fingerprint()
    ops = [n.op for n in one.graph.nodes.values()]
    assert "struct" not in ops  # no element struct is built to read one field


def test_fingerprint_ignores_local_names_and_layout(m) -> None:
    base = m.graph.fingerprint()
    renamed = SRC.replace("let mut out: Body[N] = zeros();", "let mut res: Body[N] = zeros();")
    renamed = renamed.replace("out[i]", "res[i]").replace("    out\n", "    res\n")
    renamed = renamed.replace("for b in bodies {\n        e += 0.5 * b.m * b.v * b.v + b.tag.1;",
                              "for q in bodies {\n        e += 0.5 * q.m * q.v * q.v + q.tag.1;")  # fmt: skip
    assert renamed != SRC
    assert analyzed(renamed).graph.fingerprint() == base
    relaid = SRC.replace(
        "struct Vec2 { x: f32, y: f32 }", "struct Vec2 {\n    x: f32,\n    y: f32,\n}"
    )
    assert analyzed(relaid).graph.fingerprint() == base
    reordered = SRC.replace("v: f32, m: f32", "m: f32, v: f32")
    assert analyzed(reordered).graph.fingerprint() != base  # the field order is the layout


def test_keg_round_trip(m) -> None:
    g = m.graph
    data = write_keg(g, m.provenance)
    k = read_keg(data)
    assert k.graph.fingerprint() == g.fingerprint()
    assert k.graph.functions["ring"].type == g.functions["ring"].type
    assert is_soa(k.graph.functions["ring"].type.result)
    assert write_keg(k.graph, k.provenance) == data


def test_the_keg_reader_checks_a_tensor_of_structs() -> None:
    """Type tag 10 (docs/graph.md): each field a host tensor, or again a tensor of structs,
    all of one shape; anything else is a `bad-type` error, never a wrong type."""
    from kera_core.ir.encoding import Writer
    from kera_core.keg.cursor import Cursor, decode_type
    from kera_core.keg.errors import KegError

    def decoded(t):
        w = Writer()
        t.encode(w)
        data = w.getvalue()
        return decode_type(Cursor(data, 0, len(data), "types"))

    good = soa_of(Struct("B", (("x", F32), ("p", Struct("", (("0", F32),))))), (Sym(0), 3))
    assert decoded(good) == good
    for bad in (
        Struct("B", (("x", Tensor(F32, (3,))), ("v", Tensor(F32, (4,)))), soa=True),
        Struct("B", (("x", F32),), soa=True),
        Struct("B", (), soa=True),
        Struct("B", (("x", Tensor(F32, (3,), "device")),), soa=True),
    ):
        with pytest.raises(KegError, match="a tensor of structs whose fields"):
            decoded(bad)


# --- the checker ------------------------------------------------------------------------------


HEAD = "struct B { x: f32, v: f32 }\nstruct L { w: f32[2] }\nstruct E {}\n"


@pytest.mark.parametrize(
    ("body", "code", "where", "message"),
    [
        ("pub fn f[N](b: &B[N]) -> f32 { b[0].q }", "K0204", "q", "struct `B` has no field `q`"),
        ("pub fn f[N](b: &mut B[N]) { b[0].vv = 1.0; }", "K0204", "vv", "did you mean `v`"),
        ("pub fn f[N](b: &B[N]) -> f32 { b.q[0] }", "K0204", "q", "struct `B` has no field `q`"),
        (
            "pub fn f[N](l: &L[N]) { }",
            "K0324",
            "L[N]",
            "a tensor's elements are numbers or structs of numbers, but `L` holds a tensor",
        ),
        ("pub fn f[N](e: &E[N]) { }", "K0324", "E[N]", "`E` has no fields"),
        ("pub fn f[N](b: &B[N]) -> f32 { b[0, 1].x }", "K0304", "b[0, 1]", "expected 1 index"),
        ("pub fn f[N](b: &B[N]) -> B { b[1.5] }", "K0301", "1.5", "an index must be an integer"),
        (
            "pub fn f[N](b: &mut B[N]) { b[0] = 2.0; }",
            "K0301",
            "b[0] = 2.0",
            "expected `B`, found `f64`",
        ),
        (
            "pub fn f[N]() -> B[N] { full(1.0) }",
            "K0301",
            "full(1.0)",
            "a tensor of structs (`B[N]`) starts from `zeros()`",
        ),
        (
            "pub fn f[N](b: &B[N]) -> f32[N] { b.x }",
            "K0408",
            "b.x",
            "cannot move `b.x` out of the borrow `b`",
        ),
        (
            "pub fn f[N](b: &B[N]) { b[0].x = 1.0; }",
            "K0405",
            "b",
            "cannot assign to immutable parameter `b`",
        ),
        (
            "fn g[N](b: B[N]) -> f32 { 1.0 }\npub fn f[N](b: B[N]) -> f32 { g(b) + b[0].x }",
            "K0401",
            "b",
            "use of moved value `b`",
        ),
        (
            "pub fn f[N](b: &B[N]) -> f32 { sum(b) }",
            "K0308",
            "sum(b)",
            "a reduction expects a tensor, found `&B[N]`",
        ),
    ],
)
def test_checker_diagnostics(body: str, code: str, where: str, message: str) -> None:
    src = HEAD + body + "\n"
    errs = errors(src)
    assert len(errs) == 1, [str(d) for d in errs]
    (d,) = errs
    assert d.code == code and spanned(src, d.span).endswith(where) and message in d.message, str(d)


def test_element_copies_and_borrowed_fields_check_clean() -> None:
    src = HEAD + (
        "pub fn f[N](mut b: B[N]) -> (B[N], f32) {\n"
        "    let first = b[0];\n"  # a copy: `b` is still whole
        "    b[0].x = first.v;\n"
        "    let s = sum(&b.x) + first.x;\n"  # a field's tensor, borrowed
        "    (b, s)\n"
        "}\n"
    )
    assert errors(src) == []


# --- running: the interpreter, the loop program and every target ------------------------------


def test_the_interpreter_reads_and_writes_by_field(m) -> None:
    n = 3
    bodies = {
        "pos": {"x": np.array([0.0, 1.0, 3.0], np.float32), "y": np.zeros(n, np.float32)},
        "v": np.zeros(n, np.float32),
        "m": np.ones(n, np.float32),
        "tag": {"0": np.arange(n, dtype=np.int32), "1": np.zeros(n, np.float32)},
    }
    r = reference(m, "step", {"bodies": bodies, "dt": np.float32(1.0)})
    out = r["bodies"]
    assert np.array_equal(out["v"], [4.0, 1.0, -5.0])  # Σ m·(x_j − x_i)
    assert np.array_equal(out["pos"]["x"], [4.0, 2.0, -2.0])
    assert np.array_equal(out["tag"]["0"], [1, 2, 3])
    ring = reference(m, "ring", {"r": np.float32(2.0)}, {0: 3})["result"]
    assert np.array_equal(ring["pos"]["x"], [0.0, -2.0, -4.0])  # swapped: x is the old y
    assert np.array_equal(ring["tag"]["0"], [0, 1, 2])


def test_a_struct_built_from_one_zeros_holds_separate_tensors() -> None:
    """The graph shares one `zeros()` node between fields; writing one field must leave the
    others as they were (the interpreter counts the tensors a struct value holds)."""
    src = "struct P { a: f32, b: f32 }\npub fn f[N](x: &f32[N]) -> P[N] {\n"
    src += "    let mut p: P[N] = zeros();\n    for i in 0..N { p[i].a = x[i]; }\n    p\n}\n"
    mod = analyzed(src)
    r = reference(mod, "f", {"x": np.arange(1, 4, dtype=np.float32)})["result"]
    assert np.array_equal(r["a"], [1.0, 2.0, 3.0]) and np.array_equal(r["b"], [0.0, 0.0, 0.0])


def test_the_loop_program_gives_the_interpreters_bits(m) -> None:
    for fn in FNS:
        progs = {t: lower_program(m.graph, fn, t) for t in (CPU, GRID)}
        for n, seed, adv in CASES:
            a = generated_inputs(m, fn, n, seed, adv, dims={0: n, 1: n + 1})
            want = outcome(lambda: reference(m, fn, a, {0: n}))  # noqa: B023
            assert want.startswith("ok "), (fn, n, want)
            for t, prog in progs.items():
                got = outcome(lambda: run_function(m, fn, a, {0: n}, program=prog))  # noqa: B023
                assert got == want, (fn, n, seed, adv, t)


def _target(tname: str, m, fns=FNS) -> None:
    t = runnable_target(tname)
    for fn in fns:
        assert not t.unsupported(m.graph, fn), (tname, fn, t.unsupported(m.graph, fn))
        for n, seed, adv in CASES:
            a = generated_inputs(m, fn, n, seed, adv, dims={0: n, 1: n + 1})
            same_as_reference(
                m,
                fn,
                a,
                lambda: run_module(t, m, fn, a),  # noqa: B023
                tname,
                fn,
                n,
                seed,
            )


def test_wasm_gives_the_interpreters_bits(m) -> None:
    _target("wasm", m)


def test_x86_64_gives_the_interpreters_bits(m) -> None:
    _target("x86_64", m)


def test_arm64_gives_the_interpreters_bits(m) -> None:
    _target("arm64", m)


def test_verilog_gives_the_interpreters_bits(m) -> None:
    t = runnable_target("verilog")
    for fn in CALL_FREE:
        assert not t.unsupported(m.graph, fn), (fn, t.unsupported(m.graph, fn))
        a = generated_inputs(m, fn, 3, 1, dims={0: 3, 1: 4})
        same_as_reference(m, fn, a, lambda: run_module(t, m, fn, a), "verilog", fn)  # noqa: B023


def test_ptx_assembles_with_ptxas(m) -> None:
    """The GPU target compiles tensors of structs (ptxas checks the assembly here)."""
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    texts = []
    for fn in FNS:
        assert not P.unsupported(m.graph, fn), (fn, P.unsupported(m.graph, fn))
        texts.append(P.compiled(m.graph, fn).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)


def test_kera_run_inputs_name_the_fields(m, tmp_path, capsys) -> None:
    """`--inputs` holds one array per field, named by its path (`bodies.pos.x`,
    `bodies.tag.0`); their shapes bind the dimensions; `--out` writes them back alike."""
    path = tmp_path / "b.kera"
    path.write_text(SRC)
    inp = tmp_path / "in.npz"
    n = 4
    arrays = {
        "bodies.pos.x": np.arange(n, dtype=np.float32),
        "bodies.pos.y": np.zeros(n, np.float32),
        "bodies.v": np.ones(n, np.float32),
        "bodies.m": np.full(n, 2.0, np.float32),
        "bodies.tag.0": np.zeros(n, np.int32),
        "bodies.tag.1": np.zeros(n, np.float32),
    }
    np.savez(inp, **arrays)
    out = tmp_path / "out.npz"
    rc = run_cli.main([str(path), "--entry", "energy", "--inputs", str(inp), "--out", str(out)])
    text, err = capsys.readouterr()
    assert rc == 0, err
    assert "dims N=4\n" in text and "input bodies Body[4] sha3-256:" in text
    assert np.load(out)["result"] == np.float32(4.0)  # Σ ½·2·1²
    np.savez(inp, **{**arrays, "dt": np.float32(0.0)})
    rc = run_cli.main([str(path), "--entry", "step", "--inputs", str(inp), "--out", str(out)])
    _, err = capsys.readouterr()
    assert rc == 0, err
    got = np.load(out)
    assert sorted(got) == sorted(arrays)
    assert np.array_equal(got["bodies.tag.0"], [1, 1, 1, 1])
    np.savez(inp, **{**arrays, "bodies.v": np.ones(3, np.float32)})
    rc = run_cli.main([str(path), "--entry", "energy", "--inputs", str(inp)])
    _, err = capsys.readouterr()
    assert rc != 0 and "`bodies.v` has shape (3,)" in err, err


# --- the language server ------------------------------------------------------------------------


def test_hover_and_completion_see_the_element() -> None:
    from kera_core.ide import completion, hover
    from kera_core.workspace import Document

    src = (
        "struct V { x: f32, y: f32 }\nstruct B { p: V, m: f32 }\n"
        "pub fn f[N](b: &B[N]) -> f32 {\n    let q = b[0].p.;\n    b[1].m\n}\n"
    )
    a = Document("file:///t.kera", src, 1).analysis()

    def at(text: str, k: int) -> int:
        return len(src[: src.index(text) + k].encode())

    got = {(c.label, c.detail) for c in completion.complete(a, at("b[0].p.", 7))}
    assert got == {("x", "f32"), ("y", "f32")}, got
    got = {(c.label, c.detail) for c in completion.complete(a, at("b[0].p.", 5))}
    assert got == {("p", "V"), ("m", "f32")}, got
    h = hover.hover(a, at("b[1].m", 5))
    assert h is not None and "B.m: f32" in h.markdown, h
    h = hover.hover(a, at("b: &B", 0))
    assert h is not None and "b: &B[N]" in h.markdown, h


def test_a_struct_field_may_be_a_fixed_size_tensor_of_structs() -> None:
    src = (
        "struct Body { x: f32, v: f32 }\nstruct World { bs: Body[3], t: f32 }\n"
        "pub fn f(w: &mut World) {\n"
        "    for i in 0..3 { w.bs[i].x += w.bs[i].v * w.t; }\n    w.t += 1.0;\n}\n"
    )
    mod = analyzed(src)
    a = generated_inputs(mod, "f", 3, 1, dims={0: 3, 1: 4})
    want = outcome(lambda: reference(mod, "f", a))
    assert want.startswith("ok ")
    assert outcome(lambda: run_function(mod, "f", a)) == want
    t = runnable_target("wasm")
    same_as_reference(mod, "f", a, lambda: run_module(t, mod, "f", a), "wasm")
    errs = errors("struct Body { x: f32 }\nstruct W { bs: Body[N] }\n")
    assert [d.code for d in errs] == ["K0323"], [str(d) for d in errs]
