"""Hover."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import hover as ide
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_HOVER)
    @handler
    async def hover(ls: KeraLanguageServer, params: T.HoverParams):
        enc = ls.encoding

        def fn(doc, a):
            idx = a.line_index
            h = ide.hover(a, convert.offset_of(idx, params.position, enc), doc)
            if h is None:
                return None
            return T.Hover(
                contents=T.MarkupContent(kind=T.MarkupKind.Markdown, value=h.markdown),
                range=convert.range_of(idx, h.span, enc),
            )

        return await ls.query(params.text_document.uri, fn)
