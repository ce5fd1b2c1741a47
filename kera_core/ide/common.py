"""Shared lookups for the IDE queries: the token under a cursor, resolved names, bindings.

Everything here reads an :class:`~kera_core.workspace.Analysis` (tree, module, uses and
expression types recorded by sema); nothing re-derives what sema already decided.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kera_core.ir.types import I64, RangeType, Ref, Tensor, Type
from kera_core.sema.env import FnSig, Use
from kera_core.sema.frames import ErrorType, NeverType
from kera_core.sema.lower import LoweredFn
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.tree import SyntaxNode, SyntaxToken
from kera_core.workspace import Analysis

ITEM_KINDS = frozenset({"fn", "struct", "const", "field"})
LOCAL_KINDS = frozenset({"local", "param", "loop", "dim"})

_NAME_OWNER_KIND = {
    K.FN: "fn",
    K.STRUCT: "struct",
    K.CONST: "const",
    K.FIELD: "field",
    K.PARAM: "param",
    K.LET_STMT: "local",
    K.BIND_PAT: "local",
    K.FOR_EXPR: "loop",
    K.DIM_PARAM: "dim",
    K.TYPE_PARAM: "tparam",
}


def _rank(tok: SyntaxToken) -> int:
    k = tok.kind
    if k == K.IDENT:
        return 4
    if k.is_keyword or k in (K.INT, K.FLOAT, K.STRING):
        return 3
    if k.is_punct:
        return 2 if k not in (K.L_PAREN, K.R_PAREN, K.COMMA, K.SEMI) else 1
    return 0


def token_at(a: Analysis, offset: int) -> SyntaxToken | None:
    """The token a cursor at ``offset`` designates; at a boundary the more meaningful neighbour."""
    if a.parse is None:
        return None
    root = a.parse.tree
    tok = root.token_at_offset(offset)
    if tok is None:
        return None
    if tok.span.start == offset and offset > 0:
        left = root.token_at_offset(offset - 1)
        if left is not None and _rank(left) > _rank(tok):
            return left
    return tok


def usable(t: Type | None) -> Type | None:
    """``t`` unless it is the error or never type (which say nothing to a user)."""
    return None if t is None or isinstance(t, ErrorType | NeverType) else t


def fn_uses(a: Analysis, sig: FnSig) -> list[Use]:
    lf = a.module.functions.get(sig.name) if a.module else None
    return list(sig.uses) + (list(lf.uses) if lf is not None else [])


def all_uses(a: Analysis) -> Iterator[Use]:
    if a.module is None:
        return
    env = a.module.env
    yield from env.uses
    for sig in env.local_fns():
        yield from fn_uses(a, sig)


def use_at(a: Analysis, span: Span) -> Use | None:
    """The resolved name occupying exactly ``span`` (an identifier token)."""
    if a.module is None:
        return None
    sig = a.sig_at(span.start)
    uses = fn_uses(a, sig) if sig is not None else a.module.env.uses
    for u in uses:
        if u.span == span:
            return u
    if sig is not None:  # struct/const declarations record theirs in the env
        for u in a.module.env.uses:
            if u.span == span:
                return u
    return None


@dataclass(frozen=True)
class Symbol:
    """A named thing the cursor is on: a use or a definition, and where it is defined."""

    kind: str  # fn | struct | const | field | local | param | loop | dim
    name: str
    span: Span  # the occurrence under the cursor
    def_span: Span | None
    owner: str = ""  # the struct of a field
    is_definition: bool = False


def _field_owner(field_node: SyntaxNode) -> str:
    st = field_node.parent.parent if field_node.parent is not None else None
    if st is not None and st.kind == K.STRUCT:
        name = ast.Struct(st).name
        return name.text if name is not None else ""
    return ""


def symbol_at(a: Analysis, offset: int) -> Symbol | None:
    tok = token_at(a, offset)
    if tok is None or tok.kind != K.IDENT or a.module is None:
        return None
    u = use_at(a, tok.span)
    env = a.module.env
    if u is not None:
        return Symbol(u.kind, u.name or tok.text, tok.span, env.definition(u), u.owner)
    parent = tok.parent
    if parent is not None and parent.parent is not None and parent.parent.kind == K.USE_TREE:
        return _imported_symbol(a, ast.UseTree(parent.parent), tok.span)
    if parent is None or parent.kind != K.NAME or parent.parent is None:
        return None
    item = parent.parent
    kind = _NAME_OWNER_KIND.get(item.kind)
    if kind is None:
        return None
    owner = _field_owner(item) if kind == "field" else ""
    return Symbol(kind, tok.text, tok.span, parent.span, owner, True)


def _imported_symbol(a: Analysis, tree: ast.UseTree, span: Span) -> Symbol | None:
    """The item a `use` tree brings in (the cursor on its name or its alias): defined, in
    this file, by the tree's local name."""
    local = tree.local
    if local is None or a.module is None:
        return None
    imp = a.module.env.imported.get(local.text)
    if imp is None or imp.use_span != local.span:
        return None
    return Symbol(imp.kind, imp.local, span, imp.use_span, "", True)


def imported_origin(a: Analysis, sym: Symbol):
    """The :class:`~kera_core.sema.env.Imported` a symbol is (None: not an imported item)."""
    if a.module is None or sym.kind not in ("fn", "struct", "const"):
        return None
    imp = a.module.env.origin(sym.kind, sym.name)
    return imp if imp is not None and imp.use_span == sym.def_span else None


def same_symbol(a: Analysis, u: Use, sym: Symbol) -> bool:
    if sym.def_span is None or a.module is None:
        return False
    if (u.kind in ITEM_KINDS) != (sym.kind in ITEM_KINDS):
        return False
    return a.module.env.definition(u) == sym.def_span


# --- bindings (locals, parameters, loop variables, dimensions) ------------------------------


@dataclass(frozen=True)
class Local:
    name: str
    kind: str  # param | local | loop | dim
    span: Span  # the name at its definition
    mutable: bool
    node: SyntaxNode  # PARAM, LET_STMT, BIND_PAT (in a let's tuple pattern), FOR_EXPR or DIM_PARAM


def _local_of(node: SyntaxNode) -> Local | None:
    k = node.kind
    if k == K.PARAM:
        p = ast.Param(node)
        if p.name is None:
            return None
        t = p.type
        mut = p.is_mut or (isinstance(t, ast.RefType) and t.is_mut)
        return Local(p.name.text, "param", p.name.span, mut, node)
    if k == K.LET_STMT:
        st = ast.LetStmt(node)
        if st.name is None:
            return None
        return Local(st.name.text, "local", st.name.span, st.is_mut, node)
    if k == K.BIND_PAT:
        b = ast.BindPat(node)
        if b.name is None or b.name.text == "_":
            return None
        return Local(b.name.text, "local", b.name.span, b.is_mut, node)
    if k == K.FOR_EXPR:
        v = ast.ForExpr(node).var
        return None if v is None else Local(v.text, "loop", v.span, False, node)
    if k == K.DIM_PARAM:
        n = node.child_of_kind(K.NAME)
        return None if n is None else Local(ast.Name(n).text, "dim", n.span, False, node)
    return None


def locals_of(fn: ast.Fn) -> dict[int, Local]:
    """Every binding a function declares, by the start of its name."""
    out: dict[int, Local] = {}
    for n in fn.syntax.descendants():
        if n.kind in (K.PARAM, K.LET_STMT, K.BIND_PAT, K.FOR_EXPR, K.DIM_PARAM):
            loc = _local_of(n)
            if loc is not None:
                out[loc.span.start] = loc
    return out


def scope_at(a: Analysis, offset: int) -> list[Local]:
    """The bindings visible at ``offset``, innermost first, shadowed ones left out."""
    if a.parse is None:
        return []
    tok = a.parse.tree.token_at_offset(offset)
    if tok is None:
        return []
    seen: set[str] = set()
    out: list[Local] = []

    def add(loc: Local | None) -> None:
        if loc is not None and loc.name not in seen:
            seen.add(loc.name)
            out.append(loc)

    for anc in tok.ancestors():
        if anc.kind == K.BLOCK:
            for c in reversed(list(anc.children())):
                if c.kind == K.LET_STMT and c.span.end <= offset:
                    pat = ast.LetStmt(c).pattern
                    if pat is None:
                        add(_local_of(c))
                    else:  # `let (a, b) = …`: the later of two equal names shadows
                        for b in reversed(list(pat.binds())):
                            add(_local_of(b.syntax))
        elif anc.kind == K.FOR_EXPR:
            body = ast.ForExpr(anc).body
            if body is not None and body.span.start < offset:
                add(_local_of(anc))
        elif anc.kind == K.FN:
            fn = ast.Fn(anc)
            for p in fn.params:
                add(_local_of(p.syntax))
            lst = anc.child_of_kind(K.DIM_PARAM_LIST)
            if lst is not None:
                for d in lst.children():
                    add(_local_of(d))
            break
    return out


def expr_type(lf: LoweredFn | None, node: SyntaxNode) -> Type | None:
    if lf is None:
        return None
    return usable(lf.expr_types.get((node.span.start, node.span.end, node.kind)))


def local_type(a: Analysis, lf: LoweredFn | None, loc: Local) -> Type | None:
    """The type sema gave a binding (declared type for parameters, with the borrow)."""
    if lf is None:
        return None
    sig = lf.sig
    if loc.kind == "param":
        if loc.name in sig.param_names:
            return sig.type.params[sig.param_names.index(loc.name)]
        return None
    if loc.kind == "dim":
        return I64
    if loc.kind == "local" and loc.node.kind == K.BIND_PAT:
        return expr_type(lf, loc.node)  # sema records each pattern name's type
    if loc.kind == "local":
        init = ast.LetStmt(loc.node).init
        if init is not None:
            t = expr_type(lf, init.syntax)
            if t is not None:
                return t
    if loc.kind == "loop":
        it = ast.ForExpr(loc.node).iterable
        t = expr_type(lf, it.syntax) if it is not None else None
        if isinstance(t, RangeType):
            return t.elem
        if isinstance(t, Ref):
            t = t.inner
        if isinstance(t, Tensor) and t.rank == 1:  # `for v in x`: an element
            return t.elem
    for u in lf.uses:  # fall back to the type of a read of the binding
        if u.def_span == loc.span:
            t = usable(lf.expr_types.get((u.span.start, u.span.end, K.PATH_EXPR)))
            if t is not None:
                return t
    return None


def local_at_def(a: Analysis, span: Span) -> Local | None:
    """The binding whose name is at ``span``."""
    sig = a.sig_at(span.start)
    if sig is None:
        return None
    loc = locals_of(sig.ast).get(span.start)
    return loc if loc is not None and loc.span == span else None


def display(t: Type, sig: FnSig | None) -> str:
    return t.display(sig.dim_names if sig is not None else ())


def walk(green, base: int = 0) -> Iterator[tuple[object, int, tuple | None]]:
    """Every green element under ``green`` in source order, with its absolute offset and its
    ancestors' kinds as a linked tuple ``(parent_kind, (grandparent_kind, (…, None)))``.

    Much cheaper than red cursors when a query visits the whole file.
    """
    stack: list[tuple[object, int, tuple | None]] = [(green, base, None)]
    while stack:
        g, off, anc = stack.pop()
        yield g, off, anc
        if g.is_token:  # type: ignore[attr-defined]
            continue
        here = (g.kind, anc)  # type: ignore[attr-defined]
        kids = []
        for c in g.children:  # type: ignore[attr-defined]
            kids.append((c, off, here))
            off += c.text_len
        kids.reverse()
        stack.extend(kids)
