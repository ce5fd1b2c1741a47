"""Loop depth from back edges, and the allocator keeping inner-loop values in registers."""

from __future__ import annotations

from kera_core.native import regalloc
from kera_core.native.loopdepth import loop_depths
from kera_core.native.vcode import Block, RegClass, SpillSlot, VCodeFunction, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86 import regs as R
from kera_core.native.x86.target import x86_64_target

INT = RegClass.INT


def test_depths_of_nested_and_sequential_loops():
    fn = VCodeFunction(
        "f",
        [
            Block("entry", [], ("outer",)),
            Block("outer", [], ("inner",)),
            Block("inner", [], ("inner", "latch")),  # a self loop
            Block("latch", [], ("outer", "mid")),
            Block("mid", [], ("second",)),
            Block("second", [], ("second", "exit")),
            Block("exit", []),
        ],
    )
    assert loop_depths(fn) == {
        "entry": 0,
        "outer": 1,
        "inner": 2,
        "latch": 1,
        "mid": 0,
        "second": 1,
        "exit": 0,
    }


def test_values_read_in_the_inner_loop_are_not_the_ones_spilled():
    """More long-lived values than registers: those read only before and after the loop go
    to memory; the loop's own operands stay in registers (no reload inside the loop)."""
    target = x86_64_target()
    n_regs = len(target.allocatable[INT])
    outside = [VReg(k, INT) for k in range(n_regs)]  # read before and after the loop only
    inside = [VReg(100 + k, INT) for k in range(4)]  # read every iteration
    i, n = VReg(200, INT), VReg(201, INT)
    entry = [I.mov_imm(v, k) for k, v in enumerate(outside + inside)]
    entry += [I.mov_imm(i, 0), I.mov_imm(n, 10)]
    entry += [I.add(outside[0], v) for v in outside[1:]]
    body = [I.add(inside[k], inside[(k + 1) % 4]) for k in range(4)]
    body += [I.alu_imm("add", i, 1), I.cmp(i, n), I.branch("l", "loop", "after")]
    after = [I.add(outside[0], v) for v in outside[1:] + inside]
    after += [I.mov(R.RAX, outside[0]), I.ret(R.RAX)]
    fn = VCodeFunction(
        "pressure",
        [
            Block("entry", entry, ("loop",)),
            Block("loop", body, ("loop", "after")),
            Block("after", after),
        ],
    )
    alloc = regalloc.allocate(fn, target)
    assert alloc.spilled, "the test needs more values than registers"
    for v in (*inside, i, n):
        assert not isinstance(alloc.location(v), SpillSlot), v
    loop = alloc.function.block("loop")
    assert len(loop.insts) == len(body)  # no reload or spill code in the loop


def test_a_value_spilled_elsewhere_gets_a_register_in_the_loop_that_reads_it():
    """`v` is live through a stretch with more values than registers (so it is spilled, whole
    interval) and then read by a loop that leaves registers free: inside the loop it sits in
    one of them, loaded once before the loop, and the function still computes the same."""
    import ctypes
    import sys

    from kera_core.native.x86.emit import assemble

    target = x86_64_target()
    n_regs = len(target.allocatable[INT])
    v = VReg(1, INT)
    crowd = [VReg(10 + k, INT) for k in range(n_regs + 2)]
    i, n, acc = VReg(2, INT), VReg(3, INT), VReg(4, INT)
    j, m = VReg(5, INT), VReg(6, INT)
    entry = [I.mov_imm(v, 7)]
    entry += [I.mov_imm(c, k + 1) for k, c in enumerate(crowd)]
    entry += [I.mov_imm(j, 0), I.mov_imm(m, 3)]
    # a first loop reads every one of the crowd: they, not v, deserve the registers there
    first = [I.add(crowd[0], c) for _ in range(4) for c in crowd[1:]]
    first += [I.alu_imm("add", j, 1), I.cmp(j, m), I.branch("l", "first", "mid")]
    mid = [I.mov_imm(i, 0), I.mov_imm(n, 100), I.mov(acc, crowd[0])]
    body = [I.add(acc, v), I.add(acc, v), I.alu_imm("add", i, 1), I.cmp(i, n)]
    body += [I.branch("l", "loop", "after")]
    after = [I.add(acc, v), I.mov(R.RAX, acc), I.ret(R.RAX)]
    fn = VCodeFunction(
        "promote",
        [
            Block("entry", entry, ("first",)),
            Block("first", first, ("first", "mid")),
            Block("mid", mid, ("loop",)),
            Block("loop", body, ("loop", "after")),
            Block("after", after),
        ],
    )
    alloc = regalloc.allocate(fn, target)
    assert isinstance(alloc.location(v), SpillSlot)
    assert len(alloc.function.block("loop").insts) == len(body)  # no reload in the loop
    want = 1 + 12 * sum(range(2, n_regs + 3)) + 7 * 201
    if sys.platform == "linux":
        f = assemble(fn, target).load(ctypes.c_int64, ())
        assert f() == want
        f.owner.close()
