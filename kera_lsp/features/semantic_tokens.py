"""Semantic tokens (full document)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import tokens
from kera_lsp.server import KeraLanguageServer, handler

LEGEND = T.SemanticTokensLegend(
    token_types=tokens.TOKEN_TYPES, token_modifiers=tokens.TOKEN_MODIFIERS
)


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @handler
    async def semantic_tokens_full(ls: KeraLanguageServer, params: T.SemanticTokensParams):
        enc = ls.encoding

        def fn(doc, a):
            return T.SemanticTokens(data=tokens.semantic_tokens(a, enc))

        return await ls.query(params.text_document.uri, fn, default=T.SemanticTokens(data=[]))
