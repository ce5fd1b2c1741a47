"""Call hierarchy: ``prepareCallHierarchy``, ``callHierarchy/incomingCalls`` and
``outgoingCalls``.

An item's ``data`` is ``{"uri", "name"}``: the file that defines the function and its name
there. In a package whose files import from each other, incoming calls come from every file
of the package (an importer's calls under any alias), open or on disk, and an outgoing call
to an imported function is an item in that function's own file
(:mod:`kera_core.ide.package_calls`); otherwise they come from the document itself.
"""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import calls as ide
from kera_core.ide import package_calls
from kera_core.ide.hover import signature_text
from kera_core.sema.env import FnSig
from kera_core.source import LineIndex
from kera_core.workspace import Analysis, uri_path
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler


def _item(uri: str, a: Analysis | LineIndex, sig: FnSig, enc: str) -> T.CallHierarchyItem:
    idx = a if isinstance(a, LineIndex) else a.line_index
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


def _imported_item(
    ls: KeraLanguageServer, a: Analysis, name: str, enc: str
) -> T.CallHierarchyItem | None:
    """The item of ``name`` in the file that defines it, when ``a``'s file imports it."""
    home = package_calls.home_of(a, name)
    if home is None:
        return None
    where = ls.kera.locate(home[0])
    return None if where is None else _item(where[0], where[1], home[1], enc)


def setup(server: KeraLanguageServer) -> None:
    @server.feature(T.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY)
    @handler
    async def prepare(ls: KeraLanguageServer, params: T.CallHierarchyPrepareParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            sig = ide.function_at(a, convert.offset_of(a.line_index, params.position, enc))
            if sig is None:
                return None
            return [_imported_item(ls, a, sig.name, enc) or _item(uri, a, sig, enc)]

        return await ls.query(uri, fn)

    @server.feature(T.CALL_HIERARCHY_INCOMING_CALLS)
    @handler
    async def incoming(ls: KeraLanguageServer, params: T.CallHierarchyIncomingCallsParams):
        uri, name = _target(params.item)
        enc = ls.encoding

        def job():
            path = uri_path(uri)
            pkg = package_calls.package_of(ls.kera, path) if path is not None else None
            if pkg is not None:  # every file of the package, open or not
                out = []
                for site in package_calls.callers(pkg, path, name):  # type: ignore[arg-type]
                    where = ls.kera.locate(site.path)
                    if where is not None:
                        caller_uri, idx = where
                        out.append(
                            T.CallHierarchyIncomingCall(
                                from_=_item(caller_uri, idx, site.sig, enc),
                                from_ranges=[convert.range_of(idx, s, enc) for s in site.spans],
                            )
                        )
                return out
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
            out = []
            for callee, spans in ide.outgoing(a, name).items():
                item = _imported_item(ls, a, callee, enc)  # in its own file
                if item is None and a.module.env.is_local(callee):
                    item = _item(uri, a, a.module.env.fns[callee], enc)
                if item is not None:
                    ranges = [convert.range_of(idx, s, enc) for s in spans]
                    out.append(T.CallHierarchyOutgoingCall(to=item, from_ranges=ranges))
            return out

        if ls.kera.get(uri) is not None:
            return await ls.query(uri, fn, default=[])

        def closed():  # an item in a package file not open in the editor
            path = uri_path(uri)
            pkg = package_calls.package_of(ls.kera, path) if path is not None else None
            a = package_calls.analysis_of(pkg, path) if pkg is not None else None  # type: ignore[arg-type]
            return [] if a is None else fn(None, a)

        return await ls.run(closed)
