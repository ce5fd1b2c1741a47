"""Go to type definition: from a value whose type is a struct to the struct's definition.

The type is the one sema gave the name or expression under the cursor (a binding, a
parameter, a field, a constant, a function's result, or the smallest typed expression);
a reference is looked through (`p: &Point` leads to `Point`).
"""

from __future__ import annotations

from kera_core.ide.common import (
    LOCAL_KINDS,
    local_at_def,
    local_type,
    symbol_at,
    token_at,
    usable,
)
from kera_core.ir.types import Ref, Struct, Type
from kera_core.source import Span
from kera_core.workspace import Analysis


def _smallest_expr_type(a: Analysis, offset: int) -> Type | None:
    lf = a.function_at(offset)
    if lf is None:
        return None
    best = None
    for (s, e, _kind), t in lf.expr_types.items():
        if s <= offset < e and usable(t) is not None and (best is None or e - s < best[0]):
            best = (e - s, t)
    return best[1] if best is not None else None


def type_at(a: Analysis, offset: int) -> Type | None:
    """The type of what the cursor is on, or None."""
    if a.module is None or a.parse is None:
        return None
    env = a.module.env
    sym = symbol_at(a, offset)
    if sym is not None:
        if sym.kind in LOCAL_KINDS and sym.def_span is not None:
            loc = local_at_def(a, sym.def_span)
            if loc is not None:
                if loc.kind == "param":
                    sig = a.sig_at(loc.span.start)
                    if sig is not None and loc.name in sig.param_names:
                        return sig.type.params[sig.param_names.index(loc.name)]
                return usable(local_type(a, a.function_at(loc.span.start), loc))
        if sym.kind == "field":
            st = env.structs.get(sym.owner)
            return dict(st.fields).get(sym.name) if st is not None else None
        if sym.kind == "const":
            c = env.consts.get(sym.name)
            return c.type if c is not None else None
        if sym.kind == "fn":
            sig = env.fns.get(sym.name)
            return sig.type.result if sig is not None else None
        if sym.kind == "struct":
            return env.structs.get(sym.name)
    tok = token_at(a, offset)
    return _smallest_expr_type(a, tok.span.start if tok is not None else offset)


def type_definition(a: Analysis, offset: int) -> Span | None:
    """Where the struct that is the type of the value under the cursor is defined."""
    t = type_at(a, offset)
    while isinstance(t, Ref):
        t = t.inner
    if not isinstance(t, Struct) or a.module is None:
        return None
    return a.module.env.struct_spans.get(t.name)
