"""Kera's compiler core: front end, graph, checks, backends and the incremental workspace."""

from kera_core.syntax.parse import Parse, parse

__version__ = "0.1.0"

__all__ = ["Parse", "parse", "__version__"]
