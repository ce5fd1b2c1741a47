"""Parser output: a flat list of events, turned into a tree by the builder.

``Start`` carries ``forward_parent``: the index of a later ``Start`` event that must
open *before* this one. This is how a completed node gets wrapped by a parent found
only afterwards (``a + b`` only becomes a BIN_EXPR once ``+`` is seen) without
moving events around. An abandoned marker leaves a tombstone ``Start`` whose kind
is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.syntax.kinds import SyntaxKind


@dataclass(slots=True)
class Start:
    kind: SyntaxKind | None  # None: tombstone
    forward_parent: int | None = None


@dataclass(slots=True)
class Token:
    kind: SyntaxKind


@dataclass(slots=True)
class Finish:
    pass


@dataclass(slots=True)
class Error:
    code: str
    message: str


Event = Start | Token | Finish | Error

FINISH = Finish()
