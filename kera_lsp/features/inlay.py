"""Inlay hints: inferred `let` types (with the memory space of non-host tensors)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import inlay as ide
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_INLAY_HINT)
    @handler
    async def inlay_hint(ls: KeraLanguageServer, params: T.InlayHintParams):
        enc = ls.encoding

        def fn(doc, a):
            idx = a.line_index
            span = convert.span_of(idx, params.range, enc)
            return [
                T.InlayHint(
                    position=convert.position(idx, h.offset, enc),
                    label=h.label,
                    kind=T.InlayHintKind.Type,
                )
                for h in ide.inlay_hints(a, span)
            ]

        return await ls.query(params.text_document.uri, fn, default=[])
