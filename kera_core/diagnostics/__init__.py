"""Diagnostics: one type for every stage, rendered for terminals and as JSON."""

from kera_core.diagnostics.codes import CODES
from kera_core.diagnostics.diagnostic import (
    Diagnostic,
    Edit,
    Fix,
    Related,
    Severity,
    error,
    quoted,
    reported,
    sort_key,
    warning,
)
from kera_core.diagnostics.render import render, render_json

__all__ = [
    "CODES",
    "Diagnostic",
    "Edit",
    "Fix",
    "Related",
    "Severity",
    "error",
    "quoted",
    "reported",
    "warning",
    "render",
    "render_json",
    "sort_key",
]
