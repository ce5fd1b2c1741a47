"""Loop depth of each block of a :class:`VCodeFunction`, from its back edges.

Selection lays loops out in order (header first, latch last), so a back edge is an edge from
a block to one at the same or an earlier layout position, and the loop it closes covers the
blocks between them.  A block's depth is the number of such spans containing it.  The register
allocator weights uses by depth (a value read in an inner loop is the last to spill) and gives
the innermost loops' spilled operands the registers those loops leave free.
"""

from __future__ import annotations

from .vcode import VCodeFunction


def loop_spans(fn: VCodeFunction) -> list[tuple[int, int]]:
    """Each loop as (header, last block) layout indices; back edges to one header merge."""
    index = {b.label: i for i, b in enumerate(fn.blocks)}
    last: dict[int, int] = {}
    for i, b in enumerate(fn.blocks):
        for s in b.succs:
            h = index[s]
            if h <= i:
                last[h] = max(last.get(h, i), i)
    return sorted(last.items())


def innermost_loops(fn: VCodeFunction) -> list[tuple[int, int]]:
    """The loops that contain no other loop."""
    spans = loop_spans(fn)
    return [
        (h, z)
        for h, z in spans
        if not any((h, z) != (h2, z2) and h <= h2 and z2 <= z for h2, z2 in spans)
    ]


def loop_depths(fn: VCodeFunction) -> dict[str, int]:
    # a difference array: +1 at each loop's header, -1 after its last block
    diff = [0] * (len(fn.blocks) + 1)
    for h, z in loop_spans(fn):
        diff[h] += 1
        diff[z + 1] -= 1
    depths: dict[str, int] = {}
    depth = 0
    for i, b in enumerate(fn.blocks):
        depth += diff[i]
        depths[b.label] = depth
    return depths
