"""End-to-end: editing — synchronisation, diagnostics of every stage, versions, formatting,
quick fixes, compile actions and the compile command, rename — for each client."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import asyncio
import re
from pathlib import Path

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

from kera_core.fmt import format_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

BROKEN = """\
fn show(a: f32) {
    print(a);
}
fn dup() {}
fn dup() {}
pub fn mv[N](x: f32[N] @host) -> f32[N] @device ! transfer {
    let d = move_to(x, device);
    let e = move_to(x, device);
    d
}
"""


def change(client: LanguageClient, uri: str, version: int, *changes) -> None:
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=list(changes),
        )
    )


def edit(start: T.Position, end: T.Position, text: str) -> T.TextDocumentContentChangePartial:
    return T.TextDocumentContentChangePartial(range=T.Range(start=start, end=end), text=text)


def apply(text: str, edits: list[T.TextEdit]) -> str:
    """Apply LSP edits to ASCII text (where every position encoding agrees)."""
    lines = text.split("\n")
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)

    def off(p: T.Position) -> int:
        return starts[p.line] + p.character

    for e in sorted(edits, key=lambda e: off(e.range.start), reverse=True):
        text = text[: off(e.range.start)] + e.new_text + text[off(e.range.end) :]
    return text


def starts(edits) -> set[tuple[int, int]]:
    return {(e.range.start.line, e.range.start.character) for e in edits}


def starts_of(text: str, *needles: str) -> set[tuple[int, int]]:
    return {(pos(text, n).line, pos(text, n).character) for n in needles}


def utf8_client(client: LanguageClient) -> bool:
    return client.client_name == "neovim"  # type: ignore[attr-defined]


async def test_diagnostics_from_every_stage(client: LanguageClient):
    uri = open_doc(client, BROKEN, "broken")
    diags = await wait_diagnostics(client, uri, 1)
    codes = sorted(d.code for d in diags)
    assert codes == ["K0202", "K0401", "K0501"]  # sema, sema, ownership
    by = {d.code: d for d in diags}
    dup = by["K0202"]
    assert dup.severity == T.DiagnosticSeverity.Error and dup.source == "kera"
    assert dup.related_information[0].message == "first defined here"
    assert dup.related_information[0].location.range.start == pos(BROKEN, "dup")
    moved = by["K0401"]
    assert moved.range.start == pos(BROKEN, "x, device);\n    d")
    assert moved.related_information[0].message == "value moved here"
    # a syntax error arrives with the next version
    change(client, uri, 2, edit(pos(BROKEN, "d\n}"), pos(BROKEN, "d\n}"), "let = ;\n    "))
    diags = await wait_diagnostics(client, uri, 2)
    assert any(d.code.startswith("K01") for d in diags)


async def test_incremental_changes_apply_in_order(client: LanguageClient):
    text = "pub fn f(a: f32) -> f32 {\n    a\n}\n"
    uri = open_doc(client, text, "incr")
    await wait_diagnostics(client, uri, 1)
    # two changes in one event: the second range refers to the text after the first
    change(
        client,
        uri,
        2,
        edit(T.Position(line=1, character=4), T.Position(line=1, character=5), "a * 2.0"),
        edit(T.Position(line=1, character=4), T.Position(line=1, character=4), "1.0 + "),
    )
    assert await wait_diagnostics(client, uri, 2) == []
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(uri), position=T.Position(line=1, character=4))
    )
    assert "f32" in h.contents.value
    fp = await client.protocol.send_request_async("kera/fingerprint", {"uri": uri})
    assert fp.changedSinceSave is True and fp.savedVersion == 1 and fp.version == 2
    assert fp.fingerprint != fp.currentFingerprint  # the saved one is reported, and the current
    # a whole-document change
    change(
        client, uri, 3, T.TextDocumentContentChangeWholeDocument(text="pub fn f() -> f32 { q }\n")
    )
    diags = await wait_diagnostics(client, uri, 3)
    assert [d.code for d in diags] == ["K0201"]


async def test_non_ascii_positions_follow_the_negotiated_encoding(client: LanguageClient):
    # `é` is 2 bytes in UTF-8 and 1 unit in UTF-16; `𝔸` is 4 bytes and 2 units
    text = "// é𝔸\npub fn g(a: f32) -> f32 { a } // é𝔸 b\n"
    uri = open_doc(client, text, "utf")
    await wait_diagnostics(client, uri, 1)
    u8 = utf8_client(client)
    start = pos(text, "b\n", utf8_cols=u8)
    change(
        client, uri, 2, edit(start, T.Position(line=start.line, character=start.character + 1), "c")
    )
    await wait_diagnostics(client, uri, 2)
    # the text now ends in "c": replace the function body through a position after non-ASCII
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(uri), position=pos(text, "a }", utf8_cols=u8))
    )
    assert h is not None and "a: f32" in h.contents.value
    assert h.range.start == pos(text, "a }", utf8_cols=u8)
    change(
        client,
        uri,
        3,
        edit(pos(text, "a }", utf8_cols=u8), pos(text, "a }", 1, utf8_cols=u8), "zz"),
    )
    diags = await wait_diagnostics(client, uri, 3)
    assert [d.code for d in diags] == ["K0201"]
    assert diags[0].range.start == pos(text, "a }", utf8_cols=u8)
    assert diags[0].range.end.character == diags[0].range.start.character + 2


async def test_stale_versions_are_never_published(client: LanguageClient):
    text = "pub fn h(a: f32) -> f32 {\n    a\n}\n"
    uri = open_doc(client, text, "stale")
    await wait_diagnostics(client, uri, 1)
    for v in range(2, 12):  # a burst of edits: only the newest version may be published last
        at = T.Position(line=1, character=5)
        change(client, uri, v, edit(at, at, " "))
    await wait_diagnostics(client, uri, 11)
    await asyncio.sleep(0.3)
    mine = [p.version for p in client.published if p.uri == uri]  # type: ignore[attr-defined]
    assert mine[-1] == 11
    assert mine == sorted(mine)


async def test_formatting_document_range_and_refusal(client: LanguageClient):
    text = "fn f( a:f32 )->f32{a*2.0}\nfn g( b:f32 )->f32{b}\n"
    uri = open_doc(client, text, "fmt")
    await wait_diagnostics(client, uri, 1)
    opts = T.FormattingOptions(tab_size=4, insert_spaces=True)
    edits = await client.text_document_formatting_async(
        T.DocumentFormattingParams(text_document=doc_id(uri), options=opts)
    )
    assert apply(text, edits) == format_text(text).text
    edits = await client.text_document_range_formatting_async(
        T.DocumentRangeFormattingParams(
            text_document=doc_id(uri),
            range=T.Range(
                start=T.Position(line=1, character=0), end=T.Position(line=1, character=3)
            ),
            options=opts,
        )
    )
    assert edits and all(e.range.start.line == 1 for e in edits)
    assert apply(text, edits) == "fn f( a:f32 )->f32{a*2.0}\nfn g(b: f32) -> f32 {\n    b\n}\n"
    change(client, uri, 2, T.TextDocumentContentChangeWholeDocument(text="fn f( { \n"))
    await wait_diagnostics(client, uri, 2)
    n, m = len(client.log_messages), len(client.messages)
    edits = await client.text_document_formatting_async(
        T.DocumentFormattingParams(text_document=doc_id(uri), options=opts)
    )
    assert not edits
    await asyncio.sleep(0.05)
    # the person is told why (showMessage), at the first syntax error's line and column
    shown = [x for x in client.messages[m:] if "not formatting" in x.message]
    assert len(shown) == 1, client.messages[m:]
    assert shown[0].type == T.MessageType.Warning
    name = re.escape(uri.rsplit("/", 1)[-1])
    assert re.match(rf"kera: not formatting {name}: K0602 at 1:7: .*K0100", shown[0].message), shown
    assert any("not formatting" in x.message for x in client.log_messages[n:])


async def test_quick_fix_and_compile_actions(client: LanguageClient):
    uri = open_doc(client, BROKEN, "fix")
    diags = await wait_diagnostics(client, uri, 1)
    effect = next(d for d in diags if d.code == "K0501")
    actions = await client.text_document_code_action_async(
        T.CodeActionParams(
            text_document=doc_id(uri),
            range=effect.range,
            context=T.CodeActionContext(diagnostics=[effect]),
        )
    )
    fix = next(a for a in actions if a.kind == T.CodeActionKind.QuickFix)
    assert fix.title == "add `io` to the effects of `show`"
    if fix.edit.document_changes:
        (tde,) = fix.edit.document_changes
        assert tde.text_document.uri == uri and tde.text_document.version == 1
        (te,) = tde.edits
    else:
        (te,) = fix.edit.changes[uri]
    assert te.new_text == " ! io" and te.range.start == pos(BROKEN, " {\n    print")
    # only quick fixes when asked for them
    only = await client.text_document_code_action_async(
        T.CodeActionParams(
            text_document=doc_id(uri),
            range=effect.range,
            context=T.CodeActionContext(diagnostics=[], only=[T.CodeActionKind.QuickFix]),
        )
    )
    assert all(a.kind == T.CodeActionKind.QuickFix for a in only)


async def test_compile_to_target_command(client: LanguageClient):
    text = "/// Doubles.\npub fn twice(a: f32) -> f32 { a * 2.0 }\nfn bad() -> f32 { nope }\n"
    uri = open_doc(client, text, "compile")
    await wait_diagnostics(client, uri, 1)
    actions = await client.text_document_code_action_async(
        T.CodeActionParams(
            text_document=doc_id(uri),
            range=T.Range(start=pos(text, "twice"), end=pos(text, "twice")),
            context=T.CodeActionContext(diagnostics=[]),
        )
    )
    compile_ = [a for a in actions if a.command is not None]
    titles = [a.title for a in compile_]
    assert "Compile `twice` to keg" in titles  # every registered target that can compile it
    assert all(t.startswith("Compile `twice` to ") for t in titles)
    cmd = compile_[titles.index("Compile `twice` to keg")].command
    assert cmd.command == "kera.compileToTarget" and list(cmd.arguments) == [uri, "twice", "keg"]
    n = len(client.messages)
    result = await client.workspace_execute_command_async(
        T.ExecuteCommandParams(command=cmd.command, arguments=list(cmd.arguments))
    )
    path = Path(result["path"])
    assert path.parent == client.root / "out"  # type: ignore[attr-defined]
    assert path.read_bytes()[:4] == b"KEG\0"
    assert result["target"] == "keg" and result["fingerprint"].startswith("sha3-256:")
    fp = await client.protocol.send_request_async("kera/fingerprint", {"uri": uri})
    assert result["fingerprint"] == fp.fingerprint
    await asyncio.sleep(0.05)
    assert any("Compiled `twice` to keg" in m.message for m in client.messages[n:])
    # the function with errors offers no action and the command refuses it
    actions = await client.text_document_code_action_async(
        T.CodeActionParams(
            text_document=doc_id(uri),
            range=T.Range(start=pos(text, "bad"), end=pos(text, "bad")),
            context=T.CodeActionContext(diagnostics=[]),
        )
    )
    assert not [a for a in actions if a.command is not None]
    with pytest.raises(Exception, match="has errors"):
        await client.workspace_execute_command_async(
            T.ExecuteCommandParams(command="kera.compileToTarget", arguments=[uri, "bad", "keg"])
        )
    with pytest.raises(Exception, match="unknown target"):
        await client.workspace_execute_command_async(
            T.ExecuteCommandParams(command="kera.compileToTarget", arguments=[uri, "twice", "nope"])
        )
    # `kera.outputDir` pushed by the client takes effect
    client.workspace_did_change_configuration(
        T.DidChangeConfigurationParams(settings={"kera": {"outputDir": "elsewhere"}})
    )
    result = await client.workspace_execute_command_async(
        T.ExecuteCommandParams(command="kera.compileToTarget", arguments=[uri, "twice", "keg"])
    )
    assert Path(result["path"]).parent == client.root / "elsewhere"  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(
        T.DidChangeConfigurationParams(settings={"kera": {"outputDir": "out"}})
    )


async def test_rename(client: LanguageClient):
    text = (
        "struct P { x: f32 }\n"
        "pub fn area(p: P, k: f32) -> f32 {\n    let s = p.x * k;\n    s * s\n}\n"
        "pub fn use_it(q: P) -> f32 { area(q, 2.0) + exp(1.0) }\n"
    )
    uri = open_doc(client, text, "rename")
    await wait_diagnostics(client, uri, 1)

    async def rename(needle: str, new: str, delta: int = 0) -> list[T.TextEdit]:
        at = pos(text, needle, delta)
        prep = await client.text_document_prepare_rename_async(
            T.PrepareRenameParams(text_document=doc_id(uri), position=at)
        )
        assert prep is not None
        we = await client.text_document_rename_async(
            T.RenameParams(text_document=doc_id(uri), position=at, new_name=new)
        )
        if we.document_changes:
            return list(we.document_changes[0].edits)
        return list(we.changes[uri])

    edits = await rename("s = p", "sq")
    assert len(edits) == 3 and {e.new_text for e in edits} == {"sq"}
    edits = await rename("area(p", "surface")
    assert starts(edits) == starts_of(text, "area(p", "area(q")
    edits = await rename("x: f32", "width")
    assert starts(edits) == starts_of(text, "x: f32", "x * k")
    edits = await rename("P {", "Pt")
    assert len(edits) == 3
    edits = await rename("k: f32", "factor")
    assert len(edits) == 2
    for needle in ("fn area", "exp(1.0)", "f32 }"):
        with pytest.raises(Exception, match="keyword|builtin|primitive|cannot be renamed"):
            await client.text_document_prepare_rename_async(
                T.PrepareRenameParams(text_document=doc_id(uri), position=pos(text, needle))
            )
    with pytest.raises(Exception, match="keyword"):
        await client.text_document_rename_async(
            T.RenameParams(text_document=doc_id(uri), position=pos(text, "s = p"), new_name="while")
        )


async def test_close_clears_diagnostics(client: LanguageClient):
    uri = open_doc(client, BROKEN, "close")
    assert await wait_diagnostics(client, uri, 1)
    client.text_document_did_close(T.DidCloseTextDocumentParams(text_document=doc_id(uri)))
    loop = asyncio.get_running_loop()
    end = loop.time() + 5
    while loop.time() < end and client.diagnostics.get(uri):
        await asyncio.sleep(0.01)
    assert list(client.diagnostics.get(uri)) == []
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(uri), position=T.Position(line=0, character=3))
    )
    assert h is None
