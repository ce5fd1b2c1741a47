"""Custom requests ``kera/lowering`` and ``kera/fingerprint``, fingerprint code lenses, and
the ``kera.showLowering`` command for clients that do not implement it themselves."""

from __future__ import annotations

from lsprotocol import types as T
from pygls.exceptions import JsonRpcRequestCancelled

from kera_core.ide import targets
from kera_lsp import convert
from kera_lsp.features.actions import SHOW_LOWERING, string_args
from kera_lsp.features.progress import Progress
from kera_lsp.features.same_bits import lens_rows
from kera_lsp.server import KeraLanguageServer, RequestFailed, handler

LOWERING = "kera/lowering"
FINGERPRINT = "kera/fingerprint"


def _params(params, keys: tuple[str, ...], method: str) -> list[str]:
    if hasattr(params, "_asdict"):  # pygls hands unknown methods' params over as namedtuples
        params = params._asdict()
    if not isinstance(params, dict):
        raise RequestFailed(f"{method} takes an object with " + ", ".join(keys))
    vals = [params.get(k) for k in keys]
    missing = [k for k, v in zip(keys, vals, strict=True) if not isinstance(v, str)]
    if missing:
        raise RequestFailed(f"{method}: missing or non-string " + ", ".join(missing))
    return vals  # type: ignore[return-value]


async def lowering_result(
    ls: KeraLanguageServer, uri: str, fn_name: str, target: str, progress: Progress | None = None
) -> dict:
    progress = progress or Progress.none()

    def job():
        if progress.cancelled:
            raise JsonRpcRequestCancelled(f"the lowering of `{fn_name}` was cancelled")
        doc = ls.kera.get(uri)
        if doc is None:
            raise RequestFailed(f"{uri} is not open")
        try:
            return targets.lowering(doc.analysis(), fn_name, target)
        except targets.TargetError as e:
            raise RequestFailed(str(e)) from None

    try:
        return await ls.run(job)
    finally:
        progress.end()


def setup(server: KeraLanguageServer) -> None:
    @server.feature(LOWERING)
    @handler
    async def lowering(ls: KeraLanguageServer, params):
        uri, fn_name, target = _params(params, ("uri", "function", "target"), LOWERING)
        raw = params._asdict() if hasattr(params, "_asdict") else params
        token = raw.get("workDoneToken") if isinstance(raw, dict) else None
        progress = None
        if isinstance(token, str | int) and not isinstance(token, bool):
            # cancellable while it waits for the worker; a lowering, once running, finishes
            progress = await Progress.start(
                ls, f"Kera: lowering `{fn_name}` for {target}", token, cancellable=True
            )
        return await lowering_result(ls, uri, fn_name, target, progress)

    @server.feature(FINGERPRINT)
    @handler
    async def fingerprint(ls: KeraLanguageServer, params):
        (uri,) = _params(params, ("uri",), FINGERPRINT)

        def job():
            doc = ls.kera.get(uri)
            if doc is None:
                raise RequestFailed(f"{uri} is not open")
            return targets.fingerprint_report(doc, doc.analysis())

        return await ls.run(job)

    @server.feature(T.TEXT_DOCUMENT_CODE_LENS, T.CodeLensOptions(resolve_provider=False))
    @handler
    async def code_lens(ls: KeraLanguageServer, params: T.CodeLensParams):
        uri, enc = params.text_document.uri, ls.encoding

        same_bits = ls.settings.same_bits_enabled

        def fn(doc, a):
            idx = a.line_index
            lenses = [
                T.CodeLens(
                    range=convert.range_of(idx, lens.span, enc),
                    command=T.Command(
                        title=lens.title,
                        command=SHOW_LOWERING,
                        arguments=[uri, lens.function, lens.target],
                    ),
                )
                for lens in targets.code_lenses(a)
            ]
            return lenses, lens_rows(a, enc) if same_bits else []

        lenses, rows = await ls.query(uri, fn, default=([], []))
        # the same-bits lens of each exported function (features/same_bits.py), last
        return lenses + ls.same_bits.lenses(uri, rows)

    async def show_lowering(ls: KeraLanguageServer, *args):
        uri, fn_name, target = string_args(list(args), 3, SHOW_LOWERING)
        return await lowering_result(ls, uri, fn_name, target)

    # Registered once `initialize` has computed the capabilities, so it is *not* advertised
    # in executeCommandProvider: VS Code's client would otherwise register a command of that
    # name itself and clash with the extension's own `kera.showLowering`.
    server.late_commands.append((SHOW_LOWERING, show_lowering))
