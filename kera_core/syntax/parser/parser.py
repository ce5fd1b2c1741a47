"""The parser state: a cursor over non-trivia token kinds that emits events.

It never builds a tree. Markers open nodes; completing a marker closes the node;
``precede`` wraps a finished node in a new parent (left recursion). A marker is the index
of its start event in ``events`` (a plain ``int``; see ``events.py`` for the encoding).
A fuel counter, refilled on every consumed token, catches a grammar rule that
loops without progress: the parse then stops cleanly instead of hanging.
"""

from __future__ import annotations

from collections.abc import Collection

from kera_core.syntax.kinds import FAST_KINDS, SyntaxKind, describe
from kera_core.syntax.parser.events import (
    FINISH,
    FP_SHIFT,
    INNER_SHIFT,
    LEAF,
    NO_FP,
    TOKEN,
    TOMBSTONE,
    WRAP,
    Event,
)

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

MAX_DEPTH = 128
# Looks at one token without consuming it before the parser calls itself stuck. Unwinding
# MAX_DEPTH levels that end on the same token (`return return … x }`) looks at it a few
# times per level, so the budget scales with the depth limit.
FUEL = 16 * MAX_DEPTH
EOF = K.EOF

#: A started node: the index of its start event. Completing it returns the same index.
Marker = int
CompletedMarker = int


class Stuck(Exception):
    """Raised when the parser looked at the same token too often without consuming it."""


class Parser:
    def __init__(self, kinds: list[SyntaxKind]) -> None:
        self.n = len(kinds)
        self.kinds = [*kinds, EOF]  # one EOF past the end: looking at `pos` needs no bounds check
        self.pos = 0
        self.events: list[Event] = []
        self.errors: list[tuple[str, str]] = []  # error event -i is errors[i - 1]
        self.fuel = FUEL
        self.depth = 0
        self.no_struct = False  # inside `if`/`while`/`for` heads: `x {` is not a struct literal
        self.in_index = False  # directly in `x[…]`: a range may leave out `lo`, `hi` or both

    # --- looking ----------------------------------------------------------
    def nth(self, n: int) -> SyntaxKind:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        i = self.pos + n
        return self.kinds[i] if i < self.n else K.EOF

    # ``nth(0)`` inlined: these are the parser's hottest calls.
    def current(self) -> SyntaxKind:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        return self.kinds[self.pos]

    def at(self, kind: SyntaxKind) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        return self.kinds[self.pos] == kind

    def at_any(self, kinds: Collection[SyntaxKind]) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        return self.kinds[self.pos] in kinds

    def at_eof(self) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        return self.pos >= self.n

    # --- consuming --------------------------------------------------------
    def bump(self) -> None:
        pos = self.pos
        if pos < self.n:
            self.events.append(TOKEN)
            self.pos = pos + 1
            self.fuel = FUEL

    def eat(self, kind: SyntaxKind) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        pos = self.pos
        if self.kinds[pos] == kind:
            if pos < self.n:
                self.events.append(TOKEN)
                self.pos = pos + 1
                self.fuel = FUEL
            return True  # `eat(EOF)` at the end succeeds without consuming
        return False

    def expect(self, kind: SyntaxKind) -> bool:
        self.fuel -= 1  # `self.eat(kind)`, inlined
        if self.fuel <= 0:
            raise Stuck
        pos = self.pos
        if self.kinds[pos] == kind:
            if pos < self.n:
                self.events.append(TOKEN)
                self.pos = pos + 1
                self.fuel = FUEL
            return True
        self.error("K0100", f"expected {describe(kind)}, found {describe(self.current())}")
        return False

    # --- nodes ------------------------------------------------------------
    def start(self) -> Marker:
        events = self.events
        events.append(TOMBSTONE)
        return len(events) - 1

    def leaf(self, kind: SyntaxKind) -> CompletedMarker:
        """A ``kind`` node holding the next token: ``start``, ``bump``, ``complete`` at once."""
        events = self.events
        m = len(events)
        pos = self.pos
        if pos < self.n and m:
            events.append(kind | LEAF)
            self.pos = pos + 1
            self.fuel = FUEL
        else:  # at the end (no token), or the first event (a root): spelled out
            events.append(kind)
            self.bump()
            events.append(FINISH)
        return m

    def leaf2(self, outer: SyntaxKind, inner: SyntaxKind) -> CompletedMarker:
        """An ``outer`` node holding an ``inner`` leaf (``PATH_EXPR(NAME_REF(x))``), as one
        ``WRAP`` event (what ``start``, ``leaf(inner)``, ``complete(m, outer)`` would emit)."""
        events = self.events
        m = len(events)
        pos = self.pos
        if pos < self.n:
            events.append(outer | WRAP | inner << INNER_SHIFT)
            self.pos = pos + 1
            self.fuel = FUEL
            return m
        m = self.start()  # at the end: no token for the leaf, spelled out
        self.leaf(inner)
        return self.complete(m, outer)

    def complete(self, m: Marker, kind: SyntaxKind) -> CompletedMarker:
        """Close the node opened by ``m`` as a ``kind`` node."""
        events = self.events
        events[m] = kind  # not yet completed, so it has no forward parent
        events.append(FINISH)
        return m

    def abandon(self, m: Marker) -> None:
        events = self.events
        if m == len(events) - 1:
            events.pop()
        # otherwise it stays a tombstone

    def precede(self, cm: CompletedMarker) -> Marker:
        """A new node that starts where ``cm`` did and will contain it."""
        events = self.events
        events.append(TOMBSTONE)
        m = len(events) - 1
        events[cm] = (events[cm] & NO_FP) | ((m - cm) << FP_SHIFT)
        return m

    def error(self, code: str, message: str) -> None:
        """Report at the next token (the lexer already reported ERROR tokens)."""
        if self.nth(0) == K.ERROR_TOKEN:
            return
        errors = self.errors
        errors.append((code, message))
        self.events.append(-len(errors))

    def err_and_bump(self, code: str, message: str) -> None:
        m = self.start()
        self.error(code, message)
        self.bump()
        self.complete(m, K.ERROR)

    def bump_error(self) -> None:
        """Wrap one already-reported token in an ERROR node, so parsing moves on."""
        self.leaf(K.ERROR)

    def err_recover(self, code: str, message: str, recovery: Collection[SyntaxKind]) -> None:
        """Report; consume the token into an ERROR node unless it starts something we know."""
        if self.at_any(recovery) or self.at(K.L_BRACE) or self.at(K.R_BRACE) or self.at_eof():
            self.error(code, message)
            return
        self.err_and_bump(code, message)

    def skip_balanced(self, code: str, message: str) -> CompletedMarker:
        """Too deep: swallow tokens up to the close of the enclosing delimiter, flat."""
        m = self.start()
        self.error(code, message)
        depth = 0
        while not self.at_eof():
            k = self.current()
            if k in (K.L_PAREN, K.L_BRACK, K.L_BRACE):
                depth += 1
            elif k in (K.R_PAREN, K.R_BRACK, K.R_BRACE):
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and k == K.SEMI:
                break
            self.bump()
        return self.complete(m, K.ERROR)
