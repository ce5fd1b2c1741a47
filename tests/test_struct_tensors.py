"""Structs and tuples holding tensors (issue 15, item 6): the checker's rules and ownership
diagnostics, what the types and fingerprints are, and programs that build, pass, borrow,
update and return them giving the interpreter's bits on the loop program and on every
runnable target.

A struct or a tuple is flattened into its fields by the loop layer (docs/lowering.md), so a
tensor field is one more buffer in the function's ABI and no backend has code for it."""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.cli import run as run_cli
from kera_core.ide import completion, hover
from kera_core.interp.api import run_function as reference
from kera_core.ir.types import F32, Struct, Tensor, holds_tensor, tuple_type
from kera_core.keg import read_keg, write_keg
from kera_core.loops import lower_program, run_function
from kera_core.loops.target import CPU, GRID
from kera_core.targets import run_module
from kera_core.workspace import Document
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
const W: i64 = 3;

/// A dense layer: `x·w + b`, scaled by `k`.
struct Layer { w: f32[W, 2], b: f32[2], k: f32 }

struct Net { first: Layer, scale: f32 }

fn dense[N](l: &Layer, x: &f32[N, W]) -> f32[N, 2] {
    (matmul(x, &l.w) + l.b) * l.k
}

pub fn make(w: f32[W, 2], b: f32[2], k: f32) -> Layer {
    Layer { w: w, b: b * 2.0, k: k }
}

pub fn apply[N](l: &Layer, x: &f32[N, W]) -> f32[N, 2] {
    dense(l, x)
}

pub fn nested[N](net: Net, x: &f32[N, W]) -> (f32[N, 2], Net) {
    let y = dense(&net.first, x) * net.scale;
    (y, net)
}

fn split[N](x: &f32[N]) -> (f32[N], f32[N], f32) {
    (x * 2.0, -x, sum(x))
}

pub fn joined[N](t: (f32[N], f32[N]), k: f32) -> f32[N] {
    let (a, b) = t;
    a * k + b
}

pub fn rejoin[N](x: f32[N]) -> (f32, f32[N]) {
    let (a, b, s) = split(&x);
    let t = (a, b);
    let c = joined(t, s);
    (sum(&c), x)
}

pub fn update(l: &mut Layer, d: f32) {
    for j in 0..2 {
        l.b[j] = l.b[j] + d;
        for i in 0..W {
            l.w[i, j] = l.w[i, j] * d;
        }
    }
    l.k = l.k - d;
}

pub fn replace(l: Layer, b: f32[2]) -> Layer {
    let mut m = l;
    m.b = b;
    m
}

pub fn carried[N](x: &f32[N]) -> (f32[N], i64) {
    let mut t = (x * 1.0, 0);
    for i in 0..N {
        if x[i] > 0.5 {
            t = (t.0 * 0.5, t.1 + 1);
        }
    }
    t
}

pub fn chosen[N](x: f32[N], y: f32[N], c: bool) -> (f32[N], f32) {
    let t: (f32[N], f32) = if c { (x, 1.0) } else { (y, 2.0) };
    t
}

pub fn rebuilt(l: Layer) -> Layer {
    Layer { k: l.k, w: l.w * 0.5, b: l.b }  // `l.b` moves `l`: the last use of it
}

pub fn stepped(l: Layer, w: f32[W, 2], b: f32[2]) -> (Layer, f32[2]) {
    let mut m = l;
    for i in 0..3 {
        m = rebuilt(m);
    }
    (m, make(w, b, 1.0).b)
}

pub fn shown(l: Layer) -> f32 ! io {
    print(l);
    print("\\n");
    l.k
}
"""

FNS = (
    "make", "apply", "nested", "joined", "rejoin", "update", "replace", "carried", "chosen",
    "rebuilt", "stepped",
)  # fmt: skip
PRINTS = ("shown",)


@pytest.fixture(scope="module")
def m():
    return analyzed(SRC)


CASES = [(n, seed, adv) for n in (0, 1, 5) for seed, adv in ((1, False), (2, True))]


# --- the checker ------------------------------------------------------------------------------


HEAD = "struct L { w: f32[3], k: f32 }\nfn use_l(l: L) -> f32 { l.k }\n"


@pytest.mark.parametrize(
    ("body", "code", "where", "message", "note"),
    [
        (  # a struct holding a tensor moves: use after move, pointing at the move
            "let l = L { w: w, k: 1.0 };\n let m = l;\n l.k + m.k",
            "K0401",
            "l",
            "use of moved value `l`",
            "value moved here",
        ),
        (  # the tensor moved into the struct
            "let l = L { w: w, k: 1.0 };\n sum(&w) + l.k",
            "K0401",
            "w",
            "use of moved value `w`",
            "value moved here",
        ),
        (  # passed by value to a function
            "let l = L { w: w, k: 1.0 };\n let a = use_l(l);\n a + l.k",
            "K0401",
            "l",
            "use of moved value `l`",
            "value moved here",
        ),
        (  # moving a field out moves the whole struct: no partial moves
            "let l = L { w: w, k: 1.0 };\n let v = l.w;\n sum(&v) + l.k",
            "K0401",
            "l",
            "use of moved value `l`",
            "value partly moved here",
        ),
        (  # the same in a loop
            "let l = L { w: w, k: 1.0 };\n let mut s = 0.0f32;\n"
            " for i in 0..2 { s += sum(l.w); let v = l.w; }\n s",
            "K0401",
            "l",
            "use of moved value `l`",
            "value partly moved here, in the previous iteration of the loop",
        ),
        (  # a tuple is taken apart whole
            "let t = (w, 1.0f32);\n let (a, b) = t;\n sum(&a) + b + t.1",
            "K0401",
            "t",
            "use of moved value `t`",
            "value moved here",
        ),
        (  # assigning a tensor to a field moves it
            "let mut l = L { w: zeros(), k: 1.0 };\n l.w = w;\n sum(&w) + l.k",
            "K0401",
            "w",
            "use of moved value `w`",
            "value moved here",
        ),
    ],
)
def test_ownership_diagnostics(body: str, code: str, where: str, message: str, note: str) -> None:
    src = HEAD + f"pub fn f(w: f32[3]) -> f32 {{\n {body}\n}}\n"
    errs = errors(src)
    assert len(errs) == 1, [str(d) for d in errs]
    (d,) = errs
    assert d.code == code and spanned(src, d.span) == where and message in d.message, str(d)
    assert any(note in r.message for r in d.related), str(d)


def test_a_field_behind_a_borrow_is_not_moved_out() -> None:
    src = HEAD + "pub fn f(l: &L) -> f32[3] { l.w }\n"
    (d,) = errors(src)
    assert d.code == "K0408" and spanned(src, d.span) == "l.w"
    assert "out of the borrow `l`" in d.message and d.related[0].message == "`l` is a borrow"
    src = HEAD + "pub fn f(l: &mut L) -> L { l }\n"
    (d,) = errors(src)
    assert d.code == "K0408" and spanned(src, d.span) == "l"


def test_the_fix_borrows_the_field() -> None:
    src = HEAD + "pub fn f(l: L) -> f32 {\n    let v = l.w;\n    sum(&v) + l.k\n}\n"
    (d,) = errors(src)
    assert d.code == "K0401" and d.fix is not None and d.fix.title == "borrow the field with `&`"
    (edit,) = d.fix.edits
    fixed = src.encode()
    fixed = (fixed[: edit.span.start] + edit.new_text.encode() + fixed[edit.span.end :]).decode()
    assert "let v = &l.w;" in fixed and errors(fixed) == []


def test_a_field_move_moves_the_whole_struct() -> None:
    """No partial moves: what is read after a field moved out must be read before."""
    body = "pub fn f(l: L) -> L {{\n    {}\n}}\n"
    late = HEAD + body.format("L { w: l.w, k: l.k }")
    (d,) = errors(late)
    assert (
        d.code == "K0401"
        and spanned(late, d.span) == "l"
        and spanned(late, d.related[0].span) == "l.w"
    )
    assert d.related[0].message == "value partly moved here"
    assert errors(HEAD + body.format("L { k: l.k, w: l.w }")) == []
    # a field of a temporary moves alone (the rest is dropped)
    assert errors(HEAD + "pub fn f(w: f32[3]) -> f32[3] { L { w: w, k: 1.0 }.w }\n") == []


def test_fields_borrowed_read_and_written_check_clean() -> None:
    src = HEAD + (
        "pub fn f(mut l: L, w2: f32[3]) -> (L, f32) {\n"
        "    let s = sum(&l.w) + sum(l.w * 2.0) + l.k;\n"  # reads and borrows
        "    l.w[0] = s;\n"
        "    l.w = w2;\n"  # a whole field replaced: the old tensor is dropped
        "    (l, s)\n"
        "}\n"
    )
    assert errors(src) == []


@pytest.mark.parametrize(
    ("src", "code", "where", "message"),
    [
        (
            "struct S { w: f32[N] }\n",
            "K0323",
            "N",
            "`N` is not a constant: the dimensions of a tensor field of `S` are numbers or"
            " integer constants",
        ),
        (
            "struct S { w: f32[2] @device }\n",
            "K0323",
            "f32[2] @device",
            "a struct's tensor fields live in host memory",
        ),
        (
            "pub fn f(x: f32[2] @device) -> (f32[2] @device, f32) { (x, 1.0) }\n",
            "K0323",
            "f32[2] @device",
            "a tuple's tensors live in host memory",
        ),
        (
            "struct S { w: f32[2] }\npub fn f(x: f32[3]) -> S { S { w: x } }\n",
            "K0302",
            "w: x",
            "field `w` of `S` is `f32[2]`, but this is `f32[3]`: dimension 0 is 3, not 2",
        ),
        (
            "struct S { w: f32[2] }\npub fn f(x: f64[2]) -> S { S { w: x } }\n",
            "K0301",
            "w: x",
            "expected `f32[2]`, found `f64[2]`",
        ),
        (
            "struct S { w: &f32[2] }\n",
            "K0301",
            "&f32[2]",
            "struct fields are numbers, bools, tensors, structs or tuples, not `&f32[2]`",
        ),
        (  # a struct holding a tensor is no tensor's element (tests/test_tensors_of_structs.py)
            "struct S { w: f32[2] }\npub fn f[N](s: &S[N]) { }\n",
            "K0324",
            "S[N]",
            "`S` holds a tensor",
        ),
        (
            "pub fn g[N](t: (f32[N], f32[N])) -> f32 { 1.0 }\n"
            "pub fn f(a: f32[2], b: f32[3]) -> f32 { g((a, b)) }\n",
            "K0310",
            "(a, b)",
            "dimension `N` of `g` is 2 from an earlier argument, but `t` gives 3",
        ),
    ],
)
def test_checker_diagnostics(src: str, code: str, where: str, message: str) -> None:
    errs = errors(src)
    assert len(errs) == 1, [str(d) for d in errs]
    (d,) = errs
    assert d.code == code and spanned(src, d.span) == where and message in d.message, str(d)


def test_a_dimension_constant_sizes_a_field() -> None:
    src = "const H: i64 = 2 * 2;\nstruct S { w: f32[H, 3], v: (f32[H], i32) }\n"
    a = analyze(src)
    assert not a.has_errors
    s = a.module.env.structs["S"]
    assert s.fields[0][1] == Tensor(F32, (4, 3))  # `f32[H, 3]` *is* `f32[4, 3]`
    assert holds_tensor(s) and holds_tensor(s.fields[1][1])
    assert not holds_tensor(Struct("P", (("x", F32),)))
    assert str(tuple_type((Tensor(F32, (4,)), F32))) == "(f32[4], f32)"


# --- the fingerprint ----------------------------------------------------------------------


def test_fingerprint_ignores_local_names_and_layout(m) -> None:
    base = m.graph.fingerprint()
    renamed = (
        SRC.replace("let mut m = l;\n    m.b = b;\n    m", "let mut out = l;\n    out.b = b;\n    out")
        .replace("let (a, b) = t;\n    a * k + b", "let (p, q) = t;\n    p * k + q")
        .replace("let y = dense(&net.first, x) * net.scale;\n    (y, net)",
                 "let r = dense(&net.first, x) * net.scale;\n    (r, net)")
    )  # fmt: skip
    assert renamed != SRC
    assert analyzed(renamed).graph.fingerprint() == base
    relaid = SRC.replace(
        "struct Net { first: Layer, scale: f32 }",
        "struct Net {\n    first: Layer,\n    scale: f32,\n}",
    )
    assert analyzed(relaid).graph.fingerprint() == base
    resized = SRC.replace("const W: i64 = 3;", "const W: i64 = 4;")
    assert analyzed(resized).graph.fingerprint() != base


def test_keg_round_trip(m) -> None:
    g = m.graph
    data = write_keg(g, m.provenance)
    k = read_keg(data)
    assert k.graph.fingerprint() == g.fingerprint()
    assert k.graph.functions["make"].type == g.functions["make"].type
    assert write_keg(k.graph, k.provenance) == data


# --- running: the interpreter, the loop program and every target ------------------------------


def test_results_are_dicts_by_field_and_print_shows_the_tensors(m) -> None:
    w = np.arange(6, dtype=np.float32).reshape(3, 2)
    r = reference(m, "make", {"w": w, "b": np.ones(2, np.float32), "k": np.float32(0.5)})
    got = r["result"]
    assert np.array_equal(got["w"], w) and np.array_equal(got["b"], [2.0, 2.0]) and got["k"] == 0.5
    layer = {"w": w, "b": np.zeros(2, np.float32), "k": np.float32(1.5)}
    assert reference(m, "shown", {"l": layer}).printed == (
        "{[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [0.0, 0.0], 1.5}\n"
    )


def test_the_loop_program_gives_the_interpreters_bits(m) -> None:
    for fn in (*FNS, *PRINTS):
        progs = {t: lower_program(m.graph, fn, t) for t in (CPU, GRID)}
        for n, seed, adv in CASES:
            a = generated_inputs(m, fn, n, seed, adv)
            want = outcome(lambda: reference(m, fn, a))  # noqa: B023
            assert want.startswith("ok "), (fn, n, want)
            for t, prog in progs.items():
                got = outcome(lambda: run_function(m, fn, a, program=prog))  # noqa: B023
                assert got == want, (fn, n, seed, adv, t)


def _target(tname: str, m) -> None:
    t = runnable_target(tname)
    for fn in (*FNS, *PRINTS):
        assert not t.unsupported(m.graph, fn), (tname, fn, t.unsupported(m.graph, fn))
        for n, seed, adv in CASES:
            a = generated_inputs(m, fn, n, seed, adv)
            same_as_reference(m, fn, a, lambda: run_module(t, m, fn, a), tname, fn, n, seed)  # noqa: B023


def test_wasm_gives_the_interpreters_bits(m) -> None:
    _target("wasm", m)


def test_x86_64_gives_the_interpreters_bits(m) -> None:
    _target("x86_64", m)


def test_arm64_gives_the_interpreters_bits(m) -> None:
    _target("arm64", m)


CALL_FREE = (
    "make",
    "joined",
    "update",
    "replace",
    "carried",
    "chosen",
    "rebuilt",
)  # what verilog runs


def test_verilog_gives_the_interpreters_bits(m) -> None:
    t = runnable_target("verilog")
    for fn in CALL_FREE:
        assert not t.unsupported(m.graph, fn), (fn, t.unsupported(m.graph, fn))
        a = generated_inputs(m, fn, 3, 1)
        same_as_reference(m, fn, a, lambda: run_module(t, m, fn, a), "verilog", fn)  # noqa: B023


def test_ptx_assembles_with_ptxas(m) -> None:
    """The GPU target compiles structs and tuples holding tensors (it runs them where a CUDA
    device is, through `kera run --target ptx`; here ptxas checks the assembly)."""
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    texts = []
    for fn in (*FNS, *PRINTS):
        assert not P.unsupported(m.graph, fn), (fn, P.unsupported(m.graph, fn))
        texts.append(P.compiled(m.graph, fn).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)


def test_a_mut_struct_is_updated_in_place(m) -> None:
    layer = {
        "w": np.ones((3, 2), np.float32),
        "b": np.array([1.0, 2.0], np.float32),
        "k": np.float32(4.0),
    }
    r = reference(m, "update", {"l": layer, "d": np.float32(0.5)})
    out = r["l"]
    assert np.array_equal(out["w"], np.full((3, 2), 0.5, np.float32))
    assert np.array_equal(out["b"], [1.5, 2.5]) and out["k"] == 3.5


def test_kera_run_inputs_name_the_fields(m, tmp_path, capsys) -> None:
    """`--inputs` holds a struct's tensors as `l.w`, a tuple's as `t.0`; their shapes bind
    the dimensions, as a tensor parameter's do."""
    path = tmp_path / "s.kera"
    path.write_text(SRC)
    inp = tmp_path / "in.npz"
    np.savez(
        inp,
        **{"t.0": np.arange(5, dtype=np.float32), "t.1": np.ones(5, np.float32)},
        k=np.float32(2.0),
    )
    out = tmp_path / "out.npz"
    rc = run_cli.main([str(path), "--entry", "joined", "--inputs", str(inp), "--out", str(out)])
    text, err = capsys.readouterr()
    assert rc == 0, err
    assert "dims N=5\n" in text and "input t (f32[5], f32[5]) sha3-256:" in text
    assert np.array_equal(np.load(out)["result"], [1.0, 3.0, 5.0, 7.0, 9.0])
    np.savez(inp, **{"t.0": np.zeros(5, np.float32), "t.1": np.zeros(4, np.float32)}, k=1.0)
    rc = run_cli.main([str(path), "--entry", "joined", "--inputs", str(inp)])
    _, err = capsys.readouterr()
    assert rc != 0 and "`t.1` has shape (4,)" in err, err


# --- the language server ------------------------------------------------------------------------


def test_hover_and_completion_show_tensor_fields() -> None:
    doc = Document("file:///s.kera", SRC, 1)
    a = doc.analysis()
    where = len(SRC[: SRC.index("l.w) + l.b") + 2].encode())
    h = hover.hover(a, where)
    assert h is not None and "Layer.w: f32[3, 2]" in h.markdown, h
    h = hover.hover(a, len(SRC[: SRC.index("struct Layer") + 8].encode()))
    assert h is not None and "struct Layer { w: f32[3, 2], b: f32[2], k: f32 }" in h.markdown
    text = SRC.replace("(y, net)", "(y, net)\n    // net.first.")
    broken = text.replace("let y = dense(&net.first, x) * net.scale;", "let y = net.first.;")
    d = Document("file:///t.kera", broken, 1)
    at_dot = len(broken[: broken.index("net.first.;") + len("net.first.")].encode())
    got = {(c.label, c.detail) for c in completion.complete(d.analysis(), at_dot)}
    assert got == {("w", "f32[3, 2]"), ("b", "f32[2]"), ("k", "f32")}, got
