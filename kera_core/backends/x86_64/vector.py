"""Vector selection of the loop program's `lanes` loops (AVX2: 8 × f32 or 4 × f64 per ymm).

A `lanes` loop says its iterations are independent; this module selects such a loop as a
vector loop of W iterations per step plus the scalar loop for the remainder, when its body
is elementwise arithmetic on one float type:

* statements are `Load`, `Store` and float `Op`s (and `i64` index arithmetic);
* every load and store is at `i + c` for a loop-invariant `c` (unit stride), of that float type;
* every primitive has an exact vector form: `add sub mul div sqrt fma minimum maximum neg abs`,
  the comparisons and `select` on their masks (bit for bit the scalar results: each lane is
  the same IEEE operation);
* no value is carried from one iteration to the next, and none is read after the loop.

Anything else stays scalar (the loop program is still right, only slower).
"""

from __future__ import annotations

from iced_x86 import Code

from kera_core.loops import ir
from kera_core.loops.ir import Imm
from kera_core.native.vcode import RegClass, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86.inst import DEF, USE, USEDEF, ImmOp, MemOp, RegOp, X86Inst

FLOAT_OPS = {"add", "sub", "mul", "div", "sqrt", "fma", "minimum", "maximum", "neg", "abs"}
COMPARES = {"eq": 0, "lt": 1, "le": 2, "ne": 4}  # vcmpps predicates (ordered; ne unordered-true)


def _suffix(t: str) -> str:
    return "PS" if t == "f32" else "PD"


def _code(name: str, t: str) -> int:
    return getattr(Code, f"VEX_V{name}{_suffix(t)}_YMM_YMM_YMMM256")


def plan(loop: ir.Loop, defined_outside: set[int]) -> str | None:
    """The float type a `lanes` loop vectorises over, or None if it stays scalar."""
    if loop.mark != "lanes" or loop.counted:
        return None
    t = None
    index_vars = {loop.var.id}
    body_defs: set[int] = set()
    for s in loop.body:
        if isinstance(s, ir.Op):
            if (
                s.dst.type == "i64"
                and s.op == "add"
                and _is_index(s.args, index_vars, defined_outside)
            ):
                index_vars.add(s.dst.id)
                body_defs.add(s.dst.id)
                continue
            ft = s.dst.type if s.dst.type != "bool" else s.args[0].type
            if ft not in ("f32", "f64") or (t is not None and ft != t):
                return None
            t = ft
            if (
                s.op not in FLOAT_OPS
                and s.op not in COMPARES
                and s.op not in ("gt", "ge", "select")
            ):
                return None
            if s.op == "select" and s.args[0].type != "bool":
                return None
            for a in s.args:
                if isinstance(a, ir.Var) and a.id not in body_defs and a.id not in defined_outside:
                    return None  # read before written here: carried across iterations
                if isinstance(a, ir.Var) and a.id in index_vars:
                    return None
            if s.dst.id in body_defs or s.dst.id in defined_outside:
                return None  # assigned twice, or a value of the enclosing code
            body_defs.add(s.dst.id)
        elif isinstance(s, (ir.Load, ir.Store)):
            if s.buf.elem not in ("f32", "f64") or (t is not None and s.buf.elem != t):
                return None
            t = s.buf.elem
            if not (isinstance(s.index, ir.Var) and s.index.id in index_vars):
                return None
            if isinstance(s, ir.Load):
                if s.dst.id in body_defs or s.dst.id in defined_outside:
                    return None
                body_defs.add(s.dst.id)
            elif (
                isinstance(s.value, ir.Var)
                and s.value.id not in body_defs
                and s.value.id not in defined_outside
            ):
                return None
        else:
            return None
    return t


def _is_index(args, index_vars: set[int], outside: set[int]) -> bool:
    a, b = args

    def inv(x):
        return isinstance(x, Imm) or (isinstance(x, ir.Var) and x.id in outside)

    def idx(x):
        return isinstance(x, ir.Var) and x.id in index_vars

    return (idx(a) and inv(b)) or (inv(a) and idx(b))


class VectorLoop:
    """Emits the vector part of one planned loop through the scalar selector `sel`."""

    def __init__(self, sel, loop: ir.Loop, t: str) -> None:
        self.sel = sel
        self.loop = loop
        self.t = t
        self.width = 8 if t == "f32" else 4
        self.vregs: dict[int, VReg] = {}
        self.body_vars = {st.dst.id for st in loop.body if isinstance(st, (ir.Op, ir.Load))}

    def vreg(self) -> VReg:
        self.sel.next_id += 1
        return VReg(self.sel.next_id, RegClass.FLOAT, 32)

    def broadcast(self, x) -> VReg:
        key = ("imm", x.type, x.bits) if isinstance(x, Imm) else ("var", x.id)
        got = self.invariants.get(key)
        if got is not None:
            return got
        s = self.sel
        scalar = s.get(x)  # into the current block: the prelude, or (constants) the body
        v = self.vreg()
        code = Code.VEX_VBROADCASTSS_YMM_XMM if self.t == "f32" else Code.VEX_VBROADCASTSD_YMM_XMM
        s.emit(X86Inst(code, (RegOp(v, DEF), RegOp(scalar, USE))))
        if self.in_prelude:
            self.invariants[key] = v  # a value made in the body is not reused across steps
        return v

    def operand(self, x) -> VReg:
        if isinstance(x, ir.Var) and x.id in self.vregs:
            return self.vregs[x.id]
        return self.broadcast(x)

    def emit_prelude(self) -> None:
        """Broadcast every loop-invariant operand once, before the vector loop."""
        self.invariants: dict = {}
        self.in_prelude = True
        for s in self.loop.body:
            if isinstance(s, ir.Op) and s.dst.type != "i64":
                for a in s.args:
                    if not (isinstance(a, ir.Var) and (a.id in self.body_vars)):
                        if a.type in ("f32", "f64"):
                            self.broadcast(a)
            elif isinstance(s, ir.Store) and not (
                isinstance(s.value, ir.Var) and s.value.id in self.body_vars
            ):
                self.broadcast(s.value)
        t = self.t
        for bits in (
            0x7FC00000 if t == "f32" else 0x7FF8000000000000,
            (1 << 31) if t == "f32" else (1 << 63),
            0x7FFFFFFF if t == "f32" else (1 << 63) - 1,
        ):
            self.broadcast(Imm(t, bits))  # the constants of min/max, neg and abs
        self.in_prelude = False

    def body(self, i: VReg) -> None:
        """One step: W iterations starting at index register `i`."""
        s = self.sel
        offsets: dict[int, VReg] = {self.loop.var.id: i}
        t = self.t
        for st in self.loop.body:
            if isinstance(st, ir.Op) and st.dst.type == "i64":
                a, b = st.args
                base, inv = (a, b) if isinstance(a, ir.Var) and a.id in offsets else (b, a)
                r = s.vreg(RegClass.INT)
                s.emit(I.mov(r, offsets[base.id]))
                s.emit(I.add(r, s.get(inv)))
                offsets[st.dst.id] = r
            elif isinstance(st, ir.Load):
                v = self.vreg()
                code = Code.VEX_VMOVUPS_YMM_YMMM256 if t == "f32" else Code.VEX_VMOVUPD_YMM_YMMM256
                m = MemOp(s.buf_reg(st.buf), offsets[st.index.id], 4 if t == "f32" else 8, 0, USE)
                s.emit(X86Inst(code, (RegOp(v, DEF), m)))
                self.vregs[st.dst.id] = v
            elif isinstance(st, ir.Store):
                code = Code.VEX_VMOVUPS_YMMM256_YMM if t == "f32" else Code.VEX_VMOVUPD_YMMM256_YMM
                m = MemOp(s.buf_reg(st.buf), offsets[st.index.id], 4 if t == "f32" else 8, 0, DEF)
                s.emit(X86Inst(code, (m, RegOp(self.operand(st.value), USE))))
            else:
                self.vregs[st.dst.id] = self.op(st)

    def op(self, st: ir.Op) -> VReg:
        s = self.sel
        t = self.t
        name = st.op
        args = [self.operand(a) for a in st.args]
        d = self.vreg()
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
