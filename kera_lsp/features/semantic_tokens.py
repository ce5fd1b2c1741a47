"""Semantic tokens: full document (with a ``resultId``), deltas against the previous result,
and ranges.

The last result sent for each document is kept (its id, data and the content hash of the
text it describes: an unchanged text is answered from it without classifying anything);
``full/delta`` with that id answers one edit — the tokens between the common prefix and
suffix of the old and new data — or none when nothing changed. An unknown id gets the full
tokens again. ``range`` classifies only the top-level items that overlap the range.
"""

from __future__ import annotations

import itertools

from lsprotocol import types as T

from kera_core.ide import tokens, tokens_range
from kera_lsp import convert
from kera_lsp.server import KeraLanguageServer, handler

LEGEND = T.SemanticTokensLegend(
    token_types=tokens.TOKEN_TYPES, token_modifiers=tokens.TOKEN_MODIFIERS
)

_ids = itertools.count(1)


def delta_edits(old: list[int], new: list[int]) -> list[T.SemanticTokensEdit]:
    """One edit turning ``old`` into ``new``, aligned to whole tokens (5 integers)."""
    if old == new:
        return []
    n = min(len(old), len(new))
    p = 0
    while p < n and old[p] == new[p]:
        p += 1
    p -= p % 5
    s = 0
    while s < n - p and old[len(old) - 1 - s] == new[len(new) - 1 - s]:
        s += 1
    s -= s % 5
    return [
        T.SemanticTokensEdit(start=p, delete_count=len(old) - p - s, data=new[p : len(new) - s])
    ]


def in_range(data: list[int], rng: T.Range) -> list[int]:
    """The tokens of ``data`` that overlap ``rng``, re-encoded relative to each other."""
    start = (rng.start.line, rng.start.character)
    end = (rng.end.line, rng.end.character)
    if end < start:
        start, end = end, start
    out: list[int] = []
    line = col = 0
    prev_line = prev_col = 0
    for i in range(0, len(data) - 4, 5):
        d_line, d_col, length, ttype, mods = data[i : i + 5]
        line += d_line
        col = col + d_col if d_line == 0 else d_col
        ts, te = (line, col), (line, col + length)
        if ts > end or (ts == end and start != end):
            break  # tokens come in order
        if not (ts <= start < te if start == end else te > start):
            continue
        dl = line - prev_line
        out += [dl, col - prev_col if dl == 0 else col, length, ttype, mods]
        prev_line, prev_col = line, col
    return out


def setup(server: KeraLanguageServer) -> None:
    # uri -> (result id, data, content hash of the text it describes), last sent
    last: dict[str, tuple[str, list[int], bytes]] = {}

    def current(ls: KeraLanguageServer, uri: str, a, enc: str) -> tuple[str, list[int]]:
        """The tokens of ``a`` and their result id; an unchanged text reuses the last ones."""
        for gone in [u for u in last if ls.kera.get(u) is None]:
            del last[gone]  # closed documents
        prev = last.get(uri)
        if prev is not None and prev[2] == a.content_hash:
            return prev[0], prev[1]
        data = tokens.semantic_tokens(a, enc)
        if prev is not None and prev[1] == data:
            rid = prev[0]
        else:
            rid = str(next(_ids))
        last[uri] = (rid, data, a.content_hash)
        return rid, data

    @server.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
    @handler
    async def semantic_tokens_full(ls: KeraLanguageServer, params: T.SemanticTokensParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            rid, data = current(ls, uri, a, enc)
            return T.SemanticTokens(data=data, result_id=rid)

        return await ls.query(uri, fn, default=T.SemanticTokens(data=[]))

    @server.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL_DELTA)
    @handler
    async def semantic_tokens_delta(ls: KeraLanguageServer, params: T.SemanticTokensDeltaParams):
        uri, enc = params.text_document.uri, ls.encoding

        def fn(doc, a):
            prev = last.get(uri)
            rid, data = current(ls, uri, a, enc)
            if prev is None or prev[0] != params.previous_result_id:
                return T.SemanticTokens(data=data, result_id=rid)
            return T.SemanticTokensDelta(edits=delta_edits(prev[1], data), result_id=rid)

        return await ls.query(uri, fn, default=T.SemanticTokens(data=[]))

    @server.feature(T.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE)
    @handler
    async def semantic_tokens_range(ls: KeraLanguageServer, params: T.SemanticTokensRangeParams):
        enc = ls.encoding

        def fn(doc, a):
            # only the items overlapping the range are classified, then cut to the range
            span = convert.span_of(a.line_index, params.range, enc)
            data = tokens_range.semantic_tokens_in(a, span, enc)
            return T.SemanticTokens(data=in_range(data, params.range))

        return await ls.query(params.text_document.uri, fn, default=T.SemanticTokens(data=[]))
