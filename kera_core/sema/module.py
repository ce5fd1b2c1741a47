"""A whole file -> graph: items, signatures, call order, per-function lowering (cached).

Functions are lowered callee-first because a call node names its callee by hash
(content addressing, as in Unison): a change to a function changes its callers'
hashes too, and nothing else. Functions that call each other in a cycle are lowered and
hashed as one unit (:func:`lower_component`, docs/graph.md "Recursion"), and cached as one.

The :class:`LoweringCache` keys each function's lowering by its own text, the
signatures it can see and its callees' hashes; an edit inside one function
re-lowers that function (and its callers, whose call nodes change) only.

A caller's *diagnostics* (and the types and uses the IDE reads) depend on its callees'
signatures only, never on their hashes. So each lowering is also kept under a *shape*
key (text, signatures, which callees lowered), and ``lower_module(..., defer=True)``
(what the language server uses) does not re-lower a caller whose shape is unchanged: it
reuses the analysis of the cached lowering and re-lowers the caller only when something
reads the graph (``Module.graph``/``provenance``, e.g. a fingerprint lens), after the
diagnostics are out. A caller whose own text changed while a callee is deferred is
lowered against a stand-in callee hash, for its diagnostics, and again on demand.
"""

from __future__ import annotations

import dataclasses
import itertools
import operator
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kera_core.cancel import Watch, check
from kera_core.diagnostics import Diagnostic, Related, error, sort_key, warning
from kera_core.diagnostics.diagnostic import Edit, Fix
from kera_core.ir.cycles import PLACEHOLDER, component_hash, member_ref
from kera_core.ir.dims import binding_plan
from kera_core.ir.encoding import Writer, digest
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function
from kera_core.ir.provenance import FnProvenance, Provenance
from kera_core.ir.types import (
    BOUNDS,
    PRIMS,
    UNIT,
    FnType,
    Prim,
    Ref,
    Struct,
    Tensor,
    Type,
    TypeParam,
    instantiate,
)
from kera_core.sema.body_reuse import BodyTrace, PendingGraph, lower_recorded
from kera_core.sema.consts import check_constants
from kera_core.sema.deps import Deps, key_digest, mentions, text_of
from kera_core.sema.env import (
    ConstDef,
    FnSig,
    Imports,
    ModuleEnv,
    TypeResolver,
    Use,
    did_you_mean,
    instance_name,
    resolve_effects,
)
from kera_core.sema.lower import FnLowering, LoweredFn
from kera_core.sema.lower_calls import BUILTINS
from kera_core.sema.spliced import unmoved_uses
from kera_core.source import Span, encode
from kera_core.stack import deep_recursion
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.parse import Parse
from kera_core.syntax.tree import SyntaxNode


@dataclass
class LoweringCache:
    entries: dict[bytes, LoweredFn] = field(default_factory=dict)  # full key -> lowering
    # component key (component_key) -> its members' lowerings, in the component's order
    components: dict[bytes, list[LoweredFn]] = field(default_factory=dict)
    # shape key (text, signatures, which callees lowered; no callee hashes) -> a lowering
    # whose diagnostics, expr_types and uses are right, and whose graph may not be
    shapes: dict[bytes, LoweredFn] = field(default_factory=dict)
    lowered: int = 0  # functions lowered (cache misses), for tests and benchmarks
    reused: int = 0
    deferred: int = 0  # callers whose re-lowering was left until their graph is read
    # Per green node (interned, immutable, shared across versions): keyed by id() and
    # holding the node itself, so an entry is valid exactly while that node is in the tree.
    calls: dict[int, tuple[object, tuple[str, ...]]] = field(default_factory=dict)
    texts: dict[int, tuple[object, bytes]] = field(default_factory=dict)
    sigs: dict[int, tuple[object, tuple, tuple]] = field(default_factory=dict)
    # the last full and shape keys computed for a function, with what they were made of
    keys: dict[int, tuple[object, dict]] = field(default_factory=dict)
    names: dict[int, tuple[object, tuple | None]] = field(default_factory=dict)
    # the identifiers in an item's text (sema/deps.py), per function, struct and constant
    idents: dict[int, tuple[object, frozenset[str]]] = field(default_factory=dict)
    # what a caller can read of a function's signature (Deps.item), per green node
    items: dict[int, tuple[object, object, bytes]] = field(default_factory=dict)
    # the last check of the constants: (key, their green items, located diagnostics, bad)
    consts: tuple | None = None
    # shape keys added by sema.incremental (oldest first), which drops the oldest itself
    recent_shapes: list[bytes] = field(default_factory=list)
    # a long body's trace per function name (sema/body_reuse.py), for the next edit in it
    bodies: dict[str, list[BodyTrace]] = field(default_factory=dict)
    resumed: int = 0  # long bodies lowered from their trace (statements again, not all)

    # the keys each of the last few lower_module runs used: an entry is kept while one of
    # them did, so going back to a recent text (an undo) finds its lowerings again
    history: list[set[bytes]] = field(default_factory=list)
    keep: int = 4

    def prune(self, live: set[bytes], live_shapes: set[bytes] | None = None) -> None:
        self.history = [*self.history[-(self.keep - 1) :], live | (live_shapes or set())]
        tables = (self.entries, self.shapes, self.components)
        if sum(map(len, tables)) <= sum(len(h) for h in self.history):
            return  # nothing can be stale
        keep = set().union(*self.history)
        for table in tables:
            for k in [k for k in table if k not in keep]:
                del table[k]

    def key(self, green, make, *inputs) -> bytes:
        """``make(*inputs)``, a cache key of the function ``green``, remembered per green
        node and recomputed only when ``inputs`` changed since the last version."""
        hit = self.keys.get(id(green))
        if hit is None or hit[0] is not green:
            hit = self.keys[id(green)] = (green, {})
        last = hit[1].get(make)
        if last is not None and last[0] == inputs:
            return last[1]
        value = make(*inputs)
        hit[1][make] = (inputs, value)
        return value

    def memo(self, table: dict, green, make):
        hit = table.get(id(green))
        if hit is not None and hit[0] is green:
            return hit[1]
        value = make()
        table[id(green)] = (green, value)
        return value


class Module:
    """A lowered file. ``functions`` always holds each function's diagnostics, types and
    uses; the graph parts (``graph``, ``provenance``, ``LoweredFn.function``/``nodes``/
    ``regions``) of deferred callers are completed when ``graph`` or ``provenance`` is
    first read (see :func:`lower_module`)."""

    def __init__(
        self,
        graph: Graph | None,
        provenance: Provenance | None,
        env: ModuleEnv,
        diagnostics: list[Diagnostic],
        functions: dict[str, LoweredFn],
        finish=None,
        instances: dict[str, LoweredFn] | None = None,
    ) -> None:
        self._graph = graph
        self._provenance = provenance
        self.env = env
        self.diagnostics = diagnostics
        self.functions = functions  # by source name; a generic one: see _representative
        # every lowering by graph name: the functions and each generic one's instances
        self.lowered = instances if instances is not None else functions
        self._finish = finish  # () -> (Graph, Provenance), replacing deferred functions
        # set by lower_module / sema.incremental: what the next edit's analysis starts from
        self.made_from: tuple | None = None
        # the functions in recursive components (lowered and hashed together: an edit in
        # one lowers its component again, sema/incremental.py)
        self.recursive: frozenset[str] = frozenset()
        # each member of a recursive component of this file -> the component's members, in
        # the order they are lowered and hashed (sema/incremental.py lowers one again)
        self.components: dict[str, list[str]] = {}
        # name -> what a function's lowering depends on of its own text and the other
        # items (the key parts of a component's lowering, sema/package.py)
        self.unit_key = None
        self.incremental = None  # sema.incremental.State, built when first needed

    @property
    def pending(self) -> bool:
        """Is part of the graph still to be built (some callers were deferred)?"""
        return self._finish is not None

    def _complete(self) -> None:
        if self._finish is not None:
            self._graph, self._provenance = self._finish()
            self._finish = None

    @property
    def graph(self) -> Graph:
        self._complete()
        return self._graph  # type: ignore[return-value]

    @property
    def provenance(self) -> Provenance:
        self._complete()
        return self._provenance  # type: ignore[return-value]

    @property
    def fingerprint(self) -> bytes:
        return self.graph.fingerprint()


def _collect_structs(
    root: ast.SourceFile,
    env: ModuleEnv,
    diags: list[Diagnostic],
    items: list[ast.Item] | None = None,
) -> None:
    decls: dict[str, ast.Struct] = {}
    structs = root.structs() if items is None else [i for i in items if isinstance(i, ast.Struct)]
    for s in structs:
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
        resolver = TypeResolver(env, (), diags, env.uses, in_struct=name)
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
            if not isinstance(ft, Prim | Struct | Tensor):
                diags.append(
                    error(
                        "K0301",
                        f.type.span,  # type: ignore[union-attr]
                        f"struct fields are numbers, bools, tensors, structs or tuples, not `{ft}`",
                    )
                )
                ok = False
                continue
            if isinstance(ft, Tensor) and ft.space != "host":
                diags.append(
                    error(
                        "K0323",
                        f.type.span,  # type: ignore[union-attr]
                        f"a struct's tensor fields live in host memory, not `@{ft.space}`:"
                        " pass a tensor in another space as its own parameter",
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
    # ``resolve`` refers to itself through its closure cell: emptying the cell frees it (and
    # what it holds) now instead of at a full collection, which the server runs only when idle.
    resolve = None  # type: ignore[assignment]


def _collect_consts(
    env: ModuleEnv, diags: list[Diagnostic], items: list[ast.Item], primitive: bool
) -> None:
    """The constants whose type is a primitive name (``primitive``: before the structs, whose
    tensor fields may have constant dimensions, §8), or all the others (after them)."""
    for c in [i for i in items if isinstance(i, ast.Const)]:
        if c.name is None:
            continue
        t_ast = c.type
        prim = isinstance(t_ast, ast.NamedType) and t_ast.name is not None
        prim = prim and t_ast.name.text in PRIMS  # type: ignore[union-attr]
        if prim != primitive:
            continue
        name = c.name.text
        if name in env.consts:
            diags.append(error("K0202", c.name.span, f"constant `{name}` is defined twice"))
            continue
        t = TypeResolver(env, (), diags, env.uses, in_const=name).resolve(c.type)
        env.consts[name] = ConstDef(name, t, c.value, c.span, c.name.span)


def _collect_signatures(
    root: ast.SourceFile,
    env: ModuleEnv,
    diags: list[Diagnostic],
    cache: LoweringCache | None = None,
    items: list[ast.Item] | None = None,
    source: _Source | None = None,
    decl: list[Diagnostic] | None = None,
) -> Deps:
    """The constants' and functions' signatures into ``env``; what each function can see of
    the other items (sema/deps.py) is returned. The constants' diagnostics go to ``decl``
    when it is given."""
    items = root.items if items is None else items
    cache = cache if cache is not None else LoweringCache()
    source = source if source is not None else _Source(root.syntax.text)
    _collect_consts(env, diags if decl is None else decl, items, primitive=False)
    deps = _type_deps(env, items, cache, source)
    for fn in [i for i in items if isinstance(i, ast.Fn)]:
        named = _name_of(fn, cache)
        if named is None:
            continue
        name = named[0]
        if name in env.fns:
            start = fn.syntax.offset
            span = Span(start + named[1], start + named[2])
            diags.append(_defined_twice(name, span, env.fns[name].name_span))
            continue
        sig = _fn_signature(fn, named, env, diags, cache, deps, source)
        if sig is None:
            continue
        env.fns[name] = sig
        env.instances.update(_instances(sig))
    return deps


def _type_deps(env: ModuleEnv, items: list[ast.Item], cache: LoweringCache, source) -> Deps:
    """The structs' and constants' digests (sema/deps.py), each with what its text names."""
    named_by: dict[str, set[str]] = {}
    for i in items:
        if isinstance(i, ast.Const | ast.Struct):
            named = _name_of(i, cache)  # type: ignore[arg-type]
            if named is not None:
                named_by.setdefault(named[0], set()).update(source.mentions(i.syntax, cache))
    return Deps(env, named_by)  # type: ignore[arg-type]


class _Source:
    """The file's text, encoded to UTF-8 once, when first needed (None: a lone surrogate)."""

    __slots__ = ("text", "_utf8")

    def __init__(self, text: str | None) -> None:
        self.text = text  # None: read each item's own text
        self._utf8: list[bytes | None] = []

    @property
    def utf8(self) -> bytes | None:
        if not self._utf8:
            self._utf8.append(_utf8(self.text) if self.text is not None else None)
        return self._utf8[0]

    def mentions(self, node, cache: LoweringCache) -> frozenset[str]:
        """The identifiers in an item's text (memoised per green node)."""
        green = node.green
        return cache.memo(cache.idents, green, lambda: mentions(green, self.utf8, node.offset))


def _defined_twice(name: str, span: Span, first: Span) -> Diagnostic:
    """A later function of the same name (it is not lowered: this is all it reports)."""
    return error(
        "K0202",
        span,
        f"function `{name}` is defined twice",
        related=(Related(first, "first defined here"),),
    )


def _fn_signature(
    fn: ast.Fn,
    named: tuple[str, int, int],
    env: ModuleEnv,
    diags: list[Diagnostic],
    cache: LoweringCache,
    deps: Deps,
    source: _Source,
) -> FnSig | None:
    """One function's signature where it now is (memoised per green node, with what it
    reads of the structs and constants), its diagnostics added to ``diags``; None when its
    types do not resolve."""
    green = fn.syntax.green
    name, ns, ne = named
    start = fn.syntax.offset
    fn_span = Span(start, start + green.text_len)
    name_span = Span(start + ns, start + ne)
    if name in BUILTINS:
        diags.append(
            warning(
                "K0207",
                name_span,
                f"function `{name}` replaces the builtin `{name}` in this file: every call "
                f"`{name}(…)` here calls this function",
            )
        )
    sees = deps.sig_key(source.mentions(fn.syntax, cache))
    hit = cache.sigs.get(id(green))
    if hit is not None and hit[0] is green and hit[1] == sees:
        entry = hit[2]
    else:
        entry = _signature(fn, env)
        cache.sigs[id(green)] = (green, sees, entry)
    base, ftype, dims, names, exported, doc, uses, fn_diags, tparams, tspans = entry
    delta = start - base
    diags.extend([d.shifted(delta) for d in fn_diags] if delta else fn_diags)
    if ftype is None:
        return None
    sig_uses = _ShiftedUses(uses, delta) if delta else list(uses)
    tspans = tuple(sp.shifted(delta) for sp in tspans) if delta else tspans
    return FnSig(
        name, ftype, dims, names, exported, fn_span, name_span, doc, fn, sig_uses,
        tparams, tspans,
    )  # fmt: skip


def _instances(sig: FnSig) -> dict[str, FnSig]:
    """A generic function's instances by graph name: one per combination its bounds admit."""
    out: dict[str, FnSig] = {}
    tparams = sig.type_params
    if not tparams:
        return out
    for args in itertools.product(*[[PRIMS[n] for n in BOUNDS[t.bound]] for t in tparams]):
        inst = instance_name(sig.name, args)
        out[inst] = FnSig(
            inst, instantiate(sig.type, args), sig.dim_names, sig.param_names, sig.exported,
            sig.span, sig.name_span, sig.doc, sig.ast, sig.uses, tparams, sig.type_param_spans,
            tuple(args), sig.name,
        )  # fmt: skip
    return out


def _name_rel(fn: ast.Fn) -> tuple[str, int, int] | None:
    """A function's name and its span relative to the function's start."""
    n = fn.name
    if n is None:
        return None
    start = fn.syntax.offset
    sp = n.span
    return n.text, sp.start - start, sp.end - start


def _name_of(fn: ast.Fn, cache: LoweringCache) -> tuple[str, int, int] | None:
    return cache.memo(cache.names, fn.syntax.green, lambda: _name_rel(fn))


def _type_params(fn: ast.Fn, diags: list[Diagnostic]) -> tuple[list[TypeParam], list[Span]]:
    """`<T: Float, U: Int>`: each parameter with its bound, and its name's span. A bad one
    (a bound that does not exist, a name twice or a type's name) is reported and still
    kept, with the bound `Num`, so the body is checked and names resolve."""
    tps: list[TypeParam] = []
    spans: list[Span] = []
    for tp in fn.type_params:
        if tp.name is None:
            continue
        name = tp.name.text
        bound_node = tp.bound
        bound = bound_node.text.strip() if bound_node is not None else ""
        if name in PRIMS or name in [t.name for t in tps]:
            what = "a primitive type" if name in PRIMS else "declared twice"
            diags.append(error("K0206", tp.name.span, f"type parameter `{name}` is {what}"))
            continue
        if bound_node is not None and bound not in BOUNDS:
            diags.append(
                error(
                    "K0208",
                    bound_node.span,
                    f"unknown bound `{bound}`; the bounds are "
                    + ", ".join(f"`{b}` ({', '.join(BOUNDS[b])})" for b in BOUNDS)
                    + did_you_mean(bound, BOUNDS),
                )
            )
        if bound not in BOUNDS:
            bound = "Num"
        tps.append(TypeParam(len(tps), bound, name))
        spans.append(tp.name.span)
    return tps, spans


def _mentions(t: Type, index: int) -> bool:
    if isinstance(t, TypeParam):
        return t.index == index
    if isinstance(t, Tensor):
        return isinstance(t.elem, TypeParam) and t.elem.index == index
    inner = getattr(t, "inner", None)
    return inner is not None and _mentions(inner, index)


def _signature(fn: ast.Fn, env: ModuleEnv) -> tuple:
    """One function's signature as (base, type or None, dims, names, pub, doc, uses, diags,
    type parameters, their spans)."""
    diags: list[Diagnostic] = []
    tparams, tspans = _type_params(fn, diags)
    dims: list[str] = []
    dim_params = fn.dim_params  # each accessor call is a scan of the item's children
    for d in dim_params:
        if d.text in dims:
            diags.append(error("K0206", d.span, f"dimension `{d.text}` is declared twice"))
        elif d.text in [t.name for t in tparams]:
            diags.append(error("K0206", d.span, f"`{d.text}` is already a type parameter"))
        dims.append(d.text)
    sig_uses: list[Use] = []
    resolver = TypeResolver(
        env,
        tuple(dims),
        diags,
        sig_uses,
        tuple(d.span for d in dim_params),
        {t.name: (t, sp) for t, sp in zip(tparams, tspans, strict=True)},
    )
    params: list[Type] = []
    names: list[str] = []
    ok = True
    for p in fn.params:
        t = resolver.resolve(p.type)
        pname = p.name
        if t is None or pname is None:
            ok = False
            continue
        params.append(t)
        names.append(pname.text)
    ret_type = fn.ret_type
    result = resolver.resolve(ret_type) if ret_type is not None else UNIT
    if result is None:
        ok = False
    effects = resolve_effects(fn, diags)
    if ok:
        # the parameters bind what they can; the result type the rest, from the expected
        # type at each call (or `--dims` at the entry), language.md §7.2
        _, unbound = binding_plan((*params, result), len(dims))  # type: ignore[arg-type]
        for i in unbound:
            diags.append(
                error(
                    "K0310",
                    dim_params[i].span,
                    f"dimension `{dims[i]}` must appear in a parameter or the result type on "
                    f"its own or in a form a call can solve (`{dims[i]}`, `{dims[i]} + 1`, "
                    f"`2 * {dims[i]}`), so that each call binds it",
                )
            )
            ok = False
        for t, sp in zip(tparams, tspans, strict=True):
            if not any(_mentions(p, t.index) for p in params):
                diags.append(
                    error(
                        "K0319",
                        sp,
                        f"type parameter `{t.name}` must appear in a parameter type, so that"
                        " each call binds it",
                    )
                )
                ok = False
    ftype = FnType(len(dims), tuple(params), result, effects) if ok else None  # type: ignore[arg-type]
    base = fn.span.start
    return (
        base,
        ftype,
        tuple(dims),
        tuple(names),
        fn.is_pub,
        fn.doc,
        tuple(sig_uses),
        tuple(diags),
        tuple(tparams),
        tuple(tspans),
    )


def _callee_names(sig: FnSig, cache: LoweringCache) -> tuple[str, ...]:
    """Names called in the body, in order (memoised on the body's green node)."""

    def make() -> tuple[str, ...]:
        body = sig.ast.body
        if body is None:
            return ()
        # On the green tree, in preorder, skipping subtrees without a call (no cursors made).
        out = []
        stack = [body.syntax.green]
        push = stack.append
        while stack:
            g = stack.pop()
            if g.kind == K.CALL_EXPR:
                name = _callee_name(g)
                if name is not None:
                    out.append(name)
            for c in reversed(g.children):  # a loop, not a generator: one per node walked
                if not c.is_token and c.kinds_below() & _CALL:
                    push(c)
        return tuple(out)

    return cache.memo(cache.calls, sig.ast.syntax.green, make)


_CALL = 1 << K.CALL_EXPR


def _callee_name(call) -> str | None:
    """``ast.CallExpr(n).callee.name.text`` of a call's green node, when the callee is a
    path with a name (else None)."""
    for c in call.children:
        if c.kind in ast.EXPRS and not c.is_token:
            if c.kind != K.PATH_EXPR:
                return None
            for r in c.children:
                if r.kind == K.NAME_REF and not r.is_token:
                    for t in r.children:
                        if t.kind == K.IDENT and t.is_token:
                            return t.text
                    return ""  # a name without its identifier: the text is ""
            return None
    return None


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


def _components(env: ModuleEnv, callees: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of the call graph of the functions ``callees``
    has (this file's: an imported callee is lowered already), callees first (Tarjan; source
    order among independents, so an acyclic file keeps its depth-first post-order), each
    component's members in source order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    for root in callees:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            name, i = work.pop()
            if i == 0:
                index[name] = low[name] = len(index)
                stack.append(name)
                on_stack.add(name)
            todo = callees[name]
            while i < len(todo):
                c = todo[i]
                i += 1
                if c not in callees:
                    continue  # an imported function
                if c not in index:
                    work.append((name, i))
                    work.append((c, 0))
                    break
                if c in on_stack:
                    low[name] = min(low[name], index[c])
            else:
                if low[name] == index[name]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == name:
                            break
                    out.append(sorted(comp, key=lambda n: env.fns[n].span.start))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[name])
    return out


def _recursive(comp: list[str], callees: dict[str, list[str]]) -> bool:
    return len(comp) > 1 or comp[0] in callees[comp[0]]


def _generic_cycles(
    env: ModuleEnv, diags: list[Diagnostic], comps: list[list[str]], callees: dict
) -> set[str]:
    """Members of recursive components that hold a generic function: K0322 at a call inside
    the component, and the members are not lowered (an instance per type argument would
    need a component per instance)."""
    out: set[str] = set()
    for comp in comps:
        if not _recursive(comp, callees) or not any(env.fns[n].is_generic for n in comp):
            continue
        out.update(comp)
        members = set(comp)
        name = next(n for n in comp if env.fns[n].is_generic)
        call = next((c for c in _calls(env.fns[name], env) if c[0] in members), None)
        span = call[1].span if call is not None else env.fns[name].name_span  # type: ignore[attr-defined]
        calls = f"calls `{call[0]}`, which leads back to `{name}`" if call else "is in a cycle"
        diags.append(
            error("K0322", span, f"a generic function cannot be recursive: `{name}` {calls}")
        )
    return out


class _Callee:
    """What lowering a caller reads of a callee it calls: its hash (for a call inside a
    recursive component, a member reference or a placeholder, ir/cycles.py)."""

    __slots__ = ("hash",)

    def __init__(self, h: bytes) -> None:
        self.hash = h


@dataclass(frozen=True)
class Member:
    """One member of a recursive component, as :func:`lower_component` lowers it: its
    file's environment and signature, the finished functions its body may call outside the
    component (by the names its file calls them), and ``names[j]``: the names member ``j``
    of the component has in this member's file (its own name there, or the names it is
    imported under: a component may cross files, sema/package.py)."""

    env: ModuleEnv
    sig: FnSig
    done: Mapping[str, Function]
    names: tuple[tuple[str, ...], ...]


def lower_component(members: Sequence[Member]) -> list[LoweredFn]:
    """Lower the members of a recursive component and hash them as one unit (docs/graph.md
    "Recursion"): the canonical order is by the members' hashes with every call inside the
    component naming a placeholder, refined while it splits ties by the keys of the members
    each one calls; ties that remain (interchangeable members) keep the order given (source
    order; across files, the package's file order first). The lowerings come back in the
    order given."""
    k = len(members)

    def lower_with(refs: Sequence[bytes]) -> list[LoweredFn]:
        out = []
        for m in members:
            inside = {n: _Callee(refs[j]) for j in range(k) for n in m.names[j]}
            out.append(_lower_guarded(m.env, m.sig, {**m.done, **inside}))  # type: ignore[dict-item]
        return out

    first = lower_with([PLACEHOLDER] * k)
    if any(lf.function is None for lf in first):  # no member can be hashed
        return [dataclasses.replace(lf, function=None) for lf in first]
    keys = [lf.function.hash for lf in first]  # type: ignore[union-attr]
    for _ in range(k):
        classes = len(set(keys))
        if classes == k:
            break
        again = lower_with([digest("fn", b"member class" + h) for h in keys])
        keys = [digest("fn", h + lf.function.hash) for h, lf in zip(keys, again, strict=True)]  # type: ignore[union-attr]
        if len(set(keys)) == classes:
            break
    order = sorted(range(k), key=lambda i: (keys[i], i))
    position = {i: p for p, i in enumerate(order)}
    final = lower_with([member_ref(position[i]) for i in range(k)])
    fns = [final[i].function for i in order]
    if any(f is None for f in fns):  # (not reached: the same bodies lowered the first time)
        return [dataclasses.replace(lf, function=None) for lf in final]
    ch = component_hash([f.hash for f in fns])  # type: ignore[union-attr]
    out = []
    for i, lf in enumerate(final):
        f = lf.function
        g = Function(f.name, f.type, f.region, f.exported, f.outputs, ch, position[i])  # type: ignore[union-attr]
        out.append(dataclasses.replace(lf, function=g))
    return out


def _lower_component(
    env: ModuleEnv, comp: list[str], done: dict[str, Function]
) -> dict[str, LoweredFn]:
    """:func:`lower_component` of a component within one file (``comp`` in source order)."""
    names = tuple((n,) for n in comp)
    lfs = lower_component([Member(env, env.fns[n], done, names) for n in comp])
    return dict(zip(comp, lfs, strict=True))


def component_key(parts: Sequence[bytes], outside: Sequence[bytes]) -> bytes:
    """The cache key of a component's lowering: per member (in a fixed order) what its own
    key is made of — its text and what it reads of the other items (sema/deps.py) — and the
    hashes of the functions outside the component that the members call."""
    w = Writer()
    w.str("component")
    w.uvar(len(parts))
    for p in parts:
        w.raw(p)
    for h in outside:
        w.bytes(h)
    return digest("fn", w.getvalue())


def _text_digest(green, source: bytes | None = None, start: int = 0) -> bytes:
    """The digest of a function's text. ``source`` is the file's UTF-8 when it has no lone
    surrogate (then ``encode`` of any piece of it is a slice of it): the function's bytes
    are ``source[start:end]``, no walk over its tokens needed."""
    w = Writer()
    if source is None:
        w.str(text_of(green))
    else:
        w.bytes(source[start : start + green.text_len])
    return digest("fn", w.getvalue())


def _utf8(text: str) -> bytes | None:
    """``text`` as strict UTF-8, None if it holds a lone surrogate (an invalid byte)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _cache_key(text: bytes, env_digest: bytes, callee_hashes: Sequence[bytes]) -> bytes:
    w = Writer()
    w.raw(text)
    w.raw(env_digest)
    for h in callee_hashes:
        w.raw(h)
    return digest("fn", w.getvalue())


def _shape_key(text: bytes, env_digest: bytes, present: Sequence[bool]) -> bytes:
    """What a lowering's diagnostics, types and uses depend on: no callee hashes."""
    w = Writer()
    w.str("shape")
    w.raw(text)
    w.raw(env_digest)
    w.raw(bytes(present))
    return digest("fn", w.getvalue())


class _StandIn:
    """Takes the place of a deferred callee's Function while lowering a caller for its
    diagnostics: the lowering reads a callee's hash only."""

    __slots__ = ("hash",)

    def __init__(self, name: str) -> None:
        self.hash = digest("fn", b"deferred stand-in:" + encode(name))


class _Shifted(Mapping):
    """``expr_types`` of a cached lowering seen from where the function now starts."""

    __slots__ = ("base", "delta")

    def __init__(self, base: dict, delta: int) -> None:
        self.base = base
        self.delta = delta

    def __getitem__(self, key):
        a, b, k = key
        return self.base[(a - self.delta, b - self.delta, k)]

    def __iter__(self):
        d = self.delta
        return ((a + d, b + d, k) for (a, b, k) in self.base)

    def __len__(self) -> int:
        return len(self.base)


class _ShiftedUses(Sequence):
    """Uses of a cached lowering (or signature), shifted only when read."""

    __slots__ = ("base", "delta")

    def __init__(self, base, delta: int) -> None:
        self.base = base
        self.delta = delta

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [u.shifted(self.delta) for u in self.base[i]]
        return self.base[i].shifted(self.delta)

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self):
        d = self.delta
        return (u.shifted(d) for u in self.base)


def _rebased(lf: LoweredFn, sig: FnSig) -> LoweredFn:
    """A cached lowering moved to where the function now sits in the file."""
    if isinstance(lf, PendingGraph):  # its graph, when read, rebased too
        delta = sig.span.start - lf.base
        diags = [d.shifted(delta) for d in lf.diagnostics] if delta else lf.diagnostics
        types = _Shifted(lf.expr_types, delta) if delta else lf.expr_types
        uses = _ShiftedUses(lf.uses, delta) if delta else lf.uses
        return lf.relocated(sig, diags, sig.span.start, types, uses, lambda f: _rebased(f, sig))
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
    types = _Shifted(lf.expr_types, delta) if delta else lf.expr_types
    uses = _ShiftedUses(lf.uses, delta) if delta else lf.uses
    return LoweredFn(
        sig, lf.function, lf.nodes, lf.regions, prov, diags, sig.span.start, types, uses
    )


def _lower_guarded(
    env: ModuleEnv, sig: FnSig, done: dict[str, Function], keep: tuple | None = None
) -> LoweredFn:
    """Lower one function; a body too deep even for the raised limit gets K0108, not a crash.
    With ``keep`` (the cache's traces, the shape key's inputs but the text, the shape key), a
    long body's trace is kept for the next edit in it (sema/body_reuse.py)."""
    try:
        with deep_recursion():
            if keep is not None:
                return anchored(lower_recorded(env, sig, done, *keep), env)
            return anchored(FnLowering(env, sig, done).lower(), env)
    except RecursionError:
        d = error(
            "K0108",
            sig.name_span,
            f"`{sig.name}` is nested too deeply to analyse; split long expressions with `let`",
        )
        prov = FnProvenance(
            sig.name, sig.span, sig.name_span, sig.dim_names, sig.param_names, doc=sig.doc
        )
        return LoweredFn(sig, None, {}, {}, prov, [d], sig.span.start)


def lower_module(
    parse: Parse,
    cache: LoweringCache | None = None,
    defer: bool = False,
    imports: Imports | None = None,
    watch: Watch | None = None,
    split: Callable[[Split], frozenset[str] | None] | None = None,
) -> Module:
    """Build the graph of a parsed file; never raises on bad input.

    With ``defer``, callers whose lowering would differ only in their callees' hashes
    are not re-lowered now: their diagnostics, types and uses come from the cached
    lowering of the same shape, and the graph is completed when first read.

    ``imports`` (a file of a package, sema/package.py) are the items its `use`
    declarations bring in, already lowered in their own files: a call to an imported
    function names the callee's hash, exactly as a call to one of this file's does. ``watch``
    is asked between functions (kera_core/cancel.py): :class:`Abandoned` when it says stop.

    ``split`` (the parallel `kera check`, kera_core/jobs.py) is called once the items and
    signatures are collected and the call graph is known, with a :class:`Split`; what it
    returns is the set of functions this process lowers (closed under calls: it holds every
    function its members call), or None for all of them. A module lowered in part holds
    only those functions, their diagnostics, and the module-level ones.
    """
    # Lowering allocates millions of small acyclic objects: the cyclic GC is paused
    # meanwhile (its full passes over a big file's trees cost ~10 %).
    with deep_recursion(quiet_gc=True):
        return _lower_module(parse, cache, defer, imports, watch, split)


@dataclass(frozen=True)
class Split:
    """What :func:`lower_module` tells a ``split`` callback: the file's environment, its
    functions in lowering order (callees first), the in-file functions each one calls, and
    the diagnostics found before lowering (the items', the signatures', the constants' and
    K0322), in the order the module's diagnostics list holds them before it is sorted."""

    env: ModuleEnv
    order: list[str]
    callees: dict[str, list[str]]
    diagnostics: list[Diagnostic]


def _lower_module(
    parse: Parse,
    cache: LoweringCache | None,
    defer: bool,
    imports: Imports | None = None,
    watch: Watch | None = None,
    split: Callable[[Split], frozenset[str] | None] | None = None,
) -> Module:
    cache = cache if cache is not None else LoweringCache()
    diags: list[Diagnostic] = []
    root = ast.SourceFile(parse.tree)
    env = ModuleEnv()
    items = root.items
    source = _Source(parse.text)
    if imports is not None:
        env.imported = imports.items
        env.modules = imports.modules
        env.structs.update(imports.structs)
        env.imported_consts = imports.consts
        env.failed_imports = imports.failed
    decl: list[Diagnostic] = []  # the structs' and constants' (sema/incremental.py keeps them)
    _collect_consts(env, decl, items, primitive=True)  # a struct's tensor field may use one
    _collect_structs(root, env, decl, items)
    fn_diags: list[Diagnostic] = []
    deps = _collect_signatures(root, env, fn_diags, cache, items, source, decl)
    local = list(env.fns)
    if imports is not None:  # a local item of the same name wins (sema/package.py reports it)
        for name, sig in imports.fns.items():
            env.fns.setdefault(name, sig)
        for name, sig in imports.instances.items():
            env.instances.setdefault(name, sig)
    checked = _checked_constants(env, items, cache, deps)
    diags += decl + fn_diags + checked
    deps.add_functions(env, cache.items)
    callees = {
        name: [c for c in _callee_names(env.fns[name], cache) if c in env.fns] for name in local
    }
    comps = _components(env, callees)
    # the members of components across files, lowered by the package (sema/package.py)
    given = {n: lf for n, lf in imports.members.items() if n in callees} if imports else {}
    skipped = _generic_cycles(env, diags, [c for c in comps if c[0] not in given], callees)
    cyclic = {
        n: comp
        for comp in comps
        if _recursive(comp, callees) and comp[0] not in skipped and comp[0] not in given
        for n in comp
    }
    order = [n for comp in comps for n in comp if n not in skipped]
    defer = defer and not cyclic and not given  # a component is lowered whole, never deferred
    # What is lowered: each function, or each instance of a generic one (callees first)
    units_of = {n: instances_of(env, n) for n in order}
    units = [u for n in order for u in units_of[n]]
    unit_sig = {u: env.instances.get(u) or env.fns[u] for u in units}
    unit_callees = {
        u: [c for callee in callees[unit_sig[u].generic or u] for c in instances_of(env, callee)]
        for u in units
    }
    only = None
    if split is not None and not given:
        only = split(Split(env, order, callees, list(diags)))
    if only is not None:  # this process lowers its share only (callees included)
        units = [u for u in units if (unit_sig[u].generic or u) in only]

    def text_digest(green, start: int) -> bytes:
        return _text_digest(green, source.utf8, start)

    # what each function (each instance: the generic function's) reads of the other items
    env_keys = {
        n: cache.key(
            sig.ast.syntax.green, key_digest, deps.key_parts(source.mentions(sig.ast.syntax, cache))
        )
        for n, sig in ((n, env.fns[n]) for n in local if only is None or n in only)
    }

    def texts_of(name: str) -> bytes:
        g = env.fns[name].ast.syntax.green
        return cache.memo(cache.texts, g, lambda: text_digest(g, env.fns[name].span.start))

    # functions whose graph is final: the imported ones to begin with
    done: dict[str, Function] = dict(imports.functions) if imports is not None else {}
    stand_ins: dict[str, _StandIn] = {}  # deferred callers that lowered cleanly
    deferred: list[str] = []
    lowered: dict[str, LoweredFn] = {}
    live: set[bytes] = set()
    live_shapes: set[bytes] = set()
    texts: dict[str, bytes] = {}
    called_of: dict[str, list[str]] = {}
    per_instance: dict[str, list[Diagnostic]] = {}
    for k, name in enumerate(units):
        check(watch, "lowering", k, len(units))
        sig = unit_sig[name]
        called = called_of[name] = sorted(set(unit_callees[name]))
        if name in given:  # a member of a component across files, lowered by the package
            lf = _rebased(given[name], sig)
            lf.shape = digest("fn", b"component member" + texts_of(name))
            lowered[name] = lf
            diags.extend(lf.diagnostics)
            if lf.function is not None:
                done[name] = lf.function
            continue
        if name in cyclic:  # a recursive component: its members lowered and hashed together
            if name == cyclic[name][0]:
                comp = cyclic[name]
                members = set(comp)
                outside = sorted(
                    {
                        u
                        for m in comp
                        for c in callees[m]
                        if c not in members
                        for u in instances_of(env, c)
                    }
                )  # a generic callee: each of its instances (the one called is in the text)
                ckey = component_key(
                    [texts_of(m) + env_keys[m] for m in comp],
                    [done[c].hash if c in done else b"" for c in outside],
                )
                live.add(ckey)
                hit = cache.components.get(ckey)
                if hit is not None and all(lf.relocatable for lf in hit):
                    cache.reused += len(comp)
                    lfs = [_rebased(lf, env.fns[m]) for m, lf in zip(comp, hit, strict=True)]
                else:
                    made = _lower_component(env, comp, done)
                    cache.lowered += len(comp)
                    cache.components[ckey] = [made[m] for m in comp]
                    lfs = [made[m] for m in comp]
                for m, lf in zip(comp, lfs, strict=True):
                    lf.shape = digest("fn", b"component member" + texts_of(m))
                    lowered[m] = lf
                    diags.extend(lf.diagnostics)
                    if lf.function is not None:
                        done[m] = lf.function
            continue
        green = sig.ast.syntax.green
        text = texts[name] = _with_type_args(
            cache.memo(cache.texts, green, lambda g=green, s=sig: text_digest(g, s.span.start)),
            sig,
        )
        lf: LoweredFn | None = None
        key = None
        env_digest = env_keys[sig.generic or name]
        if not any(c in stand_ins for c in called):
            hashes = tuple(done[c].hash if c in done else b"" for c in called)
            key = cache.key(green, _cache_key, text, env_digest, hashes)
            live.add(key)
            lf = _reusable(cache.entries.get(key), sig, env)
        present = tuple(c in done or c in stand_ins for c in called)
        skey = cache.key(green, _shape_key, text, env_digest, present)
        live_shapes.add(skey)
        final = True  # is lf's graph this version's (else it is completed on demand)?
        if lf is not None:
            cache.reused += 1
            lf = _rebased(lf, sig)
        elif defer and (hit := _reusable(cache.shapes.get(skey), sig, env)) is not None:
            cache.deferred += 1
            lf, final = _rebased(hit, sig), False
        elif key is None:  # a callee is deferred: lower against stand-ins, for diagnostics
            keep = (cache.bodies, (env_digest, present), skey)
            lf = _lower_guarded(env, sig, {**done, **stand_ins}, keep)
            cache.shapes[skey] = lf
            cache.lowered += 1
            cache.deferred += 1
            lf, final = _rebased(lf, sig), False
        else:
            lf = _lower_guarded(env, sig, done, (cache.bodies, (env_digest, present), skey))
            cache.entries[key] = cache.shapes[skey] = lf
            cache.lowered += 1
        lf.shape = skey
        lowered[name] = lf
        if sig.generic:
            per_instance[name] = lf.diagnostics
        else:
            diags.extend(lf.diagnostics)
        if not final:
            deferred.append(name)
            if lf.lowers:  # (a PendingGraph's is read without building its graph)
                stand_ins[name] = _StandIn(name)
        elif lf.function is not None:
            done[name] = lf.function
    functions = {n: lowered[n] for n in order if n in lowered}
    for n in order:
        if env.fns[n].is_generic and (only is None or n in only):
            insts = units_of[n]
            merged = _merged_diagnostics(env.fns[n], [unit_sig[u] for u in insts], per_instance)
            diags.extend(merged)
            functions[n] = _representative(env.fns[n], [lowered[u] for u in insts], merged)
    cache.prune(live, live_shapes)
    for n in [n for n in cache.bodies if n not in env.fns]:
        del cache.bodies[n]  # (a function gone or renamed: its body's trace too)
    alive = {id(sig.ast.syntax.green) for sig in env.fns.values()}
    alive.update(id(i.syntax.green) for i in items if isinstance(i, ast.Const | ast.Struct))
    tables = (cache.calls, cache.texts, cache.sigs, cache.keys, cache.names, cache.idents)
    for table in (*tables, cache.items):
        for k in [k for k in table if k not in alive]:
            del table[k]
    diags.sort(key=sort_key)

    def finish() -> tuple[Graph, Provenance]:
        with deep_recursion(quiet_gc=True):
            return _finish()

    def _finish() -> tuple[Graph, Provenance]:
        final = dict(done)
        for name in deferred:
            sig = unit_sig[name]
            called = called_of[name]
            key = _cache_key(
                texts[name],
                env_keys[sig.generic or name],
                [final[c].hash if c in final else b"" for c in called],
            )
            lf = _reusable(cache.entries.get(key), sig, env)
            if lf is None:
                lf = _lower_guarded(env, sig, final)
                cache.entries[key] = lf
                cache.lowered += 1
            lf = _rebased(lf, sig)
            lf.shape = lowered[name].shape
            lowered[name] = lf  # the same analysis, now with its final graph
            if name in functions:
                functions[name] = lf
            if lf.function is not None:
                final[name] = lf.function
        return _assemble(units, lowered)

    if not deferred:
        graph, prov = _assemble(units, lowered)
        module = Module(graph, prov, env, diags, functions, instances=lowered)
    else:
        module = Module(None, None, env, diags, functions, finish, instances=lowered)
    # what an edit inside one function needs to redo that function only (sema/incremental.py);
    # a file with imports is lowered whole on every edit (its cache still skips the rest)
    if imports is None and only is None:
        module.made_from = (
            parse.tree, callees, called_of, deps, env_keys, frozenset(deferred), decl + checked
        )  # fmt: skip
    module.recursive = frozenset(cyclic) | frozenset(given)
    module.components = cyclic
    module.unit_key = lambda name: texts_of(name) + env_keys[name]
    return module


def instances_of(env: ModuleEnv, name: str) -> list[str]:
    """What lowering ``name`` means: the function itself, or each instance of a generic one."""
    sig = env.fns[name]
    if not sig.is_generic:
        return [name]
    return [u for u, inst in env.instances.items() if inst.generic == name]


def _with_type_args(text: bytes, sig: FnSig) -> bytes:
    """An instance's text key: the generic function's text and the type arguments."""
    if not sig.type_args:
        return text
    w = Writer()
    w.raw(text)
    for a in sig.type_args:
        w.raw(a.hash)
    return digest("fn", w.getvalue())


def _merged_diagnostics(
    generic: FnSig, instances: list[FnSig], per_instance: dict[str, list[Diagnostic]]
) -> list[Diagnostic]:
    """A generic function's diagnostics, from checking its body once per instance: each
    error once, at the definition. One that only some instances have (or whose message
    names the type) says for which type arguments (`with T = i32, which `T: Num`
    admits`)."""
    by_key: dict[tuple, list[tuple[FnSig, Diagnostic]]] = {}
    for inst in instances:
        for d in per_instance.get(inst.name, ()):
            by_key.setdefault((d.code, d.span.start, d.span.end), []).append((inst, d))
    out: list[Diagnostic] = []
    for found in by_key.values():
        inst, d = found[0]
        if len(found) < len(instances) or len({x.message for _, x in found}) > 1:
            args = ", ".join(
                f"`{tp.name}` = `{a.name}`"
                for tp, a in zip(inst.type_params, inst.type_args, strict=True)
            )
            bounds = ", ".join(f"`{tp.name}: {tp.bound}`" for tp in inst.type_params)
            notes = tuple(
                Related(sp, f"`{tp.name}: {tp.bound}` admits `{a.name}`")
                for tp, a, sp in zip(
                    inst.type_params, inst.type_args, inst.type_param_spans, strict=True
                )
            )
            d = dataclasses.replace(
                d,
                message=f"{d.message} (with {args}, which {bounds} admits)",
                related=(*d.related, *notes),
            )
        out.append(d)
    return out


def _representative(
    generic: FnSig, instances: list[LoweredFn], diagnostics: list[Diagnostic]
) -> LoweredFn:
    """What a generic function's entry in ``Module.functions`` holds: the generic signature,
    the diagnostics of all its instances, and its first instance's analysis (uses, types)
    with each type that differs between the instances spelled with `T` (`let s = 0.0` in
    a `T: Float` body is a `T`), for hovers and hints. Ownership is checked on it: moves
    and borrows depend on what is a tensor, never on the element type."""
    first = instances[0]
    types = dict(first.expr_types)
    for key, t in types.items():
        if any(o.expr_types.get(key) != t for o in instances[1:]):
            types[key] = _generalized(t, first.sig)
    rep = dataclasses.replace(first, sig=generic, diagnostics=diagnostics, expr_types=types)
    rep.shape = first.shape
    return rep


def _generalized(t: Type, inst: FnSig) -> Type:
    """``t`` of an instance with its type arguments spelled as the type parameters."""
    if isinstance(t, Prim):
        for tp, arg in zip(inst.type_params, inst.type_args, strict=True):
            if arg == t:
                return tp
        return t
    if isinstance(t, Tensor):
        return Tensor(_generalized(t.elem, inst), t.shape, t.space)  # type: ignore[arg-type]
    if isinstance(t, Ref):
        return Ref(_generalized(t.inner, inst), t.mutable)
    return t


def _checked_constants(
    env: ModuleEnv, items: list[ast.Item], cache: LoweringCache, deps: Deps
) -> list[Diagnostic]:
    """:func:`check_constants`, reused while the constants' text and what they can see are
    the same (the same interned constant items, in order, the same structs and constants —
    ``Deps.type_items`` covers every constant's value and type and the structs — and the
    same function names, which a constant naming one reports): each diagnostic lies inside
    one constant and moves with it. A result with a diagnostic (or a related span or fix)
    reaching outside its constant is not kept."""
    consts = [i for i in items if isinstance(i, ast.Const)]
    key = (
        deps.type_names,
        sorted(deps.type_items.items()),
        sorted(env.fns),
        tuple([id(c.syntax.green) for c in consts]),
    )
    hit = cache.consts
    if hit is not None and hit[0] == key:
        _, _greens, kept, bad, uses = hit
        env.bad_consts |= bad
        starts = [c.syntax.offset for c in consts]
        env.uses += [u.shifted(starts[i] - base) if starts[i] != base else u for i, base, u in uses]
        return [d.shifted(starts[i] - base) if starts[i] != base else d for i, base, d in kept]
    n_uses = len(env.uses)
    out = check_constants(env)
    spans = [c.span for c in consts]
    # the initializers' uses, each with its constant (in file order, as the check made them)
    starts = [sp.start for sp in spans]
    placed = []
    for u in env.uses[n_uses:]:
        i = bisect_right(starts, u.span.start) - 1
        placed.append((i, starts[i], u))
    kept: list[tuple[int, int, Diagnostic]] | None = []
    for d in out:
        inside = [d.span, *(r.span for r in d.related)]
        if d.fix is not None:
            inside += [e.span for e in d.fix.edits]
        i = next((i for i, sp in enumerate(spans) if all(sp.covers(x) for x in inside)), None)
        if i is None:
            kept = None
            break
        kept.append((i, spans[i].start, d))  # type: ignore[union-attr]
    greens = tuple(c.syntax.green for c in consts)  # kept alive: their ids stay theirs
    cache.consts = None if kept is None else (key, greens, kept, frozenset(env.bad_consts), placed)
    return out


def _reusable(lf: LoweredFn | None, sig: FnSig, env: ModuleEnv) -> LoweredFn | None:
    """A cached lowering, if it can stand for ``sig`` where it is now (``_rebased`` moves it
    there). One whose diagnostics point into other functions (the cache key holds no
    positions) is reused when each header they point into has the same text as when it was
    lowered (:func:`anchored`): those spans are moved with their header, here, by how much
    more than the function itself it moved; otherwise it is not reused."""
    if lf is None:
        return None
    if lf.relocatable:
        return lf
    anchors = lf.anchors
    if not anchors:
        return None
    own = sig.span.start - lf.base  # what _rebased will shift every span by
    moves = []
    for name, start, end, text in anchors:
        now = env.fns.get(name)
        if now is None:
            return None
        header = fn_header(now.ast.syntax)
        if header is None or header[2] != text:
            return None
        if header[0] - start != own:
            moves.append((start, end, header[0] - start - own))
    if not moves:
        return lf
    span = lf.sig.span

    def place(s: Span) -> Span:
        if span.covers(s):
            return s
        for start, end, by in moves:
            if start <= s.start and s.end <= end:
                return s.shifted(by)
        return s

    return _with_diagnostics(lf, [_mapped(d, place) for d in lf.diagnostics])


def fn_header(node: SyntaxNode) -> tuple[int, int, str] | None:
    """Where a function's header lies — its name to its body, the part of it another
    function's diagnostic can name (its name, a parameter, the result type, a type
    parameter) — and its text; None when it has no name."""
    at = node.offset
    start = None
    parts = []
    for c in node.green.children:
        if c.kind == K.BLOCK:
            break
        if start is None and c.kind == K.NAME:
            start = at
        if start is not None:
            parts.append(str(c))
        at += c.text_len
    if start is None:
        return None
    return start, at, "".join(parts)


def anchored(lf: LoweredFn, env: ModuleEnv) -> LoweredFn:
    """``lf`` with its anchors set (``LoweredFn.anchors``) when its diagnostics point into
    other functions, each span inside the header of a function its text calls."""
    if lf.relocatable:
        return lf
    span = lf.sig.span
    names = {u.name for u in unmoved_uses(lf.uses) if u.kind == "fn"}
    headers = [
        (n, h) for n in sorted(names) if n in env.fns for h in [fn_header(env.fns[n].ast.syntax)]
    ]
    used: dict[str, tuple] = {}
    for d in lf.diagnostics:
        spans = [d.span, *(r.span for r in d.related if r.path is None)]
        if d.fix is not None:
            spans += [e.span for e in d.fix.edits]
        for s in spans:
            if span.covers(s):
                continue
            for n, h in headers:
                if h is not None and h[0] <= s.start and s.end <= h[1]:
                    used[n] = (n, *h)
                    break
            else:
                return lf  # a span outside every callee's header: not reused where it moves
    lf.anchors = tuple(used.values())
    return lf


def _mapped(d: Diagnostic, place) -> Diagnostic:
    """``d`` with each of its spans (in this file) given by ``place``."""
    span = place(d.span)
    related = tuple(
        r if r.path is not None or (sp := place(r.span)) is r.span else Related(sp, r.message)
        for r in d.related
    )
    fix = d.fix
    if fix is not None:
        edits = tuple(
            e if (sp := place(e.span)) is e.span else Edit(sp, e.new_text) for e in fix.edits
        )
        if any(a is not b for a, b in zip(edits, fix.edits, strict=True)):
            fix = Fix(fix.title, edits)
    if span is d.span and fix is d.fix and all(map(operator.is_, related, d.related)):
        return d
    return dataclasses.replace(d, span=span, related=related, fix=fix)


def _with_diagnostics(lf: LoweredFn, diags: list[Diagnostic]) -> LoweredFn:
    """``lf`` with other diagnostics (its graph, when made later, too)."""
    if isinstance(lf, PendingGraph):
        return lf.relocated(
            lf.sig, diags, lf.base, lf.expr_types, lf.uses, lambda f: _with_diagnostics(f, diags)
        )
    out = LoweredFn(
        lf.sig, lf.function, lf.nodes, lf.regions, lf.provenance, diags, lf.base,
        lf.expr_types, lf.uses,
    )  # fmt: skip
    out.shape = lf.shape
    return out


def _assemble(order: list[str], lowered: dict[str, LoweredFn]) -> tuple[Graph, Provenance]:
    graph = Graph()
    prov = Provenance()
    for name in order:
        lf = lowered[name]
        assert lf.provenance is not None
        prov.functions[name] = lf.provenance
        if lf.function is not None:
            graph.nodes.update(lf.nodes)
            graph.regions.update(lf.regions)
            graph.functions[name] = lf.function
    return graph, prov
