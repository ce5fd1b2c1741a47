"""Document synchronisation, configuration and lifecycle."""

from __future__ import annotations

import asyncio

from lsprotocol import types as T

from kera_core.workspace import Change
from kera_lsp.features import progress, workspace
from kera_lsp.server import KeraLanguageServer, handler


def _changes(params: T.DidChangeTextDocumentParams) -> list[Change]:
    out = []
    for c in params.content_changes:
        rng = getattr(c, "range", None)
        if rng is None:
            out.append(Change(c.text))
        else:
            out.append(
                Change(
                    c.text, (rng.start.line, rng.start.character, rng.end.line, rng.end.character)
                )
            )
    return out


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.INITIALIZE)
    async def initialize(ls: KeraLanguageServer, params: T.InitializeParams):
        ls.settings.update(params.initialization_options)

    @server.feature(T.INITIALIZED)
    @handler
    async def initialized(ls: KeraLanguageServer, params: T.InitializedParams):
        ls.register_late_commands()
        await workspace.start(ls)
        await pull_configuration(ls)

    @server.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
    @handler
    async def did_change_configuration(
        ls: KeraLanguageServer, params: T.DidChangeConfigurationParams
    ):
        if isinstance(params.settings, dict) and params.settings:
            ls.settings.update(params.settings)
        else:
            await pull_configuration(ls)

    @server.feature(T.TEXT_DOCUMENT_DID_OPEN)
    @handler
    async def did_open(ls: KeraLanguageServer, params: T.DidOpenTextDocumentParams):
        td = params.text_document
        ls.versions[td.uri] = td.version

        def job():
            doc = ls.kera.open(td.uri, td.text, td.version)
            doc.mark_saved(lazy=True)  # fingerprinted when first asked (hover, lens)

        fut = ls.run(job)
        ls.publisher.schedule(td.uri, immediate=True)
        dependants_changed(ls, td.uri)
        if len(td.text) >= progress.OPEN_PROGRESS_BYTES:
            progress.analysis_progress(
                ls, td.uri, td.version, len(td.text.encode("utf-8", "replace"))
            )
        if ls.settings.same_bits_enabled and ls.settings.same_bits_on_open:
            ls.same_bits.schedule(td.uri)  # queued after the open on the worker
        await fut

    @server.feature(T.TEXT_DOCUMENT_DID_CHANGE)
    @handler
    async def did_change(ls: KeraLanguageServer, params: T.DidChangeTextDocumentParams):
        uri, version = params.text_document.uri, params.text_document.version
        ls.versions[uri] = version
        ls.same_bits.cancel(uri)  # a running same-bits check describes an older version
        fut = ls.run(ls.kera.change, uri, version, _changes(params), ls.encoding)
        ls.publisher.schedule(uri)
        dependants_changed(ls, uri)
        await fut

    @server.feature(T.TEXT_DOCUMENT_DID_SAVE, T.SaveOptions(include_text=False))
    @handler
    async def did_save(ls: KeraLanguageServer, params: T.DidSaveTextDocumentParams):
        def job():
            doc = ls.kera.get(params.text_document.uri)
            if doc is not None:
                doc.mark_saved(lazy=True)

        fut = ls.run(job)
        if ls.settings.same_bits_enabled:
            ls.same_bits.schedule(params.text_document.uri)  # in the background
        await fut
        workspace.file_touched(ls, params.text_document.uri)
        dependants_changed(ls, params.text_document.uri)

    @server.feature(T.TEXT_DOCUMENT_DID_CLOSE)
    @handler
    async def did_close(ls: KeraLanguageServer, params: T.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        ls.versions.pop(uri, None)
        ls.publisher.cancel(uri)
        ls.same_bits.cancel(uri)
        await ls.run(ls.kera.close, uri)
        workspace.file_touched(ls, uri)
        dependants_changed(ls, uri)
        ls.text_document_publish_diagnostics(T.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(T.SHUTDOWN)
    async def shutdown(ls: KeraLanguageServer, params):
        ls.publisher.cancel_all()
        ls.same_bits.cancel_all()

    @server.feature(T.EXIT)
    def exit_(ls: KeraLanguageServer, params):
        ls.worker.stop()


def dependants_changed(ls: KeraLanguageServer, uri: str) -> None:
    """``uri``'s file changed (an edit, a save, a close, on disk): the open documents that
    import from its package are checked again and their diagnostics published (an
    analysis is redone only if a file it sees changed: Document.analysis)."""

    async def refresh() -> None:
        uris = await ls.run(lambda: [d.uri for d in ls.kera.dependants(uri)])  # on the worker
        for u in uris:
            if u in ls.versions:
                ls.publisher.schedule(u)

    task = asyncio.ensure_future(refresh())
    _refreshing.add(task)
    task.add_done_callback(_refreshing.discard)


_refreshing: set[asyncio.Task] = set()


async def pull_configuration(ls: KeraLanguageServer) -> None:
    """Ask a client that supports ``workspace/configuration`` for the ``kera`` section."""
    caps = ls.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(
                T.ConfigurationParams(items=[T.ConfigurationItem(section="kera")])
            ),
            timeout=2.0,
        )
    except Exception as exc:  # a client that cannot answer keeps the current settings
        ls.log_message(f"kera-lsp: workspace/configuration failed: {exc}", T.MessageType.Warning)
        return
    if result and isinstance(result[0], dict):
        ls.settings.update({"kera": result[0]})
