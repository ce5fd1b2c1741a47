"""Small rules and token sets shared by the grammar modules."""

from __future__ import annotations

from collections.abc import Callable, Collection

from kera_core.syntax.kinds import FAST_KINDS, SyntaxKind, describe
from kera_core.syntax.parser.events import TOKEN
from kera_core.syntax.parser.parser import FUEL, Parser, Stuck

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

ITEM_FIRST = frozenset({K.FN_KW, K.STRUCT_KW, K.CONST_KW, K.PUB_KW, K.USE_KW})

EXPR_FIRST = frozenset(
    {
        K.INT,
        K.FLOAT,
        K.STRING,
        K.TRUE_KW,
        K.FALSE_KW,
        K.IDENT,
        K.L_PAREN,
        K.L_BRACK,
        K.L_BRACE,
        K.IF_KW,
        K.FOR_KW,
        K.WHILE_KW,
        K.LOOP_KW,
        K.MATCH_KW,
        K.RETURN_KW,
        K.BREAK_KW,
        K.CONTINUE_KW,
        K.MINUS,
        K.BANG,
        K.AMP,
    }
)

STMT_FIRST = EXPR_FIRST | {K.LET_KW, K.SEMI}
_CLOSERS = frozenset({K.R_PAREN, K.R_BRACK, K.R_BRACE})
_STOP_SETS: dict[SyntaxKind, frozenset[SyntaxKind]] = {}  # `delimited`'s stop set, per closer


def name(p: Parser, what: str = "a name") -> bool:
    p.fuel -= 1  # `p.at(K.IDENT)`, inlined
    if p.fuel <= 0:
        raise Stuck
    if p.kinds[p.pos] == K.IDENT:
        p.leaf(K.NAME)
        return True
    k = p.current()
    if k in RESERVED_NAMES:
        # `let loop = …`: a name of older programs that is now a keyword. One error at it,
        # and the token is taken as the (erroneous) name, so the rest parses as meant.
        p.err_and_bump("K0100", reserved_message(k, what))
        return True
    p.error("K0100", f"expected {what}, found {describe(k)}")
    return False


#: Keywords a program may have used as names before they became keywords.
RESERVED_NAMES = frozenset({K.LOOP_KW, K.MATCH_KW})


def reserved_message(k: SyntaxKind, what: str) -> str:
    word = describe(k)
    return (
        f"expected {what}, found the keyword {word}: {word} is reserved and cannot be a name; "
        "rename it"
    )


def name_ref(p: Parser) -> None:
    p.leaf(K.NAME_REF)


def recover_until(p: Parser, code: str, message: str, stop: Collection[SyntaxKind]) -> None:
    """One error for a run of unexpected tokens, gathered into one ERROR node.

    Stops before a token in ``stop``, before a closing delimiter that closes an
    enclosing construct, and at end of file. Nested delimiters are skipped whole.
    """
    if p.at_any(stop) or p.at_eof() or p.at_any(_CLOSERS):
        p.error(code, message)  # nothing to gather; an enclosing rule handles the token
        return
    m = p.start()
    p.error(code, message)
    depth = 0
    while not p.at_eof():
        k = p.current()
        if depth == 0 and k in stop:
            break
        if k in (K.L_PAREN, K.L_BRACK, K.L_BRACE):
            depth += 1
        elif k in (K.R_PAREN, K.R_BRACK, K.R_BRACE):
            if depth == 0:
                break
            depth -= 1
        p.bump()
        if depth == 0 and k == K.R_BRACE:
            break
    p.complete(m, K.ERROR)


def delimited(
    p: Parser,
    close: SyntaxKind,
    first: Collection[SyntaxKind],
    element: Callable[[Parser], None],
    what: str,
) -> None:
    """Comma-separated ``element``s up to ``close`` (consumed), trailing comma allowed."""
    stop = _STOP_SETS.get(close)
    if stop is None:
        stop = _STOP_SETS[close] = (
            frozenset({close, K.COMMA, K.SEMI, K.L_BRACE, K.R_BRACE}) | ITEM_FIRST
        )
    # The loop of
    #     while not p.at(close) and not p.at_eof():
    #         if p.at_any(first): element(p)
    #         elif p.at_any(stop) and not p.at(K.COMMA): break
    #         else: recover; if not p.at(K.COMMA): break
    #         if p.at(close): break
    #         if not p.eat(K.COMMA):
    #             if p.at_any(first): report a missing comma; continue
    #             break
    # with each run of looks read off ``p.kinds`` at once and its fuel spent as those
    # calls spend it (one per look, stuck at zero; nothing changes between the looks).
    kinds = p.kinds
    n = p.n
    while True:
        pos = p.pos
        k = kinds[pos]
        if k == close:
            p.fuel -= 1
            if p.fuel <= 0:
                raise Stuck
            break
        if pos >= n:
            p.fuel -= 2
            if p.fuel <= 0:
                raise Stuck
            break
        if k in first:
            p.fuel -= 3
            if p.fuel <= 0:
                raise Stuck
            element(p)
        else:
            p.fuel -= 4  # and `at_any(stop)`
            if p.fuel <= 0:
                raise Stuck
            if k in stop and not p.at(K.COMMA):
                break  # a token that ends the list early: `expect(close)` reports it
            recover_until(p, "K0104", f"expected {what}, found {describe(p.current())}", stop)
            if not p.at(K.COMMA):
                break
        k = kinds[p.pos]
        if k == close:
            p.fuel -= 1
            if p.fuel <= 0:
                raise Stuck
            break
        p.fuel -= 2  # `at(close)`, then `eat(K.COMMA)`'s look
        if p.fuel <= 0:
            raise Stuck
        if k == K.COMMA:  # not EOF: consumed
            p.events.append(TOKEN)
            p.pos += 1
            p.fuel = FUEL
            continue
        if p.at_any(first):
            p.error("K0100", f"expected `,` or {describe(close)}, found {describe(p.current())}")
            continue
        break
    p.expect(close)
