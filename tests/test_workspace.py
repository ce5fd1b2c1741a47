"""The workspace: incremental text changes, incremental analysis, caches and saved state."""

from __future__ import annotations

import pytest

from kera_core import workspace as W
from kera_core.analysis import analyze
from kera_core.source import LineIndex, Span
from kera_core.workspace import Change, Document, Workspace

SRC = """\
struct P { x: f32, y: f32 }

pub fn leaf(a: f32) -> f32 {
    a * 2.0
}

pub fn mid(a: f32) -> f32 {
    leaf(a) + 1.0
}

pub fn other(p: P) -> f32 {
    p.x + p.y
}

pub fn mover[N](x: f32[N] @host) -> f32[N] @device ! transfer {
    let d = move_to(x, device);
    d
}
"""


def at(text: str, needle: str, delta: int = 0) -> tuple[int, int]:
    i = text.index(needle) + delta
    line = text.count("\n", 0, i)
    return line, i - (text.rfind("\n", 0, i) + 1)


def replace(
    doc: Document, version: int, needle: str, new: str, delta: int = 0, length: int | None = None
):
    n = len(needle) if length is None else length
    sl, sc = at(doc.text, needle, delta)
    el, ec = at(doc.text, needle, delta + n)
    doc.apply_changes(version, [Change(new, (sl, sc, el, ec))])


def same_as_batch(doc: Document) -> None:
    """The incremental analysis reports exactly what a from-scratch analysis does."""
    a = doc.analysis()
    ref = analyze(doc.text)
    assert a.diagnostics == ref.diagnostics
    assert str(a.parse.tree) == doc.text
    if a.module is not None:
        assert a.module.graph.fingerprint() == ref.module.graph.fingerprint()


def test_edit_inside_a_body_relowers_that_function_and_its_callers_only():
    doc = Document("file:///w.kera", SRC, 1)
    doc.analysis()
    assert doc.cache.lowered == 4 and doc.cache.reused == 0
    replace(doc, 2, "2.0", "5", delta=1, length=0)  # 2.0 -> 25.0: relex one token
    a = doc.analysis()
    # the diagnostics need `leaf` alone, redone without visiting the other functions
    # (sema/incremental.py): `mid` sees the same signature, so its re-lowering (its call
    # node names `leaf` by hash) waits until its graph is read
    assert doc.lowerings == {"function": 1, "module": 1}
    assert doc.cache.lowered == 4 + 1 and doc.cache.deferred == 1
    assert a.module.pending
    same_as_batch(doc)  # reads the graph: lower_module finds all but `mid` in the cache
    assert not a.module.pending
    assert doc.reparses["token"] == 1 and doc.reparses["full"] == 1  # the open, then a relex
    assert doc.cache.lowered == 4 + 2  # `leaf` and its caller `mid`
    assert doc.cache.reused == 3  # `other`, `mover` and the new `leaf`
    # an edit in a function nobody calls re-lowers that one alone
    replace(doc, 3, "p.x + p.y", "p.y + p.x")
    same_as_batch(doc)
    assert doc.cache.lowered == 6 + 1
    # moving everything down (an edit above all functions) re-lowers nothing
    doc.apply_changes(4, [Change("\n\n", (1, 0, 1, 0))])
    same_as_batch(doc)
    assert doc.cache.lowered == 7


def test_ownership_results_are_reused_and_shifted():
    bad = SRC.replace("    d\n}", "    let e = move_to(x, device);\n    d\n}")
    doc = Document("file:///o.kera", bad, 1)
    first = [d for d in doc.analysis().diagnostics if d.code == "K0401"]
    assert len(first) == 1
    cached = dict(doc._ownership)
    doc.apply_changes(2, [Change("// moved\n", (0, 0, 0, 0))])
    second = [d for d in doc.analysis().diagnostics if d.code == "K0401"]
    assert second == [d.shifted(9) for d in first]
    assert {k for k in cached} == {k for k in doc._ownership}  # same lowerings, reused
    same_as_batch(doc)


def test_changes_apply_sequentially_in_each_encoding():
    text = "// é𝔸\npub fn g(a: f32) -> f32 { a }\n"
    for enc in (W.UTF16, W.UTF8, W.UTF32):
        doc = Document("file:///e.kera", text, 1)
        idx = LineIndex(text)
        start = text.index("a }")
        line, col = W.to_position(idx, len(text[:start].encode()), enc)
        assert W.to_offset(idx, line, col, enc) == len(text[:start].encode())
        doc.apply_changes(
            2,
            [
                Change("b", (line, col, line, col + 1)),  # a -> b
                Change("1.0 + ", (line, col, line, col)),  # then insert before it
            ],
            enc,
        )
        assert doc.text == text.replace("{ a }", "{ 1.0 + b }")
        assert doc.version == 2
        same_as_batch(doc)
    # the comment line: columns differ between encodings
    idx = LineIndex(text)
    assert W.to_position(idx, len("// é".encode()), W.UTF16) == (0, 4)
    assert W.to_position(idx, len("// é".encode()), W.UTF8) == (0, 5)
    assert W.to_position(idx, len("// é𝔸".encode()), W.UTF16) == (0, 6)
    assert W.to_position(idx, len("// é𝔸".encode()), W.UTF32) == (0, 5)


def test_full_text_changes_reparse_only_the_difference():
    doc = Document("file:///f.kera", SRC, 1)
    doc.analysis()
    doc.apply_changes(2, [Change(SRC.replace("2.0", "25.0"))])
    assert doc.reparses["token"] == 1 and doc.reparses["full"] == 1  # the open, then a relex
    same_as_batch(doc)
    doc.apply_changes(3, [Change("")])
    assert doc.analysis().diagnostics == []


def test_results_are_cached_by_content():
    doc = Document("file:///c.kera", SRC, 1)
    a1 = doc.analysis()
    assert doc.analysis() is a1
    replace(doc, 2, "2.0", "9.0")
    a2 = doc.analysis()
    lowered = doc.cache.lowered
    replace(doc, 3, "9.0", "2.0")  # undo
    a3 = doc.analysis()
    assert a3.module is a1.module and a3.version == 3
    assert doc.cache.lowered == lowered
    assert doc.reparses["cached"] == 1
    assert a2.content_hash != a3.content_hash


def test_saved_state_and_fingerprints():
    doc = Document("file:///s.kera", SRC, 1)
    saved = doc.mark_saved()
    assert saved.version == 1 and not doc.changed_since_save
    assert set(saved.functions) == {"leaf", "mid", "other", "mover"}
    assert saved.fingerprint == analyze(SRC).module.graph.fingerprint()
    replace(doc, 2, "2.0", "3.0")
    assert doc.changed_since_save
    assert doc.saved.functions["leaf"] != doc.analysis().module.graph.functions["leaf"].hash
    doc.mark_saved()
    assert not doc.changed_since_save and doc.saved.version == 2


def test_syntax_view_does_not_lower():
    doc = Document("file:///v.kera", SRC, 1)
    view = doc.syntax_analysis()
    assert view.module is None and view.parse is doc.parse
    assert doc.cache.lowered == 0


def test_size_limits(monkeypatch):
    monkeypatch.setattr(W, "MAX_SEMA_BYTES", 100)
    doc = Document("file:///big.kera", SRC, 1)
    a = doc.analysis()
    assert a.module is None and a.parse is not None
    assert [d.message for d in a.diagnostics if d.severity.value == "info"][0].startswith(
        "analysis skipped"
    )
    monkeypatch.setattr(W, "MAX_PARSE_BYTES", 100)
    doc = Document("file:///big2.kera", SRC, 1)
    assert doc.parse is None and doc.analysis().parse is None


def test_internal_errors_become_diagnostics(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(W, "lower_module", boom)
    doc = Document("file:///x.kera", SRC, 1)
    diags = doc.analysis().diagnostics
    assert [d.code for d in diags] == ["K0901"] and "kaboom" in diags[0].message


def test_workspace_documents():
    ws = Workspace()
    ws.open("file:///a.kera", "fn f() {}\n", 1)
    assert ws.change("file:///missing.kera", 2, [Change("x")]) is None
    ws.change("file:///a.kera", 2, [Change("fn g() {}\n")])
    assert ws.get("file:///a.kera").text == "fn g() {}\n"
    assert ws.analysis("file:///a.kera").version == 2
    ws.close("file:///a.kera")
    assert ws.get("file:///a.kera") is None and ws.analysis("file:///a.kera") is None


@pytest.mark.parametrize("seed", range(3))
def test_random_edit_sequences_match_batch(seed):
    import random

    rng = random.Random(seed)
    doc = Document("file:///r.kera", SRC, 1)
    pieces = ["a", " ", "\n", "{", "}", "(", ")", "1.0", "let q = 2.0;", "// c", "é"]
    for v in range(2, 30):
        n = len(doc.text)
        i = rng.randrange(n + 1)
        j = min(n, i + rng.randrange(3))
        idx = doc.line_index
        sb = len(doc.text[:i].encode("utf-8", "surrogateescape"))
        eb = len(doc.text[:j].encode("utf-8", "surrogateescape"))
        sl, sc = W.to_position(idx, sb, W.UTF16)
        el, ec = W.to_position(idx, eb, W.UTF16)
        expect = doc.text[:i] + (new := rng.choice(pieces)) + doc.text[j:]
        doc.apply_changes(v, [Change(new, (sl, sc, el, ec))])
        assert doc.text == expect
        if v % 7 == 0:
            same_as_batch(doc)
    same_as_batch(doc)


CHAIN = """\
pub fn leaf(a: f32) -> f32 {
    a * 2.0
}

pub fn mid(a: f32) -> f32 {
    leaf(a) + 1.0
}

pub fn top(a: f32) -> f32 {
    mid(a) * mid(a)
}

pub fn side[N](x: f32[N] @host) -> f32[N] @device ! transfer {
    let d = move_to(x, device);
    let e = d;
    d
}
"""


def test_callers_are_deferred_until_their_graph_is_read_and_always_match_a_full_analysis():
    doc = Document("file:///d.kera", CHAIN, 1)
    doc.analysis()
    base = doc.cache.lowered
    steps = [  # (old, new, read the graph after this version)
        ("a * 2.0", "a * 3.0", False),  # a body edit in `leaf`: `mid` and `top` are deferred
        ("a * 3.0", "a * 4.0", False),  # again, with `mid` and `top` still deferred
        ("leaf(a) + 1.0", "leaf(a) + 2.0", True),  # `mid` changes while it is deferred
        ("a * 4.0", "a * 4.5", False),
        ("mid(a) * mid(a)", "mid(a) * mid(a) + z", False),  # `top`: error, callee deferred
        ("a * 4.5", "a * true", True),  # `leaf` no longer lowers: callers see it missing
        ("a * true", "a * 5.0", False),
        ("pub fn leaf(a: f32) -> f32", "pub fn leaf(a: f64) -> f64", False),  # signature
        ("pub fn leaf(a: f64) -> f64", "pub fn leaf(a: f32) -> f32", True),
        ("let e = d;", "let e = 1.0;", False),  # an ownership error goes away
    ]
    version = 1
    for old, new, read in steps:
        version += 1
        replace(doc, version, old, new)
        a = doc.analysis()
        ref = analyze(doc.text)
        assert a.diagnostics == ref.diagnostics, (old, new)  # before the graph is completed
        if read:
            assert a.module.graph.fingerprint() == ref.module.graph.fingerprint()
            assert a.module.provenance.functions.keys() == ref.module.provenance.functions.keys()
    assert doc.cache.deferred > 0
    # the graph read last, after several versions of deferral, is the full analysis' graph
    same_as_batch(doc)
    lowered = doc.cache.lowered - base
    assert lowered < 4 * len(steps)  # not every function on every edit
    # an undo to the opened text reuses what it had
    doc.apply_changes(version + 1, [Change(CHAIN)])
    same_as_batch(doc)


def test_a_watched_analysis_is_abandoned_and_the_next_one_is_complete():
    """``Document.analysis(watch=…)`` asks the watch between functions (lowering, then
    ownership); when it says stop the analysis raises ``Abandoned`` and keeps nothing but
    complete cache entries, so the next analysis — of this text or an edited one — equals a
    cold one."""
    from bench.corpus import generate
    from kera_core.analysis import analyze
    from kera_core.cancel import EVERY, Abandoned

    text = generate(1500)
    for stage in ("lowering", "ownership"):
        doc = Document("file:///watched.kera", text, 1)
        asked: list[tuple[str, int, int]] = []

        def watch(st: str, done: int, total: int, asked=asked, stage=stage) -> bool:
            asked.append((st, done, total))
            return st == stage and done >= 2 * EVERY

        with pytest.raises(Abandoned):
            doc.analysis(watch=watch)
        assert asked[-1][0] == stage and asked[-1][1] == 2 * EVERY
        assert all(done % EVERY == 0 for _, done, _ in asked)
        a = doc.analysis()  # unwatched: runs to its end
        assert a.diagnostics == analyze(text).diagnostics
        i = doc.text.index("{", doc.text.index("fn ")) + 1
        at = len(doc.text[:i].encode("utf-8"))
        doc.edit(Span(at, at), " ")
        doc.version = 2
        assert doc.analysis(watch=lambda *_: False).diagnostics == analyze(doc.text).diagnostics


def test_size_limits_are_ten_megabytes():
    assert W.MAX_PARSE_BYTES == W.MAX_SEMA_BYTES == 10 * 1024 * 1024
