"""The language server on the loop forms of language.md §6.9: hover on an element loop's
variable shows the element type, completion after `.` on a range offers `rev` and
`step_by`, and semantic tokens mark them as library methods."""

from __future__ import annotations

from kera_core.ide import completion, hover, tokens
from kera_core.workspace import Document

SRC = """\
pub fn f[N](x: &f32[N], k: i64) -> f32 {
    let mut s = 0.0f32;
    for v in x {
        s += v;
    }
    for w in &x {
        s += w;
    }
    for i in (0..N).step_by(k).rev() {
        s += x[i];
    }
    s
}
"""


def _analysis(text: str = SRC):
    d = Document("file:///tmp/loops.kera", text, 1)
    d.mark_saved()
    return d.analysis()


def _at(text: str, needle: str, delta: int = 0) -> int:
    return len(text[: text.index(needle) + delta].encode())


def test_hover_on_an_element_variable_shows_the_element_type():
    a = _analysis()
    assert not any(d.is_error for d in a.diagnostics), a.diagnostics
    for needle, delta, shown in (
        ("v in x", 0, "for v: f32"),  # where it is bound
        ("s += v", 5, "for v: f32"),  # where it is read
        ("w in &x", 0, "for w: f32"),
        ("s += w", 5, "for w: f32"),
    ):
        h = hover.hover(a, _at(SRC, needle, delta))
        assert h is not None and shown in h.markdown, (needle, h)
    h = hover.hover(a, _at(SRC, "i in (0..N)"))
    assert h is not None and "for i: i64" in h.markdown, h


def test_completion_after_a_range_offers_its_methods():
    text = "pub fn f(n: i64) -> i64 {\n    let mut s = 0;\n    for i in (0..n). {\n        s += i;\n    }\n    s\n}\n"
    got = completion.complete(_analysis(text), _at(text, "). {", 2))
    assert {(c.label, c.kind) for c in got} == {("rev", "method"), ("step_by", "method")}


def test_range_methods_are_library_methods_in_semantic_tokens():
    a = _analysis()
    got = {}
    for start, length, ty, mods in tokens.classify(a):
        word = SRC.encode()[start : start + length].decode()
        names = {m for b, m in enumerate(tokens.TOKEN_MODIFIERS) if mods >> b & 1}
        got.setdefault(word, set()).add((tokens.TOKEN_TYPES[ty], frozenset(names)))
    assert got["rev"] == {("method", frozenset({"defaultLibrary"}))}
    assert got["step_by"] == {("method", frozenset({"defaultLibrary"}))}
    assert ("variable", frozenset({"declaration"})) in got["v"]
    assert ("variable", frozenset()) in got["v"]
    data = tokens.semantic_tokens(a)
    assert len(data) == 5 * len(tokens.classify(a))
