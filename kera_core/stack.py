"""Room for deep recursion in the tree walkers (lowering, ownership, formatting).

The parser bounds nesting (K0108), but a long flat chain such as `a + a + … + a` is a
deep left-nested tree, and the semantic passes walk trees recursively. CPython 3.11+
runs Python-to-Python calls without growing the C stack, so a higher recursion
limit is safe; beyond it, callers turn RecursionError into a K0108 diagnostic.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

DEEP_LIMIT = 20_000


@contextmanager
def deep_recursion(limit: int = DEEP_LIMIT):
    old = sys.getrecursionlimit()
    if old < limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        if old < limit:
            sys.setrecursionlimit(old)
