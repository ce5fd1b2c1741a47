"""A package: several files, one module each, checked and lowered together.

A file is a module (`linalg.kera` is `linalg`, `a/b.kera` is `a::b`); `use a::b::{f, g as h};`
brings items of another module into a file (language.md, "Modules"). Each file is lowered
on its own by :func:`~kera_core.sema.module.lower_module`, in its own coordinates (spans,
diagnostics, caches), with the items it imports given to it already lowered: a call to an
imported function names the callee's hash, exactly as a call within a file does, so a
function's hash depends on what it calls and never on which file it is in or the name it
is imported under. An imported constant is inlined where it is used, as a constant of the
file is (its initializer lowered with its own module's names), so it is no different.

Files are lowered dependencies first. Modules that import each other (a cycle of
modules) are lowered together until nothing changes: each pass sees the functions the
previous one finished, so it takes as many passes as calls cross between them, plus one.
Functions that call each other across files form a recursive component across files
(docs/graph.md "Recursion"): after each pass the package lowers it as one unit, each member
in its own file's environment, and hands the members' lowerings to their files for the next
pass, so they hash exactly as if they were in one file. Cycles of constants across files are
reported here (K0315), those within a file by the file's own lowering.

The package's graph holds every file's functions: a `pub` function under its own name (the
package's interface: `kera run --entry`, the fingerprint), a private one under
`module::name`, so two files may each have a helper of the same name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, Related, error, reported
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function
from kera_core.ir.provenance import Provenance
from kera_core.sema.borrow import check_ownership
from kera_core.sema.consts import constant_digest
from kera_core.sema.env import Imported, ImportedConst, Imports, did_you_mean, instance_name
from kera_core.sema.lower import LoweredFn
from kera_core.sema.module import (
    LoweringCache,
    Member,
    Module,
    component_key,
    instances_of,
    lower_component,
    lower_module,
)
from kera_core.source import Span
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.parse import Parse, parse


@dataclass(frozen=True)
class SourceUnit:
    """One file of a package: its module name, the path diagnostics show, its text."""

    module: str
    path: str
    text: str


@dataclass(frozen=True)
class Declared:
    """An item a file defines, as `use` sees it (read off the syntax tree)."""

    kind: str  # "fn" | "struct" | "const"
    name: str
    is_pub: bool
    span: Span  # the item's name


@dataclass(frozen=True)
class Request:
    """One resolved `use` tree: ``local`` in the importing file is ``item`` of ``module``."""

    module: str
    item: Declared
    local: str
    use_span: Span  # the local name in the `use` (the alias, or the item's name)
    item_span: Span  # the item's name in the `use` (the same as ``use_span`` without `as`)


@dataclass
class ModuleResult:
    """One file of a package, analysed."""

    unit: SourceUnit
    parse: Parse
    module: Module
    imports: Imports
    requests: list[Request]
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


class Package:
    """Every file of a package, analysed, and (when read) the package's graph."""

    def __init__(self, name: str, modules: dict[str, ModuleResult]) -> None:
        self.name = name
        self.modules = modules  # by module name, dependencies first
        self._graph: tuple[Graph, Provenance] | None = None

    @property
    def has_errors(self) -> bool:
        return any(m.has_errors for m in self.modules.values())

    def by_path(self, path: str) -> ModuleResult | None:
        return next((m for m in self.modules.values() if m.unit.path == path), None)

    def sources(self) -> dict[str, str]:
        """path -> text of every file (what a related note in another file is shown from)."""
        return {m.unit.path: m.unit.text for m in self.modules.values()}

    @property
    def graph(self) -> Graph:
        return self._merged()[0]

    @property
    def provenance(self) -> Provenance:
        """Each function's provenance, in its own file's coordinates (see :meth:`file_of`)."""
        return self._merged()[1]

    def file_of(self, graph_name: str) -> ModuleResult | None:
        """The file a function of :attr:`graph` is defined in."""
        module = graph_name.rsplit("::", 1)[0] if "::" in graph_name else None
        if module is not None:
            return self.modules.get(module)
        for m in self.modules.values():
            f = m.module.graph.functions.get(graph_name)
            if f is not None and f.exported:
                return m
        return None

    def _merged(self) -> tuple[Graph, Provenance]:
        if self._graph is None:
            graph, prov = Graph(), Provenance()
            for m in self.modules.values():
                g, p = m.module.graph, m.module.provenance
                graph.nodes.update(g.nodes)
                graph.regions.update(g.regions)
                for name, f in g.functions.items():
                    gname = graph_name(m.unit.module, name, f.exported)
                    graph.functions[gname] = Function(
                        gname, f.type, f.region, f.exported, f.outputs, f.component, f.index
                    )
                    if name in p.functions:
                        prov.functions[gname] = dataclasses.replace(p.functions[name], name=gname)
            self._graph = (graph, prov)
        return self._graph


def graph_name(module: str, name: str, exported: bool) -> str:
    """A function's name in a package's graph: its own if `pub`, else `module::name`."""
    return name if exported else f"{module}::{name}"


def declared(p: Parse) -> dict[str, Declared]:
    """The items a file defines, by name (the first of a name: a second is K0202 anyway)."""
    out: dict[str, Declared] = {}
    for it in ast.SourceFile(p.tree).items:
        n = it.name
        if n is None or not n.text or n.text in out:
            continue
        kind = (
            "fn" if isinstance(it, ast.Fn) else "struct" if isinstance(it, ast.Struct) else "const"
        )
        out[n.text] = Declared(kind, n.text, it.is_pub, n.span)
    return out


def resolve_uses(
    module: str,
    p: Parse,
    items: dict[str, dict[str, Declared]],
    paths: dict[str, str],
) -> tuple[list[Request], list[Diagnostic], frozenset[str]]:
    """The `use` declarations of ``module``'s file, resolved against what every module
    of the package defines (``items``: module -> name -> item); ``paths``: module -> file.

    Also the local names of the imports that failed (an unknown module or item): the
    error is on the `use`, and a use of such a name is not reported again."""
    diags: list[Diagnostic] = []
    requests: list[Request] = []
    failed: set[str] = set()
    local = items.get(module, {})
    seen: dict[str, Span] = {}
    for u in ast.SourceFile(p.tree).uses():
        path = u.path
        if not path or any(not r.text for r in path):
            continue  # the parser reported it
        name = u.module
        span = Span(path[0].span.start, path[-1].span.end)
        if name == module:
            diags.append(
                error("K0209", span, f"`{name}` is this file's own module: use its items directly")
            )
            continue
        target = items.get(name)
        if target is None:
            failed.update(t.local.text for t in u.trees if t.local is not None and t.local.text)
            others = [m for m in items if m != module]
            known = ", ".join(f"`{m}`" for m in sorted(others))
            where = (
                f"the other modules of this package: {known}"
                if others
                else "a file checked on its own has no other modules: check its package, "
                "the directory"
            )
            diags.append(
                error(
                    "K0209",
                    span,
                    f"unknown module `{name}` ({where})" + did_you_mean(name, others),
                )
            )
            continue
        for tree in u.trees:
            ref = tree.item
            where = tree.local
            if ref is None or where is None or not ref.text or not where.text:
                continue
            item = target.get(ref.text)
            if item is None:
                failed.add(where.text)
                pubs = [d.name for d in target.values() if d.is_pub]
                diags.append(
                    error(
                        "K0210",
                        ref.span,
                        f"module `{name}` has no item `{ref.text}`" + did_you_mean(ref.text, pubs),
                    )
                )
                continue
            if not item.is_pub:
                diags.append(
                    error(
                        "K0211",
                        ref.span,
                        f"{_what(item)} `{ref.text}` is private to module `{name}`: mark it "
                        f"`pub` there to use it here",
                        related=(Related(item.span, "defined here", paths[name]),),
                    )
                )
                # still imported: its uses here resolve, so this is the one error about it
            alias = where.text
            if alias in seen:
                diags.append(
                    error(
                        "K0212",
                        where.span,
                        f"`{alias}` is imported twice",
                        related=(Related(seen[alias], "first imported here"),),
                    )
                )
                continue
            seen[alias] = where.span
            mine = local.get(alias)
            if mine is not None:
                diags.append(
                    error(
                        "K0213",
                        where.span,
                        f"the import `{alias}` conflicts with the {_what(mine)} `{alias}` of "
                        f"this file: import it under another name (`{ref.text} as …`)",
                        related=(Related(mine.span, f"`{alias}` is defined here"),),
                    )
                )
                continue
            requests.append(Request(name, item, alias, where.span, ref.span))
    resolved = {r.local for r in requests} | set(local)
    return requests, diags, frozenset(failed - resolved)


def _exported_twice(
    units: Sequence[SourceUnit],
    items: dict[str, dict[str, Declared]],
    paths: dict[str, str],
    diags: dict[str, list[Diagnostic]],
) -> None:
    """K0202 on a `pub fn` whose name another file's `pub fn` has: the package's
    interface (its graph's exported functions) names each once."""
    first: dict[str, tuple[str, Declared]] = {}
    for u in units:
        for d in items[u.module].values():
            if d.kind != "fn" or not d.is_pub:
                continue
            if d.name not in first:
                first[d.name] = (u.module, d)
                continue
            other, od = first[d.name]
            diags[u.module].append(
                error(
                    "K0202",
                    d.span,
                    f"`pub fn {d.name}` is defined in module `{other}` too: the exported "
                    "functions of a package have distinct names",
                    related=(Related(od.span, "first defined here", paths[other]),),
                )
            )


def _what(item: Declared) -> str:
    return {"fn": "function", "struct": "struct", "const": "constant"}[item.kind]


def imports_of(
    requests: Sequence[Request],
    lowered: dict[str, Module],
    paths: dict[str, str],
    modules: dict[str, tuple[tuple[str, str], ...]] | None = None,
) -> Imports:
    """What ``requests`` bring in from the modules lowered so far (``lowered``);
    ``modules``: every module's `pub` items (for completion)."""
    imp = Imports(modules=modules or {})
    for r in requests:
        src = lowered.get(r.module)
        if src is None:
            continue  # not lowered yet (a cycle of modules: a later pass has it)
        name = r.item.name
        env = src.env
        imp.items[r.local] = Imported(
            r.item.kind, r.local, name, r.module, paths[r.module], r.item.span, r.use_span
        )
        if r.item.kind == "struct":
            if name in env.structs and name in env.struct_spans:
                imp.structs[r.local] = env.structs[name]
            continue
        if r.item.kind == "const":
            c = env.consts.get(name)
            if c is not None and env.origin("const", name) is None:
                imp.consts[r.local] = ImportedConst(name, c, env, constant_digest(env, name))
            continue
        sig = env.fns.get(name)
        if sig is None or not env.is_local(name):
            continue  # its signature did not resolve (reported in its file)
        imp.fns[r.local] = dataclasses.replace(sig, name=r.local)
        functions = src.graph.functions
        if sig.is_generic:
            for inst in env.instances.values():
                if inst.generic != name:
                    continue
                local = instance_name(r.local, inst.type_args)
                imp.instances[local] = dataclasses.replace(inst, name=local, generic=r.local)
                if inst.name in functions:
                    imp.functions[local] = functions[inst.name]
        elif name in functions:
            imp.functions[r.local] = functions[name]
    return imp


def _components(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components, each after the ones it depends on (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp, key=nodes.index))
    return out


def _state(m: Module) -> tuple:
    """What another file can see of a lowered file: its signatures and function hashes."""
    env = m.env
    structs = tuple((n, env.structs[n].hash) for n in sorted(env.structs))
    consts = tuple(
        (n, str(c.value.syntax) if c.value is not None else "", c.type.hash if c.type else b"")
        for n, c in sorted(env.consts.items())
    )
    imported = tuple((n, env.imported_consts[n].digest) for n in sorted(env.imported_consts))
    sigs = tuple((n, env.fns[n].type.hash) for n in sorted(env.fns))
    fns = m.graph.functions
    return (structs, consts, imported, sigs, tuple(sorted((n, f.hash) for n, f in fns.items())))


def analyze_package(
    name: str,
    units: Sequence[SourceUnit],
    caches: dict[str, LoweringCache] | None = None,
    parses: dict[str, Parse] | None = None,
) -> Package:
    """Parse, resolve and lower every file of a package; never raises on bad input.

    ``caches`` (module -> cache) keep each file's lowerings between calls (the language
    server); ``parses`` (module -> parse) are used instead of parsing a file again."""
    caches = caches if caches is not None else {}
    parses = parses or {}
    parsed = {u.module: parses.get(u.module) or parse(u.text) for u in units}
    paths = {u.module: u.path for u in units}
    items = {m: declared(p) for m, p in parsed.items()}
    requests: dict[str, list[Request]] = {}
    use_diags: dict[str, list[Diagnostic]] = {}
    failed: dict[str, frozenset[str]] = {}
    for u in units:
        requests[u.module], use_diags[u.module], failed[u.module] = resolve_uses(
            u.module, parsed[u.module], items, paths
        )
    _exported_twice(units, items, paths, use_diags)
    order = [u.module for u in units]
    edges = {m: {r.module for r in requests[m]} for m in order}
    lowered: dict[str, Module] = {}
    imports: dict[str, Imports] = {}
    exports = {m: tuple((d.name, d.kind) for d in items[m].values() if d.is_pub) for m in order}
    components = _components(order, edges)  # dependencies first
    calls = _function_calls(order, parsed, items, requests)
    crossing = _crossing_components(order, items, calls)
    cross: dict[str, list[Diagnostic]] = {}
    for comp in components:
        mine = [c for c in crossing if c[0][0] in comp]  # a cycle of calls is one of modules
        # two passes more where a component of functions crosses files: one for every file
        # to see the others' signatures, one to take the component's lowering
        passes = 1 + sum(len(items[m]) for m in comp) + 2 * bool(mine) if len(comp) > 1 else 1
        before: tuple = ()
        given: dict[str, dict[str, LoweredFn]] = {}
        for _ in range(passes):
            for m in comp:
                imports[m] = imports_of(requests[m], lowered, paths, exports)
                imports[m].failed = failed[m]
                imports[m].members = given.get(m, {})
                cache = caches.setdefault(m, LoweringCache())
                lowered[m] = lower_module(parsed[m], cache, imports=imports[m])
            given, generic = _lower_crossing(mine, calls, lowered, imports, requests, caches)
            members = {
                m: {n: lf.function.hash if lf.function else b"" for n, lf in g.items()}
                for m, g in given.items()
            }
            now = ({m: _state(lowered[m]) for m in comp}, members)
            if now == before:
                break
            before = now
        for m, ds in generic.items():
            cross.setdefault(m, []).extend(ds)
    for m, ds in _cross_file_constant_cycles(order, parsed, items, requests, paths).items():
        cross.setdefault(m, []).extend(ds)
    results: dict[str, ModuleResult] = {}
    by_module = {u.module: u for u in units}
    for comp in components:
        for m in comp:
            p, mod = parsed[m], lowered[m]
            diags = [
                *p.diagnostics,
                *use_diags[m],
                *mod.diagnostics,
                *cross.get(m, []),
                *check_ownership(mod, p),
            ]
            results[m] = ModuleResult(
                by_module[m], p, mod, imports[m], requests[m], reported(diags)
            )
    return Package(name, results)


Fn = tuple[str, str]  # (module, name): a function of the package


def _function_calls(
    order: list[str],
    parsed: dict[str, Parse],
    items: dict[str, dict[str, Declared]],
    requests: dict[str, list[Request]],
) -> dict[Fn, list[tuple[Fn, Span]]]:
    """Each function's calls to functions of the package (its own file's or imported ones),
    read off the syntax: what the recursive components across files are made of."""
    calls: dict[Fn, list[tuple[Fn, Span]]] = {}
    for m in order:
        imported = {r.local: (r.module, r.item.name) for r in requests[m] if r.item.kind == "fn"}
        for it in ast.SourceFile(parsed[m].tree).items:
            if not isinstance(it, ast.Fn) or it.name is None or it.body is None:
                continue
            if items[m].get(it.name.text) is None or (m, it.name.text) in calls:
                continue
            out = calls[(m, it.name.text)] = []
            for n in it.body.syntax.descendants():
                if n.kind != K.CALL_EXPR:
                    continue
                callee = ast.CallExpr(n).callee
                if not isinstance(callee, ast.PathExpr) or callee.name is None:
                    continue
                c = callee.name.text
                local = items[m].get(c)
                if local is not None and local.kind == "fn":
                    out.append(((m, c), callee.span))
                elif c in imported:
                    out.append((imported[c], callee.span))
    return calls


def _crossing_components(
    order: list[str], items: dict[str, dict[str, Declared]], calls: dict[Fn, list]
) -> list[list[Fn]]:
    """The recursive components of functions whose members are in more than one file, each
    in the package's file order, then source order."""
    keyed = {f"{a}\0{b}": (a, b) for a, b in calls}
    edges = {
        k: {f"{x}\0{y}" for (x, y), _ in calls[v] if (x, y) in calls} for k, v in keyed.items()
    }
    out = []
    for comp in _components(list(keyed), edges):
        members = [keyed[k] for k in comp]
        if len({m for m, _ in members}) > 1:
            members.sort(key=lambda f: (order.index(f[0]), items[f[0]][f[1]].span.start))
            out.append(members)
    return out


def _lower_crossing(
    comps: list[list[Fn]],
    calls: dict[Fn, list[tuple[Fn, Span]]],
    lowered: dict[str, Module],
    imports: dict[str, Imports],
    requests: dict[str, list[Request]],
    caches: dict[str, LoweringCache],
) -> tuple[dict[str, dict[str, LoweredFn]], dict[str, list[Diagnostic]]]:
    """Lower each recursive component across files as one unit, each member in its own
    file's environment (:func:`~kera_core.sema.module.lower_component`): module -> its
    members' lowerings (for the next pass of its file), and the K0322 of generic members.

    A component is left for a later pass while a member's file does not see the other
    members yet (their modules not lowered) or a member's signature does not resolve (its
    error is reported in its file). Its lowering is cached in the first member's file's
    cache, keyed as a component within one file is (module.py, :func:`component_key`)."""
    given: dict[str, dict[str, LoweredFn]] = {}
    diags: dict[str, list[Diagnostic]] = {}
    for comp in comps:
        envs = [lowered[m].env for m, _ in comp]
        if not all(
            env.is_local(n) and n in env.fns for env, (_, n) in zip(envs, comp, strict=True)
        ):
            continue
        sigs = [env.fns[n] for env, (_, n) in zip(envs, comp, strict=True)]
        names = [
            tuple(
                (n,)
                if m == mine
                else tuple(
                    r.local
                    for r in requests[mine]
                    if r.module == m and r.item.name == n and r.item.kind == "fn"
                )
                for m, n in comp
            )
            for mine, _ in comp
        ]
        if not all(
            n in env.fns for env, seen in zip(envs, names, strict=True) for ns in seen for n in ns
        ):
            continue  # a file does not see the other members yet
        generic = next((i for i, s in enumerate(sigs) if s.is_generic), None)
        if generic is not None:
            m, name = comp[generic]
            inside = set(comp)
            call = next(((c, sp) for c, sp in calls[comp[generic]] if c in inside), None)
            span = call[1] if call is not None else sigs[generic].name_span
            leads = (
                f"calls `{call[0][1]}`, which leads back to `{name}`" if call else "is in a cycle"
            )
            diags.setdefault(m, []).append(
                error("K0322", span, f"a generic function cannot be recursive: `{name}` {leads}")
            )
            continue
        inside = set(comp)
        outside = sorted({c for f in comp for c, _ in calls[f] if c not in inside})
        hashes = []
        for m, n in outside:  # a generic callee: each of its instances
            env, fns = lowered[m].env, lowered[m].graph.functions
            for u in instances_of(env, n) if n in env.fns else [n]:
                hashes.append(fns[u].hash if u in fns else b"")
        unit_keys = [lowered[m].unit_key for m, _ in comp]
        if any(k is None for k in unit_keys):  # (lower_module always sets it)
            continue
        parts = [k(n) for k, (_, n) in zip(unit_keys, comp, strict=True)]  # type: ignore[misc]
        key = component_key(parts, hashes)
        cache = caches.setdefault(comp[0][0], LoweringCache())
        hit = cache.components.get(key)
        if hit is not None and all(lf.relocatable for lf in hit):
            cache.reused += len(comp)
            lfs = hit
        else:
            members = [
                Member(env, sig, {**imports[m].functions, **lowered[m].graph.functions}, seen)
                for env, sig, (m, _), seen in zip(envs, sigs, comp, names, strict=True)
            ]
            lfs = cache.components[key] = lower_component(members)
            cache.lowered += len(comp)
        if cache.history:
            cache.history[-1].add(key)  # kept while the file's own recent lowerings are
        for (m, n), lf in zip(comp, lfs, strict=True):
            given.setdefault(m, {})[n] = lf
    return given, diags


def _cross_file_constant_cycles(
    order: list[str],
    parsed: dict[str, Parse],
    items: dict[str, dict[str, Declared]],
    requests: dict[str, list[Request]],
    paths: dict[str, str],
) -> dict[str, list[Diagnostic]]:
    """K0315 on each reference that crosses files on a cycle of constants (a cycle within
    one file is reported by its file, sema/consts.py): read off the syntax, since such
    constants have no value to lower."""
    refs: dict[tuple[str, str], list[tuple[tuple[str, str], Span]]] = {}
    for m in order:
        imported = {r.local: (r.module, r.item.name) for r in requests[m] if r.item.kind == "const"}
        for it in ast.SourceFile(parsed[m].tree).items:
            if not isinstance(it, ast.Const) or it.name is None or it.value is None:
                continue
            out = refs.setdefault((m, it.name.text), [])
            for n in [it.value.syntax, *it.value.syntax.descendants()]:
                if n.kind != K.PATH_EXPR:
                    continue
                ref = ast.PathExpr(n).name
                name = ref.text if ref is not None else ""
                local = items[m].get(name)
                if local is not None and local.kind == "const":
                    out.append(((m, name), ref.span))  # type: ignore[union-attr]
                elif name in imported:
                    out.append((imported[name], ref.span))  # type: ignore[union-attr]
    keyed = {f"{a}\0{b}": (a, b) for a, b in refs}
    edges = {k: {f"{x}\0{y}" for (x, y), _ in refs[v] if (x, y) in refs} for k, v in keyed.items()}
    diags: dict[str, list[Diagnostic]] = {}
    for comp in _components(list(keyed), edges):
        members = {keyed[k] for k in comp}
        if len({mod for mod, _ in members}) < 2:
            continue
        for user in sorted(members):
            for used, span in refs[user]:
                if used in members and used[0] != user[0]:
                    diags.setdefault(user[0], []).append(
                        error(
                            "K0315",
                            span,
                            f"constant `{user[1]}` refers to itself through module "
                            f"`{used[0]}`: `{used[1]}` there leads back to `{user[1]}`",
                            related=(
                                Related(
                                    items[used[0]][used[1]].span,
                                    f"`{used[1]}` is defined here",
                                    paths[used[0]],
                                ),
                            ),
                        )
                    )
    return diags
