"""Byte spans <-> LSP ranges, and Kera diagnostics/edits -> LSP objects.

Every position crossing the protocol goes through here, in the encoding the client and
server agreed on (UTF-16 unless the client offered UTF-8 or UTF-32).
"""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types as T

from kera_core.diagnostics import Diagnostic, Severity
from kera_core.source import LineIndex, Span
from kera_core.workspace import to_offset, to_position

SEVERITY = {
    Severity.ERROR: T.DiagnosticSeverity.Error,
    Severity.WARNING: T.DiagnosticSeverity.Warning,
    Severity.INFO: T.DiagnosticSeverity.Information,
    Severity.HINT: T.DiagnosticSeverity.Hint,
}


def position(index: LineIndex, offset: int, enc: str) -> T.Position:
    line, col = to_position(index, offset, enc)
    return T.Position(line=line, character=col)


def range_of(index: LineIndex, span: Span, enc: str) -> T.Range:
    return T.Range(start=position(index, span.start, enc), end=position(index, span.end, enc))


def offset_of(index: LineIndex, pos: T.Position, enc: str) -> int:
    return to_offset(index, pos.line, pos.character, enc)


def span_of(index: LineIndex, rng: T.Range, enc: str) -> Span:
    a = offset_of(index, rng.start, enc)
    b = offset_of(index, rng.end, enc)
    return Span(min(a, b), max(a, b))


def diagnostic(
    d: Diagnostic,
    index: LineIndex,
    enc: str,
    uri: str,
    locate: Callable[[str], tuple[str, LineIndex] | None] | None = None,
) -> T.Diagnostic:
    """An LSP diagnostic; a related note in another file (``Related.path``, a package's
    other file) is placed by ``locate`` (path -> its uri and line index), or left out."""
    related = []
    for r in d.related:
        r_uri, r_index = uri, index
        if r.path is not None:
            found = locate(r.path) if locate is not None else None
            if found is None:
                continue
            r_uri, r_index = found
        related.append(
            T.DiagnosticRelatedInformation(
                location=T.Location(uri=r_uri, range=range_of(r_index, r.span, enc)),
                message=r.message,
            )
        )
    return T.Diagnostic(
        range=range_of(index, d.span, enc),
        message=d.message,
        severity=SEVERITY.get(d.severity, T.DiagnosticSeverity.Error),
        code=d.code,
        source="kera",
        related_information=related or None,
        data={"fix": d.fix.title} if d.fix is not None else None,
    )


def text_edit(index: LineIndex, span: Span, new_text: str, enc: str) -> T.TextEdit:
    return T.TextEdit(range=range_of(index, span, enc), new_text=new_text)
