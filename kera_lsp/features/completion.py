"""Completion and signature help."""

from __future__ import annotations

from lsprotocol import types as T

from kera_core.ide import completion as ide
from kera_core.ide import signature
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler

KINDS = {
    "variable": T.CompletionItemKind.Variable,
    "parameter": T.CompletionItemKind.Variable,
    "dim": T.CompletionItemKind.TypeParameter,
    "function": T.CompletionItemKind.Function,
    "builtin": T.CompletionItemKind.Function,
    "struct": T.CompletionItemKind.Struct,
    "field": T.CompletionItemKind.Field,
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
    "field": 0,
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
        T.TEXT_DOCUMENT_COMPLETION, T.CompletionOptions(trigger_characters=[".", ":", "@"])
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

        def fn(doc, a):
            idx = a.line_index
            offset = convert.offset_of(idx, params.position, enc)
            span, _ = ide.completion_prefix(a, offset)
            rng = convert.range_of(idx, span, enc)
            items = []
            for c in ide.complete(a, offset):
                doc_value = None
                if c.doc:
                    doc_value = (
                        T.MarkupContent(kind=T.MarkupKind.Markdown, value=c.doc)
                        if markdown
                        else c.doc
                    )
                items.append(
                    T.CompletionItem(
                        label=c.label,
                        kind=KINDS.get(c.kind, T.CompletionItemKind.Text),
                        detail=c.detail or None,
                        documentation=doc_value,
                        sort_text=f"{_ORDER.get(c.kind, 5)}{c.label}",
                    )
                )
            # One shared edit range where the client takes it; otherwise the client's own
            # word range, which is the same identifier prefix (per-item text edits would
            # triple the size of a 600-item list).
            defaults = T.CompletionItemDefaults(edit_range=rng) if edit_range_default else None
            return T.CompletionList(is_incomplete=False, items=items, item_defaults=defaults)

        return await ls.query(params.text_document.uri, fn)

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
