"""Document highlights: every occurrence of the symbol under the cursor, with its kind.

A binding (local, parameter, loop variable) is *written* where it is bound (`let x = …`,
the parameter, the loop variable) and where it is the target of an assignment (`x = …`,
`x += …`, `x[i] = …`, `x.f = …`); every other occurrence is a *read*. A field is written
where it is assigned to and read elsewhere. Items (functions, structs, constants) and a
field's declaration are plain text occurrences.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide.common import LOCAL_KINDS, symbol_at
from kera_core.ide.navigation import references
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.tree import SyntaxNode
from kera_core.workspace import Analysis

READ, WRITE, TEXT = "read", "write", "text"


@dataclass(frozen=True)
class Highlight:
    span: Span
    kind: str  # read | write | text


def _assigned(node: SyntaxNode) -> bool:
    """Is the place expression ``node`` (or one it is the base of) an assignment's target?"""
    while node.parent is not None:
        parent = node.parent
        if parent.kind in (K.INDEX_EXPR, K.FIELD_EXPR):
            base = ast.IndexExpr(parent).base if parent.kind == K.INDEX_EXPR else None
            if parent.kind == K.FIELD_EXPR:
                base = ast.FieldExpr(parent).base
            if base is None or base.syntax.span != node.span:
                return False  # an index or a field name, not the place written
            node = parent
            continue
        if parent.kind == K.PAREN_EXPR:
            node = parent
            continue
        if parent.kind == K.ASSIGN_EXPR:
            lhs = ast.AssignExpr(parent).lhs
            return lhs is not None and lhs.syntax.span == node.span
        return False
    return False


def _use_is_write(a: Analysis, span: Span, field: bool) -> bool:
    assert a.parse is not None
    tok = a.parse.tree.token_at_offset(span.start)
    ref = tok.parent if tok is not None else None
    if ref is None or ref.kind != K.NAME_REF or ref.parent is None:
        return False
    place = ref.parent
    if field:  # `p.x = …`: the FIELD_EXPR whose field is this name
        return place.kind == K.FIELD_EXPR and _assigned(place)
    return place.kind == K.PATH_EXPR and _assigned(place)


def document_highlights(a: Analysis, offset: int) -> list[Highlight]:
    if a.parse is None or a.module is None:
        return []
    sym = symbol_at(a, offset)
    if sym is None or sym.def_span is None:
        return []
    out = []
    for span in references(a, offset, True):
        if sym.kind in LOCAL_KINDS:
            kind = WRITE if span == sym.def_span or _use_is_write(a, span, False) else READ
        elif sym.kind == "field":
            if span == sym.def_span:
                kind = TEXT
            else:
                kind = WRITE if _use_is_write(a, span, True) else READ
        else:
            kind = TEXT
        out.append(Highlight(span, kind))
    return out
