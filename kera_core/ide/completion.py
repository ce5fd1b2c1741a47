"""Completion: what may be typed at the cursor, from its syntactic context.

* after `.` on a struct value: its fields; on a range: `rev` and `step_by`;
* in a type position (after `:` of a parameter, `let`, field or const, after `->`, `&`, `mut`): primitive types and structs;
* after `@`: memory spaces; in an effect list: effects; after `T:` in `<T: …>`: the bounds;
* elsewhere in a body: the bindings in scope, functions, builtins, constants, structs, keywords;
* between items: the item keywords;
* in a `use` declaration: after `use`, the package's modules; after `use m::`, `m`'s `pub`
  items (and the modules below `m`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide import builtins as B
from kera_core.ide.common import expr_type, local_type, scope_at, token_at, usable
from kera_core.ide.hover import signature_text
from kera_core.ir.types import BOUNDS, RangeType, Ref, Struct
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.tree import SyntaxToken
from kera_core.workspace import Analysis


@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # variable | parameter | function | builtin | struct | field | method | const | keyword | type | space | effect | dim
    detail: str = ""
    doc: str = ""


ITEM_KEYWORDS = ("fn", "pub", "struct", "const", "use")
_TYPE_OWNERS = frozenset({K.PARAM, K.LET_STMT, K.FIELD, K.CONST, K.RET_TYPE, K.REF_TYPE})


def _prev_significant(tok: SyntaxToken | None) -> SyntaxToken | None:
    while tok is not None and tok.kind.is_trivia:
        tok = tok.prev_token()
    return tok


def completion_prefix(a: Analysis, offset: int) -> tuple[Span, str]:
    """The identifier being typed that ends at ``offset`` (possibly empty)."""
    tok = token_at(a, offset)
    if tok is not None and tok.kind == K.IDENT and tok.span.start < offset <= tok.span.end:
        return Span(tok.span.start, offset), tok.text[: offset - tok.span.start]
    return Span(offset, offset), ""


def complete(a: Analysis, offset: int) -> list[Completion]:
    if a.parse is None:
        return []
    span, _prefix = completion_prefix(a, offset)
    root = a.parse.tree
    before = root.token_at_offset(span.start - 1) if span.start > 0 else None
    prev = _prev_significant(before)
    if prev is not None and prev.kind == K.DOT:
        return _fields(a, prev)
    if prev is not None and prev.kind == K.AT:
        return [Completion(s, "space", "memory space", B.SPACE_DOCS[s]) for s in B.MEMORY_SPACES]
    if prev is not None and _in_effects(prev):
        return [Completion(e, "effect", "effect", B.EFFECT_DOCS[e]) for e in B.EFFECT_NAMES]
    if prev is not None and prev.kind == K.COLON and _parent_kind(prev) == K.TYPE_PARAM:
        return [Completion(b, "bound", _bound_detail(b), B.BOUND_DOCS[b]) for b in BOUNDS]
    if prev is not None and _type_position(prev):
        return _types(a, offset)
    use = _use_of(prev)
    if use is not None:
        return _use_items(a, use, prev)
    anchor = root.token_at_offset(offset) or before
    in_fn_body = anchor is not None and any(n.kind == K.BLOCK for n in anchor.ancestors())
    if not in_fn_body:
        return [Completion(k, "keyword") for k in ITEM_KEYWORDS]
    return _expression_items(a, offset)


def _use_of(prev: SyntaxToken | None):
    """The `use` declaration the cursor is in, after `use`, a `::`, `{` or `,` of it."""
    if prev is None or prev.kind not in (K.USE_KW, K.COLON2, K.L_BRACE, K.COMMA):
        return None
    return next((n for n in prev.ancestors() if n.kind == K.USE), None)


def _use_items(a: Analysis, use, prev: SyntaxToken) -> list[Completion]:
    """Modules after `use`; after `use m::` (or in its braces) `m`'s `pub` items and the
    modules below `m` (language.md §3.4)."""
    modules = a.module.env.modules if a.module is not None else {}
    if prev.kind == K.USE_KW:
        tops = sorted({m.split("::")[0] for m in modules})
        return [Completion(m, "module", "module") for m in tops]
    path = [r.text for r in ast.Use(use).path if r.span.end <= prev.span.start]
    name = "::".join(path)
    kinds = {"fn": "function", "struct": "struct", "const": "const"}
    out = [Completion(n, kinds[k], f"{kinds[k]} of {name}") for n, k in modules.get(name, ())]
    below = sorted(
        {m[len(name) + 2 :].split("::")[0] for m in modules if m.startswith(name + "::")}
    )
    if prev.kind == K.COLON2:
        out += [Completion(m, "module", "module") for m in below]
    return out


def _in_effects(prev: SyntaxToken) -> bool:
    if prev.kind not in (K.BANG, K.COMMA):
        return False
    return any(n.kind == K.EFFECT_LIST for n in prev.ancestors())


def _type_position(prev: SyntaxToken) -> bool:
    parent = prev.parent
    if prev.kind == K.COLON:
        return parent is not None and parent.kind in _TYPE_OWNERS
    if prev.kind == K.ARROW:
        return True
    if prev.kind in (K.AMP, K.MUT_KW):
        return parent is not None and parent.kind == K.REF_TYPE
    return False


def _parent_kind(tok: SyntaxToken):
    return tok.parent.kind if tok.parent is not None else None


def _bound_detail(bound: str) -> str:
    return f"bound: {' | '.join(BOUNDS[bound])}"


def _types(a: Analysis, offset: int) -> list[Completion]:
    sig = a.sig_at(offset) if a.module is not None else None
    out = [
        Completion(t.name, "tparam", f"{t.name}: {t.bound}", "type parameter")
        for t in (sig.type_params if sig is not None else ())
    ]
    out += [
        Completion(p, "type", "primitive type", B.PRIMITIVE_DOCS.get(p, "")) for p in B.PRIMITIVES
    ]
    if a.module is not None:
        for name, st in a.module.env.structs.items():
            out.append(Completion(name, "struct", _struct_detail(st)))
    return out


def _struct_detail(st: Struct) -> str:
    return f"struct {st.name} {{ " + ", ".join(f"{f}: {t}" for f, t in st.fields) + " }"


def _fields(a: Analysis, dot: SyntaxToken) -> list[Completion]:
    """Fields of the struct value left of the dot."""
    node = dot.parent
    if node is None or node.kind != K.FIELD_EXPR or a.module is None:
        return []
    base = ast.FieldExpr(node).base
    if base is None:
        return []
    lf = a.function_at(base.span.start)
    t = expr_type(lf, base.syntax)
    if t is None and isinstance(base, ast.PathExpr) and base.name is not None:
        for loc in scope_at(a, base.span.start + 1):
            if loc.name == base.name.text:
                t = usable(local_type(a, lf, loc))
                break
    if isinstance(t, Ref):
        t = t.inner
    if isinstance(t, RangeType):
        return [Completion(m, "method", detail, doc) for m, detail, doc in RANGE_METHODS]
    if not isinstance(t, Struct):
        return []
    return [Completion(f, "field", str(ft)) for f, ft in t.fields]


# What a range has after `.` (language.md §6.9): label, detail, documentation
RANGE_METHODS = (
    (
        "rev",
        "fn rev(self) -> range",
        "The same integers, last first: `(0..N).rev()` is N − 1, …, 0.",
    ),
    (
        "step_by",
        "fn step_by(self, k) -> range",
        "Every k-th integer, the first included: `(0..N).step_by(k)` is 0, k, 2k, … < N. "
        "`k` has the range's type and must be positive (a constant k ≤ 0 is K0307, any "
        "other a run-time error R0011).",
    ),
)


def _expression_items(a: Analysis, offset: int) -> list[Completion]:
    out: list[Completion] = []
    lf = a.function_at(offset)
    dims = lf.sig.dim_names if lf is not None else ()
    for loc in scope_at(a, offset):
        t = local_type(a, lf, loc)
        detail = t.display(dims) if t is not None else ""
        kind = {"param": "parameter", "dim": "dim"}.get(loc.kind, "variable")
        out.append(Completion(loc.name, kind, detail))
    env = a.module.env if a.module is not None else None
    if env is not None:
        for name, sig in env.fns.items():
            out.append(Completion(name, "function", signature_text(sig), sig.doc))
        for name in env.const_names():
            c = env.const_named(name)[0]  # type: ignore[index]
            out.append(Completion(name, "const", str(c.type) if c.type is not None else ""))
        for name, st in env.structs.items():
            out.append(Completion(name, "struct", _struct_detail(st)))
    for name in B.BUILTIN_NAMES:
        info = B.INFO[name]
        out.append(Completion(name, "builtin", info.label, info.doc))
    for k in B.KEYWORD_NAMES:
        out.append(Completion(k, "keyword"))
    seen: set[str] = set()
    uniq = []
    for c in out:
        if c.label not in seen:
            seen.add(c.label)
            uniq.append(c)
    return uniq
