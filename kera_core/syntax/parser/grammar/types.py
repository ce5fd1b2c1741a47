"""Types: `f32`, `Point`, `f32[N, 4]`, `&mut T`, `T @device`, `()`, `(f32, i64)`."""

from __future__ import annotations

from kera_core.syntax.kinds import FAST_KINDS, describe
from kera_core.syntax.parser.events import FINISH, LEAF, TOKEN, TOMBSTONE
from kera_core.syntax.parser.grammar.common import delimited, name_ref
from kera_core.syntax.parser.parser import FUEL, MAX_DEPTH, Parser, Stuck

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

TYPE_FIRST = frozenset({K.IDENT, K.AMP, K.L_PAREN})
DIM_FIRST = frozenset({K.IDENT, K.INT, K.L_PAREN})


def type_(p: Parser) -> bool:
    """Parse one type; on failure report and consume nothing."""
    p.fuel -= 1  # `k = p.current()`, inlined (as each look below: fuel spent, stuck at 0)
    if p.fuel <= 0:
        raise Stuck
    k = p.kinds[p.pos]
    if k == K.AMP:
        p.depth += 1
        try:
            if p.depth > MAX_DEPTH:
                p.skip_balanced("K0108", "type nested too deeply")
                return True
            m = p.start()
            p.bump()
            p.eat(K.MUT_KW)
            type_(p)
            p.complete(m, K.REF_TYPE)
            return True
        finally:
            p.depth -= 1
    if k == K.L_PAREN and p.nth(1) == K.R_PAREN:
        m = p.start()
        p.bump()
        p.bump()
        cm = p.complete(m, K.UNIT_TYPE)
    elif k == K.IDENT:
        cm = p.leaf2(K.NAMED_TYPE, K.NAME_REF)
        p.fuel -= 1  # `p.at(K.L_BRACK)`
        if p.fuel <= 0:
            raise Stuck
        if p.kinds[p.pos] == K.L_BRACK:
            m = p.precede(cm)
            shape(p)
            cm = p.complete(m, K.TENSOR_TYPE)
    elif k == K.L_PAREN:  # `(f32, i64)`, `(f32,)`; `(f32)` is `f32` in parentheses
        p.depth += 1
        try:
            if p.depth > MAX_DEPTH:
                p.skip_balanced("K0108", "type nested too deeply")
                return True
            m = p.start()
            p.bump()
            delimited(p, K.R_PAREN, TYPE_FIRST, type_, "a type")
            cm = p.complete(m, K.TUPLE_TYPE)
        finally:
            p.depth -= 1
    else:
        p.error("K0103", f"expected a type, found {describe(k)}")
        return False
    p.fuel -= 1  # `p.at(K.AT)`
    if p.fuel <= 0:
        raise Stuck
    if p.kinds[p.pos] == K.AT:
        m = p.precede(cm)
        mem_space(p)
        p.complete(m, K.SPACE_TYPE)
    return True


def shape(p: Parser) -> None:
    m = p.start()
    p.bump()  # [
    delimited(
        p, K.R_BRACK, DIM_FIRST, dim, "a dimension (a number, a name or an expression of them)"
    )
    p.complete(m, K.SHAPE)


DIM_OPS = {K.PLUS: 1, K.MINUS: 1, K.STAR: 2, K.SLASH: 2}  # binding power
_DIM_AFTER_ATOM = frozenset({*DIM_OPS, K.PERCENT})  # what makes a dimension more than its atom
_NAME_REF_LEAF = K.NAME_REF | LEAF  # `p.leaf(K.NAME_REF)`'s event


def dim(p: Parser) -> None:
    """One dimension: `4`, `N`, or arithmetic over them (`N + 1`, `2 * N`, `(N - 1) / 2`);
    `*` and `/` bind tighter than `+` and `-`, all of them to the left."""
    pos = p.pos
    kinds = p.kinds
    k = kinds[pos]
    if (k == K.IDENT or k == K.INT) and kinds[pos + 1] not in _DIM_AFTER_ATOM:
        # `N` or `4` alone: the events and the looks of the general rules below (the
        # start of the DIM, `_dim_expr`'s start, abandoned after the atom but not the last
        # event, so left a tombstone; a look before the atom, two after it).
        events = p.events
        m = len(events)
        events += (TOMBSTONE, TOMBSTONE)
        p.fuel -= 1
        if p.fuel <= 0:
            raise Stuck
        events.append(_NAME_REF_LEAF if k == K.IDENT else TOKEN)
        p.pos = pos + 1
        p.fuel = FUEL - 2
        if p.fuel <= 0:
            raise Stuck
        events[m] = K.DIM
        events.append(FINISH)
        return
    m = p.start()
    _dim_expr(p, 0)
    if p.current() == K.PERCENT:  # `N % 2`: one error for the rest of the dimension
        e = p.start()
        p.error("K0112", "`%` is not a dimension operator: dimensions use `+`, `-`, `*` and `/`")
        while not p.at_eof() and p.current() not in (K.COMMA, K.R_BRACK, K.L_BRACE, K.SEMI):
            if p.current() in (K.L_PAREN, K.L_BRACK):
                _skip_group(p)
            else:
                p.bump()
        p.complete(e, K.UNSUPPORTED)
    p.complete(m, K.DIM)


def _dim_expr(p: Parser, min_bp: int) -> None:
    first = p.start()  # becomes the first DIM_BIN if an operator follows the first operand
    _dim_atom(p)
    lhs = None
    while True:
        bp = DIM_OPS.get(p.current())
        if bp is None or bp <= min_bp:
            break
        m = first if lhs is None else p.precede(lhs)
        p.bump()
        if p.current() in DIM_ATOM_FIRST:
            _dim_expr(p, bp)
        else:
            p.error("K0100", "expected a dimension (a number, a name or `(`) after the operator")
        lhs = p.complete(m, K.DIM_BIN)
    if lhs is None:
        p.abandon(first)


DIM_ATOM_FIRST = frozenset({K.IDENT, K.INT, K.L_PAREN})


def _dim_atom(p: Parser) -> None:
    """An operand: an INT token, a NAME_REF, or a parenthesized DIM_PAREN."""
    k = p.current()
    if k == K.IDENT:
        p.leaf(K.NAME_REF)
    elif k == K.INT:
        p.bump()
    elif k == K.L_PAREN:
        p.depth += 1
        try:
            if p.depth > MAX_DEPTH:
                p.skip_balanced("K0108", "dimension nested too deeply")
                return
            m = p.start()
            p.bump()
            if p.current() in DIM_ATOM_FIRST:
                _dim_expr(p, 0)
            else:
                p.error("K0100", "expected a dimension (a number, a name or `(`)")
            p.expect(K.R_PAREN)
            p.complete(m, K.DIM_PAREN)
        finally:
            p.depth -= 1
    else:
        p.error("K0100", "expected a dimension (a number, a name or `(`)")


def _skip_group(p: Parser) -> None:
    """Consume a bracketed group, from its opening delimiter to the matching close (or to a
    `{`/`;`/end of file at depth 0, where the enclosing rule takes over)."""
    depth = 0
    while not p.at_eof():
        k = p.current()
        if k in (K.L_PAREN, K.L_BRACK):
            depth += 1
        elif k in (K.R_PAREN, K.R_BRACK):
            depth -= 1
            p.bump()
            if depth <= 0:
                return
            continue
        elif depth <= 1 and k in (K.L_BRACE, K.SEMI):
            return
        p.bump()


def mem_space(p: Parser) -> None:
    m = p.start()
    p.bump()  # @
    if p.at(K.IDENT):
        name_ref(p)
    else:
        p.error("K0100", "expected a memory space (`host`, `device`, `pinned`, `unified`)")
    p.complete(m, K.MEM_SPACE)
