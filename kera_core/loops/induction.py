"""Affine element indices of straight-line loops — target-neutral.

In a loop whose body is straight-line (only `Op`, `Load` and `Store`), an `i64` index
computed from the loop variable `k` and values the body does not write is often affine in
`k`: ``index = base + k·step`` with `base` and `step` loop-invariant (matmul's k loop reads
``a[row + k]`` and ``b[j + k·cols]``; an elementwise loop's scalar tail ``x[i]``). A backend
whose address arithmetic is costly may then keep one address per such access, start it at
the first iteration's element and add ``step`` elements each iteration, instead of computing
the index every time; :func:`plan` says which accesses can, and which index statements
only they read (so the backend may leave those out). The address of every access is the
same either way — integer arithmetic modulo the address width is a ring, so stepping an
address agrees with computing it from the wrapped index — so no value or trap can change.

`base` and `step` are :data:`Term` trees over the loop's invariants: an `Imm`, an invariant
`Var`, or ``(op, a, b)`` with `op` ``add``, ``sub`` or ``mul`` (wrapping `i64` arithmetic).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kera_core.loops import ir
from kera_core.loops.ir import Imm

Term = ir.Var | Imm | tuple

ZERO = Imm("i64", 0)
ONE = Imm("i64", 1)
_MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Affine:
    """``index = base + var·step`` (wrapping `i64` arithmetic)."""

    base: Term
    step: Term


@dataclass
class Strides:
    """The affine accesses of one straight-line loop.

    ``access``: ``id(statement)`` of each `Load`/`Store` whose index is affine with a
    non-zero step → the ``(buf, index var)`` it reads or writes and its form; ``unused``:
    ``id(statement)`` of the body's index `Op`\\ s whose results only those accesses' indices
    (and other such statements) read — nothing else in the function reads them.
    """

    access: dict[int, tuple[ir.Buf, ir.Var, Affine]] = field(default_factory=dict)
    unused: set[int] = field(default_factory=set)


def straight(loop: ir.Loop) -> bool:
    """Whether the loop's body holds only `Op`, `Load` and `Store` statements."""
    return all(type(s) in (ir.Op, ir.Load, ir.Store) for s in loop.body)


def plan(loop: ir.Loop, reads: Counter) -> Strides | None:
    """The affine accesses of ``loop`` (None when its body is not straight-line or none
    has an affine index). ``reads``: how often each Var id is read in the whole function
    (:func:`kera_core.loops.ir.reads`)."""
    if not straight(loop):
        return None
    written = Counter(s.dst.id for s in loop.body if isinstance(s, (ir.Op, ir.Load)))
    if written[loop.var.id]:
        return None
    forms: dict[int, Affine] = {loop.var.id: Affine(ZERO, ONE)}

    def form(x) -> Affine | None:
        if isinstance(x, Imm):
            return Affine(x, ZERO) if x.type == "i64" else None
        if x.id in forms:
            return forms[x.id]
        if x.id in written or x.type != "i64":
            return None  # written in the body (after this read, or more than once)
        return Affine(x, ZERO)  # invariant

    out = Strides()
    for s in loop.body:
        if isinstance(s, (ir.Load, ir.Store)) and isinstance(s.index, ir.Var):
            f = form(s.index)
            if f is not None and f.step != ZERO:
                out.access[id(s)] = (s.buf, s.index, f)
        if isinstance(s, ir.Op) and written[s.dst.id] == 1 and s.dst.type == "i64":
            f = _op_form(s, form)
            if f is not None:
                forms[s.dst.id] = f
    if not out.access:
        return None
    out.unused = _unused(loop.body, out, reads, set(forms) - {loop.var.id})
    return out


def _op_form(s: ir.Op, form) -> Affine | None:
    if s.op == "select" and isinstance(s.args[0], Imm):  # a copy
        return form(s.args[1] if s.args[0].bits & 1 else s.args[2])
    if s.op not in ("add", "sub", "mul"):
        return None
    p, q = form(s.args[0]), form(s.args[1])
    if p is None or q is None:
        return None
    if s.op == "mul":
        if p.step == ZERO:
            return Affine(term("mul", p.base, q.base), term("mul", p.base, q.step))
        if q.step == ZERO:
            return Affine(term("mul", p.base, q.base), term("mul", p.step, q.base))
        return None  # quadratic in the loop variable
    return Affine(term(s.op, p.base, q.base), term(s.op, p.step, q.step))


def term(op: str, a: Term, b: Term) -> Term:
    """``a op b``, folded where an operand is a constant that decides it."""
    if isinstance(a, Imm) and isinstance(b, Imm):
        x, y = a.bits, b.bits
        v = x + y if op == "add" else x - y if op == "sub" else x * y
        return Imm("i64", v & _MASK)
    if op == "add" and a == ZERO:
        return b
    if op in ("add", "sub") and b == ZERO:
        return a
    if op == "mul":
        if ZERO in (a, b):
            return ZERO
        if a == ONE:
            return b
        if b == ONE:
            return a
    return (op, a, b)


def _unused(body: list, out: Strides, reads: Counter, forms: set[int]) -> set[int]:
    """The index statements only the strided accesses need (see :class:`Strides`): an
    affine index `Op` every read of whose result, anywhere in the function, is a strided
    access's index or an argument of another such statement."""
    gone = Counter(v.id for _, v, _ in out.access.values())  # reads that will not happen
    unused: set[int] = set()
    changed = True
    while changed:
        changed = False
        for s in body:
            if type(s) is ir.Op and s.dst.id in forms and id(s) not in unused:
                if reads[s.dst.id] == gone[s.dst.id]:
                    unused.add(id(s))
                    gone.update(a.id for a in s.args if isinstance(a, ir.Var))
                    changed = True
    return unused
