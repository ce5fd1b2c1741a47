"""Packages on the command line: `kera check/build/run/graph/fingerprint` take a
directory or a `kera.toml` as well as a file, and `kera parse/fmt` every file of one
(language.md, "Modules")."""

from __future__ import annotations

import sys

from kera_core.cli.inputs import UsageError
from kera_core.diagnostics import render
from kera_core.source import LineIndex


def load(path: str):
    """The analysed package at ``path`` (a :class:`~kera_core.sema.package.Package`)."""
    from kera_core.manifest import ManifestError, load_package
    from kera_core.sema.package import analyze_package

    try:
        src = load_package(path)
    except ManifestError as e:
        raise UsageError(str(e)) from None
    return analyze_package(src.name, src.units)


def files_of(paths: list[str]) -> list[str]:
    """``paths`` with each package (a directory or a `kera.toml`) replaced by its `.kera`
    files, in module order; a file (or `-`, stdin) stays as it is."""
    from kera_core.manifest import ManifestError, is_package_path, load_package

    out: list[str] = []
    for path in paths:
        if path == "-" or not is_package_path(path):
            out.append(path)
            continue
        try:
            out += [u.path for u in load_package(path).units]
        except ManifestError as e:
            raise UsageError(str(e)) from None
    return out


def print_diagnostics(pkg) -> None:
    """Every file's diagnostics, each under its own path; a note in another file is shown
    from that file."""
    sources = pkg.sources()
    for m in pkg.modules.values():
        index = LineIndex(m.unit.text)
        for d in m.diagnostics:
            print(render(d, m.unit.text, m.unit.path, index, sources), file=sys.stderr)
            print(file=sys.stderr)


def error_count(pkg) -> int:
    return sum(d.is_error for m in pkg.modules.values() for d in m.diagnostics)


def locate(pkg, node: bytes) -> str:
    """` at path:line:col` of a graph node (the first span provenance has for it)."""
    for name, fp in pkg.provenance.functions.items():
        spans = fp.absolute(node)
        m = pkg.file_of(name)
        if spans and m is not None:
            line, col = LineIndex(m.unit.text).to_chars(spans[0].start)
            return f" at {m.unit.path}:{line + 1}:{col + 1}"
    return ""
