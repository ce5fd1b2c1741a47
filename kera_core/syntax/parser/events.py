"""Parser output: a flat list of small integers, turned into a tree by the builder.

One event per list entry, no objects:

* ``TOKEN`` (0): the next non-trivia token (the builder reads its kind and text from the
  lexer's lists, and places the trivia before it).
* ``FINISH`` (1): close the innermost open node.
* A start: ``kind | leaf << 10 | forward_parent << FP_SHIFT``. ``kind`` is a node kind
  (200–299), or ``TOMBSTONE`` (2) for a marker not (yet) completed: an abandoned marker
  leaves one, and the builder skips it. ``leaf`` (``LEAF``) makes the event a whole node
  holding just the next token: start, TOKEN and FINISH in one (a name, a literal).
  ``forward_parent`` (0: none) is the distance to a later start event that must open
  *before* this one. This is how a completed node gets wrapped by a parent found only
  afterwards (``a + b`` only becomes a BIN_EXPR once ``+`` is seen) without moving events
  around.
* A negative number ``-i``: the error ``errors[i - 1]`` (a ``(code, message)`` pair kept by
  the parser), reported at the next non-trivia token.
"""

from __future__ import annotations

TOKEN = 0
FINISH = 1
TOMBSTONE = 2
KIND_MASK = (1 << 10) - 1
LEAF = 1 << 10
FP_SHIFT = 11

Event = int
