"""The call hierarchy across the files of a package (language.md §3.4).

A function is named by the file that defines it and its name there. Its callers are, in
its own file, the functions that call it, and in every file that imports it, the
functions that call it under the name it is imported as (an alias included); the callee
of a call to an imported function is that function, in its own file. The single-file
queries are :mod:`kera_core.ide.calls`; this module maps names across files.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from kera_core.ide import calls
from kera_core.ide.workspace_index import path_to_uri
from kera_core.sema.env import FnSig
from kera_core.sema.package import ModuleResult, Package
from kera_core.source import Span
from kera_core.workspace import Analysis, Document, Workspace, uri_path


@dataclass(frozen=True)
class Site:
    """A function of a package file (``sig`` in that file's coordinates) and, for a
    caller, where it names the callee."""

    path: str
    sig: FnSig
    spans: tuple[Span, ...] = ()


def home_of(a: Analysis, name: str) -> tuple[str, FnSig] | None:
    """The file and signature of ``name`` as its own file has it, when ``name`` is an
    imported function of ``a``'s file (its signature's spans are in that file)."""
    if a.module is None:
        return None
    imp = a.module.env.origin("fn", name)
    sig = a.module.env.fns.get(name)
    if imp is None or sig is None:
        return None
    return imp.path, dataclasses.replace(sig, name=imp.name)


def package_of(ws: Workspace, path: str) -> Package | None:
    """The analysed package of the file at ``path`` (open or on disk); None when the file
    is not part of a package whose files import from each other."""
    path = os.path.abspath(path)
    doc = next(
        (d for d in ws.documents.values() if (p := uri_path(d.uri)) and os.path.abspath(p) == path),
        None,
    )
    if doc is None:
        text = ws.packages.text_of(path)
        if text is None:
            return None
        doc = Document(path_to_uri(path), text)
    if doc.parse is None:
        return None
    view = ws.packages.view(doc, ws.open_texts())
    if view is None or len(view.units) < 2 or not ws.packages.any_imports(view, doc.parse):
        return None
    return ws.packages.package(view, doc, doc.parse)


def _analysis(r: ModuleResult) -> Analysis:
    return Analysis(r.unit.path, 0, r.unit.text, b"", r.parse, r.module, r.diagnostics)


def analysis_of(pkg: Package, path: str) -> Analysis | None:
    """The analysis of the package file at ``path`` (one not open in the editor)."""
    path = os.path.abspath(path)
    r = next((r for r in pkg.modules.values() if os.path.abspath(r.unit.path) == path), None)
    return None if r is None else _analysis(r)


def callers(pkg: Package, path: str, name: str) -> list[Site]:
    """Every function of the package that calls function ``name`` of the file at
    ``path``, with the spans of those calls: its own file's first, then each importing
    file's, in module order."""
    path = os.path.abspath(path)
    home = next((r for r in pkg.modules.values() if os.path.abspath(r.unit.path) == path), None)
    if home is None:
        return []
    out: list[Site] = []

    def add(r: ModuleResult, local: str) -> None:
        for caller, spans in calls.incoming(_analysis(r), local).items():
            out.append(Site(r.unit.path, r.module.env.fns[caller], tuple(spans)))

    add(home, name)
    for r in pkg.modules.values():
        if r is home:
            continue
        for req in r.requests:
            if req.module == home.unit.module and req.item.name == name and req.item.kind == "fn":
                add(r, req.local)
    return out
