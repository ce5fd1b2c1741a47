"""Go to declaration (Kera declares where it defines: the definition) and go to type
definition (from a value of a struct type to the struct)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import navigation
from kera_core.ide import type_definition as ide
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler


def setup(server: KeraLanguageServer) -> None:
    def location(ls: KeraLanguageServer, uri: str, params, query):
        enc = ls.encoding

        def fn(doc, a):
            idx = a.line_index
            span = query(a, convert.offset_of(idx, params.position, enc))
            if span is None:
                return None
            return T.Location(uri=uri, range=convert.range_of(idx, span, enc))

        return ls.query(uri, fn)

    @server.feature(T.TEXT_DOCUMENT_DECLARATION)
    @handler
    async def declaration(ls: KeraLanguageServer, params: T.DeclarationParams):
        uri = params.text_document.uri
        return await location(ls, uri, params, navigation.definition)

    @server.feature(T.TEXT_DOCUMENT_TYPE_DEFINITION)
    @handler
    async def type_definition(ls: KeraLanguageServer, params: T.TypeDefinitionParams):
        uri = params.text_document.uri
        return await location(ls, uri, params, ide.type_definition)
