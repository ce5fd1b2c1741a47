"""Shared by the target-agreement tests: a run's outcome as one comparable string, and a
source's module (the test fails on its diagnostics)."""

from __future__ import annotations

from kera_core.analysis import analyze
from kera_core.interp import InterpError


def outcome(run) -> str:
    """``ok <result digest>`` (raw bytes of every output), or ``error <code>``."""
    try:
        return "ok " + run().digest()
    except InterpError as e:
        return "error " + e.code


def analyzed(src: str):
    """The module of ``src``, which must check without errors."""
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module
