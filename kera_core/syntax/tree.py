"""The lossless syntax tree: immutable interned green elements and red cursors.

Green elements know only their kind, their text length in bytes and their
children; they are shared freely between versions of a document and between
documents. Tokens are interned by (kind, text) and small nodes by (kind,
children), so repeated pieces (`i`, `f32`, `0..N`) exist once in memory.

Red elements (:class:`SyntaxNode`, :class:`SyntaxToken`) are cheap cursors made on
demand: a green element plus its parent and absolute byte offset.

``str(node) == source`` for any input: every byte lives in exactly one token.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from itertools import compress
from operator import is_, is_not

from kera_core.source import Span, utf8_len
from kera_core.syntax.kinds import SyntaxKind


class GreenToken:
    __slots__ = ("kind", "text", "text_len", "_hash")

    def __init__(self, kind: SyntaxKind, text: str) -> None:
        self.kind = kind
        self.text = text
        self.text_len = len(text) if text.isascii() else utf8_len(text)
        self._hash = hash((kind, text))

    is_token = True

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return (
            self is other
            or isinstance(other, GreenToken)
            and self.kind == other.kind
            and self.text == other.text
        )

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"{self.kind.name}@{self.text!r}"


class GreenNode:
    # ``_kinds`` is left unset until :meth:`kinds_below` first needs it (no constructor sets
    # it, so building a tree costs nothing more).
    __slots__ = ("kind", "children", "text_len", "_hash", "_offsets", "_kinds")

    def __init__(
        self,
        kind: SyntaxKind,
        children: tuple[GreenToken | GreenNode, ...],
        text_len: int | None = None,
        lazy: bool = False,
    ) -> None:
        self.kind = kind
        self.children = children
        self.text_len = sum(c.text_len for c in children) if text_len is None else text_len
        # Structural, from the children's hashes. Parsed nodes compute it at once (O(children),
        # never recursive); wide path-copied nodes (`replace_child`) defer it, so an edit in a
        # huge file does not rehash all the root's children.
        self._hash: int | None = None if lazy else self._compute_hash()
        self._offsets: list[int] | None = None

    is_token = False

    def _compute_hash(self) -> int:
        return hash((self.kind, tuple([hash(c) for c in self.children])))

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = self._compute_hash()
        return h

    def child_offsets(self) -> list[int]:
        """Start of each child relative to this node (cached), for binary search."""
        offs = self._offsets
        if offs is None:
            offs = [0]
            acc = 0
            for c in self.children[:-1]:
                acc += c.text_len
                offs.append(acc)
            self._offsets = offs
        return offs

    def kinds_below(self) -> int:
        """A bit set of the kinds in this subtree, itself and its tokens included: bit ``k``
        is set iff some element below has kind ``k``. Computed once per (interned, immutable)
        node, iteratively, so a pass can skip subtrees that cannot hold what it looks for."""
        try:
            return self._kinds
        except AttributeError:
            pass
        stack: list[GreenNode] = [self]
        while stack:
            g = stack[-1]
            pending = [c for c in g.children if not c.is_token and not hasattr(c, "_kinds")]
            if pending:
                stack += pending
                continue
            stack.pop()
            bits = 1 << g.kind
            for c in g.children:
                bits |= (1 << c.kind) if c.is_token else c._kinds
            g._kinds = bits
        return self._kinds

    def token_kinds(self) -> list[SyntaxKind]:
        """The kinds of every token below this node, in source order, read off the green
        tree alone (no positioned nodes made): what a caller that needs no spans walks."""
        out: list[SyntaxKind] = []
        add = out.append
        stack: list[GreenToken | GreenNode] = [self]
        pop = stack.pop
        while stack:
            el = pop()
            if el.is_token:
                add(el.kind)
            else:
                stack.extend(reversed(el.children))  # type: ignore[union-attr]
        return out

    def child_index_at(self, rel: int) -> int:
        """Index of the child whose range contains relative offset ``rel``."""
        return max(0, bisect_right(self.child_offsets(), rel) - 1)

    def __eq__(self, other: object) -> bool:
        """Structural equality, iterative so deep trees cannot overflow the stack."""
        if self is other:
            return True
        if not isinstance(other, GreenNode):
            return False
        stack = [(self, other)]
        pop = stack.pop
        push = stack.append
        while stack:
            a, b = pop()
            ac = a.children
            bc = b.children
            if a.kind != b.kind or a.text_len != b.text_len or len(ac) != len(bc):
                return False
            # The common case (the node cache compares a new node with an interned one of the
            # same hashes): the same children, tested in C.
            if all(map(is_, ac, bc)):
                continue
            if hash(a) != hash(b):
                return False
            # Shared children (interned tokens and small nodes) are skipped in C; only pairs
            # of distinct nodes are pushed.
            for x, y in compress(zip(ac, bc, strict=True), map(is_not, ac, bc)):
                if x.is_token or y.is_token:
                    if x != y:
                        return False
                else:
                    push((x, y))
        return True

    def __str__(self) -> str:
        out: list[str] = []
        add = out.append
        stack: list[GreenToken | GreenNode] = [self]
        pop = stack.pop
        while stack:
            el = pop()
            if el.is_token:
                add(el.text)  # type: ignore[union-attr]
            else:
                stack += reversed(el.children)  # type: ignore[union-attr]
        return "".join(out)

    def __repr__(self) -> str:
        return f"{self.kind.name}@{self.text_len}"

    def tokens(self) -> Iterator[GreenToken]:
        """All tokens in order (iterative)."""
        stack: list[GreenToken | GreenNode] = [self]
        while stack:
            el = stack.pop()
            if el.is_token:
                yield el  # type: ignore[misc]
            else:
                stack.extend(reversed(el.children))  # type: ignore[union-attr]

    def replace_child(self, index: int, new: GreenToken | GreenNode) -> GreenNode:
        old = self.children[index]
        children = self.children[:index] + (new,) + self.children[index + 1 :]
        delta = new.text_len - old.text_len
        # Only wide nodes (a file's item list) defer their hash, so a chain of deferred
        # hashes is as short as the number of wide nodes on one path — never deep.
        node = GreenNode(self.kind, children, self.text_len + delta, lazy=len(children) > 64)
        offs = self._offsets
        if offs is not None:  # keep the search index: shift what follows the edit
            node._offsets = offs[: index + 1] + (
                [o + delta for o in offs[index + 1 :]] if delta else offs[index + 1 :]
            )
        return node


class NodeCache:
    """Interns tokens by (kind, text) and nodes with few children by (kind, children).

    Big nodes are rarely repeated and costly to hash-compare, so only nodes with at
    most ``MAX_CHILDREN`` children are interned (rowan's trade-off).

    Nodes are looked up by ``(kind, the children's hashes)``, a key of integers that
    hashes without calling back into Python; a found node still counts only if its
    children are equal to the new ones (identity first, then structural ``__eq__``), so
    the answer is exactly that of a dict keyed by ``(kind, children)``. Different
    children with the same hashes (a hash collision) live in ``collided``, keyed by
    ``(kind, children)``.
    """

    MAX_CHILDREN = 3

    def __init__(self) -> None:
        self.tokens: dict[tuple[SyntaxKind, str], GreenToken] = {}
        # The first token interned with each text: a text's kind is almost always a
        # function of it, so the builder looks tokens up by text (a ``str`` key, its hash
        # cached) and checks their kinds, all in C.
        self.by_text: dict[str, GreenToken] = {}
        self.nodes: dict[tuple[SyntaxKind, tuple[int, ...]], GreenNode] = {}
        self.collided: dict[tuple[SyntaxKind, tuple[GreenToken | GreenNode, ...]], GreenNode] = {}
        # The tree builder's memos of leaf nodes (a node holding one token: a name, a
        # literal), keyed by ``token hash << 11 | the leaf's start event``, and of wraps (a
        # node holding a leaf: ``PATH_EXPR(NAME_REF(x))``), keyed by ``token hash << 22 |
        # the wrap's start event``: what the lookups above gave for that token. Entries in
        # ``nodes`` are never replaced, so it stays true; a hit counts only if the node
        # holds this very token.
        self.leaves: dict[int, GreenNode] = {}
        self.wraps: dict[int, GreenNode] = {}

    def token(self, kind: SyntaxKind, text: str) -> GreenToken:
        key = (kind, text)
        tok = self.tokens.get(key)
        if tok is None:
            tok = self.tokens[key] = GreenToken(kind, text)
            self.by_text.setdefault(text, tok)
        return tok

    def node(self, kind: SyntaxKind, children: tuple[GreenToken | GreenNode, ...]) -> GreenNode:
        if len(children) > self.MAX_CHILDREN:
            return _new_node(kind, children)
        hashes = tuple([hash(c) for c in children])
        key = (kind, hashes)
        node = self.nodes.get(key)
        if node is None:
            node = self.nodes[key] = _new_node(kind, children)
        elif node.children != children:
            node = self.interned_collision(kind, children)
        return node

    def interned_collision(
        self, kind: SyntaxKind, children: tuple[GreenToken | GreenNode, ...]
    ) -> GreenNode:
        """The interned node for children whose hashes match another node's."""
        key = (kind, children)
        node = self.collided.get(key)
        if node is None:
            node = self.collided[key] = _new_node(kind, children)
        return node


def _new_node(kind: SyntaxKind, children: tuple[GreenToken | GreenNode, ...]) -> GreenNode:
    """``GreenNode(kind, children)`` without the per-child method calls (same fields)."""
    hashes = [c._hash for c in children]
    if None in hashes:  # a lazily hashed (path-copied) child
        return GreenNode(kind, children)
    node = _GREEN_NEW(GreenNode)
    node.kind = kind
    node.children = children
    node.text_len = sum([c.text_len for c in children])
    node._hash = hash((kind, tuple(hashes)))
    node._offsets = None
    return node


_GREEN_NEW = object.__new__
_TRIVIA = frozenset(k for k in SyntaxKind if k.is_trivia)


# --- red cursors -----------------------------------------------------------


class SyntaxToken:
    __slots__ = ("green", "parent", "offset", "index")

    def __init__(self, green: GreenToken, parent: SyntaxNode, offset: int, index: int) -> None:
        self.green = green
        self.parent = parent
        self.offset = offset
        self.index = index

    is_token = True

    @property
    def kind(self) -> SyntaxKind:
        return self.green.kind

    @property
    def text(self) -> str:
        return self.green.text

    @property
    def span(self) -> Span:
        return Span(self.offset, self.offset + self.green.text_len)

    def __str__(self) -> str:
        return self.green.text

    def __repr__(self) -> str:
        return f"{self.kind.name}@{self.offset}..{self.offset + self.green.text_len} {self.text!r}"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SyntaxToken)
            and self.green is other.green
            and self.offset == other.offset
            and self.parent == other.parent
        )

    def __hash__(self) -> int:
        return hash((id(self.green), self.offset))

    def ancestors(self) -> Iterator[SyntaxNode]:
        node: SyntaxNode | None = self.parent
        while node is not None:
            yield node
            node = node.parent

    def next_token(self) -> SyntaxToken | None:
        return _next_token(self, forward=True)

    def prev_token(self) -> SyntaxToken | None:
        return _next_token(self, forward=False)


class SyntaxNode:
    __slots__ = ("green", "parent", "offset", "index")

    def __init__(
        self,
        green: GreenNode,
        parent: SyntaxNode | None = None,
        offset: int = 0,
        index: int = 0,
    ) -> None:
        self.green = green
        self.parent = parent
        self.offset = offset
        self.index = index

    is_token = False

    @property
    def kind(self) -> SyntaxKind:
        return self.green.kind

    @property
    def span(self) -> Span:
        return Span(self.offset, self.offset + self.green.text_len)

    @property
    def text(self) -> str:
        return str(self.green)

    def __str__(self) -> str:
        return str(self.green)

    def __repr__(self) -> str:
        return f"{self.kind.name}@{self.offset}..{self.offset + self.green.text_len}"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SyntaxNode)
            and self.green is other.green
            and self.offset == other.offset
            and self.index == other.index
        )

    def __hash__(self) -> int:
        return hash((id(self.green), self.offset))

    # --- navigation -------------------------------------------------------
    def child_at(self, index: int) -> SyntaxNode | SyntaxToken:
        """The ``index``-th child, positioned without walking its siblings."""
        green = self.green
        child = green.children[index]
        off = self.offset + green.child_offsets()[index]
        if child.is_token:
            return SyntaxToken(child, self, off, index)  # type: ignore[arg-type]
        return SyntaxNode(child, self, off, index)  # type: ignore[arg-type]

    def children_with_tokens(self) -> Iterator[SyntaxNode | SyntaxToken]:
        off = self.offset
        for i, child in enumerate(self.green.children):
            if child.is_token:
                yield SyntaxToken(child, self, off, i)  # type: ignore[arg-type]
            else:
                yield SyntaxNode(child, self, off, i)  # type: ignore[arg-type]
            off += child.text_len

    def children(self) -> Iterator[SyntaxNode]:
        # A list built in one loop, then iterated: cheaper than a generator's resumptions.
        out = []
        off = self.offset
        i = 0
        for child in self.green.children:
            if not child.is_token:
                out.append(SyntaxNode(child, self, off, i))  # type: ignore[arg-type]
            off += child.text_len
            i += 1
        return iter(out)

    def child_tokens(self) -> Iterator[SyntaxToken]:
        out = []
        off = self.offset
        i = 0
        for child in self.green.children:
            if child.is_token:
                out.append(SyntaxToken(child, self, off, i))  # type: ignore[arg-type]
            off += child.text_len
            i += 1
        return iter(out)

    def ancestors(self) -> Iterator[SyntaxNode]:
        node: SyntaxNode | None = self
        while node is not None:
            yield node
            node = node.parent

    def preorder(self) -> Iterator[SyntaxNode | SyntaxToken]:
        """Every node and token below (and including) this node, in source order."""
        stack: list[SyntaxNode | SyntaxToken] = [self]
        while stack:
            el = stack.pop()
            yield el
            if not el.is_token:
                stack.extend(reversed(list(el.children_with_tokens())))  # type: ignore[union-attr]

    def descendants(self) -> Iterator[SyntaxNode]:
        for el in self.preorder():
            if not el.is_token:
                yield el  # type: ignore[misc]

    def tokens(self) -> Iterator[SyntaxToken]:
        for el in self.preorder():
            if el.is_token:
                yield el  # type: ignore[misc]

    def first_token(self) -> SyntaxToken | None:
        node = self
        while True:
            kids = list(node.children_with_tokens())
            if not kids:
                return None
            first = kids[0]
            if first.is_token:
                return first  # type: ignore[return-value]
            node = first  # type: ignore[assignment]

    def last_token(self) -> SyntaxToken | None:
        node = self
        while True:
            kids = list(node.children_with_tokens())
            if not kids:
                return None
            last = kids[-1]
            if last.is_token:
                return last  # type: ignore[return-value]
            node = last  # type: ignore[assignment]

    def token_at_offset(self, offset: int) -> SyntaxToken | None:
        """The token whose span contains ``offset`` (the one to the left at the end)."""
        if offset < self.offset or offset > self.offset + self.green.text_len:
            return None
        node = self
        while True:
            if not node.green.children:
                return None
            found = node.child_at(node.green.child_index_at(offset - node.offset))
            if found.is_token:
                return found  # type: ignore[return-value]
            node = found  # type: ignore[assignment]

    def covering_node(self, span: Span) -> SyntaxNode:
        """The deepest node whose span covers ``span``."""
        node = self
        while True:
            if not node.green.children:
                return node
            i = node.green.child_index_at(span.start - node.offset)
            child = node.child_at(i)
            if (
                child.is_token
                or not child.span.covers(span)
                or (len(span) == 0 and not child.span.contains(span.start))
            ):
                return node
            node = child  # type: ignore[assignment]

    # The lookups below scan the green children and make a red cursor for the one found
    # only (summing the lengths before it: no per-node offset table is kept).
    def child_of_kind(self, kind: SyntaxKind) -> SyntaxNode | None:
        off = self.offset
        i = 0
        for c in self.green.children:
            if c.kind == kind and not c.is_token:
                return SyntaxNode(c, self, off, i)  # type: ignore[arg-type]
            off += c.text_len
            i += 1
        return None

    def token_of_kind(self, kind: SyntaxKind) -> SyntaxToken | None:
        off = self.offset
        i = 0
        for c in self.green.children:
            if c.kind == kind and c.is_token:
                return SyntaxToken(c, self, off, i)  # type: ignore[arg-type]
            off += c.text_len
            i += 1
        return None

    def wrapped_child(self, kinds: dict) -> object | None:
        """``cls(node)`` for the first child node whose kind is a key of ``kinds`` (a
        ``kind -> cls`` table: the typed AST's)."""
        off = self.offset
        i = 0
        for c in self.green.children:
            cls = kinds.get(c.kind)
            if cls is not None and not c.is_token:
                return cls(SyntaxNode(c, self, off, i))  # type: ignore[arg-type]
            off += c.text_len
            i += 1
        return None

    def wrapped_children(self, kinds: dict) -> list:
        """``cls(node)`` for every child node whose kind is a key of ``kinds``."""
        out = []
        off = self.offset
        i = 0
        for c in self.green.children:
            cls = kinds.get(c.kind)
            if cls is not None and not c.is_token:
                out.append(cls(SyntaxNode(c, self, off, i)))  # type: ignore[arg-type]
            off += c.text_len
            i += 1
        return out

    def first_significant_token(self) -> SyntaxToken | None:
        """The first child token that is not trivia."""
        off = self.offset
        i = 0
        for c in self.green.children:
            if c.is_token and c.kind not in _TRIVIA:
                return SyntaxToken(c, self, off, i)  # type: ignore[arg-type]
            off += c.text_len
            i += 1
        return None


def _next_token(tok: SyntaxToken, forward: bool) -> SyntaxToken | None:
    """The neighbouring token in source order, crossing node boundaries."""
    el: SyntaxNode | SyntaxToken = tok
    while el.parent is not None:
        parent = el.parent
        n = len(parent.green.children)
        i = el.index + (1 if forward else -1)
        while 0 <= i < n:
            sib = parent.child_at(i)
            if sib.is_token:
                return sib  # type: ignore[return-value]
            t = sib.first_token() if forward else sib.last_token()  # type: ignore[union-attr]
            if t is not None:
                return t
            i += 1 if forward else -1
        el = parent
    return None


def debug_tree(node: SyntaxNode | GreenNode, include_trivia: bool = True) -> str:
    """The indented dump used by corpus tests and `kera parse --tree`."""
    root = node if isinstance(node, SyntaxNode) else SyntaxNode(node)
    lines: list[str] = []
    stack: list[tuple[SyntaxNode | SyntaxToken, int]] = [(root, 0)]
    while stack:
        el, depth = stack.pop()
        pad = "  " * depth
        if el.is_token:
            if not include_trivia and el.kind.is_trivia:
                continue
            lines.append(f"{pad}{el.kind.name}@{el.span.start}..{el.span.end} {el.text!r}")
        else:
            lines.append(f"{pad}{el.kind.name}@{el.span.start}..{el.span.end}")
            kids = list(el.children_with_tokens())  # type: ignore[union-attr]
            stack.extend((k, depth + 1) for k in reversed(kids))
    return "\n".join(lines) + "\n"
