"""The formatter's document IR and a Wadler/Prettier-style fitting printer.

A document is built from:

* ``str``: text without newlines, printed as is;
* :data:`SPACE`: one space, dropped at the start of a line and before a newline, and
  collapsed with its neighbours (so rules can put spaces around comments freely);
  :data:`NOSPACE` cancels a pending one;
* :data:`LINE` / :data:`SOFTLINE`: a space / nothing when the enclosing group is flat,
  a newline plus indentation when it is broken;
* :data:`HARDLINE`: always a newline; :data:`FRESHLINE`: a newline unless the printer is
  already at the start of a line; :data:`LINE_END`: the next text must start a new line
  (what follows a ``//`` comment). All three force every enclosing group to break;
* :class:`Concat`, :class:`Group`, :class:`Indent`, :class:`IfBreak` (the trailing comma
  of a broken list), :class:`Verbatim` (a block comment spanning several lines).

Whether a document contains a forced break (``hard``) is computed once, when it is
built, so the printer never walks a group twice to find out. The printer is a loop
over an explicit stack: document depth never touches Python's recursion limit.
"""

from __future__ import annotations

_BREAK = 0
_FLAT = 1


class Concat:
    __slots__ = ("parts", "hard")

    def __init__(self, parts: list[Doc], hard: bool) -> None:
        self.parts = parts
        self.hard = hard


class Group:
    """Flat if it fits on the line (and, with ``limit``, if it is at most that wide)."""

    __slots__ = ("contents", "hard", "limit", "broke")

    def __init__(self, contents: Doc, hard: bool, limit: int = 0) -> None:
        self.contents = contents
        self.hard = hard
        self.limit = limit
        self.broke: bool | None = None  # set by the printer


class Indent:
    __slots__ = ("contents", "hard")

    def __init__(self, contents: Doc, hard: bool) -> None:
        self.contents = contents
        self.hard = hard


class IfBreak:
    """``broken`` if the enclosing group (or ``group``, when given) is broken, else ``flat``."""

    __slots__ = ("broken", "flat", "hard", "group")

    def __init__(self, broken: Doc, flat: Doc, group: Group | None = None) -> None:
        self.broken = broken
        self.flat = flat
        self.hard = False
        self.group = group

    def pick(self, mode: int) -> Doc:
        if self.group is not None:
            return self.broken if self.group.broke else self.flat
        return self.broken if mode == _BREAK else self.flat


class Verbatim:
    """Text containing newlines (a multi-line block comment): printed byte for byte."""

    __slots__ = ("text", "hard")

    def __init__(self, text: str) -> None:
        self.text = text
        self.hard = True


class _Atom:
    __slots__ = ("name", "hard")

    def __init__(self, name: str, hard: bool) -> None:
        self.name = name
        self.hard = hard

    def __repr__(self) -> str:
        return self.name


SPACE = _Atom("SPACE", False)
LINE = _Atom("LINE", False)
SOFTLINE = _Atom("SOFTLINE", False)
HARDLINE = _Atom("HARDLINE", True)
FRESHLINE = _Atom("FRESHLINE", True)
LINE_END = _Atom("LINE_END", True)
NOSPACE = _Atom("NOSPACE", False)  # cancels a pending SPACE: `a /* c */)` not `a /* c */ )`

Doc = str | Concat | Group | Indent | IfBreak | Verbatim | _Atom

INDENT_WIDTH = 4


def is_hard(d: Doc) -> bool:
    return type(d) is not str and d.hard  # type: ignore[union-attr]


def cat(*parts: Doc) -> Doc:
    return concat(list(parts))


def concat(parts: list[Doc]) -> Doc:
    hard = False
    for p in parts:
        if type(p) is not str and p.hard:  # type: ignore[union-attr]
            hard = True
            break
    return Concat(parts, hard)


def group(*parts: Doc, limit: int = 0) -> Group:
    d = concat(list(parts)) if len(parts) != 1 else parts[0]
    return Group(d, is_hard(d), limit)


def indent(*parts: Doc) -> Indent:
    d = concat(list(parts)) if len(parts) != 1 else parts[0]
    return Indent(d, is_hard(d))


def join(sep: Doc, docs: list[Doc]) -> Doc:
    out: list[Doc] = []
    for i, d in enumerate(docs):
        if i:
            out.append(sep)
        out.append(d)
    return concat(out)


# --- the printer ----------------------------------------------------------------


def _fits(doc: Doc, rest: list[tuple[int, int, Doc]], width: int) -> bool:
    """Does ``doc`` printed flat, plus what follows up to the next newline, fit?"""
    stack: list[tuple[int, Doc]] = [(_FLAT, doc)]
    ri = len(rest)
    sp = 0  # a space is only paid for when text follows it on the line
    while width >= 0:
        if not stack:
            if ri == 0:
                return True
            ri -= 1
            _, m, d = rest[ri]
            stack.append((m, d))
            continue
        mode, d = stack.pop()
        t = type(d)
        if t is str:
            if d:
                width -= len(d) + sp  # type: ignore[arg-type]
                sp = 0
        elif t is Concat:
            parts = d.parts  # type: ignore[union-attr]
            for i in range(len(parts) - 1, -1, -1):
                stack.append((mode, parts[i]))
        elif t is Group:
            stack.append((_BREAK if d.hard else mode, d.contents))  # type: ignore[union-attr]
        elif t is Indent:
            stack.append((mode, d.contents))  # type: ignore[union-attr]
        elif t is IfBreak:
            stack.append((mode, d.pick(mode)))  # type: ignore[union-attr]
        elif d is SPACE:
            sp = 1
        elif d is NOSPACE:
            sp = 0
        elif d is LINE or d is SOFTLINE:
            if mode == _BREAK:
                return True
            if d is LINE:
                sp = 1
        elif t is Verbatim:
            return width - sp - d.text.index("\n") >= 0  # type: ignore[union-attr]
        else:  # HARDLINE, FRESHLINE, LINE_END: a newline comes here
            return True
    return False


def print_doc(doc: Doc, width: int = 100, base_indent: int = 0, at_line_start: bool = True) -> str:
    """Lay ``doc`` out in ``width`` columns.

    ``base_indent`` is the indentation of the whole document; with ``at_line_start``
    false the first line's indentation is assumed to be already written (range
    formatting splices the text after existing indentation). If the document ends with
    a `//` comment, the result ends with ``\n`` (nothing may follow on that line).
    """
    out: list[str] = []
    write = out.append
    cmds: list[tuple[int, int, Doc]] = [(base_indent, _BREAK, doc)]
    col = base_indent
    line_start = at_line_start
    line_indent = base_indent
    space = False
    pending_nl = False
    while cmds:
        ind, mode, d = cmds.pop()
        t = type(d)
        if t is str:
            if not d:
                continue
            if pending_nl:
                write("\n")
                line_start = True
                line_indent = ind
                pending_nl = False
            if line_start:
                if line_indent:
                    write(" " * line_indent)
                col = line_indent
                line_start = False
            elif space:
                write(" ")
                col += 1
            space = False
            write(d)  # type: ignore[arg-type]
            col += len(d)  # type: ignore[arg-type]
        elif t is Concat:
            parts = d.parts  # type: ignore[union-attr]
            for i in range(len(parts) - 1, -1, -1):
                cmds.append((ind, mode, parts[i]))
        elif t is Group:
            if mode == _FLAT:
                d.broke = False  # type: ignore[union-attr]
                cmds.append((ind, _FLAT, d.contents))  # type: ignore[union-attr]
            elif d.hard:  # type: ignore[union-attr]
                d.broke = True  # type: ignore[union-attr]
                cmds.append((ind, _BREAK, d.contents))  # type: ignore[union-attr]
            else:
                if pending_nl or line_start:
                    start = ind if pending_nl else line_indent
                else:
                    start = col + (1 if space else 0)
                c = d.contents  # type: ignore[union-attr]
                flat = _fits(c, cmds, width - start)
                if flat and d.limit:  # type: ignore[union-attr]
                    flat = _fits(c, [], d.limit)  # type: ignore[union-attr]
                d.broke = not flat  # type: ignore[union-attr]
                cmds.append((ind, _FLAT if flat else _BREAK, c))
        elif t is Indent:
            cmds.append((ind + INDENT_WIDTH, mode, d.contents))  # type: ignore[union-attr]
        elif d is SPACE:
            if not line_start and not pending_nl:
                space = True
        elif d is NOSPACE:
            space = False
        elif d is LINE or d is SOFTLINE:
            if mode == _FLAT:
                if d is LINE and not line_start and not pending_nl:
                    space = True
            else:
                write("\n")
                line_start, line_indent, col, space, pending_nl = True, ind, ind, False, False
        elif d is HARDLINE:
            write("\n")
            line_start, line_indent, col, space, pending_nl = True, ind, ind, False, False
        elif d is FRESHLINE:
            if pending_nl or not line_start:
                write("\n")
                line_start, line_indent, col, space, pending_nl = True, ind, ind, False, False
        elif d is LINE_END:
            pending_nl = True
            space = False
        elif t is IfBreak:
            cmds.append((ind, mode, d.pick(mode)))  # type: ignore[union-attr]
        elif t is Verbatim:
            text = d.text  # type: ignore[union-attr]
            if pending_nl:
                write("\n")
                line_start, line_indent, pending_nl = True, ind, False
            if line_start:
                if line_indent:
                    write(" " * line_indent)
                line_start = False
            elif space:
                write(" ")
            space = False
            write(text)
            col = len(text) - text.rindex("\n") - 1
        else:  # pragma: no cover - every doc kind is handled above
            raise TypeError(f"not a doc: {d!r}")
    if pending_nl:
        write("\n")
    return "".join(out)
