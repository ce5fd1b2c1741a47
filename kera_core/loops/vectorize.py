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

**Mixed widths.** A body may widen binary32 values to binary64, compute there and narrow
back (the binary32 elementary functions: docs/semantics.md §6.2–§6.5). On a target with
``narrow_lanes`` and the conversions in its ``int_ops`` (``convert:f32>f64``,
``convert:f64>f32``), the lanes are those of the wide type — W = width / 8 bytes — and a
value of half that width is held in the low half of a vector (W lanes of 32 bits: WebAssembly
``f64x2.promote_low_f32x4``/``f32x4.demote_f64x2_zero``, x86 ``cvtps2pd``/``cvtpd2ps``,
ARM ``fcvtl``/``fcvtn``); its loads and stores move half a vector. A mask has the width of
the values compared, and a select, `and`, `or` … only combine masks and values of one width.

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
    """What a backend's vectors are (never its name: the plan asks only these).

    ``ops``: the primitives it has as vector instructions on float lanes (and their
    comparison masks). ``int_ops``: the primitives it has on integer lanes, as
    ``"op:type"`` (the operand type: ``"add:i32"``, ``"lt:u32"``, ``"or:bool"`` on masks)
    or ``"op:from>to"`` for ``convert``/``bitcast`` (``"convert:f32>i32"``); a target
    without any keeps every loop with integer data scalar. Lanes are of one width: the
    varying values of a plan are floats of one type, integers of that width and masks —
    unless ``narrow_lanes``: then values of half the widest lane width are held in the low
    half of a vector (module docstring, "Mixed widths"), for the types the target converts
    between.
    """

    width_bytes: int  # bytes per vector register (AVX2: 32, SSE/NEON: 16)
    registers: int  # vector registers the allocator may use
    ops: frozenset  # loop-program primitives the backend has as vector instructions
    max_jam: int = 4
    int_ops: frozenset = frozenset()
    # whether the target spends one step of the run's budget per iteration of a counted
    # (source-level) loop (R0007, `--max-steps`): then such loops stay scalar
    counts_steps: bool = True
    # whether values of half the lane width may be held in the low half of a vector
    narrow_lanes: bool = False

    def width(self, t: str) -> int:
        return self.width_bytes // (ir.BITS[t] // 8)

    def has(self, op: str, args: tuple, dst: str) -> bool:
        """Whether ``op`` on operands of types ``args`` giving ``dst`` is a vector
        instruction."""
        if op in ("convert", "bitcast"):
            src = args[0]
            if src == dst and op == "bitcast":
                return True
            return f"{op}:{src}>{dst}" in self.int_ops
        t = args[-1] if op == "select" else args[0]
        if t in FLOATS:
            return op in self.ops
        return f"{op}:{t}" in self.int_ops

    def int_lanes(self, t: str) -> bool:
        """Whether integer type ``t`` can be a lane type (loads, stores, operations)."""
        return any(k.endswith(":" + t) for k in self.int_ops)


@dataclass
class LanesPlan:
    loop: ir.Loop
    # the lane type: the float type of the varying values (an integer type when none is a
    # float); every varying value, vector load and vector store has its width — or, mixed
    # (VectorTarget.narrow_lanes), half of it: see half()
    elem: str
    width: int  # lanes per vector
    jam: int  # vectors per step
    varying: set[int] = field(default_factory=set)
    contiguous: set[int] = field(default_factory=set)
    reassigned: set[int] = field(default_factory=set)  # defined more than once in the body
    inner: bool = False  # the body holds an inner loop
    # mixed widths: the varying masks (bool) held at half the lane width — those of a
    # comparison of half-width values (every other varying value's width is its type's)
    narrow_masks: set[int] = field(default_factory=set)

    def half(self, x) -> bool:
        """Whether the vector of operand ``x`` (a varying value, a loaded or stored element,
        a broadcast invariant) holds half-width lanes: W lanes in the low half."""
        if x.type == "bool":
            return isinstance(x, ir.Var) and x.id in self.narrow_masks
        return ir.BITS[x.type] < ir.BITS[self.elem]

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
            if isinstance(x, ir.Var) and x.id in inside or x.type not in FLOATS:
                return  # (uniform integers a vector operation reads are splat where read)
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
    if loop.mark != "lanes" or (loop.counted and target.counts_steps):
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
        self.elem: str | None = None  # the float lane type, else the first integer one
        self.widths: set[int] = set()  # the lane widths seen (two only with narrow_lanes)
        self.mask_bits: dict[int, int] = {}  # varying mask id → the width it was made at
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
        if len(self.widths) > 1 and ir.BITS[t] != max(self.widths):
            raise _No  # the widest lanes are integers: no float type sets the width
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
            {v for v, w in self.mask_bits.items() if w < max(self.widths)},
        )

    def count_defs(self, stmts: list) -> None:
        for s in stmts:
            if isinstance(s, (ir.Op, ir.Load)):
                self.defs[s.dst.id] = self.defs.get(s.dst.id, 0) + 1
            elif isinstance(s, ir.Loop):
                self.defs[s.var.id] = self.defs.get(s.var.id, 0) + 1
                self.count_defs(s.body)

    def memory_type(self, t: str) -> None:
        """A vector load or store of elements of type ``t`` (bool elements are bytes, not
        lane-wide masks)."""
        if t == "bool":
            raise _No
        self.lane_type(t)

    def lane_type(self, t: str) -> None:
        """A varying value, vector load or vector store of type ``t``: lanes are of one
        width (or, with ``narrow_lanes``, of a width and its half), and of one float type
        per width (integer types of those widths only where the target has integer
        lanes)."""
        if t == "bool":
            return  # a mask: as wide as the lanes it came from
        if t not in FLOATS and not self.target.int_lanes(t):
            raise _No
        self.widths.add(ir.BITS[t])
        if len(self.widths) > 1:
            lo, hi = min(self.widths), max(self.widths)
            if not self.target.narrow_lanes or len(self.widths) > 2 or 2 * lo != hi:
                raise _No
        if t in FLOATS:
            if self.elem in FLOATS and self.elem != t:
                if ir.BITS[self.elem] == ir.BITS[t] or not self.target.narrow_lanes:
                    raise _No
                if ir.BITS[t] < ir.BITS[self.elem]:
                    return  # the lanes are the wider float's
            self.elem = t
        elif self.elem is None or (self.elem not in FLOATS and ir.BITS[t] > ir.BITS[self.elem]):
            self.elem = t

    def width_of(self, x) -> int | None:
        """The lane width of a varying operand (a mask's: that of what it compared)."""
        if x.type != "bool":
            return ir.BITS[x.type]
        if isinstance(x, ir.Var) and x.id in self.varying:
            return self.mask_bits.get(x.id)
        return None  # a uniform mask: splat at whatever width reads it

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
                    self.memory_type(s.buf.elem)
                    self.varying.add(s.dst.id)
                elif st != 0:
                    raise _No
                assigned.add(s.dst.id)
            elif isinstance(s, ir.Store):
                self.read(s.index, assigned)
                self.read(s.value, assigned)
                if self.stride_of(s.index) != 1:
                    raise _No  # every lane would write one cell
                self.memory_type(s.buf.elem)
                self.lane_type(s.value.type)
            elif isinstance(s, ir.Loop):
                if s.mark != "seq" or (s.counted and self.target.counts_steps):
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
        data = d.id in self.varying or any(self.is_varying(a) for a in s.args)
        if not data and (
            d.type == "i64" or (d.type == "bool" and all(_int_operand(a) for a in s.args))
        ):
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
        if data:
            if not self.target.has(s.op, tuple(a.type for a in s.args), d.type):
                raise _No
            if s.op == "select" and not (isinstance(s.args[0], Imm) or self.is_varying(s.args[0])):
                raise _No  # a uniform condition choosing between lanes' values
            if s.op in ("shl", "shr") and self.is_varying(s.args[1]):
                raise _No  # a shift count per lane (vector shifts take one count)
            self.lane_type(d.type)
            for a in s.args:
                self.lane_type(a.type)  # (shift counts too: one lane width throughout)
            self.mask_width(s)
            self.varying.add(d.id)

    def mask_width(self, s: ir.Op) -> None:
        """Masks and values one operation combines have one lane width; a comparison's mask
        has its operands' (:attr:`LanesPlan.narrow_masks`). A conversion changes width."""
        if s.op in ("convert", "bitcast"):
            return
        args = s.args[1:] if s.op == "select" else s.args
        if s.op in ("shl", "shr"):
            args = args[:1]
        widths = {w for w in (self.width_of(a) for a in args) if w is not None}
        if s.op == "select":
            c = self.width_of(s.args[0])
            if c is not None:
                widths.add(c)
        if len(widths) > 1:
            raise _No  # a mask of one width applied to values of another
        if s.dst.type == "bool" and widths:
            w = widths.pop()
            if self.mask_bits.setdefault(s.dst.id, w) != w:
                raise _No
        elif s.dst.type != "bool" and widths and ir.BITS[s.dst.type] not in widths:
            raise _No


def _int_operand(x) -> bool:
    return x.type not in FLOATS


def _constant_trip(loop: ir.Loop) -> int | None:
    if isinstance(loop.lo, Imm) and isinstance(loop.hi, Imm):
        return max(0, _signed(loop.hi.bits) - _signed(loop.lo.bits))
    return None


def _signed(bits: int) -> int:
    bits &= (1 << 64) - 1
    return bits - (1 << 64) if bits >> 63 else bits
