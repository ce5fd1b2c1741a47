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
  lie after it, plus the new ones. A diagnostic of another item reaching into the changed
  one (a later definition's K0202 names the first's name, a caller's mismatch names the
  callee's parameter) stays when it lies before the text that changed in the item, moves
  with the edit when it lies after it (:func:`_changed_range`: the green trees walked down
  to the one child that differs), and sends the edit down the full path only when it
  reaches into that text. A lowering whose diagnostics point into other items
  (``LoweredFn.relocatable`` false) moves with its item while it and what it points to lie
  on one side of the edit, and is moved span by span when the edit falls between them.
* **Between items.** An edit in a comment or blank between items makes nothing again:
  every entry and diagnostic after it moves.
* **Dependants only.** The function is lowered as ``lower_module(defer=True)`` would. What
  another function reads of it is its signature (``Deps.item``, sema/deps.py): when that is
  the same (a body edit), its callers are lowered again only when it starts or stops
  lowering at all (their shape records which callees lowered), callees first; when it
  changed, the functions whose text names it (``State.named_in``) are lowered again too,
  with their new per-function keys. A constant or struct that no other struct or
  constant names is made again alone: a constant whose type text is the same gets its
  entry and its check again (``consts.check_one_constant``: unless it reads a constant
  that failed), a struct that names the same structs as before is collected alone (its
  type, field spans, uses, diagnostics), and only its digest changes
  (``Deps.with_declaration``). Otherwise the declarations are collected again (the
  structs stay when a constant no struct names changed, the constants and their check when
  no constant names a changed struct). Then the functions that name a changed struct or
  constant (through constants, transitively) get their signature made again — when it
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
component, docs/graph.md "Recursion") lowers the component again as one unit
(:func:`_component_again`, keyed and hashed as ``lower_module`` does), then the functions
outside it that name the member; a later definition of a name (not lowered) only moves its
K0202. Anything else — an item added, removed or renamed, a function leaving or joining
``env.fns`` (its signature no longer resolves), a struct that stops resolving, a generic
function's signature changed or a generic function among the dependants, a member of
another recursive component among them, a component calling a function whose graph is
not final yet, the call list changed, another item's diagnostic reaching into the text
that changed — returns None and the caller runs the full ``lower_module`` (which, with
per-function keys, still lowers only what depends on the change, and reuses a lowering
whose diagnostics point into other functions' headers where those headers' text is the
same: sema/module.py ``_reusable``). The items are told apart by green-node identity
(after a full reparse, which makes new nodes, by structural equality). The result is equal to a
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
from kera_core.ir.encoding import digest
from kera_core.ir.provenance import FnProvenance
from kera_core.sema.body_reuse import PendingGraph, resume
from kera_core.sema.consts import check_one_constant
from kera_core.sema.deps import Deps, key_digest, mentions, text_of
from kera_core.sema.env import ConstDef, FnSig, ModuleEnv, Use
from kera_core.sema.lower import LoweredFn
from kera_core.sema.module import (
    PRIMS,
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
    _lower_component,
    _lower_guarded,
    _mapped,
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
    anchored,
    component_key,
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
    became ``delta`` bytes longer. A span before it stays, one after it moves; one inside
    it (another function's diagnostic names the changed function, a callee's parameter)
    stays when it lies before the text that changed in the item, moves when it lies after,
    and is :class:`Touched` when it reaches into that text (:func:`_changed_range`, found
    when first needed)."""

    __slots__ = ("start", "end", "delta", "old", "new", "_inner")

    def __init__(self, start: int, end: int, delta: int, old=None, new=None) -> None:
        self.start, self.end, self.delta = start, end, delta
        self.old, self.new = old, new  # the changed item's green nodes, when known
        self._inner: tuple[int, int] | None = None

    def span(self, s: Span) -> Span:
        if s.end <= self.start:
            return s
        if s.start >= self.end:
            return s.shifted(self.delta) if self.delta else s
        if self.old is None:
            raise Touched
        if self._inner is None:
            self._inner = _changed_range(self.old, self.new, self.start)
        lo, hi = self._inner
        if s.end <= lo:
            return s
        if s.start >= hi:
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
        return _mapped(d, self.span)

    def diagnostics(self, diags: list[Diagnostic]) -> list[Diagnostic]:
        return [self.diagnostic(d) for d in diags]


def _changed_range(old, new, start: int) -> tuple[int, int]:
    """The range of ``old`` (a green node at ``start``) outside which ``new`` has the same
    text: the green trees are walked down while one child differs (by identity, else
    structurally) between children that are the same."""
    lo, hi = start, start + old.text_len
    if old.is_token or new.is_token:
        return lo, hi
    a, b = old, new
    while True:
        ca, cb = a.children, b.children
        n = min(len(ca), len(cb))
        p = 0
        while p < n and (ca[p] is cb[p] or ca[p] == cb[p]):
            lo += ca[p].text_len
            p += 1
        q = 0
        while q < n - p and (ca[-1 - q] is cb[-1 - q] or ca[-1 - q] == cb[-1 - q]):
            hi -= ca[-1 - q].text_len
            q += 1
        if len(ca) - p - q != 1 or len(cb) - p - q != 1:
            return lo, hi
        a, b = ca[p], cb[p]
        if a.is_token or b.is_token or a.kind != b.kind:
            return lo, hi


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
    if og.is_token and ng.is_token and og.kind in _BETWEEN and ng.kind in _BETWEEN:
        redo_ = _redo_between  # a comment or blank between items: everything after it moves
    elif og.is_token or ng.is_token or og.kind != ng.kind or og.kind not in _ITEM_KINDS:
        return None
    else:
        redo_ = _redo_fn if og.kind == K.FN else _redo_decl
    start = st.offsets[i]
    cut = _Cut(start, start + og.text_len, ng.text_len - og.text_len, og, ng)
    offsets = st.offsets
    if cut.delta:  # the children after the edited one moved (list work in C)
        offsets = [*offsets[: i + 1], *map(cut.delta.__add__, offsets[i + 1 :])]
    layout = Layout(root, offsets)
    redo = redo_(prev, st, cache, i, layout)
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
    # State.callees, called and callers of the new version, when the function's calls changed
    calls: tuple | None = None


def _with_calls(st: State, name: str, calls: list[str]) -> State | None:
    """``st`` with ``name`` calling ``calls`` now (a call typed, renamed or deleted), when
    that changes no order ``lower_module`` would follow: the calls it gains and loses are of
    plain (not generic) functions, and each one it gains is lowered before it already (so
    no new cycle, and callees still come first). None otherwise (the module is lowered)."""
    old = st.callees[name]
    gained, lost = set(calls) - set(old), set(old) - set(calls)
    for c in gained | lost:
        if c not in st.fns or st.fns[c][1].is_generic or c not in st.called:
            return None
    if gained:
        order = {u: k for k, u in enumerate(st.called)}
        at = order.get(name)
        if at is None or any(order[c] >= at for c in gained):
            return None
    called = dict(st.called)
    called[name] = sorted((set(called[name]) - lost) | gained)
    callers = dict(st.callers)
    for c in lost:
        callers[c] = [u for u in callers.get(c, ()) if u != name]
    for c in gained:
        callers[c] = [*callers.get(c, ()), name]
    return dataclasses.replace(
        st, callees={**st.callees, name: calls}, called=called, callers=callers
    )


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
    comp = None if duplicate else prev.components.get(name)
    if name in prev.recursive and comp is None:  # (a component across files: the package's)
        return None

    env = prev.env
    fns_base = dict(st.fns)
    call_tables = None  # (the call tables, when its calls changed: _with_calls)
    new_env = _placed_env(env, st, layout, fns_base)
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
            if generic or comp is not None or name in prev.recursive:
                return None
            st = _with_calls(st, name, calls)  # type: ignore[assignment]
            if st is None:
                return None
            call_tables = (st.callees, st.called, st.callers)
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
        if comp is not None:  # its component, lowered and hashed as one unit; then the
            # functions outside it that name it, and the callers of a member that started or
            # stopped lowering
            if not _component_again(
                comp, {name: sig}, st, layout, new_env, env_keys, tables, stale, cache
            ):
                return None
            todo = [u for u in dependants if u not in comp]
            for m in comp:
                if redone[m].lowers != prev.functions[m].lowers:
                    todo += [c for c in st.callers.get(m, ()) if c not in comp]
            todo = list(dict.fromkeys(todo))
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
        (st.struct_spans, st.field_spans, st.uses, st.consts), calls=call_tables,
    )  # fmt: skip


def _placed_env(env: ModuleEnv, st: State, layout: Layout, fns_base: dict) -> ModuleEnv:
    """``env`` with its per-item entries (``st``'s, the functions' ``fns_base``) made where
    their items are in ``layout`` when read."""
    return ModuleEnv(
        structs=env.structs,
        struct_spans=Placed(st.struct_spans, _span_at(layout)),  # type: ignore[arg-type]
        field_spans=Placed(st.field_spans, _span_at(layout)),  # type: ignore[arg-type]
        consts=Placed(st.consts, _const_at(layout)),  # type: ignore[arg-type]
        fns=Placed(fns_base, _sig_at(layout)),  # type: ignore[arg-type]
        instances=Placed(st.instances, _sig_at(layout)),  # type: ignore[arg-type]
        uses=PlacedUses(st.uses, layout),  # type: ignore[arg-type]
        bad_consts=env.bad_consts,
    )


#: the tokens between items whose text no analysis reads (a doc comment is its item's)
_BETWEEN = frozenset({K.WHITESPACE, K.COMMENT})


def _redo_between(
    prev: Module, st: State, cache: LoweringCache, i: int, layout: Layout
) -> _Redo | None:
    """A comment or blank between items changed: nothing is made again; every entry after
    it moves (when read), as every diagnostic does."""
    fns_base = dict(st.fns)
    return _Redo(
        _placed_env(prev.env, st, layout, fns_base), fns_base, st.deps, st.env_keys,
        st.named_in, [], [], {}, {}, {}, dict(st.functions), dict(st.lowered), set(st.stale),
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
    old_layout = Layout(st.root, st.offsets)
    was = _DECL_KINDS[st.children[i].kind](old_layout.node(i)).name
    now = _DECL_KINDS[layout.children[i].kind](layout.node(i)).name
    if was is None or now is None or was.text != now.text:
        return None
    env = prev.env
    og, start = st.children[i], st.offsets[i]
    ng = layout.children[i]
    cut = _Cut(start, start + og.text_len, ng.text_len - og.text_len, og, ng)
    one = (_one_constant if og.kind == K.CONST else _one_struct)(prev, st, cache, i, layout, cut)
    if one is not None:  # it alone: the other declarations and their check stay
        structs, struct_spans, field_spans, uses, consts, bad_consts, deps = one[:7]
        gone, added = one[7], one[8]
        decl_diags = cut.diagnostics(without(st.decl_diags, gone)) + added  # type: ignore[arg-type]
    else:
        got = _decls_again(prev, st, cache, i, layout, cut, now.text)
        if got is None:
            return None
        structs, struct_spans, field_spans, uses, consts, bad_consts, deps = got[:7]
        gone, added = list(st.decl_diags), got[7]
        decl_diags = list(added)

    # the new environment's declarations, item-relative
    fns_base = dict(st.fns)
    new_env = ModuleEnv(
        structs=structs,
        struct_spans=Placed(struct_spans, _span_at(layout)),  # type: ignore[arg-type]
        field_spans=Placed(field_spans, _span_at(layout)),  # type: ignore[arg-type]
        consts=Placed(consts, _const_at(layout)),  # type: ignore[arg-type]
        fns=Placed(fns_base, _sig_at(layout)),  # type: ignore[arg-type]
        instances=Placed(st.instances, _sig_at(layout)),  # type: ignore[arg-type]
        uses=PlacedUses(uses, layout),  # type: ignore[arg-type]
        bad_consts=bad_consts,
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


def _one_constant(
    prev: Module, st: State, cache: LoweringCache, i: int, layout: Layout, cut: _Cut
) -> tuple | None:
    """A constant's edit that leaves its name and type as they were, when no struct and no
    other constant names it: its entry is made again and checked alone
    (``consts.check_one_constant``); the other declarations, their uses and diagnostics
    stay. What :func:`_decls_again` gives, then the constant's old diagnostics and its new
    ones; None when that does not hold."""
    new_c = ast.Const(layout.node(i))
    name = new_c.name.text  # type: ignore[union-attr]
    entry = st.consts.get(name)
    env = prev.env
    if entry is None or entry[0] != i or entry[1].type is None or name in env.structs:
        return None  # a later definition of the name, a type that failed, a shared name
    old_c = ast.Const(Layout(st.root, st.offsets).node(i))
    ot, nt = old_c.type, new_c.type
    if ot is None or nt is None or ot.syntax.green != nt.syntax.green:
        return None
    children = layout.children
    # the structs that name it, and those that name them (transitively): collected again
    # after it (when it has a primitive type, as the structs see it), if no constant names
    # one of them
    named = {name}
    found = True
    sized: list[int] = []
    while found:
        found = False
        for j in st.decls or ():
            if j == i or j in sized or not named & _mentions_of(children[j], cache):
                continue
            if children[j].kind != K.STRUCT:
                return None  # another constant reads it (or a struct that names it)
            sized.append(j)
            named.add(ast.Struct(layout.node(j)).name.text)  # type: ignore[union-attr]
            found = True
    if sized and (
        not isinstance(nt, ast.NamedType) or nt.name is None or nt.name.text not in PRIMS
    ):
        return None
    if named & _mentions_of(children[i], cache) - {name}:
        return None  # it names a struct it sizes
    # its check's old diagnostics: those inside it but its type's (made when collected)
    lo, hi = cut.start, cut.end
    t = ot.span
    gone = [
        d
        for d in st.decl_diags
        if lo <= d.span.start
        and d.span.end <= hi
        and not (t.start <= d.span.start and d.span.end <= t.end)
    ]
    c = entry[1]
    consts = dict(st.consts)
    consts[name] = (i, ConstDef(name, c.type, new_c.value, new_c.span, new_c.name.span))  # type: ignore[union-attr]
    new_env = _placed_env(env, st, layout, dict(st.fns))
    new_env.consts = Placed(consts, _const_at(layout))  # type: ignore[assignment]
    new_env.bad_consts = set(env.bad_consts)
    mine: list = []
    added = check_one_constant(new_env, name, mine)
    if added is None:
        return None
    structs, struct_spans, field_spans, uses = env.structs, st.struct_spans, st.field_spans, st.uses
    if sized:
        again = _structs_again(prev, st, layout, sorted(sized), consts)
        if again is None:
            return None
        structs, struct_spans, field_spans, uses, gone_s, added_s = again
        gone += gone_s
        added += added_s
        new_env.structs = structs
    uses = _initializer_uses_again(uses, st, i, [(i, layout.offsets[i], u) for u in mine])
    changed = {
        (name if j == i else ast.Struct(layout.node(j)).name.text): _mentions_of(children[j], cache)  # type: ignore[union-attr]
        for j in [i, *sized]
    }
    deps = st.deps.with_declarations(new_env, changed)
    return (
        structs, struct_spans, field_spans, uses, consts, new_env.bad_consts, deps, gone,
        added,
    )  # fmt: skip


def _initializer_uses_again(uses: list, st: State, i: int, mine: list) -> list:
    """The item-relative ``env.uses`` entries ``uses`` (the last version's order) with those
    of constant ``i``'s initializer replaced by ``mine`` (its new ones, in source order):
    the initializers' uses come last, in source order (``consts.check_constants``), so
    constant ``i``'s go after those of the constants before it."""
    old = Layout(st.root, st.offsets)
    value_at: dict[int, int | None] = {}  # a constant's value, from its item's start

    def in_initializer(e) -> bool:
        j, start, u = e
        if j not in value_at:
            node = old.node(j)
            value = ast.Const(node).value if node.kind == K.CONST else None
            value_at[j] = value.syntax.offset - node.offset if value is not None else None
        v = value_at[j]
        return v is not None and u.span.start - start >= v

    k = len(uses)
    while k and in_initializer(uses[k - 1]):
        k -= 1
    run = [e for e in uses[k:] if e[0] != i]
    at = next((n for n, e in enumerate(run) if e[0] > i), len(run))
    return [*uses[:k], *run[:at], *mine, *run[at:]]


def _one_struct(
    prev: Module, st: State, cache: LoweringCache, i: int, layout: Layout, cut: _Cut
) -> tuple | None:
    """A struct's edit under the same name, when no other struct and no constant names it
    and it resolves before and after, naming the same structs: it alone is collected again
    (:func:`_structs_again`); the other declarations stay. What :func:`_decls_again`
    gives, then the struct's old diagnostics and its new ones; None when that does not
    hold."""
    name = ast.Struct(layout.node(i)).name.text  # type: ignore[union-attr]
    env = prev.env
    if name in env.consts:
        return None  # a shared name
    children = layout.children
    for j in st.decls or ():
        if j != i and name in _mentions_of(children[j], cache):
            return None  # another declaration reads it
    names = env.structs.keys()
    if _mentions_of(children[i], cache) & names != _mentions_of(st.children[i], cache) & names:
        return None  # it names other structs now: the order they are resolved in changes
    again = _structs_again(prev, st, layout, [i], st.consts)
    if again is None:
        return None
    structs, struct_spans, field_spans, uses, gone, added = again
    new_env = _placed_env(env, st, layout, dict(st.fns))
    new_env.structs = structs
    deps = st.deps.with_declarations(new_env, {name: _mentions_of(children[i], cache)})
    return (
        structs, struct_spans, field_spans, uses, st.consts, env.bad_consts, deps, gone, added
    )  # fmt: skip


class _PrimConsts(Mapping):
    """The constants of primitive type of an item-relative constants table, in its order:
    what the structs' declarations see (§8: they are collected before the other ones)."""

    __slots__ = ("table", "layout", "_prim", "_len")

    def __init__(self, table: dict, layout: Layout) -> None:
        self.table = Placed(table, _const_at(layout))
        self.layout = layout
        self._prim: dict[str, bool] = {}
        self._len: int | None = None

    def _is_prim(self, name: str) -> bool:
        p = self._prim.get(name)
        if p is None:
            t = ast.Const(self.layout.node(self.table.base[name][0])).type
            p = isinstance(t, ast.NamedType) and t.name is not None and t.name.text in PRIMS
            self._prim[name] = p
        return p

    def __getitem__(self, name):
        if name in self.table and self._is_prim(name):
            return self.table[name]
        raise KeyError(name)

    def __contains__(self, name) -> bool:
        return name in self.table and self._is_prim(name)

    def __iter__(self):
        return (n for n in self.table if self._is_prim(n))

    def __len__(self) -> int:  # (asked per constant read: consts._reference_graph)
        if self._len is None:
            self._len = sum(1 for _ in self)
        return self._len


def _structs_again(
    prev: Module, st: State, layout: Layout, idx: list[int], consts: dict
) -> tuple | None:
    """The structs at children ``idx`` (in file order; none of them a later definition of
    its name, each one that resolved) collected again, the others as they were, against the
    constants ``consts`` (item-relative) of primitive type, as the declarations are collected
    (the structs after those constants): (structs, struct spans, field spans and uses —
    item-relative — their old diagnostics, their new ones). None when one of them no longer
    resolves (the names every function sees change) or its uses cannot be placed among the
    others' (each struct's are one run in the order they are resolved, which the structs'
    unchanged names keep)."""
    env = prev.env
    olds = [ast.Struct(Layout(st.root, st.offsets).node(j)) for j in idx]
    items = [ast.Struct(layout.node(j)) for j in idx]
    names = []
    for j, s_ in zip(idx, items, strict=True):
        name = s_.name.text if s_.name is not None else None
        entry = st.struct_spans.get(name) if name is not None else None
        if entry is None or entry[0] != j or name not in env.structs:
            return None
        names.append(name)
    one = ModuleEnv(fns=env.fns)  # type: ignore[arg-type]
    one.consts = _PrimConsts(consts, layout)  # type: ignore[assignment]
    one.structs = {n: t for n, t in env.structs.items() if n not in names}
    added: list[Diagnostic] = []
    _collect_structs(None, one, added, items)  # type: ignore[arg-type]
    if any(n not in one.structs for n in names):
        return None
    offs = layout.offsets
    per: dict[int, list] = {j: [] for j in idx}
    for u in one.uses:
        per[bisect_right(offs, u.span.start) - 1].append(u)
    uses = st.uses
    for j in idx:
        block = [k for k, e in enumerate(uses) if e[0] == j]
        if block and block != list(range(block[0], block[-1] + 1)):
            return None
        if not block:
            if per[j]:
                return None
            continue
        uses = [*uses[: block[0]], *[(j, offs[j], u) for u in per[j]], *uses[block[-1] + 1 :]]
    struct_spans = dict(st.struct_spans)
    field_spans = {k: v for k, v in st.field_spans.items() if k[0] not in names}
    for j, name in zip(idx, names, strict=True):
        struct_spans[name] = (j, (offs[j], one.struct_spans[name]))
    for k, sp in one.field_spans.items():
        j = bisect_right(offs, sp.start) - 1
        field_spans[k] = (j, (offs[j], sp))
    structs = {**env.structs, **{n: one.structs[n] for n in names}}
    ranges = [(s_.syntax.offset, s_.syntax.offset + s_.syntax.green.text_len) for s_ in olds]
    gone = [
        d
        for d in st.decl_diags
        if any(lo <= d.span.start and d.span.end <= hi for lo, hi in ranges)
    ]
    return structs, struct_spans, field_spans, uses, gone, added


def _decls_again(
    prev: Module, st: State, cache: LoweringCache, i: int, layout: Layout, cut: _Cut, name: str
) -> tuple | None:
    """The structs' and constants' declarations collected and checked again after an edit
    of item ``i`` (named ``name``): (structs, the item-relative struct spans, field spans,
    uses and constants, the failed constants, the digests, the declarations' diagnostics);
    None when an item's name appeared or went."""
    # the declarations again (check_constants reads the functions' names only); after a
    # constant's edit the structs stay: their entries, uses and diagnostics (which come
    # before the constants' in env.uses and in the declarations' diagnostics)
    env = prev.env
    decls = st.decls
    assert decls is not None
    news_ = [_DECL_KINDS[layout.children[j].kind](layout.node(j)) for j in decls]
    after_env = ModuleEnv(fns=env.fns)  # type: ignore[arg-type]
    added: list[Diagnostic] = []
    offs = layout.offsets

    def at(span: Span) -> tuple[int, tuple[int, Span]]:
        j = bisect_right(offs, span.start) - 1
        return j, (offs[j], span)

    kinds = st.children
    og = st.children[i]

    def kept(kind) -> tuple[list, list]:
        """The uses and the declarations' diagnostics of the structs or of the constants
        (``kind``), as the last version had them (in order), moved by the edit."""
        where = [kinds[bisect_right(st.offsets, d.span.start) - 1].kind for d in st.decl_diags]
        diags = [d for d, k in zip(st.decl_diags, where, strict=True) if k == kind]
        return [e for e in st.uses if kinds[e[0]].kind == kind], cut.diagnostics(diags)

    consts = None
    struct_items = [d for d in news_ if isinstance(d, ast.Struct)]
    # the structs stay after a constant's edit, unless one names the constant (§8): then
    # they are collected again too
    redo_structs = og.kind == K.STRUCT or any(
        name in _mentions_of(d.syntax.green, cache) for d in struct_items
    )
    if not redo_structs:
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
        if og.kind == K.CONST or any(
            _mentions_of(c.syntax.green, cache) & changed_structs for c in const_items
        ):
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
        n_decl = len(after_env.uses)
        added += _checked_constants(after_env, news_, cache, deps)  # type: ignore[arg-type]
        # the uses in the initializers (after the declarations', as a cold check has them)
        uses += [(j, s, u) for u in after_env.uses[n_decl:] for j, (s, _) in [at(u.span)]]
        consts = {n: (at(c.span)[0], c) for n, c in after_env.consts.items()}
    else:
        added += const_diags
    deps.adopt_functions(st.deps, after_env.bad_consts)
    return (
        after_env.structs, struct_spans, field_spans, uses, consts, after_env.bad_consts, deps,
        added,
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
    callers = redo.calls[2] if redo.calls is not None else st.callers
    while todo:
        for c in callers.get(todo.pop(), ()):
            if c not in stale:
                stale.add(c)
                todo.append(c)
    cache.deferred += len(stale) - before

    functions = Placed(functions_base, _lowering_at(layout, new_env))
    lowered = Placed(lowered_base, _lowering_at(layout, new_env))
    module = Module(None, None, new_env, diags, functions, None, lowered)  # type: ignore[arg-type]
    module.recursive, module.components = prev.recursive, prev.components

    def finish():
        full = lower_module(parse, cache)
        module.functions, module.lowered, module.env = full.functions, full.lowered, full.env
        module.incremental, module.made_from = None, full.made_from  # (rebuilt when needed)
        module.recursive, module.components = full.recursive, full.components
        return full.graph, full.provenance

    module._finish = finish
    struct_spans, field_spans, uses, consts = redo.decls
    module.incremental = State(
        root, new, offsets, struct_spans, field_spans, uses, fns_base,
        new_env.instances.base, consts, functions_base, lowered_base, st.item_fn,
        st.fn_at, fixed, *(redo.calls or (st.callees, st.called, st.callers)), frozenset(stale), deps,
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


def _component_again(
    comp: list[str],
    sigs: dict[str, FnSig],
    st: State,
    layout: Layout,
    env: ModuleEnv,
    env_keys: dict,
    tables: tuple[dict, dict, dict, dict],
    stale: set[str],
    cache: LoweringCache,
) -> bool:
    """A recursive component (``comp``, in the order ``lower_module`` lowers and hashes it)
    lowered again as one unit, as ``lower_module`` does — its cache key made of its members'
    texts and keys and the hashes of what they call outside it — into the new version's
    tables (``sigs``: the members' new signatures, where they changed). False when a
    function it calls outside it has no final graph yet (its hash is not known here)."""
    functions, lowered, redone, units = tables
    members = set(comp)
    outside = sorted(
        {
            u
            for m in comp
            for c in st.callees[m]
            if c not in members
            for u in (
                [c]
                if c not in st.fns or not st.fns[c][1].is_generic
                else [v for v, (_, s) in st.instances.items() if s.generic == c]
            )
        }
    )  # (a generic callee: each of its instances, as ``instances_of``)
    done: dict = {}
    hashes = []
    for u in outside:
        if u in stale:
            return False
        entry = lowered.get(u)
        f = entry[1].function if entry is not None else None
        if f is not None:
            done[u] = f
        hashes.append(f.hash if f is not None else b"")

    def text(m: str) -> bytes:
        g = layout.children[st.fns[m][0]]
        return cache.memo(cache.texts, g, lambda: _text_digest(g, _utf8(text_of(g)), 0))

    ckey = component_key([text(m) + env_keys[m] for m in comp], hashes)
    hit = cache.components.get(ckey)
    if hit is not None and all(lf.relocatable for lf in hit):
        cache.reused += len(comp)
        lfs = [_rebased(lf, sigs.get(m) or env.fns[m]) for m, lf in zip(comp, hit, strict=True)]
    else:
        made = _lower_component(env, comp, done)
        cache.lowered += len(comp)
        cache.components[ckey] = lfs = [made[m] for m in comp]
    for m, lf in zip(comp, lfs, strict=True):
        lf.shape = digest("fn", b"component member" + text(m))
        functions[m] = lowered[m] = (st.fns[m][0], lf)
        redone[m] = units[m] = lf
        stale.discard(m)
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
        hit = _reusable(cache.entries.get(key), sig, env)
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
        hit = _reusable(cache.shapes.get(skey), sig, env)
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
        hit = anchored(hit, env)
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
