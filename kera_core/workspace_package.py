"""The package an open document belongs to, for the language server (language.md, "Modules").

A document with `use` declarations is analysed with the other files of its package: the
nearest directory above it with a `kera.toml`, else its own directory. Each of those
files is read from its open document when there is one (the editor's text wins) and from
disk otherwise (re-read only when its size or modification time changed); parses and
lowering caches are kept per file, so an edit re-lowers what changed only.

:meth:`PackageView.key` is what the document's analysis depends on besides its own text
(the other files' contents): the document re-analyses when a file it can see changes,
which is how a dependant's diagnostics follow an edit in the file it imports from.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from kera_core.diagnostics import Diagnostic
from kera_core.manifest import MANIFEST, ManifestError, module_name, package_files, read_manifest
from kera_core.sema import LoweringCache, Module
from kera_core.sema.package import Package, SourceUnit, analyze_package
from kera_core.source import decode, encode
from kera_core.syntax.parse import Parse, parse

if TYPE_CHECKING:
    from kera_core.workspace import Document

#: A package with more files than this is not analysed as one (each file is on its own).
MAX_PACKAGE_FILES = 200


def uri_path(uri: str) -> str | None:
    u = urlparse(uri)
    if u.scheme != "file":
        return None
    return unquote(u.path) if not u.netloc else f"//{u.netloc}{unquote(u.path)}"


def package_root(path: str) -> str:
    """The package directory of a file: the nearest one above it with a manifest, else
    the file's own directory."""
    d = os.path.dirname(os.path.abspath(path))
    here = d
    while True:
        if os.path.isfile(os.path.join(here, MANIFEST)):
            return here
        up = os.path.dirname(here)
        if up == here:
            return d
        here = up


@dataclass(frozen=True)
class PackageView:
    """A package as the workspace sees it now: its name, its files (open documents' text
    over the disk's), and which module the document asking is."""

    name: str
    root: str
    units: tuple[SourceUnit, ...]
    module: str

    def key(self, own: bytes) -> bytes:
        """The analysis key of the document: its own content hash and every other file's."""
        h = hashlib.sha256(own)
        for u in self.units:
            if u.module != self.module:
                h.update(encode(u.path) + b"\0" + hashlib.sha256(encode(u.text)).digest())
        return h.digest()


class Packages:
    """Disk texts, parses and lowering caches of the files of packages (not open ones)."""

    def __init__(self) -> None:
        self._disk: dict[str, tuple[tuple[int, int], str]] = {}  # path -> (stat key, text)
        self._parses: dict[str, tuple[str, Parse]] = {}  # path -> (text, parse)
        self.caches: dict[str, LoweringCache] = {}  # path -> cache

    def text_of(self, path: str) -> str | None:
        """A package file's text on disk (read again only when it changed)."""
        return self._read(path)

    def _read(self, path: str) -> str | None:
        try:
            st = os.stat(path)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        hit = self._disk.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            with open(path, "rb") as f:
                text = decode(f.read())
        except OSError:
            return None
        self._disk[path] = (stamp, text)
        return text

    def _parse(self, path: str, text: str) -> Parse:
        hit = self._parses.get(path)
        if hit is not None and hit[0] == text:
            return hit[1]
        p = parse(text)
        self._parses[path] = (text, p)
        return p

    def view(self, doc: Document, open_texts: dict[str, str]) -> PackageView | None:
        """The package of ``doc`` (None: not a file, or a package too large to analyse)."""
        path = uri_path(doc.uri)
        if path is None:
            return None
        path = os.path.abspath(path)
        root = package_root(path)
        name, src = os.path.basename(root), "."
        manifest = os.path.join(root, MANIFEST)
        if os.path.isfile(manifest):
            try:
                named, src = read_manifest(manifest)
            except ManifestError:
                named = None  # the CLI reports it; the editor still analyses the files
                src = "."
            name = named or name
        src_dir = os.path.normpath(os.path.join(root, src))
        rel = os.path.relpath(path, src_dir)
        if rel.startswith(".."):
            return None
        files = package_files(src_dir) if os.path.isdir(src_dir) else []
        if len(files) > MAX_PACKAGE_FILES:
            return None
        units = []
        for f in files:
            full = os.path.join(src_dir, f)
            if full == path:
                continue
            text = open_texts.get(full)
            if text is None:
                text = self._read(full)
            if text is not None:
                units.append(SourceUnit(module_name(f), full, text))
        units.append(SourceUnit(module_name(rel), path, doc.text))
        return PackageView(name, root, tuple(units), module_name(rel))

    def analyze(
        self, view: PackageView, doc: Document, p: Parse
    ) -> tuple[Module, list[Diagnostic]]:
        """``doc``'s module and diagnostics, analysed with the rest of its package."""
        r = self.package(view, doc, p).modules[view.module]
        return r.module, r.diagnostics

    def any_imports(self, view: PackageView, p: Parse) -> bool:
        """Does any file of the package have a `use` declaration?"""
        from kera_core.analysis import has_uses

        return has_uses(p) or any(
            has_uses(self._parse(u.path, u.text)) for u in view.units if u.module != view.module
        )

    def package(self, view: PackageView, doc: Document, p: Parse) -> Package:
        """The whole package of ``doc``, analysed (each file with its own cache)."""
        parses = {view.module: p}
        caches = {view.module: doc.cache}
        for u in view.units:
            if u.module != view.module:
                parses[u.module] = self._parse(u.path, u.text)
                caches[u.module] = self.caches.setdefault(u.path, LoweringCache())
        return analyze_package(view.name, view.units, caches, parses)
