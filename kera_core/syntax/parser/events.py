"""Parser output: a flat list of small integers, turned into a tree by the builder.

One event per list entry, no objects:

* ``TOKEN`` (0): the next non-trivia token (the builder reads its kind and text from the
  lexer's lists, and places the trivia before it).
* ``FINISH`` (1): close the innermost open node.
* A start: ``kind | leaf << 10 | wrap << 11 | inner << INNER_SHIFT | forward_parent <<
  FP_SHIFT``. ``kind`` is a node kind (200–299), or ``TOMBSTONE`` (2) for a marker not
  (yet) completed: an abandoned marker leaves one, and the builder skips it. ``leaf``
  (``LEAF``) makes the event a whole node holding just the next token: start, TOKEN and
  FINISH in one (a name, a literal). ``wrap`` (``WRAP``) makes it a whole node holding an
  ``inner`` leaf around the next token: start, start ``inner``, TOKEN, FINISH and FINISH in
  one (``PATH_EXPR(NAME_REF(x))``, ``NAMED_TYPE(NAME_REF(f32))``).
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
WRAP = 1 << 11
INNER_SHIFT = 12
FP_SHIFT = 22
NO_FP = (1 << FP_SHIFT) - 1  # every bit of a start event but its forward parent

Event = int
