"""Hover: what the name or expression under the cursor is, in Markdown.

Types come from sema (``expr_types`` and resolved uses), effects from signatures, memory
spaces from tensor types, docs from `///` comments. Over a function the hover adds its
fingerprint as of the last save and says whether the buffer changed since.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide import builtins as B
from kera_core.ide.common import Local, local_at_def, local_type, symbol_at, token_at, usable
from kera_core.ir.cycles import RECURSION_LIMIT
from kera_core.ir.types import BOUNDS, Ref, Tensor, Type
from kera_core.sema.env import FnSig
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import Analysis, Document


@dataclass(frozen=True)
class HoverResult:
    span: Span
    markdown: str


def fingerprint_text(h: bytes) -> str:
    return f"sha3-256:{h.hex()}"


def _code(s: str) -> str:
    return f"```kera\n{s}\n```"


def _space_line(t: Type | None) -> str | None:
    if isinstance(t, Ref):
        t = t.inner
    if isinstance(t, Tensor):
        return f"memory space: `@{t.space}`"
    return None


def signature_text(sig: FnSig) -> str:
    """`pub fn name[N](a: f32, …) -> T ! effects`, as the user would write it."""
    dims = sig.dim_names
    ps = ", ".join(
        f"{n}: {t.display(dims)}" for n, t in zip(sig.param_names, sig.type.params, strict=False)
    )
    head = ("pub " if sig.exported else "") + f"fn {sig.name}"
    if sig.is_generic:
        head += "<" + ", ".join(f"{t.name}: {t.bound}" for t in sig.type_params) + ">"
    if dims:
        head += f"[{', '.join(dims)}]"
    s = f"{head}({ps})"
    res = sig.type.result.display(dims)
    if res != "()":
        s += f" -> {res}"
    if sig.type.effects:
        s += " ! " + ", ".join(sig.type.effects)
    return s


def _instance_hover(doc: Document | None, a: Analysis, generic: FnSig, inst: FnSig) -> str:
    """A call of a generic function: the instance it calls, then the generic signature."""
    args = ", ".join(
        f"`{t.name}` = `{x.name}`" for t, x in zip(inst.type_params, inst.type_args, strict=True)
    )
    parts = [
        _code(signature_text(inst)),
        f"instance of `{signature_text(generic)}` with {args}",
        _effects_line(inst.type.effects),
    ]
    if generic.doc:
        parts.append(generic.doc)
    parts.append(_fingerprint_lines(doc, a, inst.name))
    return "\n\n".join(parts)


def _type_param_hover(a: Analysis, sym) -> str | None:
    sig = a.sig_at(sym.def_span.start) if sym.def_span is not None else None
    if sig is None:
        return None
    for t, sp in zip(sig.type_params, sig.type_param_spans, strict=True):
        if sp == sym.def_span:
            admits = ", ".join(f"`{n}`" for n in BOUNDS[t.bound])
            return (
                _code(f"{t.name}: {t.bound}")
                + f"\n\ntype parameter of `{sig.name}`: one of {admits}, bound at each call"
                " from the argument types"
            )
    return None


def _effects_line(effects: tuple[str, ...]) -> str:
    return "effects: " + ", ".join(f"`{e}`" for e in effects) if effects else "effects: none (pure)"


def _fn_hover(doc: Document | None, a: Analysis, sig: FnSig) -> str:
    parts = [_code(signature_text(sig)), _effects_line(sig.type.effects)]
    if sig.doc:
        parts.append(sig.doc)
    imp = a.module.env.origin("fn", sig.name) if a.module is not None else None
    if imp is not None:  # its graph (and fingerprint) is its own file's
        there = f" (`{imp.name}` there)" if imp.name != imp.local else ""
        parts.append(f"imported from module `{imp.module}`{there}")
    elif sig.is_generic:
        parts.append(_instance_lines(a, sig))
    else:
        if a.module is not None and sig.name in a.module.recursive:
            parts.append(_recursion_line(a, sig.name))
        parts.append(_fingerprint_lines(doc, a, sig.name))
    return "\n\n".join(parts)


def _recursion_line(a: Analysis, name: str) -> str:
    """What a recursive function's hover says of its cycle (graph.md, "Recursion")."""
    assert a.module is not None
    fns = a.module.graph.functions
    f = fns.get(name)
    others = sorted(
        g.name for g in fns.values() if f is not None and g.component == f.component and g is not f
    )
    cycle = f" (hashed with {', '.join(f'`{n}`' for n in others)})" if others else ""
    return (
        f"recursive{cycle}: at most {RECURSION_LIMIT} nested calls of its cycle, "
        "R0012 beyond; ptx and verilog refuse it"
    )


def _instance_lines(a: Analysis, sig: FnSig) -> str:
    """A generic function's instances (one per type its bounds admit) and their hashes."""
    env = a.module.env if a.module is not None else None
    graph = a.module.graph.functions if a.module is not None else {}
    lines = []
    for name, inst in env.instances.items() if env is not None else ():
        if inst.generic == sig.name:
            f = graph.get(name)
            lines.append(
                f"`{name}`: `{fingerprint_text(f.hash) if f is not None else 'none (errors)'}`"
            )
    return "instances:  \n" + "  \n".join(lines)


def _fingerprint_lines(doc: Document | None, a: Analysis, name: str) -> str:
    current = a.module.graph.functions.get(name) if a.module is not None else None
    saved = doc.saved if doc is not None else None
    lines = []
    if saved is not None and name in saved.functions:
        lines.append(
            f"fingerprint at last save (v{saved.version}): `{fingerprint_text(saved.functions[name])}`"
        )
    elif saved is not None:
        lines.append(f"fingerprint at last save (v{saved.version}): none (not compiled then)")
    changed = doc.changed_since_save if doc is not None else True
    lines.append("buffer changed since save" if changed else "buffer unchanged since save")
    if changed or saved is None or name not in saved.functions:
        now = fingerprint_text(current.hash) if current is not None else "none (errors)"
        lines.append(f"fingerprint now: `{now}`")
    return "  \n".join(lines)


def _local_hover(a: Analysis, loc: Local) -> str:
    sig = a.sig_at(loc.span.start)
    lf = a.module.functions.get(sig.name) if sig is not None and a.module else None
    t = local_type(a, lf, loc)
    dims = sig.dim_names if sig is not None else ()
    shown = t.display(dims) if t is not None else "{unknown}"
    if loc.kind == "dim":
        return (
            _code(f"{loc.name}: dimension")
            + f"\n\nsymbolic dimension of `{sig.name if sig else '?'}` (an `i64` at run time)"
        )
    word = {"param": "", "local": "let ", "loop": "for "}[loc.kind]
    mut = "mut " if loc.mutable and loc.kind != "param" else ""
    parts = [_code(f"{word}{mut}{loc.name}: {shown}")]
    space = _space_line(t)
    if space:
        parts.append(space)
    if loc.kind == "param":
        parts.append(f"parameter of `{sig.name if sig else '?'}`")
    return "\n\n".join(parts)


def _struct_hover(a: Analysis, name: str) -> str | None:
    env = a.module.env if a.module else None
    if env is None:
        return None
    st = env.structs.get(name)
    if st is None:
        return _code(f"struct {name}")
    fields = ", ".join(f"{f}: {t}" for f, t in st.fields)
    parts = [_code(f"struct {name} {{ {fields} }}")]
    node = _item_node(a, K.STRUCT, name)
    if node is not None and ast.Struct(node).doc:
        parts.append(ast.Struct(node).doc)
    return "\n\n".join(parts)


def _item_node(a: Analysis, kind: K, name: str):
    if a.parse is None:
        return None
    for it in ast.SourceFile(a.parse.tree).items:
        if it.syntax.kind == kind and it.name is not None and it.name.text == name:
            return it.syntax
    return None


def _field_hover(a: Analysis, owner: str, name: str) -> str:
    env = a.module.env if a.module else None
    st = env.structs.get(owner) if env else None
    t = None
    if st is not None:
        i = st.field_index(name)
        t = st.fields[i][1] if i is not None else None
    parts = [_code(f"{owner}.{name}: {t if t is not None else '{unknown}'}")]
    node = _item_node(a, K.STRUCT, owner)
    if node is not None:
        for f in ast.Struct(node).fields:
            if f.name is not None and f.name.text == name and f.doc:
                parts.append(f.doc)
    return "\n\n".join(parts)


MAX_VALUE = 160  # a constant's initializer in a hover, at most (a table of 256 entries: its start)


def _short(text: str) -> str:
    """An initializer on one line, cut after an element where it would pass ``MAX_VALUE``."""
    value = " ".join(text.split()).replace("[ ", "[").replace(" ]", "]").replace(", ]", "]")
    if len(value) <= MAX_VALUE:
        return value
    cut = value.rfind(",", 0, MAX_VALUE)
    return value[: cut if cut > 0 else MAX_VALUE] + ", …"


def _const_hover(a: Analysis, name: str) -> str:
    found = a.module.env.const_named(name) if a.module else None
    if found is None:
        return _code(f"const {name}")
    c = found[0]
    value = _short(str(c.value.syntax)) if c.value is not None else "…"
    parts = [_code(f"const {name}: {c.type if c.type is not None else '{unknown}'} = {value}")]
    imp = a.module.env.origin("const", name) if a.module else None
    if imp is not None:
        parts.append(f"from module `{imp.module}`")
    node = _item_node(a, K.CONST, name) if imp is None else None
    if node is not None and ast.Const(node).doc:
        parts.append(ast.Const(node).doc)
    return "\n\n".join(parts)


def _builtin_hover(name: str) -> str:
    info = B.INFO[name]
    parts = [_code(info.label), info.doc]
    parts.append(_effects_line((info.effect,) if info.effect else ()))
    return "\n\n".join(parts)


def hover(a: Analysis, offset: int, doc: Document | None = None) -> HoverResult | None:
    """The hover for the cursor at byte ``offset``; None where there is nothing to say."""
    tok = token_at(a, offset)
    if tok is None or tok.kind.is_trivia or a.parse is None:
        return None
    sym = symbol_at(a, offset)
    if sym is not None:
        md = _symbol_hover(doc, a, sym)
        if md is not None:
            return HoverResult(sym.span, md)
    if tok.kind == K.IDENT:
        md = _name_hover(a, tok)
        if md is not None:
            return HoverResult(tok.span, md)
    return _expr_hover(a, tok.span.start)


def _symbol_hover(doc, a: Analysis, sym) -> str | None:
    env = a.module.env if a.module else None
    if env is None:
        return None
    if sym.kind == "fn":
        sig = env.fns.get(sym.name)
        inst = env.instances.get(sym.owner) if sym.owner else None
        if inst is not None and sig is not None:  # a call of a generic function
            return _instance_hover(doc, a, sig, inst)
        return _fn_hover(doc, a, sig) if sig is not None else None
    if sym.kind == "tparam":
        return _type_param_hover(a, sym)
    if sym.kind == "struct":
        return _struct_hover(a, sym.name)
    if sym.kind == "field":
        return _field_hover(a, sym.owner, sym.name)
    if sym.kind == "const":
        return _const_hover(a, sym.name)
    if sym.def_span is not None:
        loc = local_at_def(a, sym.def_span)
        if loc is not None:
            return _local_hover(a, loc)
    return None


def _name_hover(a: Analysis, tok) -> str | None:
    """Names sema does not record as uses: builtins, primitive types, spaces, effects."""
    parent = tok.parent
    pk = parent.kind if parent is not None else None
    gp = parent.parent.kind if parent is not None and parent.parent is not None else None
    text = tok.text
    if pk == K.EFFECT and text in B.EFFECT_DOCS:
        return _code(f"! {text}") + "\n\n" + B.EFFECT_DOCS[text]
    if gp == K.MEM_SPACE and text in B.SPACE_DOCS:
        return _code(f"@{text}") + "\n\n" + B.SPACE_DOCS[text]
    if gp == K.NAMED_TYPE and text in B.PRIMITIVE_DOCS:
        return _code(text) + "\n\n" + B.PRIMITIVE_DOCS[text]
    if gp == K.CONST_PATH:
        return _const_path_hover(parent.parent)
    if gp == K.PATH_EXPR and text in B.SPACE_DOCS:
        return _code(text) + "\n\n" + B.SPACE_DOCS[text]
    if gp == K.PATH_EXPR and text in B.INFO:
        call = parent.parent.parent
        if call is not None and call.kind == K.CALL_EXPR:
            return _builtin_hover(text)
    return None


def _const_path_hover(node) -> str | None:
    """`f32::PI`: the value, its bits and what it is (sema/type_constants.py)."""
    from kera_core.interp.printing import format_value
    from kera_core.loops.interp import imm_value
    from kera_core.loops.ir import BITS, Imm
    from kera_core.sema import type_constants as TC

    refs = [c for c in node.children() if c.kind == K.NAME_REF]
    if len(refs) != 2:
        return None
    t, name = refs[0].text.strip(), refs[1].text.strip()
    bits = TC.constant_bits(t, name)
    if bits is None:
        return None
    value = format_value(imm_value(Imm(t, bits)))
    width = BITS[t] // 8
    return (
        _code(f"{t}::{name}: {t} = {value}")
        + f"\n\n{TC.meaning(t, name)} (bits `0x{bits:0{2 * width}X}`)"
    )


def _expr_hover(a: Analysis, offset: int) -> HoverResult | None:
    lf = a.function_at(offset)
    if lf is None:
        return None
    best = None
    for (s, e, kind), t in lf.expr_types.items():
        if s <= offset < e and (best is None or e - s < best[1] - best[0]):
            if usable(t) is not None:
                best = (s, e, kind, t)
    if best is None:
        return None
    s, e, kind, t = best
    dims = lf.sig.dim_names
    parts = [_code(t.display(dims))]
    space = _space_line(t)
    if space:
        parts.append(space)
    if kind == K.CALL_EXPR and a.parse is not None:
        node = a.parse.tree.covering_node(Span(s, e))
        callee = ast.CallExpr(node).callee if node.kind == K.CALL_EXPR else None
        if isinstance(callee, ast.PathExpr) and callee.name is not None:
            name = callee.name.text
            sig = a.module.env.fns.get(name) if a.module else None
            if sig is not None:
                parts.append(f"call of `{name}`; " + _effects_line(sig.type.effects))
            elif name in B.INFO:
                eff = B.INFO[name].effect
                parts.append(f"call of builtin `{name}`; " + _effects_line((eff,) if eff else ()))
    return HoverResult(Span(s, e), "\n\n".join(parts))
