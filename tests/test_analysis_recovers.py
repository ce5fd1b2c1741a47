"""A document whose analysis failed still opens, answers every query, and recovers on the next
edit.

A compiler bug in any stage — the parser, the incremental reparser, lowering (sema) or the
ownership checker — is injected for texts that contain a marker. The document must open
anyway with one K0901 diagnostic naming the stage, every editor query must answer, and the
next edit (to text without the marker) must give exactly the analysis a fresh open of that
text gives. The same is checked through the real language server (a subprocess with the fault
injected at start-up): the document opens, its diagnostics are published, requests answer,
and the next didChange brings back the ordinary diagnostics.
"""

from __future__ import annotations

import sys
import textwrap

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

import kera_core.sema.ownership as ownership
import kera_core.workspace as workspace
from kera_core.ide import completion, hover, inlay, navigation, outline, signature, tokens
from kera_core.source import Span
from kera_core.workspace import Workspace
from tests.test_lsp_harness import ROOT, wait_diagnostics

MARK = "CRASH_HERE"

GOOD = textwrap.dedent(
    """\
    /// doubles
    pub fn f(x: f32) -> f32 {
        let y = x * 2.0;
        y
    }

    fn g(a: i32) -> i32 { a + undefined_name }
    """
)
# The next edit touches only `g`: what was remembered about `f` must not keep the failure.
EDITED = GOOD.replace("a + undefined_name", "a * 3")

STAGES = {
    # stage: (module, attribute, what the K0901 names; None: recovered without one)
    "parser": (workspace, "parse", "parser"),
    "reparse": (workspace, "reparse", None),  # a failed reparse falls back to a full parse
    "sema": (workspace, "lower_module", "sema"),
    "ownership": (ownership, "check_function", "ownership"),
}


def _inject(monkeypatch: pytest.MonkeyPatch, stage: str) -> dict[str, bool]:
    """A bug in `stage` that fires while armed (on this text, not on the next)."""
    mod, attr, _ = STAGES[stage]
    real = getattr(mod, attr)
    armed = {"on": True}

    def faulty(*args, **kwargs):
        if armed["on"]:
            raise RuntimeError(f"injected {stage} bug")
        return real(*args, **kwargs)

    monkeypatch.setattr(mod, attr, faulty)
    return armed


def _every_query(doc) -> None:
    size = len(doc.text.encode())
    for view in (doc.analysis(), doc.syntax_analysis()):
        outline.document_symbols(view)
        outline.folding_ranges(view)
        tokens.semantic_tokens(view)
        inlay.inlay_hints(view, Span(0, size))
        for off in range(0, size, max(1, size // 12)):
            outline.selection_chain(view, off)
            hover.hover(view, off, doc)
            navigation.references(view, off)
            completion.complete(view, off)
            signature.signature_help(view, off)


def _summary(diags) -> list[tuple[str, int, int, str]]:
    return sorted((d.code, d.span.start, d.span.end, d.message) for d in diags)


def _fresh(text: str) -> list[tuple[str, int, int, str]]:
    return _summary(Workspace().open("file:///fresh.kera", text).analysis().diagnostics)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_a_failed_analysis_opens_answers_and_recovers(stage, monkeypatch) -> None:
    _, _, named = STAGES[stage]
    good, edited = _fresh(GOOD), _fresh(EDITED)
    assert all(code != "K0901" for code, *_ in good + edited)
    armed = _inject(monkeypatch, stage)
    doc = Workspace().open("file:///a.kera", GOOD if stage != "reparse" else "fn h() {}\n")
    if stage == "reparse":
        doc.analysis()
        doc.replace_text(GOOD)  # an edit: the reparser is asked, and fails
        assert doc.parse is not None and doc.parse_crash is None
        assert _summary(doc.analysis().diagnostics) == good
    else:
        internal = [d for d in doc.analysis().diagnostics if d.code == "K0901"]
        assert len(internal) == 1, doc.analysis().diagnostics
        assert named in internal[0].message and f"injected {stage} bug" in internal[0].message
        assert 0 <= internal[0].span.start <= internal[0].span.end <= len(GOOD.encode())
    _every_query(doc)

    # the bug does not fire on the next text: the edit recovers, exactly as a fresh open
    armed["on"] = False
    doc.replace_text(EDITED)
    assert _summary(doc.analysis().diagnostics) == edited
    _every_query(doc)
    doc.replace_text(GOOD)  # and back, incrementally
    assert _summary(doc.analysis().diagnostics) == good


# --- through the language server -------------------------------------------------------------

# The server with a sema fault injected before it starts (no hook in the product code): it
# fires on any text with the marker.
CRASHING = GOOD.replace("/// doubles", f"/// doubles {MARK}")
SERVER = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
import kera_core.workspace as w
real = w.lower_module
def faulty(p, *a, **k):
    if {MARK!r} in getattr(p, "text", ""):
        raise RuntimeError("injected sema bug")
    return real(p, *a, **k)
w.lower_module = faulty
from kera_lsp import main
sys.exit(main())
"""

CONFIG = ClientServerConfig(
    server_command=[sys.executable, "-c", SERVER],
    client_factory=lambda: _client(),
)


def _client() -> LanguageClient:
    from tests.test_lsp_harness import make_client

    return make_client()


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def faulty_server(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("faulty")
    await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            initialization_options={"kera": {"diagnosticsDelay": 20}},
        )
    )
    lsp_client.root = root  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_server_opens_a_document_whose_analysis_failed(faulty_server):
    client: LanguageClient = faulty_server  # type: ignore[assignment]
    uri = (client.root / "a.kera").as_uri()  # type: ignore[attr-defined]
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(uri=uri, language_id="kera", version=1, text=CRASHING)
        )
    )
    diags = await wait_diagnostics(client, uri, 1)
    assert [d.code for d in diags] == ["K0901"], diags
    assert "injected sema bug" in diags[0].message
    doc = T.TextDocumentIdentifier(uri=uri)
    symbols = await client.text_document_document_symbol_async(
        T.DocumentSymbolParams(text_document=doc)
    )
    assert symbols is not None and {s.name for s in symbols} >= {"f", "g"}
    await client.text_document_hover_async(
        T.HoverParams(text_document=doc, position=T.Position(line=1, character=8))
    )
    await client.text_document_folding_range_async(T.FoldingRangeParams(text_document=doc))
    # the next edit recovers
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=GOOD)],
        )
    )
    diags = await wait_diagnostics(client, uri, 2)
    codes = sorted(d.code for d in diags)
    fresh = sorted(d.code for d in Workspace().open("file:///f.kera", GOOD).analysis().diagnostics)
    assert codes == fresh and "K0901" not in codes, diags
    hover_after = await client.text_document_hover_async(
        T.HoverParams(text_document=doc, position=T.Position(line=1, character=8))
    )
    assert hover_after is not None and "fn f" in str(hover_after.contents)
