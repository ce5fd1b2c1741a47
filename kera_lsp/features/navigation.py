"""Go to definition, references, rename (with prepareRename)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import navigation as ide
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, RequestFailed, handler


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_DEFINITION)
    @handler
    async def definition(ls: KeraLanguageServer, params: T.DefinitionParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            idx = a.line_index
            span = ide.definition(a, convert.offset_of(idx, params.position, enc))
            return (
                None
                if span is None
                else T.Location(uri=uri, range=convert.range_of(idx, span, enc))
            )

        return await ls.query(uri, fn)

    @server.feature(T.TEXT_DOCUMENT_REFERENCES)
    @handler
    async def references(ls: KeraLanguageServer, params: T.ReferenceParams):
        uri, enc = params.text_document.uri, ls.encoding
        include = params.context.include_declaration if params.context else True

        def fn(doc, a):
            idx = a.line_index
            spans = ide.references(a, convert.offset_of(idx, params.position, enc), include)
            return [T.Location(uri=uri, range=convert.range_of(idx, s, enc)) for s in spans]

        return await ls.query(uri, fn, default=[])

    @server.feature(T.TEXT_DOCUMENT_PREPARE_RENAME)
    @handler
    async def prepare_rename(ls: KeraLanguageServer, params: T.PrepareRenameParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            idx = a.line_index
            try:
                span, text = ide.prepare_rename(a, convert.offset_of(idx, params.position, enc))
            except ide.RenameError as e:
                raise RequestFailed(str(e)) from None
            return T.PrepareRenamePlaceholder(
                range=convert.range_of(idx, span, enc), placeholder=text
            )

        return await ls.query(uri, fn)

    @server.feature(T.TEXT_DOCUMENT_RENAME)
    @handler
    async def rename(ls: KeraLanguageServer, params: T.RenameParams):
        uri, enc = params.text_document.uri, ls.encoding
        caps = ls.client_capabilities
        versioned = bool(
            caps
            and caps.workspace
            and caps.workspace.workspace_edit
            and caps.workspace.workspace_edit.document_changes
        )

        def fn(doc, a):
            idx = a.line_index
            try:
                edits = ide.rename(a, convert.offset_of(idx, params.position, enc), params.new_name)
            except ide.RenameError as e:
                raise RequestFailed(str(e)) from None
            lsp_edits = [convert.text_edit(idx, e.span, e.new_text, enc) for e in edits]
            return workspace_edit(uri, a.version, lsp_edits, versioned)

        return await ls.query(uri, fn)


def workspace_edit(
    uri: str, version: int, edits: list[T.TextEdit], versioned: bool
) -> T.WorkspaceEdit:
    """A WorkspaceEdit for one document, versioned where the client supports it."""
    if versioned:
        return T.WorkspaceEdit(
            document_changes=[
                T.TextDocumentEdit(
                    text_document=T.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=edits,  # type: ignore[arg-type]
                )
            ]
        )
    return T.WorkspaceEdit(changes={uri: edits})
