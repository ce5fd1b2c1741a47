"""Pull diagnostics: ``textDocument/diagnostic`` and ``workspace/diagnostic`` (open documents).

The same diagnostics as those pushed (``publishDiagnostics`` keeps being sent). A report's
``resultId`` is the document's content hash: diagnostics are a function of the text, so a
request whose ``previousResultId`` is the current one is answered ``unchanged`` without
looking at the analysis — nothing is computed.
"""

from __future__ import annotations

from lsprotocol import types as T
from pygls.exceptions import JsonRpcRequestCancelled

from kera_core.workspace import Document
from kera_lsp.features.diagnostics import lsp_diagnostics
from kera_lsp.features.progress import Progress
from kera_lsp.server import KeraLanguageServer, handler

IDENTIFIER = "kera"


def result_id(doc: Document) -> str:
    """The document's text, and for one with imports the texts of its package's files."""
    view = doc.package()
    key = view.key(doc.content_hash) if view is not None else doc.content_hash
    return key.hex()[:32]


def _report(ls: KeraLanguageServer, uri: str, previous: str | None, enc: str):
    """(version, result id, items or None for unchanged) of the open document ``uri``."""
    doc = ls.kera.get(uri)
    if doc is None:
        return None
    rid = result_id(doc)
    if previous == rid:
        return doc.version, rid, None
    a = doc.analysis()
    return a.version, rid, lsp_diagnostics(a, enc, uri, ls.kera.locate)


def setup(server: KeraLanguageServer) -> None:
    @server.feature(
        T.TEXT_DOCUMENT_DIAGNOSTIC,
        T.DiagnosticOptions(
            identifier=IDENTIFIER, inter_file_dependencies=False, workspace_diagnostics=True
        ),
    )
    @handler
    async def document_diagnostic(ls: KeraLanguageServer, params: T.DocumentDiagnosticParams):
        uri, enc = params.text_document.uri, ls.encoding
        got = await ls.run(_report, ls, uri, params.previous_result_id, enc)
        if got is None:  # not open: nothing to report
            return T.RelatedFullDocumentDiagnosticReport(items=[])
        _version, rid, items = got
        if items is None:
            return T.RelatedUnchangedDocumentDiagnosticReport(result_id=rid)
        return T.RelatedFullDocumentDiagnosticReport(items=items, result_id=rid)

    @server.feature(T.WORKSPACE_DIAGNOSTIC)
    @handler
    async def workspace_diagnostic(ls: KeraLanguageServer, params: T.WorkspaceDiagnosticParams):
        enc = ls.encoding
        previous = {p.uri: p.value for p in params.previous_result_ids or []}
        progress = Progress.none()
        if params.work_done_token is not None:  # cancellable between two documents
            progress = await Progress.start(
                ls, "Kera: diagnostics", params.work_done_token, cancellable=True
            )
        items: list = []
        try:
            uris = await ls.run(lambda: list(ls.kera.documents))
            for i, uri in enumerate(uris):
                if progress.cancelled:
                    raise JsonRpcRequestCancelled("workspace/diagnostic cancelled")
                progress.report(uri.rsplit("/", 1)[-1], percentage=100 * i // max(len(uris), 1))
                got = await ls.run(_report, ls, uri, previous.get(uri), enc)
                if got is None:  # closed meanwhile
                    continue
                version, rid, diags = got
                if diags is None:
                    items.append(
                        T.WorkspaceUnchangedDocumentDiagnosticReport(
                            uri=uri, version=version, result_id=rid
                        )
                    )
                else:
                    items.append(
                        T.WorkspaceFullDocumentDiagnosticReport(
                            uri=uri, version=version, items=diags, result_id=rid
                        )
                    )
        finally:
            progress.end()
        return T.WorkspaceDiagnosticReport(items=items)
