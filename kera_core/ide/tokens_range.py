"""Semantic tokens of the top-level items (and comments between them) that overlap a byte
span: the same classification as :func:`kera_core.ide.tokens.semantic_tokens`, without
walking the rest of the file (``semanticTokens/range`` on a screen of a large file)."""

from __future__ import annotations

from kera_core.ide.common import fn_uses
from kera_core.ide.tokens import _T, _classify_token, _mutable_name, _name_offset, _units
from kera_core.source import Span
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import Analysis, to_position


def _walk(green, base: int, anc):
    stack = [(green, base, anc)]
    while stack:
        g, off, up = stack.pop()
        yield g, off, up
        if g.is_token:
            continue
        here = (g.kind, up)
        kids = []
        for c in g.children:
            kids.append((c, off, here))
            off += c.text_len
        kids.reverse()
        stack.extend(kids)


def semantic_tokens_in(a: Analysis, span: Span, encoding: str = "utf-16") -> list[int]:
    """LSP ``data`` (relative encoding) for the top-level elements overlapping ``span``."""
    if a.parse is None:
        return []
    root = a.parse.green
    env = a.module.env if a.module is not None else None
    picked = []
    off = 0
    for child in root.children:
        end = off + child.text_len
        if off <= span.end and end >= span.start:
            picked.append((child, off))
        off = end
    if not picked:
        return []
    uses = {}
    if env is not None:
        for u in env.uses:
            uses[u.span.start] = u
        lo, hi = picked[0][1], picked[-1][1] + picked[-1][0].text_len
        for sig in a.sigs_between(lo, hi):
            for u in fn_uses(a, sig):
                uses[u.span.start] = u
    index = a.line_index
    data: list[int] = []
    prev_line = prev_col = 0
    top = (K.SOURCE_FILE, None)
    for child, base in picked:
        mutable_defs: set[int] = set()
        for el, o, anc in _walk(child, base, top):
            if not el.is_token:
                if el.kind in (K.LET_STMT, K.PARAM, K.BIND_PAT) and _mutable_name(el):
                    at = _name_offset(el, o)
                    if at is not None:
                        mutable_defs.add(at)
                continue
            cls = _classify_token(el, o, anc, uses, env, mutable_defs)
            if cls is None:
                continue
            line, col = to_position(index, o, encoding)
            ttype, mods = _T[cls[0]], cls[1]
            for i, part in enumerate(el.text.split("\n")):
                if i:
                    line, col = line + 1, 0
                shown = part[:-1] if part.endswith("\r") else part
                n = _units(shown, encoding)
                if n:
                    d_line = line - prev_line
                    data += [d_line, col - prev_col if d_line == 0 else col, n, ttype, mods]
                    prev_line, prev_col = line, col
    return data
