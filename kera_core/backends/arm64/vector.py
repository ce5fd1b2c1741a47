"""NEON selection of the loop program's vector plans (4 × f32 as ``.4s`` or 2 × f64 as ``.2d``
per 16-byte q register).

Which `lanes` loops run as vectors, which values vary per lane, which are uniform and how
many vectors a step jams is decided by the shared layer (`kera_core/loops/vectorize.py`,
from :data:`TARGET`); this module only selects instructions for a plan, as
`kera_core/backends/x86_64/vector.py` does for ymm:

* a varying value is one q register per jammed copy (a comparison's mask too: all ones or
  all zeros per lane);
* a contiguous index is computed by the scalar selector into its own register, holding the
  step's first lane (so scalar code reading it sees lane 0, which is right for anything of
  stride 0); a vector load or store at it is ``ldr``/``str q`` at ``[buf, offset]`` (the
  index's byte offset, one ``lsl`` per index and step) in a one-vector step, and at
  ``#16·u`` from ``add x, buf, index, lsl #log2(size)`` for copy u of a jammed step;
* uniform statements are selected once per step by the scalar selector, and broadcast
  (``dup``) where a varying operation reads them — values of the enclosing code once,
  before the loop;
* every primitive of the plan has an exact vector form, the same IEEE operation per lane as
  the scalar one: ``fadd fsub fmul fdiv fsqrt``, ``fmla`` only for the loop program's
  ``fma`` (never a fused ``mul`` + ``add``), ``fmin``/``fmax`` (IEEE minimum/maximum, never
  the ``nm`` forms), ``fneg``/``fabs``, ``fcmeq``/``fcmge``/``fcmgt`` (``lt``/``le`` with the
  operands swapped, ``ne`` as ``not`` of ``fcmeq``) and ``bsl`` on their masks;
* inner ``seq`` loops stay loops (uniform bounds), their varying accumulators stay in q
  registers.

FPCR is the function's (round to nearest, FZ off, DN on) for vector instructions too, so an
arithmetic NaN is the default NaN in every lane, as in the scalar code.
"""

from __future__ import annotations

from kera_core.loops import ir, vectorize
from kera_core.loops.ir import Imm
from kera_core.loops.vectorize import LanesPlan, VectorTarget
from kera_core.native.arm64 import inst as I
from kera_core.native.arm64.inst import MemOp
from kera_core.native.vcode import RegClass, VReg

COMPARES = ("eq", "ne", "lt", "le", "gt", "ge")
VECTOR_OPS = frozenset(
    {"add", "sub", "mul", "div", "sqrt", "fma", "minimum", "maximum", "neg", "abs", "select"}
    | set(COMPARES)
)
# 32 v-registers less the four scratch registers the allocator keeps (v28-v31)
TARGET = VectorTarget(width_bytes=16, registers=28, ops=VECTOR_OPS)

_TWO = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_TWO |= {"minimum": "fmin", "maximum": "fmax"}
_ONE = {"sqrt": "fsqrt", "neg": "fneg", "abs": "fabs"}
# a op b as one compare instruction: (instruction, operands swapped)
_CMP = {
    "eq": ("fcmeq", False),
    "gt": ("fcmgt", False),
    "ge": ("fcmge", False),
    "lt": ("fcmgt", True),  # a < b is b > a
    "le": ("fcmge", True),  # a <= b is b >= a
}


def plan(sel, loop: ir.Loop) -> LanesPlan | None:
    """The shared layer's plan for `loop`, or None (scalar). A body that would call a host
    helper (a float `rem` among its uniform statements) stays scalar: q values live across
    the vector steps, and AAPCS64 keeps only the low 8 bytes of v8-v15 across a call."""
    if _calls(loop.body):
        return None
    return vectorize.plan(loop, sel.seen_vars(), TARGET)


class VectorLoop:
    """Emits the vector steps of one planned loop through the scalar selector `sel`."""

    def __init__(self, sel, p: LanesPlan) -> None:
        self.sel = sel
        self.plan = p
        self.loop = p.loop
        self.t = p.elem
        self.arr = "4s" if p.elem == "f32" else "2d"
        self.size = 4 if p.elem == "f32" else 8
        self.width = p.width
        self.invariants: dict = {}
        self.uniform: dict[int, VReg] = {}
        self.offsets: dict[int, VReg] = {}  # a contiguous index's byte offset (one-vector steps)
        self.vregs: dict[int, list[VReg]] = {}
        self.in_prelude = False
        self.jam = 1

    def vreg(self) -> VReg:
        self.sel.next_id += 1
        return VReg(self.sel.next_id, RegClass.FLOAT, 16)

    def vop(self, op: str, d: VReg, *srcs: VReg, acc: bool = False) -> None:
        self.sel.emit(I.vop(op, d, *srcs, arr="16b" if op in ("bsl", "not") else self.arr, acc=acc))

    def broadcast(self, x) -> VReg:
        key = ("imm", x.type, x.bits) if isinstance(x, Imm) else ("var", x.id)
        got = self.invariants.get(key)
        if got is not None:
            return got
        if not self.in_prelude and isinstance(x, ir.Var):
            got = self.uniform.get(x.id)
            if got is not None:
                return got
        s = self.sel
        v = self.vreg()
        if isinstance(x, Imm):  # the bits straight from a general register
            bits = x.bits & ((1 << (8 * self.size)) - 1)
            s.emit(I.dup(v, s.int_const(bits), self.arr))
        else:  # the scalar (into the current block: the prelude, or the step)
            s.emit(I.dup(v, s.get(x), self.arr))
        if self.in_prelude:
            self.invariants[key] = v
        elif isinstance(x, ir.Var):
            self.uniform[x.id] = v  # until the value is redefined or the block ends
        return v

    def operand(self, x, u: int) -> VReg:
        if isinstance(x, ir.Var) and x.id in self.vregs:
            return self.vregs[x.id][u]
        return self.broadcast(x)

    def emit_prelude(self) -> None:
        """Broadcast every loop-invariant operand once, before the vector loops."""
        self.in_prelude = True
        for x in self.plan.invariants():
            self.broadcast(x)
        self.in_prelude = False

    def step(self, i: VReg, jam: int) -> None:
        """One step: jam × W iterations starting at index register `i`."""
        s = self.sel
        self.jam = jam
        self.vregs = {}
        self.uniform = {}
        self.offsets = {}
        # lane 0's index, for the scalar code: the counter itself (the body never assigns the
        # loop variable, and the scalar loop after counts on in the same register)
        s.regs.setdefault(self.loop.var.id, i)
        s.copy(s.reg_of(self.loop.var), i)
        self.stmts(self.loop.body)

    def stmts(self, body: list) -> None:
        s = self.sel
        p = self.plan
        for st in body:
            if isinstance(st, ir.Loop):
                self.inner_loop(st)
            elif isinstance(st, ir.Op):
                if p.kind(st.dst) == "varying":
                    self.varying_op(st)
                else:  # uniform, or a contiguous index (lane 0's value)
                    s.op(st)
                    self.uniform.pop(st.dst.id, None)
                    self.offsets.pop(st.dst.id, None)
            elif isinstance(st, ir.Load):
                if p.kind(st.dst) == "varying":
                    outs = []
                    for at in self.addresses(st.buf, st.index):
                        v = self.vreg()
                        s.emit(I.load("ldr", v, at, "q"))
                        outs.append(v)
                    self.define(st.dst, outs)
                else:
                    s.stmts([st])
                    self.uniform.pop(st.dst.id, None)
            elif isinstance(st, ir.Store):
                for u, at in enumerate(self.addresses(st.buf, st.index)):
                    s.emit(I.store("str", self.operand(st.value, u), at, "q"))
            else:  # pragma: no cover - the plan admits only the above
                raise AssertionError(type(st).__name__)

    def addresses(self, buf: ir.Buf, index: ir.Var) -> list[MemOp]:
        """Where each copy's W elements at a contiguous index (the first lane's) are: one
        step of one vector is ``[buf, offset]`` with the index's byte offset (one ``lsl`` per
        index and step, shared by every buffer); copies of a jammed step are ``#16·u`` from
        the first lane's address."""
        s = self.sel
        shift = self.size.bit_length() - 1
        if self.jam == 1:
            off = self.offsets.get(index.id)
            if off is None:
                off = self.offsets[index.id] = s.ireg()
                s.emit(I.bfm("ubfm", off, s.reg_of(index), 64 - shift, 63 - shift))
            return [MemOp(s.buf_reg(buf), off, 0, False)]
        at = s.ireg()
        s.emit(I.add_lsl(at, s.buf_reg(buf), s.reg_of(index), shift))
        return [MemOp(at, None, 16 * u) for u in range(self.jam)]

    def varying_op(self, st: ir.Op) -> None:
        old = self.vregs.get(st.dst.id)
        if old is not None and st.op == "fma" and _same(st.args[2], st.dst):
            # acc = fma(a, b, acc): fmla accumulates into the accumulator's own register
            for u in range(self.jam):
                a, b = (self.operand(x, u) for x in st.args[:2])
                self.vop("fmla", old[u], a, b, acc=True)
            return
        if old is not None and st.op not in ("fma", "select"):
            # an accumulator's update writes its register (each of these instructions reads
            # its sources before it writes the destination)
            for u in range(self.jam):
                self.op(st, u, old[u])
            return
        self.define(st.dst, [self.op(st, u) for u in range(self.jam)])

    def define(self, dst: ir.Var, outs: list[VReg]) -> None:
        """A varying value's registers; a value defined again keeps its registers (the
        accumulator of an inner loop), so the new value is copied in."""
        old = self.vregs.get(dst.id)
        if old is None and dst.id in self.plan.reassigned:
            old = self.vregs[dst.id] = [self.vreg() for _ in outs]
        if old is None:
            self.vregs[dst.id] = outs
            return
        for o, r in zip(old, outs, strict=True):
            self.sel.emit(I.mov(o, r))

    def inner_loop(self, st: ir.Loop) -> None:
        s = self.sel
        i = s.ireg()
        hi = s.ireg()
        s.copy(i, s.get(st.lo))
        s.copy(hi, s.get(st.hi))
        head, body, done = s.label("ihead"), s.label("ibody"), s.label("idone")
        s.jump(head)
        s.start(head)
        s.emit(I.cmp(i, hi))
        s.branch("ge", done, body)
        s.start(body)
        self.uniform, self.offsets = {}, {}
        s.copy(s.reg_of(st.var), i)
        self.stmts(st.body)
        s.emit(I.add_imm(i, i, 1))
        s.jump(head)
        s.start(done)
        self.uniform, self.offsets = {}, {}

    def op(self, st: ir.Op, u: int, into: VReg | None = None) -> VReg:
        name = st.op
        if name == "select" and isinstance(st.args[0], Imm):  # a copy
            d = self.vreg()
            src = st.args[1] if st.args[0].bits & 1 else st.args[2]
            self.sel.emit(I.mov(d, self.operand(src, u)))
            return d
        args = [self.operand(a, u) for a in st.args]
        d = into if into is not None else self.vreg()
        if name in _TWO:
            self.vop(_TWO[name], d, *args)
        elif name in _ONE:
            self.vop(_ONE[name], d, *args)
        elif name == "fma":  # a * b + c, one rounding: c's copy accumulates a * b
            a, b, c = args
            self.sel.emit(I.mov(d, c))
            self.vop("fmla", d, a, b, acc=True)
        elif name == "ne":  # NaN != x: not(eq), true
            self.vop("fcmeq", d, *args)
            self.vop("not", d, d)
        elif name in _CMP:
            code, swap = _CMP[name]
            a, b = args
            self.vop(code, d, *((b, a) if swap else (a, b)))
        elif name == "select":  # bsl: d = mask ? a : b, bit by bit
            c, a, b = args
            self.sel.emit(I.mov(d, c))
            self.vop("bsl", d, a, b, acc=True)
        else:  # pragma: no cover - plan() admits only the above
            raise AssertionError(name)
        return d


def _same(x, v: ir.Var) -> bool:
    return isinstance(x, ir.Var) and x.id == v.id


def _calls(stmts: list) -> bool:
    """Whether selecting `stmts` would call a host helper (a float `rem`: fmod)."""
    for s in stmts:
        if isinstance(s, ir.Op) and s.op == "rem" and s.dst.type in ("f32", "f64"):
            return True
        if isinstance(s, ir.Loop) and _calls(s.body):
            return True
    return False
