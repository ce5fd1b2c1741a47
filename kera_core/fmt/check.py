"""The formatter's safety net: the output must mean exactly what the input meant.

After formatting, the output is parsed again and compared with the input:

* it must parse without errors;
* the sequence of comment texts must be identical (after the normalisation the
  formatter applies: trailing whitespace of line comments, CRLF in block comments);
* the syntax trees must be identical once trivia is ignored, up to what the style
  removes on purpose: empty statements (`;` directly in a block), the `;` after a
  block-like statement (`if c { } ;`), and the trailing comma of a list (but not of a
  one-element tuple).

This is stronger than comparing token sequences: a dropped `;` that changed how the
next statement parses would change the tree. Any difference means a formatter bug;
the caller then refuses (K0601) and leaves the file alone.
"""

from __future__ import annotations

from kera_core.diagnostics import Diagnostic, error
from kera_core.fmt.exprs import BLOCK_LIKE
from kera_core.fmt.trivia import COMMENTS, WS, normalize_comment
from kera_core.source import Span, utf8_len
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.parse import Parse, parse
from kera_core.syntax.tree import GreenNode

K = SyntaxKind

COMMA_LISTS = frozenset(
    {
        K.ARG_LIST,
        K.PARAM_LIST,
        K.INDEX_LIST,
        K.ARRAY_EXPR,
        K.DIM_PARAM_LIST,
        K.TYPE_PARAM_LIST,
        K.USE_TREE_LIST,
        K.SHAPE,
        K.STRUCT_LIT_FIELD_LIST,
        K.FIELD_LIST,
        K.TUPLE_EXPR,
        K.TUPLE_PAT,
        K.TUPLE_TYPE,
    }
)
# ... whose one-element form keeps its comma: `(x,)` is a tuple, `(x)` is not
TUPLES = frozenset({K.TUPLE_EXPR, K.TUPLE_PAT, K.TUPLE_TYPE})

_CLOSE = object()


def comments(root: GreenNode) -> list[tuple[int, str]]:
    """(byte offset, normalised text) of every comment, in order."""
    out = []
    off = 0
    for tok in root.tokens():
        if tok.kind in COMMENTS:
            out.append((off, normalize_comment(tok.text)))
        off += tok.text_len
    return out


def signature(root: GreenNode) -> list[object]:
    """The tree without trivia and without what the style may drop, as a flat list."""
    out: list[object] = []
    stack: list[object] = [root]
    while stack:
        el = stack.pop()
        if el is _CLOSE:
            out.append(_CLOSE)
            continue
        if el.is_token:  # type: ignore[attr-defined]
            out.append((el.kind, el.text))  # type: ignore[attr-defined]
            continue
        node: GreenNode = el  # type: ignore[assignment]
        kind = node.kind
        out.append(kind)
        stack.append(_CLOSE)
        kids = [c for c in node.children if c.kind is not WS and c.kind not in COMMENTS]
        if kind is K.BLOCK:
            kids = [c for c in kids if c.kind is not K.SEMI]
        elif kind is K.EXPR_STMT:
            if kids and kids[0].kind in BLOCK_LIKE and kids[-1].kind is K.SEMI:
                kids.pop()
        elif kind is K.MATCH_ARM_LIST:  # the style drops a block arm's comma, adds others'
            kids = [c for c in kids if c.kind is not K.COMMA]
        elif kind in COMMA_LISTS:
            one = kind in TUPLES and len(kids) == 4  # `(`, the element, `,`, `)`
            if len(kids) >= 2 and kids[-2].kind is K.COMMA and not one:
                del kids[-2]
        stack.extend(reversed(kids))
    return out


def _first_diff(a: list, b: list) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_output(
    before: GreenNode, after_text: str, base: int = 0
) -> tuple[Diagnostic | None, Parse]:
    """Compare the formatted text with the tree it came from. Returns a K0601
    diagnostic (spans into the input, shifted by ``base``) or None, and the new parse."""
    after = parse(after_text)
    if after.has_errors:
        d = next(d for d in after.diagnostics if d.is_error)
        return (
            error(
                "K0601",
                Span(base, base),
                "formatter refused: its output would not parse "
                f"({d.code}: {d.message}); this is a formatter bug",
            ),
            after,
        )
    old_c = comments(before)
    new_c = comments(after.green)
    if [t for _, t in old_c] != [t for _, t in new_c]:
        i = _first_diff([t for _, t in old_c], [t for _, t in new_c])
        at = old_c[i][0] if i < len(old_c) else 0
        length = utf8_len(old_c[i][1]) if i < len(old_c) else 0
        return (
            error(
                "K0601",
                Span(base + at, base + at + length),
                "formatter refused: comments would change (a comment would be lost, "
                "moved across code or altered); this is a formatter bug",
            ),
            after,
        )
    if signature(before) != signature(after.green):
        return (
            error(
                "K0601",
                Span(base, base),
                "formatter refused: the formatted code would not parse to the same "
                "program; this is a formatter bug",
            ),
            after,
        )
    return None, after
