"""AVX2 selection of the loop program's vector plans (8 × f32 or 4 × f64 per ymm).

Which `lanes` loops run as vectors, which values vary per lane, which are uniform and how
many vectors a step jams is decided by the shared layer (`kera_core/loops/vectorize.py`,
from :data:`TARGET`); this module only selects instructions for a plan:

* a varying value is one ymm register per jammed copy; a contiguous index is one general
  register per copy (the copy's first lane); uniform statements are selected once per step
  by the scalar selector, and broadcast (`vbroadcastss/sd`) where a varying operation reads
  them — values of the enclosing code once, before the loop;
* every primitive of the plan has an exact vector form: `add sub mul div sqrt fma minimum
  maximum neg abs`, the comparisons and `select` on their masks (each lane is the same IEEE
  operation as the scalar code, so the bits are the scalar bits);
* inner `seq` loops stay loops (uniform bounds), their varying accumulators stay in ymm.
"""

from __future__ import annotations

from iced_x86 import Code

from kera_core.loops import ir
from kera_core.loops.ir import Imm
from kera_core.loops.vectorize import LanesPlan, VectorTarget
from kera_core.native.vcode import RegClass, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86.inst import DEF, USE, USEDEF, ImmOp, MemOp, RegOp, X86Inst

COMPARES = {"eq": 0, "lt": 1, "le": 2, "ne": 4}  # vcmpps predicates (ordered; ne unordered-true)
VECTOR_OPS = frozenset(
    {"add", "sub", "mul", "div", "sqrt", "fma", "minimum", "maximum", "neg", "abs", "select"}
    | set(COMPARES)
    | {"gt", "ge"}
)
# 16 ymm less the three scratch registers the allocator keeps. (Stores around the caches,
# vmovntps, were tried for long streaming loops: 6 % slower than ordinary stores here.)
TARGET = VectorTarget(width_bytes=32, registers=13, ops=VECTOR_OPS)


def _suffix(t: str) -> str:
    return "PS" if t == "f32" else "PD"


def _code(name: str, t: str) -> int:
    return getattr(Code, f"VEX_V{name}{_suffix(t)}_YMM_YMM_YMMM256")


class VectorLoop:
    """Emits the vector steps of one planned loop through the scalar selector `sel`."""

    def __init__(self, sel, p: LanesPlan) -> None:
        self.sel = sel
        self.plan = p
        self.loop = p.loop
        self.t = p.elem
        self.width = p.width
        self.invariants: dict = {}
        self.in_prelude = False
        self.scalar_reads: set[int] = set()
        _scalar_reads(p, self.loop.body, self.scalar_reads)

    def vreg(self) -> VReg:
        self.sel.next_id += 1
        return VReg(self.sel.next_id, RegClass.FLOAT, 32)

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
        scalar = s.get(x)  # into the current block: the prelude, or (body values) the step
        v = self.vreg()
        code = Code.VEX_VBROADCASTSS_YMM_XMM if self.t == "f32" else Code.VEX_VBROADCASTSD_YMM_XMM
        s.emit(X86Inst(code, (RegOp(v, DEF), RegOp(scalar, USE))))
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
        t = self.t
        used = _ops(self.loop.body)
        nan = 0x7FC00000 if t == "f32" else 0x7FF8000000000000
        sign = (1 << 31) if t == "f32" else (1 << 63)
        for bits, ops in ((nan, ("minimum", "maximum")), (sign, ("neg",)), (sign - 1, ("abs",))):
            if used & set(ops):
                self.broadcast(Imm(t, bits))  # the constants of min/max, neg and abs
        self.in_prelude = False

    def step(self, i: VReg, jam: int) -> None:
        """One step: jam × W iterations starting at index register `i`."""
        self.jam = jam
        self.vregs: dict[int, list[VReg]] = {}
        # a contiguous index is held for the step's first lane; copy u is u·W elements on
        self.index: dict[int, VReg] = {self.loop.var.id: i}
        self.uniform: dict[int, VReg] = {}
        self.stmts(self.loop.body)

    def stmts(self, body: list) -> None:
        s = self.sel
        p = self.plan
        t = self.t
        for st in body:
            if isinstance(st, ir.Loop):
                self.inner_loop(st)
            elif isinstance(st, ir.Op):
                kind = p.kind(st.dst)
                if kind == "contiguous":
                    self.index[st.dst.id] = self.index_op(st)
                elif kind == "varying":
                    self.varying_op(st)
                else:
                    s.op(st)
                    self.uniform.pop(st.dst.id, None)
            elif isinstance(st, ir.Load):
                if p.kind(st.dst) == "varying":
                    code = (
                        Code.VEX_VMOVUPS_YMM_YMMM256 if t == "f32" else Code.VEX_VMOVUPD_YMM_YMMM256
                    )
                    outs = []
                    for u in range(self.jam):
                        v = self.vreg()
                        m = self.at(st, u, USE)
                        s.emit(X86Inst(code, (RegOp(v, DEF), m)))
                        outs.append(v)
                    self.define(st.dst, outs)
                elif st.buf.elem == t and st.dst.id not in self.scalar_reads:
                    # read by vector code only: broadcast straight from memory (no scalar
                    # SSE instruction between vector ones)
                    v = self.vreg()
                    code = (
                        Code.VEX_VBROADCASTSS_YMM_M32
                        if t == "f32"
                        else Code.VEX_VBROADCASTSD_YMM_M64
                    )
                    m = s.address(st.buf, st.index)
                    s.emit(
                        X86Inst(code, (RegOp(v, DEF), MemOp(m.base, m.index, m.scale, m.disp, USE)))
                    )
                    self.uniform[st.dst.id] = v
                else:
                    s.load(st)
                    self.uniform.pop(st.dst.id, None)
            elif isinstance(st, ir.Store):
                code = Code.VEX_VMOVUPS_YMMM256_YMM if t == "f32" else Code.VEX_VMOVUPD_YMMM256_YMM
                for u in range(self.jam):
                    m = self.at(st, u, DEF)
                    s.emit(X86Inst(code, (m, RegOp(self.operand(st.value, u), USE))))
            else:  # pragma: no cover - the plan admits only the above
                raise AssertionError(type(st).__name__)

    def varying_op(self, st: ir.Op) -> None:
        old = self.vregs.get(st.dst.id)
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
            self.sel.emit(I.vmov(o, r, 32))

    def at(self, st, u: int, role) -> MemOp:
        """The address of copy u's W elements of a vector load or store."""
        size = 4 if self.t == "f32" else 8
        return MemOp(
            self.sel.buf_reg(st.buf), self.index[st.index.id], size, u * self.width * size, role
        )

    def index_op(self, st: ir.Op) -> VReg:
        s = self.sel
        a, b = st.args
        r = s.vreg(RegClass.INT)
        if st.op == "add" and self.plan.kind(a) != "contiguous":
            a, b = b, a
        s.emit(I.mov(r, self.index[a.id]))
        s.emit((I.add if st.op == "add" else I.sub)(r, s.get(b)))
        return r

    def inner_loop(self, st: ir.Loop) -> None:
        s = self.sel
        i, hi = s.loop_counter(st)
        head, body, done = s.label("ihead"), s.label("ibody"), s.label("idone")
        s.jump(head)
        s.start(head)
        s.emit(I.cmp(i, hi))
        s.branch("ge", done, body)
        s.start(body)
        self.uniform = {}
        s.bind_loop_var(st, i)
        self.stmts(st.body)
        s.emit(I.alu_imm("add", i, 1))
        s.jump(head)
        s.start(done)
        self.uniform = {}

    def op(self, st: ir.Op, u: int, into: VReg | None = None) -> VReg:
        s = self.sel
        t = self.t
        name = st.op
        if name == "select" and isinstance(st.args[0], Imm):  # a copy
            d = self.vreg()
            src = st.args[1] if st.args[0].bits & 1 else st.args[2]
            s.emit(I.vmov(d, self.operand(src, u), 32))
            return d
        args = [self.operand(a, u) for a in st.args]
        d = into if into is not None else self.vreg()
        if name in ("add", "sub", "mul", "div"):
            s.emit(
                X86Inst(
                    _code(name.upper(), t),
                    (RegOp(d, DEF), RegOp(args[0], USE), RegOp(args[1], USE)),
                )
            )
        elif name == "sqrt":
            code = getattr(Code, f"VEX_VSQRT{_suffix(t)}_YMM_YMMM256")
            s.emit(X86Inst(code, (RegOp(d, DEF), RegOp(args[0], USE))))
        elif name == "fma":
            s.emit(I.vmov(d, args[2], 32))
            code = getattr(Code, f"VEX_VFMADD231{_suffix(t)}_YMM_YMM_YMMM256")
            s.emit(X86Inst(code, (RegOp(d, USEDEF), RegOp(args[0], USE), RegOp(args[1], USE))))
        elif name in ("neg", "abs"):
            sign = (1 << 31) if t == "f32" else (1 << 63)
            mask_bits = sign if name == "neg" else sign - 1
            m = self.broadcast(Imm(t, mask_bits))
            code = _code("XOR" if name == "neg" else "AND", t)
            s.emit(X86Inst(code, (RegOp(d, DEF), RegOp(args[0], USE), RegOp(m, USE))))
        elif name in COMPARES or name in ("gt", "ge"):
            a, b = args
            if name in ("gt", "ge"):  # a > b is b < a
                a, b = b, a
            pred = COMPARES[{"gt": "lt", "ge": "le"}.get(name, name)]
            self.cmp(d, a, b, pred)
        elif name == "select":
            c, a, b = args
            code = getattr(Code, f"VEX_VBLENDV{_suffix(t)}_YMM_YMM_YMMM256_YMM")
            s.emit(X86Inst(code, (RegOp(d, DEF), RegOp(b, USE), RegOp(a, USE), RegOp(c, USE))))
        elif name in ("minimum", "maximum"):
            a, b = args
            pick_a = self.vreg()
            self.cmp(pick_a, b, a, 1) if name == "maximum" else self.cmp(pick_a, a, b, 1)
            r = self.blend(pick_a, a, b)
            both = self.vreg()
            code = _code("AND" if name == "maximum" else "OR", t)
            s.emit(X86Inst(code, (RegOp(both, DEF), RegOp(a, USE), RegOp(b, USE))))
            eq = self.vreg()
            self.cmp(eq, a, b, 0)
            r = self.blend(eq, both, r)
            un = self.vreg()
            self.cmp(un, a, b, 3)
            nan = self.broadcast(Imm(t, 0x7FC00000 if t == "f32" else 0x7FF8000000000000))
            s.emit(
                X86Inst(
                    getattr(Code, f"VEX_VBLENDV{_suffix(t)}_YMM_YMM_YMMM256_YMM"),
                    (RegOp(d, DEF), RegOp(r, USE), RegOp(nan, USE), RegOp(un, USE)),
                )
            )
        else:  # pragma: no cover - plan() admits only the above
            raise AssertionError(name)
        return d

    def cmp(self, d: VReg, a: VReg, b: VReg, pred: int) -> None:
        code = getattr(Code, f"VEX_VCMP{_suffix(self.t)}_YMM_YMM_YMMM256_IMM8")
        self.sel.emit(X86Inst(code, (RegOp(d, DEF), RegOp(a, USE), RegOp(b, USE), ImmOp(pred))))

    def blend(self, mask: VReg, x: VReg, y: VReg) -> VReg:
        """x where mask, else y."""
        d = self.vreg()
        code = getattr(Code, f"VEX_VBLENDV{_suffix(self.t)}_YMM_YMM_YMMM256_YMM")
        self.sel.emit(
            X86Inst(code, (RegOp(d, DEF), RegOp(y, USE), RegOp(x, USE), RegOp(mask, USE)))
        )
        return d


def _scalar_reads(p: LanesPlan, stmts: list, out: set[int]) -> None:
    """The ids of the values that scalar code in a planned body reads."""
    for s in stmts:
        if isinstance(s, ir.Op) and p.kind(s.dst) != "varying":
            out.update(a.id for a in s.args if isinstance(a, ir.Var))
        elif isinstance(s, (ir.Load, ir.Store)) and isinstance(s.index, ir.Var):
            out.add(s.index.id)
        elif isinstance(s, ir.Loop):
            out.update(b.id for b in (s.lo, s.hi) if isinstance(b, ir.Var))
            _scalar_reads(p, s.body, out)


def _ops(stmts: list) -> set[str]:
    out: set[str] = set()
    for s in stmts:
        if isinstance(s, ir.Op):
            out.add(s.op)
        elif isinstance(s, ir.Loop):
            out |= _ops(s.body)
    return out
