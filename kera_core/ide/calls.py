"""Call hierarchy: which functions call which, from the calls sema resolved.

Each :class:`Call` names its caller and callee and where the callee's name is written at
the call site. The queries take one analysis; the language server combines documents, so
calls across files can be added there once names resolve across files.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide.common import fn_uses, symbol_at
from kera_core.sema.env import FnSig
from kera_core.source import Span
from kera_core.workspace import Analysis


@dataclass(frozen=True)
class Call:
    caller: str
    callee: str
    span: Span  # the callee's name at the call site


def function_at(a: Analysis, offset: int) -> FnSig | None:
    """The function named under the cursor (at its definition or a call)."""
    if a.module is None:
        return None
    sym = symbol_at(a, offset)
    if sym is None or sym.kind != "fn":
        return None
    return a.module.env.fns.get(sym.name)


def calls(a: Analysis) -> list[Call]:
    """Every call of a user function in the document, in source order."""
    if a.module is None:
        return []
    env = a.module.env
    out = []
    for sig in env.local_fns():
        for u in fn_uses(a, sig):
            if u.kind == "fn" and u.name in env.fns and u.span != env.fns[u.name].name_span:
                out.append(Call(sig.name, u.name, u.span))
    out = list(dict.fromkeys(out))
    out.sort(key=lambda c: (c.span.start, c.span.end))
    return out


def incoming(a: Analysis, name: str) -> dict[str, list[Span]]:
    """Callers of ``name``, each with the spans of its calls, in source order of callers."""
    out: dict[str, list[Span]] = {}
    for c in calls(a):
        if c.callee == name:
            out.setdefault(c.caller, []).append(c.span)
    return out


def outgoing(a: Analysis, name: str) -> dict[str, list[Span]]:
    """Functions ``name`` calls, each with the spans of those calls, in order of first call."""
    out: dict[str, list[Span]] = {}
    for c in calls(a):
        if c.caller == name:
            out.setdefault(c.callee, []).append(c.span)
    return out
