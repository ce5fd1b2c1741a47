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
from operator import attrgetter, is_not

from kera_core.diagnostics import Diagnostic, error
from kera_core.source import Span
from kera_core.syntax.kinds import FAST_KINDS, SyntaxKind
from kera_core.syntax.lexer import LexedText
from kera_core.syntax.parser.events import FP_SHIFT, INNER_SHIFT, KIND_MASK, LEAF, NO_FP, TOMBSTONE
from kera_core.syntax.tree import GreenNode, GreenToken, NodeCache

K = FAST_KINDS  # SyntaxKind members without the enum descriptor cost

ITEM_KINDS = frozenset({K.FN, K.STRUCT, K.CONST, K.FIELD})
_TRIVIA = frozenset({K.WHITESPACE, K.COMMENT, K.DOC_COMMENT})
_HASH = attrgetter("_hash")
_LEN = attrgetter("text_len")
_KIND = attrgetter("kind")
_NO_TOKEN = GreenToken.__new__(GreenToken)  # what a text not yet interned finds: no kind
_NO_TOKEN.kind = None  # type: ignore[assignment]
_GREEN_NEW = object.__new__
_KIND_OF: list[SyntaxKind | None] = [None] * (KIND_MASK + 1)  # a start event's kind bits -> kind
for _k in SyntaxKind:
    _KIND_OF[_k] = _k
LEAF2 = 2 * LEAF  # start events below this and from LEAF up: leaves without forward parents
FP_ONE = 1 << FP_SHIFT  # start events below this and from LEAF2 up: wraps without them
assert NodeCache.MAX_CHILDREN == 3  # `run` inlines the node cache for up to three children


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
        # The open nodes, innermost last: each its kind and its children so far.
        self.stack: list[tuple[SyntaxKind, list[GreenNode | GreenToken]]] = []
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
        # Interned in C: looked up by text (``cache.by_text``: a ``str`` key, its hash
        # cached), then the kinds checked; a miss finds a placeholder of no kind. Where a
        # token is new in this process, or its text was first seen with another kind, each
        # distinct ``(kind, text)`` is interned once, in order, and all are looked up again;
        # if some text still has the wrong kind (a text with tokens of two kinds), by
        # ``(kind, text)`` (``zip`` reuses its tuple).
        by_text = cache.by_text.get
        tokens = list(map(by_text, texts, repeat(_NO_TOKEN, n)))
        found = list(map(_KIND, tokens))
        if found != kinds:
            token_of = cache.token
            wrong = map(is_not, found, kinds)
            for kind, text in dict.fromkeys(compress(zip(kinds, texts, strict=True), wrong)):
                token_of(kind, text)
            tokens = list(map(by_text, texts, repeat(_NO_TOKEN, n)))
            if list(map(_KIND, tokens)) != kinds:
                tokens = list(map(cache.tokens.get, zip(kinds, texts, strict=True)))
        self.tokens = tokens
        sig = self.sig + [n]  # the start of the trailing trivia, after the last TOKEN
        nodes = cache.nodes
        node_get = nodes.get
        leaves = cache.leaves
        leaf_get = leaves.get
        wraps = cache.wraps
        wrap_get = wraps.get
        collision = cache.interned_collision
        kind_of = _KIND_OF
        items = ITEM_KINDS
        new = _GREEN_NEW
        green = GreenNode
        get_hash = _HASH
        get_len = _LEN
        stack = self.stack
        push = stack.append
        pop = stack.pop
        children: list[GreenNode | GreenToken] = []  # of the innermost open node
        pos = 0  # the next token to place
        t = 0  # the next TOKEN event's index into ``sig``
        # The node cache (``cache.node``) is inlined below, by number of children: a node
        # of at most ``MAX_CHILDREN`` (3) is looked up by ``(kind, its children's hashes)``
        # and a hit counts only if its children are these (identity first, as a tuple
        # comparison does, then structural equality). Every child is a token or a node built
        # here: all are hashed (only path-copied nodes, never children here, defer it).
        for i, ev in enumerate(events):
            if ev == 1:  # FINISH
                kind, done = pop()
                if not stack:  # the root: it takes the trailing trivia
                    done += tokens[pos:]
                    pos = n
                m = len(done)
                if m == 2:
                    a, b = done
                    hkey = (kind, (a._hash, b._hash))
                    node = node_get(hkey)
                    if node is None:
                        node = new(green)
                        node.kind = kind
                        node.children = (a, b)
                        node.text_len = a.text_len + b.text_len
                        node._hash = hash(hkey)
                        node._offsets = None
                        nodes[hkey] = node
                    else:
                        c = node.children
                        if (c[0] is not a or c[1] is not b) and c != (a, b):
                            node = collision(kind, (a, b))
                elif m == 1:
                    a = done[0]
                    hkey = (kind, (a._hash,))
                    node = node_get(hkey)
                    if node is None:
                        node = new(green)
                        node.kind = kind
                        node.children = (a,)
                        node.text_len = a.text_len
                        node._hash = hash(hkey)
                        node._offsets = None
                        nodes[hkey] = node
                    elif node.children[0] is not a and node.children != (a,):
                        node = collision(kind, (a,))
                elif m == 3:
                    a, b, c3 = done
                    hkey = (kind, (a._hash, b._hash, c3._hash))
                    node = node_get(hkey)
                    if node is None:
                        node = new(green)
                        node.kind = kind
                        node.children = (a, b, c3)
                        node.text_len = a.text_len + b.text_len + c3.text_len
                        node._hash = hash(hkey)
                        node._offsets = None
                        nodes[hkey] = node
                    else:
                        c = node.children
                        if (c[0] is not a or c[1] is not b or c[2] is not c3) and c != (a, b, c3):
                            node = collision(kind, (a, b, c3))
                elif m:  # too many children to intern
                    key = tuple(done)
                    node = new(green)
                    node.kind = kind
                    node.children = key
                    node.text_len = sum(map(get_len, key))
                    node._hash = hash((kind, tuple(map(get_hash, key))))
                    node._offsets = None
                else:
                    node = cache.node(kind, ())
                if stack:
                    children = stack[-1][1]
                    children.append(node)
                else:
                    self.result = node
            elif ev == 0:  # TOKEN
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
            elif ev < 0:
                code, message = errors[-ev - 1]
                self._error(code, message, max(sig[t], pos))  # `pos` once the root took all
            else:  # a start
                if ev >= FP_ONE:  # open its forward parents first, then go on with it
                    # (their kinds, outermost first, then `self._open(kinds, pos, t)` inlined;
                    # their events are used up: tombstones now)
                    forward = []
                    fp = ev >> FP_SHIFT
                    j = i
                    while fp:
                        j += fp
                        parent = events[j]
                        if parent & KIND_MASK != TOMBSTONE:
                            forward.append(kind_of[parent & KIND_MASK])
                        fp = parent >> FP_SHIFT
                        events[j] = TOMBSTONE
                    j = sig[t]
                    for kind in reversed(forward):
                        if not stack:
                            children = []
                            push((kind, children))
                            continue
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
                        push((kind, children))
                    ev &= NO_FP
                    if ev < LEAF:
                        if ev == TOMBSTONE:
                            continue
                        ev = kind_of[ev]
                if ev < LEAF:
                    if ev == TOMBSTONE:
                        continue
                    if stack:
                        j = sig[t]
                        if j > pos:
                            if ev in items:
                                attached = _n_attached(kinds, texts, pos, j - pos)
                                stop = j - attached
                                if stop > pos:
                                    children += tokens[pos:stop]
                                push((ev, tokens[stop:j] if attached else []))
                                children = stack[-1][1]
                                pos = j
                                continue
                            if j == pos + 1:
                                children.append(tokens[pos])
                            else:
                                children += tokens[pos:j]
                            pos = j
                    children = []
                    push((ev, children))
                    continue
                if not stack:  # a leaf or a wrap that is the root: rare, spelled out
                    if ev < LEAF2:
                        opening, closes = [kind_of[ev & KIND_MASK]], 1
                    else:
                        inner_kind = kind_of[(ev >> INNER_SHIFT) & KIND_MASK]
                        opening, closes = [kind_of[ev & KIND_MASK], inner_kind], 2
                    pos, children = self._open(opening, pos, t)
                    pos, t, children = self._leaf_rest(pos, t, closes)
                    continue
                # A leaf or a wrap: its token (a leaf's or wrap's kind is never an item's,
                # so the trivia before it goes to the parent), then its node.
                j = sig[t]
                t += 1
                if j > pos:
                    if j == pos + 1:
                        children.append(tokens[pos])
                    else:
                        children += tokens[pos:j]
                tok = tokens[j]
                pos = j + 1
                if ev < LEAF2:  # a leaf: this start, the next TOKEN and FINISH
                    # ``leaves`` remembers the answer of the lookup below per (event,
                    # token), so a repeated name or literal skips building its key;
                    # ``cache.nodes`` never drops an entry, so the answer stays the same.
                    lkey = (tok._hash << 11) | ev
                    node = leaf_get(lkey)
                    if node is None or node.children[0] is not tok:
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
                            node = collision(kind, (tok,))
                        if node.children[0] is tok:
                            leaves[lkey] = node
                    children.append(node)
                    continue
                # A wrap: an outer node holding a leaf (`leaf2`). Both lookups depend on the
                # event and the token only: ``wraps`` remembers the outer node per (event,
                # token), as ``leaves`` a leaf.
                lkey = (tok._hash << FP_SHIFT) | ev
                node = wrap_get(lkey)
                if node is None or node.children[0].children[0] is not tok:
                    lev = LEAF | (ev >> INNER_SHIFT) & KIND_MASK
                    lkey2 = (tok._hash << 11) | lev
                    inner = leaf_get(lkey2)
                    if inner is None or inner.children[0] is not tok:
                        kind = kind_of[lev & KIND_MASK]
                        hkey = (kind, (tok._hash,))
                        inner = node_get(hkey)
                        if inner is None:
                            inner = new(green)
                            inner.kind = kind
                            inner.children = (tok,)
                            inner.text_len = tok.text_len
                            inner._hash = hash(hkey)
                            inner._offsets = None
                            nodes[hkey] = inner
                        elif inner.children[0] is not tok and inner.children != (tok,):
                            inner = collision(kind, (tok,))
                        if inner.children[0] is tok:
                            leaves[lkey2] = inner
                    kind = kind_of[ev & KIND_MASK]
                    hkey = (kind, (inner._hash,))
                    node = node_get(hkey)
                    if node is None:
                        node = new(green)
                        node.kind = kind
                        node.children = (inner,)
                        node.text_len = inner.text_len
                        node._hash = hash(hkey)
                        node._offsets = None
                        nodes[hkey] = node
                    elif node.children[0] is not inner and node.children != (inner,):
                        node = collision(kind, (inner,))
                    if node.children[0].children[0] is tok:
                        wraps[lkey] = node
                children.append(node)
        assert self.result is not None and not stack
        return self.result

    def _open(
        self, opening: list[SyntaxKind], pos: int, t: int
    ) -> tuple[int, list[GreenNode | GreenToken]]:
        """Open a node of each kind in ``opening`` (outermost first) before the ``t``-th
        significant token, placing the trivia before it; the new position and the children
        of the innermost one."""
        stack = self.stack
        tokens = self.tokens
        j = self.sig[t] if t < len(self.sig) else len(tokens)
        children = stack[-1][1] if stack else []
        for kind in opening:
            if not stack:
                children = []
                stack.append((kind, children))
                continue
            attached = 0
            if j > pos:
                if kind in ITEM_KINDS:
                    attached = _n_attached(self.kinds, self.texts, pos, j - pos)
                stop = j - attached
                if stop > pos:
                    children += tokens[pos:stop]
                    pos = stop
            children = tokens[pos:j] if attached else []
            pos += attached
            stack.append((kind, children))
        return pos, children

    def _leaf_rest(
        self, pos: int, t: int, closes: int
    ) -> tuple[int, int, list[GreenNode | GreenToken]]:
        """TOKEN and ``closes`` FINISH events for a leaf (1) or a wrap (2) whose nodes were
        just opened."""
        stack = self.stack
        tokens = self.tokens
        j = self.sig[t] if t < len(self.sig) else len(tokens)
        children = stack[-1][1]
        children += tokens[pos:j]
        pos = j
        if j < len(tokens):
            children.append(tokens[j])
            pos = j + 1
        for _ in range(closes):
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
