"""End-to-end: the same-bits lens (kera_lsp/features/same_bits.py) through a real server, for
each client: the lens after a save, the table (`kera/sameBits`, `kera.showSameBits`), an
edit that cancels the check (no stale lens), and the settings. The verdicts themselves
(a differing target, a refusal, the step budget, a hang, a crash): tests/test_same_bits.py."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient
from test_lsp_harness import (
    client,  # noqa: F401  (the fixture)
    doc_id,
    open_doc,
    pos,
    wait_diagnostics,
)

from kera_core.analysis import analyze
from kera_core.ide import same_bits as sb

pytestmark = pytest.mark.asyncio(loop_scope="module")

TEXT = """\
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = a * x[i] + y[i];
    }
}

fn helper(a: f32) -> f32 { a * 2.0 }

pub fn twice(a: f32) -> f32 { helper(a) }
"""

ALL = "same bits on interp, wasm, x86_64, arm64"


@pytest.fixture(autouse=True)
def _accept_registrations(client: LanguageClient):
    """Dynamic registrations (another feature's, not this one's) are accepted quietly."""
    if T.CLIENT_REGISTER_CAPABILITY not in client.protocol.fm.features:
        client.feature(T.CLIENT_REGISTER_CAPABILITY)(lambda ls, params: None)


async def same_bits_lenses(client: LanguageClient, uri: str) -> dict[str, T.CodeLens]:
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(text_document=doc_id(uri)))
    return {
        ln.command.arguments[1]: ln
        for ln in lenses or []
        if ln.command and ln.command.command == "kera.showSameBits"
    }


async def wait_titles(client, uri, want, timeout: float = 30.0) -> dict[str, str]:
    """The same-bits lens titles, once ``want(titles)`` holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        titles = {k: v.command.title for k, v in (await same_bits_lenses(client, uri)).items()}
        if want(titles) or loop.time() > end:
            return titles
        await asyncio.sleep(0.1)


def save(client: LanguageClient, uri: str) -> None:
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=doc_id(uri)))


def edit(client: LanguageClient, uri: str, text: str, version: int, old: str, new: str) -> str:
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                T.TextDocumentContentChangePartial(
                    range=T.Range(start=pos(text, old), end=pos(text, old, len(old))), text=new
                )
            ],
        )
    )
    return text.replace(old, new, 1)


async def test_lens_after_save_and_the_table(client: LanguageClient):
    uri = open_doc(client, TEXT, "same")
    await wait_diagnostics(client, uri, 1)
    before = await same_bits_lenses(client, uri)
    assert set(before) == {"saxpy", "twice"}  # exported functions only
    assert before["saxpy"].command.title == "same bits: not checked (save to check)"
    assert before["saxpy"].range.start == pos(TEXT, "saxpy")
    assert list(before["saxpy"].command.arguments) == [uri, "saxpy"]
    save(client, uri)
    titles = await wait_titles(client, uri, lambda t: all(v == ALL for v in t.values()))
    assert titles == {"saxpy": ALL, "twice": ALL}
    got = await client.protocol.send_request_async(
        "kera/sameBits", {"uri": uri, "function": "saxpy"}
    )
    m = analyze(TEXT).module
    ref = sb.run_one(m, "saxpy", "interp")
    assert got.status == "done" and got.verdict == "same" and got.title == ALL
    assert got.fingerprint == f"sha3-256:{m.graph.functions['saxpy'].hash.hex()}"
    assert [o.target for o in got.outcomes] == ["interp", "wasm", "x86_64", "arm64"]
    assert all(o.shown == f"sha3-256:{ref.value}" for o in got.outcomes)
    assert f"sha3-256:{ref.value}" in got.text and "--entry saxpy --seed 1" in got.text
    shown = await client.workspace_execute_command_async(
        T.ExecuteCommandParams(command="kera.showSameBits", arguments=[uri, "saxpy"])
    )
    assert shown["text"] == got.text
    # a progress report per function, then the end
    ends = [
        v.message
        for values in client.progress_reports.values()
        for v in values
        if isinstance(v, T.WorkDoneProgressEnd)
    ]
    if client.client_name == "visual-studio-code":  # type: ignore[attr-defined]
        assert "2 function(s), 0 differ" in ends, ends
        assert client.code_lens_refreshes >= 2  # type: ignore[attr-defined]  (checking…, done)


async def test_an_edit_cancels_the_check_and_no_stale_lens(client: LanguageClient):
    uri = open_doc(client, TEXT, "cancel")
    await wait_diagnostics(client, uri, 1)
    save(client, uri)
    # `helper` changes, so `twice` (which calls it by hash) is another function; `saxpy` is not
    text = edit(client, uri, TEXT, 2, "a * 2.0", "a * 3.0")
    await wait_diagnostics(client, uri, 2)
    # the check of version 1 was stopped; whatever it finished describes other functions
    titles = await wait_titles(client, uri, lambda t: False, timeout=3.0)
    assert "same bits on" not in titles["twice"], titles
    assert titles["twice"] in (
        "same bits: not checked (save to check)",
        "same bits: checking…",
    ), titles
    got = await client.protocol.send_request_async(
        "kera/sameBits", {"uri": uri, "function": "twice", "check": False}
    )
    assert got.status == "unchecked" and got.verdict is None and got.outcomes == []
    assert got.version == 2
    save(client, uri)
    titles = await wait_titles(client, uri, lambda t: t.get("twice") == ALL)
    assert titles["twice"] == ALL, titles
    assert text.count("3.0") == 1


async def test_settings_turn_it_off_and_choose_targets(client: LanguageClient):
    uri = open_doc(client, TEXT, "settings")
    await wait_diagnostics(client, uri, 1)
    client.workspace_did_change_configuration(
        T.DidChangeConfigurationParams(settings={"kera": {"sameBits": {"enabled": False}}})
    )
    assert await same_bits_lenses(client, uri) == {}
    save(client, uri)
    await asyncio.sleep(1.0)
    lenses = await client.text_document_code_lens_async(T.CodeLensParams(text_document=doc_id(uri)))
    assert lenses and all(ln.command.command == "kera.showLowering" for ln in lenses)
    client.workspace_did_change_configuration(
        T.DidChangeConfigurationParams(
            settings={
                "kera": {"sameBits": {"enabled": True, "targets": ["interp", "wasm", "nope"]}}
            }
        )
    )
    # the results for the default targets do not answer for these: checked afresh on save
    titles = await wait_titles(client, uri, lambda t: bool(t))
    assert titles["twice"] == "same bits: not checked (save to check)", titles
    save(client, uri)
    want = "same bits on interp, wasm · nope unknown"
    titles = await wait_titles(client, uri, lambda t: t.get("twice") == want)
    assert titles == {"saxpy": want, "twice": want}
    client.workspace_did_change_configuration(
        T.DidChangeConfigurationParams(
            settings={"kera": {"sameBits": {"targets": list(sb.DEFAULT_TARGETS)}}}
        )
    )


async def test_bad_requests_fail_readably(client: LanguageClient):
    uri = open_doc(client, TEXT, "bad")
    await wait_diagnostics(client, uri, 1)
    for params, needle in (
        ({"uri": uri, "function": "helper"}, "not exported"),
        ({"uri": uri, "function": "nope"}, "no function `nope`"),
        ({"uri": uri + "x", "function": "twice"}, "is not open"),
        ({"uri": uri}, "missing or non-string"),
    ):
        with pytest.raises(Exception, match=needle):
            await client.protocol.send_request_async("kera/sameBits", params)
