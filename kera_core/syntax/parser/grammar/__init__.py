"""Grammar rules, one module per syntactic category; entry points live here."""

from kera_core.syntax.parser.grammar.expressions import block, expr, statements
from kera_core.syntax.parser.grammar.items import items, source_file

__all__ = ["block", "expr", "items", "source_file", "statements"]
