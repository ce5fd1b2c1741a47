"""Events + tokens -> green tree. Trivia placement lives here, not in the grammar.

Rules (as in rust-analyzer and Roslyn): trivia before a node's first token goes
to the enclosing node, except that comments directly above an item (no blank
line between) belong to the item, so doc comments travel with what they
document. Trivia after the last token of the file belongs to the root.

The events are the integers of ``parser/events.py``. Every green token is interned once,
up front; the ``t``-th TOKEN event is the ``t``-th non-trivia token, at index ``sig[t]``
of the token lists, so the trivia before it is the slice ``tokens[pos:sig[t]]``.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, is_

from kera_core.diagnostics import Diagnostic, error
from kera_core.source import Span
from kera_core.syntax.kinds import FAST_KINDS, SyntaxKind
from kera_core.syntax.lexer import LexedText
from kera_core.syntax.parser.events import FP_SHIFT, KIND_MASK, LEAF, TOMBSTONE
from kera_core.syntax.tree import GreenNode, GreenToken, NodeCache

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

ITEM_KINDS = frozenset({K.FN, K.STRUCT, K.CONST, K.FIELD})
_TRIVIA = frozenset({K.WHITESPACE, K.COMMENT, K.DOC_COMMENT})
_HASH = attrgetter("_hash")
_LEN = attrgetter("text_len")
_GREEN_NEW = object.__new__
_KIND_OF: list[SyntaxKind | None] = [None] * (KIND_MASK + 1)  # a start event's kind bits -> kind
for _k in SyntaxKind:
    _KIND_OF[_k] = _k
LEAF2 = 2 * LEAF  # start events below this and from LEAF up: leaves without forward parents


def _n_attached(kinds: list[SyntaxKind], texts: list[str], pos: int, n_trivia: int) -> int:
    """How many of the ``n_trivia`` trivia tokens at ``pos`` are comments glued to the next item.

    A comment on the same line as the previous token is that line's trailing
    comment (Roslyn's rule) and never moves down to the next item.
    """
    limit = n_trivia
    if pos > 0:
        for i in range(pos, pos + n_trivia):
            if kinds[i] == K.WHITESPACE and "\n" in texts[i]:
                limit = pos + n_trivia - i - 1
                break
        else:
            limit = 0
    attached = 0
    i = pos + n_trivia - 1
    count = 0
    while i >= pos:
        kind = kinds[i]
        count += 1
        if kind == K.WHITESPACE:
            if texts[i].count("\n") >= 2:
                break
        else:
            attached = count
        i -= 1
    return min(attached, limit)


_SIGNIFICANT = [k not in _TRIVIA for k in range(max(SyntaxKind) + 1)]  # by kind


def significant(kinds: list[SyntaxKind]) -> list[int]:
    """Indices of the non-trivia tokens (selected in C)."""
    return list(compress(range(len(kinds)), map(_SIGNIFICANT.__getitem__, kinds)))


class TreeBuilder:
    def __init__(
        self, lexed: LexedText, cache: NodeCache, base: int = 0, sig: list[int] | None = None
    ) -> None:
        self.kinds = lexed.kinds
        self.texts = lexed.texts
        self.cache = cache
        self.base = base
        self.sig = significant(lexed.kinds) if sig is None else sig
        self.diagnostics: list[Diagnostic] = []
        self.result: GreenNode | None = None
        self.tokens: list[GreenToken] = []
        self._bidx = 0  # byte offset of tokens[_bidx], computed on demand for errors
        self._bbyte = base

    def _error(self, code: str, message: str, j: int) -> None:
        """Report at token ``j`` (the next non-trivia token; ``len(tokens)`` at the end)."""
        tokens = self.tokens
        if j > self._bidx:
            self._bbyte += sum(map(_LEN, tokens[self._bidx : j]))
            self._bidx = j
        at = self._bbyte
        end = at + tokens[j].text_len if j < len(tokens) else at
        d = error(code, Span(at, end), message)
        if not self.diagnostics or self.diagnostics[-1] != d:
            self.diagnostics.append(d)

    def run(self, events: list[int], errors: list[tuple[str, str]]) -> GreenNode:
        kinds = self.kinds
        texts = self.texts
        n = len(kinds)
        cache = self.cache
        # Interned in C (``zip`` reuses its tuple). A miss is the first sight of a token
        # in this process: each distinct one is interned once, in order, then all are hits.
        # (``None in tokens`` would call GreenToken.__eq__: look for misses among bools.)
        tokens = self.tokens = list(map(cache.tokens.get, zip(kinds, texts, strict=True)))
        missing = list(map(is_, tokens, repeat(None, n)))
        if True in missing:
            token_of = cache.token
            for kind, text in dict.fromkeys(compress(zip(kinds, texts, strict=True), missing)):
                token_of(kind, text)
            tokens = self.tokens = list(map(cache.tokens.get, zip(kinds, texts, strict=True)))
        sig = self.sig + [n]  # the start of the trailing trivia, after the last TOKEN
        nodes = cache.nodes
        node_get = nodes.get
        kind_of = _KIND_OF
        max_children = cache.MAX_CHILDREN
        items = ITEM_KINDS
        new = _GREEN_NEW
        green = GreenNode
        get_hash = _HASH
        get_len = _LEN
        stack: list[tuple[SyntaxKind, list[GreenNode | GreenToken]]] = []
        pop = stack.pop
        children: list[GreenNode | GreenToken] = []  # of the innermost open node
        pos = 0  # the next token to place
        t = 0  # the next TOKEN event's index into ``sig``
        for i, ev in enumerate(events):
            if ev == 0:  # TOKEN
                j = sig[t]
                t += 1
                if j > pos:
                    if j == pos + 1:
                        children.append(tokens[pos])
                    else:
                        children += tokens[pos:j]
                if j < n:
                    children.append(tokens[j])
                    pos = j + 1
                else:
                    pos = j
            elif ev == 1:  # FINISH
                kind, done = pop()
                if not stack:  # the root: it takes the trailing trivia
                    done += tokens[pos:]
                    pos = n
                key = tuple(done)
                # Every child is a token or a node built here: all are hashed (only
                # path-copied nodes, never children here, defer their hash).
                hashes = tuple(map(get_hash, key))
                if len(key) <= max_children:  # == cache.node(kind, key), inlined
                    hkey = (kind, hashes)
                    node = node_get(hkey)
                    if node is None:
                        node = new(green)
                        node.kind = kind
                        node.children = key
                        node.text_len = sum(map(get_len, key))
                        node._hash = hash(hkey)
                        node._offsets = None
                        nodes[hkey] = node
                    elif node.children != key:
                        node = cache.interned_collision(kind, key)
                else:
                    node = new(green)
                    node.kind = kind
                    node.children = key
                    node.text_len = sum(map(get_len, key))
                    node._hash = hash((kind, hashes))
                    node._offsets = None
                if stack:
                    children = stack[-1][1]
                    children.append(node)
                else:
                    self.result = node
            elif ev < 0:
                code, message = errors[-ev - 1]
                self._error(code, message, max(sig[t], pos))  # `pos` once the root took all
            else:  # a start
                if ev < LEAF:
                    if ev == TOMBSTONE:
                        continue
                    opening = (ev,)
                    leaf = False
                elif ev < LEAF2:  # a leaf: this start, the next TOKEN and FINISH
                    if stack:
                        j = sig[t]
                        t += 1
                        if j > pos:
                            if j == pos + 1:
                                children.append(tokens[pos])
                            else:
                                children += tokens[pos:j]
                        tok = tokens[j]
                        pos = j + 1
                        kind = kind_of[ev & KIND_MASK]
                        hkey = (kind, (tok._hash,))
                        node = node_get(hkey)
                        if node is None:
                            node = new(green)
                            node.kind = kind
                            node.children = (tok,)
                            node.text_len = tok.text_len
                            node._hash = hash(hkey)
                            node._offsets = None
                            nodes[hkey] = node
                        elif node.children[0] is not tok and node.children != (tok,):
                            node = cache.interned_collision(kind, (tok,))
                        children.append(node)
                        continue
                    opening = (kind_of[ev & KIND_MASK],)
                    leaf = True
                else:
                    opening, leaf = self._forward_chain(events, i)
                for kind in opening:
                    if not stack:
                        children = []
                        stack.append((kind, children))
                        continue
                    j = sig[t]
                    attached = 0
                    if j > pos:
                        if kind in items:
                            attached = _n_attached(kinds, texts, pos, j - pos)
                        stop = j - attached
                        if stop > pos:
                            children += tokens[pos:stop]
                            pos = stop
                    children = tokens[pos:j] if attached else []
                    pos += attached
                    stack.append((kind, children))
                if leaf:  # the innermost opened node holds one token: rare, spelled out
                    pos, t, children = self._leaf_rest(stack, pos, t)
        assert self.result is not None and not stack
        return self.result

    def _leaf_rest(
        self, stack: list[tuple[SyntaxKind, list[GreenNode | GreenToken]]], pos: int, t: int
    ) -> tuple[int, int, list[GreenNode | GreenToken]]:
        """TOKEN and FINISH for a leaf whose start was just opened (after forward parents)."""
        tokens = self.tokens
        j = self.sig[t] if t < len(self.sig) else len(tokens)
        children = stack[-1][1]
        children += tokens[pos:j]
        pos = j
        if j < len(tokens):
            children.append(tokens[j])
            pos = j + 1
        if len(stack) == 1:
            children += tokens[pos:]
            pos = len(tokens)
        kind, done = stack.pop()
        node = self.cache.node(kind, tuple(done))
        if stack:
            children = stack[-1][1]
            children.append(node)
        else:
            self.result = node
        return pos, t + 1, children

    @staticmethod
    def _forward_chain(events: list[int], i: int) -> tuple[list[SyntaxKind], bool]:
        """The kinds of a start and its forward parents, outermost first (all are used up),
        and whether the start is a leaf."""
        ev = events[i]
        kind_of = _KIND_OF
        forward = []
        kind = ev & KIND_MASK
        if kind != TOMBSTONE:
            forward.append(kind_of[kind])
        events[i] = TOMBSTONE
        fp = ev >> FP_SHIFT
        j = i
        while fp:
            j += fp
            parent = events[j]
            assert parent > 1, "a forward parent is a start event"
            if parent & KIND_MASK != TOMBSTONE:
                forward.append(kind_of[parent & KIND_MASK])
            fp = parent >> FP_SHIFT
            events[j] = TOMBSTONE
        forward.reverse()
        return forward, bool(ev & LEAF)
