"""The workspace index (``kera_core/ide/workspace_index.py``) in the server: the background
scan after ``initialized`` (with progress), the ``workspace/didChangeWatchedFiles`` watchers
(registered dynamically when the client can), and ``workspace/symbol``.

The scan and the re-indexing of changed files run on their own thread (``ls.indexer``, a
second :class:`~kera_lsp.server.Worker`), never on the event loop nor on the worker that
serves requests; ``workspace/symbol`` runs on the worker, over a snapshot of the index plus
the open documents (which take precedence over their files on disk).
"""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types as T
from pygls.uris import to_fs_path

from kera_core.ide import workspace_index as wi
from kera_lsp.features.progress import Progress
from kera_lsp.server import KeraLanguageServer, Worker, handler

log = logging.getLogger("kera_lsp")

WATCHER_ID = "kera/watched-files"
GLOB = "**/*.kera"
CHUNK = 8  # files per indexing job (progress is reported between jobs)
YIELD_S = 2.0  # the most the scan waits, per chunk, for the worker's analyses to finish

KINDS = {
    "function": T.SymbolKind.Function,
    "struct": T.SymbolKind.Struct,
    "field": T.SymbolKind.Field,
    "const": T.SymbolKind.Constant,
}

_tasks: set[asyncio.Task] = set()


def _index(ls: KeraLanguageServer) -> wi.WorkspaceIndex:
    return ls.index  # type: ignore[attr-defined]


def _on_indexer(ls: KeraLanguageServer, fn, *args) -> asyncio.Future:
    indexer = getattr(ls, "indexer", None)
    if indexer is None:
        indexer = ls.indexer = Worker()  # type: ignore[attr-defined]
    return asyncio.wrap_future(indexer.submit(fn, *args))


_pending: set[asyncio.Future] = set()


def _update(ls: KeraLanguageServer, fn, *args) -> None:
    """Queue an update of the index for a file event; ``workspace/symbol`` waits for the
    updates queued before it (not for the initial scan, which answers what it has)."""
    fut = _on_indexer(ls, fn, *args)
    _pending.add(fut)
    fut.add_done_callback(_pending.discard)


def _roots(ls: KeraLanguageServer) -> list[str]:
    try:
        ws = ls.workspace
    except RuntimeError:
        return []
    uris = [f.uri for f in ws.folders.values()] or ([ws.root_uri] if ws.root_uri else [])
    out = []
    for u in uris:
        p = to_fs_path(u)
        if p and p not in out:
            out.append(p)
    return out


def _background(coro) -> None:
    task = asyncio.ensure_future(coro)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def _index_many(idx: wi.WorkspaceIndex, paths: list) -> int:
    n = 0
    for p in paths:
        e = idx.index_path(p)
        n += len(e.symbols) if e is not None else 0
    return n


async def start(ls: KeraLanguageServer) -> None:
    """After ``initialized``: register the watchers and index the workspace, in the
    background (the handler returns at once)."""
    idx = _index(ls)
    idx.encoding = ls.encoding
    idx.roots = _roots(ls)
    _background(_register_watchers(ls))
    _background(_scan(ls))


async def _register_watchers(ls: KeraLanguageServer) -> None:
    caps = ls.client_capabilities
    dyn = caps and caps.workspace and caps.workspace.did_change_watched_files
    if not (dyn and dyn.dynamic_registration):
        log.info("the client cannot watch files for us: the index follows open/save/close only")
        return
    reg = T.Registration(
        id=WATCHER_ID,
        method=T.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=T.DidChangeWatchedFilesRegistrationOptions(
            watchers=[T.FileSystemWatcher(glob_pattern=GLOB)]
        ),
    )
    try:
        await asyncio.wait_for(
            ls.client_register_capability_async(T.RegistrationParams(registrations=[reg])), 10.0
        )
    except Exception as exc:  # the client refused: the index still follows open documents
        log.info("client/registerCapability (file watchers) failed: %s", exc)


async def _scan(ls: KeraLanguageServer) -> None:
    idx = _index(ls)
    if not idx.roots:
        idx.scanned = True
        return
    p = await Progress.start(ls, "Kera: indexing the workspace")
    files = symbols = 0
    try:
        await _after_analyses(ls)
        paths = await _on_indexer(ls, lambda: list(wi.scan(idx.roots)))
        files = len(paths)
        for i in range(0, files, CHUNK):
            await _after_analyses(ls)
            symbols += await _on_indexer(ls, _index_many, idx, paths[i : i + CHUNK])
            done = min(i + CHUNK, files)
            p.report(f"{done}/{files} files", percentage=done * 100 // max(files, 1))
    finally:
        idx.scanned = True
        p.end(f"{files} files, {symbols} symbols")
        log.info("indexed %d files (%d symbols) under %s", files, symbols, idx.roots)


async def _after_analyses(ls: KeraLanguageServer) -> None:
    """Wait (at most ``YIELD_S``) while the main worker has jobs: the scan's threads share
    one interpreter, so a chunk parsed during a document's first analysis (the open, which
    comes right after ``initialized``, when the scan starts) makes that analysis wait."""
    worker = getattr(ls, "worker", None)
    if worker is None:
        return
    loop = asyncio.get_running_loop()
    until = loop.time() + YIELD_S
    while worker.busy and loop.time() < until:
        await asyncio.sleep(0.01)


def file_touched(ls: KeraLanguageServer, uri: str) -> None:
    """A document was saved or closed: re-read its file (for clients that do not watch
    files for us; an unchanged file costs one ``stat``)."""
    idx = getattr(ls, "index", None)
    path = wi.uri_to_path(uri)
    if idx is None or path is None or not path.endswith(".kera") or not idx.in_roots(path):
        return
    _update(ls, idx.index_path, path)


def _symbol_information(s: wi.IndexedSymbol) -> T.SymbolInformation:
    return T.SymbolInformation(
        name=s.name,
        kind=KINDS[s.kind],
        location=T.Location(
            uri=s.uri,
            range=T.Range(
                start=T.Position(line=s.start[0], character=s.start[1]),
                end=T.Position(line=s.end[0], character=s.end[1]),
            ),
        ),
        container_name=s.container or None,
    )


def setup(server: KeraLanguageServer) -> None:
    server.index = wi.WorkspaceIndex()  # type: ignore[attr-defined]

    @server.feature(T.WORKSPACE_SYMBOL)
    @handler
    async def workspace_symbol(ls: KeraLanguageServer, params: T.WorkspaceSymbolParams):
        idx = _index(ls)
        query = params.query or ""
        if _pending:
            await asyncio.wait(list(_pending), timeout=5.0)

        def job():
            opened = [d.syntax_analysis() for d in list(ls.kera.documents.values())]
            found = wi.search(idx.entries(opened), query)
            return [_symbol_information(s) for s in found]

        return await ls.run(job)

    @server.feature(T.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @handler
    async def did_change_watched_files(
        ls: KeraLanguageServer, params: T.DidChangeWatchedFilesParams
    ):
        idx = _index(ls)
        for ev in params.changes:
            path = wi.uri_to_path(ev.uri)
            if path is None:
                continue
            if ev.type == T.FileChangeType.Deleted:
                _update(ls, idx.remove, ev.uri)
            elif path.endswith(".kera") and idx.in_roots(path):
                _update(ls, idx.index_path, path)
            if path.endswith(".kera"):
                from kera_lsp.features.sync import dependants_changed

                dependants_changed(ls, ev.uri)
