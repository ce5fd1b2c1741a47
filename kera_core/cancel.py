"""Abandoning long work: a *watch* the caller hands in, asked now and then.

A watch is ``watch(stage, done, total) -> bool``: the work says where it is (``"lowering"``,
``"ownership"``, ``done`` of ``total`` functions) and stops, raising :class:`Abandoned`,
when the watch answers True (the language server's: a newer version of the document
arrived, or the user cancelled the progress). The work leaves every cache valid (an entry
is added only once complete), so the next run picks up what this one finished.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Watch = Callable[[str, int, int], bool]

#: the watch of work that cannot take one as an argument: a graph built on demand inside a
#: query (sema/body_reuse.py's PendingGraph, lowered when first read) polls it
_AMBIENT: ContextVar[Watch | None] = ContextVar("kera_watch", default=None)

#: how many functions are lowered or checked between two questions to the watch
EVERY = 32


class Abandoned(Exception):
    """The work stopped because its watch asked it to."""


def check(watch: Watch | None, stage: str, done: int, total: int) -> None:
    """Ask ``watch`` every :data:`EVERY` items (and at the first); raise if it says stop."""
    if watch is not None and done % EVERY == 0 and watch(stage, done, total):
        raise Abandoned(f"{stage} abandoned at {done} of {total}")


@contextmanager
def watching(watch: Watch) -> Iterator[None]:
    """Within this block, :func:`poll` asks ``watch`` (on this thread or task only)."""
    token = _AMBIENT.set(watch)
    try:
        yield
    finally:
        _AMBIENT.reset(token)


def poll(stage: str, done: int, total: int) -> None:
    """Ask the watch of the enclosing :func:`watching` block, if any; raise if it says stop.
    Cheap enough to call once per statement of a long body."""
    watch = _AMBIENT.get()
    if watch is not None and watch(stage, done, total):
        raise Abandoned(f"{stage} abandoned at {done} of {total}")
