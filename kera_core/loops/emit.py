"""Building loop programs: fresh locals, constants, one primitive per call, nested blocks.

The lowering and the composite expansions write code through an :class:`Emitter`, so a
statement is always appended to the block being built and every primitive's destination
type comes from :func:`kera_core.loops.prims.result_type`.
"""

from __future__ import annotations

import struct
from contextlib import contextmanager

from kera_core.loops.ir import BITS, Buf, Imm, Load, Loop, Op, Operand, Store, Var
from kera_core.loops.prims import PRIMS, result_type
from kera_core.loops.target import CPU, LoweringTarget


def float_bits(t: str, x: float) -> int:
    if t == "f32":
        return struct.unpack("<I", struct.pack("<f", x))[0]
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def imm(t: str, value) -> Imm:
    """A constant of type ``t`` from a Python number (floats by value, ints wrapped)."""
    if t in ("f32", "f64"):
        return Imm(t, float_bits(t, float(value)))
    if t == "bool":
        return Imm(t, 1 if value else 0)
    return Imm(t, int(value) & ((1 << BITS[t]) - 1))


def type_of(x: Operand) -> str:
    return x.type


class Emitter:
    """Appends statements to the current block; ``block()`` opens a nested one."""

    def __init__(
        self, counter: list[int], origins: dict | None = None, target: LoweringTarget = CPU
    ) -> None:
        self.counter = counter  # shared by a whole program: ids are unique
        self.target = target  # which shape the composites take (loops/target.py)
        self.stmts: list = []
        # the graph node being lowered, as (hash, op): each statement appended is its
        # (origins maps id(statement) → node; listings name the source node per block)
        self.origin: tuple[bytes, str] | None = None
        self.origins = origins if origins is not None else {}

    def new_id(self) -> int:
        self.counter[0] += 1
        return self.counter[0]

    def var(self, t: str, name: str = "") -> Var:
        return Var(self.new_id(), t, name)

    def buf(
        self, elem: str, size: Operand, space: str = "host", role: str = "temp", name: str = ""
    ) -> Buf:
        return Buf(self.new_id(), elem, size, space, role, role != "param", name)

    def emit(self, stmt) -> None:
        if self.origin is not None:
            self.origins[id(stmt)] = self.origin
        self.stmts.append(stmt)

    @contextmanager
    def block(self):
        saved = self.stmts
        self.stmts = []
        try:
            yield self.stmts
        finally:
            self.stmts = saved

    # --- primitives -------------------------------------------------------------------------
    def op(self, name: str, *args: Operand, to: str | None = None, into: Var | None = None) -> Var:
        p = PRIMS[name]
        assert len(args) == p.arity, (name, args)
        t = result_type(name, tuple(a.type for a in args), to)
        dst = into if into is not None else self.var(t)
        assert dst.type == t, (name, dst.type, t)
        self.emit(Op(dst, name, tuple(args)))
        return dst

    def assign(self, dst: Var, src: Operand) -> None:
        """dst = src (a `select` with a constant true condition would be noise: a copy op)."""
        self.emit(Op(dst, "select", (Imm("bool", 1), src, src)))

    def load(self, buf: Buf, index: Operand) -> Var:
        dst = self.var(buf.elem)
        self.emit(Load(dst, buf, index))
        return dst

    def store(self, buf: Buf, index: Operand, value: Operand) -> None:
        self.emit(Store(buf, index, value))

    # --- index arithmetic (i64, folded when constant) ------------------------------------------
    def add_i(self, a: Operand, b: Operand) -> Operand:
        if isinstance(b, Imm) and b.bits == 0:
            return a
        if isinstance(a, Imm) and a.bits == 0:
            return b
        if isinstance(a, Imm) and isinstance(b, Imm):
            return imm("i64", _sval(a) + _sval(b))
        return self.op("add", a, b)

    def mul_i(self, a: Operand, b: Operand) -> Operand:
        if isinstance(a, Imm) and isinstance(b, Imm):
            return imm("i64", _sval(a) * _sval(b))
        if (isinstance(a, Imm) and a.bits == 0) or (isinstance(b, Imm) and b.bits == 0):
            return imm("i64", 0)  # the first axis of a flat index: 0 · d + i is i
        if isinstance(b, Imm) and _sval(b) == 1:
            return a
        if isinstance(a, Imm) and _sval(a) == 1:
            return b
        return self.op("mul", a, b)

    def product(self, xs) -> Operand:
        n: Operand = imm("i64", 1)
        for x in xs:
            n = self.mul_i(n, x)
        return n

    @contextmanager
    def loop(self, lo: Operand, hi: Operand, mark: str = "seq", name: str = "i"):
        """``with e.loop(lo, hi) as i:`` emits a Loop whose body is what the block appends."""
        i = self.var("i64", name)
        with self.block() as body:
            yield i
        self.emit(Loop(i, lo, hi, body, mark))


def _sval(c: Imm) -> int:
    v = c.bits
    if v >> 63:
        v -= 1 << 64
    return v
