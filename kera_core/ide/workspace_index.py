"""The workspace index: the top-level symbols of every ``.kera`` file under the workspace
folders, open or not, for ``workspace/symbol`` (and, once Kera has modules, for finding the
files that can see an item).

Per file it keeps a symbol table — functions (with their signature), structs and their
fields, constants: name, kind, container, detail, the item's and the name's spans and their
positions. A file on disk is read and parsed (its outline is taken from the tree); a file
above :data:`FULL_PARSE_BYTES` gets a cheap line-based outline instead, and one above
:data:`MAX_FILE_BYTES` is left out. An **open** document takes precedence over the file on
disk: its symbols come from the document's current analysis (:meth:`WorkspaceIndex.open_entry`).

Thread-safety: the disk table is written by the indexing thread and read by the worker;
each access takes the lock and readers work on a snapshot. Nothing here knows LSP: positions
are ``(line, column)`` pairs in the encoding given to the index.

Name resolution: a file's items are visible from that file, and its `pub` items from the files
of its package that import them (language.md §3.4); references and rename of those follow the
imports (``kera_core/ide/package_refs.py``), not names: a function of the same name in another
file is another function. :meth:`WorkspaceIndex.files_seeing` (the call hierarchy's question)
still answers the file itself.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from kera_core.source import LineIndex, Span, encode
from kera_core.syntax import ast
from kera_core.syntax.parse import parse
from kera_core.workspace import Analysis, content_hash, to_position

#: Directories never scanned (besides every directory whose name starts with a dot).
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
#: Above this size a file is indexed by the line-based outline, not parsed.
FULL_PARSE_BYTES = 256 * 1024
#: Above this size a file is not indexed at all.
MAX_FILE_BYTES = 4 * 1024 * 1024
#: At most this many files are indexed (the scan stops there).
MAX_FILES = 20_000
#: ``workspace/symbol`` answers at most this many symbols.
MAX_RESULTS = 200

Pos = tuple[int, int]


@dataclass(frozen=True)
class IndexedSymbol:
    name: str
    kind: str  # function | struct | field | const
    uri: str
    span: Span  # the whole item
    name_span: Span
    start: Pos  # of ``span``, in the index's encoding
    end: Pos
    name_start: Pos
    name_end: Pos
    detail: str = ""  # a function's signature, a field's or a constant's type
    container: str = ""  # the struct of a field


@dataclass(frozen=True)
class FileEntry:
    uri: str
    content_hash: bytes
    symbols: tuple[IndexedSymbol, ...]
    outline_only: bool = False  # too large to parse: line-based outline
    mtime_ns: int = 0
    size: int = 0
    with_sema: bool = False  # an open document's entry, taken after sema had run


# --- paths and URIs ------------------------------------------------------------------------


def path_to_uri(path: str | Path) -> str:
    return Path(os.path.abspath(path)).as_uri()


def uri_to_path(uri: str) -> str | None:
    u = urlparse(uri)
    if u.scheme != "file":
        return None
    return unquote(u.path) if not u.netloc else f"//{u.netloc}{unquote(u.path)}"


def normal_uri(uri: str) -> str:
    """``uri`` spelled the way :func:`path_to_uri` spells it (clients differ in escaping)."""
    path = uri_to_path(uri)
    return path_to_uri(path) if path else uri


def scan(roots: Iterable[str | Path], limit: int = MAX_FILES) -> Iterator[Path]:
    """Every ``*.kera`` file under ``roots`` (no hidden or dependency directories; symlinked
    directories are not followed), at most ``limit``."""
    seen: set[str] = set()
    n = 0
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS
            )
            for f in sorted(filenames):
                if not f.endswith(".kera"):
                    continue
                p = os.path.join(dirpath, f)
                if p in seen:
                    continue
                seen.add(p)
                yield Path(p)
                n += 1
                if n >= limit:
                    return


# --- one file's symbols ----------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Positions:
    def __init__(self, text: str, encoding: str) -> None:
        self.index = LineIndex(text)
        self.encoding = encoding

    def __call__(self, offset: int) -> Pos:
        return to_position(self.index, offset, self.encoding)


def _symbol(pos: _Positions, uri: str, name: str, kind: str, span: Span, name_span: Span, **kw):
    return IndexedSymbol(
        name,
        kind,
        uri,
        span,
        name_span,
        pos(span.start),
        pos(span.end),
        pos(name_span.start),
        pos(name_span.end),
        **kw,
    )


def _fn_header(fn: ast.Fn) -> str:
    """The function's signature as written (up to its body), on one line."""
    body = fn.body
    text = str(fn.syntax)
    start = fn.span.start
    cut = body.span.start - start if body is not None else len(encode(text))
    head = encode(text)[:cut].decode("utf-8", "replace")
    lines = [ln for ln in head.splitlines() if not ln.lstrip().startswith("//")]
    return _one_line("\n".join(lines))


def symbols_of_tree(tree, uri: str, pos: _Positions, details: dict | None = None):
    """``details``: function name -> (the function's span, its signature from sema)."""
    out: list[IndexedSymbol] = []
    for item in ast.SourceFile(tree).items:
        name = item.name
        if name is None or not name.text:
            continue
        if isinstance(item, ast.Fn):
            known = (details or {}).get(name.text)
            detail = known[1] if known and known[0] == item.span else _fn_header(item)
            out.append(
                _symbol(pos, uri, name.text, "function", item.span, name.span, detail=detail)
            )
        elif isinstance(item, ast.Struct):
            out.append(_symbol(pos, uri, name.text, "struct", item.span, name.span))
            for f in item.fields:
                if f.name is not None and f.name.text:
                    ty = _one_line(str(f.type.syntax)) if f.type is not None else ""
                    out.append(
                        _symbol(
                            pos,
                            uri,
                            f.name.text,
                            "field",
                            f.span,
                            f.name.span,
                            detail=ty,
                            container=name.text,
                        )
                    )
        elif isinstance(item, ast.Const):
            ty = _one_line(str(item.type.syntax)) if item.type is not None else ""
            out.append(_symbol(pos, uri, name.text, "const", item.span, name.span, detail=ty))
    return out


_OUTLINE = re.compile(
    rb"^[ \t]*(?:pub[ \t]+)?(fn|struct|const)[ \t]+([A-Za-z_][A-Za-z0-9_]*)[^\n]*", re.M
)
_OUTLINE_KIND = {b"fn": "function", b"struct": "struct", b"const": "const"}


def outline_symbols(text: str, uri: str, pos: _Positions) -> list[IndexedSymbol]:
    """The cheap outline of a file too large to parse: item headers found line by line."""
    data = encode(text)
    out = []
    for m in _OUTLINE.finditer(data):
        line = m.group(0).decode("utf-8", "replace")
        kind = _OUTLINE_KIND[m.group(1)]
        detail = _one_line(line.split("{", 1)[0]) if kind == "function" else ""
        span = Span(m.start() + len(line) - len(line.lstrip()), m.end())
        name_span = Span(m.start(2), m.end(2))
        out.append(
            _symbol(pos, uri, m.group(2).decode(), kind, span, name_span, detail=detail.strip())
        )
    return out


def index_text(uri: str, text: str, encoding: str, mtime_ns: int = 0) -> FileEntry:
    """The symbol table of one file's text."""
    size = len(encode(text))
    pos = _Positions(text, encoding)
    if size > FULL_PARSE_BYTES:
        syms = outline_symbols(text, uri, pos)
        return FileEntry(uri, content_hash(text), tuple(syms), True, mtime_ns, size)
    syms = symbols_of_tree(parse(text).tree, uri, pos)
    return FileEntry(uri, content_hash(text), tuple(syms), False, mtime_ns, size)


def index_analysis(a: Analysis, encoding: str) -> FileEntry:
    """The symbol table of an open document (signatures from sema when it has run)."""
    if a.parse is None:
        pos = _Positions(a.text, encoding)
        return FileEntry(a.uri, a.content_hash, tuple(outline_symbols(a.text, a.uri, pos)), True)
    details = {}
    if a.module is not None:
        from kera_core.ide.hover import signature_text

        details = {s.name: (s.span, signature_text(s)) for s in a.module.env.local_fns()}
    pos = _Positions(a.text, encoding)
    pos.index = a.line_index
    syms = symbols_of_tree(a.parse.tree, a.uri, pos, details)
    return FileEntry(a.uri, a.content_hash, tuple(syms), with_sema=a.module is not None)


# --- matching ------------------------------------------------------------------------------


def match_score(query: str, name: str) -> int | None:
    """How well ``name`` matches ``query`` (lower is better), or None: exact, exact but for
    case, prefix, case-insensitive prefix, substring, then a subsequence (fuzzy, by how
    spread out the matched characters are)."""
    if not query:
        return 50
    if name == query:
        return 0
    low, q = name.lower(), query.lower()
    if low == q:
        return 1
    if name.startswith(query):
        return 2
    if low.startswith(q):
        return 3
    i = low.find(q)
    if i >= 0:
        return 10 + min(i, 20)
    # subsequence: every query character in order; penalise gaps
    at, gaps = -1, 0
    for ch in q:
        j = low.find(ch, at + 1)
        if j < 0:
            return None
        gaps += j - at - 1 if at >= 0 else 0
        at = j
    return 40 + min(gaps, 200)


_KIND_RANK = {"function": 0, "struct": 1, "const": 2, "field": 3}


def search(entries: Iterable[FileEntry], query: str, limit: int = MAX_RESULTS):
    """The symbols of ``entries`` matching ``query``, best first, at most ``limit``."""
    query = query.strip()
    scored = []
    for e in entries:
        for s in e.symbols:
            sc = match_score(query, s.name)
            if sc is not None:
                scored.append((sc, len(s.name), _KIND_RANK.get(s.kind, 9), s.uri, s.span.start, s))
    scored.sort(key=lambda t: t[:5])
    return [t[-1] for t in scored[:limit]]


# --- the index -----------------------------------------------------------------------------


class WorkspaceIndex:
    """Symbol tables of the workspace's files: on disk (indexed in the background) and open
    (taken from their analyses, preferred to the disk's)."""

    def __init__(self, encoding: str = "utf-16") -> None:
        self.encoding = encoding
        self.roots: list[str] = []
        self._disk: dict[str, FileEntry] = {}
        self._open: dict[str, FileEntry] = {}
        self._lock = threading.Lock()
        self.scanned = False  # the first scan has finished

    # --- disk -------------------------------------------------------------------------
    def index_path(self, path: str | Path) -> FileEntry | None:
        """(Re)index one file from disk; a file that is gone, unreadable or too large is
        dropped. Unchanged files (same mtime and size) are not read again."""
        uri = path_to_uri(path)
        try:
            st = os.stat(path)
        except OSError:
            self.remove(uri)
            return None
        if st.st_size > MAX_FILE_BYTES or not os.path.isfile(path):
            self.remove(uri)
            return None
        with self._lock:
            old = self._disk.get(uri)
        if old is not None and old.mtime_ns == st.st_mtime_ns and old.size == st.st_size:
            return old
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        except OSError:
            self.remove(uri)
            return None
        text = data.decode("utf-8", "surrogateescape")
        entry = index_text(uri, text, self.encoding, st.st_mtime_ns)
        entry = FileEntry(
            uri, entry.content_hash, entry.symbols, entry.outline_only, st.st_mtime_ns, len(data)
        )
        with self._lock:
            self._disk[uri] = entry
        return entry

    def remove(self, uri: str) -> None:
        """Forget a file, or every file under a directory, that was deleted."""
        uri = normal_uri(uri)
        prefix = uri.rstrip("/") + "/"
        with self._lock:
            for u in [u for u in self._disk if u == uri or u.startswith(prefix)]:
                del self._disk[u]

    def in_roots(self, path: str) -> bool:
        p = os.path.abspath(path)
        parts = Path(p).parts
        if any(part.startswith(".") or part in SKIP_DIRS for part in parts[1:-1]):
            return False
        return any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots)

    # --- open documents ----------------------------------------------------------------------
    def open_entry(self, a: Analysis) -> FileEntry:
        """The entry of an open document's current text (recomputed when the text changed,
        or when sema has run since the entry was taken from the tree alone)."""
        uri = normal_uri(a.uri)
        with self._lock:
            old = self._open.get(uri)
        if old is not None and old.content_hash == a.content_hash:
            if a.module is None or old.with_sema:
                return old
        entry = index_analysis(a, self.encoding)
        with self._lock:
            self._open[uri] = entry
        return entry

    def close(self, uri: str) -> None:
        with self._lock:
            self._open.pop(normal_uri(uri), None)

    def disk_entries(self) -> dict[str, FileEntry]:
        with self._lock:
            return dict(self._disk)

    def entries(self, open_analyses: Iterable[Analysis]) -> list[FileEntry]:
        """Every file's entry: the open documents' own, then the disk's for the others."""
        out = {}
        for a in open_analyses:
            e = self.open_entry(a)
            out[normal_uri(a.uri)] = e
        with self._lock:  # forget the entries of documents closed since
            for u in [u for u in self._open if u not in out]:
                del self._open[u]
        for uri, e in self.disk_entries().items():
            out.setdefault(uri, e)
        return list(out.values())

    def files_seeing(self, uri: str) -> list[str]:
        """The files whose names can resolve to the items of ``uri``. Kera has no imports
        yet: only ``uri`` itself. References, rename and incoming calls ask this, so they
        will follow imports when modules exist."""
        return [uri]
