"""Publishing diagnostics: debounced per document, tagged with the version they describe.

The first change after a quiet period is analysed at once; changes arriving while one is
pending or running are coalesced and analysed ``kera.diagnosticsDelay`` after the last
of them. A result is published only if its version is still the newest the client sent.

A large document's first analysis is preceded by its syntax diagnostics (the parse is done
when the document opens; lowering it takes longer), published for the same version, then
replaced by the complete set.

A running analysis is watched (kera_core/cancel.py): it is abandoned between two functions
as soon as a newer version of its document arrives or the user cancels its progress (a
large document's, see features/progress.py), and reports how far it got on that progress.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from lsprotocol import types as T

from kera_core.cancel import Abandoned
from kera_core.workspace import Analysis
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer

log = logging.getLogger("kera_lsp")

#: A document at least this large publishes its syntax diagnostics before its first analysis.
SYNTAX_FIRST_BYTES = 64 * 1024

#: At most this many diagnostics are published per document (a binary file can have
#: tens of thousands); the last one says how many were left out.
MAX_PUBLISHED = 500


def diagnostics_json(a: Analysis, enc: str, uri: str, locate=None) -> list[dict]:
    """The LSP diagnostics of an analysis (pushed and pulled alike) as the protocol's JSON,
    at most MAX_PUBLISHED of them, then one saying how many were left out. ``locate``
    places notes in other files of a package (:meth:`~kera_core.workspace.Workspace.locate`)."""
    index = a.line_index
    shown = a.diagnostics[:MAX_PUBLISHED]
    at = convert.positions_of(shown, index, enc)
    out = [convert.diagnostic_json(d, index, enc, uri, locate, at) for d in shown]
    if len(a.diagnostics) > len(shown):
        out.append(
            {
                "range": convert.range_json(index, shown[-1].span, enc, at),
                "message": f"{len(a.diagnostics) - len(shown)} more diagnostics not shown",
                "severity": int(T.DiagnosticSeverity.Information.value),
                "source": "kera",
            }
        )
    return out


def lsp_diagnostics(a: Analysis, enc: str, uri: str, locate=None) -> list[T.Diagnostic]:
    """:func:`diagnostics_json` as ``lsprotocol`` objects (a pulled report carries them)."""
    return convert.structure(diagnostics_json(a, enc, uri, locate), list[T.Diagnostic])


def publish(ls: KeraLanguageServer, uri: str, version: int, diagnostics: list[dict]) -> None:
    """Send ``textDocument/publishDiagnostics``: what pygls's own method sends for the
    same diagnostics, byte for byte, without lsprotocol objects made and unstructured."""
    params = {"uri": uri, "diagnostics": diagnostics, "version": version}
    ls.protocol.notify_json(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, params)


class Publisher:
    def __init__(self, server: KeraLanguageServer) -> None:
        self.server = server
        self.tasks: dict[str, asyncio.Task] = {}
        self.last_change: dict[str, float] = {}
        self.published: dict[str, int] = {}  # uri -> version last published (for tests/bench)

    def schedule(self, uri: str, immediate: bool = False) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        delay = self.server.settings.diagnostics_delay
        task = self.tasks.get(uri)
        busy = task is not None and not task.done()
        quiet = now - self.last_change.get(uri, float("-inf")) >= delay
        self.last_change[uri] = now
        if busy:
            task.cancel()  # type: ignore[union-attr]
        wait = 0.0 if immediate or (quiet and not busy) else delay
        self.tasks[uri] = asyncio.ensure_future(self._publish(uri, wait))

    def cancel(self, uri: str) -> None:
        self.published.pop(uri, None)  # (a document opened again publishes syntax first again)
        task = self.tasks.pop(uri, None)
        if task is not None:
            task.cancel()

    def cancel_all(self) -> None:
        for uri in list(self.tasks):
            self.cancel(uri)

    async def _publish(self, uri: str, wait: float) -> None:
        if wait:
            await asyncio.sleep(wait)
        ls = self.server
        enc = ls.encoding
        loop = asyncio.get_running_loop()

        def syntax_job():
            doc = ls.kera.get(uri)
            if doc is None or ls.versions.get(uri) != doc.version:
                return None
            if doc.size < SYNTAX_FIRST_BYTES or doc.analysed:
                return None  # small, or analysed already: the complete set comes at once
            a = doc.syntax_analysis()
            return (a.version, diagnostics_json(a, enc, uri)) if a.module is None else None

        if uri not in self.published:  # the document's first publication
            try:
                first = await ls.run(syntax_job)
            except Exception:
                log.exception("syntax diagnostics of %s failed", uri)
                first = None
            if first is not None and ls.versions.get(uri) == first[0]:
                publish(ls, uri, first[0], first[1])

        def job():
            doc = ls.kera.get(uri)
            if doc is None or ls.versions.get(uri) != doc.version:
                return None  # closed, or a newer change is queued behind us
            t, cpu = time.perf_counter(), time.thread_time()
            try:
                a = doc.analysis(watch=self.watch(uri, doc.version, loop))
            except Abandoned as why:
                log.info("analysis of %s v%d abandoned: %s", uri, doc.version, why)
                return None
            log.debug(
                "analysis of %s v%d: %.1f ms (cpu %.1f ms) %s",
                uri,
                a.version,
                (time.perf_counter() - t) * 1000,
                (time.thread_time() - cpu) * 1000,
                {k: round(v * 1000, 1) for k, v in a.timings.items()},
            )
            return a.version, diagnostics_json(a, enc, uri, ls.kera.locate)

        try:
            result = await ls.run(job)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            ls.log_message(f"kera-lsp: diagnostics for {uri} failed: {exc}", T.MessageType.Error)
            return
        if result is None:
            return
        version, diags = result
        if ls.versions.get(uri) != version:
            return  # the client has moved on: never publish an older version's diagnostics
        publish(ls, uri, version, diags)
        self.published[uri] = version

    def watch(
        self, uri: str, version: int, loop: asyncio.AbstractEventLoop
    ) -> Callable[[str, int, int], bool]:
        """The watch of one analysis (called on the worker): stop when the client has sent
        a newer version or cancelled the document's progress; else report the progress."""
        ls = self.server
        shown = [-1]

        def watch(stage: str, done: int, total: int) -> bool:
            if ls.versions.get(uri) != version:
                return True
            p = ls.analysis_progress.get(uri)
            if p is None:
                return False
            if p.cancelled:
                return True
            pct = 100 * done // max(total, 1)
            if pct >= shown[0] + 5:
                shown[0] = pct
                loop.call_soon_threadsafe(p.report, f"{stage}: {done} of {total}", pct, True)
            return False

        return watch


def setup(server: KeraLanguageServer) -> None:
    server.publisher = Publisher(server)
