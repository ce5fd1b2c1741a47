"""Items: functions, structs, constants and `use` declarations at the top level of a file."""

from __future__ import annotations

from kera_core.syntax.kinds import FAST_KINDS, describe
from kera_core.syntax.parser.grammar.common import (
    ITEM_FIRST,
    RESERVED_NAMES,
    delimited,
    name,
    recover_until,
)
from kera_core.syntax.parser.grammar.expressions import block, expr
from kera_core.syntax.parser.grammar.types import type_
from kera_core.syntax.parser.parser import Marker, Parser

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

_ITEM_RECOVERY = ITEM_FIRST
_LIST_STOP = ITEM_FIRST | {K.COMMA, K.R_PAREN, K.R_BRACE, K.L_BRACE, K.R_BRACK, K.EOF}


def source_file(p: Parser) -> None:
    m = p.start()
    while not p.at_eof():
        item(p)
    p.complete(m, K.SOURCE_FILE)


def items(p: Parser, stop: int) -> bool:
    """The file's items from ``p.pos`` until one ends at token ``stop`` (whether one did: the
    item reparse, syntax/reparse.py, parses one item alone with the next item's tokens in
    view)."""
    while p.pos < stop and not p.at_eof():
        item(p)
    return p.pos == stop


def item(p: Parser) -> None:
    m = p.start()
    has_vis = False
    if p.at(K.PUB_KW):
        p.leaf(K.VISIBILITY)
        has_vis = True
    k = p.current()
    if k == K.FN_KW:
        fn(p, m)
    elif k == K.STRUCT_KW:
        struct(p, m)
    elif k == K.CONST_KW:
        const(p, m)
    elif k == K.USE_KW and not has_vis:
        use(p, m)
    elif has_vis:
        p.error("K0101", f"expected `fn`, `struct` or `const` after `pub`, found {describe(k)}")
        p.complete(m, K.ERROR)
    else:
        p.abandon(m)
        recover_until(
            p,
            "K0101",
            f"expected an item (`fn`, `struct`, `const` or `use`), found {describe(k)}",
            _ITEM_RECOVERY,
        )
        if not p.at_eof() and not p.at_any(_ITEM_RECOVERY):
            # a stray closing delimiter: take it so the loop makes progress
            p.leaf(K.ERROR)


def fn(p: Parser, m: Marker) -> None:
    p.bump()  # fn
    name(p, "a function name")
    if p.at(K.LT):
        tparams = p.start()
        p.bump()
        delimited(p, K.GT, {K.IDENT}, _type_param, "a type parameter (`T: Float`)")
        p.complete(tparams, K.TYPE_PARAM_LIST)
    if p.at(K.L_BRACK):
        dims = p.start()
        p.bump()
        delimited(p, K.R_BRACK, {K.IDENT}, _dim_param, "a dimension name")
        p.complete(dims, K.DIM_PARAM_LIST)
    if p.at(K.L_PAREN):
        params = p.start()
        p.bump()
        delimited(p, K.R_PAREN, {K.IDENT, K.MUT_KW, *RESERVED_NAMES}, _param, "a parameter")
        p.complete(params, K.PARAM_LIST)
    else:
        p.error("K0100", f"expected `(` to open the parameter list, found {describe(p.current())}")
    if p.at(K.ARROW):
        r = p.start()
        p.bump()
        type_(p)
        p.complete(r, K.RET_TYPE)
    if p.at(K.BANG):
        effects = p.start()
        p.bump()
        _effect(p)
        while p.eat(K.COMMA):
            _effect(p)
        p.complete(effects, K.EFFECT_LIST)
    if p.at(K.L_BRACE):
        block(p)
    else:
        p.error("K0100", f"expected a function body `{{`, found {describe(p.current())}")
        if not p.at_any(ITEM_FIRST) and not p.at_eof():
            recover_until(p, "K0104", "unexpected tokens before the next item", ITEM_FIRST)
    p.complete(m, K.FN)


def _type_param(p: Parser) -> None:
    """`T: Float`: a type parameter and its bound (language.md §3.1.1)."""
    m = p.start()
    name(p)
    if p.at(K.COLON):
        p.bump()
        if p.at(K.IDENT):
            p.leaf(K.BOUND)
        else:
            p.error(
                "K0100",
                f"expected a bound (`Float`, `Int` or `Num`), found {describe(p.current())}",
            )
    else:
        p.error(
            "K0100",
            "expected `:` and a bound after a type parameter (`T: Float`, `T: Int`, `T: Num`),"
            f" found {describe(p.current())}",
        )
    p.complete(m, K.TYPE_PARAM)


def _dim_param(p: Parser) -> None:
    m = p.start()
    name(p)
    p.complete(m, K.DIM_PARAM)


def _param(p: Parser) -> None:
    m = p.start()
    p.eat(K.MUT_KW)
    name(p, "a parameter name")
    if p.expect(K.COLON):
        _type_or_skip(p)
    p.complete(m, K.PARAM)


def _type_or_skip(p: Parser) -> None:
    """A type in a list; a bad token is reported once and skipped, keeping the list intact."""
    if not type_(p) and not p.at_any(_LIST_STOP):
        p.bump_error()


def _effect(p: Parser) -> None:
    if p.at(K.IDENT):
        p.leaf(K.EFFECT)
    else:
        p.error("K0100", f"expected an effect name (e.g. `io`), found {describe(p.current())}")


def struct(p: Parser, m: Marker) -> None:
    p.bump()  # struct
    name(p, "a struct name")
    if p.at(K.L_BRACE):
        fields = p.start()
        p.bump()
        delimited(p, K.R_BRACE, {K.IDENT, K.PUB_KW, *RESERVED_NAMES}, _field, "a field")
        p.complete(fields, K.FIELD_LIST)
    else:
        p.error("K0100", f"expected `{{` to open the field list, found {describe(p.current())}")
    p.complete(m, K.STRUCT)


def _field(p: Parser) -> None:
    m = p.start()
    if p.at(K.PUB_KW):
        p.leaf(K.VISIBILITY)
    name(p, "a field name")
    if p.expect(K.COLON):
        _type_or_skip(p)
    p.complete(m, K.FIELD)


def const(p: Parser, m: Marker) -> None:
    p.bump()  # const
    name(p, "a constant name")
    if p.expect(K.COLON):
        type_(p)
    if p.expect(K.EQ):
        if expr(p) is None:
            p.error("K0102", f"expected an expression, found {describe(p.current())}")
    p.expect(K.SEMI)
    p.complete(m, K.CONST)


def use(p: Parser, m: Marker) -> None:
    """`use a::b::{f, g as h};` or `use a::b::f;` (language.md, "Modules"): the module path
    (every segment but the last) is a USE_PATH, each imported item a USE_TREE."""
    p.bump()  # use
    path = p.start()
    has_path = p.at(K.IDENT)
    if has_path:
        p.leaf(K.NAME_REF)
        # a segment is part of the module path while another `::` follows it
        while p.at(K.COLON2) and p.nth(1) == K.IDENT and p.nth(2) == K.COLON2:
            p.bump()  # ::
            p.leaf(K.NAME_REF)
    else:
        p.error("K0100", f"expected a module name after `use`, found {describe(p.current())}")
    p.complete(path, K.USE_PATH)
    if p.eat(K.COLON2):
        if p.at(K.L_BRACE):
            trees = p.start()
            p.bump()
            delimited(p, K.R_BRACE, {K.IDENT}, _use_tree, "an item name")
            p.complete(trees, K.USE_TREE_LIST)
        elif p.at(K.IDENT):
            _use_tree(p)
        else:
            p.error(
                "K0100", f"expected an item name or `{{` after `::`, found {describe(p.current())}"
            )
    elif has_path:
        p.error(
            "K0100",
            f"expected `::` and the items to use (`use module::{{f, g}};`), found "
            f"{describe(p.current())}",
        )
    p.expect(K.SEMI)
    p.complete(m, K.USE)


def _use_tree(p: Parser) -> None:
    m = p.start()
    p.leaf(K.NAME_REF)
    if p.eat(K.AS_KW) and not name(p, "a name after `as`"):
        if not p.at_any(_USE_TREE_END) and not p.at_eof():
            p.bump_error()  # `as 3`: the token is reported; the list goes on after it
    p.complete(m, K.USE_TREE)


_USE_TREE_END = frozenset({K.COMMA, K.R_BRACE, K.SEMI}) | ITEM_FIRST
