"""The optional provenance section: spans and display names, never part of identity.

It is self-contained (its strings are inline, not in the string table), so a tool
can drop or replace it without touching any other section. Strings here come from
source text, which may hold undecodable bytes as lone surrogates; they are stored
with :func:`kera_core.source.encode` and read back losslessly.
"""

from __future__ import annotations

from kera_core.ir.encoding import Writer
from kera_core.ir.provenance import FnProvenance, Provenance
from kera_core.keg.cursor import Cursor
from kera_core.keg.format import MIN_NODE_NAME, MIN_NODE_SPANS, MIN_PROV_FN, MIN_SPAN
from kera_core.source import Span, decode, encode


def _text(w: Writer, s: str) -> None:
    w.bytes(encode(s))


def _span(w: Writer, s: Span) -> None:
    w.uvar(s.start)
    w.uvar(s.end - s.start)


def encode_provenance(prov: Provenance, node_index: dict[bytes, int]) -> bytes:
    """Function entries by name; node entries by node index. Spans of nodes not in the file are dropped."""
    w = Writer()
    names = sorted(prov.functions, key=encode)
    w.uvar(len(names))
    for name in names:
        fp = prov.functions[name]
        if fp.name != name:
            raise ValueError(f"provenance stored under {name!r} is named {fp.name!r}")
        _text(w, name)
        _span(w, fp.span)
        _span(w, fp.name_span)
        w.uvar(len(fp.dim_names))
        for d in fp.dim_names:
            _text(w, d)
        w.uvar(len(fp.param_names))
        for p in fp.param_names:
            _text(w, p)
        _text(w, fp.doc)
        spans = sorted((node_index[h], s) for h, s in fp.node_spans.items() if h in node_index)
        w.uvar(len(spans))
        for i, ss in spans:
            w.uvar(i)
            w.uvar(len(ss))
            for s in ss:
                _span(w, s)
        named = sorted((node_index[h], n) for h, n in fp.node_names.items() if h in node_index)
        w.uvar(len(named))
        for i, n in named:
            w.uvar(i)
            _text(w, n)
    return w.getvalue()


def _read_text(c: Cursor) -> str:
    return decode(c.blob())


def _read_span(c: Cursor) -> Span:
    start = c.uvar()
    return Span(start, start + c.uvar())


def _ascending(c: Cursor, what: str, at: int, prev, cur) -> None:
    if prev is not None and cur <= prev:
        kind = "duplicate" if cur == prev else "order"
        raise c.fail(kind, f"{what} {cur!r} after {prev!r} (must be strictly ascending)", at)


def decode_provenance(c: Cursor, nodes: list[bytes]) -> Provenance:
    prov = Provenance()
    prev_name: bytes | None = None
    for _ in range(c.count("function entries", MIN_PROV_FN)):
        at = c.pos
        raw = c.blob()
        _ascending(c, "function", at, prev_name, raw)
        prev_name = raw
        name = decode(raw)
        span = _read_span(c)
        name_span = _read_span(c)
        dims = tuple(_read_text(c) for _ in range(c.count("dimension names", 1)))
        params = tuple(_read_text(c) for _ in range(c.count("parameter names", 1)))
        doc = _read_text(c)
        fp = FnProvenance(name, span, name_span, dims, params, doc=doc)
        prev = None
        for _ in range(c.count("node span entries", MIN_NODE_SPANS)):
            at = c.pos
            i = c.index("node", len(nodes))
            _ascending(c, "node index", at, prev, i)
            prev = i
            fp.node_spans[nodes[i]] = [_read_span(c) for _ in range(c.count("spans", MIN_SPAN))]
        prev = None
        for _ in range(c.count("node name entries", MIN_NODE_NAME)):
            at = c.pos
            i = c.index("node", len(nodes))
            _ascending(c, "node index", at, prev, i)
            prev = i
            fp.node_names[nodes[i]] = _read_text(c)
        prov.functions[name] = fp
    c.expect_end("last function entry")
    return prov
