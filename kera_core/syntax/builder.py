"""Events + tokens -> green tree. Trivia placement lives here, not in the grammar.

Rules (as in rust-analyzer and Roslyn): trivia before a node's first token goes
to the enclosing node, except that comments directly above an item (no blank
line between) belong to the item, so doc comments travel with what they
document. Trivia after the last token of the file belongs to the root.
"""

from __future__ import annotations

from collections.abc import Iterable

from kera_core.diagnostics import Diagnostic, error
from kera_core.source import Span, utf8_len
from kera_core.syntax.kinds import FAST_KINDS, SyntaxKind
from kera_core.syntax.lexer import LexedText
from kera_core.syntax.parser.events import Error, Event, Finish, Start
from kera_core.syntax.tree import GreenNode, GreenToken, NodeCache

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

ITEM_KINDS = frozenset({K.FN, K.STRUCT, K.CONST, K.FIELD})
_TRIVIA = frozenset({K.WHITESPACE, K.COMMENT, K.DOC_COMMENT})


class TreeBuilder:
    def __init__(self, lexed: LexedText, cache: NodeCache, base: int = 0) -> None:
        self.kinds = lexed.kinds
        self.texts = lexed.texts
        self.cache = cache
        self.pos = 0
        self.byte = base
        self.stack: list[tuple[SyntaxKind, list[GreenNode | GreenToken]]] = []
        self.diagnostics: list[Diagnostic] = []
        self.result: GreenNode | None = None

    # --- tokens ------------------------------------------------------------
    def _emit(self) -> None:
        tok = self.cache.token(self.kinds[self.pos], self.texts[self.pos])
        self.stack[-1][1].append(tok)
        self.byte += tok.text_len
        self.pos += 1

    def _n_trivia(self) -> int:
        i = self.pos
        n = len(self.kinds)
        while i < n and self.kinds[i] in _TRIVIA:
            i += 1
        return i - self.pos

    def _n_attached(self, n_trivia: int) -> int:
        """How many of the trailing trivia tokens are comments glued to the next item.

        A comment on the same line as the previous token is that line's trailing
        comment (Roslyn's rule) and never moves down to the next item.
        """
        limit = n_trivia
        if self.pos > 0:
            for i in range(self.pos, self.pos + n_trivia):
                if self.kinds[i] == K.WHITESPACE and "\n" in self.texts[i]:
                    limit = self.pos + n_trivia - i - 1
                    break
            else:
                limit = 0
        attached = 0
        i = self.pos + n_trivia - 1
        count = 0
        while i >= self.pos:
            kind = self.kinds[i]
            count += 1
            if kind == K.WHITESPACE:
                if self.texts[i].count("\n") >= 2:
                    break
            else:
                attached = count
            i -= 1
        return min(attached, limit)

    def _eat_trivia(self, n: int) -> None:
        for _ in range(n):
            self._emit()

    # --- events ------------------------------------------------------------
    def start(self, kind: SyntaxKind) -> None:
        if not self.stack:
            self.stack.append((kind, []))
            return
        n = self._n_trivia()
        attached = self._n_attached(n) if kind in ITEM_KINDS else 0
        self._eat_trivia(n - attached)
        self.stack.append((kind, []))
        self._eat_trivia(attached)

    def token(self) -> None:
        self._eat_trivia(self._n_trivia())
        if self.pos < len(self.kinds):
            self._emit()

    def finish(self) -> None:
        if len(self.stack) == 1:
            while self.pos < len(self.kinds):
                self._emit()
        kind, children = self.stack.pop()
        node = self.cache.node(kind, tuple(children))
        if self.stack:
            self.stack[-1][1].append(node)
        else:
            self.result = node

    def error(self, code: str, message: str) -> None:
        n = self._n_trivia()
        at = self.byte
        for i in range(self.pos, self.pos + n):
            t = self.texts[i]
            at += len(t) if t.isascii() else utf8_len(t)
        j = self.pos + n
        if j < len(self.kinds):
            t = self.texts[j]
            end = at + (len(t) if t.isascii() else utf8_len(t))
        else:
            end = at
        d = error(code, Span(at, end), message)
        if not self.diagnostics or self.diagnostics[-1] != d:
            self.diagnostics.append(d)

    def run(self, events: list[Event]) -> GreenNode:
        # The hot loop: ``start``/``token``/``finish`` inlined over local variables. The
        # methods above stay the reference (and serve errors and forward-parent chains).
        kinds = self.kinds
        texts = self.texts
        n = len(kinds)
        stack = self.stack
        trivia = _TRIVIA
        items = ITEM_KINDS
        token_of = self.cache.token
        interned = self.cache.tokens.get  # the common case of ``token_of``, without a call
        node_of = self.cache.node
        t_start = Start
        t_finish = Finish
        t_error = Error
        pos = self.pos
        byte = self.byte
        i = -1
        for ev in events:
            i += 1
            t = type(ev)
            if t is t_start:
                kind = ev.kind  # type: ignore[union-attr]
                fp = ev.forward_parent  # type: ignore[union-attr]
                if fp is None:
                    if kind is None:
                        continue
                    ev.kind = None  # type: ignore[union-attr]
                    opening: Iterable[SyntaxKind] = (kind,)
                else:
                    # Open the forward-parent chain outermost first.
                    forward = []
                    j = i
                    if kind is not None:
                        forward.append(kind)
                    ev.kind = None  # type: ignore[union-attr]
                    ev.forward_parent = None  # type: ignore[union-attr]
                    while fp is not None:
                        j += fp
                        parent = events[j]
                        assert isinstance(parent, Start)
                        if parent.kind is not None:
                            forward.append(parent.kind)
                        fp = parent.forward_parent
                        parent.kind = None
                        parent.forward_parent = None
                    opening = reversed(forward)
                for kind in opening:  # == self.start(kind)
                    if not stack:
                        stack.append((kind, []))
                        continue
                    j = pos
                    while j < n and kinds[j] in trivia:
                        j += 1
                    if kind in items and j > pos:
                        self.pos = pos
                        attached = self._n_attached(j - pos)
                    else:
                        attached = 0
                    children = stack[-1][1]
                    stop = j - attached
                    while pos < stop:
                        tok = interned((kinds[pos], texts[pos])) or token_of(kinds[pos], texts[pos])
                        children.append(tok)
                        byte += tok.text_len
                        pos += 1
                    children = []
                    stack.append((kind, children))
                    for _ in range(attached):
                        tok = interned((kinds[pos], texts[pos])) or token_of(kinds[pos], texts[pos])
                        children.append(tok)
                        byte += tok.text_len
                        pos += 1
            elif t is t_finish:
                if len(stack) == 1:
                    children = stack[-1][1]
                    while pos < n:
                        tok = interned((kinds[pos], texts[pos])) or token_of(kinds[pos], texts[pos])
                        children.append(tok)
                        byte += tok.text_len
                        pos += 1
                kind, children = stack.pop()
                node = node_of(kind, tuple(children))
                if stack:
                    stack[-1][1].append(node)
                else:
                    self.result = node
            elif t is t_error:
                self.pos = pos
                self.byte = byte
                self.error(ev.code, ev.message)  # type: ignore[union-attr]
            else:
                children = stack[-1][1]
                while pos < n and kinds[pos] in trivia:
                    tok = interned((kinds[pos], texts[pos])) or token_of(kinds[pos], texts[pos])
                    children.append(tok)
                    byte += tok.text_len
                    pos += 1
                if pos < n:
                    tok = interned((kinds[pos], texts[pos])) or token_of(kinds[pos], texts[pos])
                    children.append(tok)
                    byte += tok.text_len
                    pos += 1
        self.pos = pos
        self.byte = byte
        assert self.result is not None and not self.stack
        return self.result
