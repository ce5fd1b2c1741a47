"""Blocks, statements and expressions (Pratt parsing over one binding-power table)."""

from __future__ import annotations

from kera_core.syntax.kinds import FAST_KINDS, SyntaxKind, describe
from kera_core.syntax.parser.events import INNER_SHIFT, WRAP
from kera_core.syntax.parser.grammar.common import (
    EXPR_FIRST,
    ITEM_FIRST,
    RESERVED_NAMES,
    STMT_FIRST,
    delimited,
    name,
    name_ref,
    recover_until,
    reserved_message,
)
from kera_core.syntax.parser.grammar.types import type_
from kera_core.syntax.parser.parser import FUEL, MAX_DEPTH, CompletedMarker, Parser, Stuck

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

# operator -> (binding power, right associative, node kind). Higher binds tighter.
ASSIGN_OPS = frozenset(
    {
        K.EQ,
        K.PLUSEQ,
        K.MINUSEQ,
        K.STAREQ,
        K.SLASHEQ,
        K.PERCENTEQ,
        K.AMPEQ,
        K.PIPEEQ,
        K.CARETEQ,
        K.SHLEQ,
        K.SHREQ,
    }
)
COMPARISON_OPS = frozenset({K.EQ2, K.NEQ, K.LT, K.LTEQ, K.GT, K.GTEQ})
INFIX: dict[SyntaxKind, tuple[int, bool, SyntaxKind]] = {
    **{op: (1, True, K.ASSIGN_EXPR) for op in ASSIGN_OPS},
    K.DOT2: (2, False, K.RANGE_EXPR),
    K.DOT2EQ: (2, False, K.RANGE_EXPR),
    K.PIPE2: (3, False, K.BIN_EXPR),
    K.AMP2: (4, False, K.BIN_EXPR),
    **{op: (5, False, K.BIN_EXPR) for op in COMPARISON_OPS},
    K.PIPE: (6, False, K.BIN_EXPR),
    K.CARET: (7, False, K.BIN_EXPR),
    K.AMP: (8, False, K.BIN_EXPR),
    K.SHL: (9, False, K.BIN_EXPR),
    K.SHR: (9, False, K.BIN_EXPR),
    K.PLUS: (10, False, K.BIN_EXPR),
    K.MINUS: (10, False, K.BIN_EXPR),
    K.STAR: (11, False, K.BIN_EXPR),
    K.SLASH: (11, False, K.BIN_EXPR),
    K.PERCENT: (11, False, K.BIN_EXPR),
}
CAST_BP = 12
_PATH_NAME = K.PATH_EXPR | WRAP | K.NAME_REF << INNER_SHIFT  # `p.leaf2(PATH_EXPR, NAME_REF)`

BLOCK_LIKE_FIRST = frozenset({K.IF_KW, K.FOR_KW, K.WHILE_KW, K.LOOP_KW, K.MATCH_KW, K.L_BRACE})
LITERALS = frozenset({K.INT, K.FLOAT, K.STRING, K.TRUE_KW, K.FALSE_KW})
_STMT_RECOVERY = STMT_FIRST | {K.R_BRACE} | ITEM_FIRST


# --- blocks and statements ---------------------------------------------------


def block(p: Parser) -> None:
    """`{ stmt* tail? }` — also the entry point of incremental block reparsing."""
    if not p.at(K.L_BRACE):
        p.error("K0100", f"expected `{{`, found {describe(p.current())}")
        return
    m = p.start()
    p.bump()
    saved, p.no_struct = p.no_struct, False
    saved_index, p.in_index = p.in_index, False
    p.depth += 1
    if p.depth > MAX_DEPTH:
        p.skip_balanced("K0108", "blocks nested too deeply")
    statements(p, p.n + 1)
    p.depth -= 1
    p.no_struct = saved
    p.in_index = saved_index
    if not p.eat(K.R_BRACE):
        p.error("K0106", f"expected `}}` to close the block, found {describe(p.current())}")
    p.complete(m, K.BLOCK)


def statements(p: Parser, stop: int) -> bool:
    """A block's statements from ``p.pos``: until its end (`}`, the end of the input or an
    item), or until a statement ends at token ``stop`` (whether one did: the statement
    reparse of a long block, syntax/reparse.py, parses a few statements alone)."""
    # `while not p.at(K.R_BRACE) and not p.at_eof()`, then `p.at_any(ITEM_FIRST)` (a new
    # item: the block was not closed; let the item loop resume: break), `p.at(K.R_PAREN)
    # or p.at(K.R_BRACK)` (unmatched: an error), else a statement (whose first look is
    # `p.current()`), with the looks read off ``p.kinds`` at once and their fuel spent as
    # those calls spend it (nothing changes between them).
    kinds = p.kinds
    n = p.n
    while True:
        pos = p.pos
        if pos >= stop:
            return True
        k = kinds[pos]
        if k == K.R_BRACE:
            looks = 1
        elif pos >= n:
            looks = 2
        elif k in ITEM_FIRST:
            looks = 3
        elif k == K.R_PAREN:
            looks = 4
        else:
            looks = 5 if k == K.R_BRACK else 6
        p.fuel -= looks
        if p.fuel <= 0:
            raise Stuck
        if looks == 6:
            stmt(p, k)
        elif looks >= 4:
            p.err_and_bump("K0107", f"unmatched {describe(p.current())}")
        else:
            return False


def stmt(p: Parser, k: SyntaxKind) -> None:
    """A statement whose first token ``k`` was looked at (``p.current()``)."""
    if k == K.SEMI:
        p.bump()  # an empty statement; the formatter drops it
        return
    if k == K.LET_KW:
        let_stmt(p)
        return
    m = p.start()
    if k in BLOCK_LIKE_FIRST:
        # As in Rust, a statement that starts with `if`/`for`/`while`/`loop`/`match`/`{`
        # ends at its `}`:
        # `if c { a } - 1` is two statements, not a subtraction.
        primary(p)
        if p.at(K.R_BRACE):
            p.abandon(m)  # the block's tail expression
            return
        p.eat(K.SEMI)
        p.complete(m, K.EXPR_STMT)
        return
    e = expr(p)
    if e is None:
        p.abandon(m)
        recover_until(p, "K0102", f"expected a statement, found {describe(k)}", _STMT_RECOVERY)
        return
    if p.at(K.R_BRACE):
        p.abandon(m)  # the block's tail expression
        return
    if not p.eat(K.SEMI):
        p.error("K0100", f"expected `;` after the expression, found {describe(p.current())}")
    p.complete(m, K.EXPR_STMT)


def let_stmt(p: Parser) -> None:
    m = p.start()
    p.bump()  # let
    if p.at(K.MUT_KW) and p.nth(1) == K.L_PAREN:
        p.err_and_bump("K0100", "`mut` goes on each name of a pattern: `let (mut a, mut b) = …`")
    if p.at(K.L_PAREN):
        tuple_pat(p)
    else:
        p.eat(K.MUT_KW)
        name(p, "a variable name")
    if p.eat(K.COLON):
        type_(p)
    if p.eat(K.EQ):
        if expr(p) is None:
            recover_until(
                p, "K0102", f"expected an expression, found {describe(p.current())}", _STMT_RECOVERY
            )
    if not p.eat(K.SEMI):
        p.error("K0100", f"expected `;` after `let`, found {describe(p.current())}")
    p.complete(m, K.LET_STMT)


PAT_FIRST = frozenset({K.IDENT, K.MUT_KW, K.L_PAREN})


def tuple_pat(p: Parser) -> None:
    """`(a, mut b, _, (c, d))`: the names a `let` binds from a tuple's elements."""
    p.depth += 1
    try:
        if p.depth > MAX_DEPTH:
            p.skip_balanced("K0108", "pattern nested too deeply")
            return
        m = p.start()
        p.bump()  # (
        delimited(p, K.R_PAREN, PAT_FIRST, _pat, "a name or `(`")
        p.complete(m, K.TUPLE_PAT)
    finally:
        p.depth -= 1


def _pat(p: Parser) -> None:
    if p.at(K.L_PAREN):
        tuple_pat(p)
        return
    m = p.start()
    p.eat(K.MUT_KW)
    name(p, "a variable name")
    p.complete(m, K.BIND_PAT)


# --- expressions ---------------------------------------------------------------


def _expr_no_struct(p: Parser) -> CompletedMarker | None:
    saved, p.no_struct = p.no_struct, True
    try:
        return expr(p)
    finally:
        p.no_struct = saved


def expr_bp(p: Parser, min_bp: int = 1) -> CompletedMarker | None:
    p.depth += 1
    try:
        if p.depth > MAX_DEPTH:
            return p.skip_balanced("K0108", "expression nested too deeply")
        lhs = unary(p)
        if lhs is None:
            return None
        chained_cmp = False
        chained_range = False
        kinds = p.kinds
        while True:
            p.fuel -= 1  # `k = p.current()`, inlined
            if p.fuel <= 0:
                raise Stuck
            k = kinds[p.pos]
            if k == K.AS_KW:
                if CAST_BP < min_bp:
                    break
                m = p.precede(lhs)
                p.bump()
                type_(p)
                lhs = p.complete(m, K.CAST_EXPR)
                continue
            info = INFIX.get(k)
            if info is None:
                break
            bp, right, kind = info
            if bp < min_bp:
                break
            if k in COMPARISON_OPS:
                if chained_cmp:
                    p.error(
                        "K0105", "comparison operators cannot be chained: use parentheses or `&&`"
                    )
                chained_cmp = True
            elif kind == K.RANGE_EXPR:
                if chained_range:
                    p.error("K0111", "range operators cannot be chained: use parentheses")
                chained_range = True
            m = p.precede(lhs)
            p.bump()
            if kind == K.RANGE_EXPR and p.in_index and p.current() in _INDEX_END:
                lhs = p.complete(m, kind)  # `x[lo..]`: a slice to the end of the axis
                continue
            if expr_bp(p, bp if right else bp + 1) is None:
                p.error("K0102", f"expected an expression, found {describe(p.current())}")
            lhs = p.complete(m, kind)
        return lhs
    finally:
        p.depth -= 1


#: An expression (the loosest binding power).
expr = expr_bp


def unary(p: Parser) -> CompletedMarker | None:
    p.fuel -= 1  # `k = p.current()`, inlined
    if p.fuel <= 0:
        raise Stuck
    k = p.kinds[p.pos]
    if k == K.IDENT:
        # The common case of `primary` without calling it: a name that is neither a struct
        # literal's (`P {`) nor a path's (`f32::`) start becomes PATH_EXPR(NAME_REF). The
        # fuel is spent as `primary`'s looks would spend it (``current`` and ``nth(1)``
        # twice, thrice unless in a head); nothing changes between them.
        pos = p.pos
        k1 = p.kinds[pos + 1]  # `pos` < `n` (an IDENT): the EOF sentinel bounds it
        if k1 != K.L_BRACE and k1 != K.COLON2:
            p.fuel -= 3 if p.no_struct else 4
            if p.fuel <= 0:
                raise Stuck
            events = p.events
            lhs = len(events)
            events.append(_PATH_NAME)
            p.pos = pos + 1
            p.fuel = FUEL
            return postfix(p, lhs)
    elif k in LITERALS:
        p.fuel -= 1  # `primary`'s look
        if p.fuel <= 0:
            raise Stuck
        return postfix(p, p.leaf(K.LITERAL))
    elif k == K.MINUS or k == K.BANG or k == K.AMP:
        p.depth += 1
        try:
            if p.depth > MAX_DEPTH:
                return p.skip_balanced("K0108", "expression nested too deeply")
            m = p.start()
            p.bump()
            if k == K.AMP:
                p.eat(K.MUT_KW)
            if unary(p) is None:
                p.error("K0102", f"expected an expression, found {describe(p.current())}")
            return p.complete(m, K.REF_EXPR if k == K.AMP else K.PREFIX_EXPR)
        finally:
            p.depth -= 1
    lhs = primary(p)
    if lhs is None:
        return None
    return postfix(p, lhs)


def postfix(p: Parser, lhs: CompletedMarker) -> CompletedMarker:
    kinds = p.kinds
    while True:
        p.fuel -= 1  # `k = p.current()`, inlined
        if p.fuel <= 0:
            raise Stuck
        k = kinds[p.pos]
        if k == K.L_PAREN:
            m = p.precede(lhs)
            _list(p, K.ARG_LIST, K.R_PAREN, "an argument")
            lhs = p.complete(m, K.CALL_EXPR)
        elif k == K.L_BRACK:
            m = p.precede(lhs)
            _list(p, K.INDEX_LIST, K.R_BRACK, "an index")
            lhs = p.complete(m, K.INDEX_EXPR)
        elif k == K.DOT:
            m = p.precede(lhs)
            p.bump()
            if p.at(K.IDENT) or p.at(K.INT):  # `p.x`, `t.0`
                name_ref(p)
            elif p.at(K.FLOAT):  # `t.0.1` lexes as `t`, `.`, `0.1`
                p.err_and_bump(
                    "K0100",
                    "a field after a tuple field needs parentheses: write `(t.0).1`, not `t.0.1`",
                )
            else:
                p.error("K0100", f"expected a field name after `.`, found {describe(p.current())}")
            lhs = p.complete(m, K.FIELD_EXPR)
        else:
            return lhs


def _list(p: Parser, kind: SyntaxKind, close: SyntaxKind, what: str) -> None:
    m = p.start()
    p.bump()
    saved, p.no_struct = p.no_struct, False
    saved_index, p.in_index = p.in_index, kind == K.INDEX_LIST
    if p.in_index:
        delimited(p, close, _INDEX_FIRST, _index_element, what)
    else:
        delimited(p, close, EXPR_FIRST, _list_element, what)
    p.in_index = saved_index
    p.no_struct = saved
    p.complete(m, kind)


def _list_element(p: Parser) -> None:
    expr(p)


# `x[..]`, `x[..hi]`, `x[lo..]`: the ranges of a slice may leave out either bound
_INDEX_END = frozenset({K.COMMA, K.R_BRACK})
_INDEX_FIRST = EXPR_FIRST | {K.DOT2, K.DOT2EQ}


def _index_element(p: Parser) -> None:
    if not (p.at(K.DOT2) or p.at(K.DOT2EQ)):
        expr(p)
        return
    m = p.start()
    p.bump()  # `..` with no start
    if not p.at_any(_INDEX_END) and expr_bp(p, INFIX[K.DOT2][0] + 1) is None:
        p.error("K0102", f"expected an expression, found {describe(p.current())}")
    p.complete(m, K.RANGE_EXPR)


def primary(p: Parser) -> CompletedMarker | None:
    k = p.current()
    if k in LITERALS:
        return p.leaf(K.LITERAL)
    if k == K.IDENT:
        if (
            not p.no_struct
            and p.nth(1) == K.L_BRACE
            and (p.nth(2) == K.R_BRACE or (p.nth(2) == K.IDENT and p.nth(3) == K.COLON))
        ):
            return struct_lit(p)
        if p.nth(1) == K.COLON2 and p.nth(2) == K.IDENT and p.nth(3) != K.COLON2:
            m = p.start()  # `f32::PI`: a constant the type names (the checker knows which)
            name_ref(p)
            p.bump()
            name_ref(p)
            return p.complete(m, K.CONST_PATH)
        if p.nth(1) == K.COLON2:  # `a::b::c`, `T::`: one error for the whole path
            m = p.start()
            p.error(
                "K0112",
                "paths are not in Kera: only a number type's constants are, like `f32::PI` "
                "or `i32::MAX`",
            )
            p.bump()
            while p.at(K.COLON2):
                p.bump()
                if p.at(K.IDENT):
                    p.bump()
            return p.complete(m, K.UNSUPPORTED)
        return p.leaf2(K.PATH_EXPR, K.NAME_REF)
    if k == K.L_PAREN:
        m = p.start()
        p.bump()
        saved, p.no_struct = p.no_struct, False
        saved_index, p.in_index = p.in_index, False
        try:
            return _paren_or_tuple(p, m, saved)
        finally:
            p.in_index = saved_index
    if k == K.L_BRACK:
        m = p.start()
        p.bump()
        saved, p.no_struct = p.no_struct, False
        saved_index, p.in_index = p.in_index, False
        delimited(p, K.R_BRACK, EXPR_FIRST, _list_element, "an element")
        p.in_index = saved_index
        p.no_struct = saved
        return p.complete(m, K.ARRAY_EXPR)
    if k == K.L_BRACE:
        m = p.start()
        block(p)
        return p.complete(m, K.BLOCK_EXPR)
    if k == K.IF_KW:
        return if_expr(p)
    if k == K.FOR_KW:
        m = p.start()
        p.bump()
        name(p, "a loop variable")
        has_in = p.expect(K.IN_KW)
        if p.at(K.L_BRACE):
            if has_in:
                p.error("K0102", "expected a range, found `{`")
        elif _expr_no_struct(p) is None:
            p.error("K0102", f"expected a range, found {describe(p.current())}")
        block(p)
        return p.complete(m, K.FOR_EXPR)
    if k == K.WHILE_KW:
        m = p.start()
        p.bump()
        if _expr_no_struct(p) is None:
            p.error("K0102", f"expected a condition, found {describe(p.current())}")
        block(p)
        return p.complete(m, K.WHILE_EXPR)
    if k == K.LOOP_KW:
        if p.nth(1) != K.L_BRACE:
            return _reserved_use(p, k)
        m = p.start()
        p.bump()
        block(p)
        return p.complete(m, K.LOOP_EXPR)
    if k == K.MATCH_KW:
        if p.nth(1) not in EXPR_FIRST:
            return _reserved_use(p, k)
        return match_expr(p)
    if k == K.RETURN_KW:
        m = p.start()
        p.bump()
        if p.at_any(EXPR_FIRST):
            expr(p)
        return p.complete(m, K.RETURN_EXPR)
    if k == K.BREAK_KW or k == K.CONTINUE_KW:
        return p.leaf(K.BREAK_EXPR if k == K.BREAK_KW else K.CONTINUE_EXPR)
    return None


def _reserved_use(p: Parser, k: SyntaxKind) -> CompletedMarker:
    """`loop + 1`, `match;`: a keyword that does not start its construct, most likely a name
    of a program older than the keyword: one error, the token an erroneous value (the
    checker reports nothing more about it)."""
    m = p.start()
    p.error("K0102", reserved_message(k, "an expression"))
    p.bump()
    return p.complete(m, K.UNSUPPORTED)


# --- match ------------------------------------------------------------------------

PAT_ATOM_FIRST = frozenset({K.INT, K.FLOAT, K.MINUS, K.TRUE_KW, K.FALSE_KW, K.IDENT})
_ARM_STOP = frozenset({K.COMMA, K.R_BRACE}) | ITEM_FIRST


def match_expr(p: Parser) -> CompletedMarker:
    """`match x { pattern => expr, … }`."""
    m = p.start()
    p.bump()  # match
    if _expr_no_struct(p) is None:
        p.error("K0102", f"expected a value to match on, found {describe(p.current())}")
    if not p.at(K.L_BRACE):
        p.error("K0100", f"expected `{{` to start the arms, found {describe(p.current())}")
        return p.complete(m, K.MATCH_EXPR)
    arms = p.start()
    p.bump()  # {
    saved, p.no_struct = p.no_struct, False
    saved_index, p.in_index = p.in_index, False
    p.depth += 1
    try:
        if p.depth > MAX_DEPTH:
            p.skip_balanced("K0108", "match nested too deeply")
        else:
            _arms(p)
    finally:
        p.depth -= 1
        p.no_struct = saved
        p.in_index = saved_index
    if not p.eat(K.R_BRACE):
        p.error("K0106", f"expected `}}` to close the match, found {describe(p.current())}")
    p.complete(arms, K.MATCH_ARM_LIST)
    return p.complete(m, K.MATCH_EXPR)


def _arms(p: Parser) -> None:
    while not p.at(K.R_BRACE) and not p.at_eof() and not p.at_any(ITEM_FIRST):
        start = p.pos
        if not p.at_any(PAT_ATOM_FIRST):
            recover_until(
                p, "K0104", f"expected a pattern, found {describe(p.current())}", _ARM_STOP
            )
            if not p.eat(K.COMMA) and p.pos == start:
                break
            continue
        block_body = _arm(p)
        if p.eat(K.COMMA) or p.at(K.R_BRACE) or block_body:
            continue
        p.error("K0100", f"expected `,` or `}}` after the arm, found {describe(p.current())}")
        if not p.at_any(PAT_ATOM_FIRST) or p.pos == start:
            break


def _arm(p: Parser) -> bool:
    """One arm; whether its body is a block (then no comma needs to follow)."""
    m = p.start()
    pattern(p)
    block_body = False
    if p.expect(K.FAT_ARROW):
        if p.at(K.L_BRACE):
            block_m = p.start()
            block(p)
            p.complete(block_m, K.BLOCK_EXPR)
            block_body = True
        elif expr(p) is None:
            p.error("K0102", f"expected an expression, found {describe(p.current())}")
    p.complete(m, K.MATCH_ARM)
    return block_body


def pattern(p: Parser) -> None:
    """`p | q | …` of `lo..=hi` ranges of literals, `-` literals, constants (`K`,
    `i8::MIN`) and `_`."""
    m = p.start()
    _range_pat(p)
    if not p.at(K.PIPE):
        p.abandon(m)
        return
    while p.eat(K.PIPE):
        _range_pat(p)
    p.complete(m, K.OR_PAT)


def _range_pat(p: Parser) -> None:
    m = p.start()
    _pat_atom(p)
    if p.at(K.DOT2EQ):
        p.bump()
        _pat_atom(p)
        p.complete(m, K.RANGE_PAT)
    elif p.at(K.DOT2):
        p.err_and_bump("K0112", "a range pattern includes its end: write `lo..=hi`")
        _pat_atom(p)
        p.complete(m, K.RANGE_PAT)
    else:
        p.abandon(m)


def _pat_atom(p: Parser) -> None:
    k = p.current()
    if k == K.IDENT and p.nth(1) == K.COLON2:
        primary(p)  # `i8::MIN` (or a path Kera does not have: K0112)
    elif k == K.IDENT:
        p.leaf2(K.PATH_EXPR, K.NAME_REF)
    elif k in LITERALS and k != K.STRING:
        p.leaf(K.LITERAL)
    elif k == K.MINUS:
        m = p.start()
        p.bump()
        if p.at(K.INT) or p.at(K.FLOAT):
            p.leaf(K.LITERAL)
        else:
            p.error("K0100", f"expected a number after `-`, found {describe(p.current())}")
        p.complete(m, K.PREFIX_EXPR)
    elif k in RESERVED_NAMES or k == K.STRING:
        p.err_and_bump("K0102", f"expected a pattern, found {describe(k)}")
    else:
        p.error("K0102", f"expected a pattern, found {describe(k)}")


def if_expr(p: Parser) -> CompletedMarker:
    """`if c {…} else if d {…} else {…}`: a ladder is parsed in a loop, not by recursion,
    so a long flat `else if` chain is not mistaken for deep nesting."""
    markers = []
    while True:
        markers.append(p.start())
        p.bump()  # if
        if _expr_no_struct(p) is None:
            p.error("K0102", f"expected a condition, found {describe(p.current())}")
        block(p)
        if not p.eat(K.ELSE_KW):
            break
        if not p.at(K.IF_KW):
            block(p)
            break
    done = None
    for m in reversed(markers):
        done = p.complete(m, K.IF_EXPR)
    assert done is not None
    return done


def struct_lit(p: Parser) -> CompletedMarker:
    m = p.start()
    name_ref(p)
    fields = p.start()
    p.bump()  # {
    saved, p.no_struct = p.no_struct, False
    delimited(p, K.R_BRACE, {K.IDENT}, _struct_lit_field, "a field")
    p.no_struct = saved
    p.complete(fields, K.STRUCT_LIT_FIELD_LIST)
    return p.complete(m, K.STRUCT_LIT)


def _struct_lit_field(p: Parser) -> None:
    m = p.start()
    name_ref(p)
    if p.expect(K.COLON):
        if expr(p) is None:
            p.error("K0102", f"expected an expression, found {describe(p.current())}")
    p.complete(m, K.STRUCT_LIT_FIELD)


def _paren_or_tuple(p: Parser, m, saved: bool) -> CompletedMarker:
    if not p.at(K.R_PAREN):
        if expr(p) is None:
            recover_until(
                p,
                "K0102",
                f"expected an expression, found {describe(p.current())}",
                {K.R_PAREN, K.SEMI},
            )
        elif p.at(K.COMMA):  # `(a, b)`, `(a,)`: a tuple
            p.bump()
            delimited(p, K.R_PAREN, EXPR_FIRST, _list_element, "an element")
            p.no_struct = saved
            return p.complete(m, K.TUPLE_EXPR)
    p.no_struct = saved
    p.expect(K.R_PAREN)
    return p.complete(m, K.PAREN_EXPR)
