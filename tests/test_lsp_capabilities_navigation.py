"""End-to-end: document highlights (read/write), declaration, type definition and the call
hierarchy, for each client — exact ranges and kinds, and bad input answered, not crashed."""

# The `client` fixture is imported from test_lsp_harness and taken as a parameter.
# ruff: noqa: F811

from __future__ import annotations

import attrs
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

CALLER = """
fn caller(x: &f32[4], y: &mut f32[4], p: Point) -> f32 {
    saxpy(2.0, x, &mut y);
    let q = p;
    let n = norm2(q);
    n + norm2(p)
}
"""
TEXT = SAMPLE + CALLER
FAR = T.Position(line=999, character=999)


def rng(needle: str, length: int, delta: int = 0, text: str = TEXT) -> T.Range:
    start = pos(text, needle, delta)
    end = T.Position(line=start.line, character=start.character + length)
    return T.Range(start=start, end=end)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def doc(client: LanguageClient):
    uri = open_doc(client, TEXT, "nav")
    assert await wait_diagnostics(client, uri, 1) == []
    return uri


async def _highlights(client, uri, at):
    res = await client.text_document_document_highlight_async(
        T.DocumentHighlightParams(text_document=doc_id(uri), position=at)
    )
    return [(h.range, h.kind) for h in res or []]  # a list, whatever the client decoded


async def test_highlight_local_reads_and_writes(client: LanguageClient, doc: str):
    R, W = T.DocumentHighlightKind.Read, T.DocumentHighlightKind.Write
    got = await _highlights(client, doc, pos(TEXT, "t + 1.0"))
    assert got == [
        (rng("t = s * SCALE", 1), W),  # `let mut t = …`
        (rng("t = t + 1.0", 1), W),  # `t = …`
        (rng("t + 1.0", 1), R),
        (rng("t)\n}", 1), R),  # `sqrt(t)`
    ]
    # an element write through a `&mut` parameter is a write of it
    got = await _highlights(client, doc, pos(TEXT, "y[i] = a"))
    assert got == [
        (rng("y: &mut f32[N]", 1), W),
        (rng("y[i] = a", 1), W),
        (rng("y[i];", 1), R),
    ]


async def test_highlight_items_are_text(client: LanguageClient, doc: str):
    X = T.DocumentHighlightKind.Text
    got = await _highlights(client, doc, pos(TEXT, "norm2(q)"))
    assert got == [
        (rng("norm2(p: Point)", 5), X),
        (rng("norm2(q)", 5), X),
        (rng("norm2(p)\n", 5), X),
    ]
    got = await _highlights(client, doc, pos(TEXT, "Point {", 1))
    assert [h[0] for h in got] == [
        rng("Point {", 5),
        rng("Point) -> f32", 5),
        rng("Point) -> f32 {\n    saxpy", 5),
    ]
    assert {h[1] for h in got} == {X}


async def test_highlight_field_reads(client: LanguageClient, doc: str):
    got = await _highlights(client, doc, pos(TEXT, "x * p.x", 0))
    assert got[0] == (rng("x: f32, y", 1), T.DocumentHighlightKind.Text)
    assert [k for _, k in got[1:]] == [T.DocumentHighlightKind.Read] * 2


async def test_highlight_nothing_and_bad_input(client: LanguageClient, doc: str):
    assert await _highlights(client, doc, pos(TEXT, "fn norm2")) == []  # a keyword
    assert await _highlights(client, doc, FAR) == []
    assert await _highlights(client, "file:///not/open.kera", T.Position(line=0, character=0)) == []


async def test_declaration_is_the_definition(client: LanguageClient, doc: str):
    loc = await client.text_document_declaration_async(
        T.DeclarationParams(text_document=doc_id(doc), position=pos(TEXT, "norm2(q)"))
    )
    assert isinstance(loc, T.Location) and loc.uri == doc
    assert loc.range == rng("norm2(p: Point)", 5)
    loc = await client.text_document_declaration_async(
        T.DeclarationParams(text_document=doc_id(doc), position=pos(TEXT, "q);"))
    )
    assert loc.range == rng("q = p", 1)
    for at, uri in ((FAR, doc), (pos(TEXT, "fn caller"), doc), (FAR, "file:///nope.kera")):
        res = await client.text_document_declaration_async(
            T.DeclarationParams(text_document=doc_id(uri), position=at)
        )
        assert res is None


async def _type_def(client, uri, at):
    return await client.text_document_type_definition_async(
        T.TypeDefinitionParams(text_document=doc_id(uri), position=at)
    )


async def test_type_definition_of_struct_values(client: LanguageClient, doc: str):
    point = rng("Point {", 5)
    for needle, delta in (
        ("q = p", 0),  # a `let` inferred from a parameter
        ("q);", 0),  # a use of it
        ("p: Point) -> f32 {\n    saxpy", 0),  # a parameter at its definition
        ("p.x *", 0),  # a parameter's use
        ("p)\n}", 0),  # an argument
    ):
        loc = await _type_def(client, doc, pos(TEXT, needle, delta))
        assert isinstance(loc, T.Location), needle
        assert (loc.uri, loc.range) == (doc, point), needle


async def test_type_definition_none_for_other_types(client: LanguageClient, doc: str):
    for needle in ("n + norm2", "s * SCALE", "a * x[i]", "SCALE;"):
        assert await _type_def(client, doc, pos(TEXT, needle)) is None, needle
    assert await _type_def(client, doc, FAR) is None
    assert await _type_def(client, "file:///nope.kera", T.Position(line=0, character=0)) is None


async def _prepare(client, uri, at):
    return await client.text_document_prepare_call_hierarchy_async(
        T.CallHierarchyPrepareParams(text_document=doc_id(uri), position=at)
    )


async def test_call_hierarchy(client: LanguageClient, doc: str):
    items = await _prepare(client, doc, pos(TEXT, "norm2(q)"))
    assert items is not None and len(items) == 1
    norm2 = items[0]
    assert norm2.name == "norm2" and norm2.kind == T.SymbolKind.Function and norm2.uri == doc
    assert norm2.selection_range == rng("norm2(p: Point)", 5)
    assert norm2.range.start == pos(TEXT, "pub fn norm2")
    assert norm2.detail == "pub fn norm2(p: Point) -> f32"

    incoming = await client.call_hierarchy_incoming_calls_async(
        T.CallHierarchyIncomingCallsParams(item=norm2)
    )
    assert [c.from_.name for c in incoming] == ["caller"]
    assert incoming[0].from_.selection_range == rng("caller(", 6)
    assert list(incoming[0].from_ranges) == [rng("norm2(q)", 5), rng("norm2(p)\n", 5)]

    caller = (await _prepare(client, doc, pos(TEXT, "caller(")))[0]
    outgoing = await client.call_hierarchy_outgoing_calls_async(
        T.CallHierarchyOutgoingCallsParams(item=caller)
    )
    assert [(c.to.name, list(c.from_ranges)) for c in outgoing] == [
        ("saxpy", [rng("saxpy(2.0", 5)]),
        ("norm2", [rng("norm2(q)", 5), rng("norm2(p)\n", 5)]),
    ]
    assert outgoing[0].to.selection_range == rng("saxpy[N]", 5)
    # builtins (`sqrt`) are not functions of the file; nobody calls `caller`
    out = await client.call_hierarchy_outgoing_calls_async(
        T.CallHierarchyOutgoingCallsParams(item=norm2)
    )
    assert list(out) == []
    inc = await client.call_hierarchy_incoming_calls_async(
        T.CallHierarchyIncomingCallsParams(item=caller)
    )
    assert list(inc) == []


async def test_call_hierarchy_bad_input(client: LanguageClient, doc: str):
    assert await _prepare(client, doc, pos(TEXT, "let q")) is None  # not a function
    assert await _prepare(client, doc, FAR) is None
    assert await _prepare(client, "file:///nope.kera", T.Position(line=0, character=0)) is None
    ghost = T.CallHierarchyItem(
        name="ghost",
        kind=T.SymbolKind.Function,
        uri="file:///nope.kera",
        range=T.Range(start=T.Position(line=0, character=0), end=T.Position(line=0, character=1)),
        selection_range=T.Range(
            start=T.Position(line=0, character=0), end=T.Position(line=0, character=1)
        ),
    )
    for item in (ghost, attrs.evolve(ghost, uri=doc)):
        inc = await client.call_hierarchy_incoming_calls_async(
            T.CallHierarchyIncomingCallsParams(item=item)
        )
        out = await client.call_hierarchy_outgoing_calls_async(
            T.CallHierarchyOutgoingCallsParams(item=item)
        )
        assert list(inc) == [] and list(out) == []
