"""Comments for the formatter: where each one sits, and which construct it belongs to.

The tree keeps every comment as a trivia token inside some node. For layout the
formatter needs two facts per comment, taken from the whole token stream:

* ``nl_before``: newlines between the previous non-whitespace token and the comment
  (0: it trails code on the same line; 2 or more: a blank line precedes it);
* ``nl_after``: newlines between the comment and the next non-whitespace token;
* ``code_after``: whether that token is code on the same line (not another comment).

:meth:`Splitter.split` turns a node's children into :class:`El` elements, one per
significant child (token or node), each carrying the comments that lead it (on their
own line, or before it on the same line) and the comments that trail it (on the same
line, after it). An inline block comment right after `,` or an opening delimiter
(`f(a, /* c */ b)`) leads the next element. Should the tree builder glue a comment
that trails an item on its line to the front of the *next* item, ``split`` hoists it
back onto the previous element.
"""

from __future__ import annotations

from kera_core.fmt.doc import FRESHLINE, LINE_END, SPACE, Doc, Verbatim, concat
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.tree import GreenNode, GreenToken

K = SyntaxKind

COMMENTS = frozenset({K.COMMENT, K.DOC_COMMENT})
WS = K.WHITESPACE
ITEM_KINDS = frozenset({K.FN, K.STRUCT, K.CONST, K.FIELD, K.USE})
# `f(a, /* c */ b)`: an inline block comment after these leads what follows it.
OPENERS = frozenset({K.COMMA, K.L_PAREN, K.L_BRACK, K.L_BRACE})
_LINE_WS = " \t\r\f\v"


def normalize_comment(text: str) -> str:
    """The text a comment is printed with: line comments lose trailing whitespace (and
    the ``\\r`` of a CRLF file); block comments get ``\\n`` line endings."""
    if text.startswith("/*"):
        return text.replace("\r\n", "\n")
    return text.rstrip(_LINE_WS)


class Cm:
    """One comment: its printed text and where it sat relative to its neighbours."""

    __slots__ = ("text", "line", "nl_before", "nl_after", "code_after", "off", "end")

    def __init__(
        self, text: str, nl_before: int, nl_after: int, code_after: bool, off: int, end: int
    ) -> None:
        self.text = normalize_comment(text)
        self.line = not text.startswith("/*")  # `//` and `///` run to the end of the line
        self.nl_before = nl_before
        self.nl_after = nl_after
        self.code_after = code_after
        self.off = off
        self.end = end  # byte offset after the original text

    @property
    def doc(self) -> Doc:
        return Verbatim(self.text) if "\n" in self.text else self.text

    @property
    def needs_newline(self) -> bool:
        """A line comment, or a block comment the user ended the line with."""
        return self.line or self.nl_after > 0

    def __repr__(self) -> str:
        return f"Cm({self.text!r}, before={self.nl_before}, after={self.nl_after})"


class El:
    """A significant child of a node with the comments attached to it.

    ``nl`` counts the newlines in the whitespace right before the element (after its
    leading comments): 2 or more means the user left a blank line there.
    """

    __slots__ = ("kind", "green", "off", "lead", "trail", "nl")

    def __init__(
        self, kind: SyntaxKind, green: GreenNode | GreenToken, off: int, lead: list[Cm], nl: int
    ) -> None:
        self.kind = kind
        self.green = green
        self.off = off
        self.lead = lead
        self.trail: list[Cm] = []
        self.nl = nl

    @property
    def end(self) -> int:
        return self.off + self.green.text_len

    def __repr__(self) -> str:
        return f"El({self.kind.name}@{self.off}, lead={self.lead}, trail={self.trail})"


def comment_info(root: GreenNode, text: str) -> dict[int, tuple[int, int, bool]]:
    """Byte offset of every comment -> (nl_before, nl_after, code_after). Start and end
    of file count as line breaks."""
    info: dict[int, tuple[int, int, bool]] = {}
    if "//" not in text and "/*" not in text:
        return info
    off = 0
    nl = 1
    last = -1
    for tok in root.tokens():
        k = tok.kind
        if k is WS:
            nl += tok.text.count("\n")
        else:
            is_comment = k in COMMENTS
            if last >= 0:
                info[last] = (info[last][0], nl, nl == 0 and not is_comment)
                last = -1
            if is_comment:
                info[off] = (nl, 0, False)
                last = off
            nl = 0
        off += tok.text_len
    if last >= 0:
        info[last] = (info[last][0], max(nl, 1), False)
    return info


class Splitter:
    """Splits nodes into elements; shared state is the set of hoisted comments."""

    def __init__(self, info: dict[int, tuple[int, int, bool]]) -> None:
        self.info = info
        self.hoisted: set[int] = set()

    def cm(self, tok: GreenToken, off: int) -> Cm:
        before, after, code_after = self.info.get(off, (1, 1, False))
        return Cm(tok.text, before, after, code_after, off, off + tok.text_len)

    def split(self, green: GreenNode, off: int) -> tuple[list[El], list[Cm]]:
        """The significant children of ``green`` (at byte ``off``) and the comments after
        the last one that trail nothing (only the file has those)."""
        els: list[El] = []
        lead: list[Cm] = []
        nl = 0
        own_line = False  # an own-line comment was seen since the last element
        for child in green.children:
            k = child.kind
            if k is WS:
                nl += child.text.count("\n")  # type: ignore[union-attr]
            elif k in COMMENTS:
                if off not in self.hoisted:
                    c = self.cm(child, off)  # type: ignore[arg-type]
                    if (
                        not own_line
                        and c.nl_before == 0
                        and els
                        and not (c.code_after and not c.line and els[-1].kind in OPENERS)
                    ):
                        els[-1].trail.append(c)
                    else:
                        own_line = True
                        lead.append(c)
                nl = 0
            else:
                if k in ITEM_KINDS and els and not own_line:
                    self._hoist(child, off, els[-1])  # type: ignore[arg-type]
                els.append(El(k, child, off, lead, nl))
                lead = []
                nl = 0
                own_line = False
            off += child.text_len
        return els, lead

    def _hoist(self, item: GreenNode, off: int, prev: El) -> None:
        """Comments the builder glued to the front of ``item`` that really trail ``prev``."""
        for child in item.children:
            k = child.kind
            if k in COMMENTS:
                c = self.cm(child, off)  # type: ignore[arg-type]
                if c.nl_before:
                    return
                prev.trail.append(c)
                self.hoisted.add(off)
            elif k is not WS:
                return
            off += child.text_len


def lead_doc(cms: list[Cm], space_before: bool = True) -> Doc:
    """Comments before an element: own-line ones on their own line, inline ones inline
    (after a space unless ``space_before`` is false: `(/* c */ a)`)."""
    if not cms:
        return ""
    parts: list[Doc] = []
    for i, c in enumerate(cms):
        if c.nl_before:
            parts.append(FRESHLINE)
        elif i or space_before:
            parts.append(SPACE)
        parts.append(c.doc)
        parts.append(LINE_END if c.needs_newline else SPACE)
    return concat(parts)


def trail_doc(cms: list[Cm], space_before: bool = True) -> Doc:
    """Comments after an element on the same line; a line comment ends the line. A
    block comment does not, even if the user ended the line after it: whether a newline
    follows is the layout's decision (else a second run could lay the line out
    differently from the first, which put the newline there)."""
    if not cms:
        return ""
    parts: list[Doc] = []
    for i, c in enumerate(cms):
        if i or space_before or c.line:
            parts.append(SPACE)
        parts.append(c.doc)
        parts.append(LINE_END if c.line else SPACE)
    return concat(parts)


def first_token_kind(green: GreenNode | GreenToken) -> SyntaxKind:
    """Kind of the first significant token under ``green``."""
    while not green.is_token:
        for c in green.children:  # type: ignore[union-attr]
            if c.kind is not WS and c.kind not in COMMENTS:
                green = c
                break
        else:
            return K.EOF
    return green.kind
