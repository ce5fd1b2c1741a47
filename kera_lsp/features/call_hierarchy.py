"""Call hierarchy: ``prepareCallHierarchy``, ``callHierarchy/incomingCalls`` and
``outgoingCalls``.

An item's ``data`` is ``{"uri", "name"}``; incoming calls are looked for in every document
that can see the item's function (today: its own, Kera has no imports yet), so calls across
files only need :func:`_documents_seeing` to grow.
"""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import calls as ide
from kera_core.ide.hover import signature_text
from kera_core.sema.env import FnSig
from kera_core.workspace import Analysis
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler


def _item(uri: str, a: Analysis, sig: FnSig, enc: str) -> T.CallHierarchyItem:
    idx = a.line_index
    return T.CallHierarchyItem(
        name=sig.name,
        kind=T.SymbolKind.Function,
        uri=uri,
        range=convert.range_of(idx, sig.span, enc),
        selection_range=convert.range_of(idx, sig.name_span, enc),
        detail=signature_text(sig),
        data={"uri": uri, "name": sig.name},
    )


def _target(item: T.CallHierarchyItem) -> tuple[str, str]:
    data = item.data if isinstance(item.data, dict) else {}
    uri = data.get("uri") if isinstance(data.get("uri"), str) else item.uri
    name = data.get("name") if isinstance(data.get("name"), str) else item.name
    return uri, name


def _documents_seeing(ls: KeraLanguageServer, uri: str) -> list[str]:
    """The open documents whose calls can name the functions of ``uri`` (by resolution:
    the workspace index's ``files_seeing``, today ``uri`` alone)."""
    index = getattr(ls, "index", None)
    uris = index.files_seeing(uri) if index is not None else [uri]
    return [u for u in uris if ls.kera.get(u) is not None]


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY)
    @handler
    async def prepare(ls: KeraLanguageServer, params: T.CallHierarchyPrepareParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            sig = ide.function_at(a, convert.offset_of(a.line_index, params.position, enc))
            return None if sig is None else [_item(uri, a, sig, enc)]

        return await ls.query(uri, fn)

    @server.feature(T.CALL_HIERARCHY_INCOMING_CALLS)
    @handler
    async def incoming(ls: KeraLanguageServer, params: T.CallHierarchyIncomingCallsParams):
        uri, name = _target(params.item)
        enc = ls.encoding

        def job():
            out = []
            for caller_uri in _documents_seeing(ls, uri):
                doc = ls.kera.get(caller_uri)
                if doc is None:
                    continue
                a = doc.analysis()
                if a.module is None:
                    continue
                idx = a.line_index
                for caller, spans in ide.incoming(a, name).items():
                    sig = a.module.env.fns[caller]
                    out.append(
                        T.CallHierarchyIncomingCall(
                            from_=_item(caller_uri, a, sig, enc),
                            from_ranges=[convert.range_of(idx, s, enc) for s in spans],
                        )
                    )
            return out

        return await ls.run(job)

    @server.feature(T.CALL_HIERARCHY_OUTGOING_CALLS)
    @handler
    async def outgoing(ls: KeraLanguageServer, params: T.CallHierarchyOutgoingCallsParams):
        uri, name = _target(params.item)
        enc = ls.encoding

        def fn(doc, a):
            if a.module is None:
                return []
            idx = a.line_index
            return [
                T.CallHierarchyOutgoingCall(
                    to=_item(uri, a, a.module.env.fns[callee], enc),
                    from_ranges=[convert.range_of(idx, s, enc) for s in spans],
                )
                for callee, spans in ide.outgoing(a, name).items()
                if a.module.env.is_local(callee)  # an imported callee's item is in its file
            ]

        return await ls.query(uri, fn, default=[])
