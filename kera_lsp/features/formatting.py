"""Document and range formatting through the core formatter (which may refuse)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.fmt import format_range, format_text
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler


def _edits(ls: KeraLanguageServer, uri: str, res, index, enc) -> list[T.TextEdit]:
    if res.diagnostics:
        # A refusal answers no edits, and says why where the person sees it: however the
        # editor asked (a command, format-on-save, a plugin), it shows window/showMessage.
        d = res.diagnostics[0]
        at = convert.position(index, d.span.start, enc)
        name = uri.rsplit("/", 1)[-1]
        ls.show_message(
            f"kera: not formatting {name}: {d.code} at {at.line + 1}:{at.character + 1}: {d.message}"
        )
        return []
    return [convert.text_edit(index, e.span, e.new_text, enc) for e in res.edits]


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_FORMATTING)
    @handler
    async def formatting(ls: KeraLanguageServer, params: T.DocumentFormattingParams):
        uri = params.text_document.uri
        enc = ls.encoding

        def job():
            doc = ls.kera.get(uri)
            if doc is None:
                return None
            return format_text(doc.text), doc.line_index

        got = await ls.run(job)
        return None if got is None else _edits(ls, uri, got[0], got[1], enc)

    @server.feature(T.TEXT_DOCUMENT_RANGE_FORMATTING)
    @handler
    async def range_formatting(ls: KeraLanguageServer, params: T.DocumentRangeFormattingParams):
        uri = params.text_document.uri
        enc = ls.encoding

        def job():
            doc = ls.kera.get(uri)
            if doc is None:
                return None
            index = doc.line_index
            return format_range(doc.text, convert.span_of(index, params.range, enc)), index

        got = await ls.run(job)
        return None if got is None else _edits(ls, uri, got[0], got[1], enc)
