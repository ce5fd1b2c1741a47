"""Render diagnostics for people (rustc/ruff style) and for tools (JSON)."""

from __future__ import annotations

import json
import unicodedata

from kera_core.diagnostics.diagnostic import Diagnostic
from kera_core.source import LineIndex


def _display_width(s: str) -> int:
    w = 0
    for ch in s:
        if unicodedata.combining(ch):
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


def _printable(s: str) -> str:
    """Tabs and escaped bytes would shift the caret; show them as one visible cell."""
    out = []
    for ch in s:
        if ch == "\t":
            out.append("    ")
        elif 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append("\ufffd")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)


MAX_LINE = 160
"""Characters of a source line a snippet shows; a longer line is cut around the span."""
CONTEXT = 40
"""Characters kept before the span when a long line is cut."""


def _snippet(index: LineIndex, start: int, end: int, label: str, mark: str) -> list[str]:
    line, _ = index.to_chars(start)
    end_line, _ = index.to_chars(max(start, end - 1) if end > start else start)
    ls = index.line_start(line)
    pre = _printable(_slice_line(index, line, ls, start))
    seg_end = end if end_line == line else ls + 10**9
    seg = _printable(_slice_line(index, line, start, seg_end))
    post = _printable(_slice_line(index, line, max(start, seg_end), ls + 10**9))
    if len(pre) + len(seg) + len(post) > MAX_LINE:  # a long line: a window around the span
        if len(pre) > CONTEXT:
            pre = "…" + pre[-CONTEXT:]
        room = max(1, MAX_LINE - len(pre))
        if len(seg) > room:
            seg, post = seg[:room], "…"
        elif len(post) > room - len(seg):
            post = post[: room - len(seg)] + "…"
    gutter = str(line + 1)
    pad = " " * len(gutter)
    caret = " " * _display_width(pre) + mark * max(1, _display_width(seg))
    lines = [f"{pad} |", f"{gutter} | {pre}{seg}{post}", f"{pad} | {caret} {label}".rstrip()]
    return lines


def _slice_line(index: LineIndex, line: int, start: int, end: int) -> str:
    """Characters of ``line`` between two byte offsets (clamped to the line)."""
    text = index.line_text(line)
    ls = index.line_start(line)
    a = max(0, start - ls)
    b = max(a, end - ls)
    raw = text.encode("utf-8", "surrogateescape") if not text.isascii() else None
    if raw is None:
        return text[a:b]
    return raw[a:b].decode("utf-8", "replace")


def render(
    diag: Diagnostic,
    text: str,
    path: str = "<input>",
    index: LineIndex | None = None,
    sources: dict[str, str] | None = None,
) -> str:
    """A rustc-like rendering: header, location, source line and caret, related notes, fix.
    A related note in another file (``Related.path``) is shown from ``sources`` (path ->
    text), or as its path alone when that file's text is not given."""
    index = index or LineIndex(text)
    line, col = index.to_chars(diag.span.start)
    out = [f"{diag.severity.value}[{diag.code}]: {diag.message}"]
    out.append(f"  --> {path}:{line + 1}:{col + 1}")
    out += ["  " + s for s in _snippet(index, diag.span.start, diag.span.end, "", "^")]
    for rel in diag.related:
        out.append(f"  note: {rel.message}")
        rel_index, rel_path = index, path
        if rel.path is not None and rel.path != path:
            other = (sources or {}).get(rel.path)
            if other is None:
                out.append(f"    --> {rel.path}")
                continue
            rel_index, rel_path = LineIndex(other), rel.path
        rl, rc = rel_index.to_chars(rel.span.start)
        out.append(f"    --> {rel_path}:{rl + 1}:{rc + 1}")
        out += ["    " + s for s in _snippet(rel_index, rel.span.start, rel.span.end, "", "-")]
    if diag.fix is not None:
        out.append(f"  help: {diag.fix.title}")
    return "\n".join(out)


def render_json(diags: list[Diagnostic], text: str, path: str = "<input>") -> str:
    """JSON for tools: byte spans plus 1-based line/column for convenience."""
    index = LineIndex(text)
    rows = []
    for d in diags:
        j = d.to_json()
        j["path"] = path
        sl, sc = index.to_chars(d.span.start)
        el, ec = index.to_chars(d.span.end)
        j["span"].update(
            {"line": sl + 1, "column": sc + 1, "end_line": el + 1, "end_column": ec + 1}
        )
        rows.append(j)
    return json.dumps(rows, indent=2, ensure_ascii=False)
