"""The diagnostics the language server publishes after any edit sequence are those a server
that opens the final text cold publishes — payload for payload, in every position encoding.

Each version's work is made proportional to the edit (a spliced line index,
``source.Shifted``; the `use` answer kept over a reparse inside an item; the index kept for
a text seen before; the diagnostics built as the protocol's JSON and sent as they are), so
these tests drive the server's own per-version path — ``Workspace.change`` with the ranges a
client sends, ``Document.analysis``, ``features.diagnostics.diagnostics_json``, the message
``publish`` writes — against a fresh document, with multi-byte characters (UTF-16 surrogate
pairs included), CRLF line endings, edits at the file's start and end, edits that add and
remove lines, and a file over the 500-diagnostic cap.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as T
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient
from test_lsp_harness import client, open_doc, utf8, wait_diagnostics  # noqa: F401 (fixture)

from kera_core.workspace import Change, Workspace
from kera_lsp import convert
from kera_lsp.features.diagnostics import MAX_PUBLISHED, diagnostics_json, lsp_diagnostics, publish
from kera_lsp.server import create_server

URI = "file:///tmp/publish.kera"

BASE = """\
/// Points — in the plane (é, ü, 😀 in comments).
struct Point { x: f32, y: f32 }

const SCALE: f32 = 2.0;

fn dup() {}
fn dup() {}

pub fn norm2(p: Point) -> f32 {
    let s = p.x * p.x + p.y * p.y; // ½
    let mut t = s * SCALE;
    t = t + 1.0;
    sqrt(t)
}

pub fn bad(a: f32) -> i32 {
    let q: f64 = a;
    q + 😀
}

pub fn mv[N](x: f32[N] @host) -> f32[N] @device ! transfer {
    let d = move_to(x, device);
    let e = move_to(x, device);
    d
}
"""

PIECES = ["a", "q", "1", " ", "é", "😀", "½", "\n", "\r\n", "{", "}", ";", "fn g() {}\n", "// ü\n"]

_LINE_END = re.compile(r"\r\n|\r|\n")


def position(text: str, i: int, enc: str) -> tuple[int, int]:
    """The LSP position of character ``i``, computed from scratch (the reference)."""
    line, start = 0, 0
    for m in _LINE_END.finditer(text, 0, i):
        if m.end() <= i:
            line, start = line + 1, m.end()
    seg = text[start:i]
    if enc == "utf-8":
        return line, len(seg.encode("utf-8"))
    if enc == "utf-32":
        return line, len(seg)
    return line, len(seg.encode("utf-16-le")) // 2


def _boundary(text: str, i: int) -> int:
    """``i``, moved off the middle of a `\\r\\n` (no LSP position lies there)."""
    if 0 < i < len(text) and text[i - 1] == "\r" and text[i] == "\n":
        return i - 1
    return i


def cold(text: str, enc: str) -> list[dict]:
    doc = Workspace().open(URI, text, 1)
    return diagnostics_json(doc.analysis(), enc, URI)


def apply_edits(text: str, edits, enc: str, check_every: int = 1) -> str:
    """Apply ``edits`` (char offsets into the text as it is then) one `didChange` each,
    analysing and comparing the published payload with a cold one every ``check_every``."""
    ws = Workspace()
    doc = ws.open(URI, text, 1)
    doc.analysis()
    for k, (at, length, inserted) in enumerate(edits):
        a = _boundary(text, min(at, len(text)))
        b = _boundary(text, min(a + length, len(text)))
        (sl, sc), (el, ec) = position(text, a, enc), position(text, b, enc)
        text = text[:a] + inserted + text[b:]
        ws.change(URI, k + 2, [Change(inserted, (sl, sc, el, ec))], enc)
        assert doc.text == text
        if k % check_every == check_every - 1 or k == len(edits) - 1:
            got = diagnostics_json(doc.analysis(), enc, URI)
            assert got == cold(text, enc), (k, text)
    return text


def _edit_lists(where, longest: int, pieces: list[str], most: int):
    """Lists of 1 to 8 edits: (where, how many characters it replaces, what it types)."""
    return st.lists(
        st.tuples(
            where,
            st.integers(0, longest),
            st.lists(st.sampled_from(pieces), max_size=most).map("".join),
        ),
        min_size=1,
        max_size=8,
    )


# start, end, anywhere
EDITS = _edit_lists(st.one_of(st.integers(0, len(BASE)), st.just(0), st.just(10**6)), 12, PIECES, 3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=EDITS, enc=st.sampled_from(["utf-16", "utf-8", "utf-32"]), crlf=st.booleans())
def test_published_after_random_edits_equals_cold(edits, enc, crlf):
    text = BASE.replace("\n", "\r\n") if crlf else BASE
    apply_edits(text, edits, enc)


def _long_body(statements: int) -> str:
    """A function long enough to be traced and its body reparsed statement by statement
    (sema/body_reuse.py, syntax/reparse.py), with multi-byte characters in its comments."""
    out = ["pub fn long_one[N](x: &f32[N], y: &mut f32[N]) -> f32 {", "    let mut acc: f32 = 0.0;"]
    for k in range(statements // 3):
        out += [
            f"    let a{k} = acc * 0.5 + {k}.25; // ü{k} 😀",
            f"    for i in 0..N {{ y[i] = y[i] + x[i] * a{k}; }}",
            f"    if a{k} > 1.5 {{ acc = acc + a{k}; }} else {{ acc = acc - 0.75; }}",
        ]
    return "\n".join([*out, "    acc", "}", ""])


LONG = BASE + _long_body(150)
LONG_PIECES = [*PIECES, " let z = 1.5;", " acc = acc * z;", "(", ")", "let ", "0"]
LONG_EDITS = _edit_lists(st.integers(len(BASE), len(LONG)), 6, LONG_PIECES, 2)  # in the long fn


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=LONG_EDITS, enc=st.sampled_from(["utf-16", "utf-8", "utf-32"]), crlf=st.booleans())
def test_published_after_random_edits_in_a_long_function_equals_cold(edits, enc, crlf):
    text = LONG.replace("\n", "\r\n") if crlf else LONG
    apply_edits(
        text, [(at + (text.count("\n", 0, at) if crlf else 0), n, s) for at, n, s in edits], enc
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=EDITS)
def test_typing_then_undoing_returns_the_first_payload(edits):
    """Edits, then their inverses in reverse order: the text returns to one analysed before
    (answered from the per-content cache, with the document's spliced index) and publishes
    what it published then."""
    ws = Workspace()
    doc = ws.open(URI, BASE, 1)
    first = diagnostics_json(doc.analysis(), "utf-16", URI)
    text, undo = BASE, []
    for k, (at, length, inserted) in enumerate(edits):
        a = _boundary(text, min(at, len(text)))
        b = _boundary(text, min(a + length, len(text)))
        removed = text[a:b]
        (sl, sc), (el, ec) = position(text, a, "utf-16"), position(text, b, "utf-16")
        text = text[:a] + inserted + text[b:]
        ws.change(URI, k + 2, [Change(inserted, (sl, sc, el, ec))])
        doc.analysis()
        undo.append((a, a + len(inserted), removed))
    v = len(edits) + 2
    for a, b, removed in reversed(undo):
        (sl, sc), (el, ec) = position(text, a, "utf-16"), position(text, b, "utf-16")
        text = text[:a] + removed + text[b:]
        ws.change(URI, v, [Change(removed, (sl, sc, el, ec))])
        v += 1
        doc.analysis()
    assert text == BASE
    assert diagnostics_json(doc.analysis(), "utf-16", URI) == first


def test_many_edits_on_separate_lines_equal_cold():
    """More edits on distinct lines than a line table keeps runs for (source.MAX_RUNS): the
    runs are folded in on the way, and every version still publishes the cold payload."""
    text = BASE * 3
    starts = [m.end() for m in re.finditer("\n", text)]
    edits = []
    for k in range(70):
        at = starts[(k * 7) % len(starts)] + (k % 3)
        edits.append((at, k % 2, ["x", "é", "😀\n", ""][k % 4]))
    apply_edits(text, edits, "utf-16", check_every=10)


def test_the_cap_is_applied_as_for_a_cold_open():
    """Over MAX_PUBLISHED diagnostics: the first 500 and the one that counts the rest,
    after edits that move every one of them (a line added and removed at the start)."""
    text = "fn d() {}\n" * (MAX_PUBLISHED + 20)
    got = cold(text, "utf-16")
    assert len(got) == MAX_PUBLISHED + 1
    assert got[-1]["message"].endswith("more diagnostics not shown")
    edits = [(0, 0, "// é\n"), (len(text) // 2, 0, "😀"), (0, 5, ""), (10**6, 0, "fn d() {}\n")]
    apply_edits(text, edits, "utf-16")


def test_the_json_is_what_pygls_sends_for_the_lsprotocol_objects():
    """Every built diagnostic is what pygls's converter makes of the same ``lsprotocol``
    object (so a client receives the same bytes as before), and ``publish`` writes the
    message pygls's own ``text_document_publish_diagnostics`` writes, byte for byte."""
    conv = default_converter()
    ls = create_server()
    sent: list[bytes] = []

    class Writer:
        def write(self, data):
            sent.append(data)

        def close(self):
            pass

    ls.protocol.writer = Writer()
    for text in (BASE, BASE.replace("\n", "\r\n"), "fn d() {}\n" * (MAX_PUBLISHED + 3)):
        a = Workspace().open(URI, text, 1).analysis()
        for enc in ("utf-16", "utf-8", "utf-32"):
            js = diagnostics_json(a, enc, URI)
            objs = lsp_diagnostics(a, enc, URI)
            assert [conv.unstructure(o) for o in objs] == js
            assert json.dumps([conv.unstructure(o) for o in objs]) == json.dumps(js)
            publish(ls, URI, 7, js)
            ls.text_document_publish_diagnostics(
                T.PublishDiagnosticsParams(uri=URI, diagnostics=objs, version=7)
            )
            assert sent[-2] == sent[-1]
    assert any(d.get("relatedInformation") for d in diagnostics_json(a, "utf-16", URI))
    # a code action's diagnostic is the same object
    d = a.diagnostics[0]
    assert convert.diagnostic(d, a.line_index, "utf-16", URI) == objs[0]


@pytest.mark.asyncio(loop_scope="module")
async def test_through_the_server_an_edited_document_publishes_what_a_cold_one_does(
    client: LanguageClient,  # noqa: F811 (the harness's fixture)
):
    """Through a real server process (VS Code's UTF-16 and Neovim's UTF-8 positions): a
    CRLF text with multi-byte characters, edited at its start, its end, across lines and
    inside a surrogate pair's line, publishes per version what a cold open of the same
    text publishes."""
    enc = "utf-8" if utf8(client) else "utf-16"
    text = BASE.replace("\n", "\r\n")
    uri = open_doc(client, text, stem="edited")
    await wait_diagnostics(client, uri, 1)
    edits = [
        (0, 0, "// 😀 ü\n"),
        (10**6, 0, "\r\nfn dup() {}\r\n"),
        (text.index("let q"), 3, "let é😀 = 1.0;\r\n    "),
        (text.index("sqrt(t)"), 20, ""),
        (text.index("😀 in"), 1, "x"),
    ]
    version = 1
    for at, length, inserted in edits:
        a = _boundary(text, min(at, len(text)))
        b = _boundary(text, min(a + length, len(text)))
        (sl, sc), (el, ec) = position(text, a, enc), position(text, b, enc)
        text = text[:a] + inserted + text[b:]
        version += 1
        rng = T.Range(
            start=T.Position(line=sl, character=sc), end=T.Position(line=el, character=ec)
        )
        client.text_document_did_change(
            T.DidChangeTextDocumentParams(
                text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[T.TextDocumentContentChangePartial(range=rng, text=inserted)],
            )
        )
        got = await wait_diagnostics(client, uri, version)
        fresh = open_doc(client, text, stem="cold")
        want = await wait_diagnostics(client, fresh, 1)
        assert got, version
        as_json = default_converter().unstructure
        assert json.dumps(as_json(got)).replace(uri, "URI") == json.dumps(as_json(want)).replace(
            fresh, "URI"
        ), version
