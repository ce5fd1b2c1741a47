"""Room for deep recursion, shared by every tree walker in the process.

The parser caps nesting (``MAX_DEPTH`` levels of brackets, blocks and prefixes, K0108),
but each level costs several Python frames in the grammar rules, and a long flat chain
such as ``a + a + … + a``, ``s.f.f.f`` or an ``else if`` ladder is a deep tree that the
semantic passes, the formatter and the IDE queries walk recursively. CPython 3.11+ runs
Python-to-Python calls without growing the C stack, so a higher recursion limit is safe;
beyond it, callers turn ``RecursionError`` into a K0108 diagnostic.

Not every frame stays off the C stack, though: a call with ``*args``, a property, a
generator or a comparison passes through C, and a chain of ~16,000 links overflowed the
main thread's 8 MiB stack (a segmentation fault, not a RecursionError) below the 50,000
frames. So the room depends on the thread's C stack (:func:`_room`): a thread started by
:func:`start_deep_thread` (the language server's worker: 256 MiB) and the main thread once
its stack limit could be raised (:func:`_raise_main_stack`: Linux grows the main stack on
demand up to ``RLIMIT_STACK``, and keeps 128 MiB free below it) get :data:`DEEP_LIMIT`; any
other thread — or the main thread where the hard limit forbids raising it — gets
:data:`SMALL_STACK_LIMIT`, which an 8 MiB stack holds even when every frame passes through
C. Beyond the room, a RecursionError is reported as K0108.

The limit is process-wide while editors call in from worker threads, so the room is
counted: while any user is inside, the limit is the smallest room among them, and the old
limit comes back when the last one leaves.
``quiet_gc`` also pauses the cyclic collector (formatting and lowering allocate millions
of small acyclic objects; pausing it roughly halves their time on big files), and hands
what the section allocated to the oldest generation when it ends (:func:`_promote_young`).
"""

from __future__ import annotations

import gc
import sys
import threading

DEEP_LIMIT = 50_000
"""Python frames available inside :func:`deep_recursion` on a thread with a deep C stack
(documented in language.md §16)."""

SMALL_STACK_LIMIT = 12_000
"""Python frames available on a thread whose C stack is the usual 8 MiB."""

DEEP_STACK_BYTES = 256 * 1024 * 1024
"""The C stack of a thread from :func:`start_deep_thread` (address space reserved; pages
are touched only on use)."""

MAIN_STACK_BYTES = 112 * 1024 * 1024
"""What the main thread's stack limit is raised to (under the 128 MiB Linux leaves free
below the main stack whatever the limit was at start)."""

_lock = threading.Lock()
_rooms: list[int] = []  # the room of every user inside, in no order
_saved_limit = 0
_gc_users = 0
_gc_was_on = True
_deep = threading.local()  # .room: this thread's room (start_deep_thread sets it)
_main_raised: bool | None = None  # None: not tried yet


def _raise_main_stack() -> bool:
    """Raise the main thread's soft ``RLIMIT_STACK`` to :data:`MAIN_STACK_BYTES` (once);
    whether the main thread now has that much room."""
    global _main_raised
    if _main_raised is None:
        try:
            import resource

            soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
            if soft == resource.RLIM_INFINITY or soft >= MAIN_STACK_BYTES:
                _main_raised = True
            elif hard == resource.RLIM_INFINITY or hard >= MAIN_STACK_BYTES:
                resource.setrlimit(resource.RLIMIT_STACK, (MAIN_STACK_BYTES, hard))
                _main_raised = sys.platform.startswith("linux")
            else:
                _main_raised = False
        except (ImportError, ValueError, OSError):
            _main_raised = False
    return _main_raised


def _room() -> int:
    """The Python frames the calling thread's C stack holds (module docstring); worked out
    once per thread (``deep_recursion`` asks on every function lowered)."""
    room = getattr(_deep, "room", None)
    if room is None:
        main = threading.current_thread() is threading.main_thread()
        room = _deep.room = DEEP_LIMIT if main and _raise_main_stack() else SMALL_STACK_LIMIT
    return room


def start_deep_thread(target, name: str, daemon: bool = True) -> threading.Thread:
    """Start ``target`` on a thread with a :data:`DEEP_STACK_BYTES` C stack, whose
    :func:`deep_recursion` sections get :data:`DEEP_LIMIT` frames."""

    def run() -> None:
        _deep.room = DEEP_LIMIT
        target()

    with _lock:  # stack_size is process-wide: set it only around this start
        old = threading.stack_size(DEEP_STACK_BYTES)
        try:
            t = threading.Thread(target=run, name=name, daemon=daemon)
            t.start()
        finally:
            threading.stack_size(old)
    return t


class deep_recursion:  # noqa: N801 - used as a function: `with deep_recursion():`
    """Run the body with as many frames of room as this thread's C stack holds (and, with
    ``quiet_gc``, no cyclic GC). Re-entrant and thread-safe.

    A class rather than a ``contextmanager`` generator: lowering and the ownership check
    enter one per function, nested in the module's section (a third of the cost)."""

    __slots__ = ("quiet_gc", "room")

    def __init__(self, quiet_gc: bool = False) -> None:
        self.quiet_gc = quiet_gc
        self.room = 0

    def __enter__(self) -> None:
        global _saved_limit, _gc_users, _gc_was_on
        room = self.room = _room()
        with _lock:
            if not _rooms:
                _saved_limit = sys.getrecursionlimit()
            _rooms.append(room)
            limit = min(_rooms)
            if sys.getrecursionlimit() != limit:
                sys.setrecursionlimit(limit)
            if self.quiet_gc:
                if _gc_users == 0:
                    _gc_was_on = gc.isenabled()
                    gc.disable()
                _gc_users += 1

    def __exit__(self, *exc: object) -> None:
        global _gc_users
        with _lock:
            _rooms.remove(self.room)
            limit = min(_rooms) if _rooms else _saved_limit
            if sys.getrecursionlimit() != limit:
                sys.setrecursionlimit(limit)
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
