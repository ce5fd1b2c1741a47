"""The Kera formatter: one canonical layout for any file that parses.

    >>> from kera_core.fmt import format_text
    >>> format_text("fn f( a:f32 )->f32{a*2.0}").text
    'fn f(a: f32) -> f32 {\\n    a * 2.0\\n}\\n'

* :func:`format_text` formats a whole file.
* :func:`format_range` formats the smallest run of whole items or statements that
  covers a byte range, and returns the edits an editor applies.
* :func:`check_formatted` reports K0603 (with the fix) when a file is not formatted.

Both return a :class:`FormatResult`. The formatter never damages a file: it refuses
(and returns the input unchanged) when the input has syntax errors (K0602) or when
its own output fails the safety net of :mod:`kera_core.fmt.check` (K0601). The style
is described in ``docs/formatting.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, Edit, Fix, error
from kera_core.fmt.check import check_output
from kera_core.fmt.doc import print_doc
from kera_core.fmt.rules import Formatter
from kera_core.source import Span, decode, utf8_len
from kera_core.stack import deep_recursion
from kera_core.syntax.parse import parse

__all__ = ["DEFAULT_WIDTH", "FormatResult", "check_formatted", "format_range", "format_text"]

DEFAULT_WIDTH = 100


@dataclass
class FormatResult:
    """What formatting produced.

    ``text`` is the whole resulting document (the input itself when refused);
    ``changed`` tells whether it differs from the input; ``edits`` turn the input into
    ``text`` (byte spans into the *input*, non-overlapping, in order); ``diagnostics``
    is empty on success and holds the reason for a refusal otherwise.
    """

    text: str
    changed: bool
    diagnostics: list[Diagnostic] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def refused(text: str, diag: Diagnostic) -> FormatResult:
    return FormatResult(text, False, [diag], [])


def syntax_refusal(diags: list[Diagnostic]) -> Diagnostic:
    first = next(d for d in diags if d.is_error)
    n = sum(1 for d in diags if d.is_error)
    more = f" and {n - 1} more" if n > 1 else ""
    return error(
        "K0602",
        first.span,
        f"formatter refused: the file has syntax errors ({first.code}: {first.message}{more})",
    )


def internal_error(exc: BaseException) -> Diagnostic:
    return error("K0901", Span(0, 0), f"formatter crashed: {type(exc).__name__}: {exc}")


def minimal_edit(old: str, new: str) -> Edit:
    """One edit that turns ``old`` into ``new``, trimmed to the part that differs."""
    n = min(len(old), len(new))
    i = 0
    while i < n and old[i] == new[i]:
        i += 1
    j = 0
    while j < n - i and old[len(old) - 1 - j] == new[len(new) - 1 - j]:
        j += 1
    start = utf8_len(old[:i])
    end = start + utf8_len(old[i : len(old) - j])
    return Edit(Span(start, end), new[i : len(new) - j])


def format_text(text: str | bytes, width: int = DEFAULT_WIDTH) -> FormatResult:
    """Format a whole file. The output uses ``\\n`` line endings and ends with exactly
    one newline (an empty file stays empty)."""
    text = decode(text)
    try:
        with deep_recursion(quiet_gc=True):
            p = parse(text)
            if p.has_errors:
                return refused(text, syntax_refusal(p.diagnostics))
            f = Formatter(p.green, text)
            out = print_doc(f.node(p.green, 0), width)
            out = out.rstrip("\n") + "\n" if out else ""
            if out == text:
                return FormatResult(text, False)
            diag, _ = check_output(p.green, out)
    except Exception as exc:  # never let a formatter bug take the editor down
        return refused(text, internal_error(exc))
    if diag is not None:
        return refused(text, diag)
    return FormatResult(out, True, [], [minimal_edit(text, out)])


def check_formatted(text: str | bytes, width: int = DEFAULT_WIDTH) -> list[Diagnostic]:
    """`kera fmt --check` as diagnostics: [] when formatted, a K0603 error spanning the
    first difference (with the formatting edit as its fix) when not, or the refusal."""
    r = format_text(text, width)
    if r.diagnostics or not r.changed:
        return r.diagnostics
    (edit,) = r.edits
    return [
        error(
            "K0603",
            edit.span,
            "file is not formatted: run `kera fmt`",
            fix=Fix("Format the file", (edit,)),
        )
    ]


from kera_core.fmt.range import format_range  # noqa: E402  (uses the helpers above)
