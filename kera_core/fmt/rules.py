"""Tree -> Doc: files, items, blocks, statements and comma-separated lists.

Expressions and types live in :mod:`kera_core.fmt.exprs` (a mixin). Every rule takes
a green node and its byte offset and returns a :mod:`~kera_core.fmt.doc` document.
Every comment of the node must reach the document: rules print an element with
:meth:`Formatter.fmt` (leading comments, the element, trailing comments) unless they
place its comments themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from kera_core.fmt.doc import (
    HARDLINE,
    LINE,
    NOSPACE,
    SOFTLINE,
    SPACE,
    Doc,
    IfBreak,
    concat,
    group,
    indent,
)
from kera_core.fmt.exprs import BLOCK_LIKE, ExprRules
from kera_core.fmt.trivia import (
    Cm,
    El,
    Splitter,
    comment_info,
    lead_doc,
    trail_doc,
)
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.tree import GreenNode

K = SyntaxKind

# No space between two elements when the second is one of these ...
NO_SPACE_BEFORE = frozenset(
    {
        K.COLON,
        K.COMMA,
        K.SEMI,
        K.R_PAREN,
        K.R_BRACK,
        K.DOT,
        K.COLON2,
        K.ARG_LIST,
        K.INDEX_LIST,
        K.SHAPE,
        K.TYPE_PARAM_LIST,
        K.DIM_PARAM_LIST,
        K.PARAM_LIST,
    }
)
# ... or the first is one of these.
NO_SPACE_AFTER = frozenset({K.L_PAREN, K.L_BRACK, K.DOT, K.AT, K.COLON2})

STATEMENTS = frozenset({K.LET_STMT, K.EXPR_STMT})
ITEMS = frozenset({K.FN, K.STRUCT, K.CONST, K.USE})
# Items of these kinds written on consecutive lines stay together: a table of constants,
# the `use` declarations at the top of a file.
RUNS = frozenset({K.CONST, K.USE})

LISTS: dict[SyntaxKind, bool] = {  # comma-separated lists; value: spaces inside delimiters
    K.ARG_LIST: False,
    K.PARAM_LIST: False,
    K.INDEX_LIST: False,
    K.ARRAY_EXPR: False,
    K.DIM_PARAM_LIST: False,
    K.STRUCT_LIT_FIELD_LIST: True,
    K.TUPLE_EXPR: False,
    K.TUPLE_PAT: False,
    K.USE_TREE_LIST: False,
}
# Types never break: `f32[N, M]` and `(f32, i64)` stay whole (a breakable shape in a
# return type would otherwise break before the parameter list does); nor does `<T: Float>`.
FLAT_LISTS = frozenset({K.SHAPE, K.TUPLE_TYPE, K.TYPE_PARAM_LIST})
# A one-element tuple keeps its comma on one line too: `(x,)` is not `(x)`.
ONE_COMMA = frozenset({K.TUPLE_EXPR, K.TUPLE_PAT, K.TUPLE_TYPE})

# A run of `const` (or `use`) items written on consecutive lines stays together (a table
# of constants); every other pair of items gets exactly one blank line.
KEEP_ADJACENT_CONSTS = True


class Entry:
    """One line-level thing in a statement/item/field list: an element or a comment."""

    __slots__ = ("parts", "blank", "item", "inline_after", "adjacent_const")

    def __init__(self, parts: list[Doc], blank: bool, item: bool, inline_after: bool) -> None:
        self.parts = parts
        self.blank = blank
        self.item = item
        self.inline_after = inline_after
        self.adjacent_const = False


class Formatter(ExprRules):
    def __init__(self, root: GreenNode, text: str) -> None:
        self.splitter = Splitter(comment_info(root, text))
        self.split = self.splitter.split
        self.rules: dict[SyntaxKind, Callable[[GreenNode, int], Doc]] = {
            K.SOURCE_FILE: self.source_file,
            K.BLOCK: self.block,
            K.FIELD_LIST: self.field_list,
            K.MATCH_ARM_LIST: self.field_list,
            K.EXPR_STMT: lambda g, o: self.expr_stmt(g, o, None),
            **{k: self.clist for k in LISTS},
            **{k: self.flat_list for k in FLAT_LISTS},
            **self.expr_rules(),
        }

    # --- dispatch -------------------------------------------------------------------
    def node(self, green: GreenNode, off: int) -> Doc:
        # Fast path: a chain of single children down to one token (names, literals).
        g = green
        while len(g.children) == 1:
            g = g.children[0]  # type: ignore[assignment]
            if g.is_token:
                if g.kind.is_trivia:
                    break
                return g.text  # type: ignore[attr-defined]
        rule = self.rules.get(green.kind)
        if rule is None:
            return self.generic(green, off)
        return rule(green, off)

    def core(self, el: El) -> Doc:
        if el.green.is_token:
            return el.green.text  # type: ignore[union-attr]
        return self.node(el.green, el.off)  # type: ignore[arg-type]

    def fmt(self, el: El, tight: bool = False) -> Doc:
        """An element with its comments (``tight``: no space before an inline one)."""
        if not el.lead and not el.trail:
            return self.core(el)
        return concat([lead_doc(el.lead, not tight), self.core(el), trail_doc(el.trail)])

    def dropped(self, el: El) -> Doc:
        """What remains of an element the style removes: its comments."""
        return concat([lead_doc(el.lead), trail_doc(el.trail)])

    def generic(self, green: GreenNode, off: int) -> Doc:
        """Children separated by single spaces, with the usual exceptions (`f(`, `x:`)."""
        els, _ = self.split(green, off)
        return self.spaced(els)

    def spaced(self, els: list[El]) -> Doc:
        parts: list[Doc] = []
        prev: El | None = None
        n = len(els)
        i = 0
        while i < n:
            el = els[i]
            if prev is not None:
                if el.kind in NO_SPACE_BEFORE:
                    parts.append(NOSPACE)
                    if el.lead:  # `/* c */:` not `/* c */ :`
                        tight = prev.kind in NO_SPACE_AFTER
                        parts += [lead_doc(el.lead, not tight), NOSPACE, self.core(el)]
                        parts.append(trail_doc(el.trail))
                        prev = el
                        i += 1
                        continue
                elif prev.kind not in NO_SPACE_AFTER:
                    parts.append(SPACE)
            nxt = els[i + 1] if i + 1 < n else None
            if el.trail and nxt is not None and nxt.kind is K.SEMI and not nxt.lead:
                # `x // c` + `;` -> `x; // c`
                parts += [lead_doc(el.lead), self.core(el), NOSPACE, ";"]
                parts += [trail_doc(el.trail), trail_doc(nxt.trail)]
                prev = nxt
                i += 2
                continue
            parts.append(self.fmt(el, prev is not None and prev.kind in NO_SPACE_AFTER))
            prev = el
            i += 1
        return concat(parts)

    # --- lists of lines: files, blocks, struct fields -------------------------------
    def entries(self, pairs: list[tuple[El, Doc | None]], end: list[Cm], file: bool) -> Doc | None:
        """Lay out one element per line, own-line comments as lines of their own, and
        at most one blank line where the user had one (always one between items).
        A ``None`` doc drops the element but keeps its comments. None if empty."""
        out: list[Entry] = []
        gap = 0  # newlines since the last printed element (across dropped ones)
        prev_kind = None  # the kind of the last element, when it can start a run
        for el, doc in pairs:
            for c in el.lead:
                self._comment_entry(out, c)
            gap = el.nl if el.lead else gap + el.nl
            if doc is None:  # dropped; its trailing comments stay on their line
                if el.trail:
                    if out and not gap:
                        out[-1].parts.append(trail_doc(el.trail))
                    else:
                        blank = gap >= 2
                        for c in el.trail:
                            self._comment_entry(out, c, blank)
                            blank = False
                        gap = 1
                continue
            parts = [doc, trail_doc(el.trail)] if el.trail else [doc]
            entry = Entry(parts, gap >= 2, el.kind in ITEMS, False)
            if KEEP_ADJACENT_CONSTS and el.kind in RUNS and gap < 2 and not el.lead:
                entry.adjacent_const = prev_kind is el.kind
            out.append(entry)
            prev_kind = el.kind if el.kind in RUNS else None
            gap = 0
        for c in end:
            self._comment_entry(out, c)
        docs: list[Doc] = []
        prev: Entry | None = None
        for e in out:
            if prev is not None:
                if prev.inline_after:
                    docs.append(SPACE)
                else:
                    docs.append(HARDLINE)
                    if e.blank or (file and prev.item and e.item and not e.adjacent_const):
                        docs.append(HARDLINE)
            docs.append(concat(e.parts) if len(e.parts) != 1 else e.parts[0])
            prev = e
        return concat(docs) if docs else None

    @staticmethod
    def _comment_entry(out: list[Entry], c: Cm, blank: bool | None = None) -> None:
        if out and out[-1].inline_after:
            out[-1].parts += [SPACE, c.doc]
            out[-1].inline_after = not c.needs_newline
            return
        if blank is None:
            blank = c.nl_before >= 2
        out.append(Entry([c.doc], blank, False, not c.needs_newline))

    def source_file(self, green: GreenNode, off: int) -> Doc:
        els, end = self.split(green, off)
        return self.entries([(el, self.core(el)) for el in els], end, True) or ""

    def block(self, green: GreenNode, off: int, flat_ok: bool = False) -> Doc:
        """`{ stmts }`: statements on their own lines; `{}` when empty. With ``flat_ok``
        a block holding only a tail expression may print as `{ e }` (if-expressions)."""
        els, _ = self.split(green, off)
        open_, close = els[0], els[-1]
        body = els[1:-1]
        if flat_ok and len(body) == 1 and body[0].kind not in STATEMENTS:
            only = body[0]
            if not (open_.trail or only.lead or only.trail or close.lead):
                return concat(["{", indent(LINE, self.stmt_expr(only, False)), LINE, "}"])
        inner = self.entries(self.statement_docs(body), close.lead, False)
        if inner is None:
            if not open_.trail:
                return "{}"
            return concat(["{", trail_doc(open_.trail), HARDLINE, "}"])
        return concat(["{", trail_doc(open_.trail), indent(HARDLINE, inner), HARDLINE, "}"])

    def statement_docs(
        self, body: list[El], lo: int = 0, hi: int | None = None
    ) -> list[tuple[El, Doc | None]]:
        """Docs of ``body[lo:hi]`` (None for dropped empty statements)."""
        pairs: list[tuple[El, Doc | None]] = []
        n = len(body)
        for i in range(lo, n if hi is None else hi):
            el = body[i]
            k = el.kind
            if k is K.SEMI:
                pairs.append((el, None))  # an empty statement
            elif k is K.EXPR_STMT:
                nxt = None
                j = i + 1
                while j < n:
                    if body[j].kind is not K.SEMI:
                        nxt = body[j]
                        break
                    j += 1
                pairs.append((el, self.expr_stmt(el.green, el.off, nxt)))  # type: ignore[arg-type]
            elif k in STATEMENTS:
                pairs.append((el, self.core(el)))
            else:  # the tail expression: laid out like a statement (as rustfmt does)
                pairs.append((el, self.stmt_expr(el, True, with_comments=False)))
        return pairs

    def stmt_expr(self, el: El, stmt: bool, with_comments: bool = True) -> Doc:
        """An expression; ``if`` in statement position always breaks its blocks."""
        if el.kind is K.IF_EXPR:
            d = self.if_chain(el.green, el.off, stmt)  # type: ignore[arg-type]
            if with_comments and (el.lead or el.trail):
                return concat([lead_doc(el.lead), d, trail_doc(el.trail)])
            return d
        return self.fmt(el) if with_comments else self.core(el)

    def expr_stmt(self, green: GreenNode, off: int, nxt: El | None) -> Doc:
        els, _ = self.split(green, off)
        e = els[0]
        d = self.stmt_expr(e, True, with_comments=False)
        parts: list[Doc] = [lead_doc(e.lead), d]
        if len(els) > 1:
            semi = els[1]
            # A statement starting with `if`/`for`/`while`/`{` ends at its `}` (as in
            # Rust), so its `;` is noise; before the block's `}` it is not: dropping it
            # would make the statement the block's value.
            keep = e.kind not in BLOCK_LIKE or nxt is None
            if semi.lead:  # comments on lines of their own before the `;`: keep the order
                parts += [trail_doc(e.trail), lead_doc(semi.lead)]
            if keep:
                parts += [NOSPACE, ";"]
            if not semi.lead:  # `x // c` + `;` -> `x; // c`
                parts.append(trail_doc(e.trail))
            parts.append(trail_doc(semi.trail))
        else:
            parts.append(trail_doc(e.trail))
        return concat(parts)

    def field_list(self, green: GreenNode, off: int) -> Doc:
        """A struct's fields: always one per line, each with a trailing comma. The arms of
        a `match` too, but an arm whose body is a block `{ … }` has no comma (rustfmt's)."""
        els, _ = self.split(green, off)
        open_, close = els[0], els[-1]
        pairs: list[tuple[El, Doc | None]] = []
        for el in els[1:-1]:
            if el.kind is K.COMMA:
                # the comma is printed with its field; keep the comma's comments there
                if pairs and pairs[-1][0].kind in (K.FIELD, K.MATCH_ARM):
                    last, _ = pairs[-1]
                    if el.lead:  # comments between the field and its comma keep their place
                        head = [self.core(last), trail_doc(last.trail), lead_doc(el.lead)]
                        comma = [] if _block_arm(last) else [NOSPACE, ","]
                        pairs[-1] = (last, concat([*head, *comma]))
                        last.trail = el.trail
                    else:
                        last.trail = last.trail + el.trail
                else:
                    pairs.append((el, None))
            elif _block_arm(el):
                pairs.append((el, self.core(el)))
            else:
                pairs.append((el, concat([self.core(el), NOSPACE, ","])))
        inner = self.entries(pairs, close.lead, False)
        if inner is None:
            if not open_.trail:
                return "{}"
            return concat(["{", trail_doc(open_.trail), HARDLINE, "}"])
        return concat(["{", trail_doc(open_.trail), indent(HARDLINE, inner), HARDLINE, "}"])

    def flat_list(self, green: GreenNode, off: int) -> Doc:
        """`[N, 4]`, `(f32, i64)` in a type: `, ` between elements, no trailing comma (but
        `(f32,)`'s), never broken."""
        els, _ = self.split(green, off)
        parts: list[Doc] = []
        n = len(els)
        one = green.kind in ONE_COMMA and n == 4  # `(`, the element, `,`, `)`
        for i, el in enumerate(els):
            k = el.kind
            if k is K.COMMA:
                if i + 2 == n and not one:  # a trailing comma: dropped, its comments kept
                    parts += [NOSPACE, self.dropped(el)]
                    continue
                parts += [NOSPACE, self.fmt(el), SPACE]
            elif i + 1 == n:  # the `]`
                parts += [NOSPACE, lead_doc(el.lead), NOSPACE, self.core(el)]
            else:
                parts.append(self.fmt(el))
        return concat(parts)

    def clist(self, green: GreenNode, off: int) -> Doc:
        """`(a, b)` / `[a, b]` / `S { a: 1 }`: on one line if it fits, else one element
        per line with a trailing comma."""
        pad = LISTS[green.kind]
        els, _ = self.split(green, off)
        open_, close = els[0], els[-1]
        if close.kind not in (K.R_PAREN, K.R_BRACK, K.R_BRACE):
            raise ValueError("unclosed list")  # syntax errors are refused before this
        items: list[tuple[El, El | None]] = []
        for el in els[1:-1]:
            if el.kind is K.COMMA and items and items[-1][1] is None:
                items[-1] = (items[-1][0], el)
            else:
                items.append((el, None))
        open_doc: Doc = open_.green.text  # type: ignore[union-attr]
        if open_.trail:
            open_doc = concat([open_doc, trail_doc(open_.trail, space_before=pad)])
        close_text: str = close.green.text  # type: ignore[union-attr]
        if not items:
            if not close.lead and not open_.trail:
                return open_doc + close_text  # type: ignore[operator]
            close_lead = lead_doc(close.lead, space_before=pad)
            return group(open_doc, indent(close_lead), SOFTLINE, NOSPACE, close_text)
        fill = (
            green.kind is K.ARRAY_EXPR
            and len(items) > 1
            and all(
                _short_literal(it) and (c is None or (not c.lead and not c.trail))
                for it, c in items
            )
        )
        breaks: list[IfBreak] = []
        parts: list[Doc] = []
        last_i = len(items) - 1
        for i, (it, comma) in enumerate(items):
            p: list[Doc] = [lead_doc(it.lead, space_before=pad or i > 0), self.core(it)]
            moved = comma is None or not comma.lead  # `a // c` + `,` -> `a, // c`
            if not moved:
                p += [trail_doc(it.trail), lead_doc(comma.lead)]  # type: ignore[union-attr]
            p.append(NOSPACE)
            keep = i != last_i or (last_i == 0 and green.kind in ONE_COMMA and comma is not None)
            if keep:
                p.append(",")
            else:
                breaks.append(IfBreak(",", ""))
                p.append(breaks[-1])
            if moved:
                p.append(trail_doc(it.trail))
            if comma is not None:
                p.append(trail_doc(comma.trail))
            if fill and i:  # a table of numbers fills its lines: a break only where needed
                parts.append(group(LINE, concat(p)))
                continue
            parts.append(concat(p))
            if i != last_i and not fill:
                parts.append(LINE)
        line = LINE if pad else SOFTLINE
        tail: Doc = NOSPACE if not pad else ""
        whole = group(
            open_doc,
            indent(line, concat(parts), lead_doc(close.lead)),
            line,
            tail,
            close_text,
        )
        for b in breaks:  # the trailing comma follows the list's own break, not a line's
            b.group = whole
        return whole


SHORT_LITERAL = 24  # the widest element of a table that fills its lines


def _short_literal(el: El) -> bool:
    """A number (or `true`/`false`), maybe negated, with no comment: an element of a table."""
    if el.lead or el.trail or el.green.text_len > SHORT_LITERAL:
        return False
    g = el.green
    if el.kind is K.PREFIX_EXPR:
        kids = [c for c in g.children if not c.kind.is_trivia]  # type: ignore[union-attr]
        if len(kids) != 2 or kids[0].kind is not K.MINUS or kids[1].kind is not K.LITERAL:
            return False
        g = kids[1]
    elif el.kind is not K.LITERAL:
        return False
    kids = getattr(g, "children", None)  # a LITERAL node holds its one token
    return not kids or kids[0].kind is not K.STRING


def _block_arm(el: El) -> bool:
    """A `match` arm whose body is a block (`p => { … }`): no comma follows it."""
    if el.kind is not K.MATCH_ARM:
        return False
    last = None
    for c in el.green.children:  # type: ignore[union-attr]
        if not c.kind.is_trivia:
            last = c
    return last is not None and last.kind is K.BLOCK_EXPR
