"""Document structure: symbols, folding ranges and selection ranges, from the syntax tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.ide.common import token_at, walk
from kera_core.ide.hover import signature_text
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import Analysis


@dataclass
class OutlineSymbol:
    name: str
    kind: str  # function | struct | field | const
    span: Span  # the whole item
    name_span: Span
    detail: str = ""
    children: list[OutlineSymbol] = field(default_factory=list)


def document_symbols(a: Analysis) -> list[OutlineSymbol]:
    if a.parse is None:
        return []
    env = a.module.env if a.module is not None else None
    out: list[OutlineSymbol] = []
    for item in ast.SourceFile(a.parse.tree).items:
        name = item.name
        if name is None or not name.text:
            continue
        if isinstance(item, ast.Fn):
            sig = env.fns.get(name.text) if env is not None else None
            detail = signature_text(sig) if sig is not None and sig.span == item.span else ""
            out.append(OutlineSymbol(name.text, "function", item.span, name.span, detail))
        elif isinstance(item, ast.Struct):
            sym = OutlineSymbol(name.text, "struct", item.span, name.span)
            for f in item.fields:
                if f.name is not None and f.name.text:
                    ty = str(f.type.syntax).strip() if f.type is not None else ""
                    sym.children.append(
                        OutlineSymbol(f.name.text, "field", f.span, f.name.span, ty)
                    )
            out.append(sym)
        elif isinstance(item, ast.Const):
            ty = str(item.type.syntax).strip() if item.type is not None else ""
            out.append(OutlineSymbol(name.text, "const", item.span, name.span, ty))
    return out


@dataclass(frozen=True)
class Fold:
    start_line: int
    end_line: int
    kind: str  # region | comment


_FOLDABLE = frozenset(
    {K.BLOCK, K.FIELD_LIST, K.STRUCT_LIT_FIELD_LIST, K.PARAM_LIST, K.ARG_LIST, K.ARRAY_EXPR}
)


def folding_ranges(a: Analysis) -> list[Fold]:
    """Blocks and lists spanning lines (closing line kept visible) and runs of comments."""
    if a.parse is None:
        return []
    idx = a.line_index
    out: list[Fold] = []
    seen: set[int] = set()
    run_start = run_end = -1
    for el, off, _ in walk(a.parse.green):
        if el.is_token:
            if el.kind in (K.COMMENT, K.DOC_COMMENT):
                first = idx.to_utf8(off)[0]
                last = idx.to_utf8(off + el.text_len)[0]
                if run_start >= 0 and first == run_end + 1:
                    run_end = last
                else:
                    if run_end > run_start >= 0:
                        out.append(Fold(run_start, run_end, "comment"))
                    run_start, run_end = first, last
            continue
        if el.kind in _FOLDABLE:
            first = idx.to_utf8(off)[0]
            last = idx.to_utf8(off + el.text_len)[0] - 1
            if last > first and first not in seen:
                seen.add(first)
                out.append(Fold(first, last, "region"))
    if run_end > run_start >= 0:
        out.append(Fold(run_start, run_end, "comment"))
    out.sort(key=lambda f: (f.start_line, f.end_line))
    return out


MAX_SELECTION_LEVELS = 128
"""Longest selection chain answered: the innermost levels, then the whole file. A long
chain such as ``a + a + … + a`` is a tree thousands of levels deep; nobody expands a
selection that often, and the answer is serialised as nested JSON."""


def selection_chain(a: Analysis, offset: int) -> list[Span]:
    """Spans to grow a selection through, innermost first: the token, then its ancestors
    (at most :data:`MAX_SELECTION_LEVELS`; the last one is always the outermost)."""
    if a.parse is None:
        return [Span(offset, offset)]
    tok = token_at(a, offset)
    if tok is None:
        return [Span(offset, offset)]
    chain: list[Span] = []
    if not tok.kind.is_trivia:
        chain.append(tok.span)
    for anc in tok.ancestors():
        s = anc.span
        if not chain or (s != chain[-1] and s.covers(chain[-1])):
            chain.append(s)
    if len(chain) > MAX_SELECTION_LEVELS:
        chain[MAX_SELECTION_LEVELS - 1 :] = [chain[-1]]
    return chain or [Span(offset, offset)]
