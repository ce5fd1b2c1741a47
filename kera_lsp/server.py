"""The Kera language server: pygls wiring around :mod:`kera_core.workspace` and :mod:`kera_core.ide`.

The server holds no compiler logic. It owns

* one worker thread that runs every workspace operation in arrival order (edits, analyses,
  queries), so the event loop stays free to receive messages, drop stale results and exit;
* the latest version of each document as the client sent it, to never publish stale
  diagnostics;
* the settings (``kera.outputDir``, ``kera.diagnosticsDelay``, ``kera.sameBits.*``).

Each feature lives in ``kera_lsp/features/<name>.py`` with one ``setup(server)``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gc
import logging
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as T
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcContentModified,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from kera_core import __version__
from kera_core.cancel import Abandoned, watching
from kera_core.stack import deep_recursion, start_deep_thread
from kera_core.workspace import Analysis, Document, Workspace

log = logging.getLogger("kera_lsp")

REQUEST_FAILED = -32803  # LSP's RequestFailed


class RequestFailed(JsonRpcException):
    """A well-formed request that cannot be served; the message says why."""

    CODE = REQUEST_FAILED


class _Ignored:
    """What a message that was already answered with an error turns into (pygls drops it)."""

    jsonrpc = "ignored"


def _version_null_change(data: dict[str, Any], server: Any) -> None:
    """A `didChange` whose version is null is still applied (as the next version)."""
    td = (data.get("params") or {}).get("textDocument")
    if isinstance(td, dict) and td.get("version") is None and isinstance(td.get("uri"), str):
        versions = getattr(server, "versions", {})
        td["version"] = versions.get(td["uri"], 0) + 1


class KeraProtocol(LanguageServerProtocol):
    """Answers a request whose params do not match the LSP schema with InvalidParams.

    pygls only logs such messages, which leaves the client waiting forever.
    """

    _initialize_seen = False

    # One copy of the text: the open documents live in kera_core.workspace, which applies
    # every edit (LSP's clamping and line endings, any position encoding). pygls would keep
    # a second copy of each and apply each edit to it too; these overrides skip that.
    def _user(self, method: str, params):
        if (handler := self.fm.features.get(method)) is not None:
            yield handler, (params,), None

    @lsp_method(T.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
        yield from self._user(T.TEXT_DOCUMENT_DID_OPEN, params)

    @lsp_method(T.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
        yield from self._user(T.TEXT_DOCUMENT_DID_CHANGE, params)

    @lsp_method(T.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
        yield from self._user(T.TEXT_DOCUMENT_DID_CLOSE, params)

    def _send_handler_result(self, future, *, msg_id):
        """An ordinary failure (RequestFailed: nothing to rename here, a refused format) is
        answered and logged as one line; pygls would log it as an ERROR with a traceback."""
        exc = None if future.cancelled() else future.exception()
        if isinstance(exc, RequestFailed):
            self._request_futures.pop(msg_id, None)
            log.info("request %s failed: %s", msg_id, exc)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def notify_json(self, method: str, params: dict[str, Any]) -> None:
        """A notification whose params are the protocol's JSON already (the diagnostics
        publisher's): the message pygls's ``notify`` writes for the same params, key for
        key, without lsprotocol objects made only to be unstructured again."""
        log.debug("Sending notification: %r", method)
        self._send_data({"params": params, "method": method, "jsonrpc": JsonRPCProtocol.VERSION})

    def structure_message(self, data: dict[str, Any]):
        if isinstance(data, dict) and isinstance(data.get("method"), str):
            method = data["method"]
            if method == "initialize":
                self._initialize_seen = True
            elif not self._initialize_seen and method != "exit":
                if "id" in data:  # LSP: a request before `initialize` gets -32002
                    err = JsonRpcServerNotInitialized(f"{method}: the server is not initialized")
                    self._send_response(data["id"], None, err.to_response_error())
                return _Ignored()  # and a notification is dropped
            if method == "textDocument/didChange":
                _version_null_change(data, self._server)
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                cause = exc.__cause__ or exc
                msg = f"invalid params for {data.get('method')!r}: {cause}".splitlines()[0]
                self._send_response(data["id"], None, JsonRpcInvalidParams(msg).to_response_error())
                return _Ignored()
            raise


class IdleGC:
    """Full garbage collections, moved off the latency path onto the worker's idle time.

    CPython collects its oldest generation when enough objects have survived younger
    collections; with a file's trees, graphs and caches alive (≈ 150k objects for 5,000
    lines) that pause is 70–100 ms, and it lands inside whichever edit's analysis happens
    to allocate at that moment — the slowest edits of ``bench/lsp_latency.py`` were those.
    Installed (by :func:`kera_lsp.run`, for the server process only), this turns off the
    automatic full collections (young ones, 1–3 ms, stay automatic) and runs them on the
    worker once it has had no job for ``idle_s`` — or for ``busy_s`` once ``backlog``
    young-generation collections have piled up, so a client that never pauses still gets
    them, between two jobs rather than in one.
    """

    def __init__(self, idle_s: float = 0.5, busy_s: float = 0.1, backlog: int = 100) -> None:
        self.idle_s, self.busy_s, self.backlog = idle_s, busy_s, backlog
        self.collections = 0
        self.seconds = 0.0  # spent collecting, in total
        self._threshold = gc.get_threshold()
        t0, t1, _ = self._threshold
        gc.set_threshold(t0, t1, 1 << 30)  # the oldest generation: only when we say so

    def uninstall(self) -> None:
        gc.set_threshold(*self._threshold)

    def wait(self) -> float | None:
        """How long the worker may wait for a job before collecting (None: no need)."""
        pending = gc.get_count()[2]  # young-generation collections since the last full one
        if pending == 0:
            return None
        return self.busy_s if pending >= self.backlog else self.idle_s

    def collect(self) -> None:
        t = time.perf_counter()
        found = gc.collect()
        dt = time.perf_counter() - t
        self.seconds += dt
        self.collections += 1
        log.debug("idle gc: %d unreachable objects, %.1f ms", found, dt * 1000)


class Worker:
    """One daemon thread running jobs in submission order (a stuck job never blocks exit)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._queued = 0  # jobs submitted and not finished (see busy)
        self._count_lock = threading.Lock()
        self.idle_gc: IdleGC | None = None  # see IdleGC; set by kera_lsp.run
        # Deep trees are walked recursively (kera_core.stack): give the worker a large C
        # stack too, for the frames that pass through C (generators, comparisons).
        self._thread = start_deep_thread(self._loop, "kera-worker")

    def submit(self, fn: Callable, *args) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._count_lock:
            self._queued += 1
        self._jobs.put((fut, fn, args))
        return fut

    @property
    def busy(self) -> bool:
        """Is a job running or waiting? (Background work yields to this worker's jobs.)"""
        return self._queued > 0

    def stop(self) -> None:
        self._jobs.put(None)

    def _next(self):
        idle = self.idle_gc
        timeout = idle.wait() if idle is not None else None
        while timeout is not None:
            try:
                return self._jobs.get(timeout=timeout)
            except queue.Empty:
                idle.collect()  # type: ignore[union-attr]
                timeout = idle.wait()  # type: ignore[union-attr]
        return self._jobs.get()

    def _loop(self) -> None:
        while True:
            item = self._next()
            if item is None:
                return
            fut, fn, args = item
            try:
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    with deep_recursion():
                        result = fn(*args)
                    fut.set_result(result)
                except BaseException as exc:  # delivered to the awaiting handler
                    fut.set_exception(exc)
            finally:
                with self._count_lock:
                    self._queued -= 1


@dataclass
class Settings:
    output_dir: str | None = None  # kera.outputDir; relative paths are under the workspace root
    diagnostics_delay: float = 0.15  # seconds, kera.diagnosticsDelay (given in milliseconds)
    same_bits_enabled: bool = True  # kera.sameBits.enabled: check after each save
    same_bits_on_open: bool = False  # kera.sameBits.onOpen: and when a document is opened
    same_bits_targets: tuple[str, ...] = ("interp", "wasm", "x86_64", "arm64")  # .targets

    def update(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        section = raw.get("kera", raw)
        if not isinstance(section, dict):
            return
        out = section.get("outputDir")
        if isinstance(out, str):
            self.output_dir = out.strip() or None  # empty: back to the default
        delay = section.get("diagnosticsDelay")
        if isinstance(delay, int | float) and not isinstance(delay, bool) and 0 <= delay <= 10_000:
            self.diagnostics_delay = delay / 1000.0
        same = section.get("sameBits")
        if isinstance(same, dict):
            if isinstance(same.get("enabled"), bool):
                self.same_bits_enabled = same["enabled"]
            if isinstance(same.get("onOpen"), bool):
                self.same_bits_on_open = same["onOpen"]
            names = same.get("targets")
            if isinstance(names, list) and all(isinstance(n, str) for n in names):
                self.same_bits_targets = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))


class KeraLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kera-lsp", __version__, protocol_cls=KeraProtocol, max_workers=2)
        self.kera = Workspace()
        self.worker = Worker()
        self.versions: dict[str, int] = {}
        self.settings = Settings()
        self.publisher = None  # set by features.diagnostics
        # uri -> the progress of its first analysis, while it runs (features/progress.py)
        self.analysis_progress: dict[str, Any] = {}
        self.same_bits: Any = None  # set by features.same_bits
        self.late_commands: list[tuple[str, Callable]] = []  # registered after `initialize`

    def register_late_commands(self) -> None:
        """Commands the server executes but does not advertise (see features/lowering.py)."""
        for name, fn in self.late_commands:
            if name not in self.protocol.fm.commands:
                self.command(name)(fn)

    # --- the worker -----------------------------------------------------------------------
    def run(self, fn: Callable, *args) -> asyncio.Future:
        """Queue ``fn(*args)`` on the worker now (not when awaited), keeping arrival order."""
        return asyncio.wrap_future(self.worker.submit(fn, *args))

    def query(
        self,
        uri: str,
        fn: Callable[[Document, Analysis], Any],
        default: Any = None,
        syntax_only: bool = False,
    ) -> asyncio.Future:
        """Run ``fn(doc, analysis)`` for the open document ``uri`` on the worker.

        ``syntax_only`` queries (folding, selection ranges) do not wait for sema on a
        version that has not been analysed yet.
        """

        def job():
            doc = self.kera.get(uri)
            if doc is None:
                return default
            a = doc.syntax_analysis() if syntax_only else doc.analysis()
            # a graph built on demand here (a long body's, after edits: sema/body_reuse.py)
            # is abandoned when a newer version arrives, so the next keystroke never waits
            # for a lens of the last one: the client is told the content was modified
            version = doc.version
            try:
                with watching(lambda *_: self.versions.get(uri, version) != version):
                    return fn(doc, a)
            except Abandoned as why:
                raise JsonRpcContentModified(f"{uri} changed while answering: {why}") from None

        return self.run(job)

    @property
    def encoding(self) -> str:
        try:
            enc = self.workspace.position_encoding
        except RuntimeError:
            return "utf-16"
        return str(getattr(enc, "value", enc) or "utf-16")

    # --- paths ------------------------------------------------------------------------------
    def root_path(self) -> Path | None:
        try:
            ws = self.workspace
        except RuntimeError:
            return None
        uri = ws.root_uri
        if not uri and ws.folders:
            uri = next(iter(ws.folders.values())).uri
        path = to_fs_path(uri) if uri else None
        return Path(path) if path else None

    def output_dir(self, doc_uri: str) -> Path:
        root = self.root_path()
        if root is None:
            p = to_fs_path(doc_uri)
            root = Path(p).parent if p else Path.cwd()
        out = self.settings.output_dir
        if not out:
            return root / ".kera-out"
        path = Path(out).expanduser()
        return path if path.is_absolute() else root / path

    # --- messages -------------------------------------------------------------------------------
    def log_message(self, message: str, kind: T.MessageType = T.MessageType.Log) -> None:
        try:
            self.window_log_message(T.LogMessageParams(type=kind, message=message))
        except Exception:  # no writer yet, or the client is gone
            log.warning("%s", message)

    def show_message(self, message: str, kind: T.MessageType = T.MessageType.Warning) -> None:
        """Tells the person (window/showMessage: a notification in VS Code, the message area
        in Neovim), and logs the same line."""
        try:
            self.window_show_message(T.ShowMessageParams(type=kind, message=message))
        except Exception:  # no writer yet, or the client is gone
            log.warning("%s", message)
        self.log_message(message, kind)

    def report_server_error(self, error: Exception, source) -> None:
        """Log out-of-band errors instead of popping up a message for each.

        Failed requests were already answered with an error (and logged by :func:`handler`).
        """
        if source is FeatureRequestError:
            return
        self.log_message(f"kera-lsp: {type(error).__name__}: {error}", T.MessageType.Error)


def handler(f: Callable) -> Callable:
    """Wrap a feature: an internal error is logged and answered as an LSP error, never fatal."""

    @functools.wraps(f)
    async def wrapped(ls: KeraLanguageServer, params):
        try:
            return await f(ls, params)
        except JsonRpcException:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            tb = traceback.format_exc()
            log.error("%s failed: %s", f.__name__, tb)
            ls.log_message(
                f"kera-lsp: {f.__name__} failed: {type(exc).__name__}: {exc}\n{tb}",
                T.MessageType.Error,
            )
            raise JsonRpcInternalError(f"{f.__name__} failed: {type(exc).__name__}: {exc}") from exc

    return wrapped


def create_server() -> KeraLanguageServer:
    from kera_lsp import features

    server = KeraLanguageServer()
    for setup in features.SETUPS:
        setup(server)
    if os.environ.get("KERA_LSP_TEST_HOOKS") == "1":
        _test_hooks(server)
    return server


def _test_hooks(server: KeraLanguageServer) -> None:
    """Requests that fail on purpose, so the tests can check a feature's crash is contained."""

    @server.feature("kera/_test/crash")
    @handler
    async def crash(ls: KeraLanguageServer, params):
        return await ls.run(_boom)

    @server.feature("kera/_test/sleep")
    @handler
    async def sleep(ls: KeraLanguageServer, params):
        return await ls.run(time.sleep, float(getattr(params, "seconds", 0.1)))


def _boom():
    raise RuntimeError("deliberate failure (KERA_LSP_TEST_HOOKS)")
