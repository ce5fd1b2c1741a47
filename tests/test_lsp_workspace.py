"""End-to-end: the workspace index — symbols of files that are not open, the watchers the
server registers, `didChangeWatchedFiles` (create, change, delete), open documents taking
precedence over disk, and references/rename following resolution (not names) across files.
Each test runs for the VS Code and the Neovim client capabilities."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import LanguageClient, client_capabilities
from test_lsp_harness import CLIENTS, CONFIG, doc_id, pos, wait_diagnostics

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kera_core.ide import workspace_index as wi  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

A = """\
struct Vec2 { x: f32, y: f32 }

fn helper(v: Vec2) -> f32 {
    v.x * v.y
}

pub fn alpha_main(v: Vec2) -> f32 {
    helper(v) + helper(v)
}
"""
B = """\
const BETA_LIMIT: f32 = 4.0;

fn helper(a: f32) -> f32 {
    a * BETA_LIMIT
}

pub fn helper_twice(a: f32) -> f32 {
    helper(helper(a))
}
"""
C = "pub fn gamma_kernel[N](x: &f32[N]) -> f32 {\n    sum(x)\n}\n"


@pytest_lsp.fixture(config=CONFIG, params=CLIENTS, scope="module")
async def ws(lsp_client: LanguageClient, request, tmp_path_factory):
    root = tmp_path_factory.mktemp("indexed")
    (root / "a.kera").write_text(A)
    (root / "b.kera").write_text(B)
    (root / "sub").mkdir()
    (root / "sub" / "c.kera").write_text(C)
    for skipped in (".hidden", "node_modules"):
        (root / skipped).mkdir()
        (root / skipped / "d.kera").write_text("fn skipped_fn() {}\n")
    (root / "notes.txt").write_text("fn not_kera() {}\n")
    lsp_client.root = root  # type: ignore[attr-defined]
    lsp_client.client_name = request.param  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=client_capabilities(request.param),
            root_uri=root.as_uri(),
            workspace_folders=[T.WorkspaceFolder(uri=root.as_uri(), name="indexed")],
            initialization_options={"kera": {"diagnosticsDelay": 20}},
        )
    )
    yield
    await lsp_client.shutdown_session()


async def symbols(client: LanguageClient, query: str) -> list[T.SymbolInformation]:
    res = await client.workspace_symbol_async(T.WorkspaceSymbolParams(query=query))
    return list(res or [])


async def until_found(client: LanguageClient, query: str, name: str, timeout: float = 15.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        found = [s for s in await symbols(client, query) if s.name == name]
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} never indexed")


def uri_of(client: LanguageClient, rel: str) -> str:
    return (client.root / rel).as_uri()  # type: ignore[attr-defined]


def open_file(client: LanguageClient, rel: str, text: str, version: int = 1) -> str:
    uri = uri_of(client, rel)
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(
                uri=uri, language_id="kera", version=version, text=text
            )
        )
    )
    return uri


def watched(client: LanguageClient, rel: str, kind: T.FileChangeType) -> None:
    client.workspace_did_change_watched_files(
        T.DidChangeWatchedFilesParams(changes=[T.FileEvent(uri=uri_of(client, rel), type=kind)])
    )


async def test_symbols_of_files_not_open(ws: LanguageClient):
    client = ws
    (gamma,) = await until_found(client, "gamma", "gamma_kernel")
    assert gamma.kind == T.SymbolKind.Function
    assert wi.normal_uri(gamma.location.uri) == wi.normal_uri(uri_of(client, "sub/c.kera"))
    assert gamma.location.range.start == T.Position(line=0, character=0)
    assert gamma.location.range.end == T.Position(line=2, character=1)
    await until_found(client, "helper", "helper_twice")
    # fuzzy, ranked: the exact names first (one per file), then the longer one
    names = [s.name for s in await symbols(client, "helper")]
    assert names[:3] == ["helper", "helper", "helper_twice"]
    assert [s.name for s in await symbols(client, "gmkrn")] == ["gamma_kernel"]
    fields = [s for s in await symbols(client, "x") if s.kind == T.SymbolKind.Field]
    assert [(s.name, s.container_name) for s in fields] == [("x", "Vec2")]
    (limit,) = [s for s in await symbols(client, "beta") if s.name == "BETA_LIMIT"]
    assert limit.kind == T.SymbolKind.Constant
    everything = {s.name for s in await symbols(client, "")}
    assert {"alpha_main", "Vec2", "gamma_kernel", "BETA_LIMIT"} <= everything
    assert "skipped_fn" not in everything and "not_kera" not in everything  # hidden, deps, .txt


async def test_the_server_registers_its_watchers(ws: LanguageClient):
    lsp_client = ws
    await until_found(lsp_client, "gamma", "gamma_kernel")
    regs = [r for p in lsp_client.registrations for r in p.registrations]  # type: ignore[attr-defined]
    caps = client_capabilities(lsp_client.client_name)  # type: ignore[attr-defined]
    dynamic = caps.workspace.did_change_watched_files.dynamic_registration
    if not dynamic:  # Neovim on Linux: no watchers; the index follows open/save/close
        assert not [r for r in regs if r.method == T.WORKSPACE_DID_CHANGE_WATCHED_FILES]
        return
    (reg,) = [r for r in regs if r.method == T.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    watchers = reg.register_options["watchers"]
    assert [w["globPattern"] for w in watchers] == ["**/*.kera"]


async def test_index_follows_the_disk(ws: LanguageClient):
    client = ws
    await until_found(client, "gamma", "gamma_kernel")
    new = client.root / "sub" / "new.kera"  # type: ignore[attr-defined]
    new.write_text("fn delta_one() {}\n")
    watched(client, "sub/new.kera", T.FileChangeType.Created)
    (one,) = await until_found(client, "delta", "delta_one", timeout=5)
    assert wi.normal_uri(one.location.uri) == wi.normal_uri(new.as_uri())
    new.write_text("// renamed\nfn delta_two() {}\nconst DELTA_K: i64 = 1;\n")
    watched(client, "sub/new.kera", T.FileChangeType.Changed)
    await until_found(client, "delta", "delta_two", timeout=5)
    assert {s.name for s in await symbols(client, "delta")} == {"delta_two", "DELTA_K"}
    new.unlink()
    watched(client, "sub/new.kera", T.FileChangeType.Deleted)
    assert await symbols(client, "delta") == []
    # a deleted directory takes its files with it
    (client.root / "gone").mkdir()  # type: ignore[attr-defined]
    (client.root / "gone" / "e.kera").write_text("fn epsilon_fn() {}\n")  # type: ignore[attr-defined]
    watched(client, "gone/e.kera", T.FileChangeType.Created)
    await until_found(client, "epsilon", "epsilon_fn", timeout=5)
    (client.root / "gone" / "e.kera").unlink()  # type: ignore[attr-defined]
    watched(client, "gone", T.FileChangeType.Deleted)
    assert await symbols(client, "epsilon") == []


async def test_open_documents_take_precedence(ws: LanguageClient):
    client = ws
    await until_found(client, "gamma", "gamma_kernel")
    uri = open_file(client, "sub/c.kera", "fn gamma_open() {}\n")
    await wait_diagnostics(client, uri, 1)
    names = {s.name for s in await symbols(client, "gamma")}
    assert names == {"gamma_open"}  # the buffer, not the file on disk
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=doc_id(uri)))
    await until_found(client, "gamma", "gamma_kernel", timeout=5)
    assert {s.name for s in await symbols(client, "gamma")} == {"gamma_kernel"}


async def test_references_and_rename_follow_resolution(ws: LanguageClient):
    """`helper` in a.kera and `helper` in b.kera are different functions (no imports yet):
    references and rename of one never touch the other file."""
    client = ws
    a = open_file(client, "a.kera", A)
    b = open_file(client, "b.kera", B)
    await wait_diagnostics(client, a, 1)
    await wait_diagnostics(client, b, 1)
    refs = await client.text_document_references_async(
        T.ReferenceParams(
            text_document=doc_id(a),
            position=pos(A, "helper(v) +"),
            context=T.ReferenceContext(include_declaration=True),
        )
    )
    assert {r.uri for r in refs} == {a} and len(refs) == 3
    edit = await client.text_document_rename_async(
        T.RenameParams(text_document=doc_id(a), position=pos(A, "helper(v:"), new_name="assist")
    )
    if edit.document_changes:
        assert [d.text_document.uri for d in edit.document_changes] == [a]
        assert len(edit.document_changes[0].edits) == 3
    else:
        assert list(edit.changes) == [a] and len(edit.changes[a]) == 3
    for uri in (a, b):
        client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=doc_id(uri)))


async def test_index_unit(tmp_path: Path):
    """The index without a server: outline of a file too large to parse, ranking, skips."""
    big = tmp_path / "big.kera"
    body = "".join(f"fn f{i}(x: f32) -> f32 {{\n    x * {i}.0\n}}\n" for i in range(12000))
    big.write_text("/* é */\npub struct Big { a: f32 }\n" + body)
    assert big.stat().st_size > wi.FULL_PARSE_BYTES
    idx = wi.WorkspaceIndex("utf-16")
    idx.roots = [str(tmp_path)]
    e = idx.index_path(big)
    assert e is not None and e.outline_only and len(e.symbols) == 12001
    f5 = next(s for s in e.symbols if s.name == "f5")
    assert f5.detail == "fn f5(x: f32) -> f32" and f5.name_start == (17, 3)
    assert idx.index_path(big) is e  # unchanged file: not read again
    assert wi.match_score("f5", "f5") == 0 and wi.match_score("zz", "f5") is None
    ranked = [s.name for s in wi.search(idx.disk_entries().values(), "f1", limit=3)]
    assert ranked == ["f1", "f10", "f11"]
    assert len(wi.search(idx.disk_entries().values(), "")) == wi.MAX_RESULTS
    assert idx.in_roots(str(big)) and not idx.in_roots(str(tmp_path / ".git" / "x.kera"))
    idx.remove(tmp_path.as_uri())
    assert idx.disk_entries() == {}
