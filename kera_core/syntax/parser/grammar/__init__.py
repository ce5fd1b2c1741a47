"""Grammar rules, one module per syntactic category; entry points live here."""

from kera_core.syntax.parser.grammar.expressions import block, expr, statements
from kera_core.syntax.parser.grammar.items import source_file

__all__ = ["block", "expr", "source_file", "statements"]
