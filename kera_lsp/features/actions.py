"""Code actions (quick fixes from diagnostics, "Compile `f` to <target>") and the
``kera.compileToTarget`` command."""

from __future__ import annotations

from lsprotocol import types as T
from pygls.exceptions import JsonRpcRequestCancelled

from kera_core.ide import targets
from kera_lsp import convert
from kera_lsp.features.navigation import workspace_edit
from kera_lsp.features.progress import Progress
from kera_lsp.server import KeraLanguageServer, RequestFailed, handler

COMPILE = "kera.compileToTarget"
SHOW_LOWERING = "kera.showLowering"
COMPILE_KIND = "source.compile"


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
        T.CodeActionOptions(code_action_kinds=[T.CodeActionKind.QuickFix, COMPILE_KIND]),
    )
    @handler
    async def code_action(ls: KeraLanguageServer, params: T.CodeActionParams):
        uri, enc = params.text_document.uri, ls.encoding
        only = params.context.only if params.context else None
        caps = ls.client_capabilities
        versioned = bool(
            caps
            and caps.workspace
            and caps.workspace.workspace_edit
            and caps.workspace.workspace_edit.document_changes
        )

        def fn(doc, a):
            idx = a.line_index
            span = convert.span_of(idx, params.range, enc)
            out: list[T.CodeAction] = []
            if _wanted(T.CodeActionKind.QuickFix, only):
                for d in a.diagnostics:
                    if d.fix is None or d.span.start > span.end or span.start > d.span.end:
                        continue
                    edits = [convert.text_edit(idx, e.span, e.new_text, enc) for e in d.fix.edits]
                    out.append(
                        T.CodeAction(
                            title=d.fix.title,
                            kind=T.CodeActionKind.QuickFix,
                            diagnostics=[convert.diagnostic(d, idx, enc, uri)],
                            edit=workspace_edit(uri, a.version, edits, versioned),
                            is_preferred=True,
                        )
                    )
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

        return await ls.query(uri, fn, default=[])

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
