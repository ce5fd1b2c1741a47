"""Tuples in the language server: hover shows tuple types, inlay hints follow each name of a
destructuring `let`, navigation and rename reach destructured names, semantic tokens mark
them (and `t.0` as a property)."""

from __future__ import annotations

import pytest

from kera_core.ide import completion, hover, inlay, navigation, refactor, tokens
from kera_core.source import Span
from kera_core.workspace import Document

SRC = """\
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

pub fn total[N](x: &f32[N]) -> f32 {
    let (sum, mut comp) = kahan(x);
    let pair = (sum, (1,));
    let (_, (k,)) = pair;
    comp += pair.0 + k as f32;
    sum + comp
}
"""


@pytest.fixture(scope="module")
def a():
    d = Document("file:///tmp/tuples.kera", SRC, 1)
    return d.analysis()


def off(needle: str, delta: int = 0) -> int:
    return len(SRC[: SRC.index(needle) + delta].encode())


def test_no_diagnostics(a):
    assert a.diagnostics == []


def test_hover_shows_tuple_types(a):
    h = hover.hover(a, off("pair = ("))
    assert h is not None and "let pair: (f32, (i64,))" in h.markdown
    h = hover.hover(a, off("comp) ="))
    assert h is not None and "let mut comp: f32" in h.markdown
    h = hover.hover(a, off("kahan[N]"))
    assert h is not None and "-> (f32, f32)" in h.markdown


def test_inlay_hints_for_each_destructured_name(a):
    hints = inlay.inlay_hints(a, Span(0, len(SRC.encode())))
    got = [(SRC.encode()[: h.offset].decode()[-4:], h.label) for h in hints]
    assert ("(sum", ": f32") in got
    assert (" comp", ": f32") in got or ("comp", ": f32") in got
    assert (", (k", ": i64") in got
    assert ("pair", ": (f32, (i64,))") in got
    assert not any(lbl.startswith(": _") for _, lbl in got)


def test_definition_references_and_rename_of_destructured_names(a):
    decl = Span(off("sum, mut"), off("sum, mut") + 3)
    assert navigation.definition(a, off("sum + comp")) == decl
    refs = navigation.references(a, off("sum, mut"))
    assert len(refs) == 3  # the pattern, `(sum, (1,))`, `sum + comp`
    edits = navigation.rename(a, off("comp) ="), "carry")
    assert len(edits) == 3 and {e.new_text for e in edits} == {"carry"}


def test_completion_offers_destructured_names(a):
    labels = {i.label for i in completion.complete(a, off("sum + comp"))}
    assert {"sum", "comp", "k", "pair"} <= labels


def test_semantic_tokens(a):
    got: dict[str, set] = {}
    for start, length, ty, mods in tokens.classify(a):
        word = SRC.encode()[start : start + length].decode()
        names = {m for b, m in enumerate(tokens.TOKEN_MODIFIERS) if mods >> b & 1}
        got.setdefault(word, set()).add((tokens.TOKEN_TYPES[ty], frozenset(names)))
    assert ("variable", frozenset({"declaration", "mutable"})) in got["comp"]
    assert ("variable", frozenset({"declaration"})) in got["sum"]
    assert ("property", frozenset()) in got["0"]  # `pair.0`


def test_extract_function_returns_a_destructured_name_used_after_it():
    src = (
        "fn pair(a: f32) -> (f32, f32) {\n    (a, a * 2.0)\n}\n\n"
        "pub fn f(a: f32) -> f32 {\n    let (p, _) = pair(a + 1.0);\n    p * 3.0\n}\n"
    )
    a = Document("file:///tmp/extract.kera", src, 1).analysis()
    stmt = "let (p, _) = pair(a + 1.0);"
    start = src.index(stmt)
    plan = refactor.plan_extract(a, Span(start, start + len(stmt)))
    edits, name = refactor.extract_edits(a, plan)
    out = refactor.apply_edits(src, edits)
    assert f"let p = {name}(a);" in out and f"fn {name}(a: f32) -> f32 {{" in out, out
    assert not Document("file:///tmp/extracted.kera", out, 1).analysis().diagnostics, out


def test_extract_function_returns_several_names_as_a_tuple():
    src = (
        "fn pair(a: f32) -> (f32, f32) {\n    (a, a * 2.0)\n}\n\n"
        "pub fn f[N](x: &f32[N], a: f32) -> f32 {\n"
        "    let (p, q) = pair(a);\n    let mut s = p + x[0];\n    s += q;\n    s * q\n}\n"
    )
    a = Document("file:///tmp/two.kera", src, 1).analysis()
    sel = "let (p, q) = pair(a);\n    let mut s = p + x[0];"
    start = src.index(sel)
    edits, name = refactor.extract_edits(a, refactor.plan_extract(a, Span(start, start + len(sel))))
    out = refactor.apply_edits(src, edits)
    assert f"let (q, mut s) = {name}(a, x);" in out, out
    assert f"fn {name}[N](a: f32, x: &f32[N]) -> (f32, f32) {{" in out and "    (q, s)\n}" in out
    assert not Document("file:///tmp/extracted.kera", out, 1).analysis().diagnostics, out


def test_extract_function_refuses_to_return_an_assigned_outer_name_with_others():
    src = (
        "fn pair(a: f32) -> (f32, f32) {\n    (a, a * 2.0)\n}\n\n"
        "pub fn f(a: f32) -> f32 {\n"
        "    let mut s = a;\n    let (p, q) = pair(a);\n    s += p;\n    s * q\n}\n"
    )
    a = Document("file:///tmp/assign.kera", src, 1).analysis()
    sel = "let (p, q) = pair(a);\n    s += p;"
    start = src.index(sel)
    with pytest.raises(refactor.RefactorError, match="several are returned"):
        refactor.extract_edits(a, refactor.plan_extract(a, Span(start, start + len(sel))))
