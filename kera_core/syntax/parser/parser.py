"""The parser state: a cursor over non-trivia token kinds that emits events.

It never builds a tree. Markers open nodes; completing a marker closes the node;
``CompletedMarker.precede`` wraps a finished node in a new parent (left recursion).
A fuel counter, refilled on every consumed token, catches a grammar rule that
loops without progress: the parse then stops cleanly instead of hanging.
"""

from __future__ import annotations

from collections.abc import Collection

from kera_core.syntax.kinds import FAST_KINDS, SyntaxKind, describe
from kera_core.syntax.parser.events import FINISH, Error, Event, Start, Token

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

MAX_DEPTH = 128
# Looks at one token without consuming it before the parser calls itself stuck. Unwinding
# MAX_DEPTH levels that end on the same token (`return return … x }`) looks at it a few
# times per level, so the budget scales with the depth limit.
FUEL = 16 * MAX_DEPTH
EOF = K.EOF
# Token events carry only their kind and are never mutated: one shared event per kind.
_TOKEN_EVENT: list[Token] = [Token(k) for k in range(max(SyntaxKind) + 1)]  # type: ignore[arg-type]
for _k in SyntaxKind:
    _TOKEN_EVENT[_k] = Token(_k)


class Stuck(Exception):
    """Raised when the parser looked at the same token too often without consuming it."""


class Parser:
    def __init__(self, kinds: list[SyntaxKind]) -> None:
        self.kinds = kinds
        self.n = len(kinds)
        self.pos = 0
        self.events: list[Event] = []
        self.fuel = FUEL
        self.depth = 0
        self.no_struct = False  # inside `if`/`while`/`for` heads: `x {` is not a struct literal

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
        pos = self.pos
        return self.kinds[pos] if pos < self.n else EOF

    def at(self, kind: SyntaxKind) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        pos = self.pos
        return (self.kinds[pos] if pos < self.n else EOF) == kind

    def at_any(self, kinds: Collection[SyntaxKind]) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        pos = self.pos
        return (self.kinds[pos] if pos < self.n else EOF) in kinds

    def at_eof(self) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        pos = self.pos
        return (self.kinds[pos] if pos < self.n else EOF) == EOF

    # --- consuming --------------------------------------------------------
    def bump(self) -> None:
        pos = self.pos
        if pos < self.n:
            self.events.append(_TOKEN_EVENT[self.kinds[pos]])
            self.pos = pos + 1
            self.fuel = FUEL

    def eat(self, kind: SyntaxKind) -> bool:
        self.fuel -= 1
        if self.fuel <= 0:
            raise Stuck
        pos = self.pos
        if pos < self.n:
            if self.kinds[pos] == kind:
                self.events.append(_TOKEN_EVENT[kind])
                self.pos = pos + 1
                self.fuel = FUEL
                return True
            return False
        return kind == EOF  # `eat(EOF)` at the end succeeds without consuming

    def expect(self, kind: SyntaxKind) -> bool:
        if self.eat(kind):
            return True
        self.error("K0100", f"expected {describe(kind)}, found {describe(self.current())}")
        return False

    # --- nodes ------------------------------------------------------------
    def start(self) -> Marker:
        events = self.events
        events.append(Start(None))
        return Marker(len(events) - 1)

    def error(self, code: str, message: str) -> None:
        """Report at the next token (the lexer already reported ERROR tokens)."""
        if self.nth(0) == K.ERROR_TOKEN:
            return
        self.events.append(Error(code, message))

    def err_and_bump(self, code: str, message: str) -> None:
        m = self.start()
        self.error(code, message)
        self.bump()
        m.complete(self, K.ERROR)

    def bump_error(self) -> None:
        """Wrap one already-reported token in an ERROR node, so parsing moves on."""
        m = self.start()
        self.bump()
        m.complete(self, K.ERROR)

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
        return m.complete(self, K.ERROR)


class Marker:
    __slots__ = ("pos",)

    def __init__(self, pos: int) -> None:
        self.pos = pos

    def complete(self, p: Parser, kind: SyntaxKind) -> CompletedMarker:
        events = p.events
        events[self.pos].kind = kind
        events.append(FINISH)
        return CompletedMarker(self.pos, kind)

    def abandon(self, p: Parser) -> None:
        if self.pos == len(p.events) - 1:
            p.events.pop()
        # otherwise it stays a tombstone Start(None)


class CompletedMarker:
    __slots__ = ("pos", "kind")

    def __init__(self, pos: int, kind: SyntaxKind) -> None:
        self.pos = pos
        self.kind = kind

    def precede(self, p: Parser) -> Marker:
        """A new node that starts where this one did and will contain it."""
        m = p.start()
        p.events[self.pos].forward_parent = m.pos - self.pos
        return m
