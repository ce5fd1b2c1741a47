"""The control-flow graph the ownership checker runs on: variables, loans and events.

One function body becomes a graph of single-event nodes in evaluation order
(`docs/ownership.md` §6). The graph is built from the AST, not from the dataflow
graph of `kera_core/ir`, because ownership is a property of *names* (which variable
owns which value, which binding holds which borrow), and the IR deliberately
forgets names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.ir.types import Ref, Type, holds_tensor
from kera_core.source import Span


@dataclass(frozen=True)
class Loan:
    """A borrow of ``owner`` created by the `&…` (or, ``mutable``, `&mut …`) at ``span``.

    While a holder of a mutable loan is live, ``owner`` may not even be read (§6)."""

    owner: int  # Var.id
    span: Span
    mutable: bool = False


@dataclass(eq=False)
class Var:
    """One binding. Shadowing makes a new Var, so ids, not names, are identity."""

    id: int
    name: str
    decl: Span  # the name where it is bound (or, for a temporary, the argument)
    # local | param (by value) | refparam (`&T`) | mutref (`&mut T`) | loop | dim | tmp
    # | refmut (`let r = &mut y;`: a reference variable, ``type`` is `&mut T`)
    kind: str
    type: Type | None  # the type the body sees (for `&mut` parameters: the referent)
    mutable: bool = False
    loans: frozenset[Loan] = frozenset()

    @property
    def is_move_type(self) -> bool:
        """Owned tensors, and structs and tuples holding one, move; scalars, `()`, other
        structs and borrows are copied (§2)."""
        return self.kind in ("local", "param") and holds_tensor(self.type)

    @property
    def is_borrow(self) -> bool:
        return isinstance(self.type, Ref) or self.kind == "tmp"

    @property
    def is_owner(self) -> bool:
        """Can be borrowed, assigned or moved: it holds a value, not a borrow."""
        return self.kind in ("local", "param", "mutref", "loop") and not isinstance(self.type, Ref)


@dataclass(frozen=True)
class Dest:
    """Where a value goes when an expression is evaluated in a *move position*."""

    kind: str  # let | let_mut | pattern | assign | arg | field | move_to | return
    span: Span  # the let statement, the assignment, the call or the return
    callee: str = ""
    param: str = ""
    target: int = -1  # Var.id bound by a `let`, or -1
    callee_span: Span | None = None  # `move_to` name, for the fix
    value_span: Span | None = None  # a `let` initializer without its parentheses


@dataclass(eq=False)
class Event:
    """What happens at one node. ``var`` is a Var.id (or -1 for a no-op)."""

    kind: str  # nop | read | move | def | init | write | mutborrow
    var: int = -1
    span: Span | None = None
    dest: Dest | None = None  # for moves
    what: str = ""  # for writes: whole | element | field | compound; a move of a field: field


@dataclass
class Cfg:
    events: list[Event] = field(default_factory=list)
    succ: list[list[int]] = field(default_factory=list)

    def add(self, ev: Event) -> int:
        self.events.append(ev)
        self.succ.append([])
        return len(self.events) - 1

    def edge(self, a: int, b: int) -> None:
        if b not in self.succ[a]:
            self.succ[a].append(b)

    def preds(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.events]
        for a, ss in enumerate(self.succ):
            for b in ss:
                out[b].append(a)
        return out

    def reachable(self, entry: int = 0) -> set[int]:
        seen = {entry}
        stack = [entry]
        while stack:
            n = stack.pop()
            for s in self.succ[n]:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        return seen
