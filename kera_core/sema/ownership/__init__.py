"""The ownership and memory-space checker (borrow checker): rules in docs/ownership.md.

It runs after lowering, on the AST of every function that lowered without errors,
and uses the types lowering recorded (``LoweredFn.expr_types``). It never changes the
graph: ownership decides which programs are accepted, and — because an accepted
program never observes a value after it was moved or while it is borrowed mutably —
lets backends update tensors in place.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kera_core.diagnostics import Diagnostic, error, sort_key
from kera_core.sema.ownership.build import Builder
from kera_core.sema.ownership.flow import check_flow

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kera_core.sema.module import Module
    from kera_core.source import Span
    from kera_core.syntax.parse import Parse

from kera_core.stack import deep_recursion  # noqa: E402

__all__ = [
    "broken_by",
    "check_each",
    "parse_errors",
    "check_ownership",
    "check_function",
    "check_function_guarded",
]

log = logging.getLogger(__name__)


def check_function(module: Module, name: str) -> list[Diagnostic]:
    """The ownership diagnostics of one lowered function (none if it had errors)."""
    lf = module.functions.get(name)
    if lf is None or not lf.lowers or any(d.is_error for d in lf.diagnostics):
        return []
    return check_flow(Builder(module.env, lf.sig, lf.expr_types).build())


def check_function_guarded(module: Module, name: str) -> list[Diagnostic]:
    """:func:`check_function` with room for deep bodies; never raises.

    A body too deep even for the raised limit gets K0108; an internal failure becomes
    one K0901 diagnostic on the function (a bug: the tests assert it never happens).
    """
    lf = module.functions[name]
    try:
        with deep_recursion():
            return check_function(module, name)
    except RecursionError:
        return [
            error(
                "K0108",
                lf.sig.name_span,
                f"`{name}` is nested too deeply to check ownership; split long expressions",
            )
        ]
    except Exception as ex:  # pragma: no cover - a bug; reported, never raised
        log.warning("ownership check of %s failed: %s: %s", name, type(ex).__name__, ex)
        return [
            error(
                "K0901",
                lf.sig.name_span,
                f"internal error in the ownership checker: {type(ex).__name__}: {ex}",
            )
        ]


def check_ownership(module: Module, parse: Parse | None = None) -> list[Diagnostic]:
    """Moves, borrows and memory spaces of every function that lowered cleanly.

    A function whose text has syntax errors is skipped (its tree is partial, so
    a report would be about code the user has not finished writing). An internal
    failure becomes one K0901 diagnostic on the function instead of an exception, so
    an editor keeps working; the tests assert that it never happens.
    """
    out = [d for _, diags in check_each(module, parse) for d in diags]
    out.sort(key=sort_key)
    return out


def parse_errors(parse: Parse | None) -> list[Span]:
    """Where a parse's errors lie (what :func:`broken_by` asks about)."""
    return [d.span for d in parse.diagnostics if d.is_error] if parse is not None else []


def broken_by(span: Span, errors: Iterable[Span]) -> bool:
    """Is the function whose item is ``span`` left unchecked for a syntax error: one that
    starts inside it, or lies at its end (an error that ends the item is reported at the
    token after it)?"""
    return any(span.start <= s.start < span.end or span.covers(s) for s in errors)


def check_each(module: Module, parse: Parse | None = None) -> list[tuple[str, list[Diagnostic]]]:
    """:func:`check_ownership`'s diagnostics per function, in ``module.functions``' order,
    unsorted (the parallel `kera check` merges its workers' shares through this)."""
    errors = parse_errors(parse)
    out: list[tuple[str, list[Diagnostic]]] = []
    with deep_recursion(quiet_gc=True):  # no cyclic GC passes over the trees meanwhile
        for name, lf in module.functions.items():
            if errors and broken_by(lf.sig.span, errors):
                continue
            out.append((name, check_function_guarded(module, name)))
    return out
