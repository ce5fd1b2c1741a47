"""Byte spans <-> LSP ranges, and Kera diagnostics/edits -> LSP objects.

Every position crossing the protocol goes through here, in the encoding the client and
server agreed on (UTF-16 unless the client offered UTF-8 or UTF-32).

A diagnostic is built as the JSON the protocol carries (:func:`diagnostic_json`: the
dict pygls's converter makes of an ``lsprotocol`` diagnostic, key for key and in the
same order), which the publisher sends as it is — a whole file's diagnostics go out on
every keystroke, and building ``lsprotocol`` objects to have them unstructured again cost
more than finding the positions; :func:`diagnostic` is the same as an ``lsprotocol``
object, for the replies that carry one (code actions, pulled diagnostics).
"""

from __future__ import annotations

from collections.abc import Callable

from lsprotocol import types as T
from lsprotocol.converters import get_converter

from kera_core.diagnostics import Diagnostic, Severity
from kera_core.source import LineIndex, Span
from kera_core.workspace import to_offset, to_position

SEVERITY = {
    Severity.ERROR: T.DiagnosticSeverity.Error,
    Severity.WARNING: T.DiagnosticSeverity.Warning,
    Severity.INFO: T.DiagnosticSeverity.Information,
    Severity.HINT: T.DiagnosticSeverity.Hint,
}
_SEVERITY_NUMBER = {k: int(v.value) for k, v in SEVERITY.items()}
_ERROR = int(T.DiagnosticSeverity.Error.value)
_CONVERTER = get_converter()


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


def position_json(
    index: LineIndex, offset: int, enc: str, at: dict[int, tuple[int, int]] | None = None
) -> dict:
    """An LSP position as JSON; ``at`` holds positions found already (LineIndex.positions)."""
    found = at.get(offset) if at is not None else None
    line, col = found if found is not None else to_position(index, offset, enc)
    return {"line": line, "character": col}


def range_json(
    index: LineIndex, span: Span, enc: str, at: dict[int, tuple[int, int]] | None = None
) -> dict:
    return {
        "start": position_json(index, span.start, enc, at),
        "end": position_json(index, span.end, enc, at),
    }


def positions_of(diags: list[Diagnostic], index: LineIndex, enc: str) -> dict[int, tuple[int, int]]:
    """The positions of ``diags``' spans and their notes in the same file, found at once."""
    offsets: list[int] = []
    for d in diags:
        offsets += (d.span.start, d.span.end)
        for r in d.related:
            if r.path is None:
                offsets += (r.span.start, r.span.end)
    return index.positions(offsets, enc)


def diagnostic_json(
    d: Diagnostic,
    index: LineIndex,
    enc: str,
    uri: str,
    locate: Callable[[str], tuple[str, LineIndex] | None] | None = None,
    at: dict[int, tuple[int, int]] | None = None,
) -> dict:
    """An LSP diagnostic as the protocol's JSON; a related note in another file
    (``Related.path``, a package's other file) is placed by ``locate`` (path -> its uri and
    line index), or left out. ``at``: positions in ``index`` found already (positions_of)."""
    out: dict = {
        "range": range_json(index, d.span, enc, at),
        "message": d.message,
        "severity": _SEVERITY_NUMBER.get(d.severity, _ERROR),
    }
    if d.code is not None:
        out["code"] = d.code
    out["source"] = "kera"
    related = []
    for r in d.related:
        r_uri, r_index, r_at = uri, index, at
        if r.path is not None:
            found = locate(r.path) if locate is not None else None
            if found is None:
                continue
            (r_uri, r_index), r_at = found, None
        location = {"uri": r_uri, "range": range_json(r_index, r.span, enc, r_at)}
        related.append({"location": location, "message": r.message})
    if related:
        out["relatedInformation"] = related
    if d.fix is not None:
        out["data"] = {"fix": d.fix.title}
    return out


def diagnostic(
    d: Diagnostic,
    index: LineIndex,
    enc: str,
    uri: str,
    locate: Callable[[str], tuple[str, LineIndex] | None] | None = None,
) -> T.Diagnostic:
    """:func:`diagnostic_json` as an ``lsprotocol`` object."""
    return structure(diagnostic_json(d, index, enc, uri, locate), T.Diagnostic)


def structure(data, cls):
    """The protocol's JSON as ``lsprotocol`` objects of type ``cls``."""
    return _CONVERTER.structure(data, cls)


def text_edit(index: LineIndex, span: Span, new_text: str, enc: str) -> T.TextEdit:
    return T.TextEdit(range=range_of(index, span, enc), new_text=new_text)
