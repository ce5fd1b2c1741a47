"""The two dataflow problems of the ownership check, and the diagnostics they give.

* **Maybe-moved** (forward, union at joins): which moves may have happened on some
  path to a node. A read, borrow, partial write or `&mut` of a variable that may have
  been moved is K0401. Loops need no special case: a move late in a loop body
  reaches the top of the body through the back edge.
* **Live borrows** (backward, union at joins): a borrow variable is live from its
  definition to its last use on some path (non-lexical lifetimes). While a borrow of
  `x` is live, assigning `x` is K0403, `&mut x` is K0402 and moving `x` is K0404; while
  a `&mut` borrow of `x` (`let r = &mut x;`) is live, any use of `x` is K0402.

Both are classic bit-vector problems over the single-event CFG; sets are frozensets
of ``(var, node)`` pairs so the diagnostics can name the move or use they came from.
"""

from __future__ import annotations

from kera_core.diagnostics import Diagnostic, Edit, Fix, Related, error
from kera_core.sema.ownership.build import Builder
from kera_core.sema.ownership.cfg import Event, Loan, Var
from kera_core.source import Span

Pairs = frozenset[tuple[int, int]]
NO_PAIRS: Pairs = frozenset()


def _forward(b: Builder, reach: set[int]) -> list[Pairs]:
    cfg = b.cfg
    preds = cfg.preds()
    n = len(cfg.events)
    ins: list[Pairs] = [NO_PAIRS] * n
    outs: list[Pairs | None] = [None] * n
    work = sorted(reach, reverse=True)
    pending = set(work)
    while work:
        node = work.pop()
        pending.discard(node)
        acc: set[tuple[int, int]] = set()
        for p in preds[node]:
            o = outs[p]
            if o is not None:
                acc |= o
        inn = frozenset(acc)
        ins[node] = inn
        out = _transfer_moves(cfg.events[node], node, inn)
        if out != outs[node]:
            outs[node] = out
            for s in cfg.succ[node]:
                if s not in pending:
                    pending.add(s)
                    work.append(s)
    return ins


def _transfer_moves(ev: Event, node: int, s: Pairs) -> Pairs:
    if ev.kind == "move":
        return s | {(ev.var, node)}
    if ev.kind == "def" or (ev.kind == "write" and ev.what in ("whole", "compound")):
        if any(v == ev.var for v, _ in s):
            return frozenset(p for p in s if p[0] != ev.var)
    return s


def _backward(b: Builder, tracked: set[int]) -> list[Pairs]:
    """Live-out sets of the borrow variables in ``tracked``: (var, node of a later use)."""
    cfg = b.cfg
    preds = cfg.preds()
    n = len(cfg.events)
    live_in: list[Pairs] = [NO_PAIRS] * n
    live_out: list[Pairs] = [NO_PAIRS] * n
    work = list(range(n))
    pending = set(work)
    while work:
        node = work.pop()
        pending.discard(node)
        acc: set[tuple[int, int]] = set()
        for s in cfg.succ[node]:
            acc |= live_in[s]
        out = frozenset(acc)
        live_out[node] = out
        ev = cfg.events[node]
        inn = out
        if ev.var in tracked:
            if ev.kind == "def":
                inn = frozenset(p for p in out if p[0] != ev.var)
            elif ev.kind == "read":
                inn = out | {(ev.var, node)}
        if inn != live_in[node]:
            live_in[node] = inn
            for p in preds[node]:
                if p not in pending:
                    pending.add(p)
                    work.append(p)
    return live_out


def _span_key(b: Builder, node: int) -> tuple[int, int]:
    sp = b.cfg.events[node].span
    return (sp.start, sp.end) if sp is not None else (-1, node)


def check_flow(b: Builder) -> list[Diagnostic]:
    reach = b.cfg.reachable(0)
    out: list[Diagnostic] = [d for node, d in b.static if node in reach]
    out += _moves(b, reach)
    out += _borrows(b, reach)
    return out


# --- use after move -------------------------------------------------------------------

_USES = ("read", "move", "mutborrow")


def _moves(b: Builder, reach: set[int]) -> list[Diagnostic]:
    events = b.cfg.events
    moved_later = {ev.var for ev in events if ev.kind == "move"}
    if not moved_later:
        return []  # no move at all: every maybe-moved set is empty
    ins = _forward(b, reach)
    found: dict[tuple[int, frozenset[int]], int] = {}
    for node in sorted(reach, key=lambda n: _span_key(b, n)):
        ev = events[node]
        partial = ev.kind == "write" and ev.what in ("element", "field")
        if ev.kind not in _USES and not partial:
            continue
        moved = frozenset(m for v, m in ins[node] if v == ev.var)
        if moved and (ev.var, moved) not in found:
            found[(ev.var, moved)] = node
    return [_use_after_move(b, node, moves, moved_later) for (_, moves), node in found.items()]


def _use_after_move(b: Builder, node: int, moves: frozenset[int], moved_later) -> Diagnostic:
    events = b.cfg.events
    ev = events[node]
    var = b.vars[ev.var]
    assert ev.span is not None
    related = []
    for m in sorted(moves, key=lambda n: _span_key(b, n)):
        sp = events[m].span
        assert sp is not None
        again = m >= node  # nodes are numbered in evaluation order: only a back edge
        what = "value partly moved here" if events[m].what == "field" else "value moved here"
        msg = f"{what}, in the previous iteration of the loop" if again else None
        related.append(Related(sp, msg or what))
    first = events[min(moves, key=lambda n: _span_key(b, n))]
    return error(
        "K0401",
        ev.span,
        f"use of moved value `{var.name}`",
        related=tuple(related),
        fix=_move_fix(b, var, first, moved_later if ev.kind == "read" else None),
    )


def _move_fix(b: Builder, var: Var, move: Event, moved_later: set[int] | None) -> Fix | None:
    """Keep the value usable: borrow where the destination takes a borrow, else copy.

    A borrow suits `let y = x;` when `y` is only read and the later use of `x` only
    reads it too (``moved_later`` is None when it writes or mutably borrows `x`).
    """
    dest = move.dest
    span = move.span
    if dest is None or span is None:
        return None
    direct = dest.value_span == span  # `let y = x;`, not `let y = if c { x } else { z };`
    if move.what == "field":  # `let w = l.w;`: borrow the field, or nothing to offer
        if dest.kind == "let" and direct:
            return Fix("borrow the field with `&`", (Edit(Span(span.start, span.start), "&"),))
        return None
    if dest.kind == "let" and direct and moved_later is not None and dest.target not in moved_later:
        return Fix(f"borrow it with `&{var.name}`", (Edit(Span(span.start, span.start), "&"),))
    if dest.kind == "move_to" and dest.callee_span is not None:
        return Fix(
            f"use `copy_to`, which leaves `{var.name}` usable",
            (Edit(dest.callee_span, "copy_to"),),
        )
    return b.copy_fix(var.name, var.type, span)


# --- borrows ----------------------------------------------------------------------------


def _borrows(b: Builder, reach: set[int]) -> list[Diagnostic]:
    holders: dict[int, list[tuple[Var, Loan]]] = {}  # owner id -> borrow vars holding it
    for v in b.vars:
        for loan in v.loans:
            holders.setdefault(loan.owner, []).append((v, loan))
    if not holders:
        return []
    tracked = {v.id for v in b.vars if v.loans}
    live_out = _backward(b, tracked)
    out = []
    events = b.cfg.events
    for node in sorted(reach):
        ev = events[node]
        if ev.kind not in ("write", "mutborrow", "move", "read") or ev.var not in holders:
            continue
        live: dict[int, list[int]] = {}
        for v, use in live_out[node]:
            live.setdefault(v, []).append(use)
        # a read conflicts only with a live `&mut` borrow (`let r = &mut y;`)
        conflicts = [
            (loan, h)
            for h, loan in holders[ev.var]
            if h.id in live and (loan.mutable or ev.kind != "read")
        ]
        if not conflicts:
            continue
        loan, holder = min(conflicts, key=lambda c: (c[0].span.start, c[1].id))
        use = min(live[holder.id], key=lambda n: _span_key(b, n))
        out.append(_conflict(b, ev, loan, holder, use))
    return out


def _conflict(b: Builder, ev: Event, loan: Loan, holder: Var, use: int) -> Diagnostic:
    name = b.vars[ev.var].name
    use_span = b.cfg.events[use].span
    assert ev.span is not None and use_span is not None
    later = "borrow later used by this call" if holder.kind == "tmp" else "borrow later used here"
    if ev.kind == "mutborrow" and loan.mutable:
        code = "K0402"
        msg = f"cannot borrow `{name}` as mutable more than once at a time"
        first = "first mutable borrow here"
    elif ev.kind == "mutborrow":
        code = "K0402"
        msg = f"cannot borrow `{name}` as mutable because it is also borrowed as shared"
        first = "first borrow here"
    elif ev.kind == "read":
        code = "K0402"
        msg = f"cannot use `{name}` while it is mutably borrowed"
        first = f"`{name}` is mutably borrowed here"
    elif ev.kind == "move":
        code = "K0404"
        msg = f"cannot move `{name}` while it is borrowed"
        first = f"`{name}` is borrowed here"
    else:
        code = "K0403"
        part = {"element": "an element of ", "field": "a field of "}.get(ev.what, "")
        msg = f"cannot assign to {part}`{name}` while it is borrowed"
        first = f"`{name}` is borrowed here"
    related = [Related(loan.span, first)]
    if holder.kind == "tmp":
        use_span = holder.decl  # the argument that passes the borrow to the call
    if use_span != loan.span:
        related.append(Related(use_span, later))
    return error(code, ev.span, msg, related=tuple(related))
