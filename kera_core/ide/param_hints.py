"""Parameter-name inlay hints at call sites of user functions, and hint tooltips.

`saxpy(2.0, x, y)` shows `a:` before `2.0`; no hint where the argument already is the
parameter's name (`x`, or `&x` / `&mut x`). Builtins get none: their parameter labels
describe types (`x: F | F[S]`), not names worth repeating at every call.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide.common import local_type, locals_of, usable, use_at
from kera_core.ide.hover import signature_text
from kera_core.ir.types import Ref, Tensor, Type, display_dim
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import Analysis


@dataclass(frozen=True)
class ParamHint:
    offset: int  # the start of the argument
    name: str  # the parameter's name
    function: str
    index: int


def _arg_name(e: ast.Expr) -> str | None:
    while isinstance(e, ast.RefExpr) and e.operand is not None:
        e = e.operand
    if isinstance(e, ast.PathExpr) and e.name is not None:
        return e.name.text
    return None


def parameter_hints(a: Analysis, span: Span) -> list[ParamHint]:
    if a.module is None or a.parse is None:
        return []
    env = a.module.env
    out: list[ParamHint] = []
    for sig in a.sigs_between(span.start, span.end):
        body = sig.ast.body
        if body is None:
            continue
        for n in body.syntax.descendants():
            if n.kind != K.CALL_EXPR:
                continue
            call = ast.CallExpr(n)
            callee = call.callee
            if not isinstance(callee, ast.PathExpr) or callee.name is None:
                continue
            u = use_at(a, callee.name.span)
            target = env.fns.get(u.name) if u is not None and u.kind == "fn" else None
            if target is None:
                continue
            for i, arg in enumerate(call.args):
                if i >= len(target.param_names):
                    break
                pname = target.param_names[i]
                start = arg.span.start
                if not (span.start <= start <= span.end) or _arg_name(arg) == pname:
                    continue
                out.append(ParamHint(start, pname, target.name, i))
    out.sort(key=lambda h: h.offset)
    return out


def parameter_tooltip(a: Analysis, function: str, index: int) -> str | None:
    """Markdown: the parameter's declaration and the function's signature."""
    sig = a.module.env.fns.get(function) if a.module is not None else None
    if sig is None or not 0 <= index < len(sig.param_names):
        return None
    t = sig.type.params[index].display(sig.dim_names)
    parts = [
        f"parameter `{sig.param_names[index]}: {t}` of",
        f"```kera\n{signature_text(sig)}\n```",
    ]
    if sig.doc:
        parts.append(sig.doc)
    return "\n\n".join(parts)


def type_tooltip(t: Type, dims: tuple[str, ...], name: str) -> str:
    """Markdown: the inferred type of binding ``name``, with a tensor's shape and space."""
    parts = [f"`{name}` has the inferred type", f"```kera\n{t.display(dims)}\n```"]
    inner = t.inner if isinstance(t, Ref) else t
    if isinstance(inner, Tensor):
        shape = ", ".join(display_dim(d, dims) for d in inner.shape)
        parts.append(f"shape `[{shape}]` (rank {len(inner.shape)}), memory space `@{inner.space}`")
    return "\n\n".join(parts)


def binding_tooltip(a: Analysis, offset: int) -> str | None:
    """The tooltip of the type hint after the `let` name that ends at ``offset``."""
    sig = a.sig_at(offset)
    if sig is None or a.module is None:
        return None
    for loc in locals_of(sig.ast).values():
        if loc.kind == "local" and loc.span.end == offset:
            t = usable(local_type(a, a.module.functions.get(sig.name), loc))
            return None if t is None else type_tooltip(t, sig.dim_names, loc.name)
    return None
