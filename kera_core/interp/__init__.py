"""The reference interpreter: the executable definition of Kera's semantics.

    from kera_core.analysis import analyze
    from kera_core.interp import run_function

    m = analyze(text).module
    r = run_function(m, "saxpy", {"a": 2.0, "x": x, "y": y})
    r["y"], r.digest()

Every backend is tested against this; docs/semantics.md says what it computes and
why, clause by clause. Checked run-time errors raise :class:`InterpError`.
"""

from __future__ import annotations

from kera_core.interp.api import Output, RunResult, entry_signature, run_function
from kera_core.interp.errors import CODES, InputError, InterpError

__all__ = [
    "CODES",
    "InputError",
    "InterpError",
    "Output",
    "RunResult",
    "entry_signature",
    "run_function",
]
