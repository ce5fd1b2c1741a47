"""x86-64 instruction selection: one loop-program function → one vcode function.

Thin by design: every decision about bits and memory was made by the loop program
(kera_core/loops); this module only spells each primitive and statement in x86-64
instructions over virtual registers, and the shared machine layer (kera_core/native)
schedules, allocates registers, lays out the frame and encodes.

**Calling convention of a compiled function** (System V AMD64):
``int64 f(uint64 *io, uint64 *ctx)``. ``io`` holds one 8-byte cell per argument (the
dimension sizes, then every flattened parameter: integers sign- or zero-extended to 64
bits, floats as their bits, buffers as pointers), followed by one cell per result, which
``f`` writes. ``ctx`` is the run's context (:data:`CTX_STEPS` the steps left, then the
allocator and free callbacks and the C helpers' addresses). ``f`` returns 0, or the number
of the checked error (1 = R0001 …); a callee's error is passed straight up.

**Values.** Integers and ``bool`` live in 64-bit registers in canonical form (sign-extended
for signed types, zero-extended for unsigned, 0/1 for bool), re-normalised after every
operation that can leave the type's range; ``f32``/``f64`` live in xmm registers (scalar
SSE2). MXCSR is set to round-to-nearest, all exceptions masked, FTZ and DAZ off on entry and
restored on exit. NaNs are canonicalised where bits become observable (results written to
``io``, ``bitcast`` of a float), as docs/semantics.md §3 allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from iced_x86 import Code

from kera_core.backends.x86_64 import vector
from kera_core.loops import ir, vectorize
from kera_core.loops.ir import BITS, Imm, is_float, is_signed
from kera_core.loops.run_abi import ERROR_NUMBERS, print_sites
from kera_core.native.vcode import Block, PReg, RegClass, VCodeFunction, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86 import regs as R
from kera_core.native.x86.inst import DEF, USE, USEDEF, ImmOp, MemOp, RegOp, X86Inst

# ctx cells
CTX_STEPS = 0
CTX_ALLOC = 1
CTX_FREE = 2
CTX_FMOD = 3
CTX_FMODF = 4
CTX_FMA = 5
CTX_FMAF = 6
CTX_MEMCPY = 7
CTX_FUNCS = 8  # a table of every function's entry address, in program order
CTX_PRINT = 9  # print(site, value, offset, shape*): the runtime formats and writes
CTX_CELLS = 10


MXCSR_DEFAULT = 0x1F80  # round to nearest, all exceptions masked, FTZ = DAZ = 0

CALLER_SAVED = (
    R.RAX,
    R.RCX,
    R.RDX,
    R.RSI,
    R.RDI,
    R.R8,
    R.R9,
    R.R10,
    R.R11,
    *R.XMMS[:16],
)


# A buffer element into a register in canonical form (sign/zero-extended, or an xmm).
LOAD = {
    "f64": Code.MOVSD_XMM_XMMM64,
    "f32": Code.MOVSS_XMM_XMMM32,
    "i64": Code.MOV_R64_RM64,
    "u64": Code.MOV_R64_RM64,
    "i32": Code.MOVSXD_R64_RM32,
    "u32": Code.MOV_R32_RM32,
    "i16": Code.MOVSX_R64_RM16,
    "u16": Code.MOVZX_R64_RM16,
    "i8": Code.MOVSX_R64_RM8,
    "u8": Code.MOVZX_R64_RM8,
    "bool": Code.MOVZX_R64_RM8,
}

# A register's low bytes into a buffer element.
STORE = {
    "f64": Code.MOVSD_XMMM64_XMM,
    "f32": Code.MOVSS_XMMM32_XMM,
    "i64": Code.MOV_RM64_R64,
    "u64": Code.MOV_RM64_R64,
    "i32": Code.MOV_RM32_R32,
    "u32": Code.MOV_RM32_R32,
    "i16": Code.MOV_RM16_R16,
    "u16": Code.MOV_RM16_R16,
    "i8": Code.MOV_RM8_R8,
    "u8": Code.MOV_RM8_R8,
    "bool": Code.MOV_RM8_R8,
}


class NotSelected(Exception):
    """The loop program uses something this backend does not select (a compile-time gap)."""


@dataclass(frozen=True)
class Isa:
    """What the selector may use beyond SSE2."""

    name: str = "sse2"
    fma: bool = False  # vfmadd (else fma is a call to the C library's correctly rounded fma)
    sse41: bool = False  # roundsd (else round-half-even by the 2^52 trick)
    vectors: bool = False  # `lanes` loops as vector loops (kera_core/backends/x86_64/vector.py)
    zmm: bool = False  # the vectors are AVX-512 zmm (EVEX), not AVX2 ymm (VEX)

    @property
    def vector(self) -> vector.Encoding:
        return vector.ZMM if self.zmm else vector.YMM


def _elem_bytes(t: str) -> int:
    return 1 if t == "bool" else BITS[t] // 8


class Selector:
    def __init__(self, fn: ir.LFunction, program: ir.Program, isa: Isa):
        self.fn = fn
        self.program = program
        self.isa = isa
        self.order = list(program.functions)  # a callee's index in the ctx function table
        self.sites = {id(st): k for k, st in print_sites(program).items()}
        self.next_id = 0
        self.regs: dict[int, VReg] = {}
        self.blocks: list[Block] = []
        self.label_n = 0
        self.cur: list[X86Inst] = []
        self.cur_label = "entry"
        self.max_cells = 0
        self.origin: tuple[bytes, str] | None = None  # the graph node being selected
        self.block_origin: dict[str, tuple[bytes, str] | None] = {}

    # --- registers and blocks ---------------------------------------------------------------
    def vreg(self, cls: RegClass) -> VReg:
        self.next_id += 1
        return VReg(self.next_id, cls, 8)

    def reg_of(self, v: ir.Var) -> VReg:
        r = self.regs.get(v.id)
        if r is None:
            r = self.regs[v.id] = self.vreg(RegClass.FLOAT if is_float(v.type) else RegClass.INT)
        return r

    def label(self, hint: str) -> str:
        self.label_n += 1
        return f"{hint}{self.label_n}"

    def emit(self, x: X86Inst) -> None:
        self.cur.append(x)

    def end_block(self, term: X86Inst, succs: tuple[str, ...]) -> None:
        self.cur.append(term)
        self.blocks.append(Block(self.cur_label, self.cur, succs))
        self.cur = []

    def start(self, label: str) -> None:
        self.cur_label = label
        self.block_origin[label] = self.origin

    def jump(self, target: str) -> None:
        self.end_block(I.jmp(target), (target,))

    def branch(self, cc: str, taken: str, other: str) -> None:
        self.end_block(I.branch(cc, taken, other), (taken, other))

    # --- operands -------------------------------------------------------------------------------
    def get(self, x) -> VReg:
        """A register holding operand x (constants are materialised)."""
        if isinstance(x, ir.Var):
            return self.reg_of(x)
        assert isinstance(x, Imm)
        if is_float(x.type):
            g = self.vreg(RegClass.INT)
            self.emit(I.mov_imm(g, x.bits))
            f = self.vreg(RegClass.FLOAT)
            self.emit(I.movq_to_xmm(f, g))
            return f
        g = self.vreg(RegClass.INT)
        self.emit(I.mov_imm(g, _canonical_int(x.type, x.bits)))
        return g

    def int_const(self, v: int) -> VReg:
        g = self.vreg(RegClass.INT)
        self.emit(I.mov_imm(g, v))
        return g

    def float_const(self, t: str, bits: int) -> VReg:
        return self.get(Imm(t, bits))

    def copy(self, dst: VReg, src: VReg) -> None:
        if dst != src:
            self.emit(I.mov(dst, src))

    def normalize(self, r: VReg, t: str) -> None:
        """Bring a 64-bit register back to the canonical form of integer type t."""
        if t in ("i64", "u64"):
            return
        code = {
            "i8": Code.MOVSX_R64_RM8,
            "i16": Code.MOVSX_R64_RM16,
            "i32": Code.MOVSXD_R64_RM32,
            "u8": Code.MOVZX_R64_RM8,
            "bool": Code.MOVZX_R64_RM8,
            "u16": Code.MOVZX_R64_RM16,
            "u32": Code.MOV_R32_RM32,
        }[t]
        self.emit(X86Inst(code, (RegOp(r, DEF), RegOp(r, USE))))

    # --- the function ----------------------------------------------------------------------------
    def select(self) -> VCodeFunction:
        fn = self.fn
        io = self.vreg(RegClass.INT)
        self.ctx = self.vreg(RegClass.INT)
        self.ret = self.vreg(RegClass.INT)
        self.emit(I.mov(io, R.RDI))
        self.emit(I.mov(self.ctx, R.RSI))
        self.mxcsr_save()
        cell = 0
        for d in fn.dims:
            self.emit(I.load(self.reg_of(d), I.mem(io, 8 * cell)))
            cell += 1
        for group in fn.params:
            for x in group:
                g = self.vreg(RegClass.INT) if isinstance(x, ir.Buf) else None
                if isinstance(x, ir.Buf):
                    self.emit(I.load(g, I.mem(io, 8 * cell)))
                    self.regs[("buf", x.id)] = g  # type: ignore[index]
                elif is_float(x.type):
                    t = self.vreg(RegClass.INT)
                    self.emit(I.load(t, I.mem(io, 8 * cell)))
                    self.emit(I.movq_to_xmm(self.reg_of(x), t))
                else:
                    self.emit(I.load(self.reg_of(x), I.mem(io, 8 * cell)))
                cell += 1
        self.exit_label = "exit"
        self.error_labels: dict[int, str] = {}
        self.stmts(fn.body)
        for group in fn.results:
            for x in group:
                if isinstance(x, ir.Buf):
                    self.emit(I.store(I.mem(io, 8 * cell), self.buf_reg(x)))
                elif is_float(x.type):
                    c = self.canon(self.reg_of(x), x.type)
                    t = self.vreg(RegClass.INT)
                    self.emit(I.movq_from_xmm(t, c))
                    self.emit(I.store(I.mem(io, 8 * cell), t))
                else:
                    self.emit(I.store(I.mem(io, 8 * cell), self.reg_of(x)))
                cell += 1
        self.emit(I.mov_imm(self.ret, 0))
        self.jump(self.exit_label)
        for code, lab in sorted(self.error_labels.items()):
            self.start(lab)
            self.emit(I.mov_imm(self.ret, code))
            self.jump(self.exit_label)
        self.start(self.exit_label)
        self.mxcsr_restore()
        self.emit(I.mov(R.RAX, self.ret))
        self.end_block(I.ret(R.RAX), ())
        return VCodeFunction(fn.name, self.blocks)

    # The outgoing area at [rsp, rsp + outgoing_bytes): MXCSR's two 4-byte cells first, then
    # the io cells of calls this function makes.
    def mxcsr_save(self) -> None:
        self.emit(X86Inst(Code.STMXCSR_M32, (self._mx(0, DEF),), side_effect=True))
        t = self.int_const(MXCSR_DEFAULT)
        self.emit(X86Inst(Code.MOV_RM32_R32, (self._mx(1, DEF), RegOp(t, USE))))
        self.emit(X86Inst(Code.LDMXCSR_M32, (self._mx(1, USE),), side_effect=True))

    def mxcsr_restore(self) -> None:
        self.emit(X86Inst(Code.LDMXCSR_M32, (self._mx(0, USE),), side_effect=True))

    def _mx(self, k: int, role) -> MemOp:
        return MemOp(R.RSP, None, 1, 4 * k, role)

    @property
    def outgoing_bytes(self) -> int:
        return CALL_CELLS_AT + 8 * self.max_cells

    def error(self, code: str) -> str:
        n = ERROR_NUMBERS[code]
        lab = self.error_labels.get(n)
        if lab is None:
            lab = self.error_labels[n] = f"error{n}"
        return lab

    # --- statements ----------------------------------------------------------------------------
    def stmts(self, stmts: list) -> None:
        origins = self.program.origins
        for s in stmts:
            o = origins.get(id(s))
            if o is not None and o != self.origin:
                self.origin = o
                if not self.cur:  # a block's first statement names its node
                    self.block_origin[self.cur_label] = o
            t = type(s)
            if t is ir.Op:
                self.op(s)
            elif t is ir.Load:
                self.load(s)
            elif t is ir.Store:
                self.store(s)
            elif t is ir.Loop:
                self.loop(s)
            elif t is ir.While:
                self.while_(s)
            elif t is ir.If:
                self.if_(s)
            elif t is ir.Check:
                ok = self.get(s.ok)
                self.emit(X86Inst(Code.TEST_RM64_R64, (RegOp(ok, USE), RegOp(ok, USE)), flags="w"))
                cont = self.label("ok")
                self.branch("e", self.error(s.code), cont)
                self.start(cont)
            elif t is ir.Alloc:
                self.alloc(s.buf)
            elif t is ir.Free:
                self.c_call(CTX_FREE, [self.buf_reg(s.buf)], [], None)
            elif t is ir.Copy:
                self.copy_stmt(s)
            elif t is ir.Exchange:  # the two buffers' addresses trade registers
                a, b, tmp = self.buf_reg(s.a), self.buf_reg(s.b), self.vreg(RegClass.INT)
                self.copy(tmp, a)
                self.copy(a, b)
                self.copy(b, tmp)
            elif t is ir.Call:
                self.call(s)
            elif t is ir.Print:
                self.print_stmt(s)
            else:
                raise NotSelected(f"x86_64 does not select {type(s).__name__}")

    def buf_reg(self, b: ir.Buf) -> VReg:
        key = ("buf", b.id)
        r = self.regs.get(key)  # type: ignore[call-overload]
        if r is None:
            r = self.regs[key] = self.vreg(RegClass.INT)  # type: ignore[index]
        return r

    def address(self, b: ir.Buf, index) -> MemOp:
        size = _elem_bytes(b.elem)
        base = self.buf_reg(b)
        if isinstance(index, Imm):
            disp = _canonical_int("i64", index.bits) * size
            if -(1 << 31) <= disp < (1 << 31):
                return I.mem(base, disp)
        return I.mem(base, 0, self.get(index), size)

    def load(self, s: ir.Load) -> None:
        m = self.address(s.buf, s.index)
        d = self.reg_of(s.dst)
        t = s.buf.elem
        code = LOAD[t]
        self.emit(X86Inst(code, (RegOp(d, DEF), _with_role(m, USE))))

    def store(self, s: ir.Store) -> None:
        m = self.address(s.buf, s.index)
        v = self.get(s.value)
        t = s.buf.elem
        code = STORE[t]
        self.emit(X86Inst(code, (_with_role(m, DEF), RegOp(v, USE))))

    def tick(self) -> None:
        self.emit(
            X86Inst(
                Code.DEC_RM64,
                (MemOp(self.ctx, None, 1, 8 * CTX_STEPS, USEDEF),),
                flags="w",
                side_effect=True,
            )
        )
        cont = self.label("go")
        self.branch("s", self.error("R0007"), cont)
        self.start(cont)

    def loop_counter(self, s: ir.Loop) -> tuple[VReg, VReg]:
        """A loop's counter (a fresh register, from `lo`) and its bound: the bound's own
        register when the body does not assign it (it is read once, at entry, so a copy would
        only hold a second register through the loop)."""
        i = self.vreg(RegClass.INT)
        self.copy(i, self.get(s.lo))
        if isinstance(s.hi, ir.Var) and s.hi.id not in ir.assigned(s.body):
            return i, self.get(s.hi)
        hi = self.vreg(RegClass.INT)
        self.copy(hi, self.get(s.hi))
        return i, hi

    def bind_loop_var(self, s: ir.Loop, i: VReg) -> None:
        """The body reads the loop variable from the counter itself (the loop program never
        assigns a loop variable in its body; if one did, it would get a copy)."""
        if s.var.id in ir.assigned(s.body):
            self.copy(self.reg_of(s.var), i)
        else:
            self.regs[s.var.id] = i

    def loop(self, s: ir.Loop) -> None:
        i, hi = self.loop_counter(s)
        p = None
        if self.isa.vectors:
            p = vectorize.plan(s, self.seen_vars(), self.isa.vector.target)
        if p is not None:
            self.vector_part(s, p, i, hi)
        head, body, done = self.label("head"), self.label("body"), self.label("done")
        self.jump(head)
        self.start(head)
        self.emit(I.cmp(i, hi))
        self.branch("ge", done, body)
        self.start(body)
        if s.counted:
            self.tick()
        self.bind_loop_var(s, i)
        self.stmts(s.body)
        self.emit(I.alu_imm("add", i, 1))
        self.jump(head)
        self.start(done)

    def seen_vars(self) -> set[int]:
        """Every loop-program Var selected so far (defined before the current point)."""
        return {k for k in self.regs if isinstance(k, int)}

    def vector_part(self, s: ir.Loop, p: vectorize.LanesPlan, i: VReg, hi: VReg) -> None:
        """The loop's first iterations as vector steps — jam × W lanes a step, then W — and
        `i` ends where the scalar loop takes over for the rest."""
        vec = vector.VectorLoop(self, p, self.isa.vector)
        vec.emit_prelude()
        for jam in (p.jam, 1) if p.jam > 1 else (1,):
            step = p.width * jam
            end = self.vreg(RegClass.INT)
            n = self.vreg(RegClass.INT)
            zero = self.int_const(0)
            self.copy(n, hi)
            self.emit(I.sub(n, i))
            self.emit(I.cmp(n, zero))
            self.emit(X86Inst(Code.CMOVL_R64_RM64, (RegOp(n, USEDEF), RegOp(zero, USE)), flags="r"))
            self.emit(I.alu_imm("and", n, -step))
            self.copy(end, i)
            self.emit(I.add(end, n))
            head, body, done = self.label("vhead"), self.label("vbody"), self.label("vdone")
            self.jump(head)
            self.start(head)
            self.emit(I.cmp(i, end))
            self.branch("ge", done, body)
            self.start(body)
            vec.step(i, jam)
            self.emit(I.alu_imm("add", i, step))
            self.jump(head)
            self.start(done)
        # the scalar code after is SSE: clear the upper halves (no AVX–SSE transition cost;
        # vzeroupper clears bits 128–511 of zmm0–15 too)
        self.emit(X86Inst(Code.VEX_VZEROUPPER, (), side_effect=True))

    def while_(self, s: ir.While) -> None:
        head, body, done = self.label("whead"), self.label("wbody"), self.label("wdone")
        self.jump(head)
        self.start(head)
        self.stmts(s.cond)
        t = self.get(s.test)
        self.emit(X86Inst(Code.TEST_RM64_R64, (RegOp(t, USE), RegOp(t, USE)), flags="w"))
        self.branch("e", done, body)
        self.start(body)
        self.tick()
        self.stmts(s.body)
        self.jump(head)
        self.start(done)

    def if_(self, s: ir.If) -> None:
        c = self.get(s.cond)
        then, other, join = self.label("then"), self.label("else"), self.label("join")
        self.emit(X86Inst(Code.TEST_RM64_R64, (RegOp(c, USE), RegOp(c, USE)), flags="w"))
        self.branch("ne", then, other)
        self.start(then)
        self.stmts(s.then)
        self.jump(join)
        self.start(other)
        self.stmts(s.orelse)
        self.jump(join)
        self.start(join)

    # --- calls ------------------------------------------------------------------------------------
    def c_call(self, ctx_cell: int, int_args: list, float_args: list, result) -> None:
        """Call a C function whose address is in ctx[ctx_cell] (System V)."""
        target = self.vreg(RegClass.INT)
        self.emit(I.load(target, I.mem(self.ctx, 8 * ctx_cell)))
        self.native_call(target, int_args, float_args, result)

    def native_call(self, target: VReg, int_args: list, float_args: list, result) -> None:
        iregs = (R.RDI, R.RSI, R.RDX, R.RCX, R.R8, R.R9)
        used = []
        for k, a in enumerate(int_args):
            self.emit(I.mov(iregs[k], a))
            used.append(iregs[k])
        for k, a in enumerate(float_args):
            self.emit(I.mov(R.XMMS[k], a))
            used.append(R.XMMS[k])
        res = ()
        if result is not None:
            res = (R.RAX,) if result.cls is RegClass.INT else (R.XMM0,)
        self.emit(I.call(target, args=used, results=res, clobbers=CALLER_SAVED))
        if result is not None:
            self.emit(I.mov(result, res[0]))

    def alloc(self, b: ir.Buf) -> None:
        n = self.get(b.size)
        size = self.vreg(RegClass.INT)
        self.copy(size, n)
        shift = {1: 0, 2: 1, 4: 2, 8: 3}[_elem_bytes(b.elem)]
        if shift:
            self.emit(X86Inst(Code.SHL_RM64_IMM8, (RegOp(size, USEDEF), ImmOp(shift)), flags="w"))
        p = self.buf_reg(b)
        self.c_call(CTX_ALLOC, [size], [], p)
        self.emit(X86Inst(Code.TEST_RM64_R64, (RegOp(p, USE), RegOp(p, USE)), flags="w"))
        cont = self.label("mem")
        self.branch("e", self.error("R0009"), cont)
        self.start(cont)

    def copy_stmt(self, s: ir.Copy) -> None:
        size = _elem_bytes(s.dst.elem)
        dst = self.vreg(RegClass.INT)
        src = self.vreg(RegClass.INT)
        n = self.vreg(RegClass.INT)
        self.copy(dst, self.get(s.dst_at))
        self.copy(src, self.get(s.src_at))
        self.copy(n, self.get(s.count))
        for r in (dst, src, n):
            if size > 1:
                self.emit(
                    X86Inst(
                        Code.IMUL_R64_RM64_IMM32,
                        (RegOp(r, DEF), RegOp(r, USE), ImmOp(size)),
                        flags="w",
                    )
                )
        self.emit(I.add(dst, self.buf_reg(s.dst)))
        self.emit(I.add(src, self.buf_reg(s.src)))
        self.c_call(CTX_MEMCPY, [dst, src, n], [], None)

    def print_stmt(self, s: ir.Print) -> None:
        site = self.sites[id(s)]
        value = self.int_const(0)
        offset = self.int_const(0)
        if isinstance(s.value, ir.Buf):
            value = self.buf_reg(s.value)
            if s.offset is not None:
                offset = self.get(s.offset)
        elif s.value is not None:
            v = self.get(s.value)
            if v.cls is RegClass.FLOAT:
                bits = self.vreg(RegClass.INT)
                self.emit(I.movq_from_xmm(bits, self.canon(v, s.value.type)))
                value = bits
            else:
                value = v
        self.max_cells = max(self.max_cells, len(s.shape))
        for k, d in enumerate(s.shape):
            self.emit(I.store(I.mem(R.RSP, CALL_CELLS_AT + 8 * k), self.get(d)))
        shape = self.vreg(RegClass.INT)
        self.emit(I.mov(shape, R.RSP))
        self.emit(I.alu_imm("add", shape, CALL_CELLS_AT))
        self.c_call(CTX_PRINT, [self.int_const(site), value, offset, shape], [], None)

    def call(self, s: ir.Call) -> None:
        callee = self.program.functions[s.fn]
        cells = len(s.args) + len(s.results)
        self.max_cells = max(self.max_cells, cells)
        for k, a in enumerate(s.args):
            if isinstance(a, ir.Buf):
                v = self.buf_reg(a)
            elif is_float(a.type):
                v = self.vreg(RegClass.INT)
                self.emit(I.movq_from_xmm(v, self.get(a)))
            else:
                v = self.get(a)
            self.emit(I.store(I.mem(R.RSP, CALL_CELLS_AT + 8 * k), v))
        io = self.vreg(RegClass.INT)
        self.emit(I.mov(io, R.RSP))
        self.emit(I.alu_imm("add", io, CALL_CELLS_AT))
        table = self.vreg(RegClass.INT)
        self.emit(I.load(table, I.mem(self.ctx, 8 * CTX_FUNCS)))
        target = self.vreg(RegClass.INT)
        self.emit(I.load(target, I.mem(table, 8 * self.order.index(callee.name))))
        rc = self.vreg(RegClass.INT)
        self.native_call(target, [io, self.ctx], [], rc)
        self.emit(X86Inst(Code.TEST_RM64_R64, (RegOp(rc, USE), RegOp(rc, USE)), flags="w"))
        ok, bad = self.label("called"), self.label("failed")
        self.branch("ne", bad, ok)
        self.start(bad)
        self.emit(I.mov(self.ret, rc))
        self.jump(self.exit_label)
        self.start(ok)
        for k, r in enumerate(s.results, start=len(s.args)):
            m = I.mem(R.RSP, CALL_CELLS_AT + 8 * k)
            if isinstance(r, ir.Buf):
                self.emit(I.load(self.buf_reg(r), m))
            elif is_float(r.type):
                t = self.vreg(RegClass.INT)
                self.emit(I.load(t, m))
                self.emit(I.movq_to_xmm(self.reg_of(r), t))
            else:
                self.emit(I.load(self.reg_of(r), m))

    # --- primitives ------------------------------------------------------------------------------
    def op(self, s: ir.Op) -> None:
        name = s.op
        t = s.args[0].type if s.args else s.dst.type
        if name == "select":
            self.select_op(s)
        elif name in ("eq", "ne", "lt", "le", "gt", "ge"):
            self.compare(s, t)
        elif name == "convert":
            self.convert(s, t)
        elif name == "bitcast":
            self.bitcast(s, t)
        elif is_float(t):
            self.float_op(s, t)
        else:
            self.int_op(s, t)

    def int_op(self, s: ir.Op, t: str) -> None:
        d = self.reg_of(s.dst)
        name = s.op
        a = self.get(s.args[0])
        if name in ("add", "sub", "mul", "and", "or", "xor"):
            b = self.get(s.args[1])
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            self.emit(I.alu("imul" if name == "mul" else name, r, b))
            self.normalize(r, t)
            self.copy(d, r)
        elif name == "neg":
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            self.emit(X86Inst(Code.NEG_RM64, (RegOp(r, USEDEF),), flags="w"))
            self.normalize(r, t)
            self.copy(d, r)
        elif name == "not":
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            if t == "bool":
                self.emit(I.alu_imm("xor", r, 1))
            else:
                self.emit(X86Inst(Code.NOT_RM64, (RegOp(r, USEDEF),)))
                self.normalize(r, t)
            self.copy(d, r)
        elif name == "abs":
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            if is_signed(t):
                self.emit(X86Inst(Code.NEG_RM64, (RegOp(r, USEDEF),), flags="w"))
                self.emit(
                    X86Inst(Code.CMOVS_R64_RM64, (RegOp(r, USEDEF), RegOp(a, USE)), flags="r")
                )
                self.normalize(r, t)
            self.copy(d, r)
        elif name in ("minimum", "maximum"):
            b = self.get(s.args[1])
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            self.emit(I.cmp(a, b))
            # keep a when a is the answer, else take b
            signed = is_signed(t)
            cc = ("G" if signed else "A") if name == "minimum" else ("L" if signed else "B")
            self.emit(
                X86Inst(
                    getattr(Code, f"CMOV{cc}_R64_RM64"),
                    (RegOp(r, USEDEF), RegOp(b, USE)),
                    flags="r",
                )
            )
            self.copy(d, r)
        elif name in ("div", "rem"):
            self.int_divide(s, t, a, self.get(s.args[1]), d)
        elif name in ("shl", "shr"):
            c = self.get(s.args[1])
            cnt = self.vreg(RegClass.INT)
            self.copy(cnt, c)
            self.emit(I.alu_imm("and", cnt, BITS[t] - 1))
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            self.emit(I.mov(R.RCX, cnt))
            if name == "shl":
                code = Code.SHL_RM64_CL
            else:
                code = Code.SAR_RM64_CL if is_signed(t) else Code.SHR_RM64_CL
            self.emit(X86Inst(code, (RegOp(r, USEDEF), RegOp(R.RCX, USE)), flags="w"))
            self.normalize(r, t)
            self.copy(d, r)
        else:
            raise NotSelected(f"x86_64 does not select integer `{name}`")

    def int_divide(self, s: ir.Op, t: str, a: VReg, b: VReg, d: VReg) -> None:
        """Truncating division (the loop program guarantees b != 0). MIN / -1 must not reach
        idiv (it traps): the divisor -1 becomes 1 and the answer is fixed up (q = -a, r = 0)."""
        if is_signed(t):
            minus1 = self.int_const(-1)
            one = self.int_const(1)
            bb = self.vreg(RegClass.INT)
            self.copy(bb, b)
            self.emit(I.cmp(b, minus1))
            self.emit(X86Inst(Code.CMOVE_R64_RM64, (RegOp(bb, USEDEF), RegOp(one, USE)), flags="r"))
            self.emit(I.mov(R.RAX, a))
            self.emit(I.cqo())
            self.emit(I.idiv(bb))
        else:
            bb = b
            self.emit(I.mov(R.RAX, a))
            self.emit(I.mov_imm(R.RDX, 0))
            self.emit(
                X86Inst(
                    Code.DIV_RM64,
                    (RegOp(bb, USE),),
                    implicit_uses=(R.RAX, R.RDX),
                    implicit_defs=(R.RAX, R.RDX),
                    flags="w",
                )
            )
        r = self.vreg(RegClass.INT)
        self.emit(I.mov(r, R.RAX if s.op == "div" else R.RDX))
        if is_signed(t):
            fix = self.vreg(RegClass.INT)
            if s.op == "div":
                self.copy(fix, a)
                self.emit(X86Inst(Code.NEG_RM64, (RegOp(fix, USEDEF),), flags="w"))
            else:
                self.emit(I.mov_imm(fix, 0))
            self.emit(I.cmp(b, minus1))
            self.emit(X86Inst(Code.CMOVE_R64_RM64, (RegOp(r, USEDEF), RegOp(fix, USE)), flags="r"))
        self.normalize(r, t)
        self.copy(d, r)

    def compare(self, s: ir.Op, t: str) -> None:
        d = self.reg_of(s.dst)
        a, b = self.get(s.args[0]), self.get(s.args[1])
        name = s.op
        r = self.vreg(RegClass.INT)
        if is_float(t):
            ucom = Code.UCOMISD_XMM_XMMM64 if t == "f64" else Code.UCOMISS_XMM_XMMM32
            # a < b is b > a: "above" is false when unordered, as IEEE wants
            x, y, cc = {
                "lt": (b, a, "A"),
                "le": (b, a, "AE"),
                "gt": (a, b, "A"),
                "ge": (a, b, "AE"),
                "eq": (a, b, "E"),
                "ne": (a, b, "NE"),
            }[name]
            self.emit(X86Inst(ucom, (RegOp(x, USE), RegOp(y, USE)), flags="w"))
            self.emit(X86Inst(getattr(Code, f"SET{cc}_RM8"), (RegOp(r, DEF),), flags="r"))
            if name in ("eq", "ne"):
                p = self.vreg(RegClass.INT)
                self.emit(
                    X86Inst(
                        getattr(Code, "SETNP_RM8" if name == "eq" else "SETP_RM8"),
                        (RegOp(p, DEF),),
                        flags="r",
                    )
                )
                self.emit(X86Inst(Code.MOVZX_R64_RM8, (RegOp(p, DEF), RegOp(p, USE))))
                self.emit(X86Inst(Code.MOVZX_R64_RM8, (RegOp(r, DEF), RegOp(r, USE))))
                self.emit(I.alu("and" if name == "eq" else "or", r, p))
                self.copy(d, r)
                return
        else:
            signed = is_signed(t)
            cc = {
                "eq": "E",
                "ne": "NE",
                "lt": "L" if signed else "B",
                "le": "LE" if signed else "BE",
                "gt": "G" if signed else "A",
                "ge": "GE" if signed else "AE",
            }[name]
            self.emit(I.cmp(a, b))
            self.emit(X86Inst(getattr(Code, f"SET{cc}_RM8"), (RegOp(r, DEF),), flags="r"))
        self.emit(X86Inst(Code.MOVZX_R64_RM8, (RegOp(r, DEF), RegOp(r, USE))))
        self.copy(d, r)

    def select_op(self, s: ir.Op) -> None:
        c, a, b = s.args
        d = self.reg_of(s.dst)
        if isinstance(c, Imm):
            self.copy(d, self.get(a if c.bits else b))
            return
        cr, ar, br = self.get(c), self.get(a), self.get(b)
        if d.cls is RegClass.INT:
            r = self.vreg(RegClass.INT)
            self.copy(r, br)
            self.emit(X86Inst(Code.TEST_RM64_R64, (RegOp(cr, USE), RegOp(cr, USE)), flags="w"))
            self.emit(X86Inst(Code.CMOVNE_R64_RM64, (RegOp(r, USEDEF), RegOp(ar, USE)), flags="r"))
            self.copy(d, r)
            return
        m = self.vreg(RegClass.INT)
        self.copy(m, cr)
        self.emit(X86Inst(Code.NEG_RM64, (RegOp(m, USEDEF),), flags="w"))  # 0 or all ones
        mask = self.vreg(RegClass.FLOAT)
        self.emit(I.movq_to_xmm(mask, m))
        self.copy(d, self.blend(mask, ar, br))

    def blend(self, mask: VReg, x: VReg, y: VReg) -> VReg:
        """(x AND mask) OR (y AND NOT mask), on the low 64 bits."""
        a = self.vreg(RegClass.FLOAT)
        self.emit(I.movaps(a, mask))
        self.emit(X86Inst(Code.ANDPD_XMM_XMMM128, (RegOp(a, USEDEF), RegOp(x, USE))))
        n = self.vreg(RegClass.FLOAT)
        self.emit(I.movaps(n, mask))
        self.emit(X86Inst(Code.ANDNPD_XMM_XMMM128, (RegOp(n, USEDEF), RegOp(y, USE))))
        self.emit(X86Inst(Code.ORPD_XMM_XMMM128, (RegOp(a, USEDEF), RegOp(n, USE))))
        return a

    def cmp_mask(self, t: str, a: VReg, b: VReg, pred: int) -> VReg:
        """All ones where `a pred b` (cmpsd predicates: 0 eq, 1 lt, 2 le, 3 unordered)."""
        m = self.vreg(RegClass.FLOAT)
        self.emit(I.movaps(m, a))
        code = Code.CMPSD_XMM_XMMM64_IMM8 if t == "f64" else Code.CMPSS_XMM_XMMM32_IMM8
        self.emit(X86Inst(code, (RegOp(m, USEDEF), RegOp(b, USE), ImmOp(pred))))
        if t == "f32":  # widen the 32-bit mask to the low 64 bits for blend
            g = self.vreg(RegClass.INT)
            self.emit(X86Inst(Code.MOVD_RM32_XMM, (RegOp(g, DEF), RegOp(m, USE))))
            self.emit(X86Inst(Code.MOVSXD_R64_RM32, (RegOp(g, DEF), RegOp(g, USE))))
            self.emit(I.movq_to_xmm(m, g))
        return m

    def canon(self, x: VReg, t: str) -> VReg:
        nan = self.float_const(t, 0x7FC00000 if t == "f32" else 0x7FF8000000000000)
        return self.blend(self.cmp_mask(t, x, x, 3), nan, x)

    def float_op(self, s: ir.Op, t: str) -> None:
        d = self.reg_of(s.dst)
        name = s.op
        a = self.get(s.args[0])
        sd = t == "f64"
        two = {
            "add": (Code.ADDSD_XMM_XMMM64, Code.ADDSS_XMM_XMMM32),
            "sub": (Code.SUBSD_XMM_XMMM64, Code.SUBSS_XMM_XMMM32),
            "mul": (Code.MULSD_XMM_XMMM64, Code.MULSS_XMM_XMMM32),
            "div": (Code.DIVSD_XMM_XMMM64, Code.DIVSS_XMM_XMMM32),
        }
        if name in two:
            b = self.get(s.args[1])
            r = self.vreg(RegClass.FLOAT)
            self.emit(I.movaps(r, a))
            self.emit(X86Inst(two[name][0 if sd else 1], (RegOp(r, USEDEF), RegOp(b, USE))))
            self.copy(d, r)
        elif name == "sqrt":
            r = self.vreg(RegClass.FLOAT)
            self.emit(I.movaps(r, a))
            code = Code.SQRTSD_XMM_XMMM64 if sd else Code.SQRTSS_XMM_XMMM32
            self.emit(X86Inst(code, (RegOp(r, USEDEF), RegOp(a, USE))))
            self.copy(d, r)
        elif name in ("neg", "abs"):
            bits = (1 << 63) if sd else (1 << 31)
            m = self.float_const(
                "f64",
                bits if name == "neg" else ((1 << 64) - 1) ^ bits if sd else (0xFFFFFFFF ^ bits),
            )
            r = self.vreg(RegClass.FLOAT)
            self.emit(I.movaps(r, a))
            code = Code.XORPD_XMM_XMMM128 if name == "neg" else Code.ANDPD_XMM_XMMM128
            self.emit(X86Inst(code, (RegOp(r, USEDEF), RegOp(m, USE))))
            self.copy(d, r)
        elif name in ("minimum", "maximum"):
            b = self.get(s.args[1])
            # x = (a OP b) ? a : b, equal values combine their bits (max: AND, so +0 wins;
            # min: OR, so -0 wins), NaN if either is NaN
            pick_a = self.cmp_mask(t, b, a, 1) if name == "maximum" else self.cmp_mask(t, a, b, 1)
            r = self.blend(pick_a, a, b)
            both = self.vreg(RegClass.FLOAT)
            self.emit(I.movaps(both, a))
            self.emit(
                X86Inst(
                    Code.ANDPD_XMM_XMMM128 if name == "maximum" else Code.ORPD_XMM_XMMM128,
                    (RegOp(both, USEDEF), RegOp(b, USE)),
                )
            )
            r = self.blend(self.cmp_mask(t, a, b, 0), both, r)
            nan = self.float_const(t, 0x7FC00000 if t == "f32" else 0x7FF8000000000000)
            r = self.blend(self.cmp_mask(t, a, b, 3), nan, r)
            self.copy(d, r)
        elif name == "fma":
            b, c = self.get(s.args[1]), self.get(s.args[2])
            if self.isa.fma:
                # short-lived copies: three long-lived operands could all be spilled, and the
                # allocator has two float scratch registers
                a2 = self.vreg(RegClass.FLOAT)
                self.emit(I.movaps(a2, a))
                a = a2
                r = self.vreg(RegClass.FLOAT)
                self.emit(I.movaps(r, c))
                code = (
                    Code.VEX_VFMADD231SD_XMM_XMM_XMMM64
                    if sd
                    else Code.VEX_VFMADD231SS_XMM_XMM_XMMM32
                )
                self.emit(X86Inst(code, (RegOp(r, USEDEF), RegOp(a, USE), RegOp(b, USE))))
                self.copy(d, r)
            else:
                self.c_call(CTX_FMA if sd else CTX_FMAF, [], [a, b, c], d)
        elif name == "rem":
            b = self.get(s.args[1])
            self.c_call(CTX_FMOD if sd else CTX_FMODF, [], [a, b], d)
        elif name == "roundeven":
            self.roundeven(a, d, t)
        elif name == "canon":
            self.copy(d, self.canon(a, t))
        else:
            raise NotSelected(f"x86_64 does not select float `{name}`")

    def roundeven(self, a: VReg, d: VReg, t: str) -> None:
        sd = t == "f64"
        if self.isa.sse41:
            r = self.vreg(RegClass.FLOAT)
            code = Code.ROUNDSD_XMM_XMMM64_IMM8 if sd else Code.ROUNDSS_XMM_XMMM32_IMM8
            self.emit(I.movaps(r, a))
            self.emit(
                X86Inst(code, (RegOp(r, USEDEF), RegOp(a, USE), ImmOp(8)))
            )  # nearest, no exceptions
            self.copy(d, r)
            return
        # SSE2: |x| < 2^p: (|x| + 2^p) - 2^p rounds to an integer, ties to even (MXCSR is RNE);
        # the sign is put back (so -0.3 gives -0); larger |x| and NaN are already integral
        sign = (1 << 63) if sd else (1 << 31)
        absmask = self.float_const("f64", (((1 << 64) - 1) ^ sign) if sd else (0xFFFFFFFF ^ sign))
        big = self.float_const(t, 0x4330000000000000 if sd else 0x4B000000)  # 2^52 / 2^23
        mag = self.vreg(RegClass.FLOAT)
        self.emit(I.movaps(mag, a))
        self.emit(X86Inst(Code.ANDPD_XMM_XMMM128, (RegOp(mag, USEDEF), RegOp(absmask, USE))))
        add = Code.ADDSD_XMM_XMMM64 if sd else Code.ADDSS_XMM_XMMM32
        sub = Code.SUBSD_XMM_XMMM64 if sd else Code.SUBSS_XMM_XMMM32
        r = self.vreg(RegClass.FLOAT)
        self.emit(I.movaps(r, mag))
        self.emit(X86Inst(add, (RegOp(r, USEDEF), RegOp(big, USE))))
        self.emit(X86Inst(sub, (RegOp(r, USEDEF), RegOp(big, USE))))
        signbits = self.vreg(RegClass.FLOAT)
        self.emit(I.movaps(signbits, a))
        self.emit(X86Inst(Code.ANDNPD_XMM_XMMM128, (RegOp(absmask, USEDEF), RegOp(signbits, USE))))
        self.emit(X86Inst(Code.ORPD_XMM_XMMM128, (RegOp(r, USEDEF), RegOp(absmask, USE))))
        small = self.cmp_mask(t, mag, big, 1)
        self.copy(d, self.blend(small, r, a))

    def bitcast(self, s: ir.Op, t: str) -> None:
        to = s.dst.type
        d = self.reg_of(s.dst)
        a = self.get(s.args[0])
        if is_float(t) and not is_float(to):
            c = self.canon(a, t)
            if t == "f64":
                self.emit(I.movq_from_xmm(d, c))
            else:
                self.emit(X86Inst(Code.MOVD_RM32_XMM, (RegOp(d, DEF), RegOp(c, USE))))
                self.normalize(d, to)
        elif not is_float(t) and is_float(to):
            if to == "f64":
                self.emit(I.movq_to_xmm(d, a))
            else:
                self.emit(X86Inst(Code.MOVD_XMM_RM32, (RegOp(d, DEF), RegOp(a, USE))))
        elif is_float(t):
            self.copy(d, a)
        else:
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            self.normalize(r, to)
            self.copy(d, r)

    def convert(self, s: ir.Op, t: str) -> None:
        to = s.dst.type
        d = self.reg_of(s.dst)
        a = self.get(s.args[0])
        if not is_float(t) and not is_float(to):
            r = self.vreg(RegClass.INT)
            self.copy(r, a)
            if to == "bool":
                self.emit(I.cmp_imm(r, 0))
                self.emit(X86Inst(Code.SETNE_RM8, (RegOp(r, DEF),), flags="r"))
            self.normalize(r, to)
            self.copy(d, r)
        elif is_float(t) and is_float(to):
            if t == to:
                self.copy(d, a)
                return
            code = Code.CVTSS2SD_XMM_XMMM32 if to == "f64" else Code.CVTSD2SS_XMM_XMMM64
            self.emit(X86Inst(code, (RegOp(d, DEF), RegOp(a, USE))))
        elif is_float(to):
            self.int_to_float(a, t, to, d)
        else:
            self.float_to_int(a, t, to, d)

    def int_to_float(self, a: VReg, t: str, to: str, d: VReg) -> None:
        cvt = Code.CVTSI2SD_XMM_RM64 if to == "f64" else Code.CVTSI2SS_XMM_RM64
        if t != "u64":
            self.emit(X86Inst(cvt, (RegOp(d, DEF), RegOp(a, USE))))
            return
        # u64 >= 2^63: convert (v >> 1 | v & 1) and double it: one rounding, ties kept
        half = self.vreg(RegClass.INT)
        low = self.vreg(RegClass.INT)
        self.copy(half, a)
        self.emit(X86Inst(Code.SHR_RM64_IMM8, (RegOp(half, USEDEF), ImmOp(1)), flags="w"))
        self.copy(low, a)
        self.emit(I.alu_imm("and", low, 1))
        self.emit(I.alu("or", half, low))
        big = self.vreg(RegClass.FLOAT)
        self.emit(X86Inst(cvt, (RegOp(big, DEF), RegOp(half, USE))))
        add = Code.ADDSD_XMM_XMMM64 if to == "f64" else Code.ADDSS_XMM_XMMM32
        self.emit(X86Inst(add, (RegOp(big, USEDEF), RegOp(big, USE))))
        small = self.vreg(RegClass.FLOAT)
        self.emit(X86Inst(cvt, (RegOp(small, DEF), RegOp(a, USE))))
        self.emit(X86Inst(Code.TEST_RM64_R64, (RegOp(a, USE), RegOp(a, USE)), flags="w"))
        neg, pos, join = self.label("u64big"), self.label("u64small"), self.label("u64done")
        self.branch("s", neg, pos)
        self.start(neg)
        self.emit(I.movaps(d, big))
        self.jump(join)
        self.start(pos)
        self.emit(I.movaps(d, small))
        self.jump(join)
        self.start(join)

    def float_to_int(self, a: VReg, t: str, to: str, d: VReg) -> None:
        """Truncate, saturate to [MIN, MAX] of `to`, NaN → 0 (semantics.md §5)."""
        sd = t == "f64"
        bits = BITS[to]
        signed = is_signed(to)
        cvtt = Code.CVTTSD2SI_R64_XMMM64 if sd else Code.CVTTSS2SI_R64_XMMM32
        ucom = Code.UCOMISD_XMM_XMMM64 if sd else Code.UCOMISS_XMM_XMMM32
        upper_v = 2.0 ** (bits - 1 if signed else bits)
        lower_v = -(2.0 ** (bits - 1)) if signed else 0.0
        from kera_core.loops.emit import float_bits

        upper = self.float_const(t, float_bits(t, upper_v))
        lower = self.float_const(t, float_bits(t, lower_v))
        r = self.vreg(RegClass.INT)
        if to == "u64":
            # [2^63, 2^64): convert x - 2^63 and set the top bit
            two63 = self.float_const(t, float_bits(t, 2.0**63))
            x2 = self.vreg(RegClass.FLOAT)
            self.emit(I.movaps(x2, a))
            sub = Code.SUBSD_XMM_XMMM64 if sd else Code.SUBSS_XMM_XMMM32
            self.emit(X86Inst(sub, (RegOp(x2, USEDEF), RegOp(two63, USE))))
            hi = self.vreg(RegClass.INT)
            self.emit(X86Inst(cvtt, (RegOp(hi, DEF), RegOp(x2, USE))))
            top = self.int_const(-(1 << 63))
            self.emit(I.alu("xor", hi, top))
            self.emit(X86Inst(cvtt, (RegOp(r, DEF), RegOp(a, USE))))
            self.emit(X86Inst(ucom, (RegOp(a, USE), RegOp(two63, USE)), flags="w"))
            self.emit(X86Inst(Code.CMOVAE_R64_RM64, (RegOp(r, USEDEF), RegOp(hi, USE)), flags="r"))
        else:
            self.emit(X86Inst(cvtt, (RegOp(r, DEF), RegOp(a, USE))))
        maxv = self.int_const(
            ((1 << (bits - 1)) - 1) if signed else ((1 << bits) - 1) if bits < 64 else -1
        )
        minv = self.int_const(-(1 << (bits - 1)) if signed else 0)
        zero = self.int_const(0)
        self.emit(X86Inst(ucom, (RegOp(a, USE), RegOp(upper, USE)), flags="w"))  # x >= upper
        self.emit(X86Inst(Code.CMOVAE_R64_RM64, (RegOp(r, USEDEF), RegOp(maxv, USE)), flags="r"))
        self.emit(X86Inst(ucom, (RegOp(lower, USE), RegOp(a, USE)), flags="w"))  # lower > x
        self.emit(X86Inst(Code.CMOVA_R64_RM64, (RegOp(r, USEDEF), RegOp(minv, USE)), flags="r"))
        self.emit(X86Inst(ucom, (RegOp(a, USE), RegOp(a, USE)), flags="w"))  # NaN
        self.emit(X86Inst(Code.CMOVP_R64_RM64, (RegOp(r, USEDEF), RegOp(zero, USE)), flags="r"))
        self.normalize(r, to)
        self.copy(d, r)


CALL_CELLS_AT = 8  # where the io cells of an outgoing call start in the outgoing area


def _with_role(m: MemOp, role) -> MemOp:
    return MemOp(m.base, m.index, m.scale, m.disp, role)


def _canonical_int(t: str, bits: int) -> int:
    w = 8 if t == "bool" else BITS[t]
    bits &= (1 << w) - 1
    if is_signed(t) and bits >> (w - 1):
        bits -= 1 << w
    return bits


__all__ = ["Isa", "NotSelected", "PReg", "Selector"]
