"""A whole file -> graph: items, signatures, call order, per-function lowering (cached).

Functions are lowered callee-first because a call node names its callee by hash
(content addressing, as in Unison): a change to a function changes its callers'
hashes too, and nothing else. Recursion is rejected for now (it would make the
hash cyclic).

The :class:`LoweringCache` keys each function's lowering by its own text, the
signatures it can see and its callees' hashes; an edit inside one function
re-lowers that function (and its callers, whose call nodes change) only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, Related, error, sort_key
from kera_core.ir.encoding import Writer, digest
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function
from kera_core.ir.provenance import FnProvenance, Provenance
from kera_core.ir.types import UNIT, FnType, Prim, Struct, Sym, Tensor, Type
from kera_core.sema.env import ConstDef, FnSig, ModuleEnv, TypeResolver, Use, resolve_effects
from kera_core.sema.lower import FnLowering, LoweredFn
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.parse import Parse


@dataclass
class LoweringCache:
    entries: dict[bytes, LoweredFn] = field(default_factory=dict)
    lowered: int = 0  # functions lowered (cache misses), for tests and benchmarks
    reused: int = 0

    def prune(self, live: set[bytes]) -> None:
        for k in list(self.entries):
            if k not in live:
                del self.entries[k]


@dataclass
class Module:
    graph: Graph
    provenance: Provenance
    env: ModuleEnv
    diagnostics: list[Diagnostic]
    functions: dict[str, LoweredFn]

    @property
    def fingerprint(self) -> bytes:
        return self.graph.fingerprint()


def _dims_in(t: Type, acc: set[int]) -> None:
    if isinstance(t, Tensor):
        acc.update(d.index for d in t.shape if isinstance(d, Sym))
    inner = getattr(t, "inner", None)
    if inner is not None:
        _dims_in(inner, acc)


def _collect_structs(root: ast.SourceFile, env: ModuleEnv, diags: list[Diagnostic]) -> None:
    decls: dict[str, ast.Struct] = {}
    for s in root.structs():
        if s.name is None:
            continue
        name = s.name.text
        if name in decls:
            first = decls[name].name
            diags.append(
                error(
                    "K0202",
                    s.name.span,
                    f"struct `{name}` is defined twice",
                    related=(Related(first.span, "first defined here"),),  # type: ignore[union-attr]
                )
            )
            continue
        decls[name] = s
    state: dict[str, str] = {}

    def resolve(name: str) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "busy":
            s = decls[name]
            diags.append(error("K0315", s.name.span, f"struct `{name}` contains itself"))  # type: ignore[union-attr]
            return
        state[name] = "busy"
        s = decls[name]
        for f in s.fields:
            t = f.type
            base = t
            while isinstance(base, ast.TensorType | ast.RefType | ast.SpaceType):
                base = base.elem if isinstance(base, ast.TensorType) else base.inner
            if isinstance(base, ast.NamedType) and base.name and base.name.text in decls:
                resolve(base.name.text)
        fields = []
        seen: dict[str, ast.Field] = {}
        resolver = TypeResolver(env, (), diags, env.uses)
        ok = True
        for f in s.fields:
            fname = f.name.text if f.name else None
            if fname is None:
                ok = False
                continue
            if fname in seen:
                diags.append(error("K0202", f.name.span, f"field `{fname}` is declared twice"))  # type: ignore[union-attr]
                continue
            seen[fname] = f
            env.field_spans[(name, fname)] = f.name.span  # type: ignore[union-attr]
            ft = resolver.resolve(f.type)
            if ft is None:
                ok = False
                continue
            if not isinstance(ft, Prim | Struct):
                diags.append(
                    error(
                        "K0301",
                        f.type.span,  # type: ignore[union-attr]
                        f"struct fields are numbers, bools or structs, not `{ft}`;"
                        " pass tensors as separate parameters",
                    )
                )
                ok = False
                continue
            fields.append((fname, ft))
        if ok:
            env.structs[name] = Struct(name, tuple(fields))
            env.struct_spans[name] = s.name.span  # type: ignore[union-attr]
        state[name] = "done"

    for name in decls:
        resolve(name)


def _collect_signatures(root: ast.SourceFile, env: ModuleEnv, diags: list[Diagnostic]) -> None:
    for c in root.consts():
        if c.name is None:
            continue
        name = c.name.text
        if name in env.consts:
            diags.append(error("K0202", c.name.span, f"constant `{name}` is defined twice"))
            continue
        t = TypeResolver(env, (), diags, env.uses).resolve(c.type)
        env.consts[name] = ConstDef(name, t, c.value, c.span, c.name.span)
    for fn in root.functions():
        if fn.name is None:
            continue
        name = fn.name.text
        if name in env.fns:
            first = env.fns[name]
            diags.append(
                error(
                    "K0202",
                    fn.name.span,
                    f"function `{name}` is defined twice",
                    related=(Related(first.name_span, "first defined here"),),
                )
            )
            continue
        dims: list[str] = []
        for d in fn.dim_params:
            if d.text in dims:
                diags.append(error("K0206", d.span, f"dimension `{d.text}` is declared twice"))
            dims.append(d.text)
        sig_uses: list[Use] = []
        resolver = TypeResolver(
            env, tuple(dims), diags, sig_uses, tuple(d.span for d in fn.dim_params)
        )
        params: list[Type] = []
        names: list[str] = []
        ok = True
        for p in fn.params:
            t = resolver.resolve(p.type)
            if t is None or p.name is None:
                ok = False
                continue
            params.append(t)
            names.append(p.name.text)
        result = resolver.resolve(fn.ret_type) if fn.ret_type is not None else UNIT
        if result is None:
            ok = False
        effects = resolve_effects(fn, diags)
        if not ok:
            continue
        used: set[int] = set()
        for t in params:
            _dims_in(t, used)
        for i, dname in enumerate(dims):
            if i not in used:
                diags.append(
                    error(
                        "K0310",
                        fn.dim_params[i].span,
                        f"dimension `{dname}` must appear in a parameter type, so that each call"
                        " binds it",
                    )
                )
                ok = False
        if not ok:
            continue
        ftype = FnType(len(dims), tuple(params), result, effects)  # type: ignore[arg-type]
        env.fns[name] = FnSig(
            name,
            ftype,
            tuple(dims),
            tuple(names),
            fn.is_pub,
            fn.span,
            fn.name.span,
            fn.doc,
            fn,
            sig_uses,
        )


def _calls(sig: FnSig, env: ModuleEnv) -> list[tuple[str, object]]:
    out = []
    body = sig.ast.body
    if body is None:
        return out
    for n in body.syntax.descendants():
        if n.kind == K.CALL_EXPR:
            callee = ast.CallExpr(n).callee
            if isinstance(callee, ast.PathExpr) and callee.name and callee.name.text in env.fns:
                out.append((callee.name.text, n))
    return out


def _order(env: ModuleEnv, diags: list[Diagnostic]) -> list[str]:
    """Callee-first order (source order among independents); functions in cycles are dropped."""
    order: list[str] = []
    state: dict[str, str] = {}
    in_cycle: set[str] = set()
    calls = {name: _calls(sig, env) for name, sig in env.fns.items()}

    def visit(name: str, path: list[str]) -> None:
        st = state.get(name)
        if st == "done":
            return
        if st == "busy":
            cycle = path[path.index(name) :] + [name]
            in_cycle.update(cycle)
            return
        state[name] = "busy"
        for callee, _ in calls[name]:
            visit(callee, [*path, name])
        state[name] = "done"
        order.append(name)

    for name in env.fns:
        visit(name, [])
    for name in sorted(in_cycle, key=lambda n: env.fns[n].span.start):
        for callee, node in calls[name]:
            if callee in in_cycle:
                diags.append(
                    error(
                        "K0315",
                        node.span,
                        f"recursion is not supported: `{name}` calls `{callee}`, which leads back"
                        f" to `{name}` (a function's hash would contain itself)",
                    )
                )
                break
    return [n for n in order if n not in in_cycle]


def _cache_key(sig: FnSig, env_digest: bytes, callee_hashes: list[bytes]) -> bytes:
    w = Writer()
    w.str(str(sig.ast.syntax))
    w.raw(env_digest)
    for h in callee_hashes:
        w.raw(h)
    return digest("fn", w.getvalue())


def _rebased(lf: LoweredFn, sig: FnSig) -> LoweredFn:
    """A cached lowering moved to where the function now sits in the file."""
    old = lf.provenance
    assert old is not None
    prov = FnProvenance(
        sig.name,
        sig.span,
        sig.name_span,
        old.dim_names,
        old.param_names,
        old.node_spans,
        old.node_names,
        sig.doc,
    )
    delta = sig.span.start - lf.base
    diags = [d.shifted(delta) for d in lf.diagnostics] if delta else lf.diagnostics
    types = (
        {(a + delta, b + delta, k): t for (a, b, k), t in lf.expr_types.items()}
        if delta
        else lf.expr_types
    )
    uses = [u.shifted(delta) for u in lf.uses] if delta else lf.uses
    return LoweredFn(
        sig, lf.function, lf.nodes, lf.regions, prov, diags, sig.span.start, types, uses
    )


def lower_module(parse: Parse, cache: LoweringCache | None = None) -> Module:
    """Build the graph of a parsed file; never raises on bad input."""
    cache = cache if cache is not None else LoweringCache()
    diags: list[Diagnostic] = []
    root = ast.SourceFile(parse.tree)
    env = ModuleEnv()
    _collect_structs(root, env, diags)
    _collect_signatures(root, env, diags)
    order = _order(env, diags)
    env_digest = env.signature_digest()
    graph = Graph()
    prov = Provenance()
    done: dict[str, Function] = {}
    lowered: dict[str, LoweredFn] = {}
    live: set[bytes] = set()
    for name in order:
        sig = env.fns[name]
        callees = sorted({c for c, _ in _calls(sig, env)})
        key = _cache_key(sig, env_digest, [done[c].hash if c in done else b"" for c in callees])
        live.add(key)
        lf = cache.entries.get(key)
        if lf is None or (lf.base != sig.span.start and not lf.relocatable):
            lf = FnLowering(env, sig, done).lower()
            cache.entries[key] = lf
            cache.lowered += 1
        else:
            cache.reused += 1
            lf = _rebased(lf, sig)
        lowered[name] = lf
        diags.extend(lf.diagnostics)
        assert lf.provenance is not None
        prov.functions[name] = lf.provenance
        if lf.function is not None:
            done[name] = lf.function
            graph.nodes.update(lf.nodes)
            graph.regions.update(lf.regions)
            graph.functions[name] = lf.function
    cache.prune(live)
    diags.sort(key=sort_key)
    return Module(graph, prov, env, diags, lowered)
