"""End-to-end: semantic token deltas and ranges, parameter-name inlay hints with resolve,
completion resolve and snippets, and on-type formatting, for each client."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import pytest
from lsprotocol import types as T
from pytest_lsp import LanguageClient
from test_lsp_capabilities_navigation import TEXT
from test_lsp_harness import (
    SAMPLE,
    client,  # noqa: F401  (the fixture)
    doc_id,
    open_doc,
    pos,
    wait_diagnostics,
)

from kera_core.fmt import format_text

pytestmark = pytest.mark.asyncio(loop_scope="module")
WHOLE = T.Range(start=T.Position(line=0, character=0), end=T.Position(line=999, character=0))


def _absolute(data) -> list[tuple[int, int, int, int, int]]:
    out, line, col = [], 0, 0
    data = list(data)
    for i in range(0, len(data), 5):
        dl, dc, n, t, m = data[i : i + 5]
        line += dl
        col = col + dc if dl == 0 else dc
        out.append((line, col, n, t, m))
    return out


def _change(client, uri, version, text, start, end=None):
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                T.TextDocumentContentChangePartial(
                    range=T.Range(start=start, end=end or start), text=text
                )
            ],
        )
    )


def _offset(text: str, p: T.Position) -> int:  # ASCII text: any encoding
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: p.line]) + p.character


def _apply(text: str, edits) -> str:
    for e in sorted(edits, key=lambda e: _offset(text, e.range.start), reverse=True):
        text = (
            text[: _offset(text, e.range.start)] + e.new_text + text[_offset(text, e.range.end) :]
        )
    return text


# --- semantic tokens ------------------------------------------------------------------------


async def test_semantic_tokens_delta(client: LanguageClient):
    uri = open_doc(client, SAMPLE, "delta")
    await wait_diagnostics(client, uri, 1)
    full = await client.text_document_semantic_tokens_full_async(
        T.SemanticTokensParams(text_document=doc_id(uri))
    )
    assert full.result_id and full.data
    same = await client.text_document_semantic_tokens_full_delta_async(
        T.SemanticTokensDeltaParams(text_document=doc_id(uri), previous_result_id=full.result_id)
    )
    assert isinstance(same, T.SemanticTokensDelta) and list(same.edits) == []
    assert same.result_id == full.result_id
    # add a statement in `norm2`: one edit, and applying it gives the fresh full result
    at = pos(SAMPLE, "    sqrt(t)")
    _change(client, uri, 2, "    let z = t;\n", at)
    delta = await client.text_document_semantic_tokens_full_delta_async(
        T.SemanticTokensDeltaParams(text_document=doc_id(uri), previous_result_id=full.result_id)
    )
    assert isinstance(delta, T.SemanticTokensDelta) and delta.result_id != full.result_id
    assert len(delta.edits) == 1
    e = delta.edits[0]
    assert e.start % 5 == 0 and e.delete_count % 5 == 0
    assert 0 < len(e.data or []) < len(full.data)  # only the tokens around the edit
    data = list(full.data)
    data[e.start : e.start + e.delete_count] = list(e.data or [])
    fresh = await client.text_document_semantic_tokens_full_async(
        T.SemanticTokensParams(text_document=doc_id(uri))
    )
    assert data == list(fresh.data)
    # an unknown previous id is answered with the full tokens
    res = await client.text_document_semantic_tokens_full_delta_async(
        T.SemanticTokensDeltaParams(text_document=doc_id(uri), previous_result_id="bogus")
    )
    assert isinstance(res, T.SemanticTokens) and list(res.data) == list(fresh.data)
    res = await client.text_document_semantic_tokens_full_delta_async(
        T.SemanticTokensDeltaParams(
            text_document=doc_id("file:///not/open.kera"), previous_result_id="1"
        )
    )
    assert isinstance(res, T.SemanticTokens) and list(res.data) == []


async def test_semantic_tokens_range(client: LanguageClient):
    uri = open_doc(client, SAMPLE, "strange")
    await wait_diagnostics(client, uri, 1)
    full = await client.text_document_semantic_tokens_full_async(
        T.SemanticTokensParams(text_document=doc_id(uri))
    )
    first, last = pos(SAMPLE, "pub fn norm2").line, pos(SAMPLE, "sqrt(t)").line
    rng = T.Range(
        start=T.Position(line=first, character=0), end=T.Position(line=last + 1, character=0)
    )
    res = await client.text_document_semantic_tokens_range_async(
        T.SemanticTokensRangeParams(text_document=doc_id(uri), range=rng)
    )
    expected = [t for t in _absolute(full.data) if first <= t[0] <= last]
    assert _absolute(res.data) == expected and expected
    # a point range: the token under it; past the end and unknown documents: nothing
    p = pos(SAMPLE, "norm2(")
    res = await client.text_document_semantic_tokens_range_async(
        T.SemanticTokensRangeParams(text_document=doc_id(uri), range=T.Range(start=p, end=p))
    )
    assert [(t[0], t[1], t[2]) for t in _absolute(res.data)] == [(p.line, p.character, 5)]
    far = T.Position(line=500, character=0)
    for u, r in ((uri, T.Range(start=far, end=far)), ("file:///nope.kera", WHOLE)):
        res = await client.text_document_semantic_tokens_range_async(
            T.SemanticTokensRangeParams(text_document=doc_id(u), range=r)
        )
        assert list(res.data) == []


# --- inlay hints ------------------------------------------------------------------------------


async def test_parameter_hints_and_resolve(client: LanguageClient):
    uri = open_doc(client, TEXT, "hints")
    assert await wait_diagnostics(client, uri, 1) == []
    hints = await client.text_document_inlay_hint_async(
        T.InlayHintParams(text_document=doc_id(uri), range=WHOLE)
    )
    params = [h for h in hints if h.kind == T.InlayHintKind.Parameter]
    # `saxpy(2.0, x, &mut y)`: only `a:` (x and &mut y are named like their parameters);
    # `norm2(q)` gets `p:`, `norm2(p)` none; builtins (`sqrt(t)`, `move_to`) none
    assert [(h.label, h.position) for h in params] == [
        ("a:", pos(TEXT, "2.0, x")),
        ("p:", pos(TEXT, "q);")),
    ]
    assert all(h.padding_right for h in params)
    types_ = [h for h in hints if h.kind == T.InlayHintKind.Type]
    assert {h.label for h in types_} >= {": f32[N] @device", ": Point"}
    lazy = client.client_name == "neovim"  # type: ignore[attr-defined]
    for h in hints:
        assert (h.tooltip is None) == lazy
    resolved = await client.inlay_hint_resolve_async(params[0])
    assert "parameter `a: f32` of" in resolved.tooltip.value
    assert "pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N])" in resolved.tooltip.value
    device = next(h for h in types_ if h.label == ": f32[N] @device")
    tip = (await client.inlay_hint_resolve_async(device)).tooltip.value
    assert "`d` has the inferred type" in tip
    assert "shape `[N]` (rank 1), memory space `@device`" in tip
    # a hint from an older version (or of a closed document) resolves to itself
    stale = T.InlayHint(
        position=params[0].position, label="a:", data={**params[0].data, "version": 0}
    )
    assert (await client.inlay_hint_resolve_async(stale)).tooltip is None
    gone = T.InlayHint(
        position=params[0].position, label="a:", data={**params[0].data, "uri": "file:///x"}
    )
    assert (await client.inlay_hint_resolve_async(gone)).tooltip is None
    junk = T.InlayHint(position=params[0].position, label="a:", data=[1, 2])
    assert (await client.inlay_hint_resolve_async(junk)).tooltip is None


async def test_parameter_hints_respect_the_range(client: LanguageClient):
    uri = open_doc(client, TEXT, "hintrange")
    await wait_diagnostics(client, uri, 1)
    line = pos(TEXT, "norm2(q)").line
    rng = T.Range(start=T.Position(line=line, character=0), end=T.Position(line=line, character=99))
    hints = await client.text_document_inlay_hint_async(
        T.InlayHintParams(text_document=doc_id(uri), range=rng)
    )
    assert [(h.label, h.kind) for h in hints] == [
        (": f32", T.InlayHintKind.Type),
        ("p:", T.InlayHintKind.Parameter),
    ]
    none = await client.text_document_inlay_hint_async(
        T.InlayHintParams(text_document=doc_id("file:///nope.kera"), range=WHOLE)
    )
    assert list(none or []) == []


# --- completion -------------------------------------------------------------------------------


async def _complete(client, uri, at):
    res = await client.text_document_completion_async(
        T.CompletionParams(text_document=doc_id(uri), position=at)
    )
    return {i.label: i for i in res.items}


async def test_completion_resolve(client: LanguageClient):
    text = SAMPLE + "\nfn probe(k: f32) -> f32 {\n    \n}\n"
    uri = open_doc(client, text, "cresolve")
    await wait_diagnostics(client, uri, 1)
    items = await _complete(client, uri, pos(text, "    \n}", 4))
    saxpy, sqrt, k = items["saxpy"], items["sqrt"], items["k"]
    assert k.detail == "f32"  # scope-dependent details stay in the list
    if client.client_name == "visual-studio-code":  # type: ignore[attr-defined]
        # resolveSupport has documentation and detail: both left to resolve
        assert saxpy.documentation is None and saxpy.detail is None
        assert saxpy.data == {"uri": uri, "kind": "function", "label": "saxpy"}
    else:  # Neovim resolves neither: they come with the list
        assert saxpy.data is None
        assert saxpy.detail == "pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N])"
    res = await client.completion_item_resolve_async(saxpy)
    assert res.detail == "pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N])"
    doc = (
        res.documentation.value
        if isinstance(res.documentation, T.MarkupContent)
        else res.documentation
    )
    assert doc == "y <- a*x + y"
    res = await client.completion_item_resolve_async(sqrt)
    assert res.detail.startswith("fn sqrt(")
    assert "square root" in (
        res.documentation.value
        if isinstance(res.documentation, T.MarkupContent)
        else res.documentation
    )
    # items the server does not know resolve to themselves
    for data in (None, {"uri": "file:///nope.kera", "kind": "function", "label": "saxpy"}, [3]):
        item = T.CompletionItem(label="saxpy", data=data)
        assert (await client.completion_item_resolve_async(item)).documentation is None


async def test_keyword_snippets(client: LanguageClient):
    text = SAMPLE + "\nfn probe(k: f32) {\n    \n}\n"
    uri = open_doc(client, text, "snip")
    await wait_diagnostics(client, uri, 1)
    items = await _complete(client, uri, pos(text, "    \n}", 4))
    for kw, snippet in (
        ("for", "for ${1:i} in ${2:0}..${3:n} {\n    $0\n}"),
        ("if", "if ${1:condition} {\n    $0\n}"),
        ("while", "while ${1:condition} {\n    $0\n}"),
    ):
        item = items[kw]
        assert item.insert_text == snippet and item.kind == T.CompletionItemKind.Snippet
        assert item.insert_text_format == T.InsertTextFormat.Snippet
    assert items["let"].insert_text is None  # other keywords stay plain
    top = await _complete(client, uri, T.Position(line=pos(text, "fn probe").line - 1, character=0))
    assert top["fn"].insert_text == "fn ${1:name}(${2}) {\n    $0\n}"
    assert top["struct"].insert_text == "struct ${1:Name} { ${2:field}: ${3:f32} }"
    assert top["pub"].insert_text is None


# --- on-type formatting -----------------------------------------------------------------------


async def _on_type(client, uri, at, ch):
    return await client.text_document_on_type_formatting_async(
        T.DocumentOnTypeFormattingParams(
            text_document=doc_id(uri),
            position=at,
            ch=ch,
            options=T.FormattingOptions(tab_size=4, insert_spaces=True),
        )
    )


async def test_on_type_formatting_semicolon_and_brace(client: LanguageClient):
    text = "fn f(a: f32) -> f32 {\n    let b   =  a*2.0;\n    b\n}\n"
    text += "fn g(a: f32) -> f32 {\n  let c=a +1.0;\n      if c>2.0 { c } else { a }\n}\n"
    uri = open_doc(client, text, "ontype")
    await wait_diagnostics(client, uri, 1)
    # `;`: only the statement it ends
    edits = await _on_type(client, uri, pos(text, ";", 1), ";")
    once = _apply(text, edits)
    assert once == text.replace("let b   =  a*2.0;", "let b = a * 2.0;")
    # `}` closing `g`: the whole item
    end_g = T.Position(line=text.count("\n") - 1, character=1)
    edits = await _on_type(client, uri, end_g, "}")
    twice = _apply(text, edits)
    assert twice.split("fn g")[1] == (
        "(a: f32) -> f32 {\n    let c = a + 1.0;\n    if c > 2.0 {\n        c\n    } else {\n"
        "        a\n    }\n}\n"
    )
    assert twice.split("fn g")[0] == text.split("fn g")[0]
    # idempotent: once formatted, the same keys change nothing
    formatted = _apply(twice, await _on_type(client, uri, pos(text, ";", 1), ";"))
    # the same program: formatting the whole file gives the same text from either
    assert format_text(formatted).text == format_text(text).text
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=formatted)],
        )
    )
    assert list(await _on_type(client, uri, pos(formatted, ";", 1), ";")) == []
    last = T.Position(line=formatted.count("\n") - 1, character=1)
    assert list(await _on_type(client, uri, last, "}")) == []


async def test_on_type_formatting_refusals(client: LanguageClient):
    text = 'fn f(a: f32) -> f32 {\n    let b   =  a*2.0; // x;\n    let s = "a;";\n    b\n}\n'
    uri = open_doc(client, text, "ontypebad")
    await wait_diagnostics(client, uri, 1)
    # a `;` inside a comment or a string, another character, a position past the end
    assert list(await _on_type(client, uri, pos(text, "x;", 2), ";")) == []
    assert list(await _on_type(client, uri, pos(text, 'a;"', 2), ";")) == []
    assert list(await _on_type(client, uri, pos(text, ";", 1), "x")) == []
    assert list(await _on_type(client, uri, T.Position(line=99, character=0), "}")) == []
    assert await _on_type(client, "file:///nope.kera", T.Position(line=0, character=0), ";") is None
    # a syntax error around the cursor: nothing changes, and no message is shown
    broken = "fn f(a: f32) -> f32 {\n    let b = (a*2.0;\n    b\n}\n"
    uri2 = open_doc(client, broken, "ontypebroken")
    await wait_diagnostics(client, uri2, 1)
    shown = len(client.messages)
    assert list(await _on_type(client, uri2, pos(broken, ";", 1), ";")) == []
    assert len(client.messages) == shown
