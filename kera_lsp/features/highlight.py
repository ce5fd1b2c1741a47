"""Document highlights: occurrences of the symbol under the cursor, read vs write."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import highlight as ide
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler

KINDS = {
    ide.READ: T.DocumentHighlightKind.Read,
    ide.WRITE: T.DocumentHighlightKind.Write,
    ide.TEXT: T.DocumentHighlightKind.Text,
}


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
    @handler
    async def document_highlight(ls: KeraLanguageServer, params: T.DocumentHighlightParams):
        enc = ls.encoding

        def fn(doc, a):
            idx = a.line_index
            return [
                T.DocumentHighlight(range=convert.range_of(idx, h.span, enc), kind=KINDS[h.kind])
                for h in ide.document_highlights(a, convert.offset_of(idx, params.position, enc))
            ]

        return await ls.query(params.text_document.uri, fn, default=[])
