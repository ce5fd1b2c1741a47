"""The one diagnostic type every stage reports with."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from kera_core.diagnostics.codes import CODES
from kera_core.source import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the bytes in ``span`` with ``new_text``."""

    span: Span
    new_text: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A suggested change that resolves a diagnostic (a quick fix in the editor)."""

    title: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True, slots=True)
class Related:
    """A secondary location that explains the primary one ("value moved here"); ``path``
    names its file when that is not the diagnostic's own (a package's other file)."""

    span: Span
    message: str
    path: str | None = None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    severity: Severity
    span: Span
    message: str
    related: tuple[Related, ...] = field(default=())
    fix: Fix | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unregistered diagnostic code {self.code}")

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def shifted(self, delta: int) -> Diagnostic:
        """The same diagnostic moved by ``delta`` bytes (used by incremental reparse)."""
        return Diagnostic(
            self.code,
            self.severity,
            self.span.shifted(delta),
            self.message,
            tuple(
                r if r.path is not None else Related(r.span.shifted(delta), r.message)
                for r in self.related
            ),
            None
            if self.fix is None
            else Fix(
                self.fix.title,
                tuple(Edit(e.span.shifted(delta), e.new_text) for e in self.fix.edits),
            ),
        )

    def to_json(self) -> dict:
        d = {
            "code": self.code,
            "severity": self.severity.value,
            "span": {"start": self.span.start, "end": self.span.end},
            "message": self.message,
            "related": [
                {"span": {"start": r.span.start, "end": r.span.end}, "message": r.message}
                | ({"path": r.path} if r.path is not None else {})
                for r in self.related
            ],
        }
        if self.fix is not None:
            d["fix"] = {
                "title": self.fix.title,
                "edits": [
                    {"span": {"start": e.span.start, "end": e.span.end}, "new_text": e.new_text}
                    for e in self.fix.edits
                ],
            }
        return d


def quoted(text: str, limit: int = 40) -> str:
    """Source text as a message quotes it: a long piece is cut in the middle."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}…{text[-half:]} ({len(text)} characters)"


def error(code: str, span: Span, message: str, **kw) -> Diagnostic:
    return Diagnostic(code, Severity.ERROR, span, message, **kw)


def warning(code: str, span: Span, message: str, **kw) -> Diagnostic:
    return Diagnostic(code, Severity.WARNING, span, message, **kw)


def sort_key(d: Diagnostic) -> tuple[int, int, str, str]:
    """The one order diagnostics are reported in: by position, then code, then message."""
    return (d.span.start, d.span.end, d.code, d.message)


def reported(diags: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics to report: in the one order, each (severity, code, span, message)
    once — two stages that find the same thing say it once."""
    seen: set[tuple] = set()
    out: list[Diagnostic] = []
    for d in sorted(diags, key=sort_key):
        key = (d.severity, d.code, d.span.start, d.span.end, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out
