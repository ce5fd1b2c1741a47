"""What the lowering asks of a target — never its name (docs/lowering.md, "Targets").

The loop program is the same for every target but for the shape of the composites whose
best form depends on how many threads share the work. Both shapes compute the same bits:
each is the order docs/semantics.md fixes, written for a different machine.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoweringTarget:
    """``many_threads``: parallel loops run on thousands of threads (a GPU grid). Then

    * the canonical sum (§7.1) is three passes of ``parallel`` loops over buffers: one
      iteration per (tile, lane) adding that lane's elements in order, one per tile for the
      lane tree, and the tile tree level by level (pairs at distance 1, 2, 4, … — the
      left-complete tree of §7.1, every level one parallel loop);
    * `max`/`min` reduce tiles in parallel, then the same level tree (any order is exact);
    * `matmul` is one ``parallel`` loop over every output element, k in order inside.

    Otherwise (a CPU: a few cores with vectors) they stream: one pass, no buffers beyond a
    few words, tiles reduced as they come (a binary counter for the tile tree).

    ``distinct_spaces``: the memory spaces of docs/language.md §10 are separate memories
    (a GPU's device memory, page-locked or managed host memory): a buffer is allocated in
    its value's space and `move_to`/`copy_to` copy between spaces. Otherwise every space is
    the same memory and a transfer only renames the value.

    ``buffer_handles``: a buffer is reached through a handle (an address in a register or
    local) that can be exchanged with another's: a loop whose iteration ends with two or more
    of its carried buffers trading places (`swap(&mut a, &mut b)`) exchanges the handles
    (:class:`~kera_core.loops.ir.Exchange`, O(1)) instead of copying elements. Otherwise
    (fixed memories: a circuit's RAMs; a GPU kernel's buffers) the elements are copied.
    """

    many_threads: bool = False
    distinct_spaces: bool = False
    buffer_handles: bool = True


CPU = LoweringTarget()
GRID = LoweringTarget(many_threads=True, distinct_spaces=True, buffer_handles=False)
FIXED_MEMORIES = LoweringTarget(buffer_handles=False)
