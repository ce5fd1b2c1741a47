"""Vector plans for `lanes` loops — target-neutral, shared by every backend with vectors.

A `lanes` loop promises independent iterations. :func:`plan` decides whether one can run as
vector steps on a target described by :class:`VectorTarget` (vector width in bytes, vector
registers, the primitives it has as vector instructions) and says, for every value in the
body, how it is computed:

* **varying** — a float (or a mask from a float comparison) that differs per lane: one
  vector register per jammed copy;
* **contiguous** — an `i64` index equal to ``base + j`` (stride 1 in the loop variable `j`):
  computed as a scalar for the step's first lane, so a load or store at it moves W
  consecutive elements;
* **uniform** — anything the lanes share (`i64` index arithmetic of stride 0, a load at a
  uniform index, float arithmetic on uniform values): computed once per step as a scalar,
  and broadcast where a varying operation reads it.

The body may hold inner `seq` loops with uniform bounds (the k loop of matmul, the group
loop of the canonical sum); a varying value assigned before such a loop and updated inside
it is a per-lane accumulator, kept in registers. Each lane still performs exactly the
scalar operations in the scalar order, so the bits cannot change.

The plan also fixes the **jam**: how many vectors one step processes. A body with an inner
loop is latency-bound on its accumulators' chains; jamming J vectors gives J independent
chains (bounded by the register budget and, for a constant trip count, by the lanes there
are). A body without one is bound by memory: J copies keep more loads in flight (measured
on `a*x+y` at 10^7: one vector a step moved data at 56 % of `copyto`'s rate, four at 74 %).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kera_core.loops import ir
from kera_core.loops.ir import Imm

FLOATS = ("f32", "f64")


@dataclass(frozen=True)
class VectorTarget:
    """What a backend's vectors are (never its name: the plan asks only these)."""

    width_bytes: int  # bytes per vector register (AVX2: 32, SSE/NEON: 16)
    registers: int  # vector registers the allocator may use
    ops: frozenset  # loop-program primitives the backend has as vector instructions
    max_jam: int = 4

    def width(self, t: str) -> int:
        return self.width_bytes // (4 if t == "f32" else 8)


@dataclass
class LanesPlan:
    loop: ir.Loop
    elem: str  # the float type of every varying value, vector load and vector store
    width: int  # lanes per vector
    jam: int  # vectors per step
    varying: set[int] = field(default_factory=set)
    contiguous: set[int] = field(default_factory=set)
    reassigned: set[int] = field(default_factory=set)  # defined more than once in the body
    inner: bool = False  # the body holds an inner loop

    def kind(self, x) -> str:
        """'varying', 'contiguous' or 'uniform' for an operand of the body."""
        if isinstance(x, ir.Var):
            if x.id in self.varying:
                return "varying"
            if x.id in self.contiguous or x.id == self.loop.var.id:
                return "contiguous"
        return "uniform"

    @property
    def step(self) -> int:
        return self.width * self.jam

    def invariants(self) -> list:
        """The loop-invariant float operands vector code reads (of varying operations, and
        stored values), once each in body order: a backend broadcasts them before its
        vector loops instead of once per step."""
        inside = ir.assigned(self.loop.body) | {self.loop.var.id}
        out: list = []
        seen: set = set()

        def take(x) -> None:
            if isinstance(x, ir.Var) and x.id in inside or x.type != self.elem:
                return
            key = ("v", x.id) if isinstance(x, ir.Var) else ("i", x.type, x.bits)
            if key not in seen:
                seen.add(key)
                out.append(x)

        def walk(stmts: list) -> None:
            for s in stmts:
                if isinstance(s, ir.Op) and s.dst.id in self.varying:
                    for a in s.args[1:] if s.op == "select" else s.args:
                        take(a)
                elif isinstance(s, ir.Store):
                    take(s.value)
                elif isinstance(s, ir.Loop):
                    walk(s.body)

        walk(self.loop.body)
        return out


class _No(Exception):
    pass


def plan(loop: ir.Loop, outside: set[int], target: VectorTarget) -> LanesPlan | None:
    """The vector plan of `loop`, or None when it stays scalar. ``outside``: the ids of the
    loop-program variables defined before the loop (its invariants)."""
    if loop.mark != "lanes" or loop.counted:
        return None
    try:
        return _Planner(loop, outside, target).run()
    except _No:
        return None


class _Planner:
    def __init__(self, loop: ir.Loop, outside: set[int], target: VectorTarget) -> None:
        self.loop = loop
        self.outside = outside
        self.target = target
        self.elem: str | None = None
        self.stride: dict[int, int] = {loop.var.id: 1}
        self.varying: set[int] = set()
        self.defs: dict[int, int] = {}  # var id → number of definitions in the body
        self.inner = False
        self.carried = 0

    def run(self) -> LanesPlan:
        self.count_defs(self.loop.body)
        for v in self.defs:
            if v in self.outside or v == self.loop.var.id:
                raise _No  # a value of the enclosing code written here: carried across lanes
        # the varying set grows to a fixpoint: a value is varying if any definition is
        while True:
            before = (len(self.varying), dict(self.stride))
            self.walk(self.loop.body, set())
            if before == (len(self.varying), self.stride):
                break
        if self.elem is None:
            raise _No  # nothing varies: no vector work
        t = self.elem
        width = self.target.width(t)
        if self.inner:
            # J chains of the carried accumulators, with room for a load and a product each
            per_copy = max(1, self.carried) + 1
            jam = max(1, min(self.target.max_jam, (self.target.registers - 2) // per_copy))
        else:
            # a streaming body: J independent copies keep more loads in flight; each needs
            # about three vectors at a time (two operands and a result) once scheduled
            jam = max(1, min(self.target.max_jam, self.target.registers // 3))
        trip = _constant_trip(self.loop)
        if trip is not None:
            jam = max(1, min(jam, trip // width))
        jam = 1 << (jam.bit_length() - 1)  # a power of two: steps are masked off
        contiguous = {v for v, s in self.stride.items() if s == 1 and v != self.loop.var.id}
        reassigned = {v for v, n in self.defs.items() if n > 1}
        return LanesPlan(
            self.loop,
            t,
            width,
            jam,
            set(self.varying),
            contiguous,
            reassigned,
            self.inner,
        )

    def count_defs(self, stmts: list) -> None:
        for s in stmts:
            if isinstance(s, (ir.Op, ir.Load)):
                self.defs[s.dst.id] = self.defs.get(s.dst.id, 0) + 1
            elif isinstance(s, ir.Loop):
                self.defs[s.var.id] = self.defs.get(s.var.id, 0) + 1
                self.count_defs(s.body)

    def float_type(self, t: str) -> None:
        if t not in FLOATS or (self.elem is not None and self.elem != t):
            raise _No
        self.elem = t

    def stride_of(self, x) -> int:
        if isinstance(x, Imm):
            return 0
        return self.stride.get(x.id, 0)

    def is_varying(self, x) -> bool:
        return isinstance(x, ir.Var) and x.id in self.varying

    def read(self, x, assigned: set[int]) -> None:
        if isinstance(x, ir.Var) and x.id not in self.outside and x.id not in assigned:
            if x.id != self.loop.var.id:
                raise _No  # read before it is written in this iteration

    def walk(self, stmts: list, assigned: set[int]) -> None:
        for s in stmts:
            if isinstance(s, ir.Op):
                for a in s.args:
                    self.read(a, assigned)
                self.op(s)
                assigned.add(s.dst.id)
            elif isinstance(s, ir.Load):
                self.read(s.index, assigned)
                st = self.stride_of(s.index)
                if st == 1:
                    self.float_type(s.buf.elem)
                    self.varying.add(s.dst.id)
                elif st != 0:
                    raise _No
                assigned.add(s.dst.id)
            elif isinstance(s, ir.Store):
                self.read(s.index, assigned)
                self.read(s.value, assigned)
                if self.stride_of(s.index) != 1:
                    raise _No  # every lane would write one cell
                self.float_type(s.buf.elem)
                self.float_type(s.value.type)
            elif isinstance(s, ir.Loop):
                if s.mark != "seq" or s.counted:
                    raise _No
                for b in (s.lo, s.hi):
                    self.read(b, assigned)
                    if self.stride_of(b) != 0:
                        raise _No
                self.inner = True
                inside = set(assigned)
                inside.add(s.var.id)
                self.walk(s.body, inside)
                # accumulators: varying values assigned before the loop and updated in it
                updated = {
                    x.dst.id for x in s.body if isinstance(x, ir.Op) and x.dst.id in assigned
                }
                self.carried = max(self.carried, len(updated & self.varying))
            else:
                raise _No  # If, While, Check, calls, allocation: the loop stays scalar

    def op(self, s: ir.Op) -> None:
        d = s.dst
        if d.type == "i64" or (d.type == "bool" and all(_int_operand(a) for a in s.args)):
            strides = [self.stride_of(a) for a in s.args]
            if s.op == "add":
                st = sum(strides)
            elif s.op == "sub":
                st = strides[0] - strides[1]
            elif all(x == 0 for x in strides):
                st = 0
            else:
                raise _No
            if st not in (0, 1) or (st == 1 and d.type != "i64"):
                raise _No
            if st == 1 and self.defs.get(d.id, 0) > 1:
                raise _No  # a lane index reassigned
            old = self.stride.get(d.id)
            if old is not None and old != st:
                raise _No
            if st:
                self.stride[d.id] = st
            return
        if any(self.stride_of(a) != 0 for a in s.args):
            # a lane index used as a value (converted to a float, say): each lane would need
            # its own index as data — integer lanes are not planned, so the loop stays scalar
            raise _No
        if any(self.is_varying(a) for a in s.args) or d.id in self.varying:
            if s.op not in self.target.ops:
                raise _No
            if s.op == "select" and not (isinstance(s.args[0], Imm) or self.is_varying(s.args[0])):
                raise _No  # a uniform condition choosing between lanes' values
            # a comparison's mask takes its operands' type; a select its result's
            self.float_type(s.args[0].type if d.type == "bool" else d.type)
            for a in s.args:
                if not isinstance(a, Imm) and a.type not in FLOATS + ("bool",):
                    raise _No
            self.varying.add(d.id)


def _int_operand(x) -> bool:
    return x.type not in FLOATS


def _constant_trip(loop: ir.Loop) -> int | None:
    if isinstance(loop.lo, Imm) and isinstance(loop.hi, Imm):
        return max(0, _signed(loop.hi.bits) - _signed(loop.lo.bits))
    return None


def _signed(bits: int) -> int:
    bits &= (1 << 64) - 1
    return bits - (1 << 64) if bits >> 63 else bits
