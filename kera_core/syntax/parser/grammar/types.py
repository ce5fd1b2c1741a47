"""Types: `f32`, `Point`, `f32[N, 4]`, `&mut T`, `T @device`, `()`, `(f32, i64)`."""

from __future__ import annotations

from kera_core.syntax.kinds import FAST_KINDS, describe
from kera_core.syntax.parser.grammar.common import delimited, name_ref
from kera_core.syntax.parser.parser import MAX_DEPTH, Parser

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

TYPE_FIRST = frozenset({K.IDENT, K.AMP, K.L_PAREN})
DIM_FIRST = frozenset({K.IDENT, K.INT})


def type_(p: Parser) -> bool:
    """Parse one type; on failure report and consume nothing."""
    k = p.current()
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
        if p.at(K.L_BRACK):
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
    if p.at(K.AT):
        m = p.precede(cm)
        mem_space(p)
        p.complete(m, K.SPACE_TYPE)
    return True


def shape(p: Parser) -> None:
    m = p.start()
    p.bump()  # [
    delimited(p, K.R_BRACK, DIM_FIRST, dim, "a dimension (a number or a name)")
    p.complete(m, K.SHAPE)


ARITHMETIC = frozenset({K.PLUS, K.MINUS, K.STAR, K.SLASH, K.PERCENT})


def dim(p: Parser) -> None:
    m = p.start()
    if p.at(K.IDENT):
        name_ref(p)
    else:
        p.bump()
    if p.current() in ARITHMETIC:  # `f32[N + 1]`: one error for the rest of the dimension
        e = p.start()
        p.error(
            "K0112",
            "dimension arithmetic (`N + 1`, `2 * N`) is not in Kera yet: give the size a "
            "dimension parameter of its own",
        )
        while not p.at_eof() and p.current() not in (K.COMMA, K.R_BRACK, K.L_BRACE, K.SEMI):
            if p.current() in (K.L_PAREN, K.L_BRACK):
                _skip_group(p)
            else:
                p.bump()
        p.complete(e, K.UNSUPPORTED)
    p.complete(m, K.DIM)


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
