"""Completion (with ``completionItem/resolve`` and keyword snippets) and signature help.

A client whose ``completionItem.resolveSupport`` lists ``documentation`` (``detail``) gets
items without it, and each item's ``data`` (``{"uri", "kind", "label"}``) to resolve it
by; long details (signatures of functions, builtins, structs) are the ones left out. With
``snippetSupport``, `fn`, `struct`, `for`, `if` and `while` insert snippets.
"""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import completion as ide
from kera_core.ide import completion_resolve as lazy
from kera_core.ide import signature
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler

KINDS = {
    "module": T.CompletionItemKind.Module,
    "variable": T.CompletionItemKind.Variable,
    "parameter": T.CompletionItemKind.Variable,
    "dim": T.CompletionItemKind.TypeParameter,
    "tparam": T.CompletionItemKind.TypeParameter,
    "bound": T.CompletionItemKind.Interface,
    "function": T.CompletionItemKind.Function,
    "builtin": T.CompletionItemKind.Function,
    "struct": T.CompletionItemKind.Struct,
    "field": T.CompletionItemKind.Field,
    "method": T.CompletionItemKind.Method,
    "const": T.CompletionItemKind.Constant,
    "keyword": T.CompletionItemKind.Keyword,
    "type": T.CompletionItemKind.TypeParameter,
    "space": T.CompletionItemKind.EnumMember,
    "effect": T.CompletionItemKind.EnumMember,
}
# Scope first, then items, then builtins, then keywords.
_ORDER = {
    "variable": 0,
    "parameter": 0,
    "dim": 1,
    "tparam": 1,
    "bound": 0,
    "field": 0,
    "method": 0,
    "function": 2,
    "const": 2,
    "struct": 2,
    "type": 1,
    "space": 0,
    "effect": 0,
    "builtin": 3,
    "keyword": 4,
}


def setup(server: KeraLanguageServer) -> None:
    @server.feature(
        T.TEXT_DOCUMENT_COMPLETION,
        T.CompletionOptions(trigger_characters=[".", ":", "@"], resolve_provider=True),
    )
    @handler
    async def completion(ls: KeraLanguageServer, params: T.CompletionParams):
        enc = ls.encoding
        caps = ls.client_capabilities
        ccaps = caps.text_document.completion if caps and caps.text_document else None
        item_caps = ccaps.completion_item if ccaps else None
        markdown = T.MarkupKind.Markdown in (
            (item_caps.documentation_format if item_caps else None) or []
        )
        lst = ccaps.completion_list if ccaps else None
        edit_range_default = bool(lst and lst.item_defaults and "editRange" in lst.item_defaults)
        resolvable = set(
            (
                item_caps.resolve_support.properties
                if item_caps and item_caps.resolve_support
                else None
            )
            or ()
        )
        lazy_doc = "documentation" in resolvable
        lazy_detail = "detail" in resolvable
        snippets = bool(item_caps and item_caps.snippet_support)
        uri = params.text_document.uri

        def fn(doc, a):
            idx = a.line_index
            offset = convert.offset_of(idx, params.position, enc)
            span, _ = ide.completion_prefix(a, offset)
            rng = convert.range_of(idx, span, enc)
            items = []
            for c in ide.complete(a, offset):
                doc_value = None
                if c.doc and not lazy_doc:
                    doc_value = (
                        T.MarkupContent(kind=T.MarkupKind.Markdown, value=c.doc)
                        if markdown
                        else c.doc
                    )
                detail = c.detail or None
                if lazy_detail and c.kind in lazy.LAZY_DETAIL_KINDS:
                    detail = None
                item = T.CompletionItem(
                    label=c.label,
                    kind=KINDS.get(c.kind, T.CompletionItemKind.Text),
                    detail=detail,
                    documentation=doc_value,
                    sort_text=f"{_ORDER.get(c.kind, 5)}{c.label}",
                )
                if lazy_doc or lazy_detail:
                    item.data = {"uri": uri, "kind": c.kind, "label": c.label}
                if snippets and c.kind == "keyword" and c.label in lazy.SNIPPETS:
                    item.insert_text = lazy.SNIPPETS[c.label]
                    item.insert_text_format = T.InsertTextFormat.Snippet
                    item.kind = T.CompletionItemKind.Snippet
                items.append(item)
            # One shared edit range where the client takes it; otherwise the client's own
            # word range, which is the same identifier prefix (per-item text edits would
            # triple the size of a 600-item list).
            defaults = T.CompletionItemDefaults(edit_range=rng) if edit_range_default else None
            return T.CompletionList(is_incomplete=False, items=items, item_defaults=defaults)

        return await ls.query(params.text_document.uri, fn)

    @server.feature(T.COMPLETION_ITEM_RESOLVE)
    @handler
    async def completion_resolve(ls: KeraLanguageServer, item: T.CompletionItem):
        data = item.data if isinstance(item.data, dict) else None
        if data is None or not all(isinstance(data.get(k), str) for k in ("uri", "kind", "label")):
            return item
        caps = ls.client_capabilities
        ccaps = caps.text_document.completion if caps and caps.text_document else None
        item_caps = ccaps.completion_item if ccaps else None
        markdown = T.MarkupKind.Markdown in (
            (item_caps.documentation_format if item_caps else None) or []
        )

        def job():
            doc = ls.kera.get(data["uri"])
            if doc is None:
                return None
            a = doc.analysis()
            return lazy.documentation(a, data["kind"], data["label"]), lazy.detail(
                a, data["kind"], data["label"]
            )

        got = await ls.run(job)
        if got is None:
            return item
        documentation, detail = got
        if documentation and item.documentation is None:
            item.documentation = (
                T.MarkupContent(kind=T.MarkupKind.Markdown, value=documentation)
                if markdown
                else documentation
            )
        if detail and item.detail is None:
            item.detail = detail
        return item

    @server.feature(
        T.TEXT_DOCUMENT_SIGNATURE_HELP,
        T.SignatureHelpOptions(trigger_characters=["(", ","], retrigger_characters=[","]),
    )
    @handler
    async def signature_help(ls: KeraLanguageServer, params: T.SignatureHelpParams):
        enc = ls.encoding

        def fn(doc, a):
            s = signature.signature_help(a, convert.offset_of(a.line_index, params.position, enc))
            if s is None:
                return None
            info = T.SignatureInformation(
                label=s.label,
                documentation=T.MarkupContent(kind=T.MarkupKind.Markdown, value=s.doc)
                if s.doc
                else None,
                parameters=[T.ParameterInformation(label=(b, e)) for b, e in s.params],
            )
            return T.SignatureHelp(signatures=[info], active_signature=0, active_parameter=s.active)

        return await ls.query(params.text_document.uri, fn)
