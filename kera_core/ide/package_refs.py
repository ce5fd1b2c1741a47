"""References and rename of a package's items across its files (language.md §3.4).

An item another file can see is a `pub` function, struct or constant; the name at the cursor names
one when it is that item's definition or a use of it in its own file, or when it was
imported (in a `use` or a use of the imported name). Its occurrences are, in its own
file, its definition and uses; in each importing file, the item's name in the `use` and,
where it is imported under its own name, every use of that name (an alias is the
importer's own name: renaming the item renames the `use`, not the alias's uses).
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ide.common import Symbol, all_uses, imported_origin, symbol_at
from kera_core.ide.navigation import RenameError, check_new_name
from kera_core.sema.package import ModuleResult, Package, declared
from kera_core.source import Span
from kera_core.workspace import Analysis, Document, Workspace


@dataclass(frozen=True)
class Target:
    kind: str  # fn | struct | const
    module: str
    name: str


def _analysis(r: ModuleResult) -> Analysis:
    return Analysis(r.unit.path, 0, r.unit.text, b"", r.parse, r.module, r.diagnostics)


def _target(a: Analysis, sym: Symbol, module: str) -> Target | None:
    if sym.kind not in ("fn", "struct", "const") or sym.def_span is None:
        return None
    imp = imported_origin(a, sym)
    if imp is not None:
        return Target(imp.kind, imp.module, imp.name)
    env = a.module.env if a.module is not None else None
    if env is None:
        return None
    if sym.kind == "fn":
        sig = env.fns.get(sym.name)
        ok = sig is not None and env.is_local(sym.name) and sig.name_span == sym.def_span
        return Target("fn", module, sym.name) if ok and sig.exported else None  # type: ignore[union-attr]
    item = declared(a.parse).get(sym.name) if a.parse is not None else None  # type: ignore[arg-type]
    pub = item is not None and item.kind == sym.kind and item.is_pub
    return Target(sym.kind, module, sym.name) if pub else None


def _def_span(r: ModuleResult, t: Target) -> Span | None:
    env = r.module.env
    if t.kind == "fn":
        sig = env.fns.get(t.name)
        return sig.name_span if sig is not None and env.is_local(t.name) else None
    if t.kind == "const":
        c = env.consts.get(t.name)
        return c.name_span if c is not None else None
    return env.struct_spans.get(t.name)


def _uses_of(a: Analysis, kind: str, local: str, def_span: Span) -> list[Span]:
    env = a.module.env  # type: ignore[union-attr]
    return [
        u.span
        for u in all_uses(a)
        if u.kind == kind and u.name == local and env.definition(u) == def_span
    ]


def _sorted(spans) -> list[Span]:
    return sorted(spans, key=lambda s: (s.start, s.end))


@dataclass(frozen=True)
class Occurrences:
    target: Target
    definition: tuple[str, Span]  # the item's name where it is defined
    by_path: dict[str, list[Span]]  # every occurrence, per file
    renamed: dict[str, list[Span]]  # what a rename replaces (an alias's uses stay)


def occurrences(ws: Workspace, doc: Document, offset: int) -> Occurrences | None:
    """The occurrences, in every file of its package, of the package item at ``offset``;
    None when the name there is not a `pub` item of a package (a file's own business)."""
    if doc.parse is None:
        return None
    a = doc.analysis()
    sym = symbol_at(a, offset)
    if sym is None:
        return None
    view = ws.packages.view(doc, ws.open_texts())
    if view is None or len(view.units) < 2 or not ws.packages.any_imports(view, doc.parse):
        return None  # no file imports anything: each is its own program
    pkg: Package = ws.packages.package(view, doc, doc.parse)
    here = _analysis(pkg.modules[view.module])
    sym = symbol_at(here, offset)
    t = _target(here, sym, view.module) if sym is not None else None
    if t is None or t.module not in pkg.modules:
        return None
    by_path: dict[str, list[Span]] = {}
    renamed: dict[str, list[Span]] = {}
    home = pkg.modules[t.module]
    def_span = _def_span(home, t)
    if def_span is None:
        return None
    ha = _analysis(home)
    spans = _sorted({def_span, *_uses_of(ha, t.kind, t.name, def_span)})
    by_path[home.unit.path] = renamed[home.unit.path] = spans
    for m, r in pkg.modules.items():
        if m == t.module:
            continue
        for req in r.requests:
            if req.module != t.module or req.item.name != t.name or req.item.kind != t.kind:
                continue
            ra = _analysis(r)
            local = _uses_of(ra, t.kind, req.local, req.use_span)
            found = _sorted({req.item_span, req.use_span, *local})
            by_path.setdefault(r.unit.path, []).extend(found)
            aliased = req.local != t.name
            renamed.setdefault(r.unit.path, []).extend([req.item_span] if aliased else found)
    return Occurrences(t, (home.unit.path, def_span), by_path, renamed)


def rename(
    ws: Workspace, doc: Document, offset: int, new_name: str
) -> dict[str, list[Span]] | None:
    """The spans to replace with ``new_name``, per file, to rename the package item at
    ``offset`` everywhere; None when it is not one (a file's own rename applies)."""
    occ = occurrences(ws, doc, offset)
    if occ is None:
        return None
    check_new_name(new_name)
    if new_name == occ.target.name:
        return {}
    view = ws.packages.view(doc, ws.open_texts())
    pkg = ws.packages.package(view, doc, doc.parse)  # type: ignore[arg-type]
    for path in occ.renamed:
        r = next(m for m in pkg.modules.values() if m.unit.path == path)
        env = r.module.env
        renames_locals = r.unit.module == occ.target.module or any(
            req.module == occ.target.module
            and req.item.name == occ.target.name
            and req.local == occ.target.name
            for req in r.requests
        )
        taken = (
            new_name in env.fns or new_name in env.structs or env.const_named(new_name) is not None
        )
        if renames_locals and taken:
            raise RenameError(f"`{new_name}` is already defined in module `{r.unit.module}`")
    return occ.renamed
