"""Syntax kinds: one enum for every token and node kind of the lossless tree.

Tokens and nodes share one numbering space so that a green element's kind is a
single small integer, cheap to hash and to intern.
"""

from __future__ import annotations

from enum import IntEnum
from typing import cast


class SyntaxKind(IntEnum):
    # --- trivia -----------------------------------------------------------
    WHITESPACE = 1
    COMMENT = 2  # `// …` and nested `/* … */`
    DOC_COMMENT = 3  # `/// …`
    # --- atoms ------------------------------------------------------------
    IDENT = 10
    INT = 11
    FLOAT = 12
    STRING = 13
    ERROR_TOKEN = 14
    EOF = 15
    # --- keywords ---------------------------------------------------------
    FN_KW = 20
    PUB_KW = 21
    LET_KW = 22
    MUT_KW = 23
    IF_KW = 24
    ELSE_KW = 25
    FOR_KW = 26
    IN_KW = 27
    WHILE_KW = 28
    RETURN_KW = 29
    STRUCT_KW = 30
    CONST_KW = 31
    TRUE_KW = 32
    FALSE_KW = 33
    AS_KW = 34
    BREAK_KW = 35
    CONTINUE_KW = 36
    USE_KW = 37
    LOOP_KW = 38
    MATCH_KW = 39
    # --- punctuation ------------------------------------------------------
    L_PAREN = 50
    R_PAREN = 51
    L_BRACK = 52
    R_BRACK = 53
    L_BRACE = 54
    R_BRACE = 55
    COMMA = 56
    SEMI = 57
    COLON = 58
    DOT = 59
    DOT2 = 60  # ..
    DOT2EQ = 61  # ..=
    ARROW = 62  # ->
    FAT_ARROW = 63  # =>
    EQ = 64
    EQ2 = 65
    NEQ = 66
    LT = 67
    LTEQ = 68
    GT = 69
    GTEQ = 70
    PLUS = 71
    MINUS = 72
    STAR = 73
    SLASH = 74
    PERCENT = 75
    BANG = 76
    AMP = 77
    AMP2 = 78
    PIPE = 79
    PIPE2 = 80
    CARET = 81
    SHL = 82
    SHR = 83
    PLUSEQ = 84
    MINUSEQ = 85
    STAREQ = 86
    SLASHEQ = 87
    PERCENTEQ = 88
    AMPEQ = 89
    PIPEEQ = 90
    CARETEQ = 91
    SHLEQ = 92
    SHREQ = 93
    AT = 94
    POUND = 95
    QUESTION = 96
    COLON2 = 97
    # --- nodes: file and items --------------------------------------------
    SOURCE_FILE = 200
    FN = 201
    STRUCT = 202
    CONST = 203
    VISIBILITY = 204
    NAME = 205
    NAME_REF = 206
    DIM_PARAM_LIST = 207
    DIM_PARAM = 208
    PARAM_LIST = 209
    PARAM = 210
    RET_TYPE = 211
    EFFECT_LIST = 212
    EFFECT = 213
    FIELD_LIST = 214
    FIELD = 215
    TYPE_PARAM_LIST = 216  # <T: Float, U: Int>
    TYPE_PARAM = 217  # T: Float
    BOUND = 218  # Float
    USE = 219  # use linalg::{axpy, dot as inner};
    USE_PATH = 220  # linalg, a::b (the module)
    USE_TREE_LIST = 221  # {axpy, dot as inner}
    USE_TREE = 222  # axpy, dot as inner
    # --- nodes: types -----------------------------------------------------
    NAMED_TYPE = 230  # f32, Point
    TENSOR_TYPE = 231  # f32[N, 4]
    SHAPE = 232  # [N, 4]
    DIM = 233  # N | 4
    REF_TYPE = 234  # &T, &mut T
    SPACE_TYPE = 235  # T @device
    MEM_SPACE = 236  # @device
    UNIT_TYPE = 237  # ()
    TUPLE_TYPE = 238  # (f32, i64), (f32,)
    DIM_BIN = 239  # N + 1, 2 * N (inside a DIM)
    DIM_PAREN = 240  # (N + 1) (inside a DIM)
    # --- nodes: statements ------------------------------------------------
    BLOCK = 250
    LET_STMT = 251
    EXPR_STMT = 252
    TUPLE_PAT = 253  # `(a, mut b, _)` in `let (a, mut b, _) = …;`
    BIND_PAT = 254  # `mut? name` inside a tuple pattern (`_` binds nothing)
    # --- nodes: `loop` and `match` ------------------------------------------
    LOOP_EXPR = 255  # loop { … }
    MATCH_EXPR = 256  # match x { 1 | 2 => a, 3..=9 => b, _ => c }
    MATCH_ARM_LIST = 257  # { arm, arm, … } of a match
    MATCH_ARM = 258  # pattern => expr
    OR_PAT = 259  # 1 | 2 (its alternatives: the patterns below)
    RANGE_PAT = 260  # lo..=hi
    # A pattern's atoms are expression nodes: LITERAL (`1`, `true`), PREFIX_EXPR (`-1`) and
    # PATH_EXPR (a constant `K`, or the wildcard `_`).
    # --- nodes: expressions -----------------------------------------------
    LITERAL = 270
    PATH_EXPR = 271
    PAREN_EXPR = 272
    ARRAY_EXPR = 273
    BLOCK_EXPR = 274
    IF_EXPR = 275
    FOR_EXPR = 276
    WHILE_EXPR = 277
    RETURN_EXPR = 278
    BREAK_EXPR = 279
    CONTINUE_EXPR = 280
    BIN_EXPR = 281
    ASSIGN_EXPR = 282
    RANGE_EXPR = 283
    PREFIX_EXPR = 284
    REF_EXPR = 285
    CAST_EXPR = 286
    CALL_EXPR = 287
    ARG_LIST = 288
    INDEX_EXPR = 289
    INDEX_LIST = 290
    FIELD_EXPR = 291
    STRUCT_LIT = 292
    STRUCT_LIT_FIELD_LIST = 293
    STRUCT_LIT_FIELD = 294
    CONST_PATH = 295  # f32::PI — a constant a primitive type names
    TUPLE_EXPR = 296  # (a, b), (a,)
    # --- error recovery ---------------------------------------------------
    # a construct Kera does not have (`a::b::c`, `N % 2` in a shape): one
    # K0112 error covers it, and the checker takes it as an erroneous value or type
    UNSUPPORTED = 298
    ERROR = 299

    @property
    def is_trivia(self) -> bool:
        return self in _TRIVIA

    @property
    def is_token(self) -> bool:
        return self < 200

    @property
    def is_keyword(self) -> bool:
        return 20 <= self < 50

    @property
    def is_punct(self) -> bool:
        return 50 <= self < 200


_TRIVIA = frozenset({SyntaxKind.WHITESPACE, SyntaxKind.COMMENT, SyntaxKind.DOC_COMMENT})

KEYWORDS: dict[str, SyntaxKind] = {
    "fn": SyntaxKind.FN_KW,
    "pub": SyntaxKind.PUB_KW,
    "let": SyntaxKind.LET_KW,
    "mut": SyntaxKind.MUT_KW,
    "if": SyntaxKind.IF_KW,
    "else": SyntaxKind.ELSE_KW,
    "for": SyntaxKind.FOR_KW,
    "in": SyntaxKind.IN_KW,
    "while": SyntaxKind.WHILE_KW,
    "return": SyntaxKind.RETURN_KW,
    "struct": SyntaxKind.STRUCT_KW,
    "const": SyntaxKind.CONST_KW,
    "true": SyntaxKind.TRUE_KW,
    "false": SyntaxKind.FALSE_KW,
    "as": SyntaxKind.AS_KW,
    "break": SyntaxKind.BREAK_KW,
    "continue": SyntaxKind.CONTINUE_KW,
    "use": SyntaxKind.USE_KW,
    "loop": SyntaxKind.LOOP_KW,
    "match": SyntaxKind.MATCH_KW,
}

# Longest first: the lexer tries these in order.
PUNCTUATION: list[tuple[str, SyntaxKind]] = sorted(
    [
        ("(", SyntaxKind.L_PAREN),
        (")", SyntaxKind.R_PAREN),
        ("[", SyntaxKind.L_BRACK),
        ("]", SyntaxKind.R_BRACK),
        ("{", SyntaxKind.L_BRACE),
        ("}", SyntaxKind.R_BRACE),
        (",", SyntaxKind.COMMA),
        (";", SyntaxKind.SEMI),
        (":", SyntaxKind.COLON),
        ("::", SyntaxKind.COLON2),
        (".", SyntaxKind.DOT),
        ("..", SyntaxKind.DOT2),
        ("..=", SyntaxKind.DOT2EQ),
        ("->", SyntaxKind.ARROW),
        ("=>", SyntaxKind.FAT_ARROW),
        ("=", SyntaxKind.EQ),
        ("==", SyntaxKind.EQ2),
        ("!=", SyntaxKind.NEQ),
        ("<", SyntaxKind.LT),
        ("<=", SyntaxKind.LTEQ),
        (">", SyntaxKind.GT),
        (">=", SyntaxKind.GTEQ),
        ("+", SyntaxKind.PLUS),
        ("-", SyntaxKind.MINUS),
        ("*", SyntaxKind.STAR),
        ("/", SyntaxKind.SLASH),
        ("%", SyntaxKind.PERCENT),
        ("!", SyntaxKind.BANG),
        ("&", SyntaxKind.AMP),
        ("&&", SyntaxKind.AMP2),
        ("|", SyntaxKind.PIPE),
        ("||", SyntaxKind.PIPE2),
        ("^", SyntaxKind.CARET),
        ("<<", SyntaxKind.SHL),
        (">>", SyntaxKind.SHR),
        ("+=", SyntaxKind.PLUSEQ),
        ("-=", SyntaxKind.MINUSEQ),
        ("*=", SyntaxKind.STAREQ),
        ("/=", SyntaxKind.SLASHEQ),
        ("%=", SyntaxKind.PERCENTEQ),
        ("&=", SyntaxKind.AMPEQ),
        ("|=", SyntaxKind.PIPEEQ),
        ("^=", SyntaxKind.CARETEQ),
        ("<<=", SyntaxKind.SHLEQ),
        (">>=", SyntaxKind.SHREQ),
        ("@", SyntaxKind.AT),
        ("#", SyntaxKind.POUND),
        ("?", SyntaxKind.QUESTION),
    ],
    key=lambda p: -len(p[0]),
)

PUNCT_TEXT: dict[SyntaxKind, str] = {k: t for t, k in PUNCTUATION}
KEYWORD_TEXT: dict[SyntaxKind, str] = {k: t for t, k in KEYWORDS.items()}


def describe(kind: SyntaxKind) -> str:
    """Human name of a token kind for diagnostics: the text for fixed tokens."""
    if kind in PUNCT_TEXT:
        return f"`{PUNCT_TEXT[kind]}`"
    if kind in KEYWORD_TEXT:
        return f"`{KEYWORD_TEXT[kind]}`"
    return {
        SyntaxKind.IDENT: "identifier",
        SyntaxKind.INT: "integer literal",
        SyntaxKind.FLOAT: "float literal",
        SyntaxKind.STRING: "string literal",
        SyntaxKind.EOF: "end of file",
    }.get(kind, kind.name.lower())


class _KindNames:
    """Every ``SyntaxKind`` member as a plain class attribute.

    ``SyntaxKind.IDENT`` goes through the enum's member descriptor (~0.2 µs); the
    grammar spells kinds in its hottest paths, so it reads them from here instead.
    """


for _name, _member in SyntaxKind.__members__.items():
    setattr(_KindNames, _name, _member)

#: ``K.IDENT`` etc. with the same members as ``SyntaxKind``, for hot code (typed as it).
FAST_KINDS: type[SyntaxKind] = cast("type[SyntaxKind]", _KindNames)
