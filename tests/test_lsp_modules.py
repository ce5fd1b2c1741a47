"""End-to-end: modules in the language server (language.md, "Modules") — go to definition
on an imported name (from a call and from the `use` declaration) jumps into the other file,
open or not; a dependant's diagnostics are published again when the file it imports from
changes (a function made private, then public again); references and rename of a `pub` item
reach every file that imports it; the call hierarchy crosses files (an alias's callers, a
callee in a file not open). Each test runs for the VS Code and the Neovim client capabilities."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient, client_capabilities
from test_lsp_harness import CLIENTS, CONFIG, wait_diagnostics

pytestmark = pytest.mark.asyncio(loop_scope="module")

LINALG = """\
/// y += a * x
pub fn axpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = y[i] + a * x[i];
    }
}

pub struct Point {
    pub x: f32,
    pub y: f32,
}
"""
MAIN = """\
use linalg::{axpy, Point};

pub fn run[N](x: &f32[N], y: &mut f32[N]) {
    axpy(2.0, x, y);
}

pub fn norm(p: Point) -> f32 {
    p.x * p.x + p.y * p.y
}
"""


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS, scope="module")
async def pkg(lsp_client: LanguageClient, request, tmp_path_factory):
    root = tmp_path_factory.mktemp("pkg")
    (root / "kera.toml").write_text('[package]\nname = "demo"\n')
    (root / "linalg.kera").write_text(LINALG)
    (root / "main.kera").write_text(MAIN)
    lsp_client.root = root  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=client_capabilities(request.param),
            root_uri=root.as_uri(),
            workspace_folders=[T.WorkspaceFolder(uri=root.as_uri(), name="pkg")],
            initialization_options={"kera": {"diagnosticsDelay": 20}},
        )
    )
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, name: str, text: str, version: int = 1) -> str:
    uri = (client.root / name).as_uri()  # type: ignore[attr-defined]
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(
                uri=uri, language_id="kera", version=version, text=text
            )
        )
    )
    return uri


def _close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(
        T.DidCloseTextDocumentParams(text_document=T.TextDocumentIdentifier(uri=uri))
    )


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def _at(text: str, needle: str, nth: int = 0) -> T.Position:
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    line = text.count("\n", 0, i)
    return T.Position(line=line, character=i - (text.rfind("\n", 0, i) + 1))


async def _definition(client: LanguageClient, uri: str, where: T.Position) -> T.Location:
    res = await client.text_document_definition_async(
        T.DefinitionParams(text_document=T.TextDocumentIdentifier(uri=uri), position=where)
    )
    assert res is not None
    return res[0] if isinstance(res, list) else res  # type: ignore[return-value]


async def _published(client: LanguageClient, uri: str, want, timeout: float = 15.0):
    """Wait until the diagnostics published for ``uri`` satisfy ``want``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        diags = client.diagnostics.get(uri)
        if diags is not None and want(diags):
            return diags
        await asyncio.sleep(0.05)
    raise AssertionError(f"{uri}: {client.diagnostics.get(uri)}")


async def test_definition_jumps_into_the_imported_file(pkg: LanguageClient):
    client = pkg
    main = _open(client, "main.kera", MAIN)
    assert await wait_diagnostics(client, main, 1) == []
    linalg = (client.root / "linalg.kera").as_uri()  # type: ignore[attr-defined]
    # from a call, from the `use` declaration, and for a struct in a signature
    for needle, nth, target in (("axpy", 1, "axpy"), ("axpy", 0, "axpy"), ("Point", 1, "Point")):
        loc = await _definition(client, main, _at(MAIN, needle, nth))
        assert loc.uri == linalg
        assert loc.range.start == _at(LINALG, target)
    # the file it jumps into is open now: the same answer
    _open(client, "linalg.kera", LINALG)
    loc = await _definition(client, main, _at(MAIN, "axpy", 1))
    assert (loc.uri, loc.range.start) == (linalg, _at(LINALG, "axpy"))
    _close(client, linalg)
    _close(client, main)


async def test_dependant_diagnostics_follow_the_imported_file(pkg: LanguageClient):
    client = pkg
    main = _open(client, "main.kera", MAIN, version=3)
    assert await wait_diagnostics(client, main, 3) == []
    linalg = _open(client, "linalg.kera", LINALG)
    # `axpy` made private in linalg: main (not edited) gets K0211, pointing at linalg
    _change(client, linalg, 2, LINALG.replace("pub fn axpy", "fn axpy"))
    diags = await _published(client, main, lambda ds: any(d.code == "K0211" for d in ds))
    (priv,) = [d for d in diags if d.code == "K0211"]
    assert priv.range.start == _at(MAIN, "axpy")
    assert priv.related_information
    assert priv.related_information[0].location.uri == linalg
    # `axpy` removed: an unknown item
    _change(client, linalg, 3, LINALG.replace("pub fn axpy", "pub fn axpy2"))
    await _published(client, main, lambda ds: "K0210" in [d.code for d in ds])
    # back as it was: main is clean again
    _change(client, linalg, 4, LINALG)
    await _published(client, main, lambda ds: len(ds) == 0)
    _close(client, linalg)
    _close(client, main)


async def test_rename_from_the_importing_file(pkg: LanguageClient):
    client = pkg
    main = _open(client, "main.kera", MAIN, version=7)
    await wait_diagnostics(client, main, 7)
    linalg = (client.root / "linalg.kera").as_uri()  # type: ignore[attr-defined]
    where = T.TextDocumentIdentifier(uri=main)
    prep = await client.text_document_prepare_rename_async(
        T.PrepareRenameParams(text_document=where, position=_at(MAIN, "Point", 1))
    )
    assert prep is not None
    edit = await client.text_document_rename_async(
        T.RenameParams(text_document=where, position=_at(MAIN, "Point", 1), new_name="Vec2")
    )
    assert edit is not None
    texts: dict[str, list[str]] = {}
    for change in edit.document_changes or []:
        texts[change.text_document.uri] = [e.new_text for e in change.edits]  # type: ignore[union-attr]
    for uri, edits in (edit.changes or {}).items():
        texts[uri] = [e.new_text for e in edits]
    # the struct's definition in linalg (not open: version null), the `use` and the type here
    assert texts == {linalg: ["Vec2"], main: ["Vec2", "Vec2"]}
    _close(client, main)


async def test_references_and_rename_across_files(pkg: LanguageClient):
    client = pkg
    linalg = _open(client, "linalg.kera", LINALG, version=5)
    await wait_diagnostics(client, linalg, 5)
    main = (client.root / "main.kera").as_uri()  # type: ignore[attr-defined]
    where = T.TextDocumentIdentifier(uri=linalg)
    refs = await client.text_document_references_async(
        T.ReferenceParams(
            text_document=where,
            position=_at(LINALG, "axpy"),
            context=T.ReferenceContext(include_declaration=True),
        )
    )
    found = sorted((r.uri, r.range.start.line, r.range.start.character) for r in refs or [])
    assert found == sorted(
        [
            (linalg, _at(LINALG, "axpy").line, _at(LINALG, "axpy").character),
            (main, _at(MAIN, "axpy").line, _at(MAIN, "axpy").character),
            (main, _at(MAIN, "axpy", 1).line, _at(MAIN, "axpy", 1).character),
        ]
    )
    edit = await client.text_document_rename_async(
        T.RenameParams(text_document=where, position=_at(LINALG, "axpy"), new_name="saxpy")
    )
    assert edit is not None
    per_file: dict[str, int] = {}
    for change in edit.document_changes or []:
        per_file[change.text_document.uri] = len(change.edits)  # type: ignore[union-attr]
    for uri, edits in (edit.changes or {}).items():
        per_file[uri] = len(edits)
    assert per_file == {linalg: 1, main: 2}
    _close(client, linalg)


CALLS_LIB = """\
pub fn scale(a: f32) -> f32 {
    a * 2.0
}

pub fn twice(a: f32) -> f32 {
    scale(scale(a))
}
"""
CALLS_MAIN = """\
use lib::{scale as sc, twice};

pub fn run(a: f32) -> f32 {
    sc(a) + twice(a)
}
"""


async def test_call_hierarchy_across_files(pkg: LanguageClient):
    client = pkg
    root = client.root / "calls"  # type: ignore[attr-defined]
    root.mkdir()
    (root / "kera.toml").write_text('[package]\nname = "calls"\n')
    (root / "lib.kera").write_text(CALLS_LIB)
    (root / "main.kera").write_text(CALLS_MAIN)
    main = _open(client, "calls/main.kera", CALLS_MAIN)
    assert await wait_diagnostics(client, main, 1) == []
    lib = (root / "lib.kera").as_uri()
    where = T.TextDocumentIdentifier(uri=main)
    # prepared on a call of an alias: the item is the function, in its own file
    (item,) = await client.text_document_prepare_call_hierarchy_async(
        T.CallHierarchyPrepareParams(text_document=where, position=_at(CALLS_MAIN, "sc("))
    )  # type: ignore[misc]
    assert (item.uri, item.name) == (lib, "scale")
    assert item.selection_range.start == _at(CALLS_LIB, "scale")
    # its callers: `twice` in its own file (not open) and `run` here, under the alias
    incoming = await client.call_hierarchy_incoming_calls_async(
        T.CallHierarchyIncomingCallsParams(item=item)
    )
    got = sorted(
        (c.from_.uri, c.from_.name, [(r.start.line, r.start.character) for r in c.from_ranges])
        for c in incoming or []
    )
    at = [_at(CALLS_LIB, "scale", 1), _at(CALLS_LIB, "scale", 2), _at(CALLS_MAIN, "sc(")]
    assert got == sorted(
        [
            (lib, "twice", [(p.line, p.character) for p in at[:2]]),
            (main, "run", [(at[2].line, at[2].character)]),
        ]
    )
    # what `run` calls: both functions, in lib; and what `twice` calls there (lib not open)
    (run,) = await client.text_document_prepare_call_hierarchy_async(
        T.CallHierarchyPrepareParams(text_document=where, position=_at(CALLS_MAIN, "run"))
    )  # type: ignore[misc]
    out = await client.call_hierarchy_outgoing_calls_async(
        T.CallHierarchyOutgoingCallsParams(item=run)
    )
    assert [(c.to.uri, c.to.name) for c in out or []] == [(lib, "scale"), (lib, "twice")]
    twice = out[1].to  # type: ignore[index]
    assert twice.range.start == _at(CALLS_LIB, "pub fn twice")
    out = await client.call_hierarchy_outgoing_calls_async(
        T.CallHierarchyOutgoingCallsParams(item=twice)
    )
    assert [(c.to.uri, c.to.name, len(c.from_ranges)) for c in out or []] == [(lib, "scale", 2)]
    _close(client, main)
