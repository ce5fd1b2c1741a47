"""Range formatting: format the whole items or statements that cover a byte range.

The unit is the smallest run of consecutive siblings that overlaps the range: top-level
items (`fn`, `struct`, `const`) when the range reaches outside every function body,
otherwise the statements of the innermost block whose braces enclose the range. Only
the bytes from the start of the first selected sibling to the end of the last one (and
the comments after it on its line) are replaced; comments on earlier and later lines
stay as they are. The siblings keep the indentation their first line has in the input.
"""

from __future__ import annotations

from kera_core.diagnostics import Edit
from kera_core.fmt import (
    DEFAULT_WIDTH,
    FormatResult,
    internal_error,
    minimal_edit,
    refused,
    syntax_refusal,
)
from kera_core.fmt.check import check_output
from kera_core.fmt.doc import print_doc
from kera_core.fmt.rules import Formatter
from kera_core.fmt.trivia import COMMENTS, WS, El
from kera_core.source import Span, decode, encode
from kera_core.stack import deep_recursion
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.parse import parse
from kera_core.syntax.tree import SyntaxNode

K = SyntaxKind


def _container(root: SyntaxNode, span: Span) -> SyntaxNode:
    """The file, or the innermost block whose braces strictly enclose ``span``."""
    node: SyntaxNode | None = root.covering_node(span)
    while node is not None:
        if node.kind is K.SOURCE_FILE:
            return node
        if node.kind is K.BLOCK:
            first, last = node.first_token(), node.last_token()
            if (
                first is not None
                and last is not None
                and first.kind is K.L_BRACE
                and last.kind is K.R_BRACE
                and span.start >= first.span.end
                and span.end <= last.span.start
            ):
                return node
        node = node.parent
    return root


def _overlaps(el: El, span: Span) -> bool:
    if len(span) == 0:
        return el.off <= span.start <= el.end
    return el.off < span.end and span.start < el.end


def _region_start(el: El, hoisted: set[int]) -> int:
    """Where the replaced text starts: after comments that trail the previous sibling."""
    if el.green.is_token or not hoisted:
        return el.off
    off = el.off
    for c in el.green.children:  # type: ignore[union-attr]
        if c.kind is WS or (c.kind in COMMENTS and off in hoisted):
            off += c.text_len
            continue
        return off
    return el.off


def _indent_at(data: bytes, start: int, depth: int) -> tuple[int, bool]:
    """Indentation of the line ``start`` is on, and whether only whitespace precedes it."""
    line_start = data.rfind(b"\n", 0, start) + 1
    prefix = data[line_start:start]
    if prefix.strip(b" \t") == b"":
        return len(prefix.replace(b"\t", b"    ")), True
    return depth * 4, False


def format_range(text: str | bytes, span: Span, width: int = DEFAULT_WIDTH) -> FormatResult:
    """Format the items or statements covering ``span`` (byte offsets into ``text``).

    Returns a :class:`FormatResult` whose ``edits`` (byte spans into ``text``) replace
    only the selected siblings and whose ``text`` is ``text`` with the edits applied.
    Refuses (K0602) when a syntax error lies inside the selection; errors elsewhere in
    the file do not prevent formatting the selection.
    """
    text = decode(text)
    try:
        with deep_recursion(quiet_gc=True):
            return _format_range(text, span, width)
    except Exception as exc:
        return refused(text, internal_error(exc))


def _format_range(text: str, span: Span, width: int) -> FormatResult:
    p = parse(text)
    data = encode(text)
    span = Span(min(span.start, len(data)), min(span.end, len(data)))
    container = _container(p.tree, span)
    f = Formatter(p.green, text)
    els, end_comments = f.split(container.green, container.offset)
    body = els[1:-1] if container.kind is K.BLOCK else els
    picked = [i for i, el in enumerate(body) if _overlaps(el, span)]
    if not picked:
        return FormatResult(text, False)
    lo, hi = picked[0], picked[-1] + 1
    first, last = body[lo], body[hi - 1]
    start = _region_start(first, f.splitter.hoisted)
    # The last sibling's comments on its line come along (`x = 1; // why`), unless
    # they sit inside the next sibling.
    own_trail = [c for c in last.trail if c.off not in f.splitter.hoisted]
    end = max([last.end] + [c.end for c in own_trail])
    errors = [d for d in p.diagnostics if d.is_error and d.span.start < end and start < d.span.end]
    if errors or any(
        n.kind is K.ERROR
        for el in body[lo:hi]
        if not el.green.is_token
        for n in SyntaxNode(el.green, None, el.off).descendants()  # type: ignore[arg-type]
    ):
        return refused(text, syntax_refusal(errors or p.diagnostics))
    # The selection's own comments only: what lies before/after it is not replaced.
    saved = first.lead, last.trail
    first.lead, last.trail = [], own_trail
    try:
        if container.kind is K.BLOCK:
            pairs = f.statement_docs(body, lo, hi)
        else:
            pairs = [(el, f.core(el)) for el in body[lo:hi]]
        doc = f.entries(pairs, [], container.kind is K.SOURCE_FILE)
    finally:
        first.lead, last.trail = saved
    depth = sum(1 for a in container.ancestors() if a.kind is K.BLOCK)
    base, at_line_start = _indent_at(data, start, depth)
    out = print_doc(doc, width, base, at_line_start=False) if doc is not None else ""
    # A blank line the layout puts before the first sibling is already in the text before
    # `start` (the region starts at the sibling itself): printing it again would add one
    # more at every request, so formatting a range twice would not be a no-op.
    out = out.lstrip("\n")
    if out.endswith("\n"):  # it ends with a `//` comment: keep what follows off its line
        rest = data[end : data.find(b"\n", end) + 1 or len(data)]
        out = out[:-1] if rest.strip(b" \t\r\n") == b"" else out + " " * base
    if b"\r\n" in data[: data.find(b"\n") + 1 or len(data)]:
        out = out.replace("\n", "\r\n")
    old_region = decode(data[start:end])
    if out == old_region:
        return FormatResult(text, False)
    new_text = decode(data[:start] + encode(out) + data[end:])
    if not p.has_errors:
        diag, _ = check_output(p.green, new_text)
        if diag is not None:
            return refused(text, diag)
    else:
        q = parse(new_text)
        if sum(d.is_error for d in q.diagnostics) > sum(d.is_error for d in p.diagnostics):
            return refused(
                text,
                internal_error(RuntimeError("range formatting would add syntax errors")),
            )
    e = minimal_edit(old_region, out)
    edit = Edit(e.span.shifted(start), e.new_text)
    return FormatResult(new_text, True, [], [edit])
