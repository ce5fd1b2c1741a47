"""Inlay hints: inferred `let` types (with the memory space of non-host tensors) and
parameter names at call sites of user functions; ``inlayHint/resolve`` adds the tooltip.

A client that resolves ``tooltip`` (``inlayHint.resolveSupport``) gets hints without
tooltips and each hint's ``data`` (``{"uri", "version", "kind", …}``) to resolve it by;
other clients get the tooltips at once.
"""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import inlay as ide
from kera_core.ide import param_hints
from kera_core.workspace import Analysis
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler


def _tooltip(a: Analysis, data: dict) -> str | None:
    if data.get("kind") == "type" and isinstance(data.get("offset"), int):
        return param_hints.binding_tooltip(a, data["offset"])
    if (
        data.get("kind") == "parameter"
        and isinstance(data.get("function"), str)
        and isinstance(data.get("index"), int)
    ):
        return param_hints.parameter_tooltip(a, data["function"], data["index"])
    return None


def _markdown(text: str | None) -> T.MarkupContent | None:
    return None if text is None else T.MarkupContent(kind=T.MarkupKind.Markdown, value=text)


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_INLAY_HINT, T.InlayHintOptions(resolve_provider=True))
    @handler
    async def inlay_hint(ls: KeraLanguageServer, params: T.InlayHintParams):
        uri, enc = params.text_document.uri, ls.encoding
        caps = ls.client_capabilities
        ih = caps.text_document.inlay_hint if caps and caps.text_document else None
        lazy = bool(ih and ih.resolve_support and "tooltip" in ih.resolve_support.properties)

        def fn(doc, a):
            idx = a.line_index
            span = convert.span_of(idx, params.range, enc)
            hints: list[tuple[int, T.InlayHint]] = []
            for h in ide.inlay_hints(a, span):
                data = {"uri": uri, "version": a.version, "kind": "type", "offset": h.offset}
                hints.append(
                    (
                        h.offset,
                        T.InlayHint(
                            position=convert.position(idx, h.offset, enc),
                            label=h.label,
                            kind=T.InlayHintKind.Type,
                            data=data,
                            tooltip=None if lazy else _markdown(_tooltip(a, data)),
                        ),
                    )
                )
            for p in param_hints.parameter_hints(a, span):
                data = {
                    "uri": uri,
                    "version": a.version,
                    "kind": "parameter",
                    "function": p.function,
                    "index": p.index,
                }
                hints.append(
                    (
                        p.offset,
                        T.InlayHint(
                            position=convert.position(idx, p.offset, enc),
                            label=f"{p.name}:",
                            kind=T.InlayHintKind.Parameter,
                            padding_right=True,
                            data=data,
                            tooltip=None if lazy else _markdown(_tooltip(a, data)),
                        ),
                    )
                )
            hints.sort(key=lambda x: x[0])
            return [h for _, h in hints]

        return await ls.query(uri, fn, default=[])

    @server.feature(T.INLAY_HINT_RESOLVE)
    @handler
    async def inlay_hint_resolve(ls: KeraLanguageServer, hint: T.InlayHint):
        data = hint.data if isinstance(hint.data, dict) else None
        if data is None or not isinstance(data.get("uri"), str):
            return hint

        def job():
            doc = ls.kera.get(data["uri"])
            if doc is None or doc.version != data.get("version"):
                return None  # closed or edited since: the hint stays as it was
            return _tooltip(doc.analysis(), data)

        tip = await ls.run(job)
        if tip is not None:
            hint.tooltip = _markdown(tip)
        return hint
