"""Inlay hints: the type sema inferred for each `let` without an annotation (for each name
of a tuple pattern, `let (s, c) = …`).

The type is displayed as the user would write it, so a tensor that lives outside host
memory shows its space (`: f32[N] @device`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide.common import Local, local_type
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import Analysis


@dataclass(frozen=True)
class InlayHint:
    offset: int  # where the hint goes (after the name)
    label: str
    kind: str = "type"


def inlay_hints(a: Analysis, span: Span) -> list[InlayHint]:
    if a.module is None or a.parse is None:
        return []
    out: list[InlayHint] = []
    for found in a.sigs_between(span.start, span.end):
        lf = a.module.functions.get(found.name)
        if lf is None:
            continue
        sig = lf.sig
        body = sig.ast.body
        if body is None:
            continue
        for n in body.syntax.descendants():
            if n.kind != K.LET_STMT or not (span.start <= n.span.start <= span.end):
                continue
            st = ast.LetStmt(n)
            if st.type is not None:
                continue
            pat = st.pattern
            if pat is not None:  # `let (s, c) = kahan(x);`: a hint after each name
                for b in pat.binds():
                    if b.name is None or b.name.text == "_":
                        continue
                    loc = Local(b.name.text, "local", b.name.span, b.is_mut, b.syntax)
                    t = local_type(a, lf, loc)
                    if t is not None:
                        out.append(InlayHint(b.name.span.end, ": " + t.display(sig.dim_names)))
                continue
            if st.name is None:
                continue
            loc = Local(st.name.text, "local", st.name.span, st.is_mut, n)
            t = local_type(a, lf, loc)
            if t is not None:
                out.append(InlayHint(st.name.span.end, ": " + t.display(sig.dim_names)))
    out.sort(key=lambda h: h.offset)
    return out
