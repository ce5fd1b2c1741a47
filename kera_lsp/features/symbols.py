"""Document symbols, folding ranges and selection ranges (workspace symbols: workspace.py)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import outline
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler

KINDS = {
    "function": T.SymbolKind.Function,
    "struct": T.SymbolKind.Struct,
    "field": T.SymbolKind.Field,
    "const": T.SymbolKind.Constant,
}


def _doc_symbol(s: outline.OutlineSymbol, idx, enc) -> T.DocumentSymbol:
    return T.DocumentSymbol(
        name=s.name,
        kind=KINDS[s.kind],
        range=convert.range_of(idx, s.span, enc),
        selection_range=convert.range_of(idx, s.name_span, enc),
        detail=s.detail or None,
        children=[_doc_symbol(c, idx, enc) for c in s.children] or None,
    )


def _flat(syms, uri, idx, enc, container=None) -> list[T.SymbolInformation]:
    out = []
    for s in syms:
        out.append(
            T.SymbolInformation(
                name=s.name,
                kind=KINDS[s.kind],
                location=T.Location(uri=uri, range=convert.range_of(idx, s.span, enc)),
                container_name=container,
            )
        )
        out += _flat(s.children, uri, idx, enc, s.name)
    return out


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @handler
    async def document_symbol(ls: KeraLanguageServer, params: T.DocumentSymbolParams):
        uri, enc = params.text_document.uri, ls.encoding
        caps = ls.client_capabilities
        hierarchical = bool(
            caps
            and caps.text_document
            and caps.text_document.document_symbol
            and caps.text_document.document_symbol.hierarchical_document_symbol_support
        )

        def fn(doc, a):
            idx = a.line_index
            syms = outline.document_symbols(a)
            if hierarchical:
                return [_doc_symbol(s, idx, enc) for s in syms]
            return _flat(syms, uri, idx, enc)

        return await ls.query(uri, fn, default=[])

    @server.feature(T.TEXT_DOCUMENT_FOLDING_RANGE)
    @handler
    async def folding_range(ls: KeraLanguageServer, params: T.FoldingRangeParams):
        def fn(doc, a):
            return [
                T.FoldingRange(
                    start_line=f.start_line,
                    end_line=f.end_line,
                    kind=T.FoldingRangeKind.Comment
                    if f.kind == "comment"
                    else T.FoldingRangeKind.Region,
                )
                for f in outline.folding_ranges(a)
            ]

        return await ls.query(params.text_document.uri, fn, default=[], syntax_only=True)

    @server.feature(T.TEXT_DOCUMENT_SELECTION_RANGE)
    @handler
    async def selection_range(ls: KeraLanguageServer, params: T.SelectionRangeParams):
        enc = ls.encoding

        def fn(doc, a):
            idx = a.line_index
            out = []
            for pos in params.positions:
                chain = outline.selection_chain(a, convert.offset_of(idx, pos, enc))
                sel = None
                for span in reversed(chain):
                    sel = T.SelectionRange(range=convert.range_of(idx, span, enc), parent=sel)
                out.append(sel)
            return out

        return await ls.query(params.text_document.uri, fn, default=[], syntax_only=True)
