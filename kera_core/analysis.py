"""One text through every stage that exists, collecting diagnostics.

The CLI's `check` and the language server's diagnostics both come from here (via
the workspace), so a file is judged the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, reported
from kera_core.sema import LoweringCache, Module, lower_module
from kera_core.sema.borrow import check_ownership
from kera_core.syntax.parse import Parse, parse


@dataclass
class Analysis:
    parse: Parse
    module: Module
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


def analyze(source: str | bytes, cache: LoweringCache | None = None) -> Analysis:
    """Parse and lower; a file with syntax errors is still lowered (the tree is partial)."""
    p = parse(source)
    module = lower_module(p, cache)
    diags = list(p.diagnostics) + module.diagnostics + check_ownership(module, p)
    diags = reported(diags)
    return Analysis(p, module, diags)
