"""Semantic analysis: names, types and shapes, lowering source to the graph."""

from kera_core.sema.module import LoweringCache, Module, lower_module

__all__ = ["LoweringCache", "Module", "lower_module"]
