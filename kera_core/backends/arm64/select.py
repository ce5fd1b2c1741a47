"""ARM64 instruction selection: one loop-program function → one vcode function.

Thin like the x86-64 selector (every decision about bits and memory was made by the loop
program); the shared machine layer schedules, allocates, lays out the frame and encodes.

**Calling convention of a compiled function** (AAPCS64): ``int64 f(uint64 *io, uint64 *ctx)``
— the x86-64 target's run-time ABI: ``io`` holds one 8-byte cell per dimension size,
flattened parameter (integers extended to 64 bits, floats as bits, buffers as addresses) and
result; ``ctx`` holds the steps left, then the host helpers' addresses (:data:`CTX_ALLOC` …),
the function table and the print callback.  ``f`` returns 0 or the checked error's number.

**Host helpers are called through ``ctx``** (``ldr x16, [ctx, #k]; blr x16``), never by a
fixed address, so the same code runs natively on an ARM64 host (the cells hold C functions
and ctypes callbacks) and under emulation (the cells hold the addresses of ``svc`` stubs the
emulator services in Python: :mod:`kera_core.backends.arm64.emulate`).

**Values.** Integers and ``bool`` in x-registers in canonical 64-bit form (sign-extended for
signed types, zero-extended for unsigned, 0/1 for bool), re-normalised (``sbfm``/``ubfm``)
after each operation that can leave the type's range. ``f32``/``f64`` in v-registers (``s``/
``d`` views; whole q registers for the NEON steps of a planned `lanes` loop, selected by
:mod:`kera_core.backends.arm64.vector`). FPCR is saved on entry, set to round-to-nearest,
FZ off, DN on (its default NaN, ``0x7FC00000`` / ``0x7FF8000000000000``, is Kera's canonical
NaN), and restored on exit.
"""

from __future__ import annotations

from kera_core.backends.arm64 import vector
from kera_core.loops import ir
from kera_core.loops.ir import BITS, Imm, is_float, is_signed
from kera_core.loops.run_abi import ERROR_NUMBERS, print_sites
from kera_core.native.abi import AAPCS64
from kera_core.native.arm64 import inst as I
from kera_core.native.arm64 import regs as R
from kera_core.native.arm64.inst import A64Inst, MemOp
from kera_core.native.vcode import Block, RegClass, VCodeFunction, VReg

X, V = R.XREGS, R.VREGS

CTX_STEPS = 0
CTX_ALLOC = 1
CTX_FREE = 2
CTX_FMOD = 3
CTX_FMODF = 4
CTX_MEMCPY = 5
CTX_FUNCS = 6
CTX_PRINT = 7
CTX_CELLS = 8
HELPERS = ("alloc", "free", "fmod", "fmodf", "memcpy")  # ctx cells 1..5, in order

FPCR_KERA = 1 << 25  # DN; RMode = 00 (nearest even), FZ = 0, no trap enables
CALL_CLOBBERS = tuple(sorted(AAPCS64.call_clobbers(), key=lambda p: (p.cls.value, p.index)))

LOAD = {
    "f64": ("ldr", "d"),
    "f32": ("ldr", "s"),
    "i64": ("ldr", "x"),
    "u64": ("ldr", "x"),
    "i32": ("ldrsw", "x"),
    "u32": ("ldr", "w"),
    "i16": ("ldrsh", "x"),
    "u16": ("ldrh", "w"),
    "i8": ("ldrsb", "x"),
    "u8": ("ldrb", "w"),
    "bool": ("ldrb", "w"),
}
STORE = {
    "f64": ("str", "d"),
    "f32": ("str", "s"),
    "i64": ("str", "x"),
    "u64": ("str", "x"),
    "i32": ("str", "w"),
    "u32": ("str", "w"),
    "i16": ("strh", "w"),
    "u16": ("strh", "w"),
    "i8": ("strb", "w"),
    "u8": ("strb", "w"),
    "bool": ("strb", "w"),
}


class NotSelected(Exception):
    """The loop program uses something this backend does not select (a compile-time gap)."""


def _elem_bytes(t: str) -> int:
    return 1 if t == "bool" else BITS[t] // 8


def _fsz(t: str) -> str:
    return "d" if t == "f64" else "s"


def canonical_int(t: str, bits: int) -> int:
    w = 8 if t == "bool" else BITS[t]
    bits &= (1 << w) - 1
    if is_signed(t) and bits >> (w - 1):
        bits -= 1 << w
    return bits


CANONICAL_NAN = {"f32": 0x7FC00000, "f64": 0x7FF8000000000000}


class Selector:
    def __init__(self, fn: ir.LFunction, program: ir.Program, *, vectors: bool = True):
        self.fn = fn
        self.vectors = vectors  # `lanes` loops as NEON loops (kera_core/backends/arm64/vector.py)
        self.program = program
        self.order = list(program.functions)
        self.sites = {id(st): k for k, st in print_sites(program).items()}
        self.next_id = 0
        self.regs: dict = {}
        self.blocks: list[Block] = []
        self.label_n = 0
        self.cur: list[A64Inst] = []
        self.cur_label = "entry"
        self.max_cells = 0

    # --- registers and blocks ---------------------------------------------------------------
    def vreg(self, cls: RegClass) -> VReg:
        self.next_id += 1
        return VReg(self.next_id, cls, 8)

    def ireg(self) -> VReg:
        return self.vreg(RegClass.INT)

    def freg(self) -> VReg:
        return self.vreg(RegClass.FLOAT)

    def reg_of(self, v: ir.Var) -> VReg:
        if v.lanes != 1:
            raise NotSelected("arm64 selects scalar loop programs only (no vector Vars)")
        r = self.regs.get(v.id)
        if r is None:
            r = self.regs[v.id] = self.vreg(RegClass.FLOAT if is_float(v.type) else RegClass.INT)
        return r

    def buf_reg(self, b: ir.Buf) -> VReg:
        key = ("buf", b.id)
        r = self.regs.get(key)
        if r is None:
            r = self.regs[key] = self.ireg()
        return r

    def label(self, hint: str) -> str:
        self.label_n += 1
        return f"{hint}{self.label_n}"

    def emit(self, x: A64Inst | list[A64Inst]) -> None:
        if isinstance(x, list):
            self.cur.extend(x)
        else:
            self.cur.append(x)

    def end_block(self, term: A64Inst, succs: tuple[str, ...]) -> None:
        self.cur.append(term)
        self.blocks.append(Block(self.cur_label, self.cur, succs))
        self.cur = []

    def start(self, label: str) -> None:
        self.cur_label = label

    def jump(self, target: str) -> None:
        self.end_block(I.jump(target), (target,))

    def branch(self, cond: str, taken: str, other: str) -> None:
        self.end_block(I.branch(cond, taken, other), (taken, other))

    def cbz(self, op: str, r: VReg, taken: str, other: str) -> None:
        self.end_block(I.cbz(op, r, taken, other), (taken, other))

    # --- operands -------------------------------------------------------------------------------
    def int_const(self, v: int) -> VReg:
        g = self.ireg()
        self.emit(I.mov_imm(g, v))
        return g

    def get(self, x) -> VReg:
        if isinstance(x, ir.Var):
            return self.reg_of(x)
        assert isinstance(x, Imm)
        if is_float(x.type):
            g = self.int_const(x.bits)
            f = self.freg()
            self.emit(I.rr("fmov_to_f", f, g, _fsz(x.type)))
            return f
        return self.int_const(canonical_int(x.type, x.bits))

    def float_const(self, t: str, bits: int) -> VReg:
        return self.get(Imm(t, bits))

    def copy(self, dst: VReg, src: VReg) -> None:
        if dst != src:
            self.emit(I.mov(dst, src))

    def normalize(self, d: VReg, r: VReg, t: str) -> None:
        """d = r brought to the canonical form of integer type t."""
        if t in ("i64", "u64"):
            self.copy(d, r)
            return
        w = 8 if t == "bool" else BITS[t]
        self.emit(I.bfm("sbfm" if is_signed(t) else "ubfm", d, r, 0, w - 1))

    # --- the function ----------------------------------------------------------------------------
    def select(self) -> VCodeFunction:
        fn = self.fn
        io = self.ireg()
        self.ctx = self.ireg()
        self.ret = self.ireg()
        self.emit(I.mov(io, X[0]))
        self.emit(I.mov(self.ctx, X[1]))
        self.saved_fpcr = self.ireg()
        self.emit(A64Inst("mrs_fpcr", (I.RegOp(self.saved_fpcr, I.DEF),), side_effect=True))
        k = self.int_const(FPCR_KERA)
        self.emit(A64Inst("msr_fpcr", (I.RegOp(k),), side_effect=True))
        cell = 0
        for d in fn.dims:
            self.emit(I.load("ldr", self.reg_of(d), MemOp(io, None, 8 * cell)))
            cell += 1
        for group in fn.params:
            for x in group:
                m = MemOp(io, None, 8 * cell)
                if isinstance(x, ir.Buf):
                    self.emit(I.load("ldr", self.buf_reg(x), m))
                elif is_float(x.type):
                    self.emit(I.load("ldr", self.reg_of(x), m, "d"))
                else:
                    self.emit(I.load("ldr", self.reg_of(x), m))
                cell += 1
        self.exit_label = "exit"
        self.error_labels: dict[int, str] = {}
        self.stmts(fn.body)
        for group in fn.results:
            for x in group:
                m = MemOp(io, None, 8 * cell)
                if isinstance(x, ir.Buf):
                    self.emit(I.store("str", self.buf_reg(x), m))
                elif is_float(x.type):
                    c = self.canon(self.reg_of(x), x.type)
                    t = self.ireg()
                    self.emit(I.rr("fmov_to_i", t, c, "d"))
                    if x.type == "f32":
                        self.emit(I.bfm("ubfm", t, t, 0, 31))
                    self.emit(I.store("str", t, m))
                else:
                    self.emit(I.store("str", self.reg_of(x), m))
                cell += 1
        self.emit(I.mov_imm(self.ret, 0))
        self.jump(self.exit_label)
        for code, lab in sorted(self.error_labels.items()):
            self.start(lab)
            self.emit(I.mov_imm(self.ret, code))
            self.jump(self.exit_label)
        self.start(self.exit_label)
        self.emit(A64Inst("msr_fpcr", (I.RegOp(self.saved_fpcr),), side_effect=True))
        self.emit(I.mov(X[0], self.ret))
        self.end_block(I.ret(X[0]), ())
        return VCodeFunction(fn.name, self.blocks)

    @property
    def outgoing_bytes(self) -> int:
        return 8 * self.max_cells

    def error(self, code: str) -> str:
        n = ERROR_NUMBERS[code]
        lab = self.error_labels.get(n)
        if lab is None:
            lab = self.error_labels[n] = f"error{n}"
        return lab

    # --- statements ----------------------------------------------------------------------------
    def stmts(self, stmts: list) -> None:
        for s in stmts:
            t = type(s)
            if t is ir.Op:
                self.op(s)
            elif t is ir.Load:
                op, sz = LOAD[s.buf.elem]
                self.emit(I.load(op, self.reg_of(s.dst), self.address(s.buf, s.index), sz))
            elif t is ir.Store:
                op, sz = STORE[s.buf.elem]
                v = self.get(s.value)
                self.emit(I.store(op, v, self.address(s.buf, s.index), sz))
            elif t is ir.Loop:
                self.loop(s)
            elif t is ir.While:
                self.while_(s)
            elif t is ir.If:
                self.if_(s)
            elif t is ir.Check:
                ok = self.get(s.ok)
                cont = self.label("ok")
                self.cbz("cbz", ok, self.error(s.code), cont)
                self.start(cont)
            elif t is ir.Alloc:
                self.alloc(s.buf)
            elif t is ir.Free:
                self.host_call(CTX_FREE, [self.buf_reg(s.buf)], [], None)
            elif t is ir.Copy:
                self.copy_stmt(s)
            elif t is ir.Exchange:  # the two buffers' addresses trade registers
                a, b, tmp = self.buf_reg(s.a), self.buf_reg(s.b), self.ireg()
                self.copy(tmp, a)
                self.copy(a, b)
                self.copy(b, tmp)
            elif t is ir.Call:
                self.call(s)
            elif t is ir.Print:
                self.print_stmt(s)
            else:
                raise NotSelected(f"arm64 does not select {type(s).__name__}")

    def address(self, b: ir.Buf, index) -> MemOp:
        size = _elem_bytes(b.elem)
        base = self.buf_reg(b)
        if isinstance(index, Imm):
            disp = canonical_int("i64", index.bits) * size
            if 0 <= disp < 4096 * size:
                return MemOp(base, None, disp)
        return MemOp(base, self.get(index), 0, True)

    def tick(self) -> None:
        t = self.ireg()
        at = MemOp(self.ctx, None, 8 * CTX_STEPS)
        self.emit(I.load("ldr", t, at))
        self.emit(I.sub_imm(t, t, 1))
        self.emit(I.store("str", t, at))
        self.emit(I.cmp_imm(t, 0))
        cont = self.label("go")
        self.branch("lt", self.error("R0007"), cont)
        self.start(cont)

    def loop(self, s: ir.Loop) -> None:
        i = self.ireg()
        hi = self.ireg()
        self.copy(i, self.get(s.lo))
        self.copy(hi, self.get(s.hi))
        p = vector.plan(self, s) if self.vectors else None
        if p is not None:
            self.vector_part(p, i, hi)
        head, body, done = self.label("head"), self.label("body"), self.label("done")
        self.jump(head)
        self.start(head)
        self.emit(I.cmp(i, hi))
        self.branch("ge", done, body)
        self.start(body)
        if s.counted:
            self.tick()
        self.copy(self.reg_of(s.var), i)
        self.stmts(s.body)
        self.emit(I.add_imm(i, i, 1))
        self.jump(head)
        self.start(done)

    def seen_vars(self) -> set[int]:
        """Every loop-program Var selected so far (defined before the current point)."""
        return {k for k in self.regs if isinstance(k, int)}

    def vector_part(self, p, i: VReg, hi: VReg) -> None:
        """The loop's first iterations as NEON steps — jam × W lanes a step, then W — and
        `i` ends where the scalar loop takes over for the rest."""
        vec = vector.VectorLoop(self, p)
        vec.emit_prelude()
        for jam in (p.jam, 1) if p.jam > 1 else (1,):
            step = p.width * jam
            n, pos, whole, end = self.ireg(), self.ireg(), self.ireg(), self.ireg()
            self.emit(I.rrr("sub", n, hi, i))
            self.emit(I.cmp_imm(n, 0))
            self.emit(I.csel("csel", pos, n, R.XZR, "gt"))  # max(hi - i, 0)
            self.emit(I.rrr("and", whole, pos, self.int_const(-step)))
            self.emit(I.rrr("add", end, i, whole))
            head, body, done = self.label("vhead"), self.label("vbody"), self.label("vdone")
            self.jump(head)
            self.start(head)
            self.emit(I.cmp(i, end))
            self.branch("ge", done, body)
            self.start(body)
            vec.step(i, jam)
            self.emit(I.add_imm(i, i, step))
            self.jump(head)
            self.start(done)

    def while_(self, s: ir.While) -> None:
        head, body, done = self.label("whead"), self.label("wbody"), self.label("wdone")
        self.jump(head)
        self.start(head)
        self.stmts(s.cond)
        self.cbz("cbz", self.get(s.test), done, body)
        self.start(body)
        self.tick()
        self.stmts(s.body)
        self.jump(head)
        self.start(done)

    def if_(self, s: ir.If) -> None:
        c = self.get(s.cond)
        then, other, join = self.label("then"), self.label("else"), self.label("join")
        self.cbz("cbnz", c, then, other)
        self.start(then)
        self.stmts(s.then)
        self.jump(join)
        self.start(other)
        self.stmts(s.orelse)
        self.jump(join)
        self.start(join)

    # --- calls ------------------------------------------------------------------------------------
    def host_call(self, cell: int, int_args: list, float_args: list, result) -> None:
        """Call the helper whose address is in ctx[cell] (AAPCS64)."""
        target = self.ireg()
        self.emit(I.load("ldr", target, MemOp(self.ctx, None, 8 * cell)))
        self.native_call(target, int_args, float_args, result)

    def native_call(self, target: VReg, int_args: list, float_args: list, result) -> None:
        used = []
        for k, a in enumerate(int_args):
            self.emit(I.mov(X[k], a))
            used.append(X[k])
        for k, a in enumerate(float_args):
            self.emit(I.mov(V[k], a))
            used.append(V[k])
        res = ()
        if result is not None:
            res = (X[0],) if result.cls is RegClass.INT else (V[0],)
        self.emit(I.blr(target, args=used, results=res, clobbers=CALL_CLOBBERS))
        if result is not None:
            self.emit(I.mov(result, res[0]))

    def scaled(self, n: VReg, size: int) -> VReg:
        if size == 1:
            return n
        r = self.ireg()
        s = size.bit_length() - 1
        self.emit(I.bfm("ubfm", r, n, 64 - s, 63 - s))  # lsl #s
        return r

    def alloc(self, b: ir.Buf) -> None:
        size = self.scaled(self.get(b.size), _elem_bytes(b.elem))
        p = self.buf_reg(b)
        self.host_call(CTX_ALLOC, [size], [], p)
        cont = self.label("mem")
        self.cbz("cbz", p, self.error("R0009"), cont)
        self.start(cont)

    def copy_stmt(self, s: ir.Copy) -> None:
        size = _elem_bytes(s.dst.elem)
        dst = self.ireg()
        src = self.ireg()
        self.emit(I.rrr("add", dst, self.buf_reg(s.dst), self.scaled(self.get(s.dst_at), size)))
        self.emit(I.rrr("add", src, self.buf_reg(s.src), self.scaled(self.get(s.src_at), size)))
        n = self.scaled(self.get(s.count), size)
        self.host_call(CTX_MEMCPY, [dst, src, n], [], None)

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
                bits = self.ireg()
                self.emit(I.rr("fmov_to_i", bits, self.canon(v, s.value.type), "d"))
                if s.value.type == "f32":
                    self.emit(I.bfm("ubfm", bits, bits, 0, 31))
                value = bits
            else:
                value = v
        self.max_cells = max(self.max_cells, len(s.shape))
        for k, d in enumerate(s.shape):
            self.emit(I.store("str", self.get(d), MemOp(R.SP, None, 8 * k)))
        shape = self.ireg()
        self.emit(I.add_imm(shape, R.SP, 0))
        self.host_call(CTX_PRINT, [self.int_const(site), value, offset, shape], [], None)

    def call(self, s: ir.Call) -> None:
        callee = self.program.functions[s.fn]
        self.max_cells = max(self.max_cells, len(s.args) + len(s.results))
        for k, a in enumerate(s.args):
            m = MemOp(R.SP, None, 8 * k)
            if isinstance(a, ir.Buf):
                self.emit(I.store("str", self.buf_reg(a), m))
            elif is_float(a.type):
                self.emit(I.store("str", self.get(a), m, "d"))
            else:
                self.emit(I.store("str", self.get(a), m))
        io = self.ireg()
        self.emit(I.add_imm(io, R.SP, 0))
        table = self.ireg()
        self.emit(I.load("ldr", table, MemOp(self.ctx, None, 8 * CTX_FUNCS)))
        target = self.ireg()
        self.emit(I.load("ldr", target, MemOp(table, None, 8 * self.order.index(callee.name))))
        rc = self.ireg()
        self.native_call(target, [io, self.ctx], [], rc)
        ok, bad = self.label("called"), self.label("failed")
        self.cbz("cbnz", rc, bad, ok)
        self.start(bad)
        self.emit(I.mov(self.ret, rc))
        self.jump(self.exit_label)
        self.start(ok)
        for k, r in enumerate(s.results, start=len(s.args)):
            m = MemOp(R.SP, None, 8 * k)
            if isinstance(r, ir.Buf):
                self.emit(I.load("ldr", self.buf_reg(r), m))
            elif is_float(r.type):
                self.emit(I.load("ldr", self.reg_of(r), m, "d"))
            else:
                self.emit(I.load("ldr", self.reg_of(r), m))

    # --- primitives ------------------------------------------------------------------------------
    def op(self, s: ir.Op) -> None:
        if s.dst.lanes != 1 or any(isinstance(a, ir.Var) and a.lanes != 1 for a in s.args):
            raise NotSelected("arm64 selects scalar loop programs only (no vector Vars)")
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
        r = self.ireg()
        alu = {"add": "add", "sub": "sub", "and": "and", "or": "orr", "xor": "eor"}
        if name in alu:
            self.emit(I.rrr(alu[name], r, a, self.get(s.args[1])))
        elif name == "mul":
            self.emit(I.rrrr("madd", r, a, self.get(s.args[1]), R.XZR))
        elif name == "neg":
            self.emit(I.rrr("sub", r, R.XZR, a))
        elif name == "not":
            if t == "bool":
                self.emit(I.rrr("eor", r, a, self.int_const(1)))
            else:
                self.emit(I.rrr("orn", r, R.XZR, a))
        elif name == "abs":
            if not is_signed(t):
                self.copy(d, a)
                return
            self.emit(I.cmp_imm(a, 0))
            self.emit(I.csel("csneg", r, a, a, "ge"))
        elif name in ("minimum", "maximum"):
            b = self.get(s.args[1])
            signed = is_signed(t)
            cond = ("lt" if signed else "lo") if name == "minimum" else ("gt" if signed else "hi")
            self.emit(I.cmp(a, b))
            self.emit(I.csel("csel", d, a, b, cond))
            return
        elif name in ("div", "rem"):
            b = self.get(s.args[1])
            # sdiv/udiv never trap: x / 0 = 0 (the loop program checked b != 0 first) and
            # MIN / -1 = MIN in 64 bits; narrower types are sign-extended, so their MIN / -1
            # is 2^(w-1), which the normalisation below wraps to MIN (semantics.md §4)
            q = self.ireg()
            self.emit(I.rrr("sdiv" if is_signed(t) else "udiv", q, a, b))
            if name == "div":
                r = q
            else:
                self.emit(I.rrrr("msub", r, q, b, a))  # a - q * b: MIN % -1 = 0
        elif name in ("shl", "shr"):
            c = self.get(s.args[1])
            cnt = self.ireg()
            self.emit(I.bfm("ubfm", cnt, c, 0, BITS[t].bit_length() - 2))  # count & (bits - 1)
            op = "lslv" if name == "shl" else ("asrv" if is_signed(t) else "lsrv")
            self.emit(I.rrr(op, r, a, cnt))
        else:
            raise NotSelected(f"arm64 does not select integer `{name}`")
        self.normalize(d, r, t)

    def compare(self, s: ir.Op, t: str) -> None:
        d = self.reg_of(s.dst)
        a, b = self.get(s.args[0]), self.get(s.args[1])
        name = s.op
        if is_float(t):
            # after fcmp, unordered is NZCV = 0011: mi, ls, gt, ge and eq are false, ne true
            cond = {"eq": "eq", "ne": "ne", "lt": "mi", "le": "ls", "gt": "gt", "ge": "ge"}[name]
            self.emit(I.fcmp(a, b, _fsz(t)))
        else:
            signed = is_signed(t)
            cond = {
                "eq": "eq",
                "ne": "ne",
                "lt": "lt" if signed else "lo",
                "le": "le" if signed else "ls",
                "gt": "gt" if signed else "hi",
                "ge": "ge" if signed else "hs",
            }[name]
            self.emit(I.cmp(a, b))
        self.emit(I.cset(d, cond))

    def select_op(self, s: ir.Op) -> None:
        c, a, b = s.args
        d = self.reg_of(s.dst)
        if isinstance(c, Imm):
            self.copy(d, self.get(a if c.bits else b))
            return
        cr, ar, br = self.get(c), self.get(a), self.get(b)
        self.emit(I.cmp_imm(cr, 0))
        if d.cls is RegClass.INT:
            self.emit(I.csel("csel", d, ar, br, "ne"))
        else:
            self.emit(I.csel("fcsel", d, ar, br, "ne", _fsz(s.dst.type)))

    def canon(self, x: VReg, t: str) -> VReg:
        """x with any NaN replaced by the canonical NaN."""
        nan = self.float_const(t, CANONICAL_NAN[t])
        r = self.freg()
        self.emit(I.fcmp(x, x, _fsz(t)))
        self.emit(I.csel("fcsel", r, nan, x, "vs", _fsz(t)))
        return r

    def float_op(self, s: ir.Op, t: str) -> None:
        d = self.reg_of(s.dst)
        name = s.op
        sz = _fsz(t)
        a = self.get(s.args[0])
        # FMAX/FMIN are IEEE 754-2019 maximum/minimum: NaN if either operand is NaN (the
        # default NaN, as FPCR.DN is set), and -0 < +0 — exactly semantics.md's; the NM forms
        # (maxNum) would drop a NaN and are never used
        two = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
        two |= {"minimum": "fmin", "maximum": "fmax"}
        one = {"sqrt": "fsqrt", "neg": "fneg", "abs": "fabs", "roundeven": "frintn"}
        if name in two:
            self.emit(I.rrr(two[name], d, a, self.get(s.args[1]), sz))
        elif name in one:
            self.emit(I.rr(one[name], d, a, sz))
        elif name == "fma":
            b, c = self.get(s.args[1]), self.get(s.args[2])
            self.emit(I.rrrr("fmadd", d, a, b, c, sz))  # a * b + c, one rounding
        elif name == "rem":
            b = self.get(s.args[1])
            self.host_call(CTX_FMOD if t == "f64" else CTX_FMODF, [], [a, b], d)
        elif name == "canon":
            self.copy(d, self.canon(a, t))
        else:
            raise NotSelected(f"arm64 does not select float `{name}`")

    def bitcast(self, s: ir.Op, t: str) -> None:
        to = s.dst.type
        d = self.reg_of(s.dst)
        a = self.get(s.args[0])
        if is_float(t) and not is_float(to):
            c = self.canon(a, t)
            r = self.ireg()
            self.emit(I.rr("fmov_to_i", r, c, _fsz(t)))  # the w form zero-extends
            self.normalize(d, r, to)
        elif not is_float(t) and is_float(to):
            self.emit(I.rr("fmov_to_f", d, a, _fsz(to)))
        elif is_float(t):
            self.copy(d, a)
        else:
            self.normalize(d, a, to)

    def convert(self, s: ir.Op, t: str) -> None:
        to = s.dst.type
        d = self.reg_of(s.dst)
        a = self.get(s.args[0])
        if to == "bool":
            if is_float(t):
                zero = self.float_const(t, 0)
                self.emit(I.fcmp(a, zero, _fsz(t)))  # NaN != 0 is true: ne holds unordered
            else:
                self.emit(I.cmp_imm(a, 0))
            self.emit(I.cset(d, "ne"))
        elif not is_float(t) and not is_float(to):
            self.normalize(d, a, to)
        elif is_float(t) and is_float(to):
            if t == to:
                self.copy(d, a)
            else:
                self.emit(I.rr("fcvt", d, a, _fsz(to) + _fsz(t)))
        elif is_float(to):
            # from the canonical 64-bit register: one rounding, 64-bit integers included
            op = "ucvtf" if t.startswith("u") or t == "bool" else "scvtf"
            self.emit(I.rr(op, d, a, _fsz(to)))
        else:
            self.float_to_int(a, t, to, d)

    def float_to_int(self, a: VReg, t: str, to: str, d: VReg) -> None:
        """Truncate, saturate to [MIN, MAX] of `to`, NaN → 0: FCVTZS/FCVTZU saturate to 64
        bits and give 0 for NaN; narrower types are clamped after."""
        signed = is_signed(to)
        r = self.ireg()
        self.emit(I.rr("fcvtzs" if signed else "fcvtzu", r, a, "x" + _fsz(t)))
        bits = BITS[to]
        if bits == 64:
            self.copy(d, r)
            return
        hi = self.int_const((1 << (bits - 1)) - 1 if signed else (1 << bits) - 1)
        r2 = self.ireg()
        self.emit(I.cmp(r, hi))
        self.emit(I.csel("csel", r2, hi, r, "gt" if signed else "hi"))
        if signed:
            lo = self.int_const(-(1 << (bits - 1)))
            self.emit(I.cmp(r2, lo))
            self.emit(I.csel("csel", d, lo, r2, "lt"))
        else:
            self.copy(d, r2)
