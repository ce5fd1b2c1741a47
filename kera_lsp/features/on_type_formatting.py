"""On-type formatting: typing `}` formats the statement or item that the brace closes,
typing `;` the statement it ends, through the core range formatter (``kera_core.fmt``),
which keeps the meaning (its safety net refuses otherwise) and is idempotent. While the
code around the cursor does not parse — as it often does mid-typing — nothing is changed,
and no message is shown (unlike an explicit format request)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.fmt import format_range
from kera_core.source import Span
from kera_core.syntax.kinds import SyntaxKind as K
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler

TRIGGERS = {"}": K.R_BRACE, ";": K.SEMI}


def setup(server: KeraLanguageServer) -> None:
    @server.feature(
        T.TEXT_DOCUMENT_ON_TYPE_FORMATTING,
        T.DocumentOnTypeFormattingOptions(
            first_trigger_character="}", more_trigger_character=[";"]
        ),
    )
    @handler
    async def on_type_formatting(ls: KeraLanguageServer, params: T.DocumentOnTypeFormattingParams):
        uri, enc = params.text_document.uri, ls.encoding
        kind = TRIGGERS.get(params.ch)

        def job():
            doc = ls.kera.get(uri)
            if doc is None:
                return None
            if kind is None or doc.parse is None:
                return []
            idx = doc.line_index
            offset = convert.offset_of(idx, params.position, enc)
            if offset == 0:
                return []
            tok = doc.parse.tree.token_at_offset(offset - 1)  # the character just typed
            if tok is None or tok.kind != kind or tok.span.end != offset:
                return []  # inside a comment or string, or the position is elsewhere
            res = format_range(doc.text, Span(tok.span.start, tok.span.end))
            if res.diagnostics:
                return []
            return [convert.text_edit(idx, e.span, e.new_text, enc) for e in res.edits]

        return await ls.run(job)
