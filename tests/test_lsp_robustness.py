"""End-to-end: the server survives bad input — malformed and unknown requests, a crashing
feature, a 5 MB file, random bytes — answers in time, and shuts down cleanly."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import asyncio
import json
import random
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import Future

import pytest
from lsprotocol import types as T
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient, client_capabilities
from test_lsp_harness import (
    CONFIG,
    ROOT,
    SAMPLE,
    client,  # noqa: F401  (the fixture)
    doc_id,
    open_doc,
    pos,
    wait_diagnostics,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def raw_request(client: LanguageClient, method: str, params, timeout: float = 10):
    """Send exactly this JSON (the typed client API would refuse malformed params)."""
    proto = client.protocol
    msg_id = str(uuid.uuid4())
    fut: Future = Future()
    proto._request_futures[msg_id] = fut
    proto._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await asyncio.wait_for(asyncio.wrap_future(fut), timeout)


async def alive(client: LanguageClient) -> None:
    """The server still answers real requests."""
    uri = open_doc(client, SAMPLE, "alive")
    await wait_diagnostics(client, uri, 1)
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(uri), position=pos(SAMPLE, "saxpy"))
    )
    assert h is not None and "fn saxpy" in h.contents.value


async def test_capabilities(client: LanguageClient):
    caps = client.init_result.capabilities  # type: ignore[attr-defined]
    assert list(caps.execute_command_provider.commands) == ["kera.compileToTarget"]
    legend = caps.semantic_tokens_provider.legend
    assert "keyword" in legend.token_types and "mutable" in legend.token_modifiers
    assert caps.hover_provider and caps.definition_provider and caps.references_provider
    assert caps.document_formatting_provider and caps.document_range_formatting_provider
    assert caps.code_lens_provider and caps.inlay_hint_provider and caps.folding_range_provider
    assert caps.selection_range_provider and caps.workspace_symbol_provider
    assert list(caps.signature_help_provider.trigger_characters) == ["(", ","]
    assert "." in caps.completion_provider.trigger_characters
    expected = "utf-8" if client.client_name == "neovim" else "utf-16"  # type: ignore[attr-defined]
    assert caps.position_encoding == expected


async def test_malformed_and_unknown_requests_get_errors(client: LanguageClient):
    with pytest.raises(JsonRpcException) as info:  # `position` is missing
        await raw_request(client, "textDocument/hover", {"textDocument": {"uri": "file:///x.kera"}})
    assert info.value.code == -32602  # InvalidParams
    with pytest.raises(JsonRpcException) as info:
        await raw_request(client, "kera/noSuchThing", {})
    assert info.value.code == -32601  # MethodNotFound
    for bad in (
        [1, 2],
        {"uri": 3},
        {"uri": "file:///not-open.kera", "function": "f", "target": "keg"},
    ):
        with pytest.raises(JsonRpcException):
            await raw_request(client, "kera/lowering", bad)
    with pytest.raises(JsonRpcException):
        await asyncio.wait_for(
            client.workspace_execute_command_async(
                T.ExecuteCommandParams(command="kera.compileToTarget", arguments=[1])
            ),
            5,
        )
    await alive(client)


async def test_a_crashing_feature_is_answered_and_contained(client: LanguageClient):
    with pytest.raises(JsonRpcException) as info:
        await raw_request(client, "kera/_test/crash", {})
    assert info.value.code == -32603 and "deliberate failure" in info.value.message
    await alive(client)


async def test_huge_file_does_not_hang(client: LanguageClient):
    # over the 10 MiB limit: not parsed (a file under it is analysed in full, with a
    # cancellable progress: test_lsp_capabilities_diagnostics)
    big = ("pub fn f(a: f32) -> f32 { a * 2.0 }\n" * 320_000)[:11_000_000]
    t0 = time.perf_counter()
    uri = open_doc(client, big, "huge")
    diags = await wait_diagnostics(client, uri, 1, timeout=20)
    assert any("analysis skipped" in d.message for d in diags)
    toks = await asyncio.wait_for(
        client.text_document_semantic_tokens_full_async(
            T.SemanticTokensParams(text_document=doc_id(uri))
        ),
        10,
    )
    assert list(toks.data) == []
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(uri), position=T.Position(line=3, character=8))
    )
    assert h is None
    at = T.Position(line=1, character=0)
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                T.TextDocumentContentChangePartial(range=T.Range(start=at, end=at), text="x")
            ],
        )
    )
    await wait_diagnostics(client, uri, 2, timeout=20)
    assert time.perf_counter() - t0 < 30
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=doc_id(uri)))
    await alive(client)


async def test_random_bytes_do_not_hang(client: LanguageClient):
    rng = random.Random(7)
    junk = bytes(rng.randrange(256) for _ in range(80_000)).decode("utf-8", "replace")
    uri = open_doc(client, junk, "junk")
    diags = await wait_diagnostics(client, uri, 1, timeout=20)
    assert 0 < len(diags) <= 501
    for method in (
        "textDocument/semanticTokens/full",
        "textDocument/foldingRange",
        "textDocument/documentSymbol",
    ):
        await raw_request(client, method, {"textDocument": {"uri": uri}}, 20)
    await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(uri), position=T.Position(line=5, character=3))
    )
    await client.text_document_completion_async(
        T.CompletionParams(text_document=doc_id(uri), position=T.Position(line=5, character=3))
    )
    await alive(client)


async def test_out_of_range_positions_are_clamped(client: LanguageClient):
    uri = open_doc(client, SAMPLE, "clamp")
    await wait_diagnostics(client, uri, 1)
    far = T.Position(line=10_000, character=10_000)
    assert (
        await client.text_document_hover_async(
            T.HoverParams(text_document=doc_id(uri), position=far)
        )
        is None
    )
    assert (
        await client.text_document_definition_async(
            T.DefinitionParams(text_document=doc_id(uri), position=far)
        )
        is None
    )
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                T.TextDocumentContentChangePartial(
                    range=T.Range(start=far, end=far), text="\n// end"
                )
            ],
        )
    )
    assert await wait_diagnostics(client, uri, 2) == []


async def test_shutdown_and_exit_are_clean():
    c = CONFIG.client_factory()
    await c.start_io(*CONFIG.server_command, env=CONFIG.server_env)
    await c.initialize_session(T.InitializeParams(capabilities=client_capabilities("neovim")))
    # a request in flight on the worker when the client shuts down
    pending = asyncio.ensure_future(raw_request(c, "kera/_test/sleep", {"seconds": 0.2}))
    await asyncio.sleep(0.05)
    await asyncio.wait_for(c.shutdown_async(None), 5)
    c.exit(None)
    rc = await asyncio.wait_for(c._server.wait(), 10)
    assert rc == 0
    pending.cancel()
    await c.stop()


async def test_tcp_mode():
    await asyncio.to_thread(_tcp_roundtrip)


def _tcp_roundtrip():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kera_lsp", "--tcp", str(port)], cwd=ROOT, stderr=subprocess.PIPE
    )
    try:
        conn = None
        for _ in range(100):
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                time.sleep(0.05)
        assert conn is not None
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"capabilities": {}, "processId": None},
            }
        ).encode()
        conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, rest = data.split(b"\r\n\r\n", 1)
        n = int(head.split(b"Content-Length:")[1].split(b"\r\n")[0])
        while len(rest) < n:
            rest += conn.recv(65536)
        reply = json.loads(rest[:n])
        assert reply["id"] == 1 and "capabilities" in reply["result"]
        assert reply["result"]["serverInfo"]["name"] == "kera-lsp"
        conn.close()
    finally:
        proc.kill()
        proc.wait()
