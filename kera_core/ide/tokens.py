"""Semantic tokens: every keyword, name, literal, comment and operator, classified.

Names are classified from what sema resolved (a use of a mutable local is a `variable`
with the `mutable` modifier, a call of a builtin a `function` with `defaultLibrary`),
falling back to their syntactic role where sema recorded nothing (types, spaces, effects).
The result is LSP's relative encoding, with columns in the negotiated position encoding
and multi-line tokens split per line.
"""

from __future__ import annotations

from kera_core.ide import builtins as B
from kera_core.ide.common import all_uses, walk
from kera_core.source import encode
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import UTF8, UTF32, Analysis

TOKEN_TYPES = [
    "keyword",
    "type",
    "struct",
    "function",
    "parameter",
    "variable",
    "property",
    "number",
    "string",
    "comment",
    "operator",
    "typeParameter",
    "enumMember",
    "method",
    "namespace",
]
TOKEN_MODIFIERS = ["declaration", "mutable", "readonly", "documentation", "defaultLibrary"]

_T = {name: i for i, name in enumerate(TOKEN_TYPES)}
RANGE_METHOD_NAMES = frozenset({"rev", "step_by"})
DECL, MUT, READONLY, DOC, LIB = (1 << i for i in range(5))

_OPERATORS = frozenset(
    {
        K.PLUS, K.MINUS, K.STAR, K.SLASH, K.PERCENT, K.BANG, K.AMP, K.AMP2, K.PIPE, K.PIPE2,
        K.CARET, K.SHL, K.SHR, K.EQ, K.EQ2, K.NEQ, K.LT, K.LTEQ, K.GT, K.GTEQ, K.PLUSEQ,
        K.MINUSEQ, K.STAREQ, K.SLASHEQ, K.PERCENTEQ, K.AMPEQ, K.PIPEEQ, K.CARETEQ, K.SHLEQ,
        K.SHREQ, K.DOT2, K.DOT2EQ, K.AT, K.ARROW,
    }
)  # fmt: skip

_DECL = {
    K.FN: ("function", DECL),
    K.STRUCT: ("struct", DECL),
    K.FIELD: ("property", DECL),
    K.CONST: ("variable", DECL | READONLY),
    K.PARAM: ("parameter", DECL),
    K.LET_STMT: ("variable", DECL),
    K.BIND_PAT: ("variable", DECL),
    K.FOR_EXPR: ("variable", DECL),
    K.DIM_PARAM: ("typeParameter", DECL),
    K.TYPE_PARAM: ("typeParameter", DECL),
}
_USE = {
    "local": ("variable", 0),
    "loop": ("variable", 0),
    "param": ("parameter", 0),
    "dim": ("typeParameter", 0),
    "tparam": ("typeParameter", 0),
    "fn": ("function", 0),
    "struct": ("struct", 0),
    "const": ("variable", READONLY),
    "field": ("property", 0),
}


def _units(text: str, encoding: str) -> int:
    if text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(encode(text))
    if encoding == UTF32:
        return len(text)
    return sum(2 if ord(c) > 0xFFFF else 1 for c in text)


def _mutable_name(node) -> bool:
    """Does this LET_STMT/PARAM/BIND_PAT (green) declare a mutable binding?"""
    for c in node.children:
        if c.is_token and c.kind == K.MUT_KW:
            return True
        if not c.is_token and c.kind == K.REF_TYPE and node.kind == K.PARAM:
            if any(t.is_token and t.kind == K.MUT_KW for t in c.children):
                return True
    return False


def _name_offset(node, off: int) -> int | None:
    for c in node.children:
        if not c.is_token and c.kind == K.NAME:
            return off
        off += c.text_len
    return None


def _stream(a: Analysis):
    """Every token in order as (green token, offset, classification or None)."""
    uses = {u.span.start: u for u in all_uses(a)}
    env = a.module.env if a.module is not None else None
    mutable_defs: set[int] = set()
    for el, off, anc in walk(a.parse.green):  # type: ignore[union-attr]
        if not el.is_token:
            if el.kind in (K.LET_STMT, K.PARAM, K.BIND_PAT) and _mutable_name(el):
                at = _name_offset(el, off)
                if at is not None:
                    mutable_defs.add(at)
            continue
        yield el, off, _classify_token(el, off, anc, uses, env, mutable_defs)


def classify(a: Analysis) -> list[tuple[int, int, int, int]]:
    """(byte offset, byte length, type index, modifier bits) of every classified token."""
    if a.parse is None:
        return []
    return [
        (off, tok.text_len, _T[cls[0]], cls[1]) for tok, off, cls in _stream(a) if cls is not None
    ]


def _classify_token(tok, off, anc, uses, env, mutable_defs):
    k = tok.kind
    if k == K.IDENT:
        return _classify_ident(tok, off, anc, uses, env, mutable_defs)
    if k.is_keyword:
        return ("keyword", 0)
    if k in (K.INT, K.FLOAT):
        return ("property", 0) if anc and anc[0] == K.NAME_REF else ("number", 0)  # `t.0`
    if k == K.STRING:
        return ("string", 0)
    if k == K.COMMENT:
        return ("comment", 0)
    if k == K.DOC_COMMENT:
        return ("comment", DOC)
    if k in _OPERATORS:
        if anc and anc[0] == K.TYPE_PARAM_LIST:  # the brackets of `<T: Float>`
            return None
        return ("operator", 0)
    return None


def _classify_ident(tok, off, anc, uses, env, mutable_defs):
    parent = anc[0] if anc else None
    gp_anc = anc[1] if anc else None
    gp = gp_anc[0] if gp_anc else None
    ggp = gp_anc[1][0] if gp_anc and gp_anc[1] else None
    text = tok.text
    if gp == K.USE_TREE and parent in (K.NAME, K.NAME_REF):
        return _imported_item(env, text, parent == K.NAME)
    if parent == K.NAME:
        decl = _DECL.get(gp)
        if decl is None:
            return None
        name, mods = decl
        if gp in (K.LET_STMT, K.PARAM, K.BIND_PAT) and off in mutable_defs:
            mods |= MUT
        return (name, mods)
    if parent == K.EFFECT:
        return ("enumMember", 0)
    if parent == K.BOUND:  # `Float` in `<T: Float>`
        return ("type", LIB)
    if parent != K.NAME_REF:
        return None
    if gp == K.USE_PATH:  # `a::b` of `use a::b::{…}`: a module
        return ("namespace", 0)
    u = uses.get(off)
    if u is not None:
        name, mods = _USE[u.kind] if u.kind in _USE else ("variable", 0)
        if u.def_span is not None and u.def_span.start in mutable_defs:
            mods |= MUT
        return (name, mods)
    if gp == K.NAMED_TYPE:
        if text in B.PRIMITIVES:
            return ("type", LIB)
        return ("struct", 0) if env is not None and text in env.structs else ("type", 0)
    if gp == K.MEM_SPACE:
        return ("enumMember", 0)
    if gp in (K.DIM, K.DIM_BIN, K.DIM_PAREN):
        return ("typeParameter", 0)
    if gp == K.FIELD_EXPR and ggp == K.CALL_EXPR and text in RANGE_METHOD_NAMES:
        return ("method", LIB)  # `(0..N).rev()`, `.step_by(k)`: what a range has
    if gp in (K.FIELD_EXPR, K.STRUCT_LIT_FIELD):
        return ("property", 0)
    if gp == K.STRUCT_LIT:
        return ("struct", 0)
    if gp == K.PATH_EXPR:
        if ggp == K.CALL_EXPR and text in B.INFO:
            return ("function", LIB)
        if text in B.MEMORY_SPACES:
            return ("enumMember", 0)
        return ("variable", 0)
    return None


def _imported_item(env, text: str, alias: bool):
    """An item's name in a `use` tree (its alias: a declaration), as its uses are shown;
    None when the import failed."""
    if env is None:
        return None
    imp = env.imported.get(text) if alias else None
    if imp is None and not alias:
        imp = next((i for i in env.imported.values() if i.name == text), None)
    if imp is None or imp.kind not in _USE:
        return None
    name, mods = _USE[imp.kind]
    return (name, mods | DECL) if alias else (name, mods)


def semantic_tokens(a: Analysis, encoding: str = "utf-16") -> list[int]:
    """The LSP ``data`` array (5 integers per token, relative positions).

    Positions are accumulated from the tokens' own text while streaming through the file,
    so there is no per-token offset conversion; multi-line tokens are split per line.
    """
    if a.parse is None:
        return []
    data: list[int] = []
    prev_line = prev_col = 0
    line = col = 0
    for tok, _off, cls in _stream(a):
        text = tok.text
        if cls is None:
            nl = text.count("\n")
            if nl:
                line += nl
                col = _units(text[text.rfind("\n") + 1 :], encoding)
            else:
                col += _units(text, encoding)
            continue
        ttype, mods = _T[cls[0]], cls[1]
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i:
                line += 1
                col = 0
            shown = part[:-1] if part.endswith("\r") else part
            n = _units(shown, encoding)
            if n:
                d_line = line - prev_line
                data += [d_line, col - prev_col if d_line == 0 else col, n, ttype, mods]
                prev_line, prev_col = line, col
            col += _units(part, encoding)
    return data
