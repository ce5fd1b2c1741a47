"""The same-bits lens: after a save (and on open, if ``kera.sameBits.onOpen``), each exported
function is run on seeded inputs on the interpreter and the targets of
``kera.sameBits.targets``, in the background (:mod:`kera_core.ide.same_bits`, in a child
process); a code lens above the function says ``same bits on interp, wasm, x86_64, arm64``
or names the target that differs, and ``kera.showSameBits`` / ``kera/sameBits`` give the
per-target digest table.

Results are keyed by the function's hash (and the options): a result is shown only for
the function it was computed for, never for an edited one. The next edit of a document
cancels its running check (the child process is killed); saving checks again what has no
result.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from lsprotocol import types as T

from kera_core.ide import same_bits as core
from kera_lsp import convert
from kera_lsp.features.progress import Progress
from kera_lsp.server import KeraLanguageServer, RequestFailed, handler

log = logging.getLogger("kera_lsp")

SHOW_SAME_BITS = "kera.showSameBits"
SAME_BITS = "kera/sameBits"
CACHE_SIZE = 1024  # function results kept (an LRU over every document)


class SameBits:
    def __init__(self, ls: KeraLanguageServer) -> None:
        self.ls = ls
        self.cache: OrderedDict[tuple, core.FunctionReport] = OrderedDict()
        self.tasks: dict[str, asyncio.Task] = {}
        self.checking: dict[str, set[str]] = {}  # uri -> hashes its running check covers
        self.failed: dict[str, str] = {}  # uri -> why its last check failed

    # --- settings and results ---------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.ls.settings.same_bits_enabled

    def options(self) -> core.Options:
        return core.Options(targets=tuple(self.ls.settings.same_bits_targets))

    def result(self, h: str) -> core.FunctionReport | None:
        key = (h, self.options().key())
        rep = self.cache.get(key)
        if rep is not None:
            self.cache.move_to_end(key)
        return rep

    def _store(self, rep: core.FunctionReport, key: tuple) -> None:
        self.cache[(rep.hash, key)] = rep
        self.cache.move_to_end((rep.hash, key))
        while len(self.cache) > CACHE_SIZE:
            self.cache.popitem(last=False)

    def title(self, uri: str, h: str) -> str:
        rep = self.result(h)
        if rep is not None:
            return rep.title()
        if h in self.checking.get(uri, ()):
            return "same bits: checking…"
        if uri in self.failed:
            return "same bits: the check failed (see the log)"
        return "same bits: not checked (save to check)"

    # --- scheduling ---------------------------------------------------------------------------
    def cancel(self, uri: str) -> None:
        """A newer edit (or close): the running check of ``uri`` is stopped."""
        task = self.tasks.pop(uri, None)
        if task is not None and not task.done():
            task.cancel()
        self.checking.pop(uri, None)

    def cancel_all(self) -> None:
        for uri in list(self.tasks):
            self.cancel(uri)

    def schedule(self, uri: str) -> asyncio.Task:
        """Check ``uri`` as it stands now (what has no result yet), in the background."""
        self.cancel(uri)
        task = asyncio.ensure_future(self._run(uri))
        self.tasks[uri] = task
        task.add_done_callback(
            lambda t: self.tasks.pop(uri, None) if self.tasks.get(uri) is t else None
        )
        return task

    async def _run(self, uri: str) -> None:
        ls = self.ls
        opts = self.options()

        def job():
            doc = ls.kera.get(uri)
            if doc is None:
                return None
            a = doc.analysis()
            return doc.version, doc.text, core.exported(a.module)

        got = await ls.run(job)
        if got is None:
            return
        version, text, fns = got
        if ls.versions.get(uri) != version:
            return  # an edit is queued behind us: it cancels, and the next save checks
        todo = {name: h for name, h in fns if (h, opts.key()) not in self.cache}
        if not todo:
            return
        self.failed.pop(uri, None)
        self.checking[uri] = set(todo.values())
        self.refresh()
        name = uri.rsplit("/", 1)[-1]
        progress = await Progress.start(ls, f"Kera: same bits of {name}", message="running")
        done: list[core.FunctionReport] = []

        def on_report(rep: core.FunctionReport) -> None:
            self._store(rep, opts.key())
            done.append(rep)
            self.checking.get(uri, set()).discard(rep.hash)
            progress.report(f"`{rep.function}`: {rep.title()}", len(done) * 100 // len(todo))

        end = "cancelled by an edit"
        try:
            await core.check_text(text, todo, opts, on_report)
            differ = sum(r.verdict == "differs" for r in done)
            end = f"{len(done)} function(s), {differ} differ"
            for rep in done:
                if rep.verdict == "differs":
                    ls.show_message(f"kera: `{rep.function}` {rep.title()}", T.MessageType.Warning)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            end = f"failed: {exc}"
            self.failed[uri] = str(exc)
            ls.log_message(
                f"kera-lsp: the same-bits check of {uri} failed: {exc}", T.MessageType.Error
            )
        finally:
            progress.end(end)
            if self.tasks.get(uri) is asyncio.current_task():
                self.checking.pop(uri, None)
            self.refresh()

    def refresh(self) -> None:
        """Ask the client to request the code lenses again (when it supports it)."""
        caps = self.ls.client_capabilities
        ws = caps.workspace if caps else None
        if not (ws and ws.code_lens and ws.code_lens.refresh_support):
            return

        async def send() -> None:
            try:
                await asyncio.wait_for(self.ls.workspace_code_lens_refresh_async(None), 5.0)
            except Exception as exc:  # the client may refuse; it asks again on its own
                log.info("workspace/codeLens/refresh: %s", exc)

        asyncio.ensure_future(send())

    # --- lenses and the table -----------------------------------------------------------------
    def lenses(self, uri: str, rows: list[tuple[T.Range, str, str]]) -> list[T.CodeLens]:
        return [
            T.CodeLens(
                range=rng,
                command=T.Command(
                    title=self.title(uri, h), command=SHOW_SAME_BITS, arguments=[uri, name]
                ),
            )
            for rng, name, h in rows
        ]

    async def report(self, uri: str, fn: str, check: bool = True) -> dict[str, Any]:
        """The ``kera/sameBits`` result for one function; runs the check first if it has
        no result (and ``check``), or waits for the running one."""
        ls = self.ls

        def job():
            doc = ls.kera.get(uri)
            if doc is None:
                raise RequestFailed(f"{uri} is not open")
            a = doc.analysis()
            m = a.module
            if m is None or fn not in m.env.fns:
                raise RequestFailed(f"no function `{fn}` in this document")
            f = m.graph.functions.get(fn)
            if f is None:
                raise RequestFailed(f"`{fn}` has errors; fix them to run it")
            if not f.exported:
                raise RequestFailed(f"`{fn}` is not exported (`pub fn`): only those are run")
            return doc.version, f.hash.hex()

        version, h = await ls.run(job)
        status = "done"
        if self.result(h) is None and check:
            task = self.tasks.get(uri)
            if task is None or task.done() or h not in self.checking.get(uri, ()):
                task = self.schedule(uri)
            await asyncio.wait({task})
        rep = self.result(h)
        if rep is None:
            status = "checking" if h in self.checking.get(uri, ()) else "unchecked"
        path = uri.rsplit("/", 1)[-1]
        out: dict[str, Any] = {
            "uri": uri,
            "function": fn,
            "version": version,
            "fingerprint": f"sha3-256:{h}",
            "status": status,
            "title": self.title(uri, h),
            "verdict": rep.verdict if rep is not None else None,
            "differing": rep.differing if rep is not None else [],
            "outcomes": [vars(o) | {"shown": o.shown()} for o in rep.outcomes] if rep else [],
            "text": rep.table(path)
            if rep is not None
            else f"same bits of `{fn}`: {self.title(uri, h)}\n",
        }
        return out


def setup(server: KeraLanguageServer) -> None:
    server.same_bits = SameBits(server)

    @server.feature(SAME_BITS)
    @handler
    async def same_bits(ls: KeraLanguageServer, params):
        raw = params._asdict() if hasattr(params, "_asdict") else params
        if not isinstance(raw, dict):
            raise RequestFailed(f"{SAME_BITS} takes an object with uri, function")
        uri, fn = raw.get("uri"), raw.get("function")
        if not isinstance(uri, str) or not isinstance(fn, str):
            raise RequestFailed(f"{SAME_BITS}: missing or non-string uri or function")
        return await ls.same_bits.report(uri, fn, raw.get("check", True) is not False)

    async def show_same_bits(ls: KeraLanguageServer, *args):
        if len(args) < 2 or not all(isinstance(x, str) for x in args[:2]):
            raise RequestFailed(f"{SHOW_SAME_BITS} takes 2 string arguments: [uri, function]")
        uri, fn = args[0], args[1]
        return await ls.same_bits.report(uri, fn)

    # Implemented by the clients (they open the table); executed, not advertised, as
    # kera.showLowering (see features/lowering.py).
    server.late_commands.append((SHOW_SAME_BITS, show_same_bits))


def lens_rows(a, enc: str) -> list[tuple[T.Range, str, str]]:
    """(range of the name, name, hash) of each exported function that lowered."""
    m = a.module
    if m is None:
        return []
    idx = a.line_index
    rows = []
    for name, h in core.exported(m):
        sig = m.env.fns.get(name)
        if sig is not None:
            rows.append((sig.name_span.start, convert.range_of(idx, sig.name_span, enc), name, h))
    return [(r, n, h) for _, r, n, h in sorted(rows, key=lambda x: x[0])]
