"""End-to-end: pull diagnostics (``textDocument/diagnostic``, ``workspace/diagnostic``) with
result ids, and work-done progress (server- and client-initiated, cancellation), for each
client."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as T
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from test_lsp_harness import (
    SAMPLE,
    client,  # noqa: F401  (the fixture)
    doc_id,
    open_doc,
    pos,
    wait_diagnostics,
)
from test_lsp_robustness import raw_request

pytestmark = pytest.mark.asyncio(loop_scope="module")

BAD = "fn show(x: f32) {\n    print(x);\n}\n"  # K0501-ish: `print` needs the `io` effect


def _key(d: T.Diagnostic):
    return (d.range, d.code, d.message, d.severity)


async def _pull(client, uri, previous=None):
    return await client.text_document_diagnostic_async(
        T.DocumentDiagnosticParams(text_document=doc_id(uri), previous_result_id=previous)
    )


def _change(client, uri, version, text, at, end=None):
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                T.TextDocumentContentChangePartial(
                    range=T.Range(start=at, end=end or at), text=text
                )
            ],
        )
    )


async def test_capabilities(client: LanguageClient):
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    dp = caps.diagnostic_provider
    assert dp.identifier == "kera" and dp.workspace_diagnostics and not dp.inter_file_dependencies
    st = caps.semantic_tokens_provider
    assert st.range is True and st.full.delta is True
    assert caps.document_highlight_provider and caps.declaration_provider
    assert caps.type_definition_provider and caps.call_hierarchy_provider
    assert caps.inlay_hint_provider.resolve_provider is True
    assert caps.completion_provider.resolve_provider is True
    otf = caps.document_on_type_formatting_provider
    assert otf.first_trigger_character == "}" and list(otf.more_trigger_character) == [";"]


async def test_pull_matches_push_and_unchanged_costs_nothing(client: LanguageClient):
    uri = open_doc(client, BAD, "pull")
    pushed = await wait_diagnostics(client, uri, 1)
    assert pushed and pushed[0].code == "K0501"
    full = await _pull(client, uri)
    assert isinstance(full, T.RelatedFullDocumentDiagnosticReport)
    assert full.kind == "full" and full.result_id
    assert [_key(d) for d in full.items] == [_key(d) for d in pushed]
    again = await _pull(client, uri, full.result_id)
    assert isinstance(again, T.RelatedUnchangedDocumentDiagnosticReport)
    assert again.kind == "unchanged" and again.result_id == full.result_id
    # an edit changes the id; the new report is full, with the edit's diagnostics
    _change(client, uri, 2, " ! io", pos(BAD, ") {", 1))
    after = await _pull(client, uri, full.result_id)
    assert isinstance(after, T.RelatedFullDocumentDiagnosticReport)
    assert list(after.items) == [] and after.result_id != full.result_id
    # undoing the edit is the same text: the first id again
    _change(
        client,
        uri,
        3,
        "",
        pos(BAD, ") {", 1),
        T.Position(line=0, character=pos(BAD, ") {", 1).character + 5),
    )
    undone = await _pull(client, uri, full.result_id)
    assert isinstance(undone, T.RelatedUnchangedDocumentDiagnosticReport)


async def test_pull_bad_input(client: LanguageClient):
    res = await _pull(client, "file:///not/open.kera")
    assert isinstance(res, T.RelatedFullDocumentDiagnosticReport) and list(res.items) == []
    uri = open_doc(client, SAMPLE, "pullstale")
    await wait_diagnostics(client, uri, 1)
    res = await _pull(client, uri, "not-an-id")
    assert isinstance(res, T.RelatedFullDocumentDiagnosticReport) and list(res.items) == []


async def test_workspace_diagnostic_over_open_documents(client: LanguageClient):
    bad = open_doc(client, BAD, "wsbad")
    good = open_doc(client, SAMPLE, "wsgood")
    await wait_diagnostics(client, good, 1)
    first = await client.workspace_diagnostic_async(
        T.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    by_uri = {r.uri: r for r in first.items}
    assert {bad, good} <= set(by_uri)
    assert by_uri[bad].kind == "full" and by_uri[bad].version == 1
    assert [d.code for d in by_uri[bad].items] == ["K0501"]
    assert by_uri[good].kind == "full" and list(by_uri[good].items) == []
    second = await client.workspace_diagnostic_async(
        T.WorkspaceDiagnosticParams(
            previous_result_ids=[T.PreviousResultId(uri=good, value=by_uri[good].result_id)]
        )
    )
    by_uri2 = {r.uri: r for r in second.items}
    assert isinstance(by_uri2[good], T.WorkspaceUnchangedDocumentDiagnosticReport)
    assert by_uri2[good].result_id == by_uri[good].result_id
    assert by_uri2[bad].kind == "full"
    # a closed document is no longer reported
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=doc_id(bad)))
    third = await client.workspace_diagnostic_async(
        T.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    assert bad not in {r.uri for r in third.items}


async def test_workspace_diagnostic_progress_and_cancel(client: LanguageClient):
    open_doc(client, SAMPLE, "wsprog")
    token = f"ws-{client.client_name}"  # type: ignore[attr-defined]
    client.progress_reports[token] = []
    done = await client.workspace_diagnostic_async(
        T.WorkspaceDiagnosticParams(previous_result_ids=[], work_done_token=token)
    )
    assert done.items
    kinds = [type(r).__name__ for r in client.progress_reports[token]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    assert "WorkDoneProgressReport" in kinds
    assert client.progress_reports[token][0].cancellable is True

    # cancelled while it waits for the worker (kept busy by a test-only sleep)
    token2 = token + "-cancel"
    client.progress_reports[token2] = []
    busy = asyncio.ensure_future(raw_request(client, "kera/_test/sleep", {"seconds": 1.0}))
    req = asyncio.ensure_future(
        client.workspace_diagnostic_async(
            T.WorkspaceDiagnosticParams(previous_result_ids=[], work_done_token=token2)
        )
    )
    for _ in range(500):
        if client.progress_reports[token2]:
            break
        await asyncio.sleep(0.01)
    assert type(client.progress_reports[token2][0]).__name__ == "WorkDoneProgressBegin"
    client.window_work_done_progress_cancel(T.WorkDoneProgressCancelParams(token=token2))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(req, 10)
    assert info.value.code == -32800  # RequestCancelled
    await busy
    assert type(client.progress_reports[token2][-1]).__name__ == "WorkDoneProgressEnd"


def _server_tokens(client: LanguageClient, title_start: str) -> list[list]:
    return [
        reports
        for reports in client.progress_reports.values()
        if reports
        and isinstance(reports[0], T.WorkDoneProgressBegin)
        and reports[0].title.startswith(title_start)
    ]


async def test_open_of_a_large_file_reports_progress(client: LanguageClient):
    text = "".join(f"pub fn f{i}(a: f32) -> f32 {{ a * {i}.0 + 1.0 }}\n" for i in range(1600))
    assert len(text) >= 64 * 1024
    uri = open_doc(client, text, "large")
    await wait_diagnostics(client, uri, 1, timeout=60)
    name = uri.rsplit("/", 1)[-1]
    for _ in range(500):
        found = _server_tokens(client, f"Kera: analysing {name}")
        if found and isinstance(found[0][-1], T.WorkDoneProgressEnd):
            break
        await asyncio.sleep(0.01)
    assert len(found) == 1
    begin, end = found[0][0], found[0][-1]
    assert begin.cancellable is True and begin.message.endswith("kB")
    assert isinstance(end, T.WorkDoneProgressEnd)
    # a small file reports nothing
    small = open_doc(client, SAMPLE, "small")
    await wait_diagnostics(client, small, 1)
    assert _server_tokens(client, f"Kera: analysing {small.rsplit('/', 1)[-1]}") == []


async def test_cancelling_a_large_files_analysis_abandons_it(client: LanguageClient):
    """The progress of a large file's first analysis can be cancelled: the analysis is
    abandoned (no diagnostics for that version), the progress ends saying so, and the next
    change is analysed in full."""
    text = "".join(f"pub fn g{i}(a: f32) -> f32 {{ a * {i}.0 + 1.0 }}\n" for i in range(1600))
    # the worker is kept busy (a test-only sleep), so the analysis is queued behind it
    busy = asyncio.ensure_future(raw_request(client, "kera/_test/sleep", {"seconds": 1.0}))
    await asyncio.sleep(0.05)
    uri = open_doc(client, text, "cancelled")
    name = uri.rsplit("/", 1)[-1]
    found: list = []
    for _ in range(500):
        found = _server_tokens(client, f"Kera: analysing {name}")
        if found:
            break
        await asyncio.sleep(0.01)
    assert found and found[0][0].cancellable is True
    token = next(t for t, reports in client.progress_reports.items() if reports is found[0])
    client.window_work_done_progress_cancel(T.WorkDoneProgressCancelParams(token=token))
    await busy
    for _ in range(1000):
        if isinstance(found[0][-1], T.WorkDoneProgressEnd):
            break
        await asyncio.sleep(0.01)
    assert isinstance(found[0][-1], T.WorkDoneProgressEnd)
    assert found[0][-1].message == "cancelled"
    await asyncio.sleep(0.2)
    # only the syntax diagnostics a large file's open publishes first (none here)
    published = [p for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
    assert [(p.version, list(p.diagnostics)) for p in published] == [(1, [])]
    _change(client, uri, 2, " ", T.Position(line=0, character=0))
    assert await wait_diagnostics(client, uri, 2, timeout=60) == []


async def test_a_large_file_publishes_its_syntax_diagnostics_first(client: LanguageClient):
    """A large file's open publishes its parse's diagnostics, then the complete set, both
    for the version opened; a small file publishes the complete set only."""
    body = "".join(f"pub fn s{i}(a: f32) -> f32 {{ a * {i}.0 + 1.0 }}\n" for i in range(1600))
    text = body + "fn broken( {\n}\nfn typed() -> f32 { true }\n"
    uri = open_doc(client, text, "syntaxfirst")
    for _ in range(3000):
        mine = [p for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
        if len(mine) >= 2:
            break
        await asyncio.sleep(0.02)
    assert [p.version for p in mine] == [1, 1]
    first, full = ({d.code for d in p.diagnostics} for p in mine)
    assert first and all(c.startswith("K01") for c in first)  # syntax only
    assert first < full  # then everything, the type error included


async def test_compile_command_reports_progress(client: LanguageClient):
    uri = open_doc(client, SAMPLE, "compileprog")
    await wait_diagnostics(client, uri, 1)
    res = await client.workspace_execute_command_async(
        T.ExecuteCommandParams(command="kera.compileToTarget", arguments=[uri, "saxpy", "keg"])
    )
    assert res["function"] == "saxpy"
    found = _server_tokens(client, "Kera: compiling `saxpy` to keg")
    assert found
    reports = found[-1]
    assert reports[0].cancellable is True
    assert isinstance(reports[1], T.WorkDoneProgressReport) and res["path"] in reports[1].message
    assert isinstance(reports[-1], T.WorkDoneProgressEnd)
    # a failing build ends its progress too
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(
            T.ExecuteCommandParams(command="kera.compileToTarget", arguments=[uri, "nope", "keg"])
        )
    failed = _server_tokens(client, "Kera: compiling `nope` to keg")
    assert failed and isinstance(failed[-1][-1], T.WorkDoneProgressEnd)


async def test_lowering_preview_progress_and_cancel(client: LanguageClient):
    uri = open_doc(client, SAMPLE, "lowerprog")
    await wait_diagnostics(client, uri, 1)
    token = f"low-{client.client_name}"  # type: ignore[attr-defined]
    client.progress_reports[token] = []
    params = {"uri": uri, "function": "saxpy", "target": "keg", "workDoneToken": token}
    res = await raw_request(client, "kera/lowering", params)  # a namedtuple-like object
    assert res.function == "saxpy"
    reports = client.progress_reports[token]
    assert isinstance(reports[0], T.WorkDoneProgressBegin) and reports[0].cancellable is True
    assert reports[0].title == "Kera: lowering `saxpy` for keg"
    assert isinstance(reports[-1], T.WorkDoneProgressEnd)
    # cancelled while queued behind other work: RequestCancelled, and the progress ends
    token2 = token + "-cancel"
    client.progress_reports[token2] = []
    busy = asyncio.ensure_future(raw_request(client, "kera/_test/sleep", {"seconds": 1.0}))
    req = asyncio.ensure_future(
        raw_request(client, "kera/lowering", {**params, "workDoneToken": token2})
    )
    for _ in range(500):
        if client.progress_reports[token2]:
            break
        await asyncio.sleep(0.01)
    client.window_work_done_progress_cancel(T.WorkDoneProgressCancelParams(token=token2))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(req, 10)
    assert info.value.code == -32800
    await busy
    assert isinstance(client.progress_reports[token2][-1], T.WorkDoneProgressEnd)
    # without a token, no progress and the same answer
    plain = await raw_request(
        client, "kera/lowering", {k: params[k] for k in ("uri", "function", "target")}
    )
    assert plain.text == res.text
