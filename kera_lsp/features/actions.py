"""Code actions (quick fixes from diagnostics, "Compile `f` to <target>", the refactorings
of ``kera_core/ide/refactor.py`` with ``codeAction/resolve``) and the
``kera.compileToTarget`` command."""

from __future__ import annotations

from lsprotocol import types as T
from pygls.exceptions import JsonRpcRequestCancelled

from kera_core.ide import refactor, targets
from kera_core.source import Span
from kera_lsp import convert
from kera_lsp.features.navigation import workspace_edit
from kera_lsp.features.progress import Progress
from kera_lsp.server import KeraLanguageServer, RequestFailed, handler

COMPILE = "kera.compileToTarget"
SHOW_LOWERING = "kera.showLowering"
COMPILE_KIND = "source.compile"
EXTRACT_KIND = refactor.EXTRACT_KIND  # refactor.extract.function
INLINE_KIND = refactor.INLINE_KIND  # refactor.inline


def _wanted(kind: str, only: list | None) -> bool:
    if not only:
        return True
    return any(kind == o or kind.startswith(str(o) + ".") for o in only)


def string_args(args, n: int, command: str) -> list[str]:
    if (
        not isinstance(args, list | tuple)
        or len(args) < n
        or not all(isinstance(x, str) for x in args[:n])
    ):
        raise RequestFailed(f"{command} takes {n} string arguments: [uri, function, target]")
    return list(args[:n])


def setup(server: KeraLanguageServer) -> None:
    @server.feature(
        T.TEXT_DOCUMENT_CODE_ACTION,
        T.CodeActionOptions(
            code_action_kinds=[T.CodeActionKind.QuickFix, EXTRACT_KIND, INLINE_KIND, COMPILE_KIND],
            resolve_provider=True,
        ),
    )
    @handler
    async def code_action(ls: KeraLanguageServer, params: T.CodeActionParams):
        uri, enc = params.text_document.uri, ls.encoding
        only = params.context.only if params.context else None
        versioned = _versioned(ls)
        lazy = _resolves_edits(ls)

        def fn(doc, a):
            idx = a.line_index
            span = convert.span_of(idx, params.range, enc)
            out: list[T.CodeAction] = []
            if _wanted(T.CodeActionKind.QuickFix, only):
                for d in a.diagnostics:
                    if d.fix is None or d.span.start > span.end or span.start > d.span.end:
                        continue
                    edits = [convert.text_edit(idx, e.span, e.new_text, enc) for e in d.fix.edits]
                    # a missing effect that callers would then lack too: the fix for the
                    # whole chain is the preferred one
                    chain = refactor.plan_effect_chain(a, d)
                    out.append(
                        T.CodeAction(
                            title=d.fix.title,
                            kind=T.CodeActionKind.QuickFix,
                            diagnostics=[convert.diagnostic(d, idx, enc, uri)],
                            edit=workspace_edit(uri, a.version, edits, versioned),
                            is_preferred=chain is None,
                        )
                    )
                    if chain is not None:
                        act = T.CodeAction(
                            title=chain.title,
                            kind=T.CodeActionKind.QuickFix,
                            diagnostics=[convert.diagnostic(d, idx, enc, uri)],
                            is_preferred=True,
                            data=_data(uri, a.version, "effects", d.span),
                        )
                        out.append(act if lazy else _resolve(ls, doc, a, act))
            out += [
                act if lazy else _resolve(ls, doc, a, act)
                for act in _refactorings(a, uri, span, only)
            ]
            if _wanted(COMPILE_KIND, only):
                for act in targets.compile_actions(a, span):
                    out.append(
                        T.CodeAction(
                            title=act.title,
                            kind=COMPILE_KIND,
                            command=T.Command(
                                title=act.title,
                                command=COMPILE,
                                arguments=[uri, act.function, act.target],
                            ),
                        )
                    )
            return out

        return [x for x in await ls.query(uri, fn, default=[]) if x is not None]

    @server.feature(T.CODE_ACTION_RESOLVE)
    @handler
    async def code_action_resolve(ls: KeraLanguageServer, params: T.CodeAction):
        data = params.data if isinstance(params.data, dict) else None
        if data is None or not isinstance(data.get("uri"), str):
            return params  # nothing to resolve (not one of ours, or already resolved)
        uri = data["uri"]

        def job():
            doc = ls.kera.get(uri)
            if doc is None:
                raise RequestFailed(f"{uri} is not open")
            a = doc.analysis()
            if a.version != data.get("version"):
                raise RequestFailed("the document has changed since this action was offered")
            act = _resolve(ls, doc, a, params, strict=True)
            assert act is not None
            return act

        return await ls.run(job)

    @server.command(COMPILE)
    async def compile_to_target(ls: KeraLanguageServer, *args):
        uri, fn_name, target = string_args(list(args), 3, COMPILE)
        out_dir = ls.output_dir(uri)
        # Cancellable while it waits for the worker; once the build runs it runs to its end.
        progress = await Progress.start(
            ls, f"Kera: compiling `{fn_name}` to {target}", cancellable=True
        )

        def job():
            if progress.cancelled:
                raise JsonRpcRequestCancelled(f"compiling `{fn_name}` was cancelled")
            doc = ls.kera.get(uri)
            if doc is None:
                raise RequestFailed(f"{uri} is not open")
            try:
                return targets.compile_to(doc.analysis(), fn_name, target, out_dir)
            except targets.TargetError as e:
                raise RequestFailed(str(e)) from None

        try:
            result = await ls.run(job)
        except JsonRpcRequestCancelled:
            progress.end("cancelled")
            raise
        except RequestFailed as e:
            progress.end(e.message)
            ls.window_show_message(T.ShowMessageParams(type=T.MessageType.Error, message=e.message))
            raise
        except OSError as e:
            msg = f"cannot write the artifact: {e}"
            progress.end(msg)
            ls.window_show_message(T.ShowMessageParams(type=T.MessageType.Error, message=msg))
            raise RequestFailed(msg) from None
        progress.report(f"wrote {result['path']}", percentage=100)
        progress.end(f"{result['bytes']} bytes")
        ls.window_show_message(
            T.ShowMessageParams(
                type=T.MessageType.Info,
                message=f"Compiled `{fn_name}` to {target}: {result['path']} ({result['fingerprint']})",
            )
        )
        return result


# --- refactorings ---------------------------------------------------------------------------


def _versioned(ls: KeraLanguageServer) -> bool:
    caps = ls.client_capabilities
    return bool(
        caps
        and caps.workspace
        and caps.workspace.workspace_edit
        and caps.workspace.workspace_edit.document_changes
    )


def _resolves_edits(ls: KeraLanguageServer) -> bool:
    """Can the client resolve a code action's edit (``codeAction/resolve``)? If not, the
    edits are computed with the list."""
    caps = ls.client_capabilities
    ca = caps and caps.text_document and caps.text_document.code_action
    rs = ca and ca.resolve_support
    return bool(rs and "edit" in (rs.properties or []) and ca.data_support)


def _data(uri: str, version: int, what: str, span: Span) -> dict:
    return {"uri": uri, "version": version, "refactor": what, "start": span.start, "end": span.end}


def _refactorings(a, uri: str, span: Span, only) -> list[T.CodeAction]:
    """The refactorings possible at ``span`` (plans only: the edits come with resolve)."""
    out = []
    if a.module is None:
        return out
    if _wanted(EXTRACT_KIND, only) and span.start < span.end:
        try:
            plan = refactor.plan_extract(a, span)
            refactor.extract_edits(a, plan)  # refusals (two results, …); not checked yet
        except refactor.RefactorError:
            pass
        else:
            out.append(
                T.CodeAction(
                    title=plan.title,
                    kind=EXTRACT_KIND,
                    data=_data(uri, a.version, "extract", span),
                )
            )
    if _wanted(INLINE_KIND, only):
        try:
            plan = refactor.plan_inline(a, span.start)
        except refactor.RefactorError:
            pass
        else:
            out.append(
                T.CodeAction(
                    title=plan.title,
                    kind=INLINE_KIND,
                    data=_data(uri, a.version, "inline", Span(span.start, span.start)),
                )
            )
    return out


def _resolve(ls: KeraLanguageServer, doc, a, act: T.CodeAction, strict: bool = False):
    """``act`` with its edit. A refused refactoring raises RequestFailed when ``strict``
    (resolve), and is dropped (None) otherwise (edits computed with the list)."""
    data = act.data if isinstance(act.data, dict) else {}
    what = data.get("refactor")
    start, end = data.get("start"), data.get("end")
    if not isinstance(start, int) or not isinstance(end, int):
        raise RequestFailed("malformed code action data")
    span = Span(start, end)
    try:
        if what == "extract":
            plan = refactor.plan_extract(a, span)
            edits, name = refactor.extract_edits(a, plan)
            check = (plan.sig.name, [name])
        elif what == "inline":
            plan = refactor.plan_inline(a, span.start)
            edits, check = refactor.inline_edits(a, plan), (plan.sig.name, [])
        elif what == "effects":
            diag = next((d for d in a.diagnostics if d.code == "K0501" and d.span == span), None)
            chain = refactor.plan_effect_chain(a, diag) if diag is not None else None
            if chain is None:
                raise refactor.RefactorError("the missing effect is no longer reported here")
            edits, check = refactor.effect_edits(a, chain), None
        else:
            raise refactor.RefactorError(f"unknown refactoring {what!r}")
        if check:
            errors = refactor.new_errors(a, edits, *check)
            if errors:
                d = errors[0]
                raise refactor.RefactorError(f"the result would not check: {d.code} {d.message}")
    except refactor.RefactorError as e:
        if strict:
            raise RequestFailed(f"{act.title}: {e}") from None
        return None
    enc, idx = ls.encoding, a.line_index
    lsp_edits = [convert.text_edit(idx, e.span, e.new_text, enc) for e in edits]
    act.edit = workspace_edit(a.uri, a.version, lsp_edits, _versioned(ls))
    return act
