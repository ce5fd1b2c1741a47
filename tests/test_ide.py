"""IDE queries on workspace snapshots, without a server."""

from __future__ import annotations

import pytest

from kera_core.ide import completion, hover, inlay, navigation, outline, signature, targets, tokens
from kera_core.source import Span
from kera_core.workspace import Document

SRC = """\
// Module comment,
// two lines.

/// A point.
struct P {
    /// Horizontal.
    x: f32,
    y: f32,
}

const K: f32 = 2.0;

/// Scales in place.
pub fn scale[N](a: f32, x: &mut f32[N]) {
    for i in 0..N {
        x[i] = a * x[i];
    }
}

pub fn up[N](x: f32[N] @host) -> f32[N] @device ! transfer {
    let y = move_to(x, device);
    y
}

pub fn g(p: P) -> f32 {
    let mut s = p.x + K;
    s = s * 2.0;
    let q = P { x: s, y: p.y };
    exp(q.y) + s
}

fn say(v: f32) ! io {
    print(v);
}
"""


@pytest.fixture(scope="module")
def doc() -> Document:
    d = Document("file:///tmp/ide.kera", SRC, 1)
    d.mark_saved()
    return d


@pytest.fixture(scope="module")
def a(doc):
    return doc.analysis()


def off(needle: str, delta: int = 0) -> int:
    return len(SRC[: SRC.index(needle) + delta].encode())


def md(a, needle, delta=0, doc=None) -> str:
    h = hover.hover(a, off(needle, delta), doc)
    assert h is not None, needle
    return h.markdown


def test_no_diagnostics(a):
    assert a.diagnostics == []


def test_hover(a, doc):
    assert "let y: f32[N] @device" in md(a, "y\n}") and "`@device`" in md(a, "y\n}")
    assert "x: &mut f32[N]" in md(a, "x[i] =")
    assert "for i: i64" in md(a, "i in")
    assert "let mut s: f32" in md(a, "s * 2.0")
    text = md(a, "scale", doc=doc)
    assert "pub fn scale[N](a: f32, x: &mut f32[N])" in text and "Scales in place." in text
    assert "fingerprint at last save (v1): `sha3-256:" in text
    assert "effects: `transfer`" in md(a, "up[N]", doc=doc)
    assert "P.x: f32" in md(a, "p.x", 2) and "Horizontal." in md(a, "p.x", 2)
    assert "const K: f32 = 2.0" in md(a, "K;")
    assert "struct P { x: f32, y: f32 }" in md(a, "P {")
    assert "fn exp(" in md(a, "exp(")
    assert "accelerator" in md(a, "device);")
    assert "IEEE-754 binary32" in md(a, "f32 {")
    assert "effect: observable" in md(a, "io {")
    assert "N: dimension" in md(a, "N {")
    # an expression without a name: the smallest typed expression around the cursor
    h = hover.hover(a, off("* x[i]", 2))
    assert h is not None and "f32" in h.markdown
    call = hover.hover(a, off("print(v)", 5))
    assert call is not None
    assert hover.hover(a, off("// Module")) is None


def test_definition_references_rename(a):
    assert navigation.definition(a, off("s * 2.0")) == Span(off("s = p"), off("s = p") + 1)
    assert navigation.definition(a, off("K;")) == Span(off("K: f32"), off("K: f32") + 1)
    assert navigation.definition(a, off("x: s")) == Span(off("x: f32"), off("x: f32") + 1)
    refs = navigation.references(a, off("s = p"))
    assert len(refs) == 5
    assert navigation.references(a, off("s = p"), include_declaration=False)[0] != refs[0]
    # the parameter `x` of `scale` is not the parameter `x` of `up`
    assert len(navigation.references(a, off("x: &mut"))) == 3
    edits = navigation.rename(a, off("P {"), "Point")
    assert len(edits) == 3 and {e.new_text for e in edits} == {"Point"}
    with pytest.raises(navigation.RenameError, match="keyword"):
        navigation.prepare_rename(a, off("pub fn g"))
    with pytest.raises(navigation.RenameError, match="builtin"):
        navigation.prepare_rename(a, off("exp("))
    with pytest.raises(navigation.RenameError, match="primitive"):
        navigation.prepare_rename(a, off("f32 {"))
    with pytest.raises(navigation.RenameError, match="memory space"):
        navigation.prepare_rename(a, off("device);"))
    with pytest.raises(navigation.RenameError, match="already defined"):
        navigation.rename(a, off("pub fn g", 7), "up")
    with pytest.raises(navigation.RenameError, match="not an identifier"):
        navigation.rename(a, off("s = p"), "1x")
    with pytest.raises(navigation.RenameError, match="builtin"):
        navigation.rename(a, off("s = p"), "sum")


def test_outline(a):
    syms = outline.document_symbols(a)
    assert [(s.name, s.kind) for s in syms] == [
        ("P", "struct"), ("K", "const"), ("scale", "function"), ("up", "function"),
        ("g", "function"), ("say", "function"),
    ]  # fmt: skip
    assert [c.name for c in syms[0].children] == ["x", "y"]
    folds = outline.folding_ranges(a)
    assert outline.Fold(0, 1, "comment") in folds
    assert any(f.kind == "region" and f.start_line == 4 for f in folds)  # the field list
    chain = outline.selection_chain(a, off("a * x"))
    assert chain[0] == Span(off("a * x"), off("a * x") + 1)
    assert all(outer.covers(inner) for inner, outer in zip(chain, chain[1:], strict=False))


def test_semantic_token_classes(a):
    got = {}
    for start, length, ty, mods in tokens.classify(a):
        word = SRC.encode()[start : start + length].decode()
        names = {m for b, m in enumerate(tokens.TOKEN_MODIFIERS) if mods >> b & 1}
        got.setdefault(word, set()).add((tokens.TOKEN_TYPES[ty], frozenset(names)))
    assert ("parameter", frozenset({"declaration", "mutable"})) in got["x"]
    assert ("parameter", frozenset({"mutable"})) in got["x"]
    assert ("variable", frozenset({"mutable"})) in got["s"]
    assert ("enumMember", frozenset()) in got["device"]
    assert ("enumMember", frozenset()) in got["io"]
    assert ("typeParameter", frozenset({"declaration"})) in got["N"]
    assert ("function", frozenset({"defaultLibrary"})) in got["move_to"]
    data = tokens.semantic_tokens(a)
    assert len(data) == 5 * len(tokens.classify(a))


def test_semantic_tokens_split_multiline_and_count_utf16():
    d = Document("file:///t.kera", "/* a\n   b */ fn é() {}\n// 𝔸x\nfn f() {}\n", 1)
    data = tokens.semantic_tokens(d.analysis(), "utf-16")
    rows = [data[i : i + 5] for i in range(0, len(data), 5)]
    assert rows[0][:3] == [0, 0, 4] and rows[1][:3] == [1, 0, 7]  # the comment, one row per line
    comment = [r for r in rows if r[3] == tokens.TOKEN_TYPES.index("comment")]
    assert comment[2][2] == 6  # `// 𝔸x` is 6 UTF-16 units
    data8 = tokens.semantic_tokens(d.analysis(), "utf-8")
    rows8 = [data8[i : i + 5] for i in range(0, len(data8), 5)]
    comment8 = [r for r in rows8 if r[3] == tokens.TOKEN_TYPES.index("comment")]
    assert comment8[2][2] == 8  # and 8 UTF-8 bytes
    fn_kw = [r for r in rows8 if r[3] == tokens.TOKEN_TYPES.index("keyword")][0]
    assert fn_kw[:3] == [0, 8, 2]  # `fn` after `   b */ `, relative to the row of `   b */`


def test_completion(a):
    labels = {c.label for c in completion.complete(a, off("s = s"))}
    assert {"s", "p", "K", "P", "scale", "exp", "let", "while"} <= labels
    assert "q" not in labels and "a" not in labels
    in_loop = {c.label for c in completion.complete(a, off("x[i] =", 0))}
    assert {"i", "a", "x", "N"} <= in_loop
    top = {c.label for c in completion.complete(a, len(SRC.encode()))}
    assert top == {"fn", "pub", "struct", "const", "use"}
    ty = {c.label for c in completion.complete(a, off("f32,", 0))}
    assert {"f32", "u8", "bool", "P"} <= ty and "exp" not in ty
    fields = completion.complete(a, off("x + K", 0))
    assert {(c.label, c.detail) for c in fields} == {("x", "f32"), ("y", "f32")}
    spaces = {c.label for c in completion.complete(a, off("host)", 0))}
    assert spaces == {"host", "device", "pinned", "unified"}
    effects = {c.label for c in completion.complete(a, off("transfer {", 0))}
    assert "transfer" in effects and "io" in effects


def test_completion_on_unfinished_code():
    text = "struct P { x: f32 }\nfn f(p: P) -> f32 {\n    let v = p.\n}\n"
    d = Document("file:///c.kera", text, 1)
    at = len(text[: text.index("p.\n") + 2].encode())
    assert {c.label for c in completion.complete(d.analysis(), at)} == {"x"}


def test_signature_help(a):
    s = signature.signature_help(a, off("x, device)"))
    assert s is not None and s.label.startswith("fn move_to(") and s.active == 0
    s = signature.signature_help(a, off("device);"))
    assert s.active == 1 and s.label[slice(*s.params[1])] == "space"
    assert signature.signature_help(a, off("let q")) is None


def test_inlay_hints(a):
    hints = inlay.inlay_hints(a, Span(0, len(SRC.encode())))
    assert [(SRC.encode()[: h.offset].decode().rsplit(" ", 1)[-1], h.label) for h in hints] == [
        ("y", ": f32[N] @device"),
        ("s", ": f32"),
        ("q", ": P"),
    ]


def test_targets(a, doc, tmp_path):
    lenses = targets.code_lenses(a)
    assert [(ln.function, ln.target) for ln in lenses] == [
        ("scale", "arm64"),
        ("scale", "keg"),
        ("scale", "ptx"),
        ("scale", "verilog"),
        ("scale", "wasm"),
        ("scale", "x86_64"),
        ("up", "arm64"),
        ("up", "keg"),
        ("up", "ptx"),
        ("up", "verilog"),
        ("up", "wasm"),
        ("up", "x86_64"),
        ("g", "arm64"),
        ("g", "keg"),
        ("g", "ptx"),
        ("g", "verilog"),
        ("g", "wasm"),
        ("g", "x86_64"),
        ("say", "arm64"),
        ("say", "keg"),
        ("say", "ptx"),
        ("say", "wasm"),
        ("say", "x86_64"),
    ]
    assert all(
        ln.title.startswith("fingerprint ") and ln.title.endswith(f"… · {ln.target}")
        for ln in lenses
    )
    assert targets.lowering(a, "scale", "wasm")["text"].startswith("(module")
    assert targets.lowering(a, "scale", "x86_64")["text"].startswith("; x86_64 (")
    assert targets.lowering(a, "scale", "arm64")["text"].startswith("// arm64 (")
    low = targets.lowering(a, "scale", "keg")
    assert low["text"].startswith("pub fn scale") and low["fingerprint"].startswith("sha3-256:")
    rep = targets.fingerprint_report(doc, a)
    assert rep["savedVersion"] == 1 and rep["changedSinceSave"] is False
    assert [f["name"] for f in rep["functions"]] == ["g", "say", "scale", "up"]
    out = targets.compile_to(a, "g", "keg", tmp_path / "o")
    assert (tmp_path / "o" / "ide.g.keg").read_bytes()[:4] == b"KEG\0"
    assert out["fingerprint"] == rep["fingerprint"]
    with pytest.raises(targets.TargetError, match="unknown target"):
        targets.lowering(a, "g", "nope")
    with pytest.raises(targets.TargetError, match="no function"):
        targets.lowering(a, "nope", "keg")
    acts = targets.compile_actions(a, Span(off("s = s"), off("s = s")))
    assert [x.title for x in acts] == [
        "Compile `g` to arm64",
        "Compile `g` to keg",
        "Compile `g` to ptx",
        "Compile `g` to verilog",
        "Compile `g` to wasm",
        "Compile `g` to x86_64",
    ]
    assert targets.compile_actions(a, Span(0, 0)) == []


def test_functions_with_errors_offer_no_compilation():
    d = Document("file:///e.kera", "pub fn bad() -> f32 { nope }\npub fn ok() -> f32 { 1.0 }\n", 1)
    a = d.analysis()
    assert [(ln.function, ln.target) for ln in targets.code_lenses(a)] == [
        ("ok", "arm64"),
        ("ok", "keg"),
        ("ok", "ptx"),
        ("ok", "verilog"),
        ("ok", "wasm"),
        ("ok", "x86_64"),
    ]
    with pytest.raises(targets.TargetError, match="has errors"):
        targets.lowering(a, "bad", "keg")
