"""One text through every stage that exists, collecting diagnostics.

The CLI's `check` and the language server's diagnostics both come from here (via
the workspace), so a file is judged the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, reported
from kera_core.sema import LoweringCache, Module, lower_module
from kera_core.sema.borrow import check_ownership
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.parse import Parse, parse


def has_uses(p: Parse) -> bool:
    """Does the file have a `use` declaration (and so belong to a package)?"""
    return any(c.kind == K.USE for c in p.tree.green.children)


@dataclass
class Analysis:
    parse: Parse
    module: Module
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


def analyze(source: str | bytes, cache: LoweringCache | None = None) -> Analysis:
    """Parse and lower; a file with syntax errors is still lowered (the tree is partial).

    A file with `use` declarations on its own is a package of one module, whose imports
    are reported (K0209): its package (:func:`kera_core.sema.package.analyze_package`)
    gives it the other files."""
    return analyze_parsed(parse(source), cache)


def analyze_parsed(p: Parse, cache: LoweringCache | None = None) -> Analysis:
    """:func:`analyze` of a file already parsed."""
    if has_uses(p):
        from kera_core.sema.package import SourceUnit, analyze_package

        text = p.text
        one = analyze_package("main", [SourceUnit("main", "<input>", text)], parses={"main": p})
        m = one.modules["main"]
        return Analysis(p, m.module, m.diagnostics)
    module = lower_module(p, cache)
    return Analysis(p, module, checked(p, module))


def checked(p: Parse, module: Module) -> list[Diagnostic]:
    """The diagnostics of a file without `use` declarations, from its parse and its module:
    the syntax errors, the module's and the ownership checker's, each once, in order."""
    return reported(list(p.diagnostics) + module.diagnostics + check_ownership(module, p))
