"""Incremental reparsing: apply one text edit to a previous parse.

Three strategies, cheapest first (rust-analyzer's ``reparsing.rs`` in spirit):

1. **Relex one token**: relexing the tokens the edit lies in or next to gives the old
   kinds with one identifier, literal, comment or whitespace token's text changed (a
   letter typed at the end of a name, a digit inside a literal). The parser only sees
   kinds, so the tree shape cannot change: swap the token, shift diagnostics.
2. **Reparse a block**: the edit lies strictly inside the innermost ``{ … }`` BLOCK
   whose new text is still balanced; parse that text alone with the block rule and
   splice the new green node into the old tree (path copying).
3. **Reparse an item**: the edit lies inside one top-level function, struct or constant
   (its signature, a field, a value), after its first significant token and before its
   closing `}` or `;`, and the item was and stays free of parse diagnostics (a lexical one
   on a literal, `16q`, is local to its token): parse that item's
   new text alone with the file rule and splice the one item it gives into the old root,
   so every other item keeps its green node (which the per-item tables and memos of
   sema/incremental.py are keyed by).
4. **Full parse** otherwise.

The result is always identical to a full parse of the new text (a property test
checks this), including diagnostics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kera_core.diagnostics import Diagnostic, sort_key
from kera_core.source import Span, encode, utf8_len
from kera_core.syntax.kinds import _TRIVIA, SyntaxKind
from kera_core.syntax.lexer import lex
from kera_core.syntax.parse import _DEFAULT_CACHE, Parse, parse, run_rule
from kera_core.syntax.parser import grammar
from kera_core.syntax.parser.grammar.common import ITEM_FIRST
from kera_core.syntax.parser.parser import MAX_DEPTH, Parser
from kera_core.syntax.tree import GreenNode, GreenToken, NodeCache, SyntaxNode, SyntaxToken

K = SyntaxKind

_RELEXABLE = frozenset({K.WHITESPACE, K.COMMENT, K.DOC_COMMENT, K.IDENT, K.INT, K.FLOAT, K.STRING})


@dataclass(frozen=True, slots=True)
class TextEdit:
    """Replace bytes ``span`` of the old text with ``new_text``."""

    span: Span
    new_text: str


def apply_edit(text: str, edit: TextEdit) -> str:
    if text.isascii():
        return text[: edit.span.start] + edit.new_text + text[edit.span.end :]
    raw = encode(text)
    return (raw[: edit.span.start] + encode(edit.new_text) + raw[edit.span.end :]).decode(
        "utf-8", "surrogateescape"
    )


def _byte_slice(text: str, start: int, end: int) -> str:
    if text.isascii():
        return text[start:end]
    return encode(text)[start:end].decode("utf-8", "surrogateescape")


def reparse(
    old: Parse,
    edit: TextEdit,
    cache: NodeCache | None = None,
    new_text: str | None = None,
    byte_slice: Callable[[int, int], str] | None = None,
) -> tuple[Parse, str]:
    """The parse of the edited text, and which strategy produced it ("token", "block",
    "item", "full").

    An editor that already holds the edited text passes it as ``new_text``, which saves
    rebuilding the whole string here, and may pass ``byte_slice(start, end)``, the new text
    between two byte offsets (from its line index: no encoding of a non-ASCII text).
    """
    cache = cache or _DEFAULT_CACHE
    if new_text is None:
        new_text = apply_edit(old.text, edit)
    if not any(d.code == "K0108" or d.code == "K0109" for d in old.diagnostics):
        slicer = byte_slice or (lambda start, end: _byte_slice(new_text, start, end))
        result = _relex_token(old, edit, new_text, slicer, cache)
        if result is not None:
            return result, "token"
        result = _reparse_block(old, edit, new_text, slicer, cache)
        if result is not None:
            return result, "block"
        result = _reparse_statements(old, edit, new_text, slicer, cache)
        if result is not None:
            return result, "statements"
        result = _reparse_item(old, edit, new_text, slicer, cache)
        if result is not None:
            return result, "item"
    return parse(new_text, cache), "full"


def _splice(node: SyntaxNode | SyntaxToken, new_green: GreenNode | GreenToken) -> GreenNode:
    """Replace ``node`` by ``new_green`` and rebuild its ancestors (path copying)."""
    green = new_green
    el = node
    while el.parent is not None:
        green = el.parent.green.replace_child(el.index, green)  # type: ignore[arg-type]
        el = el.parent
    return green  # type: ignore[return-value]


def _shift_diagnostics(
    diags: list[Diagnostic], start: int, old_end: int, delta: int, replaced: list[Diagnostic]
) -> list[Diagnostic]:
    """Keep diagnostics before ``start``, shift those after ``old_end``, drop those inside."""
    out: list[Diagnostic] = []
    for d in diags:
        if d.span.end <= start and d.span.start < start:
            out.append(d)
        elif d.span.start >= old_end:
            out.append(d.shifted(delta) if delta else d)
    out.extend(replaced)
    out.sort(key=sort_key)
    return out


def _relex_token(
    old: Parse,
    edit: TextEdit,
    new_text: str,
    byte_slice: Callable[[int, int], str],
    cache: NodeCache,
) -> Parse | None:
    """Strategy 1. The tokens the edit touches (those it overlaps and the ones it is next
    to) are relexed with one neighbour on the left and two on the right (the lexer looks
    at most two characters past a token); the result must be the old kinds, with one
    token's text changed: typing at the end of a name or between a literal's digits."""
    root = old.tree
    first = root.token_at_offset(edit.span.start)
    if first is None:
        return None
    if first.span.start == edit.span.start and (before := first.prev_token()) is not None:
        first = before  # at a boundary: the token ending there is touched too
    window = [first]
    while window[-1].span.end <= edit.span.end:  # up to the token at or after the edit's end
        nxt = window[-1].next_token()
        if nxt is None:
            break
        window.append(nxt)
    if (left := first.prev_token()) is not None:
        window.insert(0, left)
    for _ in range(2):
        if (nxt := window[-1].next_token()) is None:
            break
        window.append(nxt)
    delta = len(encode(edit.new_text)) - len(edit.span)
    lo, hi = window[0].span.start, window[-1].span.end
    if not (lo <= edit.span.start and edit.span.end <= hi):
        return None
    lexed = lex(byte_slice(lo, hi + delta))
    if lexed.kinds != [t.kind for t in window]:
        return None
    changed = [
        i for i, (t, text) in enumerate(zip(window, lexed.texts, strict=True)) if t.text != text
    ]
    if len(changed) != 1:
        return None
    tok = window[changed[0]]
    new_tok_text = lexed.texts[changed[0]]
    if tok.kind not in _RELEXABLE:
        return None
    if tok.kind == K.WHITESPACE and min(tok.text.count("\n"), 2) != min(
        new_tok_text.count("\n"), 2
    ):
        return None  # blank lines decide which item a comment belongs to
    span = tok.span
    if not (span.start <= edit.span.start and edit.span.end <= span.end):
        return None  # the edit reaches into an unchanged neighbour (a replaced equal text)
    new_green = _splice(tok, cache.token(tok.kind, new_tok_text))
    diags: list[Diagnostic] = []
    for d in old.diagnostics:
        if d.span.start >= span.end:
            diags.append(d.shifted(delta))
        elif d.span.end <= span.start:
            diags.append(d)
        elif d.code.startswith("K00") and span.covers(d.span):
            continue  # the token's own lexical diagnostics are recomputed below
        elif d.span == span:
            diags.append(_stretch(d, delta))
        else:
            return None
    diags.extend(lex(new_tok_text, base=span.start).diagnostics)
    diags.sort(key=sort_key)
    return Parse(new_text, new_green, diags)


def _stretch(d: Diagnostic, delta: int) -> Diagnostic:
    return Diagnostic(
        d.code, d.severity, Span(d.span.start, d.span.end + delta), d.message, d.related, d.fix
    )


def _reparse_block(
    old: Parse,
    edit: TextEdit,
    new_text: str,
    byte_slice: Callable[[int, int], str],
    cache: NodeCache,
) -> Parse | None:
    root = old.tree
    node = root.covering_node(edit.span)
    while node is not None and not (
        node.kind == K.BLOCK and node.span.start < edit.span.start and edit.span.end < node.span.end
    ):
        node = node.parent
    if node is None or node.green.text_len > LONG_BLOCK:
        return None  # a long block: its statements near the edit are reparsed instead
    span = node.span
    if any(d.span.start == span.start for d in old.diagnostics if not d.code.startswith("K00")):
        return None  # a diagnostic reported at the `{` belongs to the enclosing construct
    old_kinds = node.green.token_kinds()
    if not _is_balanced(old_kinds):
        return None  # the old block was never closed: what follows it depends on that
    delta = len(encode(edit.new_text)) - len(edit.span)
    block_text = byte_slice(span.start, span.end + delta)
    lexed = lex(block_text, base=span.start)
    if not _is_balanced(lexed.kinds):
        return None
    ancestors = sum(1 for _ in node.ancestors())
    if 2 * ancestors + 2 * _max_nesting(lexed.kinds) + 8 >= MAX_DEPTH:
        return None  # the depth limit could act differently in context
    green, parse_diags, consumed = run_rule(lexed, grammar.block, None, cache, base=span.start)
    if not consumed or green.kind != K.BLOCK or green.text_len != span.end + delta - span.start:
        return None
    new_root = _splice(node, green)
    diags = _shift_diagnostics(
        old.diagnostics, span.start, span.end, delta, lexed.diagnostics + parse_diags
    )
    return Parse(new_text, new_root, diags)


#: A block longer than this (bytes) is not reparsed whole: its statements around the edit are.
LONG_BLOCK = 4096
#: Tokens the parser may look at past its position (``nth(3)`` is its farthest look), kept
#: unchanged on both sides of the statements reparsed.
LOOKAHEAD = 4


def _reparse_statements(
    old: Parse,
    edit: TextEdit,
    new_text: str,
    byte_slice: Callable[[int, int], str],
    cache: NodeCache,
) -> Parse | None:
    """Strategy 2b: in a long block (a 5,000-line function's body), parse only the
    statements around the edit: from the statement before the one it starts in, through
    the statement after the one it ends in, with the block's statement loop
    (``grammar.statements``) stopping where that last statement ends.

    Why that equals a full parse: the parser is at the top of the block's statement loop
    at both ends in the old parse (each is a boundary between two of the block's
    children), in the same state (the loop restores its flags; the depth limit cannot act,
    as for a block), and sees the same tokens outside (``LOOKAHEAD`` unchanged tokens
    before the edit inside the statements parsed, so what came before never looked at the
    edit; ``LOOKAHEAD`` tokens after them given to the parser, which looks no farther). If
    the new statements end exactly at the old boundary, everything after it parses as
    before. Diagnostics at either boundary token are ambiguous (the statement on either
    side may have reported them): such an edit goes to another strategy."""
    root = old.tree
    block = root.covering_node(edit.span)
    while block is not None and not (
        block.kind == K.BLOCK
        and block.green.text_len > LONG_BLOCK
        and block.span.start < edit.span.start
        and edit.span.end < block.span.end
    ):
        block = block.parent
    if block is None:
        return None
    green = block.green
    children = green.children
    offsets = green.child_offsets()
    base = block.offset
    n = len(children)
    if children[0].kind != K.L_BRACE or children[-1].kind != K.R_BRACE:
        return None
    # the block's elements: statements (nodes, or a `;`: boundaries of its loop) and trivia
    first = green.child_index_at(edit.span.start - base)
    last = green.child_index_at(edit.span.end - base)
    if edit.span.start - base == offsets[first] and first > 1:
        first -= 1  # an edit at an element's start touches the one before too
    if last == n - 1 and edit.span.end - base == offsets[last]:
        last -= 1  # typed just before the `}`
    if first < 1 or last > n - 2:
        return None
    delta = len(encode(edit.new_text)) - len(edit.span)
    # back to a statement with LOOKAHEAD unchanged tokens before the edit: what was parsed
    # before it never looked at the edit
    lo = first
    while True:
        lo -= 1
        while lo > 0 and children[lo].kind in _TRIVIA:
            lo -= 1
        at_top = lo < 1
        if at_top:  # from the block's first statement (the loop's top after the `{`)
            lo = 1
            while lo < first and children[lo].kind in _TRIVIA:
                lo += 1
        start = base + offsets[lo]
        if _significant_before(root, start, edit.span.start) >= LOOKAHEAD:
            break
        if at_top:
            return None
    hi = last + 1  # the statement after the one the edit ends in
    while hi < n - 1 and children[hi].kind in _TRIVIA:
        hi += 1
    if hi == n - 1:  # none: the edit is in the last statement
        hi = last
        while hi > lo and children[hi].kind in _TRIVIA:
            hi -= 1
    end = base + offsets[hi] + children[hi].text_len  # old offsets
    if not (start < edit.span.start and edit.span.end <= end):
        return None
    after = root.token_at_offset(end)  # the lookahead: tokens after `end`, unchanged
    if after is None or after.span.start != end:
        return None
    ahead, boundary = _lookahead(after)  # (boundary: the first token after the statements)
    if boundary is None:
        return None
    for d in old.diagnostics:
        if d.span.start == start or (
            end <= d.span.start <= boundary.span.start and not d.code.startswith("K00")
        ):
            return None  # reported at a boundary: which side's is ambiguous
        if d.span.start < start < d.span.end or d.span.start < end < d.span.end:
            return None
    ancestors = sum(1 for _ in block.ancestors())
    parsed = _parse_synced(
        byte_slice, start, end, delta, ahead, grammar.statements, K.BLOCK, cache, 2 * ancestors
    )
    if parsed is None:
        return None
    wrapper, parse_diags, lex_diags = parsed
    if any(d.span.start >= end + delta for d in parse_diags):
        return None  # reported past the statements parsed (ambiguous, as above)
    new_children = []
    size = 0
    for c in wrapper.children:
        if size == end + delta - start:
            break
        new_children.append(c)
        size += c.text_len
    if size != end + delta - start:
        return None
    new_block = GreenNode(
        K.BLOCK,
        children[:lo] + tuple(new_children) + children[hi + 1 :],
        green.text_len + delta,
        lazy=True,
    )
    new_offsets = offsets[: lo + 1]
    at = offsets[lo]
    for c in new_children[:-1]:
        at += c.text_len
        new_offsets.append(at)
    new_offsets += [o + delta for o in offsets[hi + 1 :]] if delta else offsets[hi + 1 :]
    new_block._offsets = new_offsets
    new_root = _splice(block, new_block)
    diags = _shift_diagnostics(old.diagnostics, start, end, delta, lex_diags + parse_diags)
    return Parse(new_text, new_root, diags)


def _significant_before(root: SyntaxNode, start: int, end: int) -> int:
    """How many non-trivia tokens lie wholly between ``start`` and ``end`` (counting stops
    at ``LOOKAHEAD``)."""
    count = 0
    tok = root.token_at_offset(start)
    while tok is not None and tok.span.end < end and count < LOOKAHEAD:
        count += tok.kind not in _TRIVIA
        tok = tok.next_token()
    return count


def _lookahead(tok: SyntaxToken | None) -> tuple[list[SyntaxToken], SyntaxToken | None]:
    """``tok`` and the tokens after it up to ``LOOKAHEAD`` significant ones (all the parser
    may look at past a boundary), and the first significant one among them."""
    ahead: list[SyntaxToken] = []
    first = None
    seen = 0
    while tok is not None and seen < LOOKAHEAD:
        ahead.append(tok)
        if tok.kind not in _TRIVIA:
            seen += 1
            first = first or tok
        tok = tok.next_token()
    return ahead, first


def _parse_synced(
    byte_slice: Callable[[int, int], str],
    start: int,
    end: int,
    delta: int,
    ahead: list[SyntaxToken],
    loop: Callable[[Parser, int], bool],
    kind: SyntaxKind,
    cache: NodeCache,
    depth: int,
) -> tuple[GreenNode, list[Diagnostic], list[Diagnostic]] | None:
    """The old text [start, end), now ``delta`` bytes longer, parsed by the grammar's
    ``loop`` (``grammar.statements`` or ``grammar.items``) until it ends where that text
    ends, the unchanged tokens ``ahead`` after it in the parser's view: the node of ``kind``
    wrapping what it made (``ahead`` too, last), its parse diagnostics and the lexical ones
    of the new text. None when the new text does not end at a token boundary followed by
    ``ahead``, the loop does not stop there, it got stuck, or the depth limit could act
    (``depth``: what the nesting around it adds)."""
    look_end = ahead[-1].span.end if ahead else end
    lexed = lex(byte_slice(start, look_end + delta), base=start)
    kinds = lexed.kinds
    n_new = len(kinds) - len(ahead)
    if n_new < 1 or lexed.texts[n_new:] != [t.text for t in ahead]:
        return None
    if kinds[n_new:] != [t.kind for t in ahead]:
        return None  # (an unterminated comment or string swallowed them)
    if sum(map(utf8_len, lexed.texts[:n_new])) != end + delta - start:
        return None
    if depth + 2 * _max_nesting(kinds) + 8 >= MAX_DEPTH:
        return None  # the depth limit could act differently in context
    stop = sum(1 for k in kinds[:n_new] if k not in _TRIVIA)
    stopped_at_end = False

    def rule(p: Parser) -> None:
        nonlocal stopped_at_end
        m = p.start()
        stopped_at_end = loop(p, stop) and p.pos == stop
        p.complete(m, kind)

    green, parse_diags, _ = run_rule(lexed, rule, kind, cache, base=start)
    if not stopped_at_end or any(d.code in ("K0108", "K0109") for d in parse_diags):
        return None
    return green, parse_diags, [d for d in lexed.diagnostics if d.span.start < end + delta]


_ITEMS = frozenset({K.FN, K.STRUCT, K.CONST})
_ITEM_ENDS = frozenset({K.R_BRACE, K.SEMI})


def _reparse_item(
    old: Parse,
    edit: TextEdit,
    new_text: str,
    byte_slice: Callable[[int, int], str],
    cache: NodeCache,
) -> Parse | None:
    """Strategy 3. The item holding the edit (past its first significant token, before its
    closing `}` or `;`) is parsed alone with the file's item loop (``grammar.items``),
    stopping where the next item starts, the parser given the next ``LOOKAHEAD`` tokens: as
    for the statements of a long block, it is at the top of the item loop at both ends in
    the old parse and sees the same tokens outside, so if the new item ends where the old one
    did, everything after it parses as before. An error that ends the item (a block never
    closed: K0106) is reported at the next item's first token: an item keyword, at which the
    next item itself reports nothing, so a diagnostic there is this item's. One at this
    item's first token may be the previous item's: such an edit is parsed whole."""
    root = old.tree
    node = root.covering_node(edit.span)
    while node.parent is not None and node.parent.parent is not None:
        node = node.parent
    if node.parent is None or node.kind not in _ITEMS:
        return None
    span = node.span
    first, last = node.first_significant_token(), node.last_token()
    if first is None or last is None or last.kind not in _ITEM_ENDS:
        return None
    if not (first.span.start <= edit.span.start and edit.span.end <= last.span.start):
        return None
    ahead, boundary = _lookahead(last.next_token())  # (boundary: the next item's first)
    if boundary is not None and boundary.kind not in ITEM_FIRST:
        return None  # a stray token after it: recovery may have run across
    at = boundary.span.start if boundary is not None else root.green.text_len
    lead = _lookahead(root.token_at_offset(span.start))[1]  # its first: `pub`, `fn`, …
    if lead is None:
        return None
    for d in old.diagnostics:
        if d.span.start == lead.span.start or d.span.start < span.start < d.span.end:
            return None
        if d.span.start < span.end < d.span.end:
            return None
    delta = len(encode(edit.new_text)) - len(edit.span)
    end = span.end + delta
    parsed = _parse_synced(
        byte_slice, span.start, span.end, delta, ahead, grammar.items, K.SOURCE_FILE, cache, 2
    )
    if parsed is None or not parsed[0].children:
        return None
    green, parse_diags, lex_diags = parsed
    item = green.children[0]
    if item.is_token or item.kind != node.kind or item.text_len != end - span.start:
        return None
    if any(d.span.start > at + delta for d in parse_diags):
        return None
    new_root = _splice(node, item)  # type: ignore[arg-type]
    diags = lex_diags + parse_diags
    for d in old.diagnostics:
        if d.span.start < span.start:
            diags.append(d)
        elif d.span.start < span.end or (d.span.start == at and not d.code.startswith("K00")):
            continue  # the item's own, reported again
        else:
            diags.append(d.shifted(delta) if delta else d)
    diags.sort(key=sort_key)
    return Parse(new_text, new_root, diags)


_OPEN = {K.L_BRACE: K.R_BRACE, K.L_PAREN: K.R_PAREN, K.L_BRACK: K.R_BRACK}
_CLOSE = frozenset(_OPEN.values())


def _is_balanced(kinds: list[SyntaxKind]) -> bool:
    """`{ … }` whose brackets of every kind nest properly, closing only at the end.

    Any mismatched `(` or `[` inside could let error recovery run past the block's `}`
    in the full file, so such blocks are not reparsed alone.
    """
    sig = [k for k in kinds if k not in _TRIVIA]
    if len(sig) < 2 or sig[0] != K.L_BRACE or sig[-1] != K.R_BRACE:
        return False
    if kinds[0] != K.L_BRACE or kinds[-1] != K.R_BRACE:
        return False
    stack: list[SyntaxKind] = []
    for i, k in enumerate(sig):
        if k in _OPEN:
            stack.append(_OPEN[k])
        elif k in _CLOSE:
            if not stack or stack.pop() != k:
                return False
            if not stack and i != len(sig) - 1:
                return False
        elif k == K.ERROR_TOKEN:
            return False  # an unterminated comment or string may swallow the rest
    return not stack


_OPENERS = frozenset(_OPEN)


def _max_nesting(kinds: list[SyntaxKind]) -> int:
    depth = best = 0
    for k in kinds:
        if k in _OPENERS:
            depth += 1
            if depth > best:
                best = depth
        elif k in _CLOSE:
            depth -= 1
    return best
