"""Linear-scan allocation under pressure, checked by running the code.

Each generated program is run three ways: the virtual-register program on the reference
interpreter, the allocated program on the interpreter, and the encoded program natively
through the JIT; all must agree with a plain Python model.
"""

from __future__ import annotations

import ctypes
import random

import pytest

from kera_core.native import liveness
from kera_core.native.abi import SYSV_AMD64
from kera_core.native.buffer import CodeBuffer
from kera_core.native.jit import load
from kera_core.native.regalloc import AllocationError, allocate
from kera_core.native.vcode import Block, PReg, RegClass, SpillSlot, VCodeFunction, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86 import interp
from kera_core.native.x86 import regs as R
from kera_core.native.x86.emit import assemble, call_address, encode
from kera_core.native.x86.target import x86_64_target
from tests.tools import native_only

pytestmark = native_only(needs_x86=False)

M64 = (1 << 64) - 1
i64 = ctypes.c_int64
f64 = ctypes.c_double
INT_ARGS = SYSV_AMD64.int_args
TARGET = x86_64_target()


def s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


class Gen:
    def __init__(self):
        self.n = 0

    def int(self) -> VReg:
        self.n += 1
        return VReg(self.n, RegClass.INT)

    def flt(self) -> VReg:
        self.n += 1
        return VReg(self.n, RegClass.FLOAT)


OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "imul": lambda a, b: a * b,
    "xor": lambda a, b: a ^ b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
}


def straight_line(seed: int, n_live: int = 40):
    """``n_live`` values computed from the 6 arguments, all combined at the end (so all are
    live at once).  Returns (function, python model)."""
    rnd = random.Random(seed)
    g = Gen()
    insts: list = []
    args = [g.int() for _ in range(6)]
    insts += [I.mov(a, p) for a, p in zip(args, INT_ARGS, strict=True)]
    steps = []  # (kind, dst index, a index, b index or imm)
    vals = list(args)
    for _ in range(n_live):
        d = g.int()
        a = rnd.randrange(len(vals))
        if rnd.random() < 0.25:
            imm = rnd.randrange(-1000, 1000)
            insts += [I.mov(d, vals[a]), I.alu_imm("add", d, imm)]
            steps.append(("imm", a, imm))
        else:
            op = rnd.choice(list(OPS))
            b = rnd.randrange(len(vals))
            insts += [I.mov(d, vals[a]), I.alu(op, d, vals[b])]
            steps.append((op, a, b))
        vals.append(d)
    acc = g.int()
    insts.append(I.mov_imm(acc, 0))
    three = g.int()
    insts.append(I.mov_imm(three, 3))
    for v in vals[6:]:
        insts += [I.imul(acc, three), I.alu("xor", acc, v)]
    insts += [I.mov(R.RAX, acc), I.ret(R.RAX)]
    fn = VCodeFunction(f"straight{seed}", [Block("entry", insts)])

    def model(*xs: int) -> int:
        vs = [s64(x) for x in xs]
        for kind, a, b in steps:
            vs.append(s64(vs[a] + b) if kind == "imm" else s64(OPS[kind](vs[a], vs[b])))
        r = 0
        for v in vs[6:]:
            r = s64(s64(r * 3) ^ v)
        return r

    return fn, model


def looped(n_acc: int = 30):
    """``n_acc`` accumulators updated in a counted loop: all live around the back-edge."""
    g = Gen()
    n, i, acc = g.int(), g.int(), [g.int() for _ in range(n_acc)]
    entry = [I.mov(n, R.RDI), I.mov_imm(i, 0)]
    entry += [I.mov_imm(a, 7 * k + 1) for k, a in enumerate(acc)]
    entry.append(I.jmp("head"))
    head = [I.cmp(i, n), I.branch("ge", "exit", "body")]
    body = []
    for k in range(n_acc):
        t = g.int()
        body += [
            I.mov(t, acc[(k + 1) % n_acc]),
            I.alu_imm("xor", t, k),
            I.alu("add", t, i),
            I.imul(acc[k], t) if k % 3 == 0 else I.alu("add", acc[k], t),
        ]
    body += [I.alu_imm("add", i, 1), I.jmp("head")]
    r = g.int()
    exit_ = [I.mov_imm(r, 0)]
    for a in acc:
        exit_ += [I.alu_imm("xor", r, 0x55), I.alu("add", r, a)]
    exit_ += [I.mov(R.RAX, r), I.ret(R.RAX)]
    fn = VCodeFunction(
        "looped",
        [
            Block("entry", entry, ("head",)),
            Block("head", head, ("exit", "body")),
            Block("body", body, ("head",)),
            Block("exit", exit_),
        ],
    )

    def model(nv: int) -> int:
        a = [7 * k + 1 for k in range(n_acc)]
        for iv in range(nv):
            for k in range(n_acc):
                t = s64((a[(k + 1) % n_acc] ^ k) + iv)
                a[k] = s64(a[k] * t) if k % 3 == 0 else s64(a[k] + t)
        res = 0
        for x in a:
            res = s64((res ^ 0x55) + x)
        return res

    return fn, model, acc


def float_program(n_live: int = 20):
    """``n_live`` doubles live at once; returns the function and a model over 8 xmm args."""
    g = Gen()
    args = [g.flt() for _ in range(8)]
    insts: list = [I.mov(a, R.XMMS[k]) for k, a in enumerate(args)]
    vals = list(args)
    rnd = random.Random(5)
    steps = []
    for _ in range(n_live):
        d = g.flt()
        a, b = rnd.randrange(len(vals)), rnd.randrange(len(vals))
        op = rnd.choice(["add", "sub", "mul"])
        if rnd.random() < 0.5:
            insts.append(I.vsd(op, d, vals[a], vals[b]))
        else:
            insts += [I.movaps(d, vals[a]), I.sd(op, d, vals[b])]
        steps.append((op, a, b))
        vals.append(d)
    acc = g.flt()
    insts.append(I.movaps(acc, vals[8]))
    for v in vals[9:]:
        insts.append(I.sd("add", acc, v))
    insts += [I.movaps(R.XMM0, acc), I.ret(R.XMM0)]
    fops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}

    def model(*xs: float) -> float:
        vs = list(xs)
        for op, a, b in steps:
            vs.append(fops[op](vs[a], vs[b]))
        r = vs[8]
        for v in vs[9:]:
            r = r + v
        return r

    return VCodeFunction("floats", [Block("entry", insts)]), model


def interp_int(fn: VCodeFunction, args) -> int:
    regs = {p: s64(a) for p, a in zip(INT_ARGS, args, strict=False)}
    return interp.run(fn, regs).regs[R.RAX]


@pytest.mark.parametrize("seed", range(6))
def test_straight_line_forty_live_ints_spill_and_agree(seed):
    fn, model = straight_line(seed)
    asm = assemble(fn, TARGET)
    alloc = asm.allocation
    assert len(TARGET.allocatable[RegClass.INT]) == 13
    assert len(alloc.spilled) >= 40 - 13 - 2, "forty live values must force spills"
    assert alloc.spill_slots and asm.frame.size > 0
    rnd = random.Random(seed + 100)
    f = asm.load(i64, (i64,) * 6)
    for _ in range(5):
        args = [rnd.randrange(-(1 << 40), 1 << 40) for _ in range(6)]
        want = model(*args)
        assert interp_int(fn, args) == want  # the virtual-register program
        assert interp_int(asm.function, args) == want  # the allocated program
        assert f(*args) == want  # natively
    f.owner.close()


def test_allocation_never_shares_a_register_between_overlapping_values():
    fn, _ = straight_line(3)
    alloc = allocate(fn, TARGET)
    live = liveness.analyze(fn)
    ivs = live.vreg_intervals()
    for a_i, a in enumerate(ivs):
        for b in ivs[a_i + 1 :]:
            la, lb = alloc.assignment[a.reg], alloc.assignment[b.reg]
            if isinstance(la, PReg) and la == lb:
                assert not a.overlaps(b), (a.reg, b.reg, la)
            if isinstance(la, SpillSlot) and la == lb:
                assert a.end <= b.start or b.end <= a.start


def test_loop_with_thirty_accumulators():
    fn, model, acc = looped()
    asm = assemble(fn, TARGET)
    assert asm.allocation.spilled, "30 loop-carried values cannot all sit in 13 registers"
    f = asm.load(i64, (i64,))
    for n in (0, 1, 2, 7, 50):
        want = model(n)
        assert interp_int(fn, [n]) == want
        assert interp_int(asm.function, [n]) == want
        assert f(n) == want
    f.owner.close()


def test_float_pressure_spills_and_agrees():
    fn, model = float_program(22)
    asm = assemble(fn, TARGET)
    spilled = [v for v in asm.allocation.spilled if v.cls is RegClass.FLOAT]
    assert spilled, "22 live doubles in 14 xmm registers must spill"
    f = asm.load(f64, (f64,) * 8)
    rnd = random.Random(9)
    for _ in range(5):
        xs = [rnd.uniform(-100, 100) for _ in range(8)]
        want = model(*xs)
        regs = {R.XMMS[k]: x for k, x in enumerate(xs)}
        assert interp.run(fn, regs).regs[R.XMM0] == want
        assert interp.run(asm.function, regs).regs[R.XMM0] == want
        assert f(*xs) == want  # bit-exact: same IEEE operations in the same order
    f.owner.close()


def test_idiv_and_shift_fixed_registers_are_honoured():
    g = Gen()
    a, b, s = g.int(), g.int(), g.int()
    keep = [g.int() for _ in range(11)]
    q, r, x = g.int(), g.int(), g.int()
    insts = [I.mov(a, R.RDI), I.mov(b, R.RSI), I.mov(s, R.RDX)]
    for k, v in enumerate(keep):  # values live across idiv and the shift
        insts += [I.mov(v, a), I.alu_imm("add", v, k * 1001)]
    insts += [I.mov(R.RAX, a), I.cqo(), I.idiv(b), I.mov(q, R.RAX), I.mov(r, R.RDX)]
    insts += [I.mov(x, q), I.mov(R.RCX, s), I.shl_cl(x)]
    for v in keep:
        insts += [I.alu("xor", x, v), I.alu("add", x, r)]
    insts += [I.mov(R.RAX, x), I.ret(R.RAX)]
    fn = VCodeFunction("divshift", [Block("entry", insts)])

    def model(av, bv, sv):
        qv = abs(av) // abs(bv) * (1 if (av < 0) == (bv < 0) else -1)
        rv = av - qv * bv
        xv = s64(qv << (sv & 63))
        for k in range(11):
            xv = s64((xv ^ s64(av + k * 1001)) + rv)
        return xv

    asm = assemble(fn, TARGET)
    alloc = asm.allocation
    live = liveness.analyze(fn)
    # no value live across the idiv may be in rax or rdx; none across the shift in rcx
    for g_i, (lab, idx) in enumerate(live.locations):
        ins = fn.block(lab).insts[idx]
        for v in keep:
            iv = live.intervals[v]
            if iv.covers(liveness.def_pos(g_i)) and ins.code == I.idiv(b).code:
                assert alloc.assignment[v] not in (R.RAX, R.RDX)
    f = asm.load(i64, (i64, i64, i64))
    for av, bv, sv in [(100, 7, 3), (-100, 7, 1), (12345678901, -13, 5), (-9, -2, 0)]:
        assert interp_int(fn, [av, bv, sv]) == model(av, bv, sv)
        assert f(av, bv, sv) == model(av, bv, sv)
    f.owner.close()


def _clobber_everything():
    """A JIT'd function that writes garbage to every caller-saved register and returns 0."""
    from iced_x86 import Code, Instruction, Register

    buf = CodeBuffer("clobber")
    for name in ("RAX", "RCX", "RDX", "RSI", "RDI", "R8", "R9", "R10", "R11"):
        encode(
            buf,
            Instruction.create_reg_i64(
                Code.MOV_R64_IMM64, getattr(Register, name), -0x5A5A5A5A5A5A5A5B
            ),
        )
    encode(buf, Instruction.create_reg_i64(Code.MOV_R64_IMM64, Register.RAX, 0x7FF8DEAD0000BEEF))
    for k in range(16):
        xmm = getattr(Register, f"XMM{k}")
        encode(buf, Instruction.create_reg_reg(Code.MOVQ_XMM_RM64, xmm, Register.RAX))
    encode(buf, Instruction.create_reg_reg(Code.XOR_R32_RM32, Register.EAX, Register.EAX))
    encode(buf, Instruction.create(Code.RETNQ))
    return load(buf.finish().code)


def test_values_survive_a_call_that_clobbers_caller_saved_registers():
    callee = _clobber_everything()
    g = Gen()
    base, fbase = g.int(), g.flt()
    ints = [g.int() for _ in range(14)]
    flts = [g.flt() for _ in range(6)]
    fp = g.int()
    insts = [I.mov(base, R.RDI), I.mov(fbase, R.XMM0)]
    for k, v in enumerate(ints):
        insts += [I.mov(v, base), I.alu_imm("add", v, k)]
    for k, v in enumerate(flts):
        c = g.int()
        insts += [I.mov_imm(c, k + 1), I.cvtsi2sd(v, c), I.sd("mul", v, fbase)]
    insts += [
        I.mov_imm(fp, call_address(callee.address)),
        I.call(fp, results=(R.RAX,), clobbers=SYSV_AMD64.call_clobbers()),
    ]
    res, fres = g.int(), g.flt()
    insts.append(I.mov(res, R.RAX))  # 0
    for v in ints:
        insts += [I.imul(res, base), I.alu("add", res, v)]
    insts.append(I.cvtsi2sd(fres, res))
    for v in flts:
        insts.append(I.sd("add", fres, v))
    insts += [I.movaps(R.XMM0, fres), I.ret(R.XMM0)]
    fn = VCodeFunction("across_call", [Block("entry", insts)])
    asm = assemble(fn, TARGET)
    caller_saved = SYSV_AMD64.clobbered
    for v in (*ints, *flts):
        loc = asm.allocation.assignment[v]
        assert not (isinstance(loc, PReg) and loc in caller_saved), (v, loc)
    assert asm.allocation.used_callee_saved  # so the frame plan had something to save

    def model(b: int, fb: float) -> float:
        r = 0
        for k in range(14):
            r = s64(s64(r * b) + b + k)
        x = float(r)
        for k in range(6):
            x = x + float(k + 1) * fb
        return x

    f = asm.load(f64, (i64, f64))
    for b, fb in [(3, 1.5), (-7, 0.1), (1 << 20, -2.25)]:
        assert f(b, fb) == model(b, fb)
    f.owner.close()
    callee.close()


def test_allocation_is_deterministic():
    a = assemble(straight_line(11)[0], TARGET).code
    b = assemble(straight_line(11)[0], TARGET).code
    assert a == b
    fn, _, _ = looped(20)
    assert assemble(fn, TARGET).code == assemble(looped(20)[0], TARGET).code


def test_moves_are_coalesced():
    g = Gen()
    a, b, c = g.int(), g.int(), g.int()
    fn = VCodeFunction(
        "add",
        [
            Block(
                "entry",
                [
                    I.mov(a, R.RDI),
                    I.mov(b, R.RSI),
                    I.mov(c, a),
                    I.add(c, b),
                    I.mov(R.RAX, c),
                    I.ret(R.RAX),
                ],
            )
        ],
    )
    alloc = allocate(fn, TARGET)
    assert alloc.moves_removed >= 3
    assert not alloc.spilled


def test_naming_a_scratch_register_is_rejected():
    g = Gen()
    v = g.int()
    fn = VCodeFunction("bad", [Block("entry", [I.mov(v, R.R11), I.mov(R.RAX, v), I.ret(R.RAX)])])
    with pytest.raises(AllocationError, match="scratch"):
        allocate(fn, TARGET)


def test_frame_pointer_target_keeps_rbp_out():
    fn, model = straight_line(2)
    tgt = x86_64_target(frame_pointer=True)
    asm = assemble(fn, tgt, frame_pointer=True)
    assert R.RBP not in set(asm.allocation.assignment.values())
    f = asm.load(i64, (i64,) * 6)
    assert f(1, 2, 3, 4, 5, 6) == model(1, 2, 3, 4, 5, 6)
    f.owner.close()
