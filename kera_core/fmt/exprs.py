"""Tree -> Doc for expressions and types (a mixin of :class:`~kera_core.fmt.rules.Formatter`).

Left-recursive chains the parser builds without a depth limit (`a.b.c`, `f()()`,
`x as A as B`, `a..b..c`, `else if` ladders, same-precedence binary chains) are
walked with loops, not recursion, so their length never meets Python's recursion
limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kera_core.fmt.doc import LINE, SPACE, Doc, Group, IfBreak, concat, group, indent
from kera_core.fmt.trivia import COMMENTS, WS, El, first_token_kind, lead_doc, trail_doc
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.parser.grammar.expressions import INFIX
from kera_core.syntax.tree import GreenNode, GreenToken

if TYPE_CHECKING:
    from kera_core.fmt.trivia import Cm

K = SyntaxKind

# An `if`/`else` used as a value stays on one line only up to this width (rustfmt's
# `single_line_if_else_max_width`).
SINGLE_LINE_IF_WIDTH = 50

BLOCK_LIKE = frozenset(
    {K.BLOCK_EXPR, K.IF_EXPR, K.FOR_EXPR, K.WHILE_EXPR, K.LOOP_EXPR, K.MATCH_EXPR}
)
SPINE = frozenset({K.FIELD_EXPR, K.CALL_EXPR, K.INDEX_EXPR, K.CAST_EXPR, K.RANGE_EXPR})
PREC: dict[SyntaxKind, int] = {op: bp for op, (bp, _, kind) in INFIX.items() if kind is K.BIN_EXPR}


def _first_child(green: GreenNode, off: int) -> tuple[GreenNode | GreenToken, int]:
    for c in green.children:
        if c.kind is not WS and c.kind not in COMMENTS:
            return c, off
        off += c.text_len
    raise ValueError("empty node")


def head(cond: Doc) -> Doc:
    """The condition of `if`/`while` and the space before `{`. A binary condition that
    does not fit (with its ` {`) breaks before its operators, and then the `{` gets a
    line of its own so the condition does not run into the body (as rustfmt does)."""
    if type(cond) is Group:
        return concat([cond, IfBreak(LINE, SPACE, cond)])
    return concat([cond, SPACE])


def for_head(iterable: Doc) -> Doc:
    """`for x in` + the iterable: when `for x in iter {` does not fit, the iterable goes
    on its own indented line and the `{` on the next."""
    return group(indent(LINE, iterable), LINE)


def _bin_prec(green: GreenNode) -> int:
    for c in green.children:
        if c.is_token and c.kind in PREC:
            return PREC[c.kind]
    return -1


class ExprRules:
    # provided by Formatter (kera_core/fmt/rules.py)
    split: Callable[[GreenNode, int], tuple[list[El], list[Cm]]]

    node: Callable[[GreenNode, int], Doc]
    fmt: Callable[[El], Doc]
    block: Callable[..., Doc]  # (green, off, flat_ok=False)

    def expr_rules(self) -> dict[SyntaxKind, Callable[[GreenNode, int], Doc]]:
        return {
            K.BIN_EXPR: self.binary,
            K.PREFIX_EXPR: self.prefix,
            K.REF_EXPR: self.ref,
            K.REF_TYPE: self.ref,
            K.IF_EXPR: lambda g, o: self.if_chain(g, o, False),
            K.FOR_EXPR: self.loop,
            K.WHILE_EXPR: self.loop,
            K.LOOP_EXPR: self.loop,
            K.RANGE_PAT: self.range_pat,
            **{k: self.spine for k in SPINE},
        }

    def binary(self, green: GreenNode, off: int) -> Doc:
        """`a + b + c`: one group per precedence level; when it breaks, every operator of
        the level starts a new, indented line."""
        levels: list[tuple[El, El, El]] = []
        prec = _bin_prec(green)
        g, o = green, off
        while True:
            els, _ = self.split(g, o)
            lhs, op, rhs = els
            levels.append((lhs, op, rhs))
            if lhs.kind is K.BIN_EXPR and _bin_prec(lhs.green) == prec:  # type: ignore[arg-type]
                g, o = lhs.green, lhs.off  # type: ignore[assignment]
                continue
            break
        levels.reverse()
        head = self.fmt(levels[0][0])
        tail: list[Doc] = []
        for i, (lhs, op, rhs) in enumerate(levels):
            if i and lhs.trail:
                tail.append(trail_doc(lhs.trail))
            tail += [LINE, self.fmt(op), SPACE, self.fmt(rhs)]
        return group(head, indent(concat(tail)))

    def spine(self, green: GreenNode, off: int) -> Doc:
        """Postfix chains, casts and ranges, innermost first."""
        chain: list[tuple[GreenNode, int]] = []
        g: GreenNode | GreenToken = green
        o = off
        while g.kind in SPINE:
            chain.append((g, o))  # type: ignore[arg-type]
            g, o = _first_child(g, o)  # type: ignore[arg-type]
        doc: Doc = g.text if g.is_token else self.node(g, o)  # type: ignore[union-attr,arg-type]
        for g, o in reversed(chain):
            els, _ = self.split(g, o)  # type: ignore[arg-type]
            first = els[0]
            parts: list[Doc] = [lead_doc(first.lead), doc, trail_doc(first.trail)]
            if g.kind is K.CAST_EXPR:
                for el in els[1:]:
                    parts += [SPACE, self.fmt(el)]
            else:  # `a.b`, `f(x)`, `a[i]`, `a..b`: no spaces
                for el in els[1:]:
                    parts.append(self.fmt(el))
            doc = concat(parts)
        return doc

    def prefix(self, green: GreenNode, off: int) -> Doc:
        """`-x`, `!x`; `- -x` keeps its space (`--x` reads like a decrement)."""
        els, _ = self.split(green, off)
        op, operand = els
        sep: Doc = ""
        if op.kind is K.MINUS and first_token_kind(operand.green) is K.MINUS:
            sep = SPACE
        return concat([self.fmt(op), sep, self.fmt(operand)])

    def ref(self, green: GreenNode, off: int) -> Doc:
        """`&x`, `&mut x`, `& &x` (`&&` would lex as one token)."""
        els, _ = self.split(green, off)
        parts: list[Doc] = [self.fmt(els[0])]
        rest = els[1:]
        if rest and rest[0].kind is K.MUT_KW:
            parts += [self.fmt(rest[0]), SPACE]
            rest = rest[1:]
        for el in rest:
            if first_token_kind(el.green) in (K.AMP, K.AMP2):
                parts.append(SPACE)
            parts.append(self.fmt(el))
        return concat(parts)

    def range_pat(self, green: GreenNode, off: int) -> Doc:
        """`lo..=hi` in a `match` arm: no spaces, as a range expression."""
        els, _ = self.split(green, off)
        return concat([self.fmt(el) for el in els])

    def loop(self, green: GreenNode, off: int) -> Doc:
        """`while c {`, `for i in e {` and `loop {`; the body always breaks."""
        els, _ = self.split(green, off)
        parts: list[Doc] = []
        for i, el in enumerate(els):
            if i + 1 < len(els) and els[i + 1].kind is K.BLOCK:
                cond = self.fmt(el)
                parts.append(for_head(cond) if green.kind is K.FOR_EXPR else head(cond))
            elif green.kind is K.FOR_EXPR and el.kind is K.IN_KW:
                parts.append(self.fmt(el))  # `for_head` puts the space or newline after `in`
            else:
                parts += [self.fmt(el), SPACE]
        return concat(parts)

    def if_chain(self, green: GreenNode, off: int, stmt: bool) -> Doc:
        """`if c { a } else if d { b } else { c }`. As a statement or a block's tail the
        blocks always break; as a value inside a statement (`let x = if ...`, an
        argument, an operand), with an `else` and one expression per branch, it stays on
        one line when that fits and is at most ``SINGLE_LINE_IF_WIDTH`` wide."""
        parts: list[Doc] = []
        blocks: list[tuple[int, El]] = []
        has_else = False
        g, o = green, off
        while True:
            els, _ = self.split(g, o)
            nested: El | None = None
            after_else = False
            for el in els:
                k = el.kind
                if k is K.IF_KW:
                    parts += [self.fmt(el), SPACE]
                elif k is K.ELSE_KW:
                    parts += [SPACE, self.fmt(el), SPACE]
                    after_else = True
                elif k is K.BLOCK:
                    blocks.append((len(parts), el))
                    parts.append("")
                    has_else = after_else
                elif k is K.IF_EXPR and after_else:
                    nested = el
                    parts.append(lead_doc(el.lead))
                else:  # the condition
                    parts.append(head(self.fmt(el)))
            if nested is None:
                break
            g, o = nested.green, nested.off  # type: ignore[assignment]
        flat_ok = not stmt and has_else
        for i, el in blocks:
            b = self.block(el.green, el.off, flat_ok)  # type: ignore[arg-type]
            if el.lead or el.trail:
                b = concat([lead_doc(el.lead), b, trail_doc(el.trail)])
            parts[i] = b
        doc = concat(parts)
        return group(doc, limit=SINGLE_LINE_IF_WIDTH) if flat_ok else doc
