"""Vector selection of the loop program's vector plans: AVX2 (8 × f32 or 4 × f64 per ymm,
VEX) or AVX-512 (16 × f32 or 8 × f64 per zmm, EVEX), one selector for both.

Which `lanes` loops run as vectors, which values vary per lane, which are uniform and how
many vectors a step jams is decided by the shared layer (`kera_core/loops/vectorize.py`,
from the level's :class:`Encoding` ``.target``); this module only selects instructions for a
plan:

* a varying value is one vector register per jammed copy; a contiguous index is one general
  register per copy (the copy's first lane); uniform statements are selected once per step
  by the scalar selector, and broadcast (`vbroadcastss/sd`) where a varying operation reads
  them — values of the enclosing code once, before the loop;
* every primitive of the plan has an exact vector form: `add sub mul div sqrt fma minimum
  maximum neg abs`, the comparisons and `select` on their masks (each lane is the same IEEE
  operation as the scalar code, so the bits are the scalar bits);
* inner `seq` loops stay loops (uniform bounds), their varying accumulators stay in vector
  registers.

**Masks.** A varying comparison's value is an ordinary vector (all ones / all zeros per
lane), so the allocator sees FLOAT values only. With VEX, `vcmpps` writes it and `vblendvps`
reads it. AVX-512 compares write an opmask register and has no `vblendvps` for zmm: a
compare writes the fixed k1 (a :class:`PReg` the instructions name, so liveness and the
scheduler see the dependency) and `vpmovm2d/q` turns it into the vector; `select` does
`vpmovd2m k1, mask` then `vblendmps dst{k1}, b, a`. The blends inside `minimum`/`maximum`
use the compare's k1 directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from iced_x86 import Code

from kera_core.loops import ir
from kera_core.loops.ir import Imm
from kera_core.loops.vectorize import LanesPlan, VectorTarget
from kera_core.native.vcode import RegClass, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86 import regs as R
from kera_core.native.x86.inst import DEF, USE, USEDEF, ImmOp, MemOp, RegOp, X86Inst

COMPARES = {"eq": 0, "lt": 1, "le": 2, "ne": 4}  # vcmpps predicates (ordered; ne unordered-true)
UNORDERED = 3
VECTOR_OPS = frozenset(
    {"add", "sub", "mul", "div", "sqrt", "fma", "minimum", "maximum", "neg", "abs", "select"}
    | set(COMPARES)
    | {"gt", "ge"}
)
K = R.KS[1]  # the opmask AVX-512 compares write and blends read


def _suffix(t: str) -> str:
    return "PS" if t == "f32" else "PD"


@cache
def _find(name: str) -> int:
    """The Code `name`, or its EVEX form that also takes embedded rounding / SAE (not used:
    MXCSR's round-to-nearest applies)."""
    for n in (name, name + "_ER", name + "_SAE"):
        c = getattr(Code, n, None)
        if c is not None:
            return c
    raise AttributeError(name)


@dataclass(frozen=True)
class Encoding:
    """One vector width's instruction forms: ymm with VEX, or zmm with EVEX."""

    bytes: int  # 32 or 64
    target: VectorTarget

    @property
    def evex(self) -> bool:
        return self.bytes == 64

    def code(self, t: str, vex: str, evex: str) -> int:
        """The VEX or EVEX Code `V<name>` spelled with `{s}` for PS/PD, `{B}` for the
        element bits."""
        name = evex if self.evex else vex
        return _find(name.format(s=_suffix(t), B=32 if t == "f32" else 64))

    def binary(self, name: str, t: str) -> int:
        """`v<name>ps/pd dst, a, b` (ADD SUB MUL DIV AND OR XOR, FMADD231)."""
        return self.code(t, f"VEX_V{name}{{s}}_YMM_YMM_YMMM256", f"EVEX_V{name}{{s}}_{ZMM_RRM}")

    def sqrt(self, t: str) -> int:
        return self.code(t, "VEX_VSQRT{s}_YMM_YMMM256", "EVEX_VSQRT{s}_ZMM_K1Z_ZMMM512B{B}")

    def load(self, t: str) -> int:
        return self.code(t, "VEX_VMOVU{s}_YMM_YMMM256", "EVEX_VMOVU{s}_ZMM_K1Z_ZMMM512")

    def store(self, t: str) -> int:
        return self.code(t, "VEX_VMOVU{s}_YMMM256_YMM", "EVEX_VMOVU{s}_ZMMM512_K1Z_ZMM")

    def broadcast(self, t: str, memory: bool) -> int:
        one = "S" + _suffix(t)[1]  # SS or SD
        vex = f"VEX_VBROADCAST{one}_YMM_" + ("M{B}" if memory else "XMM")
        return self.code(t, vex, f"EVEX_VBROADCAST{one}_ZMM_K1Z_XMMM{{B}}")

    def compare(self, t: str) -> int:
        """`vcmpps` into a vector (VEX) or an opmask register (EVEX)."""
        return self.code(
            t, "VEX_VCMP{s}_YMM_YMM_YMMM256_IMM8", "EVEX_VCMP{s}_KR_K1_ZMM_ZMMM512B{B}_IMM8"
        )

    def blend(self, t: str) -> int:
        """`vblendvps dst, y, x, mask` (VEX) or `vblendmps dst{k}, y, x` (EVEX)."""
        return self.code(t, "VEX_VBLENDV{s}_YMM_YMM_YMMM256_YMM", "EVEX_VBLENDM{s}_" + ZMM_RRM)


ZMM_RRM = "ZMM_K1Z_ZMM_ZMMM512B{B}"  # zmm, zmm, zmm/m512/broadcast: three-operand EVEX forms

# 16 vector registers less the three scratch registers the allocator keeps (the scalar code
# is SSE/VEX and cannot name xmm16–31). (Stores around the caches, vmovntps, were tried for
# long streaming loops: 6 % slower than ordinary stores here.)
YMM = Encoding(32, VectorTarget(width_bytes=32, registers=13, ops=VECTOR_OPS))
ZMM = Encoding(64, VectorTarget(width_bytes=64, registers=13, ops=VECTOR_OPS))


class VectorLoop:
    """Emits the vector steps of one planned loop through the scalar selector `sel`, in the
    instruction forms of `enc` (ymm/VEX or zmm/EVEX)."""

    def __init__(self, sel, p: LanesPlan, enc: Encoding) -> None:
        self.sel = sel
        self.plan = p
        self.enc = enc
        self.loop = p.loop
        self.t = p.elem
        self.width = p.width
        self.invariants: dict = {}
        self.in_prelude = False
        self.scalar_reads: set[int] = set()
        _scalar_reads(p, self.loop.body, self.scalar_reads)

    def vreg(self) -> VReg:
        self.sel.next_id += 1
        return VReg(self.sel.next_id, RegClass.FLOAT, self.enc.bytes)

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
        s.emit(X86Inst(self.enc.broadcast(self.t, False), (RegOp(v, DEF), RegOp(scalar, USE))))
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
                    code = self.enc.load(t)
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
                    code = self.enc.broadcast(t, True)
                    m = s.address(st.buf, st.index)
                    s.emit(
                        X86Inst(code, (RegOp(v, DEF), MemOp(m.base, m.index, m.scale, m.disp, USE)))
                    )
                    self.uniform[st.dst.id] = v
                else:
                    s.load(st)
                    self.uniform.pop(st.dst.id, None)
            elif isinstance(st, ir.Store):
                code = self.enc.store(t)
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
            self.sel.emit(I.vmov(o, r, self.enc.bytes))

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
        enc = self.enc
        name = st.op
        if name == "select" and isinstance(st.args[0], Imm):  # a copy
            d = self.vreg()
            src = st.args[1] if st.args[0].bits & 1 else st.args[2]
            s.emit(I.vmov(d, self.operand(src, u), enc.bytes))
            return d
        args = [self.operand(a, u) for a in st.args]
        d = into if into is not None else self.vreg()
        if name in ("add", "sub", "mul", "div"):
            self.binary(name.upper(), d, args[0], args[1])
        elif name == "sqrt":
            s.emit(X86Inst(enc.sqrt(t), (RegOp(d, DEF), RegOp(args[0], USE))))
        elif name == "fma":
            s.emit(I.vmov(d, args[2], enc.bytes))
            s.emit(
                X86Inst(
                    enc.binary("FMADD231", t),
                    (RegOp(d, USEDEF), RegOp(args[0], USE), RegOp(args[1], USE)),
                )
            )
        elif name in ("neg", "abs"):
            sign = (1 << 31) if t == "f32" else (1 << 63)
            m = self.broadcast(Imm(t, sign if name == "neg" else sign - 1))
            self.binary("XOR" if name == "neg" else "AND", d, args[0], m)
        elif name in COMPARES or name in ("gt", "ge"):
            a, b = args
            if name in ("gt", "ge"):  # a > b is b < a
                a, b = b, a
            pred = COMPARES[{"gt": "lt", "ge": "le"}.get(name, name)]
            self.mask_value(d, a, b, pred)
        elif name == "select":
            c, a, b = args
            self.blend_on_mask(d, c, a, b)
        elif name in ("minimum", "maximum"):
            a, b = args
            # a where it is the larger (smaller), else b; equal operands (±0) by the bits'
            # and (or); a NaN operand gives the canonical NaN
            r = self.vreg()
            if name == "maximum":
                self.pick(r, (b, a, COMPARES["lt"]), a, b)
            else:
                self.pick(r, (a, b, COMPARES["lt"]), a, b)
            both = self.vreg()
            self.binary("AND" if name == "maximum" else "OR", both, a, b)
            r2 = self.vreg()
            self.pick(r2, (a, b, COMPARES["eq"]), both, r)
            nan = self.broadcast(Imm(t, 0x7FC00000 if t == "f32" else 0x7FF8000000000000))
            self.pick(d, (a, b, UNORDERED), nan, r2)
        else:  # pragma: no cover - plan() admits only the above
            raise AssertionError(name)
        return d

    def binary(self, name: str, d: VReg, a: VReg, b: VReg) -> None:
        code = self.enc.binary(name, self.t)
        self.sel.emit(X86Inst(code, (RegOp(d, DEF), RegOp(a, USE), RegOp(b, USE))))

    def compare(self, dst, a: VReg, b: VReg, pred: int) -> None:
        """`dst` = a <pred> b: a vector mask (VEX) or the opmask k1 (EVEX)."""
        self.sel.emit(
            X86Inst(
                self.enc.compare(self.t),
                (RegOp(dst, DEF), RegOp(a, USE), RegOp(b, USE), ImmOp(pred)),
            )
        )

    def mask_value(self, d: VReg, a: VReg, b: VReg, pred: int) -> None:
        """A comparison as a vector value: all ones where a <pred> b, else zeros."""
        if not self.enc.evex:
            self.compare(d, a, b, pred)
            return
        self.compare(K, a, b, pred)
        code = Code.EVEX_VPMOVM2D_ZMM_KR if self.t == "f32" else Code.EVEX_VPMOVM2Q_ZMM_KR
        self.sel.emit(X86Inst(code, (RegOp(d, DEF), RegOp(K, USE))))

    def blend_on_mask(self, d: VReg, mask: VReg, x: VReg, y: VReg) -> None:
        """d = x where the vector mask is set, else y."""
        if not self.enc.evex:
            code = self.enc.blend(self.t)
            self.sel.emit(
                X86Inst(code, (RegOp(d, DEF), RegOp(y, USE), RegOp(x, USE), RegOp(mask, USE)))
            )
            return
        code = Code.EVEX_VPMOVD2M_KR_ZMM if self.t == "f32" else Code.EVEX_VPMOVQ2M_KR_ZMM
        self.sel.emit(X86Inst(code, (RegOp(K, DEF), RegOp(mask, USE))))
        self.blend_k(d, x, y)

    def blend_k(self, d: VReg, x: VReg, y: VReg) -> None:
        """d = x where k1, else y (vblendmps takes unselected elements from its first source:
        d is a pure definition)."""
        code = self.enc.blend(self.t)
        self.sel.emit(X86Inst(code, (RegOp(d, DEF), RegOp(y, USE), RegOp(x, USE)), mask=K))

    def pick(self, d: VReg, cond: tuple[VReg, VReg, int], x: VReg, y: VReg) -> None:
        """d = x where cond (a, b, predicate) holds, else y."""
        a, b, pred = cond
        if self.enc.evex:
            self.compare(K, a, b, pred)
            self.blend_k(d, x, y)
        else:
            m = self.vreg()
            self.compare(m, a, b, pred)
            self.blend_on_mask(d, m, x, y)


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
