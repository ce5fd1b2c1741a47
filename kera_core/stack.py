"""Room for deep recursion, shared by every tree walker in the process.

The parser caps nesting (``MAX_DEPTH`` levels of brackets, blocks and prefixes, K0108),
but each level costs several Python frames in the grammar rules, and a long flat chain
such as ``a + a + … + a``, ``s.f.f.f`` or an ``else if`` ladder is a deep tree that the
semantic passes, the formatter and the IDE queries walk recursively. CPython 3.11+ runs
Python-to-Python calls without growing the C stack, so a higher recursion limit is safe;
beyond it, callers turn ``RecursionError`` into a K0108 diagnostic.

The limit is process-wide while editors call in from worker threads, so the room is
counted: it is raised when the first user enters and restored when the last one leaves.
``quiet_gc`` also pauses the cyclic collector (formatting and lowering allocate millions
of small acyclic objects; pausing it roughly halves their time on big files), and hands
what the section allocated to the oldest generation when it ends (:func:`_promote_young`).
"""

from __future__ import annotations

import gc
import sys
import threading

DEEP_LIMIT = 50_000
"""Python frames available inside :func:`deep_recursion` (documented in language.md §16)."""

_lock = threading.Lock()
_active = 0
_saved_limit = 0
_gc_users = 0
_gc_was_on = True


class deep_recursion:  # noqa: N801 - used as a function: `with deep_recursion():`
    """Run the body with :data:`DEEP_LIMIT` frames of room (and, with ``quiet_gc``, no
    cyclic GC). Re-entrant and thread-safe.

    A class rather than a ``contextmanager`` generator: lowering and the ownership check
    enter one per function, nested in the module's section (a third of the cost)."""

    __slots__ = ("quiet_gc",)

    def __init__(self, quiet_gc: bool = False) -> None:
        self.quiet_gc = quiet_gc

    def __enter__(self) -> None:
        global _active, _saved_limit, _gc_users, _gc_was_on
        with _lock:
            if _active == 0:
                _saved_limit = sys.getrecursionlimit()
                if _saved_limit < DEEP_LIMIT:
                    sys.setrecursionlimit(DEEP_LIMIT)
            _active += 1
            if self.quiet_gc:
                if _gc_users == 0:
                    _gc_was_on = gc.isenabled()
                    gc.disable()
                _gc_users += 1

    def __exit__(self, *exc: object) -> None:
        global _active, _gc_users
        with _lock:
            _active -= 1
            if _active == 0 and _saved_limit < DEEP_LIMIT:
                if sys.getrecursionlimit() == DEEP_LIMIT:  # nobody else changed it meanwhile
                    sys.setrecursionlimit(_saved_limit)
            if self.quiet_gc:
                _gc_users -= 1
                if _gc_users == 0 and _gc_was_on:
                    _promote_young()
                    gc.enable()


def _promote_young() -> None:
    """Move every object the young generations hold into the oldest one, untraversed.

    What a paused section allocated is mostly what it returns (trees, graphs, caches),
    long-lived; left in the youngest generation, the first allocation after ``gc.enable``
    would traverse all of it (a fifth of a big file's lowering). ``freeze`` moves every
    tracked object into the permanent generation and resets the young counts; ``unfreeze``
    puts them back into the oldest generation, where a cycle among them is found at the
    next full collection (the language server runs those when idle).
    """
    gc.freeze()
    gc.unfreeze()
