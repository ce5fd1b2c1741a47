"""Signature help: the function or builtin whose argument list holds the cursor."""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide import builtins as B
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import Analysis


@dataclass(frozen=True)
class SignatureInfo:
    label: str
    params: list[tuple[int, int]]  # [start, end) of each parameter inside ``label`` (characters)
    active: int
    doc: str = ""


def _label(name: str, dims: tuple[str, ...], params: list[str], tail: str) -> tuple[str, list]:
    head = f"fn {name}" + (f"[{', '.join(dims)}]" if dims else "") + "("
    offsets = []
    s = head
    for i, p in enumerate(params):
        if i:
            s += ", "
        offsets.append((len(s), len(s) + len(p)))
        s += p
    return s + ")" + tail, offsets


def signature_help(a: Analysis, offset: int) -> SignatureInfo | None:
    if a.parse is None:
        return None
    tok = a.parse.tree.token_at_offset(offset)
    if tok is None:
        return None
    if tok.span.start == offset and offset > 0:  # the cursor sits right after the token to its left
        tok = a.parse.tree.token_at_offset(offset - 1) or tok
    for anc in tok.ancestors():
        if anc.kind != K.ARG_LIST or anc.parent is None or anc.parent.kind != K.CALL_EXPR:
            continue
        lparen = anc.token_of_kind(K.L_PAREN)
        rparen = anc.token_of_kind(K.R_PAREN)
        if (
            lparen is None
            or offset < lparen.span.end
            or (rparen is not None and offset > rparen.span.start)
        ):
            continue
        active = sum(1 for t in anc.child_tokens() if t.kind == K.COMMA and t.span.end <= offset)
        callee = ast.CallExpr(anc.parent).callee
        if not isinstance(callee, ast.PathExpr) or callee.name is None:
            return None
        return _for_name(a, callee.name.text, active)
    return None


def _for_name(a: Analysis, name: str, active: int) -> SignatureInfo | None:
    env = a.module.env if a.module is not None else None
    sig = env.fns.get(name) if env is not None else None
    if sig is not None:
        dims = sig.dim_names
        params = [
            f"{n}: {t.display(dims)}"
            for n, t in zip(sig.param_names, sig.type.params, strict=False)
        ]
        res = sig.type.result.display(dims)
        tail = (f" -> {res}" if res != "()" else "") + (
            " ! " + ", ".join(sig.type.effects) if sig.type.effects else ""
        )
        label, offs = _label(name, dims, params, tail)
        return SignatureInfo(label, offs, min(active, max(len(params) - 1, 0)), sig.doc)
    info = B.INFO.get(name)
    if info is None:
        return None
    tail = f" -> {info.result}" + (f" ! {info.effect}" if info.effect else "")
    label, offs = _label(name, (), list(info.params), tail)
    return SignatureInfo(label, offs, min(active, max(len(info.params) - 1, 0)), info.doc)
