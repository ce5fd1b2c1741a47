"""Work-done progress (``$/progress`` begin/report/end) for the server's longer work.

A request that carries a ``workDoneToken`` reports on that token (client-initiated);
otherwise the server creates one with ``window/workDoneProgress/create`` when the client
supports it (``window.workDoneProgress``), and reports nothing when it does not. Work that
can stop checks :attr:`Progress.cancelled` (set by ``window/workDoneProgress/cancel``,
which pygls turns into a cancelled future per token) — from any thread.
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from lsprotocol import types as T

from kera_core.cancel import Abandoned
from kera_lsp.server import KeraLanguageServer

log = logging.getLogger("kera_lsp")

_ids = itertools.count(1)


class Progress:
    """One progress token, from begin to end. ``Progress.none()`` reports nothing."""

    def __init__(self, ls: KeraLanguageServer | None, token: T.ProgressToken | None) -> None:
        self.ls, self.token = ls, token
        self.ended = False

    @classmethod
    def none(cls) -> Progress:
        return cls(None, None)

    @classmethod
    async def start(
        cls,
        ls: KeraLanguageServer,
        title: str,
        token: T.ProgressToken | None = None,
        cancellable: bool = False,
        message: str | None = None,
    ) -> Progress:
        if token is None:
            caps = ls.client_capabilities
            if not (caps and caps.window and caps.window.work_done_progress):
                return cls.none()
            token = f"kera/{next(_ids)}"
            try:
                await asyncio.wait_for(ls.work_done_progress.create_async(token), 2.0)
            except Exception as exc:  # a client that refuses gets no progress, nothing more
                log.info("window/workDoneProgress/create refused: %s", exc)
                return cls.none()
        p = cls(ls, token)
        try:
            ls.work_done_progress.begin(
                token,
                T.WorkDoneProgressBegin(
                    title=title, cancellable=cancellable, message=message, percentage=0
                ),
            )
        except Exception as exc:  # a duplicate token from the client
            log.info("cannot report progress on %r: %s", token, exc)
            return cls.none()
        return p

    @property
    def cancelled(self) -> bool:
        """Has the client cancelled this progress (thread-safe)?"""
        if self.ls is None or self.token is None:
            return False
        fut = self.ls.work_done_progress.tokens.get(self.token)
        return fut is not None and fut.cancelled()

    def report(
        self, message: str, percentage: int | None = None, cancellable: bool | None = None
    ) -> None:
        if self.ls is None or self.ended:
            return
        self.ls.work_done_progress.report(
            self.token,  # type: ignore[arg-type]
            T.WorkDoneProgressReport(
                message=message, percentage=percentage, cancellable=cancellable
            ),
        )

    def end(self, message: str | None = None) -> None:
        if self.ls is None or self.ended:
            return
        self.ended = True
        self.ls.work_done_progress.end(self.token, T.WorkDoneProgressEnd(message=message))  # type: ignore[arg-type]
        self.ls.work_done_progress.tokens.pop(self.token, None)  # type: ignore[arg-type]


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def work_done_progress_cancel(ls: KeraLanguageServer, params: T.WorkDoneProgressCancelParams):
        # pygls has already cancelled the token's future; the work notices it.
        log.info("progress %r cancelled by the client", params.token)


#: Opening a document at least this large reports the analysis as progress.
OPEN_PROGRESS_BYTES = 64 * 1024

_tasks: set[asyncio.Task] = set()


def analysis_progress(ls: KeraLanguageServer, uri: str, version: int, size: int) -> None:
    """Report a just-opened large document's first analysis (begin … end) in the background.

    Cancellable: the diagnostics publisher's analysis watches this progress (registered in
    ``ls.analysis_progress``), reports on it how many functions are lowered and checked,
    and is abandoned when the user cancels it (or when a newer version arrives); the
    document is then analysed again at its next change. The progress ends once that
    analysis is done or abandoned (this job queues behind it on the worker and only looks
    at the cached result: no work of its own).
    """

    async def run() -> None:
        name = uri.rsplit("/", 1)[-1]
        p = await Progress.start(
            ls, f"Kera: analysing {name}", cancellable=True, message=f"{size // 1024} kB"
        )
        ls.analysis_progress[uri] = p
        try:

            def job():
                doc = ls.kera.get(uri)
                if doc is not None and doc.version == version and not p.cancelled:
                    doc.analysis(watch=lambda *_: p.cancelled or ls.versions.get(uri) != version)

            try:
                await ls.run(job)
            except Abandoned:
                pass
        finally:
            if ls.analysis_progress.get(uri) is p:
                del ls.analysis_progress[uri]
            p.end("cancelled" if p.cancelled else None)

    task = asyncio.ensure_future(run())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
