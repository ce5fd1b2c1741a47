"""Backends: one package per target, each lowering a graph to an artifact (DESIGN.md)."""
