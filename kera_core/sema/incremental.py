"""A module after an edit inside one item, in time proportional to what depends on it.

:func:`relower_module` takes the :class:`Module` of the previous version and the new
parse. When the file's items are the same interned green nodes but one — a function whose
name and calls are unchanged (a keystroke in its body or its signature), or a struct or
constant under the same name — the new module is the old one with that item's entries, and
those of the functions that depend on it, replaced; nothing is done per other function:

* **Positions are item-relative until read.** Every per-item entry — a function's
  :class:`FnSig`, its :class:`LoweredFn`, an instance's, a constant's ``ConstDef`` — is kept
  as (the item's child index in the file's root, the value as made at some version), and
  :class:`Placed` makes the value at the item's *current* offset only when it is read (a
  moved lowering is shifted exactly as ``_rebased`` shifts a cached one). The tables are
  shared between versions and copied (in C) with the changed entry replaced, so an edit
  does not rebase every later function.
* **Module aggregates are patched.** The diagnostics are the old ones without the changed
  function's (its signature's and lowering's), the rest moved by the edit's length when they
  lie after it, plus the new ones; a diagnostic of another item reaching into the changed
  function sends the edit down the full path. A lowering whose diagnostics point into
  other items (``LoweredFn.relocatable`` false: a call's mismatch names the callee's
  parameter) moves with its item while it and what it points to lie on one side of the
  edit, and is moved span by span when the edit falls between them.
* **Dependants only.** The function is lowered as ``lower_module(defer=True)`` would. What
  another function reads of it is its signature (``Deps.item``, sema/deps.py): when that is
  the same (a body edit), its callers are lowered again only when it starts or stops
  lowering at all (their shape records which callees lowered), callees first; when it
  changed, the functions whose text names it (``State.named_in``) are lowered again too,
  with their new per-function keys. A struct or constant edit collects the declarations
  again (few; the structs stay when a constant changed, the constants and their check
  when no constant names a changed struct), and the functions that name a changed struct
  or constant (through constants, transitively) get their signature made again — when it
  changes, what names them follows — and are lowered again.
* **A long body, statement by statement.** A function of many statements is lowered from
  its body's trace (sema/body_reuse.py): the statements the edit changed and those after
  them until the state converges; its graph is made when read (a shape entry, the function
  marked stale).
* **The graph is built on demand**: the first read of ``Module.graph``/``provenance``
  runs the full :func:`~kera_core.sema.module.lower_module` (which finds every other
  function in the lowering cache) and adopts its graph, functions and environment.

A generic function's body edit lowers each of its instances again and merges their
diagnostics; an edit inside a member of a recursive component (lowered and hashed with its
component, docs/graph.md "Recursion") takes the full path; a later definition of a name (not lowered) only moves its K0202. Anything
else — an item added, removed or renamed, a function leaving or joining ``env.fns`` (its
signature no longer resolves), a struct that stops resolving, a generic function's
signature changed or a generic function among the dependants, a member of a recursive
component among them, the call list changed, another item's diagnostic pointing into the edited one
— returns None and the caller runs the full ``lower_module`` (which, with per-function
keys, still lowers only what depends on the change). The items are told apart by green-node identity (after a full
reparse, which makes new nodes, by structural equality). The result is equal to a
cold analysis; that is what ``tests/test_incremental_equals_cold.py`` checks, edit by edit.

:func:`sig_at` and :func:`sigs_between` answer "which function is here" from the item
table, so that a query after an edit does not make every function's entry.
"""

from __future__ import annotations

import dataclasses
import logging
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter, is_

from kera_core.diagnostics import Diagnostic, sort_key
from kera_core.diagnostics.diagnostic import Edit, Fix, Related
from kera_core.ir.provenance import FnProvenance
from kera_core.sema.body_reuse import PendingGraph, resume
from kera_core.sema.deps import Deps, key_digest, mentions, text_of
from kera_core.sema.env import ConstDef, FnSig, ModuleEnv, Use
from kera_core.sema.lower import LoweredFn
from kera_core.sema.module import (
    LoweringCache,
    Module,
    _cache_key,
    _callee_names,
    _checked_constants,
    _collect_consts,
    _collect_structs,
    _defined_twice,
    _fn_signature,
    _instances,
    _lower_guarded,
    _merged_diagnostics,
    _name_of,
    _rebased,
    _representative,
    _reusable,
    _shape_key,
    _Shifted,
    _ShiftedUses,
    _Source,
    _StandIn,
    _text_digest,
    _type_deps,
    _utf8,
    _with_type_args,
    lower_module,
)
from kera_core.source import Span
from kera_core.stack import deep_recursion
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.syntax.parse import Parse
from kera_core.syntax.tree import SyntaxNode

log = logging.getLogger(__name__)
_LEN = attrgetter("text_len")
_ITEM_KINDS = (K.FN, K.CONST, K.STRUCT)
#: an item's identifiers are read off its own text here (no whole-file encoding per edit)
_ITEM_TEXT = _Source(None)
#: shape-cache entries added by edits here (``lower_module``'s prune does not see them)
#: are dropped oldest first beyond this many
KEEP_SHAPES = 64


class Layout:
    """Where each child of a file's root starts (computed in C, when first asked)."""

    __slots__ = ("root", "children", "_offsets")

    def __init__(self, root: SyntaxNode, offsets: list[int] | None = None) -> None:
        self.root = root
        self.children = root.green.children
        self._offsets = offsets

    @property
    def offsets(self) -> list[int]:
        if self._offsets is None:
            self._offsets = list(accumulate(map(_LEN, self.children), initial=self.root.offset))
        return self._offsets

    def node(self, i: int) -> SyntaxNode:
        """The i-th child as ``wrapped_children`` makes it."""
        return SyntaxNode(self.children[i], self.root, self.offsets[i], i)


_MISSING = object()


class PlacedUses(Sequence):
    """``ModuleEnv.uses`` (names in struct and constant declarations) kept as (child index,
    where that child started, use) and made where their items now are when first read."""

    __slots__ = ("base", "layout", "_made")

    def __init__(self, base: list, layout: Layout) -> None:
        self.base = base
        self.layout = layout
        self._made: list[Use] | None = None

    def _list(self) -> list[Use]:
        if self._made is None:
            at = self.layout.offsets
            self._made = [u if at[i] == s else u.shifted(at[i] - s) for i, s, u in self.base]
        return self._made

    def __getitem__(self, i):
        return self._list()[i]

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self):
        return iter(self._list())


class Placed(Mapping):
    """A table of per-item values, each kept as (child index, value made at some version)
    and made at the item's current place when first read."""

    __slots__ = ("base", "move", "_made")

    def __init__(self, base: dict, move: Callable) -> None:
        self.base = base
        self.move = move  # (value, child index) -> the value where that child now is
        self._made: dict = {}

    def __getitem__(self, key):
        v = self._made.get(key, _MISSING)
        if v is _MISSING:
            i, old = self.base[key]
            v = self._made[key] = self.move(old, i)
        return v

    def __contains__(self, key) -> bool:
        return key in self.base

    def get(self, key, default=None):
        return self[key] if key in self.base else default

    def __iter__(self):
        return iter(self.base)

    def __len__(self) -> int:
        return len(self.base)


@dataclass
class State:
    """What :func:`relower_module` keeps per module version (tables shared between versions)."""

    root: SyntaxNode
    children: tuple
    offsets: list[int]  # where each child starts
    struct_spans: dict  # name -> (child index, (where it started, Span))
    field_spans: dict  # (struct, field) -> (child index, (where it started, Span))
    uses: list  # (child index, where it started, Use)
    fns: dict  # name -> (child index, FnSig)
    instances: dict  # graph name -> (child index, FnSig)
    consts: dict  # name -> (child index, ConstDef)
    functions: dict  # name -> (child index, LoweredFn)  (Module.functions)
    lowered: dict  # graph name -> (child index, LoweredFn)  (Module.lowered)
    item_fn: dict  # child index -> the name of a non-generic function lowered there
    fn_at: dict  # child index -> the name of the function (in env.fns) there
    # the entries of functions (0) and lowered (1) that are not relocatable, by (table, key):
    # the extent of the item and of every span of its diagnostics, where the entry was made
    fixed: dict
    callees: dict  # name -> the functions of the file it calls (as lower_module found them)
    called: dict  # graph name -> the sorted graph names it calls
    callers: dict  # graph name -> the graph names that call it
    stale: frozenset  # graph names whose lowering's graph part is not final (deferred)
    deps: Deps  # what the functions can see of the other items (sema/deps.py)
    env_keys: dict  # name -> the digest of what that function reads of other items
    # the diagnostics of the structs' and constants' declarations and of the constants'
    # check, where they are in this version
    decl_diags: list
    # item name -> the functions (by name, in env.fns) whose text names it: made when an
    # item's digest first changes (:func:`_named_in`), kept while no body edit names another
    named_in: dict | None = None
    decls: list | None = None  # the child indices of the structs and constants, when asked


def prepare(module: Module) -> None:
    """Make ``module``'s item tables now (a full lowering's), so that the next edit's
    :func:`relower_module` does not."""
    try:
        with deep_recursion(quiet_gc=True):
            _state_of(module)
    except Exception:  # only a speed-up: the next edit lowers the module instead
        log.exception("making the item tables failed")
        module.made_from = None


def _state_of(module: Module) -> State | None:
    """The incremental state of ``module`` (from its own build, or made now from a full one)."""
    if module.incremental is not None:
        return module.incremental
    if module.made_from is None:
        return None
    root, callees, called, deps, env_keys, deferred, decl_diags = module.made_from
    layout = Layout(root)
    children = layout.children
    pos = {
        off: i
        for i, (c, off) in enumerate(zip(children, layout.offsets, strict=False))
        if not c.is_token and c.kind in _ITEM_KINDS
    }
    env = module.env

    def placed(table: Mapping, start: Callable) -> dict | None:
        out = {}
        for k, v in table.items():
            i = pos.get(start(v))
            if i is None:
                return None
            out[k] = (i, v)
        return out

    offsets = layout.offsets

    def at(span: Span) -> tuple[int, tuple[int, Span]]:
        i = bisect_right(offsets, span.start) - 1
        return i, (offsets[i], span)

    struct_spans = {k: at(sp) for k, sp in env.struct_spans.items()}
    field_spans = {k: at(sp) for k, sp in env.field_spans.items()}
    uses = [(i, start, u) for u in env.uses for i, (start, _) in [at(u.span)]]
    fns = placed(env.fns, lambda s: s.span.start)
    instances = placed(env.instances, lambda s: s.span.start)
    consts = placed(env.consts, lambda c: c.span.start)
    if fns is None or instances is None or consts is None:
        return None
    index = {k: v[0] for k, v in fns.items()}  # a lowering is where its signature is
    index.update({k: v[0] for k, v in instances.items()})
    functions = {k: (index[k], lf) for k, lf in module.functions.items()}
    lowered = {k: (index[k], lf) for k, lf in module.lowered.items()}
    item_fn = {
        fns[n][0]: n  # type: ignore[index]
        for n in module.functions
        if not env.fns[n].is_generic and children[fns[n][0]] is env.fns[n].ast.syntax.green  # type: ignore[index]
    }
    fixed = {
        (t, k): _extent(lf, children[table[k][0]].text_len)  # type: ignore[index]
        for t, (source, table) in enumerate(
            ((module.functions, functions), (module.lowered, lowered))
        )
        for k, lf in source.items()
        if lf.diagnostics and not lf.relocatable
    }
    callers: dict[str, list[str]] = {}
    for u, cs in called.items():
        for c in cs:
            callers.setdefault(c, []).append(u)
    fn_at = {i: n for n, (i, _) in fns.items()}
    module.incremental = State(
        root, children, offsets, struct_spans, field_spans, uses, fns, instances, consts, functions, lowered, item_fn, fn_at, fixed,  # type: ignore[arg-type]
        callees, called, callers, deferred if module.pending else frozenset(), deps, env_keys,
        decl_diags,
    )  # fmt: skip
    return module.incremental


# --- moving values ---------------------------------------------------------------------------


def _uses_by(uses, delta: int):
    if not delta:
        return uses
    if isinstance(uses, _ShiftedUses):
        total = uses.delta + delta
        return _ShiftedUses(uses.base, total) if total else list(uses.base)
    return _ShiftedUses(uses, delta)


def _types_by(types, delta: int):
    if not delta:
        return types
    if isinstance(types, _Shifted):
        total = types.delta + delta
        return _Shifted(types.base, total) if total else types.base
    return _Shifted(types, delta)


def _span_at(layout: Layout) -> Callable:
    def move(v: tuple[int, Span], i: int) -> Span:
        start, span = v
        at = layout.offsets[i]
        return span if at == start else span.shifted(at - start)

    return move


def _sig_at(layout: Layout) -> Callable:
    def move(sig: FnSig, i: int) -> FnSig:
        delta = layout.offsets[i] - sig.span.start
        tspans = sig.type_param_spans
        return FnSig(
            sig.name, sig.type, sig.dim_names, sig.param_names, sig.exported,
            sig.span.shifted(delta) if delta else sig.span,
            sig.name_span.shifted(delta) if delta else sig.name_span,
            sig.doc, ast.Fn(layout.node(i)), _uses_by(sig.uses, delta), sig.type_params,
            tuple(sp.shifted(delta) for sp in tspans) if delta and tspans else tspans,
            sig.type_args, sig.generic,
        )  # fmt: skip

    return move


def _const_at(layout: Layout) -> Callable:
    def move(c: ConstDef, i: int) -> ConstDef:
        delta = layout.offsets[i] - c.span.start
        value = ast.Const(layout.node(i)).value
        name_span = c.name_span.shifted(delta) if c.name_span is not None else None
        return ConstDef(c.name, c.type, value, c.span.shifted(delta), name_span)

    return move


def _lowering_at(layout: Layout, env: ModuleEnv) -> Callable:
    def move(lf: LoweredFn, i: int) -> LoweredFn:
        n = lf.sig.name
        sig = env.instances[n] if n in env.instances else env.fns[n]
        delta = layout.offsets[i] - lf.base
        return _moved(lf, sig, delta, [d.shifted(delta) for d in lf.diagnostics] if delta else None)

    return move


def _moved(lf: LoweredFn, sig: FnSig, delta: int, diags: list[Diagnostic] | None) -> LoweredFn:
    """``lf`` (types, uses, provenance) moved by ``delta``, seen through ``sig``."""
    if isinstance(lf, PendingGraph):  # its graph, when read, moved too
        out = lf.relocated(
            sig, lf.diagnostics if diags is None else diags, lf.base + delta,
            _types_by(lf.expr_types, delta), _uses_by(lf.uses, delta),
            lambda f: _moved(f, sig, delta, diags),
        )  # fmt: skip
        return out
    prov = lf.provenance
    if prov is not None:
        prov = FnProvenance(
            prov.name, sig.span, sig.name_span, prov.dim_names, prov.param_names,
            prov.node_spans, prov.node_names, prov.doc,
        )  # fmt: skip
    out = LoweredFn(
        sig, lf.function, lf.nodes, lf.regions, prov,
        lf.diagnostics if diags is None else diags, lf.base + delta,
        _types_by(lf.expr_types, delta), _uses_by(lf.uses, delta),
    )  # fmt: skip
    out.shape = lf.shape
    return out


class Touched(Exception):
    """A diagnostic of another item reaches into the changed function."""


class _Cut:
    """The edit as the rest of the file sees it: the changed item's old range [start, end)
    became ``delta`` bytes longer. A span before it stays, one after it moves."""

    __slots__ = ("start", "end", "delta")

    def __init__(self, start: int, end: int, delta: int) -> None:
        self.start, self.end, self.delta = start, end, delta

    def span(self, s: Span) -> Span:
        if s.end <= self.start:
            return s
        if s.start >= self.end:
            return s.shifted(self.delta) if self.delta else s
        raise Touched

    def diagnostic(self, d: Diagnostic) -> Diagnostic:
        spans = [d.span, *(r.span for r in d.related)]
        if d.fix is not None:
            spans += [e.span for e in d.fix.edits]
        if all(s.end <= self.start for s in spans):
            return d
        if all(s.start >= self.end for s in spans):
            return d.shifted(self.delta) if self.delta else d
        span = self.span(d.span)
        related = tuple(
            r if (sp := self.span(r.span)) is r.span else Related(sp, r.message) for r in d.related
        )
        fix = d.fix
        if fix is not None:
            edits = tuple(
                e if (sp := self.span(e.span)) is e.span else Edit(sp, e.new_text)
                for e in fix.edits
            )
            if any(a is not b for a, b in zip(edits, fix.edits, strict=True)):
                fix = Fix(fix.title, edits)
        if span is d.span and fix is d.fix and all(map(is_, related, d.related)):
            return d
        return dataclasses.replace(d, span=span, related=related, fix=fix)

    def diagnostics(self, diags: list[Diagnostic]) -> list[Diagnostic]:
        return [self.diagnostic(d) for d in diags]


def without(diags: list[Diagnostic], gone: list[Diagnostic]) -> list[Diagnostic] | None:
    """``diags`` less one equal copy of each of ``gone`` (None if one is missing)."""
    rest = list(diags)
    for d in gone:
        try:
            rest.remove(d)
        except ValueError:
            return None
    return rest


# --- the edit -------------------------------------------------------------------------------


@dataclass
class Change:
    """What :func:`relower_module` redid: the edit's cut, and each function lowered again
    (the edited one, then callers whose shape changed) before and after (workspace.py
    redoes their ownership checks)."""

    cut: _Cut
    lowered: list[tuple[str, LoweredFn, LoweredFn]]  # (name, before, after)


def relower_module(
    prev: Module, parse: Parse, cache: LoweringCache
) -> tuple[Module, Change] | None:
    """The module of ``parse`` from ``prev``'s when one function body changed (see above);
    None when the edit needs the full :func:`lower_module`."""
    with deep_recursion(quiet_gc=True):
        try:
            return _relower(prev, parse, cache)
        except Touched:
            return None


def _relower(prev: Module, parse: Parse, cache: LoweringCache) -> tuple[Module, Change] | None:
    st = _state_of(prev)
    if st is None:
        return None
    root = parse.tree
    old, new = st.children, root.green.children
    if len(old) != len(new) or root.offset != st.root.offset:
        return None
    same = list(map(is_, old, new))
    try:
        i = same.index(False)
    except ValueError:
        return None
    if False in same[i + 1 :]:  # a full reparse: equal items may be new green nodes
        diff = [k for k in range(i, len(new)) if not same[k] and old[k] != new[k]]
        if len(diff) != 1:
            return None
        i = diff[0]
    og, ng = old[i], new[i]
    if og.is_token or ng.is_token or og.kind != ng.kind or og.kind not in _ITEM_KINDS:
        return None
    start = st.offsets[i]
    cut = _Cut(start, start + og.text_len, ng.text_len - og.text_len)
    offsets = st.offsets
    if cut.delta:  # the children after the edited one moved (list work in C)
        offsets = [*offsets[: i + 1], *map(cut.delta.__add__, offsets[i + 1 :])]
    layout = Layout(root, offsets)
    redo = (_redo_fn if og.kind == K.FN else _redo_decl)(prev, st, cache, i, layout)
    if redo is None:
        return None
    return _patched(prev, st, parse, cache, i, layout, cut, redo)


@dataclass
class _Redo:
    """What one changed item made again (the rest of the module is patched around it)."""

    new_env: ModuleEnv
    fns: dict  # State.fns of the new version
    deps: Deps
    env_keys: dict
    named_in: dict | None
    gone: list  # the old diagnostics of what was made again
    added: list  # its new diagnostics
    redone: dict  # Module.functions entries made again
    units: dict  # Module.lowered entries made again
    olds: dict  # the old Module.functions entries of those
    functions: dict  # State.functions of the new version
    lowered: dict  # State.lowered of the new version
    stale: set
    # State.struct_spans, field_spans, uses, consts of the new version
    decls: tuple
    decl_diags: list | None = None  # State.decl_diags when they were made again


def _redo_fn(prev: Module, st: State, cache: LoweringCache, i: int, layout: Layout) -> _Redo | None:
    """One function changed: its body (it alone is lowered again, and its callers when it
    starts or stops lowering), or its signature (also the functions that name it), or it is
    a later definition of a name (only its K0202 moves)."""
    old, new = st.children, layout.children
    og, ng = old[i], new[i]
    start = st.offsets[i]
    name = st.item_fn.get(i)
    generic = duplicate = False
    if name is None:  # a generic function (lowered once per instance), or a later
        name = st.fn_at.get(i)  # definition of a name (not lowered: only its K0202)
        if name is None:
            duplicate = True
        elif name not in st.functions or not prev.env.fns[name].is_generic:
            return None
        else:
            generic = True
    fn = ast.Fn(layout.node(i))
    named = _name_of(fn, cache)
    old_fn = ast.Fn(SyntaxNode(og, st.root, start, i))
    old_named = _name_of(old_fn, cache)
    if named is None or old_named is None or named[0] != old_named[0]:
        return None
    if duplicate:
        name = named[0]
        if name not in st.fns or st.fns[name][0] >= i:
            return None
    elif named[0] != name:
        return None
    if name in prev.recursive:  # its component is lowered and hashed as one unit
        return None

    env = prev.env
    fns_base = dict(st.fns)
    new_env = ModuleEnv(
        structs=env.structs,
        struct_spans=Placed(st.struct_spans, _span_at(layout)),  # type: ignore[arg-type]
        field_spans=Placed(st.field_spans, _span_at(layout)),  # type: ignore[arg-type]
        consts=Placed(st.consts, _const_at(layout)),  # type: ignore[arg-type]
        fns=Placed(fns_base, _sig_at(layout)),  # type: ignore[arg-type]
        instances=Placed(st.instances, _sig_at(layout)),  # type: ignore[arg-type]
        uses=PlacedUses(st.uses, layout),  # type: ignore[arg-type]
        bad_consts=env.bad_consts,
    )
    if duplicate:  # its K0202 moves with it; nothing else is made of it
        env_keys, deps, named_in = st.env_keys, st.deps, st.named_in
        functions_base, lowered_base = dict(st.functions), dict(st.lowered)
        stale = set(st.stale)
        redone, units, olds = {}, {}, {}
        gone = [
            _defined_twice(
                name, Span(start + old_named[1], start + old_named[2]), env.fns[name].name_span
            )
        ]
        added = [
            _defined_twice(
                name, Span(start + named[1], start + named[2]), new_env.fns[name].name_span
            )
        ]
    else:
        # the function's signature: its type (all other bodies see), names and calls the same
        old_sig = prev.env.fns[name]
        sig_diags: list[Diagnostic] = []
        sig = _fn_signature(fn, named, new_env, sig_diags, cache, st.deps, _ITEM_TEXT)
        if sig is None:
            return None  # it leaves env.fns: the names every function sees change
        deps, dependants = st.deps, []
        item = Deps.item(sig)
        if item != st.deps.fn_items[name]:  # its signature changed (type, names, `pub`)
            if generic or sig.is_generic or old_sig.is_generic:
                return None  # its instances change
            deps = st.deps.with_item(name, item)
            named_in = _named_in(st, cache)
            dependants = [u for u in named_in.get(name, ()) if u != name]
            for u in dependants:
                if st.item_fn.get(st.fns[u][0]) != u or u not in st.called:
                    return None  # a generic function, or one in a call cycle (not lowered)
        fns_base[name] = (i, sig)
        calls = [c for c in _callee_names(sig, cache) if c in new_env.fns]
        if calls != st.callees[name]:
            return None
        # what it reads of the other items (its text may name other ones now), and what the
        # functions that name it read of it
        seen = _ITEM_TEXT.mentions(fn.syntax, cache)
        env_keys = dict(st.env_keys)
        env_keys[name] = cache.key(ng, key_digest, deps.key_parts(seen))
        for u in dependants:
            g = new[st.fns[u][0]]
            env_keys[u] = cache.key(g, key_digest, deps.key_parts(_mentions_of(g, cache)))
        named_in = st.named_in
        if named_in is not None:
            old_seen = _mentions_of(og, cache)
            if (seen ^ old_seen) & deps.items.keys():
                named_in = None  # it names other items now: the index is made again

        # its lowering; when it starts or stops failing to lower, its callers' shapes (which
        # callees lowered) change too, and they are lowered again, callees first
        functions_base = dict(st.functions)
        lowered_base = dict(st.lowered)
        stale = set(st.stale)
        redone: dict[str, LoweredFn] = {}  # Module.functions entries made again
        units: dict[str, LoweredFn] = {}  # Module.lowered entries made again
        if generic:  # each instance lowered again, their diagnostics merged (as lower_module)
            insts = _instances(sig)
            if list(insts) != [u for u, (_, s) in st.instances.items() if s.generic == name]:
                return None
            instances_base = dict(st.instances)
            for u, inst in insts.items():
                instances_base[u] = (i, inst)
            new_env.instances = Placed(instances_base, _sig_at(layout))  # type: ignore[assignment]
            per: dict[str, list[Diagnostic]] = {}
            for u, inst in insts.items():
                lf = _lower_unit(
                    u, inst, ng, new_env, env_keys[name], st.called[u], lowered_base, stale, cache
                )
                if lf.lowers != prev.lowered[u].lowers:
                    return None  # its callers' shapes change
                lowered_base[u] = (i, lf)
                units[u] = lf
                per[u] = lf.diagnostics
            merged = _merged_diagnostics(sig, list(insts.values()), per)
            redone[name] = _representative(sig, list(units.values()), merged)
            functions_base[name] = (i, redone[name])
        todo = [] if generic else [name, *dependants]
        tables = (functions_base, lowered_base, redone, units)
        if not _lower_again(
            todo, {name: sig}, prev, st, layout, new_env, env_keys, tables, stale, cache
        ):
            return None

        # the diagnostics: the old ones less those of the function and the ones lowered again,
        # the rest moved, the new ones
        old_sig_diags: list[Diagnostic] = []
        _fn_signature(old_fn, old_named, prev.env, old_sig_diags, cache, st.deps, _ITEM_TEXT)
        olds = {u: prev.functions[u] for u in redone}
        gone = old_sig_diags + [d for u in redone for d in olds[u].diagnostics]
        added = sig_diags + [d for u in redone for d in redone[u].diagnostics]
    return _Redo(
        new_env, fns_base, deps, env_keys, named_in, gone, added, redone, units, olds,
        functions_base, lowered_base, stale,
        (st.struct_spans, st.field_spans, st.uses, st.consts),
    )  # fmt: skip


_DECL_KINDS = {K.STRUCT: ast.Struct, K.CONST: ast.Const}


def _redo_decl(
    prev: Module, st: State, cache: LoweringCache, i: int, layout: Layout
) -> _Redo | None:
    """One struct or constant changed, under the same name: the structs' and constants'
    declarations are collected and checked again (they are few), and the functions whose
    text names an item whose digest changed (sema/deps.py) get their signature made again —
    when one changes, what names that function follows — and are lowered again."""
    if st.decls is None:
        st.decls = [
            j for j, c in enumerate(st.children) if not c.is_token and c.kind in _DECL_KINDS
        ]
    decls = st.decls
    old_layout = Layout(st.root, st.offsets)
    news_ = [_DECL_KINDS[layout.children[j].kind](layout.node(j)) for j in decls]
    was = _DECL_KINDS[st.children[i].kind](old_layout.node(i)).name
    now = news_[decls.index(i)].name
    if was is None or now is None or was.text != now.text:
        return None

    # the declarations again (check_constants reads the functions' names only); after a
    # constant's edit the structs stay: their entries, uses and diagnostics (which come
    # before the constants' in env.uses and in the declarations' diagnostics)
    env = prev.env
    after_env = ModuleEnv(fns=env.fns)  # type: ignore[arg-type]
    gone = list(st.decl_diags)
    added: list[Diagnostic] = []
    offs = layout.offsets

    def at(span: Span) -> tuple[int, tuple[int, Span]]:
        j = bisect_right(offs, span.start) - 1
        return j, (offs[j], span)

    kinds = st.children
    og, start = st.children[i], st.offsets[i]
    cut = _Cut(start, start + og.text_len, layout.children[i].text_len - og.text_len)

    def kept(kind) -> tuple[list, list]:
        """The uses and the declarations' diagnostics of the structs or of the constants
        (``kind``), as the last version had them (in order), moved by the edit."""
        where = [kinds[bisect_right(st.offsets, d.span.start) - 1].kind for d in st.decl_diags]
        diags = [d for d, k in zip(st.decl_diags, where, strict=True) if k == kind]
        return [e for e in st.uses if kinds[e[0]].kind == kind], cut.diagnostics(diags)

    consts = None
    struct_items = [d for d in news_ if isinstance(d, ast.Struct)]
    if og.kind == K.CONST:  # the structs stay, unless one names the constant (§8)
        if any(now.text in _mentions_of(d.syntax.green, cache) for d in struct_items):
            return None
        after_env.structs = env.structs
        struct_spans, field_spans = st.struct_spans, st.field_spans
        uses, struct_diags = kept(K.STRUCT)
        added += struct_diags
        _collect_consts(after_env, added, news_, primitive=True)  # type: ignore[arg-type]
        _collect_consts(after_env, added, news_, primitive=False)  # type: ignore[arg-type]
        uses += [(j, s, u) for u in after_env.uses for j, (s, _) in [at(u.span)]]
    else:
        # the constants of primitive type first: a struct's tensor field may use one (§8)
        prim_diags: list[Diagnostic] = []
        _collect_consts(after_env, prim_diags, news_, primitive=True)  # type: ignore[arg-type]
        _collect_structs(None, after_env, added, news_)  # type: ignore[arg-type]
        struct_spans = {n: at(sp) for n, sp in after_env.struct_spans.items()}
        field_spans = {n: at(sp) for n, sp in after_env.field_spans.items()}
        uses = [(j, s, u) for u in after_env.uses for j, (s, _) in [at(u.span)]]
        changed_structs = {
            n
            for n in after_env.structs.keys() | env.structs.keys()
            if (n in after_env.structs) != (n in env.structs)
            or after_env.structs[n].hash != env.structs[n].hash
        }
        const_items = [c for c in news_ if isinstance(c, ast.Const)]
        if any(_mentions_of(c.syntax.green, cache) & changed_structs for c in const_items):
            added += prim_diags
            _collect_consts(after_env, added, news_, primitive=False)  # type: ignore[arg-type]
            uses += [(j, s, u) for u in after_env.uses[len(uses) :] for j, (s, _) in [at(u.span)]]
        else:  # no constant names a changed struct: the constants and their check stay
            after_env.consts = env.consts
            after_env.bad_consts = env.bad_consts
            consts = st.consts
            const_uses, const_diags = kept(K.CONST)
            uses += const_uses
    deps = _type_deps(after_env, news_, cache, _ITEM_TEXT)  # type: ignore[arg-type]
    if deps.type_names != st.deps.type_names:
        return None  # a struct or constant appeared or went: the names every function sees
    if consts is None:
        added += _checked_constants(after_env, news_, cache, deps)  # type: ignore[arg-type]
        consts = {n: (at(c.span)[0], c) for n, c in after_env.consts.items()}
    else:
        added += const_diags
    decl_diags = list(added)
    deps.adopt_functions(st.deps, after_env.bad_consts)

    # the new environment's declarations, item-relative
    fns_base = dict(st.fns)
    new_env = ModuleEnv(
        structs=after_env.structs,
        struct_spans=Placed(struct_spans, _span_at(layout)),  # type: ignore[arg-type]
        field_spans=Placed(field_spans, _span_at(layout)),  # type: ignore[arg-type]
        consts=Placed(consts, _const_at(layout)),  # type: ignore[arg-type]
        fns=Placed(fns_base, _sig_at(layout)),  # type: ignore[arg-type]
        instances=Placed(st.instances, _sig_at(layout)),  # type: ignore[arg-type]
        uses=PlacedUses(uses, layout),  # type: ignore[arg-type]
        bad_consts=after_env.bad_consts,
    )

    # the functions that name a changed item: their signatures, then their lowerings
    named_in = _named_in(st, cache)
    changed = [n for n in deps.items if deps.items[n] != st.deps.items.get(n)]
    todo = [u for n in changed for u in named_in.get(n, ())]
    sigs: dict[str, FnSig] = {}
    while todo:
        u = todo.pop()
        if u in sigs:
            continue
        j = st.fns[u][0]
        if st.item_fn.get(j) != u or u not in st.called:
            return None  # a generic function, or one in a call cycle (not lowered)
        fn = ast.Fn(layout.node(j))
        named = _name_of(fn, cache)
        if named is None:
            return None
        old_fn = ast.Fn(old_layout.node(j))
        _fn_signature(old_fn, named, env, gone, cache, st.deps, _ITEM_TEXT)
        sig = _fn_signature(fn, named, new_env, added, cache, deps, _ITEM_TEXT)
        if sig is None or sig.is_generic:
            return None
        sigs[u] = sig
        fns_base[u] = (j, sig)
        item = Deps.item(sig)
        if item != deps.fn_items[u]:  # what names it reads its signature: it follows
            deps = deps.with_item(u, item)
            todo += named_in.get(u, ())
    env_keys = dict(st.env_keys)
    for u in sigs:
        g = layout.children[st.fns[u][0]]
        env_keys[u] = cache.key(g, key_digest, deps.key_parts(_mentions_of(g, cache)))
    functions_base, lowered_base = dict(st.functions), dict(st.lowered)
    stale = set(st.stale)
    redone: dict[str, LoweredFn] = {}
    units: dict[str, LoweredFn] = {}
    order = [u for u in st.called if u in sigs]  # callees first, as lower_module
    tables = (functions_base, lowered_base, redone, units)
    if not _lower_again(order, sigs, prev, st, layout, new_env, env_keys, tables, stale, cache):
        return None
    olds = {u: prev.functions[u] for u in redone}
    gone += [d for u in redone for d in olds[u].diagnostics]
    added += [d for u in redone for d in redone[u].diagnostics]
    return _Redo(
        new_env, fns_base, deps, env_keys, st.named_in, gone, added, redone, units, olds,
        functions_base, lowered_base, stale, (struct_spans, field_spans, uses, consts),
        decl_diags,
    )  # fmt: skip


def _patched(
    prev: Module,
    st: State,
    parse: Parse,
    cache: LoweringCache,
    i: int,
    layout: Layout,
    cut: _Cut,
    redo: _Redo,
) -> tuple[Module, Change] | None:
    """The new module: the old one with what ``redo`` made again, the rest moved by ``cut``
    (None when an old diagnostic cannot be told apart)."""
    root, new, offsets = layout.root, layout.children, layout.offsets
    og = st.children[i]
    new_env, fns_base, deps, env_keys, named_in = (
        redo.new_env,
        redo.fns,
        redo.deps,
        redo.env_keys,
        redo.named_in,
    )
    gone, added, redone, units, olds = redo.gone, redo.added, redo.redone, redo.units, redo.olds
    functions_base, lowered_base, stale = redo.functions, redo.lowered, redo.stale
    rest = without(prev.diagnostics, gone)
    if rest is None:
        return None
    diags = cut.diagnostics(rest) + added
    diags.sort(key=sort_key)
    decl_diags = redo.decl_diags if redo.decl_diags is not None else cut.diagnostics(st.decl_diags)

    # entries not relocatable: one whose item and diagnostics all lie before the edit or all
    # after it moves with its item (when read); one that straddles it is moved now
    again = (redone, units)
    fixed = {tk: ext for tk, ext in st.fixed.items() if tk[1] not in again[tk[0]]}
    tables = (functions_base, lowered_base)
    for t, made in enumerate(again):
        for u, lf in made.items():
            if not lf.relocatable:
                fixed[(t, u)] = _extent(lf, new[tables[t][u][0]].text_len)
    for (t, k), (lo, hi) in st.fixed.items():
        if k in again[t]:
            continue
        j, was = tables[t][k]  # made where it was, up to the last version
        own = st.offsets[j] - was.base
        if hi + own <= cut.start or lo + own >= cut.end:
            continue
        if isinstance(was, PendingGraph):
            return None  # (not moved span by span: lowered with the module)
        delta = layout.offsets[j] - was.base
        moved = LoweredFn(
            was.sig, was.function, was.nodes, was.regions, was.provenance,
            cut.diagnostics([d.shifted(own) if own else d for d in was.diagnostics]),
            was.base + delta, _types_by(was.expr_types, delta), _uses_by(was.uses, delta),
        )  # fmt: skip  # (its signature and provenance are set when read: _lowering_at)
        moved.shape = was.shape
        tables[t][k] = (j, moved)
        fixed[(t, k)] = _extent(moved, new[j].text_len)

    # the old green's memos go (a new one was made for the new green)
    for table in (
        cache.calls,
        cache.texts,
        cache.sigs,
        cache.keys,
        cache.names,
        cache.idents,
        cache.items,
    ):
        hit_ = table.get(id(og))
        if hit_ is not None and hit_[0] is og:
            del table[id(og)]

    # the callers' call nodes name what was lowered again by hash: their graph is
    # completed when read
    before = len(stale)
    todo = list(units)
    while todo:
        for c in st.callers.get(todo.pop(), ()):
            if c not in stale:
                stale.add(c)
                todo.append(c)
    cache.deferred += len(stale) - before

    functions = Placed(functions_base, _lowering_at(layout, new_env))
    lowered = Placed(lowered_base, _lowering_at(layout, new_env))
    module = Module(None, None, new_env, diags, functions, None, lowered)  # type: ignore[arg-type]
    module.recursive = prev.recursive

    def finish():
        full = lower_module(parse, cache)
        module.functions, module.lowered, module.env = full.functions, full.lowered, full.env
        module.incremental, module.made_from = None, full.made_from  # (rebuilt when needed)
        module.recursive = full.recursive
        return full.graph, full.provenance

    module._finish = finish
    struct_spans, field_spans, uses, consts = redo.decls
    module.incremental = State(
        root, new, offsets, struct_spans, field_spans, uses, fns_base,
        new_env.instances.base, consts, functions_base, lowered_base, st.item_fn,
        st.fn_at, fixed, st.callees, st.called, st.callers, frozenset(stale), deps,
        env_keys, decl_diags, named_in, st.decls,
    )  # fmt: skip
    return module, Change(cut, [(u, olds[u], lf) for u, lf in redone.items()])


def _lower_again(
    todo: list[str],
    sigs: dict[str, FnSig],
    prev: Module,
    st: State,
    layout: Layout,
    env: ModuleEnv,
    env_keys: dict,
    tables: tuple[dict, dict, dict, dict],
    stale: set[str],
    cache: LoweringCache,
) -> bool:
    """Lower the functions ``todo`` again, in order (``sigs``: their new signatures, where
    they changed), into the new version's tables (``State.functions``, ``State.lowered``, and
    the entries made again); when one starts or stops lowering, its callers' shapes change
    and they are lowered again too. False when such a caller is not a plain function (a
    generic function's instance, a function in a call cycle): the module is lowered."""
    functions, lowered, redone, units = tables
    while todo:
        u = todo.pop(0)
        if u in prev.recursive:
            return False  # a member of a recursive component: lowered with it
        j = st.fns[u][0]
        sig = sigs[u] if u in sigs else env.fns[u]
        lf = _lower_unit(
            u, sig, layout.children[j], env, env_keys[u], st.called[u], lowered, stale, cache
        )
        functions[u] = lowered[u] = (j, lf)
        was = redone.get(u) or prev.functions[u]
        redone[u] = units[u] = lf
        if lf.lowers != was.lowers:
            for c in st.callers.get(u, ()):
                if c not in st.fns or st.item_fn.get(st.fns[c][0]) != c:
                    return False
                todo.append(c)
    return True


def _mentions_of(green, cache: LoweringCache) -> frozenset[str]:
    """The identifiers in a function's text (memoised per green node, sema/deps.py)."""
    return cache.memo(cache.idents, green, lambda: mentions(green, None, 0))


def _named_in(st: State, cache: LoweringCache) -> dict[str, list[str]]:
    """Which functions name each item (``State.named_in``, made now if it is not)."""
    if st.named_in is None:
        names = st.deps.items.keys()
        out: dict[str, list[str]] = {}
        for u, (j, _) in st.fns.items():
            for m in _mentions_of(st.children[j], cache) & names:
                out.setdefault(m, []).append(u)
        st.named_in = out
    return st.named_in


def _extent(lf: LoweredFn, length: int) -> tuple[int, int]:
    """The first and last offset of a lowering's item and of its diagnostics' spans."""
    spans = [Span(lf.base, lf.base + length)]
    for d in lf.diagnostics:
        spans.append(d.span)
        spans += [r.span for r in d.related]
        if d.fix is not None:
            spans += [e.span for e in d.fix.edits]
    return min(s.start for s in spans), max(s.end for s in spans)


def _lower_unit(
    name: str,
    sig: FnSig,
    green,
    env: ModuleEnv,
    env_digest: bytes,
    called: list[str],
    lowered: dict,
    stale: set[str],
    cache: LoweringCache,
) -> LoweredFn:
    """One function lowered as ``lower_module(defer=True)`` would: against its callees'
    final graph when they all have one (``stale`` names those that do not), else by shape
    (text, signatures in scope, which callees lowered) with stand-in callees, its graph
    completed when read. ``stale`` is updated."""
    # (a callee that failed to lower has no function, as for lower_module; one in a recursive
    # component has its final, component-derived hash)
    units = [lowered[c][1] if c in lowered else None for c in called]
    present = tuple(u is not None and u.lowers for u in units)
    text = cache.memo(cache.texts, green, lambda: _text_digest(green, _utf8(text_of(green)), 0))
    text = _with_type_args(text, sig)  # an instance's: the generic text and the types
    skey = cache.key(green, _shape_key, text, env_digest, present)
    final = not any(c in stale for c in called)
    keep = (cache.bodies, (env_digest, present), skey)
    if final:
        callee_fns = [u.function if p else None for u, p in zip(units, present, strict=True)]
        hashes = tuple(f.hash if f is not None else b"" for f in callee_fns)
        key = cache.key(green, _cache_key, text, env_digest, hashes)
        hit = _reusable(cache.entries.get(key), sig)
        if hit is None:
            done = {c: f for c, f in zip(called, callee_fns, strict=True) if f is not None}
            # a long body: the statements the edit changed lowered again, the graph when read
            hit = _resumed(env, sig, done, keep, cache)
            if hit is not None:
                final = False
            else:
                hit = _lower_guarded(env, sig, done, keep)
                cache.entries[key] = cache.shapes[skey] = hit
                cache.lowered += 1
                _remember(cache, key)
        else:
            cache.reused += 1
    else:
        hit = _reusable(cache.shapes.get(skey), sig)
        if hit is None:
            stand_ins = {c: _StandIn(c) for c, p in zip(called, present, strict=True) if p}
            hit = _resumed(env, sig, stand_ins, keep, cache)  # type: ignore[arg-type]
            if hit is None:
                hit = _lower_guarded(env, sig, stand_ins, keep)  # type: ignore[arg-type]
                cache.shapes[skey] = hit
                cache.lowered += 1
    if final:
        stale.discard(name)
    else:
        cache.deferred += 1
        stale.add(name)
    _remember(cache, skey)
    lf = _rebased(hit, sig)
    lf.shape = skey
    return lf


def _resumed(
    env: ModuleEnv, sig: FnSig, callees: dict, keep: tuple, cache: LoweringCache
) -> LoweredFn | None:
    """``sig`` resumed from its body's trace (sema/body_reuse.py), kept as a shape entry
    (its graph is the whole lowering, made when read); None when it has none to take."""
    traces, key, skey = keep
    hit = resume(env, sig, callees, traces, key, skey, lambda: _lower_guarded(env, sig, callees))
    if hit is not None:
        cache.shapes[skey] = hit
        cache.resumed += 1
        _remember(cache, skey)
    return hit


def sig_at(module: Module, offset: int) -> FnSig | None | bool:
    """The function whose item holds ``offset`` (its end included), from the item table,
    without making every signature; False when the module has no table (ask ``env.fns``)."""
    st = module.incremental
    if st is None:
        return False
    offs = st.offsets
    i = bisect_right(offs, offset) - 1
    # the child holding offset, or one that ends there: the latest function to start at or
    # before offset is the one asked for, if it reaches it
    j = i
    while j >= 0:
        name = st.fn_at.get(j)
        if name is not None:
            sig = module.env.fns[name]
            return sig if sig.span.start <= offset <= sig.span.end else None
        if j < i and offs[j + 1] != offset:
            return None
        j -= 1
    return None


def sigs_between(module: Module, lo: int, hi: int) -> list[FnSig] | None:
    """The functions whose items reach into ``lo..hi`` (ends included), in source order,
    from the item table without making every signature; None when the module has none."""
    st = module.incremental
    if st is None:
        return None
    offs = st.offsets
    first = max(0, bisect_right(offs, lo) - 2)
    last = bisect_right(offs, hi)
    out = []
    for j in range(first, min(last + 1, len(offs))):
        name = st.fn_at.get(j)
        if name is not None:
            sig = module.env.fns[name]
            if sig.span.end >= lo and sig.span.start <= hi:
                out.append(sig)
    return out


def _remember(cache: LoweringCache, key: bytes) -> None:
    """Keep the keys added here in ``recent_shapes``; beyond ``KEEP_SHAPES`` the oldest half
    leave the cache (lower_module's prune keeps what its recent runs used)."""
    cache.recent_shapes.append(key)
    if len(cache.recent_shapes) > KEEP_SHAPES:
        for k in cache.recent_shapes[: KEEP_SHAPES // 2]:
            cache.shapes.pop(k, None)
            cache.entries.pop(k, None)
        del cache.recent_shapes[: KEEP_SHAPES // 2]
