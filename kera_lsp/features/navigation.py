"""Go to definition, references, rename (with prepareRename)."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import navigation as ide
from kera_core.ide import package_refs
from kera_core.ide.common import token_at
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, RequestFailed, handler


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_DEFINITION)
    @handler
    async def definition(ls: KeraLanguageServer, params: T.DefinitionParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            idx = a.line_index
            found = ide.definition_location(a, convert.offset_of(idx, params.position, enc))
            if found is None:
                return None
            path, span = found
            if path is None:
                return T.Location(uri=uri, range=convert.range_of(idx, span, enc))
            # an imported item: in another file of the package (open, or on disk)
            other = ls.kera.locate(path)
            if other is None:
                return None
            return T.Location(uri=other[0], range=convert.range_of(other[1], span, enc))

        return await ls.query(uri, fn)

    @server.feature(T.TEXT_DOCUMENT_REFERENCES)
    @handler
    async def references(ls: KeraLanguageServer, params: T.ReferenceParams):
        uri, enc = params.text_document.uri, ls.encoding
        include = params.context.include_declaration if params.context else True

        def fn(doc, a):
            idx = a.line_index
            offset = convert.offset_of(idx, params.position, enc)
            occ = package_refs.occurrences(ls.kera, doc, offset)
            if occ is not None:  # a `pub` item of a package: in every file that uses it
                return [
                    T.Location(uri=where[0], range=convert.range_of(where[1], s, enc))
                    for path, spans in occ.by_path.items()
                    if (where := ls.kera.locate(path)) is not None
                    for s in spans
                    if include or (path, s) != occ.definition
                ]
            spans = ide.references(a, offset, include)
            return [T.Location(uri=uri, range=convert.range_of(idx, s, enc)) for s in spans]

        return await ls.query(uri, fn, default=[])

    @server.feature(T.TEXT_DOCUMENT_PREPARE_RENAME)
    @handler
    async def prepare_rename(ls: KeraLanguageServer, params: T.PrepareRenameParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            idx = a.line_index
            offset = convert.offset_of(idx, params.position, enc)
            try:
                if package_refs.occurrences(ls.kera, doc, offset) is not None:
                    tok = token_at(a, offset)
                    assert tok is not None
                    span, text = tok.span, tok.text
                else:
                    span, text = ide.prepare_rename(a, offset)
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
            offset = convert.offset_of(idx, params.position, enc)
            try:
                across = package_refs.rename(ls.kera, doc, offset, params.new_name)
                if across is not None:  # a `pub` item of a package: every file that uses it
                    return _package_edit(ls, across, params.new_name, enc, versioned)
                edits = ide.rename(a, offset, params.new_name)
            except ide.RenameError as e:
                raise RequestFailed(str(e)) from None
            lsp_edits = [convert.text_edit(idx, e.span, e.new_text, enc) for e in edits]
            return workspace_edit(uri, a.version, lsp_edits, versioned)

        return await ls.query(uri, fn)


def _package_edit(
    ls: KeraLanguageServer, spans: dict, new_name: str, enc: str, versioned: bool
) -> T.WorkspaceEdit:
    """A rename across the files of a package: one edit list per file (an open file's
    at its version)."""
    changes: dict[str, list[T.TextEdit]] = {}
    versions: dict[str, int | None] = {}
    for path, found in spans.items():
        where = ls.kera.locate(path)
        if where is None:
            continue
        uri, index = where
        changes[uri] = [convert.text_edit(index, s, new_name, enc) for s in found]
        doc = ls.kera.get(uri)
        versions[uri] = doc.version if doc is not None else None
    if versioned:
        return T.WorkspaceEdit(
            document_changes=[
                T.TextDocumentEdit(
                    text_document=T.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=versions[uri]
                    ),
                    edits=edits,  # type: ignore[arg-type]
                )
                for uri, edits in changes.items()
            ]
        )
    return T.WorkspaceEdit(changes=changes)


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
