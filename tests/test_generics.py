"""Generic element types (language.md §3.1.1): `fn axpy<T: Float>[N](…)`.

* checking: a body is checked once per type its bounds admit, and an error is reported
  once, at the definition, naming the type argument that fails; a call binds `T` from the
  argument types (K0318 outside the bound, K0301 when two arguments disagree);
* graph: each instance (`axpy<f32>`) is a function of its own, hashed like the
  monomorphic function written by hand; renaming `T` changes no hash;
* every runnable target gives the interpreter's bits for the f32 and f64 instances.
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.targets import run_module
from kera_core.workspace import Document
from tests.outcomes import analyzed, runnable_target, same_as_reference

AXPY = """/// y <- a*x + y for any float type
pub fn axpy<T: Float>[N](a: T, x: &T[N], y: &mut T[N]) {
    for i in 0..N {
        y[i] = a * x[i] + y[i];
    }
}

/// a sum with a literal that takes the type `T`
pub fn total<T: Float>[N](x: &T[N]) -> T {
    let mut s = 0.0;
    for i in 0..N {
        s += x[i] * 0.5;
    }
    sqrt(s + 1.0)
}

pub fn twice32[N](x: &f32[N], y: &mut f32[N]) -> f32 {
    axpy(2.0, x, &mut y);
    total(&y)
}

pub fn twice64[N](x: &f64[N], y: &mut f64[N]) -> f64 {
    axpy(2.0, x, &mut y);
    total(&y)
}
"""

HAND_F32 = """pub fn axpy32[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = a * x[i] + y[i];
    }
}
"""


def errors(src: str) -> list[tuple[str, str, str]]:
    a = analyze(src)
    return [(d.code, src[d.span.start : d.span.end], d.message) for d in a.diagnostics]


def test_instances_are_functions_of_the_graph() -> None:
    m = analyzed(AXPY)
    fns = m.graph.functions
    assert {"axpy<f32>", "axpy<f64>", "total<f32>", "total<f64>"} <= set(fns)
    assert "axpy" not in fns  # the generic function itself is no function of the graph
    assert fns["axpy<f32>"].hash != fns["axpy<f64>"].hash
    assert fns["axpy<f32>"].exported  # a `pub` generic function exports its instances
    assert str(fns["axpy<f64>"].type) == "fn[](f64, &f64[$0], &mut f64[$0]) -> ()"


def test_an_instance_hashes_like_the_function_written_by_hand() -> None:
    m = analyzed(AXPY + "\n" + HAND_F32)
    assert m.graph.functions["axpy<f32>"].hash == m.graph.functions["axpy32"].hash


def test_a_call_names_the_instance_by_hash() -> None:
    m = analyzed(AXPY)
    g = m.graph
    called = {
        n.attr("callee") for n in g.nodes.values() if n.op == "call"
    }  # every call in the file
    assert g.functions["axpy<f32>"].hash in called and g.functions["axpy<f64>"].hash in called


def test_renaming_the_type_parameter_changes_no_fingerprint() -> None:
    a = analyzed(AXPY)
    b = analyzed(AXPY.replace("<T: Float>", "<Elem: Float>").replace("T[N]", "Elem[N]")
                 .replace("a: T", "a: Elem").replace("-> T", "-> Elem"))  # fmt: skip
    assert a.fingerprint == b.fingerprint
    assert {n: f.hash for n, f in a.graph.functions.items()} == {
        n: f.hash for n, f in b.graph.functions.items()
    }


def test_a_bound_changes_the_instances() -> None:
    src = "pub fn dbl<T: Float>(x: T) -> T { x + x }\n"
    a = analyzed(src)
    b = analyzed(src.replace("Float", "Num"))
    assert set(a.graph.functions) == {"dbl<f32>", "dbl<f64>"}
    assert {"dbl<f32>", "dbl<i32>", "dbl<u8>"} <= set(b.graph.functions)
    assert a.fingerprint != b.fingerprint


@pytest.mark.parametrize(
    ("src", "code", "at", "says"),
    [
        # the body is checked against every type the bound admits, at the definition
        ("fn r<T: Num>(x: T) -> T { sqrt(x) }", "K0308", "sqrt(x)", "with `T` = `i8`"),
        ("fn r<T: Num>(x: T) -> T { x + 1.0 }", "K0301", "x + 1.0", "which `T: Num` admits"),
        ("fn r<T: Float>(x: T) -> f32 { x }", "K0309", "x", "with `T` = `f64`"),
        ("fn r<T: Flaot>(x: T) -> T { x }", "K0208", "Flaot", "did you mean `Float`"),
        ("fn r<T: Float>(x: f32) -> f32 { x }", "K0319", "T", "must appear in a parameter"),
        ("fn r<T: Float, T: Int>(x: T) {}", "K0206", "T", "declared twice"),
        ("fn r<f32: Float>(x: f32) {}", "K0206", "f32", "a primitive type"),
        ("fn r<T: Float>[T](x: &T[T]) {}", "K0206", "T", "already a type parameter"),
        # at a call: outside the bound, and `T` bound twice
        (
            "fn r<T: Float>(x: T) -> T { x }\nfn c(i: i32) -> i32 { r(i) }",
            "K0318",
            "i",
            "needs `T: Float`",
        ),
        (
            "fn p<T: Float>(a: T, b: T) -> T { a + b }\nfn c(a: f32, b: f64) -> f32 { p(a, b) }",
            "K0301",
            "b",
            "`f32` from an earlier argument, but `b` gives `f64`",
        ),
        (
            "fn p<T: Float>[N](a: &T[N]) -> T { a[0] }\nfn c[N](a: &i64[N]) -> i64 { p(a) }",
            "K0318",
            "a",
            "makes `T` `i64`",
        ),
    ],
)
def test_errors(src: str, code: str, at: str, says: str) -> None:
    found = errors(src)
    assert any(c == code and t == at and says in m for c, t, m in found), found


def test_an_error_at_the_definition_is_reported_once() -> None:
    found = errors("fn r<T: Num>(x: T) -> T { sqrt(x) }")
    assert len(found) == 1, found  # not once per integer type


def test_a_call_outside_the_bound_relates_the_definition() -> None:
    src = "fn r<T: Float>(x: T) -> T { x }\nfn c(i: i32) -> i32 { r(i) }"
    d = next(d for d in analyze(src).diagnostics if d.code == "K0318")
    assert [src[r.span.start : r.span.end] for r in d.related] == ["T"]


def test_an_unsuffixed_literal_argument_takes_t_from_the_others() -> None:
    src = "fn s<T: Float>(a: T, b: T) -> T { a * b }\npub fn c(x: f32) -> f32 { s(2.0, x) }"
    m = analyzed(src)
    call = next(n for n in m.graph.nodes.values() if n.op == "call")
    assert call.attr("callee") == m.graph.functions["s<f32>"].hash
    lone = analyzed("fn s<T: Float>(a: T) -> T { a }\npub fn c() -> f64 { s(2.0) }")
    assert lone.graph.functions["c"]  # a literal alone binds `T` to its default, f64


def test_kera_run_of_a_generic_entry_names_its_instances(tmp_path, capsys) -> None:
    from kera_core.cli import main

    p = tmp_path / "axpy.kera"
    p.write_text(AXPY)
    assert main(["run", str(p), "--entry", "axpy", "--dims", "N=3"]) == 2
    err = capsys.readouterr().err
    assert "is generic" in err and "--entry 'axpy<f32>'" in err
    assert main(["run", str(p), "--entry", "axpy<f64>", "--dims", "N=3", "--seed", "1"]) == 0
    assert "entry axpy<f64> fn:" in capsys.readouterr().out


# --- the language server ------------------------------------------------------------------


def _doc(src: str):
    return Document("file:///tmp/generic.kera", src, 1).analysis()


def test_hover_shows_the_generic_signature_and_the_instance_at_a_call() -> None:
    from kera_core.ide import hover

    a = _doc(AXPY)
    at = len(AXPY[: AXPY.index("axpy<")].encode())
    h = hover.hover(a, at)
    assert h is not None and "pub fn axpy<T: Float>[N](a: T, x: &T[N], y: &mut T[N])" in h.markdown
    assert "`axpy<f32>`: `sha3-256:" in h.markdown
    at = len(AXPY[: AXPY.index("axpy(2.0")].encode())
    h = hover.hover(a, at)
    assert h is not None
    assert "pub fn axpy<f32>[N](a: f32, x: &f32[N], y: &mut f32[N])" in h.markdown
    assert "with `T` = `f32`" in h.markdown
    at = len(AXPY[: AXPY.index("T[N]")].encode())
    h = hover.hover(a, at)
    assert h is not None and "T: Float" in h.markdown


def test_completion_offers_the_bounds_after_a_type_parameter() -> None:
    from kera_core.ide import completion

    src = AXPY.replace("<T: Float>", "<T: >", 1)
    a = _doc(src)
    got = [c.label for c in completion.complete(a, len(src[: src.index("<T: ") + 4].encode()))]
    assert got == ["Float", "Int", "Num"]
    src = AXPY.replace("let mut s = 0.0;", "let mut s: ", 1)
    a = _doc(src)
    got = [c.label for c in completion.complete(a, len(src[: src.index("s: ") + 3].encode()))]
    assert "T" in got and "f32" in got


def test_semantic_tokens_mark_type_parameters() -> None:
    from kera_core.ide import tokens

    a = _doc(AXPY)
    kinds = {
        (AXPY.encode()[o : o + n].decode(), tokens.TOKEN_TYPES[t])
        for o, n, t, _ in tokens.classify(a)
        if o < AXPY.index("{")
    }
    assert ("T", "typeParameter") in kinds
    assert ("Float", "type") in kinds
    assert ("<", "operator") not in kinds


# --- every runnable target gives the interpreter's bits -----------------------------------


def _inputs(elem: str, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    dt = np.float32 if elem == "f32" else np.float64
    return {
        "x": rng.standard_normal(n).astype(dt),
        "y": rng.standard_normal(n).astype(dt),
    }


CASES = [
    (fn, elem)
    for elem in ("f32", "f64")
    for fn in (f"twice{elem[1:]}", f"axpy<{elem}>", f"total<{elem}>")
]


def _args(fn: str, elem: str, n: int) -> dict:
    a = _inputs(elem, n, seed=n + 7)
    if fn.startswith("axpy"):
        dt = np.float32 if elem == "f32" else np.float64
        return {"a": dt(1.5), **a}
    if fn.startswith("total"):
        return {"x": a["x"]}
    return a


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64"])
def test_every_target_gives_the_interpreters_bits(tname: str) -> None:
    t = runnable_target(tname)
    m = analyzed(AXPY)
    for fn, elem in CASES:
        assert not t.unsupported(m.graph, fn), (tname, fn, t.unsupported(m.graph, fn))
        for n in (0, 1, 7, 33):
            a = _args(fn, elem, n)
            same_as_reference(m, fn, a, lambda: run_module(t, m, fn, a), tname, fn, n)  # noqa: B023


def test_type_parameters_go_to_definition_and_rename() -> None:
    from kera_core.ide import navigation

    src = "pub fn f<T: Float>[N](a: T, x: &T[N]) -> T {\n    let y: T = a;\n    y + x[0]\n}\n"
    a = _doc(src)
    decl = src.index("T")
    use = src.index("T", src.index("let y"))
    assert navigation.definition(a, use) == navigation.definition(a, decl + 0)
    spans = navigation.references(a, use)
    assert [src[s.start : s.end] for s in spans] == ["T"] * 5
    edits = navigation.rename(a, use, "E")
    renamed = src
    for e in sorted(edits, key=lambda e: -e.span.start):
        renamed = renamed[: e.span.start] + e.new_text + renamed[e.span.end :]
    assert renamed == src.replace("T", "E")
    assert analyzed(renamed).fingerprint == analyzed(src).fingerprint
    with pytest.raises(navigation.RenameError):
        navigation.rename(a, use, "N")


@pytest.mark.parametrize(
    "edit",
    [
        ("<T: Float>[N](a: T, x", "<T: Num>[N](a: T, x"),  # the bound: other instances
        ("y[i] = a * x[i] + y[i];", "y[i] = x[i] * a + y[i];"),  # a generic body
        ("<T: Float>[N](x: &T[N]) -> T", "<U: Float>[N](x: &U[N]) -> U"),  # a signature
        ("sqrt(s + 1.0)", "sqrt(s + 1)"),  # an error in every instance, then none
    ],
)
def test_incremental_lowering_equals_a_cold_one(edit) -> None:
    from kera_core.sema.module import LoweringCache, lower_module
    from kera_core.syntax.parse import parse

    old, new = edit
    edited = AXPY.replace(old, new, 1)
    assert edited != AXPY
    for defer in (False, True):
        cache = LoweringCache()
        for text in (AXPY, edited, AXPY, edited):
            warm = lower_module(parse(text), cache, defer=defer)
            cold = lower_module(parse(text))
            assert [str(d) for d in warm.diagnostics] == [str(d) for d in cold.diagnostics]
            assert warm.fingerprint == cold.fingerprint
            assert {n: f.hash for n, f in warm.graph.functions.items()} == {
                n: f.hash for n, f in cold.graph.functions.items()
            }


def test_code_lenses_and_compile_actions_are_per_instance() -> None:
    from kera_core.ide import targets
    from kera_core.source import Span

    a = _doc(AXPY)
    lenses = [(lens.function, lens.title) for lens in targets.code_lenses(a)]
    assert any(f == "axpy<f64>" and t.startswith("axpy<f64> fingerprint ") for f, t in lenses)
    assert not any(f == "axpy" for f, _ in lenses)
    at = AXPY.index("for i")
    acts = {c.function for c in targets.compile_actions(a, Span(at, at))}
    assert acts == {"axpy<f32>", "axpy<f64>"}
    with pytest.raises(targets.TargetError, match="generic"):
        targets.lowering(a, "axpy", "wasm")
    assert "axpy<f32>" == targets.lowering(a, "axpy<f32>", "wasm")["function"]


def test_types_in_a_generic_body_are_spelled_with_t() -> None:
    from kera_core.ide import hover, inlay
    from kera_core.source import Span

    a = _doc(AXPY)
    hints = [h.label for h in inlay.inlay_hints(a, Span(0, len(AXPY.encode())))]
    assert ": T" in hints  # `let mut s = 0.0` in `total<T: Float>`
    h = hover.hover(a, len(AXPY[: AXPY.index("s += x")].encode()))
    assert h is not None and "let mut s: T" in h.markdown
    h = hover.hover(a, len(AXPY[: AXPY.index("x: &T[N]")].encode()))
    assert h is not None and "x: &T[N]" in h.markdown
