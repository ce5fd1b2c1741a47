"""The content-addressed graph: types, nodes, regions, the opcode registry and the store."""

from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.provenance import Provenance

__all__ = ["Function", "Graph", "Node", "Provenance", "Region", "Value"]
