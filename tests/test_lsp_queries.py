"""End-to-end: read-only queries (hover, navigation, outline, tokens, completion, signature
help, inlay hints, code lenses, lowering previews and fingerprints), for each client."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import pytest
import pytest_asyncio
from lsprotocol import types as T
from pytest_lsp import LanguageClient
from test_lsp_harness import (
    SAMPLE,
    client,  # noqa: F401  (the fixture)
    doc_id,
    open_doc,
    pos,
    wait_diagnostics,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sample(client: LanguageClient):  # noqa: F811
    uri = open_doc(client, SAMPLE, "sample")
    assert await wait_diagnostics(client, uri, 1) == []
    return uri


def _hover_text(h: T.Hover | None) -> str:
    assert h is not None
    assert isinstance(h.contents, T.MarkupContent)
    return h.contents.value


async def test_hover_types_spaces_and_docs(client: LanguageClient, sample: str):
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(sample), position=pos(SAMPLE, "d\n}"))
    )
    text = _hover_text(h)
    assert "let d: f32[N] @device" in text and "memory space: `@device`" in text
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(sample), position=pos(SAMPLE, "y[i] = a"))
    )
    assert "y: &mut f32[N]" in _hover_text(h)
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(sample), position=pos(SAMPLE, "Point {", 1))
    )
    assert "struct Point { x: f32, y: f32 }" in _hover_text(h)
    assert "A point in the plane." in _hover_text(h)
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(sample), position=pos(SAMPLE, "SCALE;"))
    )
    assert "const SCALE: f32 = 2.0" in _hover_text(h)
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(sample), position=pos(SAMPLE, "sqrt(t)"))
    )
    assert "fn sqrt" in _hover_text(h)
    # an expression: the type of the smallest expression under the cursor
    h = await client.text_document_hover_async(
        T.HoverParams(text_document=doc_id(sample), position=pos(SAMPLE, "* x[i]", 0))
    )
    assert "f32" in _hover_text(h)


async def test_hover_function_fingerprint_tracks_saves(client: LanguageClient):
    text = "/// Doubles.\npub fn twice(a: f32) -> f32 { a * 2.0 }\n"
    uri = open_doc(client, text, "fp")
    await wait_diagnostics(client, uri, 1)
    at = T.HoverParams(text_document=doc_id(uri), position=pos(text, "twice"))
    first = _hover_text(await client.text_document_hover_async(at))
    assert "pub fn twice(a: f32) -> f32" in first and "Doubles." in first
    assert "effects: none (pure)" in first
    assert "fingerprint at last save (v1): `sha3-256:" in first
    assert "buffer unchanged since save" in first
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                T.TextDocumentContentChangePartial(
                    range=T.Range(start=pos(text, "2.0"), end=pos(text, "2.0", 3)), text="3.0"
                )
            ],
        )
    )
    await wait_diagnostics(client, uri, 2)
    changed = _hover_text(await client.text_document_hover_async(at))
    assert "buffer changed since save" in changed and "fingerprint now:" in changed
    saved_fp = first.split("fingerprint at last save (v1): `")[1].split("`")[0]
    assert saved_fp in changed  # still the saved one
    client.text_document_did_save(T.DidSaveTextDocumentParams(text_document=doc_id(uri)))
    resaved = _hover_text(await client.text_document_hover_async(at))
    assert "fingerprint at last save (v2)" in resaved and saved_fp not in resaved
    assert "buffer unchanged since save" in resaved


async def test_definition_and_references(client: LanguageClient, sample: str):
    loc = await client.text_document_definition_async(
        T.DefinitionParams(text_document=doc_id(sample), position=pos(SAMPLE, "t = t + 1.0", 4))
    )
    assert isinstance(loc, T.Location) and loc.range.start == pos(SAMPLE, "t = s")
    refs = await client.text_document_references_async(
        T.ReferenceParams(
            text_document=doc_id(sample),
            position=pos(SAMPLE, "t = s"),
            context=T.ReferenceContext(include_declaration=True),
        )
    )
    assert len(refs) == 4  # declaration, assignment target, `t + 1.0`, `sqrt(t)`
    refs = await client.text_document_references_async(
        T.ReferenceParams(
            text_document=doc_id(sample),
            position=pos(SAMPLE, "x: f32,"),
            context=T.ReferenceContext(include_declaration=False),
        )
    )
    assert {r.range.start.line for r in refs} == {pos(SAMPLE, "p.x * p.x").line}
    assert len(refs) == 2
    loc = await client.text_document_definition_async(
        T.DefinitionParams(text_document=doc_id(sample), position=pos(SAMPLE, "SCALE;"))
    )
    assert loc.range.start == pos(SAMPLE, "SCALE: f32")


async def test_document_and_workspace_symbols(client: LanguageClient, sample: str):
    syms = await client.text_document_document_symbol_async(
        T.DocumentSymbolParams(text_document=doc_id(sample))
    )
    names = [s.name for s in syms]
    assert names == ["Point", "SCALE", "saxpy", "norm2", "upload"]
    point = syms[0]
    assert isinstance(point, T.DocumentSymbol) and point.kind == T.SymbolKind.Struct
    assert [c.name for c in point.children] == ["x", "y"]
    assert syms[2].kind == T.SymbolKind.Function and "saxpy[N]" in syms[2].detail
    found = await client.workspace_symbol_async(T.WorkspaceSymbolParams(query="nrm"))
    assert any(s.name == "norm2" for s in found)


async def test_semantic_tokens(client: LanguageClient, sample: str):
    toks = await client.text_document_semantic_tokens_full_async(
        T.SemanticTokensParams(text_document=doc_id(sample))
    )
    data = toks.data
    assert len(data) % 5 == 0 and len(data) > 100
    from kera_core.ide.tokens import TOKEN_MODIFIERS, TOKEN_TYPES

    line = col = 0
    decoded = {}
    lines = SAMPLE.split("\n")
    for i in range(0, len(data), 5):
        dl, dc, n, ty, mods = data[i : i + 5]
        line += dl
        col = col + dc if dl == 0 else dc
        word = lines[line][col : col + n]
        names = {m for b, m in enumerate(TOKEN_MODIFIERS) if mods >> b & 1}
        decoded.setdefault(word, set()).add((TOKEN_TYPES[ty], frozenset(names)))
    assert ("keyword", frozenset()) in decoded["fn"]
    assert ("function", frozenset({"declaration"})) in decoded["saxpy"]
    assert ("parameter", frozenset({"declaration", "mutable"})) in decoded["y"]
    assert ("variable", frozenset({"mutable"})) in decoded["t"]
    assert ("function", frozenset({"defaultLibrary"})) in decoded["sqrt"]
    assert ("struct", frozenset()) in decoded["Point"]
    assert ("property", frozenset()) in decoded["x"]
    assert ("type", frozenset({"defaultLibrary"})) in decoded["f32"]
    assert ("number", frozenset()) in decoded["2.0"]
    assert ("comment", frozenset({"documentation"})) in decoded["/// A point in the plane."]
    assert ("operator", frozenset()) in decoded["*"]
    assert ("variable", frozenset({"declaration", "readonly"})) in decoded["SCALE"]


async def test_folding_and_selection(client: LanguageClient, sample: str):
    folds = await client.text_document_folding_range_async(
        T.FoldingRangeParams(text_document=doc_id(sample))
    )
    starts = {f.start_line for f in folds}
    assert pos(SAMPLE, "pub fn saxpy").line in starts
    assert pos(SAMPLE, "for i in").line in starts
    sel = await client.text_document_selection_range_async(
        T.SelectionRangeParams(text_document=doc_id(sample), positions=[pos(SAMPLE, "a * x[i]")])
    )
    chain = []
    s = sel[0]
    while s is not None:
        chain.append(s.range)
        s = s.parent
    assert chain[0].start == pos(SAMPLE, "a * x[i]") and chain[0].end == pos(SAMPLE, "a * x[i]", 1)
    assert len(chain) >= 5
    assert chain[-1].start == T.Position(line=0, character=0)


async def test_inlay_hints(client: LanguageClient, sample: str):
    hints = await client.text_document_inlay_hint_async(
        T.InlayHintParams(
            text_document=doc_id(sample),
            range=T.Range(
                start=T.Position(line=0, character=0), end=T.Position(line=40, character=0)
            ),
        )
    )
    labels = {h.label for h in hints}
    assert ": f32[N] @device" in labels  # `let d = move_to(x, device)`
    assert ": f32" in labels
    assert all(h.kind == T.InlayHintKind.Type for h in hints)


async def test_completion_contexts(client: LanguageClient):
    text = SAMPLE + "\nfn probe(p: Point, k: f32) -> f32 {\n    let local = k;\n    \n}\n"
    uri = open_doc(client, text, "complete")
    await wait_diagnostics(client, uri, 1)
    at = pos(text, "    \n}", 4)
    res = await client.text_document_completion_async(
        T.CompletionParams(text_document=doc_id(uri), position=at)
    )
    labels = {i.label for i in res.items}
    assert {
        "local",
        "p",
        "k",
        "saxpy",
        "SCALE",
        "Point",
        "matmul",
        "softmax",
        "let",
        "while",
    } <= labels
    assert "x" not in labels  # saxpy's parameter is not in scope here
    # struct fields after `.`
    edit = T.TextDocumentContentChangePartial(range=T.Range(start=at, end=at), text="p.")
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[edit],
        )
    )
    after = T.Position(line=at.line, character=at.character + 2)
    res = await client.text_document_completion_async(
        T.CompletionParams(text_document=doc_id(uri), position=after)
    )
    assert {i.label for i in res.items} == {"x", "y"}
    # primitive types after `:`
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[
                T.TextDocumentContentChangePartial(
                    range=T.Range(start=at, end=after), text="let q: "
                )
            ],
        )
    )
    after = T.Position(line=at.line, character=at.character + 7)
    res = await client.text_document_completion_async(
        T.CompletionParams(text_document=doc_id(uri), position=after)
    )
    labels = {i.label for i in res.items}
    assert {"f32", "i64", "bool", "Point"} <= labels and "let" not in labels


async def test_signature_help(client: LanguageClient):
    text = (
        SAMPLE
        + "\nfn caller(x: &f32[4], y: &mut f32[4]) {\n    saxpy(2.0, x, y);\n    let m = maximum(1.0, 2.0);\n}\n"
    )
    uri = open_doc(client, text, "sig")
    await wait_diagnostics(client, uri, 1)
    sh = await client.text_document_signature_help_async(
        T.SignatureHelpParams(text_document=doc_id(uri), position=pos(text, "x, y);", 0))
    )
    sig = sh.signatures[0]
    assert sig.label.startswith("fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N])")
    assert sh.active_parameter == 1
    b, e = sig.parameters[1].label
    assert sig.label[b:e] == "x: &f32[N]"
    sh = await client.text_document_signature_help_async(
        T.SignatureHelpParams(text_document=doc_id(uri), position=pos(text, "2.0);"))
    )
    assert sh.signatures[0].label.startswith("fn maximum(") and sh.active_parameter == 1


async def test_code_lens_lowering_and_fingerprint(client: LanguageClient, sample: str):
    lenses = await client.text_document_code_lens_async(
        T.CodeLensParams(text_document=doc_id(sample))
    )
    # (the same-bits lenses, kera.showSameBits: tests/test_lsp_same_bits.py)
    lenses = [ln for ln in lenses if ln.command.command == "kera.showLowering"]
    # one lens per (function, target that can compile it); keg takes every function
    assert len({ln.command.arguments[1] for ln in lenses}) == 3
    assert sum(ln.command.arguments[2] == "keg" for ln in lenses) == 3
    lens = next(ln for ln in lenses if ln.command.arguments[2] == "keg")
    assert lens.command.command == "kera.showLowering"
    assert lens.command.title.startswith("fingerprint ") and lens.command.title.endswith("… · keg")
    uri, fn, target = lens.command.arguments
    assert (uri, fn, target) == (sample, "saxpy", "keg")
    low = await client.protocol.send_request_async(
        "kera/lowering", {"uri": sample, "function": "saxpy", "target": "keg"}
    )
    assert low.target == "keg" and low.function == "saxpy"
    assert "fn saxpy" in low.text and low.fingerprint.startswith("sha3-256:")
    assert lens.command.title.split()[1].rstrip("…") == low.fingerprint[9:17]
    fp = await client.protocol.send_request_async("kera/fingerprint", {"uri": sample})
    assert fp.fingerprint.startswith("sha3-256:") and len(fp.fingerprint) == 9 + 64
    assert sorted(f.name for f in fp.functions) == ["norm2", "saxpy", "upload"]
    assert fp.savedVersion == 1 and fp.changedSinceSave is False
    shown = await client.workspace_execute_command_async(
        T.ExecuteCommandParams(command="kera.showLowering", arguments=[sample, "saxpy", "keg"])
    )
    assert shown["text"] == low.text
