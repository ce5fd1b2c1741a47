"""Open documents and what the toolchain knows about each of them, kept current edit by edit.

This is the language server's model of the world (DESIGN.md, "workspace"), with no
protocol in it: per document it holds the version and text, the :class:`Parse`
(updated by :func:`~kera_core.syntax.reparse.reparse`, so an edit relexes one token
or reparses one block), the lowered :class:`Module` (through a per-document
:class:`LoweringCache`, so an edit inside one function re-lowers that function and
its callers only), and the diagnostics of every stage — syntax, sema and ownership —
the same set :func:`kera_core.analysis.analyze` reports, computed incrementally.

An edit inside one item (a function's body or signature, a struct, a constant) is analysed
by :func:`~kera_core.sema.incremental.relower_module`, from the last analysis: that item and
what depends on it (callers whose shape changed, functions that name a changed signature,
struct or constant) are lowered and ownership-checked again, the module's diagnostics are
patched, and every other function's results stay where they are, made at their new
position only when read; any other edit lowers the module (the cache still skips the
functions whose text and what they name did not change).

Results are kept by content (the last few analyses, found by comparing their text
with the current one: no hash of the whole text on a keystroke), so undoing an edit,
reopening a file or saving it never recomputes anything. Ownership results are cached per
function too (by the identity of the function's lowering, which the lowering cache
reuses only when the function's text, the signatures it sees and its callees did not
change).

A document also remembers the *saved* state: the graph and function fingerprints
as of the last ``didOpen``/``didSave``, so hovers can say what is on disk and whether
the buffer has changed since.

Positions enter as (line, column) in one of the three LSP encodings and are turned
into byte offsets here, with :class:`~kera_core.source.LineIndex`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from functools import cached_property

from kera_core.analysis import has_uses
from kera_core.cancel import Abandoned, Watch, check
from kera_core.diagnostics import CODES, Diagnostic, Severity, error, reported
from kera_core.sema import LoweringCache, Module, lower_module
from kera_core.sema.env import FnSig
from kera_core.sema.incremental import Change as ModuleChange
from kera_core.sema.incremental import Touched, relower_module, without
from kera_core.sema.incremental import prepare as prepare_incremental
from kera_core.sema.incremental import sig_at as incremental_sig_at
from kera_core.sema.incremental import sigs_between as incremental_sigs_between
from kera_core.sema.lower import LoweredFn
from kera_core.sema.ownership import broken_by, check_function_guarded, parse_errors
from kera_core.source import LineIndex, Span, common_affixes, encode, slice_bytes, utf8_len
from kera_core.stack import deep_recursion
from kera_core.syntax.parse import Parse, parse
from kera_core.syntax.reparse import TextEdit, apply_edit, reparse
from kera_core.workspace_package import Packages, PackageView, package_root, uri_path

log = logging.getLogger(__name__)

#: Above this size a document is not parsed at all (a full parse runs at ~2 MB/s).
MAX_PARSE_BYTES = 10 * 1024 * 1024
#: Above this size a document is parsed but not lowered or checked (~0.3 MB/s cold; the
#: server reports a long analysis as progress, and abandons it for a newer version or
#: when the user cancels it: ``Document.analysis(watch=…)``).
MAX_SEMA_BYTES = 10 * 1024 * 1024
#: How many analysed versions of one document are kept, by content.
RECENT_VERSIONS = 4

_LIMIT_CODE = "K0902" if "K0902" in CODES else "K0901"

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


# --- positions ------------------------------------------------------------------------


def to_offset(index: LineIndex, line: int, col: int, encoding: str = UTF16) -> int:
    """An LSP position in ``encoding`` -> byte offset (clamped into the document)."""
    line = max(0, line)
    col = max(0, col)
    if encoding == UTF8:
        return index.from_utf8(line, col)
    if encoding == UTF32:
        if line >= index.line_count:
            return index.len_bytes
        text = index.line_text(line)
        return index.line_start(line) + utf8_len(text[:col])
    return index.from_utf16(line, col)


def to_position(index: LineIndex, offset: int, encoding: str = UTF16) -> tuple[int, int]:
    """Byte offset -> LSP (line, column) in ``encoding``."""
    if encoding == UTF8:
        return index.to_utf8(offset)
    if encoding == UTF32:
        return index.to_chars(offset)
    return index.to_utf16(offset)


def content_hash(text: str) -> bytes:
    """A key for analyses by content (in memory only, never stored): SHA-256, which the
    CPU computes in hardware, ~4× faster than SHA3 on a large file's every edit."""
    return hashlib.sha256(encode(text)).digest()


# --- results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One content change as an editor sends it: a range (``None`` = the whole text)."""

    text: str
    range: tuple[int, int, int, int] | None = None  # start line, start col, end line, end col


@dataclass(frozen=True)
class Saved:
    """What the document looked like at its last open/save, fingerprinted."""

    version: int
    content_hash: bytes
    fingerprint: bytes | None  # the graph hash; None if the text was not analysed
    functions: dict[str, bytes]  # function name -> function hash


@dataclass
class Analysis:
    """One version of one document seen through every stage. Never mutated once built."""

    uri: str
    version: int
    text: str
    _hash: bytes | None  # the text's content_hash, made when first asked (None: not yet)
    parse: Parse | None
    module: Module | None
    diagnostics: list[Diagnostic]
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds
    ownership: list[Diagnostic] | None = None  # the ownership checker's part of diagnostics

    @property
    def content_hash(self) -> bytes:
        """The text's :func:`content_hash` (made when first asked: not on a keystroke)."""
        if self._hash is None:
            self._hash = content_hash(self.text)
        return self._hash

    @cached_property
    def line_index(self) -> LineIndex:
        return LineIndex(self.text)

    @cached_property
    def _fn_starts(self) -> tuple[list[int], list[FnSig]]:
        sigs = (
            sorted(self.module.env.local_fns(), key=lambda s: s.span.start) if self.module else []
        )
        return [s.span.start for s in sigs], sigs

    def sig_at(self, offset: int) -> FnSig | None:
        """The function item whose span contains ``offset`` (its end included)."""
        if self.module is not None:
            found = incremental_sig_at(self.module, offset)
            if found is not False:
                return found  # type: ignore[return-value]
        starts, sigs = self._fn_starts
        i = bisect_right(starts, offset) - 1
        if i >= 0 and sigs[i].span.start <= offset <= sigs[i].span.end:
            return sigs[i]
        return None

    def sigs_between(self, lo: int, hi: int) -> list[FnSig]:
        """The functions (``env.fns``, in source order) whose items reach into ``lo..hi``,
        ends included: what a query over a screen of text looks at."""
        if self.module is None:
            return []
        found = incremental_sigs_between(self.module, lo, hi)
        if found is not None:
            return found
        return [s for s in self.module.env.local_fns() if s.span.end >= lo and s.span.start <= hi]

    def function_at(self, offset: int) -> LoweredFn | None:
        sig = self.sig_at(offset)
        if sig is None or self.module is None:
            return None
        return self.module.functions.get(sig.name)

    @property
    def fingerprint(self) -> bytes | None:
        return self.module.graph.fingerprint() if self.module is not None else None


class Document:
    """One open document. Not thread-safe: the server drives it from one worker thread."""

    def __init__(self, uri: str, text: str, version: int = 0) -> None:
        self.uri = uri
        self.version = version
        self.text = text
        self.cache = LoweringCache()
        self.parse: Parse | None = None
        self.parse_crash: str | None = None  # why the parser failed on this text, if it did
        self.reparses: dict[str, int] = dict.fromkeys(
            ("token", "block", "statements", "item", "full", "cached"), 0
        )
        # how each analysis lowered the module: one function redone, or the whole module
        self.lowerings: dict[str, int] = {"function": 0, "module": 0}
        self._saved: Saved | None = None
        # (version, content hash, text) of a save whose fingerprints are not made yet
        self._pending_save: tuple[int, bytes, str] | None = None
        self._index: LineIndex | None = None
        self._hash: bytes | None = None
        self._analysis: Analysis | None = None
        # the last analyses, oldest first, each with its package key (None: on its own),
        # found by their text (a string comparison, no hash of the text on a keystroke)
        self._recent: list[tuple[bytes | None, Analysis]] = []
        # the last analysis handed out that has a module: the next edit's starting point
        self._base: Analysis | None = None
        # ownership results by LoweredFn.shape: (where the function started, result, movable)
        self._ownership: dict[bytes, tuple[int, list[Diagnostic], bool]] = {}
        self._parse_time = 0.0
        # the workspace the document is open in: a document with `use` declarations is
        # analysed with the other files of its package (kera_core/workspace_package.py)
        self.workspace: Workspace | None = None
        self._analysis_key: bytes | None = None
        # does the parse have a `use` declaration? (None: not known yet) An edit reparsed
        # inside a token, a block or an item leaves the root's items of the same kinds, so
        # the answer is kept over those; a full parse or a cached one asks again
        self._uses: bool | None = None
        self._set_text(text, None)

    # --- text --------------------------------------------------------------------------
    @property
    def line_index(self) -> LineIndex:
        if self._index is None:
            self._index = LineIndex(self.text)
        return self._index

    @property
    def content_hash(self) -> bytes:
        if self._hash is None:
            self._hash = content_hash(self.text)
        return self._hash

    @property
    def size(self) -> int:
        """The text's length in bytes (from the line index when there is one: no encoding)."""
        if self._index is not None:
            return self._index.len_bytes
        return utf8_len(self.text)

    def apply_changes(self, version: int, changes: list[Change], encoding: str = UTF16) -> None:
        """Apply content changes in order; each range refers to the text the previous left."""
        for ch in changes:
            if ch.range is None:
                self.replace_text(ch.text)
                continue
            index = self.line_index
            sl, sc, el, ec = ch.range
            start = to_offset(index, sl, sc, encoding)
            end = to_offset(index, el, ec, encoding)
            if end < start:
                start, end = end, start
            self.edit(Span(start, end), ch.text)
        self.version = version

    def edit(self, span: Span, new_text: str) -> None:
        """Replace the bytes ``span`` of the current text."""
        edit = TextEdit(span, new_text)
        text = self.text
        old_index = self._index
        if text.isascii() and new_text.isascii():
            new_full = text[: span.start] + new_text + text[span.end :]
        elif (chars := _char_span(old_index, span, new_text)) is not None:
            new_full = text[: chars[0]] + new_text + text[chars[1] :]
        else:
            new_full = apply_edit(text, edit)
        # spliced, not rebuilt: the next change needs it at once (and it knows the size)
        index = None
        if old_index is not None:
            index = old_index.after_edit(span.start, span.end, new_text, new_full)
        self._set_text(new_full, edit, index)

    def replace_text(self, new_text: str) -> None:
        """Replace the whole text (a full-sync change), reparsing only what differs."""
        old = self.text
        if old == new_text:
            return
        pre, suf = common_affixes(old, new_text)
        start = utf8_len(old[:pre])
        end = start + utf8_len(old[pre : len(old) - suf])
        self._set_text(new_text, TextEdit(Span(start, end), new_text[pre : len(new_text) - suf]))

    def _set_text(self, text: str, edit: TextEdit | None, index: LineIndex | None = None) -> None:
        self.text = text
        self._index = index
        self._hash = None
        self._analysis = None
        hit = self._recent_hit()
        t0 = time.perf_counter()
        self.parse_crash = None
        uses, self._uses = self._uses, None
        if hit is not None and hit.parse is not None:
            self.parse = hit.parse
            self.reparses["cached"] += 1
        elif self.size > MAX_PARSE_BYTES:
            self.parse = None
        else:
            full = self.reparses["full"]
            self.parse = self._parse_guarded(text, edit)
            if self.parse is not None and self.reparses["full"] == full:
                self._uses = uses  # reparsed inside one token, block or item
        self._parse_time = time.perf_counter() - t0

    def _parse_guarded(self, text: str, edit: TextEdit | None) -> Parse | None:
        """The parse of `text`, incrementally from the last one when there is an edit. A parser
        bug must not lose the document: a failed reparse falls back to a full parse, and a
        failed full parse leaves no tree (``parse_crash`` says why; the analysis reports it as
        K0901), so the text is still the editor's and the next edit parses afresh."""
        if self.parse is not None and edit is not None:
            index = self._index  # the new text's (spliced), when there is one
            byte_slice = None
            if index is not None and index.strict and not text.isascii():

                def byte_slice(start: int, end: int) -> str:
                    cs, ce = index.byte_to_char(start), index.byte_to_char(end)
                    if index.char_to_byte(cs) != start or index.char_to_byte(ce) != end:
                        return slice_bytes(text, Span(start, end))  # inside a character
                    return text[cs:ce]

            try:
                new, strategy = reparse(self.parse, edit, new_text=text, byte_slice=byte_slice)
                self.reparses[strategy] += 1
                return new
            except Exception:
                log.exception("reparsing %s failed; parsing it afresh", self.uri)
        try:
            new = parse(text)
        except Exception as ex:
            log.exception("parsing %s failed", self.uri)
            self.parse_crash = f"{type(ex).__name__}: {ex}"
            return None
        self.reparses["full"] += 1
        return new

    # --- analysis ------------------------------------------------------------------------
    @property
    def has_uses(self) -> bool:
        """Does the text have a `use` declaration (and so belong to a package)?"""
        if self.parse is None:
            return False
        if self._uses is None:
            self._uses = has_uses(self.parse)
        return self._uses

    def package(self) -> PackageView | None:
        """The package this document is analysed in: when it has `use` declarations and is
        open in a workspace (else it is analysed on its own)."""
        if self.workspace is None or not self.has_uses:
            return None
        return self.workspace.package_view(self)

    def analysis(self, watch: Watch | None = None) -> Analysis:
        """The analysis of the current text (computed at most once per content, and per
        content of the other files of its package, for a document with imports).

        ``watch`` is asked between functions while lowering and checking ownership
        (kera_core/cancel.py); when it says stop, :class:`Abandoned` is raised and nothing
        is kept of this analysis but the lowering cache's complete entries."""
        view = self.package()
        key = view.key(self.content_hash) if view is not None else None
        a = self._analysis
        if a is not None and a.version == self.version and self._analysis_key == key:
            return a
        hit = self._recent_hit(key)
        if hit is not None:
            a = hit if hit.version == self.version else replace(hit, version=self.version)
            # the same text: the document's index (spliced) serves, not a new one built
            a.__dict__["line_index"] = self.line_index
        else:
            a = self._analyze(self._hash, view, watch)
            if not _failed(a.diagnostics):  # a failure is never remembered past this text
                self._recent.append((key, a))
                del self._recent[:-RECENT_VERSIONS]
        self._analysis = a
        self._analysis_key = key
        if a.module is not None and a.ownership is not None and not _failed(a.diagnostics):
            self._base = a  # (a failure is never carried over: the next text checks afresh)
        return a

    def _recent_hit(
        self, key: bytes | None | bool = False, text: str | None = None
    ) -> Analysis | None:
        """The last analysis of ``text`` (the current text by default) with package key
        ``key`` (any key: False), made the most recent one; None if there is none."""
        text = self.text if text is None else text
        for i, (k, a) in enumerate(self._recent):
            if (key is False or k == key) and (a.text is text or a.text == text):
                self._recent.append(self._recent.pop(i))
                return a
        return None

    @property
    def analysed(self) -> bool:
        """Is the current text's analysis made already (answered without work)?"""
        a = self._analysis
        return (a is not None and a.version == self.version) or self._recent_hit(None) is not None

    def syntax_analysis(self) -> Analysis:
        """The current analysis if there is one, else a view of the parse alone (no sema).

        For queries that only need the tree (folding, selection, outline) right after an
        edit, before the debounced analysis has run.
        """
        a = self._analysis
        if a is not None and a.version == self.version:
            return a
        if self.parse is None or self._recent_hit(None) is not None:
            return self.analysis()  # cached, or nothing to view but the reason (no sema runs)
        diags = list(self.parse.diagnostics) if self.parse is not None else []
        a = Analysis(self.uri, self.version, self.text, self._hash, self.parse, None, diags)
        a.__dict__["line_index"] = self.line_index
        return a

    def _analyze(
        self, h: bytes | None, view: PackageView | None = None, watch: Watch | None = None
    ) -> Analysis:
        timings = {"parse": self._parse_time}
        if view is not None and self.parse is not None and self.size <= MAX_SEMA_BYTES:
            return self._analyze_in_package(h, view, self.parse, timings)
        p = self.parse
        module: Module | None = None
        if p is None:
            if self.parse_crash is not None:
                diags = [
                    error("K0901", Span(0, 0), f"internal error in the parser: {self.parse_crash}")
                ]
            else:
                diags = [_limit_note(f"{self.size} bytes: too large to analyse", MAX_PARSE_BYTES)]
            return Analysis(self.uri, self.version, self.text, h, None, None, diags, timings)
        diags = list(p.diagnostics)
        own: list[Diagnostic] | None = None
        if self.size > MAX_SEMA_BYTES:
            diags.append(_limit_note(f"{self.size} bytes: only syntax is checked", MAX_SEMA_BYTES))
        else:
            t0 = time.perf_counter()
            change: ModuleChange | None = None
            base = self._base
            if base is not None and base.module is not None:
                try:  # one function's body changed: redo that function only
                    got = relower_module(base.module, p, self.cache)
                except Exception:
                    log.exception("incremental lowering of %s failed; lowering it all", self.uri)
                    got = None
                if got is not None:
                    module, change = got
                    self.lowerings["function"] += 1
            try:
                if module is None:
                    module = lower_module(p, self.cache, defer=True, watch=watch)
                    self.lowerings["module"] += 1
                    # the item tables the next edit starts from, made now (~1 % of the
                    # lowering) rather than on that keystroke
                    prepare_incremental(module)
            except Abandoned:
                raise
            except Exception as ex:  # a compiler bug must not take the editor down
                log.exception("lowering %s failed", self.uri)
                self.cache = LoweringCache()
                diags.append(
                    error("K0901", Span(0, 0), f"internal error in sema: {type(ex).__name__}: {ex}")
                )
            t1 = time.perf_counter()
            timings["lower"] = t1 - t0
            if module is not None:
                diags += module.diagnostics
                with deep_recursion(quiet_gc=True):  # no cyclic GC passes meanwhile
                    own = None
                    if change is not None and base is not None:
                        own = self._ownership_after(base, module, change, p)
                    if own is None:
                        own = self._check_ownership(module, p, watch)
                diags += own
                timings["ownership"] = time.perf_counter() - t1
        diags = reported(diags)
        a = Analysis(self.uri, self.version, self.text, h, p, module, diags, timings, own)
        a.__dict__["line_index"] = self.line_index  # share the document's (cached_property slot)
        return a

    def _analyze_in_package(
        self, h: bytes | None, view: PackageView, p: Parse, timings: dict[str, float]
    ) -> Analysis:
        """The analysis of a document with imports: its package's files lowered together
        (each with its own cache); no single-function shortcut (sema/incremental.py)."""
        assert self.workspace is not None
        t0 = time.perf_counter()
        module: Module | None = None
        try:
            module, diags = self.workspace.packages.analyze(view, self, p)
            self.lowerings["module"] += 1
        except Exception as ex:  # a compiler bug must not take the editor down
            log.exception("analysing the package of %s failed", self.uri)
            self.cache = LoweringCache()
            diags = reported(
                [
                    *p.diagnostics,
                    error(
                        "K0901", Span(0, 0), f"internal error in sema: {type(ex).__name__}: {ex}"
                    ),
                ]
            )
        timings["lower"] = time.perf_counter() - t0
        a = Analysis(self.uri, self.version, self.text, h, p, module, diags, timings, None)
        a.__dict__["line_index"] = self.line_index
        return a

    def _check_ownership(
        self, module: Module, p: Parse, watch: Watch | None = None
    ) -> list[Diagnostic]:
        """:func:`check_ownership`, reusing each function's result while its shape is the same.

        A function's ownership diagnostics depend on what its lowering's diagnostics, types
        and uses depend on (``LoweredFn.shape``: its text, the signatures it sees, which
        callees lowered), so a result is kept under that key and shifted when the function
        moves; a caller whose callee changed only its body is not checked again.
        """
        errors = parse_errors(p)
        out: list[Diagnostic] = []
        live: dict[bytes, tuple[int, list[Diagnostic], bool]] = {}
        total = len(module.functions)
        for k, (name, lf) in enumerate(module.functions.items()):
            check(watch, "ownership", k, total)
            span = lf.sig.span
            if not lf.lowers or broken_by(span, errors):
                continue
            res: list[Diagnostic] | None = None
            hit = self._ownership.get(lf.shape) if lf.shape else None
            if hit is not None:
                base, cached, movable = hit
                delta = span.start - base
                if not delta:
                    res = cached
                elif movable:
                    res = [d.shifted(delta) for d in cached]
            if res is None:
                res = check_function_guarded(module, name)
            movable = all(
                span.covers(d.span) and all(span.covers(r.span) for r in d.related) for d in res
            )
            if lf.shape and not _failed(res):  # the next analysis tries a failed check again
                live[lf.shape] = (span.start, res, movable)
            out += res
        self._ownership = live
        return out

    def _ownership_after(
        self, base: Analysis, module: Module, change: ModuleChange, p: Parse
    ) -> list[Diagnostic] | None:
        """The ownership diagnostics after ``change`` (one function redone, see
        sema/incremental.py): ``base``'s less the function's old result, the rest moved by
        the edit, plus its new result. None when that cannot be told apart (a result of
        another function reaching into it, or an old result no longer cached)."""
        if base.ownership is None or base.parse is None:
            return None
        if len(self._ownership) > 2 * len(module.functions) + 64:
            return None  # the full check prunes the cache
        cut = change.cut

        errors_before, errors = parse_errors(base.parse), parse_errors(p)
        gone: list[Diagnostic] = []
        for _, old, _ in change.lowered:
            if not old.lowers or broken_by(old.sig.span, errors_before):
                continue
            hit = self._ownership.get(old.shape) if old.shape else None
            if hit is None:
                return None
            at, res, movable = hit
            start = old.sig.span.start
            if at != start and not movable:
                return None
            gone += [d.shifted(start - at) for d in res] if at != start else res
        # a parse error reported in a function that did not change (one that ends the item
        # before it is reported at the next item's first token) skips or brings back its
        # check, as in the full check: then check them all (each result cached by shape)
        redone = {name for name, _, _ in change.lowered}
        if _broken(base.module, errors_before) - redone != _broken(module, errors) - redone:
            return None
        rest = without(base.ownership, gone)
        if rest is None:
            return None
        try:
            out = cut.diagnostics(rest)
        except Touched:  # another function's result reaches into one checked again
            return None
        for name, _, lf in change.lowered:
            span = lf.sig.span
            if not lf.lowers or broken_by(span, errors):
                continue
            res: list[Diagnostic] | None = None
            hit = self._ownership.get(lf.shape) if lf.shape else None
            if hit is not None:
                at, cached, movable = hit
                if at == span.start:
                    res = cached
                elif movable:
                    res = [d.shifted(span.start - at) for d in cached]
            elif getattr(lf, "ownership_from", None) is not None:
                res = _ownership_moved(self._ownership, *lf.ownership_from)
            if res is None:
                res = check_function_guarded(module, name)
            movable = all(
                span.covers(d.span) and all(span.covers(r.span) for r in d.related) for d in res
            )
            if lf.shape and not _failed(res):
                self._ownership[lf.shape] = (span.start, res, movable)
            out += res
        return out

    # --- save state ----------------------------------------------------------------------------
    def mark_saved(self, lazy: bool = False) -> Saved | None:
        """Take the current text as the saved one. Its fingerprints are made now, or with
        ``lazy`` when :attr:`saved` is first read (the server's open and save: the first
        diagnostics do not wait for the graph, and an analysis abandoned meanwhile is not
        forced to its end)."""
        self._saved = None
        self._pending_save = (self.version, self.content_hash, self.text)
        return None if lazy else self.saved

    @property
    def saved(self) -> Saved | None:
        """What the document looked like at its last open/save, fingerprinted."""
        if self._pending_save is not None:
            version, h, text = self._pending_save
            if text == self.text:
                a = self.analysis()
            elif (hit := self._recent_hit(None, text)) is not None:
                a = hit
            else:  # analysed away: the saved text on its own
                a = Document(self.uri, text, version).analysis()
            fns = {}
            if a.module is not None:
                fns = {name: f.hash for name, f in a.module.graph.functions.items()}
            self._saved = Saved(version, h, a.fingerprint, fns)
            self._pending_save = None
        return self._saved

    @property
    def changed_since_save(self) -> bool:
        if self._pending_save is not None:
            return self._pending_save[1] != self.content_hash
        return self._saved is None or self._saved.content_hash != self.content_hash


#: A small program that reaches every stage of an analysis, constants in a dimension (their
#: evaluation loads the interpreter and numpy) and a struct included: see :func:`warm_up`.
_WARM_UP = """const LANES: i64 = 2 * 2;
struct Pair { lo: f32, hi: f32 }
fn spread(p: Pair) -> f32 { p.hi - p.lo }
pub fn warm[N](x: &f32[N], out: &mut f32[LANES]) -> f32 {
    let mut s: f32 = 0.0;
    for i in 0..N { if x[i] > 0.0 { s = s + x[i]; } else { s = s - 1.0; } }
    for j in 0..LANES { out[j] = s; }
    s + spread(Pair { lo: 0.0, hi: 1.0 })
}
"""


def warm_up() -> None:
    """Analyse a small program once, so that what an analysis loads on first use (the
    interpreter and numpy, which evaluate constant expressions — `LANES` is one, a literal
    constant is read off its node; the lazily imported stages) is loaded
    before the first real document arrives. The language server runs it on its worker as
    it starts (``kera_lsp.run``): ~0.1 s of CPU that a fresh server's first open would
    otherwise pay. Nothing of it is kept (its document is discarded)."""
    Document("kera:warm-up", _WARM_UP).analysis()


def _char_span(index: LineIndex | None, span: Span, inserted: str) -> tuple[int, int] | None:
    """``span``'s ends as indices into the text, where replacing characters there is
    replacing those bytes (both ends on character boundaries of strict UTF-8, and the
    inserted text strict UTF-8 too); None where only the byte-level splice is exact."""
    if index is None or not index.strict:
        return None
    try:
        inserted.encode("utf-8")
    except UnicodeEncodeError:
        return None
    cs, ce = index.byte_to_char(span.start), index.byte_to_char(span.end)
    if index.char_to_byte(cs) != span.start or index.char_to_byte(ce) != span.end:
        return None
    return cs, ce


def _broken(module: Module | None, errors: list[Span]) -> set[str]:
    """The functions whose ownership is not checked for the parse errors at ``errors``
    (:func:`~kera_core.sema.ownership.broken_by`), each error's function found by position."""
    out: set[str] = set()
    if module is None:
        return out
    for s in errors:
        sig = incremental_sig_at(module, s.start)
        if sig is False:  # no item table: ask every function
            cands = [lf.sig for lf in module.functions.values()]
        else:
            cands = [] if sig is None else [sig]
        for sig in cands:
            lf = module.functions.get(sig.name)
            if lf is not None and broken_by(lf.sig.span, (s,)):
                out.add(sig.name)
    return out


def _ownership_moved(results: dict, shape: bytes, base: int, cut) -> list[Diagnostic] | None:
    """The ownership result of a long body edited in number literals only, with the same
    expression types (sema/body_reuse.py ``ownership_from``): the checker's input is the
    old one's moved by the edit, so its result is the old one moved (None: check it)."""
    hit = results.get(shape)
    if hit is None or hit[0] != base:
        return None
    try:
        return cut.diagnostics(hit[1])
    except Touched:
        return None


def _failed(diags: list[Diagnostic]) -> bool:
    """Does a result hold an internal error (K0901)? Such a result is not cached, so the next
    edit (or the same text again) recovers from a failure instead of replaying it."""
    return any(d.code == "K0901" for d in diags)


def _limit_note(what: str, limit: int) -> Diagnostic:
    return Diagnostic(
        _LIMIT_CODE,
        Severity.INFO,
        Span(0, 0),
        f"analysis skipped: {what} (the limit is {limit} bytes)",
    )


class Workspace:
    """The open documents, by URI."""

    def __init__(self) -> None:
        self.documents: dict[str, Document] = {}
        self.packages = Packages()  # the files of packages that are not open

    def open(self, uri: str, text: str, version: int = 0) -> Document:
        doc = Document(uri, text, version)
        doc.workspace = self
        self.documents[uri] = doc
        return doc

    def open_texts(self) -> dict[str, str]:
        """The texts of the open documents that are files, by absolute path."""
        out = {}
        for d in self.documents.values():
            path = uri_path(d.uri)
            if path is not None:
                out[os.path.abspath(path)] = d.text
        return out

    def package_view(self, doc: Document) -> PackageView | None:
        """``doc``'s package, its open documents' texts taking precedence over the disk."""
        return self.packages.view(doc, self.open_texts())

    def locate(self, path: str) -> tuple[str, LineIndex] | None:
        """A package file's URI and line index (its open document's, else the disk's):
        where a location in another file (a related note, a definition) is placed."""
        from kera_core.ide.workspace_index import path_to_uri

        uri = path_to_uri(path)
        for d in self.documents.values():
            p = uri_path(d.uri)
            if p is not None and os.path.abspath(p) == os.path.abspath(path):
                return d.uri, d.line_index
        text = self.packages.text_of(path)
        return None if text is None else (uri, LineIndex(text))

    def dependants(self, uri: str) -> list[Document]:
        """The other open documents whose analysis can see ``uri``'s file: those with
        imports in the same package directory (what to re-check when it changes)."""
        path = uri_path(uri)
        if path is None:
            return []
        root = package_root(os.path.abspath(path))
        out = []
        for d in self.documents.values():
            if d.uri == uri or not d.has_uses:
                continue
            p = uri_path(d.uri)
            if p is not None and package_root(os.path.abspath(p)) == root:
                out.append(d)
        return out

    def close(self, uri: str) -> None:
        self.documents.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        return self.documents.get(uri)

    def change(
        self, uri: str, version: int, changes: list[Change], encoding: str = UTF16
    ) -> Document | None:
        doc = self.documents.get(uri)
        if doc is not None:
            doc.apply_changes(version, changes, encoding)
        return doc

    def analysis(self, uri: str) -> Analysis | None:
        doc = self.documents.get(uri)
        return doc.analysis() if doc is not None else None
