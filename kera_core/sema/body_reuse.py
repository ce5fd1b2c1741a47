"""A long function body edited: the statements the edit changed are checked again, not
the whole body (issue 17, docs/architecture.md "One long function, statement by statement").

What the editor needs after a keystroke is the function's *diagnostics* (and the types and
uses hovers read); its graph is needed later (a fingerprint lens, a save, a build). So:

* **A trace of the body.** When a body of at least :data:`MIN_STATEMENTS` top-level
  statements is lowered whole (``lower_module``, the incremental path's fallback), the
  lowering records, per statement, how many diagnostics, uses and expression types existed
  before it, which names of the function's two outer scopes (parameters, body) it bound and
  to what, and every :data:`EVERY` statements (further apart in scopes of many names:
  :func:`_due`) a copy of those scopes (a *checkpoint*).
* **Resuming after an edit.** The edited statements are found by green-node identity in the
  body block's children. The lowering restarts at the last checkpoint at or before the
  first of them (earlier, when an untyped float `let` before it takes its type from the
  edited text, language.md §6.2), with the diagnostics, uses and types of the statements
  before it as they were, lowers the changed statements and goes on statement by statement
  until the state *converges*: every name any of the statements lowered again (old or new)
  bound is bound to a value of the same type, the same `()`-ness, mutability, kind,
  reference and view shape and declaration span (moved by the edit) as after the same old
  statement, and the hidden `$` names and reference variables were first bound in the same
  order (the only orders a lowering reads). A name bound in one version only (a `let` typed
  or deleted) does not keep them apart when no statement taken over names it or reports an
  unknown name; it is patched into the checkpoints taken over. From there on the old
  statements' diagnostics, uses and types are taken over, moved by the edit; the tail and
  the function's result are lowered again from the old final scopes.
* **Why that is exact.** A statement's diagnostics, types, uses and the bindings it makes
  depend on its text and on the *types* (and the properties above) of the names it reads —
  not on their graph values — as long as its lowering never reads a value's graph node.
  Three places do (sema/lower_calls.py ``step_by``'s constant step and ``const_axis``,
  sema/lower_views.py ``form`` for a slice's length); a body with a statement that can reach
  one (:func:`reads_values`: a slice, ``step_by``, an axis or shape builtin) has no trace and
  is lowered whole. Likewise a body with `return` (its statements run under exit guards),
  a generic function's, and one whose function moved since its trace was made.
* **The graph is built when read.** The lowering made this way has exact diagnostics,
  types and uses, but its graph values stand for the old ones after the edit; it is a
  :class:`PendingGraph`, whose graph is the function lowered whole the first time it is
  read, and the incremental path keeps it as a *shape* entry (sema/module.py
  ``LoweringCache.shapes``) with the function marked stale, so ``Module.graph`` (a
  fingerprint, a save) lowers it as a cold run does.
* **Ownership.** When the edit changed number literals only and the types of the statements
  lowered again are the old ones moved, the ownership checker's input is the old one moved
  by the edit (``PendingGraph.ownership_from``): workspace.py moves the old result.

``tests/test_long_bodies.py`` checks the result against a cold analysis after random edit
sequences (diagnostics, types, uses, the graph and fingerprint).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import islice
from operator import is_

from kera_core.diagnostics import Diagnostic
from kera_core.ir.node import Function
from kera_core.ir.types import Prim, RangeType, Ref, Unit
from kera_core.sema.deps import text_of
from kera_core.sema.env import FnSig, ModuleEnv
from kera_core.sema.frames import Binding, Scope
from kera_core.sema.lower import FnLowering, LoweredFn, _is_untyped_float, _is_untyped_int
from kera_core.sema.lower_calls import AXIS_BUILTINS
from kera_core.sema.lower_exits import has_return
from kera_core.sema.spliced import SplicedTypes, SplicedUses
from kera_core.source import Span, common_affixes
from kera_core.syntax import ast
from kera_core.syntax.kinds import SyntaxKind as K

#: bodies with fewer top-level statements are lowered whole (a trace would not pay)
MIN_STATEMENTS = 64
#: a checkpoint of the outer scopes every this many statements …
EVERY = 16
#: … or further apart where the scopes hold more than EVERY · SCOPE_RATIO names: a
#: checkpoint copies the scopes, so copies every EVERY statements of a body that binds a
#: new name in each were quadratic (80,000 `let`s: 4.7 s of copying); spaced so, the
#: copies cost at most SCOPE_RATIO names per statement
SCOPE_RATIO = 256
#: a trace moved by more edits than this is made again (each restore replays the edits)
MAX_EDITS = 512
#: traces kept per function: the last versions lowered (an undo goes back to one of them,
#: and the next edit is then made from that version: workspace.RECENT_VERSIONS)
KEEP_TRACES = 4

#: builtins and methods whose lowering reads a value's graph node (an axis, a constant step)
_NODE_READERS = AXIS_BUILTINS | {"transpose", "concat", "stack", "step_by"}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STMT_KINDS = frozenset({K.LET_STMT, K.EXPR_STMT})
_INDEX = 1 << K.INDEX_EXPR


def reads_values(green) -> bool:
    """Can lowering this statement (or expression) read a value's graph node: a slice
    (`x[a..b]`, its length), `step_by` (a constant step), an axis or shape builtin?"""
    bits = green.kinds_below()
    if bits & (1 << K.INDEX_EXPR) and bits & (1 << K.RANGE_EXPR):
        stack = [green]
        while stack:
            g = stack.pop()
            if g.kind == K.INDEX_EXPR and any(
                not c.is_token and c.kind == K.INDEX_LIST
                and any(not x.is_token and x.kind == K.RANGE_EXPR for x in c.children)
                for c in g.children
            ):  # fmt: skip
                return True
            stack += [c for c in g.children if not c.is_token and c.kinds_below() & _INDEX]
    return not _NODE_READERS.isdisjoint(_IDENT.findall(text_of(green)))


class PendingGraph(LoweredFn):
    """A lowering whose diagnostics, expression types and uses are exact and whose graph
    (``function``, ``nodes``, ``regions``, ``provenance``) is made by ``build`` when first
    read. ``lowers`` is answered without it (a function lowers iff it has no error)."""

    def __init__(
        self,
        sig: FnSig,
        diagnostics: list[Diagnostic],
        base: int,
        expr_types,
        uses,
        build: Callable[[], LoweredFn],
        ownership_from: tuple | None = None,
    ) -> None:
        self.sig = sig
        self.diagnostics = diagnostics
        self.base = base
        self.expr_types = expr_types
        self.uses = uses
        self.shape = b""
        self._build: Callable[[], LoweredFn] | None = build
        self._graph: dict = {}
        #: (the shape key and start of the lowering this one was resumed from, the edit) when
        #: the ownership checker's input is that one's moved by the edit (literals changed)
        self.ownership_from = ownership_from

    @property
    def lowers(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    def relocated(
        self, sig: FnSig, diagnostics, base: int, expr_types, uses, move: Callable
    ) -> PendingGraph:
        """This lowering seen at ``base``; its graph, when read, is ``move`` of this one's."""
        out = PendingGraph(
            sig, diagnostics, base, expr_types, uses, lambda: move(self._built()),
            self.ownership_from,
        )  # fmt: skip
        out.shape = self.shape
        return out

    def _built(self) -> LoweredFn:
        if self._build is not None:
            full = self._build()
            for k in ("function", "nodes", "regions", "provenance"):
                self._graph.setdefault(k, getattr(full, k))
            self._build = None
        return LoweredFn(
            self.sig, self._graph["function"], self._graph["nodes"], self._graph["regions"],
            self._graph["provenance"], self.diagnostics, self.base, self.expr_types, self.uses,
        )  # fmt: skip


def _graph_part(name: str) -> property:
    def get(self: PendingGraph):
        if name not in self._graph:
            self._built()
        return self._graph[name]

    def set_(self: PendingGraph, value) -> None:
        self._graph[name] = value

    return property(get, set_)


for _name in ("function", "nodes", "regions", "provenance"):
    setattr(PendingGraph, _name, _graph_part(_name))


class _Tracked(Scope):
    """A scope that logs each name bound or unbound in it (and whether it was new)."""

    __slots__ = ("index", "log")

    def __init__(self, src: dict, index: int, log: list) -> None:
        super().__init__(src)
        self.index = index
        self.log = log

    def __setitem__(self, name: str, b: Binding) -> None:
        self.log.append((self.index, name, name not in self))
        Scope.__setitem__(self, name, b)

    def __delitem__(self, name: str) -> None:
        self.log.append((self.index, name, False))
        Scope.__delitem__(self, name)

    def setdefault(self, name: str, b: Binding) -> Binding:  # type: ignore[override]
        if name not in self:
            self.log.append((self.index, name, True))
        return Scope.setdefault(self, name, b)


class BodyTrace:
    """What lowering a long body recorded (see the module docstring). Binding spans in the
    deltas, checkpoints and final scopes are as of the edit count stored with them; ``cuts``
    (the edits since the trace was made) move them to the current text."""

    __slots__ = (
        "green", "key", "base", "children", "items", "counts", "deltas", "inserted",
        "checkpoints", "final", "diagnostics", "uses", "expr_types", "lookahead", "cuts",
        "shape",
    )  # fmt: skip

    def __init__(self) -> None:
        self.green = None  # the function's green node
        self.key: tuple = ()  # (env digest, which callees lowered)
        self.base = 0
        self.children: tuple = ()  # the body block's green children
        self.items: list = []  # each statement's child index in the block
        self.counts: list[tuple[int, int, int]] = []  # (diags, uses, types) before each, + end
        self.deltas: list[tuple[int, dict]] = []  # (epoch, {(scope, name): Binding | None})
        self.inserted: list[tuple] = []  # per statement, the names it bound first, in order
        # before statement i: (epoch, scope 0, scope 1, patches: names bound or unbound since,
        # (scope, name, Binding | None, epoch), see _Resumed._converged)
        self.checkpoints: dict[int, tuple[int, dict, dict, tuple]] = {}
        self.final: tuple[int, dict, dict] = (0, {}, {})  # after the last statement
        self.diagnostics: list[Diagnostic] = []  # the body's, up to the tail
        self.uses: list = []
        self.expr_types: dict = {}
        self.lookahead: list[tuple[int, str]] = []  # untyped float lets: (index, name)
        self.cuts: list = []
        self.shape = b""  # LoweredFn.shape of the lowering it came with


def eligible(sig: FnSig) -> bool:
    """Is ``sig``'s body long enough to trace, free of `return` and of value reads?"""
    fn = sig.ast
    if fn is None or sig.is_generic or sig.generic:
        return False
    body = fn.body
    if body is None:
        return False
    g = body.syntax.green
    if sum(1 for c in g.children if not c.is_token and c.kind in _STMT_KINDS) < MIN_STATEMENTS:
        return False
    if has_return(body.syntax):
        return False
    return not reads_values(g)


class _Recording(FnLowering):
    """A whole lowering that records a :class:`BodyTrace` of its body."""

    def __init__(self, env: ModuleEnv, sig: FnSig, callees: dict[str, Function]) -> None:
        super().__init__(env, sig, callees)
        self.trace: BodyTrace | None = None
        self.body_steps = self._record

    def _record(self, items: list) -> Iterator[tuple[int, object]]:
        tr = BodyTrace()
        body = self.sig.ast.body
        tr.children = body.syntax.green.children
        frame = self.frame
        if len(frame.scopes) != 2:  # (parameters, body: what a trace restores)
            yield from enumerate(items[:-1])
            return
        log: list = []
        s0, s1 = _Tracked(frame.scopes[0], 0, log), _Tracked(frame.scopes[-1], 1, log)
        frame.scopes[0], frame.scopes[-1] = s0, s1
        last = None
        for i, item in enumerate(items[:-1]):
            if _due(i, last, s0, s1):
                tr.checkpoints[i] = (0, dict(s0), dict(s1), ())
                last = i
            tr.counts.append((len(self.diags), len(self.uses), len(self.expr_types)))
            _note_lookahead(tr, i, item)
            log.clear()
            yield i, item
            delta, first = _step(log, s0, s1, 0)
            tr.deltas.append(delta)
            tr.inserted.append(first)
        tr.counts.append((len(self.diags), len(self.uses), len(self.expr_types)))
        tr.final = (0, dict(s0), dict(s1))
        tr.items = [
            k for k, c in enumerate(tr.children) if not c.is_token and c.kind in _STMT_KINDS
        ]
        self.trace = tr


def _due(i: int, last: int | None, s0: Scope, s1: Scope) -> bool:
    """Is a checkpoint due before statement ``i``, the last one taken before ``last``?"""
    if last is None:
        return True
    gap = i - last
    return gap >= EVERY and gap * SCOPE_RATIO >= len(s0) + len(s1)


def _note_lookahead(tr: BodyTrace, i: int, item) -> None:
    """A `let x = 1.5;` or `let c = 0;` takes its type from the statements after it (§6.2)."""
    if (
        isinstance(item, ast.LetStmt)
        and item.type is None
        and (_is_untyped_float(item.init) or _is_untyped_int(item.init))
    ):
        name = item.name
        if name is not None:
            tr.lookahead.append((i, name.text))


def _step(log: list, s0: Scope, s1: Scope, epoch: int) -> tuple[tuple[int, dict], tuple]:
    """What one statement did to the scopes (its log, emptied): (epoch, {(scope, name):
    binding now or None}), and the names it bound first, in order."""
    scopes = (s0, s1)
    delta = epoch, {(k, n): scopes[k].get(n) for k, n, _ in log}
    first = tuple((k, n) for k, n, new in log if new)
    log.clear()
    return delta, first


def lower_recorded(
    env: ModuleEnv,
    sig: FnSig,
    callees: dict[str, Function],
    traces: dict,
    key: tuple,
    shape: bytes,
) -> LoweredFn:
    """Lower ``sig`` whole; a long body's trace goes into ``traces`` under its name."""
    if not eligible(sig):
        traces.pop(sig.name, None)
        return FnLowering(env, sig, callees).lower()
    low = _Recording(env, sig, callees)
    lf = low.lower()
    tr = low.trace
    if tr is None or len(tr.counts) != len(tr.items) + 1:
        traces.pop(sig.name, None)  # (the body ended early: not traced)
        return lf
    tr.green, tr.key, tr.base, tr.shape = sig.ast.syntax.green, key, low.base, shape
    # (the lowering's own lists, read up to the counts only: never copied)
    tr.diagnostics, tr.uses, tr.expr_types = lf.diagnostics, lf.uses, lf.expr_types
    _keep(traces, sig.name, tr)
    return lf


# --- resuming --------------------------------------------------------------------------------


class _Diverged(Exception):
    """The resumed lowering cannot stand for a whole one (it is lowered whole)."""


class _Resumed(FnLowering):
    """A lowering that takes the statements before the edit and after convergence from the
    trace; its graph values are placeholders (see :class:`PendingGraph`)."""

    def __init__(self, env, sig, callees, tr: BodyTrace, plan: tuple) -> None:
        super().__init__(env, sig, callees)
        self.old = tr
        self.plan = plan
        self.new: BodyTrace | None = None
        self.span = (0, 0)  # (new, old) index of the first statement not lowered again
        self._cv: _Convergence | None = None
        self._start: tuple = ({}, {})
        self._extra: dict = {}
        self._rebound: int | None = None  # the statement binding the extra name again
        self._partial = BodyTrace()
        self._pre = (0, 0)  # (uses, types) of the old lowering before the statements lowered
        self._taken: tuple | None = None  # see _spliced
        self.body_steps = self._resume

    def _keep_reachable(self, root: bytes) -> None:
        pass  # the graph is not this lowering's to give (PendingGraph)

    def _counts(self) -> tuple[int, int, int]:
        """(diagnostics, uses, types) so far, the old ones before the statements lowered
        again counted in."""
        nu, nt = self._pre
        return len(self.diags), nu + len(self.uses), nt + len(self.expr_types)

    def _spliced(self) -> tuple[SplicedUses, SplicedTypes]:
        """The whole lowering's uses and types: the old ones before the statements lowered
        again, this lowering's, the old ones of the statements taken over (moved by the
        edit), this lowering's of the tail (sema/spliced.py: nothing is copied)."""
        old, cut = self.old, self.plan[3]
        nu, nt = self._pre
        uses, types = self.uses, self.expr_types
        u_parts = SplicedUses.of(old.uses, 0, nu).parts
        t_parts = SplicedTypes.of(old.expr_types, 0, nt).parts
        if self._taken is None:
            u_parts.append((uses, 0, len(uses), ()))
            t_parts.append((types, 0, len(types), 0))
        else:
            su, st, (ou, eu), (ot, et) = self._taken
            taken_u = SplicedUses.of(old.uses, ou, eu)
            taken_t = SplicedTypes.of(old.expr_types, ot, et)
            if cut.delta:
                taken_u, taken_t = taken_u.moved(cut), taken_t.moved(cut.delta)
            u_parts += [(uses, 0, su, ()), *taken_u.parts, (uses, su, len(uses), ())]
            t_parts += [(types, 0, st, 0), *taken_t.parts, (types, st, len(types), 0)]
        return SplicedUses(u_parts), SplicedTypes(t_parts)

    def _resume(self, items: list) -> Iterator[tuple[int, object]]:
        old, (r, last_old, last_new, cut) = self.old, self.plan
        n_new = len(items) - 1
        shift = last_new - last_old  # new index - old index after the changed statements
        epoch = len(old.cuts) + 1  # the new trace's epoch (this edit's cut appended)
        cuts = [*old.cuts, cut]
        frame = self.frame
        if len(frame.scopes) != 2:
            raise _Diverged
        log: list = []
        c0, c1 = _restored(old.checkpoints[r], cuts)
        self._start = (c0, c1)
        s0, s1 = _Tracked(c0, 0, log), _Tracked(c1, 1, log)
        frame.scopes[0], frame.scopes[-1] = s0, s1
        nd, nu, nt = old.counts[r]
        self.diags[:] = [cut.diagnostic(d) for d in old.diagnostics[:nd]]
        # the uses and types before statement r are the old ones (views made in _spliced);
        # this lowering's own lists hold the statements lowered again, then the tail's
        self.uses.clear()
        self.expr_types.clear()
        self._pre = (nu, nt)
        new = self._partial = BodyTrace()
        new.cuts = cuts
        new.checkpoints = {i: c for i, c in old.checkpoints.items() if i <= r}
        new.counts = old.counts[:r]
        new.deltas = old.deltas[:r]
        new.inserted = old.inserted[:r]
        new.lookahead = [x for x in old.lookahead if x[0] < r]
        j = r
        last = r
        while j < n_new:
            item = items[j]
            if j not in new.checkpoints and _due(j, last, s0, s1):
                new.checkpoints[j] = (epoch, dict(s0), dict(s1), ())
                last = j
            new.counts.append(self._counts())
            _note_lookahead(new, j, item)
            if j >= r and reads_values(item.syntax.green):
                raise _Diverged
            log.clear()
            yield j, item
            delta, first = _step(log, s0, s1, epoch)
            new.deltas.append(delta)
            new.inserted.append(first)
            j += 1
            if j >= last_new and self._converged(r, j, shift, cuts, s0, s1, items):
                break
        else:  # lowered to the end: the final scopes are this run's
            new.counts.append(self._counts())
            new.final = (epoch, dict(s0), dict(s1))
            self.new, self.span = new, (j, len(old.counts) - 1)
            return
        # converged before statement j (old j - shift): the rest is the old trace's, moved
        jo = j - shift
        od, ou, ot = old.counts[jo]
        ed, eu, et = old.counts[-1]
        here = self._counts()
        self.diags += [cut.diagnostic(d) for d in old.diagnostics[od:ed]]
        # the old uses and types of the statements taken over follow the own ones so far
        self._taken = (len(self.uses), len(self.expr_types), (ou, eu), (ot, et))
        moved = (here[0] - od, here[1] - ou, here[2] - ot)
        new.counts += [(a + moved[0], b + moved[1], c + moved[2]) for a, b, c in old.counts[jo:]]
        new.deltas += old.deltas[jo:]
        new.inserted += old.inserted[jo:]
        new.lookahead += [(i + shift, n) for i, n in old.lookahead if i >= jo]
        # names bound (or not) in this version only, that no statement taken over reads
        extra = tuple((k, n, b, epoch) for (k, n), b in self._extra.items())
        # (a name a later `let` binds again is alike in both versions from there on)
        until = len(old.counts) if self._rebound is None else self._rebound - shift
        for i, (ep, d0, d1, patches) in old.checkpoints.items():
            if i >= jo and i + shift not in new.checkpoints:
                new.checkpoints[i + shift] = (ep, d0, d1, patches + (extra if i <= until else ()))
        if self._rebound is not None:
            extra = ()
        ep, f0, f1 = old.final
        skip = [{n for k, n, _, _ in extra if k == i} for i in (0, 1)]
        f0 = _moved_scope(f0, cuts[ep:], s0, skip[0])
        f1 = _moved_scope(f1, cuts[ep:], s1, skip[1])
        _patch((f0, f1), extra, cuts)
        new.final = (epoch, f0, f1)
        frame.scopes[0], frame.scopes[-1] = Scope(f0), Scope(f1)
        self.new, self.span = new, (j, jo)

    def _converged(
        self, r: int, j: int, shift: int, cuts: list, s0: Scope, s1: Scope, items: list
    ) -> bool:
        """Is the state before new statement ``j`` the old one before ``j - shift``, as far
        as any later statement can tell (see the module docstring)? Kept up to date one
        statement at a time: the names whose bindings differ, the names first bound.

        A name bound in one version only (a `let` typed or deleted) does not keep the state
        apart when no statement taken over names it or reports an unknown name (whose "did
        you mean" lists the names in scope), and it is no reference: the checkpoints taken
        over get it as a patch (``self._extra``)."""
        old, new = self.old, self._partial
        jo = j - shift
        if jo < r or jo > len(old.deltas):
            return False
        cv = self._cv
        if cv is None:  # the first check: everything since the checkpoint
            steps_old, steps_new = range(r, jo), range(r, j)
            cv = self._cv = _Convergence(self._start, len(cuts))
        else:
            steps_old, steps_new = range(jo - 1, jo), range(j - 1, j)
        keys = set()
        for i in steps_old:
            e, d = old.deltas[i]
            for key, b in d.items():
                cv.old_now[key] = (b, e)
            keys.update(d)
            cv.ins_old += old.inserted[i]
        for i in steps_new:
            keys.update(new.deltas[i][1])
            cv.ins_new += new.inserted[i]
        scopes = (s0, s1)
        for key in keys:
            b, at = cv.old_now.get(key) or (cv.start[key[0]].get(key[1]), cv.epoch)
            now = scopes[key[0]].get(key[1])
            if _same(now, b, cuts[at:]):
                cv.diff.pop(key, None)
            else:
                cv.diff[key] = now if b is None or now is None else _DIFFERENT
        if not cv.diff:
            self._extra = {}
            return cv.ins_old == cv.ins_new or _order_alike(cv, scopes, frozenset())
        if j < cv.blocked or any(b is _DIFFERENT for b in cv.diff.values()):
            return False
        return self._extra_only(cv, j, jo, scopes, items)

    def _extra_only(self, cv, j: int, jo: int, scopes, items: list) -> bool:
        """Do the names in ``cv.diff`` (each bound in one version only) leave the statements
        from ``j`` on as they were (see :meth:`_converged`)?"""
        names = {n for _, n in cv.diff}
        if any(n[:1] in "$#" for n in names):
            return False
        for (k, n), now in cv.diff.items():
            b = now if now is not None else (cv.old_now.get((k, n)) or (None,))[0]
            b = b if b is not None else cv.start[k].get(n)
            if b is None or b.alias is not None or b.mutref or b.view is not None:
                return False
        od, ed = self.old.counts[jo][0], self.old.counts[-1][0]
        if any(d.code == "K0201" for d in self.old.diagnostics[od:ed]):
            return False  # an unknown name taken over: its "did you mean" lists the scope
        text = text_of(self.sig.ast.syntax.green)
        if not text.isascii():
            return False
        base = self.sig.ast.syntax.offset
        lo = items[j].syntax.offset - base if j < len(items) - 1 else len(text)
        tail = items[-1]
        body = self.sig.ast.body.syntax
        hi = (tail.syntax.offset if tail is not None else body.offset + body.green.text_len) - base
        found = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
        m = found.search(text, lo, max(lo, hi))
        rebound = None
        if m is not None:
            # the statement that names it first
            at = next(
                (i - 1 for i in range(j + 1, len(items) - 1)
                 if items[i].syntax.offset - base > m.start()),
                len(items) - 2,
            )  # fmt: skip
            rebound = at if len(names) == 1 and _binds_again(items[at], m, found, base) else None
            if rebound is None:  # named further on: not before the statement that names it
                cv.blocked = at + 2
                return False
        if not _order_alike(cv, scopes, frozenset(cv.diff)):
            return False
        self._extra = dict(cv.diff)
        self._rebound = rebound
        return True


def _binds_again(item, m: re.Match, found, base: int) -> bool:
    """Is ``m`` (the first mention of a name bound in one version only) the name a
    `let name = …;` binds, its type and value not naming it? Then the statements before
    that one do not name it, and from that one on both versions bind it alike."""
    if not isinstance(item, ast.LetStmt) or item.pattern is not None or item.name is None:
        return False
    if item.name.span.start != base + m.start():
        return False
    end = item.syntax.offset + item.syntax.green.text_len - base
    return found.search(m.string, m.end(), end) is None


class _Convergence:
    """:meth:`_Resumed._converged`'s running state."""

    __slots__ = ("epoch", "start", "old_now", "diff", "ins_old", "ins_new", "blocked")

    def __init__(self, start: tuple, epoch: int) -> None:
        self.epoch = epoch
        self.start = start  # the scopes at the checkpoint, in the current text
        self.old_now: dict = {}  # (scope, name) -> (old binding now, its epoch)
        # (scope, name) bound differently now -> this version's binding if the name is bound
        # in one version only (None: in the old one only), else _DIFFERENT
        self.diff: dict = {}
        self.ins_old: list = []
        self.ins_new: list = []
        self.blocked = 0  # no convergence before this statement (it names an extra name)


_DIFFERENT = object()  # (a name bound in both versions, differently)


def _order_alike(cv: _Convergence, scopes: tuple, extra: frozenset) -> bool:
    """Were the names first bound since the checkpoint bound in an order no later statement
    can tell apart? The order of a scope is read for its hidden `$` names (a region's carried
    names) and its reference variables (the first that borrows a name being declared is
    named in K0315), so those must come in the same order; other names may not."""

    def seen(key) -> bool:
        if key in extra:
            return False
        k, n = key
        if n[:1] in "$#":
            return True
        b = scopes[k].get(n)
        return b is None or b.alias is not None or b.mutref

    # (a name bound in both versions is in scope in both: its binding was compared)
    return [x for x in cv.ins_old if seen(x)] == [x for x in cv.ins_new if seen(x)]


def _move(span: Span, cuts: list) -> Span:
    for c in cuts:
        span = c.span(span)
    return span


def _same(a: Binding | None, b: Binding | None, cuts: list) -> bool:
    """Can no later statement tell ``a`` (this lowering's) from ``b`` (the old one's)?"""
    if a is None or b is None:
        return a is b
    va, vb = a.val, b.val
    if (
        va.type != vb.type
        or (va.value is None) != (vb.value is None)
        or a.name != b.name
        or a.mutable != b.mutable
        or a.kind != b.kind
        or a.alias != b.alias
        or a.mutref != b.mutref
        or a.view != b.view
    ):
        return False
    try:
        return a.span == _move(b.span, cuts)
    except _touched():
        return False


def _touched():
    from kera_core.sema.incremental import Touched

    return Touched


def _restored(checkpoint: tuple, cuts: list) -> tuple[dict, dict]:
    """A checkpoint's scopes in the current text, its patches applied."""
    ep, d0, d1, patches = checkpoint
    skip = [{n for k, n, _, _ in patches if k == i} for i in (0, 1)]
    scopes = (
        _moved_scope(d0, cuts[ep:], None, skip[0]),
        _moved_scope(d1, cuts[ep:], None, skip[1]),
    )
    _patch(scopes, patches, cuts)
    return scopes


def _patch(scopes: tuple[dict, dict], patches: tuple, cuts: list) -> None:
    for k, n, b, ep in patches:
        if b is None:
            scopes[k].pop(n, None)
        else:
            sp = _move(b.span, cuts[ep:])
            scopes[k][n] = b if sp is b.span else Binding(
                b.name, b.val, b.mutable, sp, b.kind, b.alias, b.mutref, b.view
            )  # fmt: skip


def _moved_scope(
    src: dict, cuts: list, now: Scope | None = None, skip: set | frozenset = frozenset()
) -> dict:
    """``src`` with its bindings' spans moved by ``cuts`` (a binding the edit touched is the
    one ``now`` holds: the convergence check found them alike)."""
    if not cuts:
        return dict(src)
    touched = _touched()
    out = {}
    for n, b in src.items():
        if n in skip:
            continue  # (patched: bound again or unbound)
        try:
            sp = _move(b.span, cuts)
        except touched:
            if now is None or now.get(n) is None:
                raise _Diverged from None
            out[n] = now[n]
            continue
        out[n] = b if sp is b.span else Binding(
            b.name, b.val, b.mutable, sp, b.kind, b.alias, b.mutref, b.view
        )  # fmt: skip
    return out


_LITERALS = frozenset({K.INT, K.FLOAT})


def resume(
    env: ModuleEnv,
    sig: FnSig,
    callees: dict[str, Function],
    traces: dict,
    key: tuple,
    shape: bytes,
    build: Callable[[], LoweredFn],
) -> PendingGraph | None:
    """``sig`` lowered from its body's trace (the statements an edit changed, and those after
    them until the state converges), its graph made by ``build`` when read; None when there
    is no trace of this body under the same signatures, or the edit is not one it can take
    (the caller lowers the function whole, which records a new trace)."""
    from kera_core.sema.incremental import Touched

    fn = sig.ast
    if fn is None or fn.body is None or sig.is_generic or sig.generic:
        return None
    body = fn.body.syntax
    tail = fn.body.tail
    if has_return(body) or (tail is not None and reads_values(tail.syntax.green)):
        return None  # (the statements lowered again are checked as they are)
    tr = _nearest(traces.get(sig.name, ()), key, sig.span.start, body.green.children)
    if tr is None:
        return None
    og, ng = tr.green, fn.syntax.green
    oc, nc = og.children, ng.children
    if og is ng or len(oc) != len(nc) or body.parent is None:
        return None
    k = body.index
    if body.parent.green is not ng or oc[k].kind != K.BLOCK:
        return None
    differ = [i for i, (x, y) in enumerate(zip(oc, nc, strict=True)) if i != k and x is not y]
    differ = [i for i in differ if oc[i] != nc[i]]
    if differ:
        if not all(nc[i].is_token and nc[i].kind in _DOC_TRIVIA for i in differ):
            return None  # the signature changed
        if oc[k] is not nc[k] and oc[k] != nc[k]:
            return None  # and the body too
        return _doc_edited(tr, sig, fn.syntax, k, key, shape, build, traces)
    old_ch, new_ch = tr.children, body.green.children
    lo, hi = len(old_ch), len(new_ch)
    a = _shared_ends(old_ch, new_ch)[0]  # by identity, then equal ones beside them
    while a < lo and a < hi and old_ch[a] == new_ch[a]:
        a += 1
    b = _shared_ends(old_ch[a:], new_ch[a:])[1]
    while b < lo - a and b < hi - a and old_ch[lo - 1 - b] == new_ch[hi - 1 - b]:
        b += 1
    if a == lo and lo == hi:
        return None  # nothing changed in the body (not an edit this trace can take)
    offs_old = oc[k].child_offsets()
    start = body.offset + (offs_old[a] if a < lo else oc[k].text_len)
    # the edit within them, to the byte (a name declared before it in the same statement
    # keeps its span)
    cut = _cut_between(start, old_ch[a : lo - b], new_ch[a : hi - b])
    new_items = [i for i, c in enumerate(new_ch) if not c.is_token and c.kind in _STMT_KINDS]
    p = sum(1 for i in tr.items if i < a)
    last_old = sum(1 for i in tr.items if i < lo - b)
    last_new = sum(1 for i in new_items if i < hi - b)
    first = p
    if tr.lookahead:
        changed = "".join(str(c) for c in (*old_ch[a : lo - b], *new_ch[a : hi - b]))
        idents = set(_IDENT.findall(changed))
        first = min([p, *(i for i, n in tr.lookahead if i < p and n in idents)])
    r = max(i for i in tr.checkpoints if i <= first)
    low = _Resumed(env, sig, callees, tr, (r, last_old, last_new, cut))
    try:
        lf = low.lower()
    except (_Diverged, Touched, RecursionError):
        return None
    new = low.new
    if new is None:
        return None
    uses, types = low._spliced()
    new.green, new.key, new.base, new.shape = ng, key, low.base, shape
    new.children, new.items = new_ch, new_items
    new.diagnostics, new.uses, new.expr_types = lf.diagnostics, uses, types
    _keep(traces, sig.name, tr)  # (the version edited: an undo goes back to it)
    _keep(traces, sig.name, new)
    same = (
        _literals_only(old_ch[a : lo - b], new_ch[a : hi - b])
        and _same_types(tr, new, r, low.span, cut)
    ) or _ownership_neutral(tr, new, (r, p, last_old, last_new), low.span, low._start, cut)
    return PendingGraph(
        sig, lf.diagnostics, low.base, types, uses, build,
        (tr.shape, tr.base, cut) if same else None,
    )  # fmt: skip


def _cut_between(start: int, old: tuple, new: tuple):
    """The edit that made the green elements ``new`` of ``old`` (both starting at ``start``),
    narrowed to the bytes that differ."""
    from kera_core.sema.incremental import _Cut

    was = "".join(map(str, old)).encode()
    now = "".join(map(str, new)).encode()
    pre, suf = common_affixes(was, now)
    return _Cut(start + pre, start + len(was) - suf, len(now) - len(was))


#: What an edit in a function's doc comment changes, above its signature.
_DOC_TRIVIA = frozenset({K.DOC_COMMENT, K.COMMENT, K.WHITESPACE})


def _doc_edited(
    tr: BodyTrace, sig: FnSig, fn, k: int, key: tuple, shape: bytes, build, traces: dict
) -> PendingGraph:
    """A keystroke in the doc comment of a traced function (the rest of it the same): its
    lowering is the trace's moved by the edit (lowering reads no comment; the doc goes into
    the provenance, made with the graph when read), and so is its ownership result."""
    cut = _cut_between(fn.offset, tr.green.children[:k], fn.green.children[:k])
    new = BodyTrace()
    for slot in BodyTrace.__slots__:
        setattr(new, slot, getattr(tr, slot))
    new.cuts = [*tr.cuts, cut]
    new.green, new.key, new.shape = fn.green, key, shape
    new.diagnostics = [cut.diagnostic(d) for d in tr.diagnostics]
    if cut.delta:
        new.uses = SplicedUses.of(tr.uses).moved(cut)
        new.expr_types = SplicedTypes.of(tr.expr_types).moved(cut.delta)
    _keep(traces, sig.name, tr)
    _keep(traces, sig.name, new)
    return PendingGraph(
        sig, new.diagnostics, tr.base, new.expr_types, new.uses, build, (tr.shape, tr.base, cut)
    )


def _keep(traces: dict, name: str, tr: BodyTrace) -> None:
    """``tr`` first among ``name``'s traces, the least recently made or used last."""
    kept = [t for t in traces.get(name, ()) if t.green is not tr.green]
    traces[name] = [tr, *kept[: KEEP_TRACES - 1]]


def _nearest(traces, key: tuple, base: int, children: tuple) -> BodyTrace | None:
    """The trace (of the same signatures, where the function starts now) whose body shares
    the most leading and trailing statements with ``children`` (by identity)."""
    best, most = None, -1
    for tr in traces:
        if tr.key != key or tr.base != base or len(tr.cuts) >= MAX_EDITS:
            continue
        a, b = _shared_ends(tr.children, children)
        if a + b > most:
            best, most = tr, a + b
    return best


def _shared_ends(old: tuple, new: tuple) -> tuple[int, int]:
    """How many leading and trailing elements ``old`` and ``new`` share by identity (the
    comparisons in C: a long body has thousands of children)."""
    n = min(len(old), len(new))
    same = list(map(is_, old, new))
    a = same.index(False) if False in same else n
    same = list(map(is_, reversed(old[a:]), reversed(new[a:])))
    b = same.index(False) if False in same else min(len(old), len(new)) - a
    return a, b


def _literals_only(old: tuple, new: tuple) -> bool:
    """Do these children differ in the text of number literals only?"""
    ot = [t for c in old for t in ((c,) if c.is_token else c.tokens())]
    nt = [t for c in new for t in ((c,) if c.is_token else c.tokens())]
    return len(ot) == len(nt) and all(
        x is y or x.kind == y.kind and (x.kind in _LITERALS or x.text == y.text)
        for x, y in zip(ot, nt, strict=True)
    )


def _same_types(old: BodyTrace, new: BodyTrace, r: int, upto: tuple, cut) -> bool:
    """The expression types of the statements lowered again: the old ones moved by ``cut``?"""
    lo, hi = old.counts[r][2], old.counts[upto[1]][2]
    nlo, nhi = new.counts[r][2], new.counts[upto[0]][2]
    if hi - lo != nhi - nlo:
        return False
    return _moved_alike(
        islice(old.expr_types.items(), lo, hi), islice(new.expr_types.items(), nlo, nhi), cut
    )


def _moved_alike(old_items, new_items, cut) -> bool:
    """Are ``new_items`` (expression types) ``old_items`` moved by ``cut``? The lists must
    be as long (the caller checks)."""
    start, end, delta = cut.start, cut.end, cut.delta
    for ((a, b, k), t), ((x, y, kk), u) in zip(old_items, new_items, strict=True):
        if k != kk or t != u:
            return False
        # an expression ending where the edit starts, or starting where it ends, may or
        # may not take in what was typed there (`0.0` and a `7` typed after it)
        if b <= start:
            moved = (x, y) == (a, b) or (b == start and (x, y) == (a, b + delta))
        elif a >= end:
            moved = (x, y) == (a + delta, b + delta) or (a == end and (x, y) == (a, b + delta))
        elif a <= start and b >= end:  # around the text edited
            moved = (x, y) == (a, b + delta)
        else:
            return False
        if not moved:
            return False
    return True


#: Types the ownership checker tracks nothing of: no move, borrow or loan (docs/ownership.md).
_NEUTRAL = (Prim, Unit, RangeType)


def _ownership_neutral(
    old: BodyTrace, new: BodyTrace, at: tuple, upto: tuple, start: tuple, cut
) -> bool:
    """Is the edit one the ownership checker cannot see? The statements edited, in the old
    lowering and in this one, have scalar types only (no tensor, reference, struct or tuple:
    nothing moved, borrowed or held); the other statements lowered again, and the tail, have
    the old types moved; no local binding in scope before them holds a borrow or is a view
    (so a scalar written there meets no live loan). The checker's events outside the edited
    statements are then the old ones moved by the edit, and those in them touch no variable
    it tracks: its result is the old one, moved (a scalar `let` typed into a long body:
    ~200 ms of checking at 5,000 lines). ``at``: (the checkpoint, the first statement
    edited, the first after the edit in the old and in the new body)."""
    r, first, last_old, last_new = at
    j, jo = upto
    if not (r <= first <= last_old <= jo and first <= last_new <= j):
        return False
    t_old, t_new = old.expr_types, new.expr_types

    def types(counts: list, types, i: int, k: int):
        return islice(types.items(), counts[i][2], counts[k][2])

    for a, b, c, d in ((r, first, r, first), (last_old, jo, last_new, j)):
        n_old = old.counts[b][2] - old.counts[a][2]
        if n_old != new.counts[d][2] - new.counts[c][2]:
            return False
        if not _moved_alike(types(old.counts, t_old, a, b), types(new.counts, t_new, c, d), cut):
            return False
    for counts, ts, k in ((old.counts, t_old, last_old), (new.counts, t_new, last_new)):
        if not all(isinstance(t, _NEUTRAL) for _, t in types(counts, ts, first, k)):
            return False
    # the bindings in scope where the edit starts: at the checkpoint, and those the
    # statements lowered again before the edit made
    bound = [*start[0].values(), *start[1].values()]
    bound += [b for _, d in new.deltas[r:first] for b in d.values() if b is not None]
    for b in bound:
        if b.kind == "param":
            continue  # (a parameter's borrow is the caller's: no loan of a local)
        if b.alias is not None or b.mutref or b.view is not None or isinstance(b.val.type, Ref):
            return False
    ot, nt = old.counts[-1][2], new.counts[-1][2]
    if len(old.expr_types) - ot != len(new.expr_types) - nt:
        return False
    return _moved_alike(
        islice(old.expr_types.items(), ot, None), islice(new.expr_types.items(), nt, None), cut
    )
