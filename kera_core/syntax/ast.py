"""Typed AST: thin views over red syntax nodes. Nothing is copied.

Each class wraps one :class:`SyntaxNode` of a known kind and offers typed
accessors; accessors return ``None`` when the (possibly erroneous) tree lacks the
part, so later stages must cope with partial programs, as editors need.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from kera_core.source import Span
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.tree import SyntaxNode, SyntaxToken

K = SyntaxKind


A = TypeVar("A", bound="AstNode")


class AstNode:
    KIND: SyntaxKind | None = None
    __slots__ = ("syntax",)

    def __init__(self, syntax: SyntaxNode) -> None:
        self.syntax = syntax

    @property
    def span(self) -> Span:
        s = self.syntax  # ``s.span``'s body, one property call fewer on a hot path
        return Span(s.offset, s.offset + s.green.text_len)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.syntax!r})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.syntax == other.syntax  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.syntax)

    def _child(self, cls: type[A]) -> A | None:
        c = self.syntax.child_of_kind(cls.KIND)  # type: ignore[arg-type]
        return None if c is None else cls(c)

    def _children(self, cls: type[A]) -> Iterator[A]:
        for c in self.syntax.children():
            if c.kind == cls.KIND:
                yield cls(c)

    def _token(self, kind: SyntaxKind) -> SyntaxToken | None:
        return self.syntax.token_of_kind(kind)


def _name_text(node: SyntaxNode | None) -> str | None:
    if node is None:
        return None
    for c in node.green.children:  # the first IDENT token's text, read off the green node
        if (c.kind == K.IDENT or c.kind == K.INT) and c.is_token:  # INT: a tuple field, `t.0`
            return c.text  # type: ignore[union-attr]
    return None


class Name(AstNode):
    KIND = K.NAME

    @property
    def text(self) -> str:
        return _name_text(self.syntax) or ""


class NameRef(AstNode):
    KIND = K.NAME_REF

    @property
    def text(self) -> str:
        return _name_text(self.syntax) or ""


# --- items -------------------------------------------------------------------


class Item(AstNode):
    @property
    def name(self) -> Name | None:
        return self._child(Name)

    @property
    def is_pub(self) -> bool:
        return self.syntax.child_of_kind(K.VISIBILITY) is not None

    @property
    def doc(self) -> str:
        """The `///` doc comment lines above the item, without the slashes."""
        lines = []
        for t in self.syntax.child_tokens():
            if t.kind == K.DOC_COMMENT:
                body = t.text[3:]
                lines.append(body[1:] if body.startswith(" ") else body)
            elif not t.kind.is_trivia:
                break
        return "\n".join(lines)


class Fn(Item):
    KIND = K.FN

    @property
    def type_params(self) -> list[TypeParam]:
        lst = self.syntax.child_of_kind(K.TYPE_PARAM_LIST)
        return (
            [] if lst is None else [TypeParam(c) for c in lst.children() if c.kind == K.TYPE_PARAM]
        )

    @property
    def type_param_list(self) -> SyntaxNode | None:
        return self.syntax.child_of_kind(K.TYPE_PARAM_LIST)

    @property
    def dim_params(self) -> list[Name]:
        lst = self.syntax.child_of_kind(K.DIM_PARAM_LIST)
        if lst is None:
            return []
        return [n for d in lst.children() for n in AstNode(d)._children(Name)]

    @property
    def params(self) -> list[Param]:
        lst = self.syntax.child_of_kind(K.PARAM_LIST)
        return [] if lst is None else [Param(c) for c in lst.children() if c.kind == K.PARAM]

    @property
    def param_list(self) -> SyntaxNode | None:
        return self.syntax.child_of_kind(K.PARAM_LIST)

    @property
    def ret_type(self) -> Type | None:
        r = self.syntax.child_of_kind(K.RET_TYPE)
        return None if r is None else type_of(r)

    @property
    def effects(self) -> list[SyntaxNode]:
        lst = self.syntax.child_of_kind(K.EFFECT_LIST)
        return [] if lst is None else [c for c in lst.children() if c.kind == K.EFFECT]

    @property
    def effect_list(self) -> SyntaxNode | None:
        return self.syntax.child_of_kind(K.EFFECT_LIST)

    @property
    def body(self) -> Block | None:
        return self._child(Block)


class TypeParam(AstNode):
    """`T: Float` in `fn f<T: Float>(…)`."""

    KIND = K.TYPE_PARAM

    @property
    def name(self) -> Name | None:
        return self._child(Name)

    @property
    def bound(self) -> SyntaxNode | None:
        return self.syntax.child_of_kind(K.BOUND)


class Param(AstNode):
    KIND = K.PARAM

    @property
    def name(self) -> Name | None:
        return self._child(Name)

    @property
    def is_mut(self) -> bool:
        return self._token(K.MUT_KW) is not None

    @property
    def type(self) -> Type | None:
        return type_of(self.syntax)


class Struct(Item):
    KIND = K.STRUCT

    @property
    def fields(self) -> list[Field]:
        lst = self.syntax.child_of_kind(K.FIELD_LIST)
        return [] if lst is None else [Field(c) for c in lst.children() if c.kind == K.FIELD]


class Field(Item):
    KIND = K.FIELD

    @property
    def type(self) -> Type | None:
        return type_of(self.syntax)


class Const(Item):
    KIND = K.CONST

    @property
    def type(self) -> Type | None:
        return type_of(self.syntax)

    @property
    def value(self) -> Expr | None:
        return expr_of(self.syntax)


class SourceFile(AstNode):
    KIND = K.SOURCE_FILE

    @property
    def items(self) -> list[Item]:
        return self.syntax.wrapped_children(_ITEMS)

    def functions(self) -> list[Fn]:
        return [i for i in self.items if isinstance(i, Fn)]

    def structs(self) -> list[Struct]:
        return [i for i in self.items if isinstance(i, Struct)]

    def consts(self) -> list[Const]:
        return [i for i in self.items if isinstance(i, Const)]

    def uses(self) -> list[Use]:
        """The `use` declarations (not in ``items``: they define nothing of their own)."""
        return list(self._children(Use))


class Use(AstNode):
    """`use a::b::{f, g as h};`: the module path and the items brought in."""

    KIND = K.USE

    @property
    def path(self) -> list[NameRef]:
        p = self.syntax.child_of_kind(K.USE_PATH)
        return [] if p is None else [NameRef(c) for c in p.children() if c.kind == K.NAME_REF]

    @property
    def module(self) -> str:
        return "::".join(r.text for r in self.path)

    @property
    def trees(self) -> list[UseTree]:
        lst = self.syntax.child_of_kind(K.USE_TREE_LIST)
        if lst is not None:
            return list(UseTree(c) for c in lst.children() if c.kind == K.USE_TREE)
        return list(self._children(UseTree))


class UseTree(AstNode):
    """`f` or `f as g` in a `use`: the item's name and the optional local alias."""

    KIND = K.USE_TREE

    @property
    def item(self) -> NameRef | None:
        return self._child(NameRef)

    @property
    def alias(self) -> Name | None:
        return self._child(Name)

    @property
    def local(self) -> Name | NameRef | None:
        """What names the item in this file: the alias, or the item's own name."""
        return self.alias or self.item


_ITEMS: dict[SyntaxKind, type[Item]] = {K.FN: Fn, K.STRUCT: Struct, K.CONST: Const}


# --- types ---------------------------------------------------------------------


class Type(AstNode):
    pass


class NamedType(Type):
    KIND = K.NAMED_TYPE

    @property
    def name(self) -> NameRef | None:
        return self._child(NameRef)


class TensorType(Type):
    KIND = K.TENSOR_TYPE

    @property
    def elem(self) -> NamedType | None:
        return self._child(NamedType)

    @property
    def dims(self) -> list[SyntaxNode]:
        """DIM nodes: each holds an INT token, a NAME_REF, or a dimension expression
        (DIM_BIN / DIM_PAREN, whose operands are again INT, NAME_REF, DIM_BIN or DIM_PAREN)."""
        shape = self.syntax.child_of_kind(K.SHAPE)
        return [] if shape is None else [c for c in shape.children() if c.kind == K.DIM]


class RefType(Type):
    KIND = K.REF_TYPE

    @property
    def is_mut(self) -> bool:
        return self._token(K.MUT_KW) is not None

    @property
    def inner(self) -> Type | None:
        return type_of(self.syntax)


class SpaceType(Type):
    KIND = K.SPACE_TYPE

    @property
    def inner(self) -> Type | None:
        return type_of(self.syntax)

    @property
    def space(self) -> NameRef | None:
        ms = self.syntax.child_of_kind(K.MEM_SPACE)
        return None if ms is None else AstNode(ms)._child(NameRef)


class UnitType(Type):
    KIND = K.UNIT_TYPE


class TupleType(Type):
    """`(f32, i64)`, `(f32,)`; `(f32)` without a comma is `f32` in parentheses."""

    KIND = K.TUPLE_TYPE

    @property
    def elements(self) -> list[Type]:
        return self.syntax.wrapped_children(_TYPES)

    @property
    def is_parenthesized(self) -> bool:
        """`(T)`: one element and no comma — the type itself, not a tuple."""
        return self._token(K.COMMA) is None and len(self.elements) == 1


class UnsupportedType(Type):
    """A type Kera does not have (`N + 1` in a shape): the parser reported it (K0112)."""

    KIND = K.UNSUPPORTED


_TYPES: dict[SyntaxKind, type[Type]] = {
    K.UNSUPPORTED: UnsupportedType,
    K.NAMED_TYPE: NamedType,
    K.TENSOR_TYPE: TensorType,
    K.REF_TYPE: RefType,
    K.SPACE_TYPE: SpaceType,
    K.UNIT_TYPE: UnitType,
    K.TUPLE_TYPE: TupleType,
}


def type_of(parent: SyntaxNode) -> Type | None:
    """The first type child of ``parent``."""
    return parent.wrapped_child(_TYPES)  # type: ignore[return-value]


# --- statements ------------------------------------------------------------------


class Block(AstNode):
    KIND = K.BLOCK

    @property
    def statements(self) -> list[AstNode]:
        """LetStmt / ExprStmt in order (the tail expression is not included)."""
        return self.syntax.wrapped_children(_STMTS)

    @property
    def tail(self) -> Expr | None:
        """The final expression without `;`, the block's value."""
        syntax = self.syntax
        green = syntax.green
        if len(green.children) < _LONG_BLOCK:
            return expr_of(syntax)
        # a long body is asked for its tail several times per keystroke: where it is, once
        hit = _TAILS.get(id(green))
        if hit is None or hit[0] is not green:
            at = next(
                (i for i, c in enumerate(green.children) if not c.is_token and c.kind in EXPRS),
                None,
            )
            if len(_TAILS) >= 16:
                _TAILS.clear()
            _TAILS[id(green)] = hit = (green, at)
        at = hit[1]
        return None if at is None else EXPRS[green.children[at].kind](syntax.child_at(at))


#: Blocks with at least this many children remember where their tail is (``_TAILS``: by the
#: green node's id, the node kept with it).
_LONG_BLOCK = 256
_TAILS: dict[int, tuple] = {}


class BindPat(AstNode):
    """`mut? name` in a tuple pattern; `_` binds nothing."""

    KIND = K.BIND_PAT

    @property
    def name(self) -> Name | None:
        return self._child(Name)

    @property
    def is_mut(self) -> bool:
        return self._token(K.MUT_KW) is not None


class TuplePat(AstNode):
    """`(a, mut b, _, (c, d))`."""

    KIND = K.TUPLE_PAT

    @property
    def elements(self) -> list[BindPat | TuplePat]:
        out: list[BindPat | TuplePat] = []
        for c in self.syntax.children():
            if c.kind == K.BIND_PAT:
                out.append(BindPat(c))
            elif c.kind == K.TUPLE_PAT:
                out.append(TuplePat(c))
        return out

    @property
    def is_parenthesized(self) -> bool:
        """`(a)`: one element and no comma — the pattern itself, not a tuple's."""
        return self._token(K.COMMA) is None and len(self.elements) == 1

    def binds(self) -> Iterator[BindPat]:
        """Every name pattern inside, in source order."""
        for p in self.elements:
            if isinstance(p, TuplePat):
                yield from p.binds()
            else:
                yield p


class LetStmt(AstNode):
    KIND = K.LET_STMT

    @property
    def name(self) -> Name | None:
        """The bound name of `let x = …` (None for a tuple pattern)."""
        return self._child(Name)

    @property
    def pattern(self) -> TuplePat | None:
        """The tuple pattern of `let (a, b) = …`."""
        return self._child(TuplePat)

    @property
    def is_mut(self) -> bool:
        return self._token(K.MUT_KW) is not None

    @property
    def type(self) -> Type | None:
        return type_of(self.syntax)

    @property
    def init(self) -> Expr | None:
        return expr_of(self.syntax)


class ExprStmt(AstNode):
    KIND = K.EXPR_STMT

    @property
    def expr(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def has_semi(self) -> bool:
        return self._token(K.SEMI) is not None


_STMTS: dict[SyntaxKind, type[AstNode]] = {K.LET_STMT: LetStmt, K.EXPR_STMT: ExprStmt}


# --- expressions ---------------------------------------------------------------


class Expr(AstNode):
    pass


class Literal(Expr):
    KIND = K.LITERAL

    @property
    def token(self) -> SyntaxToken:
        t = self.syntax.first_significant_token()
        if t is None:
            raise AssertionError("a LITERAL node always has its token")
        return t


class PathExpr(Expr):
    KIND = K.PATH_EXPR

    @property
    def name(self) -> NameRef | None:
        return self._child(NameRef)

    @property
    def name_text(self) -> str | None:
        """``name.text``, or None without a name: read off the green tree (no cursors)."""
        for c in self.syntax.green.children:
            if c.kind == K.NAME_REF and not c.is_token:
                for t in c.children:  # type: ignore[union-attr]
                    if t.kind == K.IDENT and t.is_token:
                        return t.text  # type: ignore[union-attr]
                return ""
        return None


class ParenExpr(Expr):
    KIND = K.PAREN_EXPR

    @property
    def inner(self) -> Expr | None:
        return expr_of(self.syntax)


class TupleExpr(Expr):
    """`(a, b)`, `(a,)`."""

    KIND = K.TUPLE_EXPR

    @property
    def elements(self) -> list[Expr]:
        return exprs_of(self.syntax)


class ArrayExpr(Expr):
    KIND = K.ARRAY_EXPR

    @property
    def elements(self) -> list[Expr]:
        return exprs_of(self.syntax)


class BlockExpr(Expr):
    KIND = K.BLOCK_EXPR

    @property
    def block(self) -> Block | None:
        return self._child(Block)


class IfExpr(Expr):
    KIND = K.IF_EXPR

    @property
    def condition(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def then_branch(self) -> Block | None:
        return self._child(Block)

    @property
    def else_branch(self) -> Block | IfExpr | None:
        """The block after `else`, or a nested `if` for `else if`."""
        seen_else = False
        for el in self.syntax.children_with_tokens():
            if el.kind == K.ELSE_KW:
                seen_else = True
            elif seen_else and el.kind == K.BLOCK:
                return Block(el)  # type: ignore[arg-type]
            elif seen_else and el.kind == K.IF_EXPR:
                return IfExpr(el)  # type: ignore[arg-type]
        return None


class ForExpr(Expr):
    KIND = K.FOR_EXPR

    @property
    def var(self) -> Name | None:
        return self._child(Name)

    @property
    def iterable(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def body(self) -> Block | None:
        return self._child(Block)


class WhileExpr(Expr):
    KIND = K.WHILE_EXPR

    @property
    def condition(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def body(self) -> Block | None:
        return self._child(Block)


class LoopExpr(Expr):
    """`loop { body }`: runs until a `break` or `return` (the same as `while true { body }`)."""

    KIND = K.LOOP_EXPR

    @property
    def condition(self) -> None:
        return None  # always true

    @property
    def body(self) -> Block | None:
        return self._child(Block)


class MatchExpr(Expr):
    """`match scrutinee { pattern => expr, … }`."""

    KIND = K.MATCH_EXPR

    @property
    def scrutinee(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def arm_list(self) -> SyntaxNode | None:
        return self.syntax.child_of_kind(K.MATCH_ARM_LIST)

    @property
    def arms(self) -> list[MatchArm]:
        lst = self.arm_list
        return [] if lst is None else list(AstNode(lst)._children(MatchArm))


#: The kinds of a pattern's nodes (an atom is an expression node: a literal, `-` literal,
#: a constant's or `_`'s PATH_EXPR, a number type's constant `i8::MIN`).
PATTERN_KINDS = frozenset(
    {K.OR_PAT, K.RANGE_PAT, K.LITERAL, K.PREFIX_EXPR, K.PATH_EXPR, K.CONST_PATH, K.UNSUPPORTED}
)


class MatchArm(AstNode):
    KIND = K.MATCH_ARM

    @property
    def pattern(self) -> SyntaxNode | None:
        """The pattern: an OR_PAT, a RANGE_PAT or an atom (LITERAL, PREFIX_EXPR, PATH_EXPR)."""
        for c in self.syntax.children_with_tokens():
            if c.kind == K.FAT_ARROW:
                return None
            if isinstance(c, SyntaxNode) and c.kind in PATTERN_KINDS:
                return c
        return None

    @property
    def body(self) -> Expr | None:
        seen = False
        for c in self.syntax.children_with_tokens():
            if c.kind == K.FAT_ARROW:
                seen = True
            elif seen and isinstance(c, SyntaxNode) and (e := as_expr(c)) is not None:
                return e
        return None


class ReturnExpr(Expr):
    KIND = K.RETURN_EXPR

    @property
    def value(self) -> Expr | None:
        return expr_of(self.syntax)


class BreakExpr(Expr):
    KIND = K.BREAK_EXPR


class ContinueExpr(Expr):
    KIND = K.CONTINUE_EXPR


class _Binary(Expr):
    @property
    def operands(self) -> tuple[Expr | None, Expr | None]:
        """``(lhs, rhs)``, from one scan of the children."""
        es = exprs_of(self.syntax)
        return (es[0] if es else None, es[1] if len(es) > 1 else None)

    @property
    def lhs(self) -> Expr | None:
        es = exprs_of(self.syntax)
        return es[0] if es else None

    @property
    def rhs(self) -> Expr | None:
        es = exprs_of(self.syntax)
        return es[1] if len(es) > 1 else None

    @property
    def op(self) -> SyntaxToken | None:
        return self.syntax.first_significant_token()


class BinExpr(_Binary):
    KIND = K.BIN_EXPR


class AssignExpr(_Binary):
    KIND = K.ASSIGN_EXPR


class RangeExpr(_Binary):
    KIND = K.RANGE_EXPR

    @property
    def inclusive(self) -> bool:
        return self._token(K.DOT2EQ) is not None

    @property
    def bounds(self) -> tuple[Expr | None, Expr | None]:
        """``(lo, hi)`` by their side of the `..`: either is None when left out (`x[..hi]`,
        `x[lo..]`, `x[..]` in a slice) or missing."""
        lo = hi = None
        seen_op = False
        for c in self.syntax.children_with_tokens():
            k = c.kind
            if k in (K.DOT2, K.DOT2EQ):
                seen_op = True
            elif isinstance(c, SyntaxNode) and (e := as_expr(c)) is not None:
                if seen_op:
                    hi = e
                else:
                    lo = e
        return lo, hi

    @property
    def is_open(self) -> bool:
        """A bound is left out (only a slice's range may do that)."""
        lo, hi = self.bounds
        return lo is None or hi is None


class PrefixExpr(Expr):
    KIND = K.PREFIX_EXPR

    @property
    def op(self) -> SyntaxToken | None:
        return self._token(K.MINUS) or self._token(K.BANG)

    @property
    def operand(self) -> Expr | None:
        return expr_of(self.syntax)


class RefExpr(Expr):
    KIND = K.REF_EXPR

    @property
    def is_mut(self) -> bool:
        return self._token(K.MUT_KW) is not None

    @property
    def operand(self) -> Expr | None:
        return expr_of(self.syntax)


class CastExpr(Expr):
    KIND = K.CAST_EXPR

    @property
    def expr(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def type(self) -> Type | None:
        return type_of(self.syntax)


class CallExpr(Expr):
    KIND = K.CALL_EXPR

    @property
    def callee(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def args(self) -> list[Expr]:
        lst = self.syntax.child_of_kind(K.ARG_LIST)
        return [] if lst is None else exprs_of(lst)


class IndexExpr(Expr):
    KIND = K.INDEX_EXPR

    @property
    def base(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def indices(self) -> list[Expr]:
        lst = self.syntax.child_of_kind(K.INDEX_LIST)
        return [] if lst is None else exprs_of(lst)


class FieldExpr(Expr):
    KIND = K.FIELD_EXPR

    @property
    def base(self) -> Expr | None:
        return expr_of(self.syntax)

    @property
    def field(self) -> NameRef | None:
        return self._child(NameRef)


class StructLit(Expr):
    KIND = K.STRUCT_LIT

    @property
    def name(self) -> NameRef | None:
        return self._child(NameRef)

    @property
    def fields(self) -> list[StructLitField]:
        lst = self.syntax.child_of_kind(K.STRUCT_LIT_FIELD_LIST)
        return [] if lst is None else list(AstNode(lst)._children(StructLitField))


class StructLitField(AstNode):
    KIND = K.STRUCT_LIT_FIELD

    @property
    def name(self) -> NameRef | None:
        return self._child(NameRef)

    @property
    def value(self) -> Expr | None:
        return expr_of(self.syntax)


class ConstPath(Expr):
    """``f32::PI``: a constant a primitive type names (sema/type_constants.py)."""

    KIND = K.CONST_PATH

    @property
    def type_name(self) -> NameRef | None:
        refs = list(self._children(NameRef))
        return refs[0] if refs else None

    @property
    def name(self) -> NameRef | None:
        refs = list(self._children(NameRef))
        return refs[1] if len(refs) > 1 else None


class UnsupportedExpr(Expr):
    """An expression Kera does not have (`a::b::c`): the parser reported it
    (K0112); the checker takes it as an erroneous value, so nothing else is reported."""

    KIND = K.UNSUPPORTED


EXPRS: dict[SyntaxKind, type[Expr]] = {
    cls.KIND: cls  # type: ignore[misc]
    for cls in (
        UnsupportedExpr,
        ConstPath,
        Literal,
        PathExpr,
        ParenExpr,
        TupleExpr,
        ArrayExpr,
        BlockExpr,
        IfExpr,
        ForExpr,
        WhileExpr,
        LoopExpr,
        MatchExpr,
        ReturnExpr,
        BreakExpr,
        ContinueExpr,
        BinExpr,
        AssignExpr,
        RangeExpr,
        PrefixExpr,
        RefExpr,
        CastExpr,
        CallExpr,
        IndexExpr,
        FieldExpr,
        StructLit,
    )
}


def as_expr(node: SyntaxNode) -> Expr | None:
    cls = EXPRS.get(node.kind)
    return None if cls is None else cls(node)


def expr_of(parent: SyntaxNode) -> Expr | None:
    """The first expression child of ``parent``."""
    return parent.wrapped_child(EXPRS)  # type: ignore[return-value]


def exprs_of(parent: SyntaxNode) -> list[Expr]:
    return parent.wrapped_children(EXPRS)
