"""The loop program: the one target-neutral layer between the graph and every backend.

``lower_program(graph)`` plans memory and expands every composite once; ``run_function``
runs a function through the loop program's own interpreter. See docs/lowering.md.
"""

from kera_core.loops.ir import Program, format_program
from kera_core.loops.lower import NotLowered, lower_program
from kera_core.loops.run import run_function

__all__ = ["NotLowered", "Program", "format_program", "lower_program", "run_function"]
