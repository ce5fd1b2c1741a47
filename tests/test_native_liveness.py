"""Block liveness and live intervals, loops in particular."""

from __future__ import annotations

import pytest

from kera_core.native import liveness
from kera_core.native.vcode import Block, RegClass, VCodeError, VCodeFunction, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86 import regs as R

INT = RegClass.INT


def v(n: int) -> VReg:
    return VReg(n, INT)


def loop_fn(layout=("entry", "head", "body", "exit")):
    """keep = arg; i = 0; while i < n: i += 1; acc += i;  return keep + acc"""
    keep, n, i, acc = v(0), v(1), v(2), v(3)
    blocks = {
        "entry": Block(
            "entry",
            [
                I.mov(keep, R.RDI),
                I.mov(n, R.RSI),
                I.mov_imm(i, 0),
                I.mov_imm(acc, 0),
                I.jmp("head"),
            ],
            ("head",),
        ),
        "head": Block("head", [I.cmp(i, n), I.branch("ge", "exit", "body")], ("exit", "body")),
        "body": Block("body", [I.alu_imm("add", i, 1), I.add(acc, i), I.jmp("head")], ("head",)),
        "exit": Block("exit", [I.add(acc, keep), I.mov(R.RAX, acc), I.ret(R.RAX)]),
    }
    return VCodeFunction("loop", [blocks[k] for k in layout]), (keep, n, i, acc)


@pytest.mark.parametrize(
    "layout",
    [
        ("entry", "head", "body", "exit"),
        ("entry", "body", "head", "exit"),
        ("entry", "exit", "head", "body"),
    ],
)
def test_value_used_after_loop_is_live_across_the_back_edge(layout):
    fn, (keep, n, i, acc) = loop_fn(layout)
    live = liveness.analyze(fn)
    for b in ("head", "body"):
        assert keep in live.live_in[b] and keep in live.live_out[b]
    assert keep in live.live_out["entry"] and keep in live.live_in["exit"]
    assert n in live.live_out["body"]  # loop invariant, read in head
    assert n not in live.live_in["exit"]  # dead after the loop
    assert i in live.live_out["body"] and i not in live.live_in["exit"]
    iv = live.intervals[keep]
    for b in ("head", "body"):
        lo, hi = live.block_range[b]
        assert all(iv.covers(p) for p in range(lo, hi)), b  # the whole loop
    # n is not live anywhere in exit
    lo, hi = live.block_range["exit"]
    assert not any(live.intervals[n].covers(p) for p in range(lo, hi))


def test_interval_endpoints_follow_the_numbering():
    a, b, c = v(0), v(1), v(2)
    fn = VCodeFunction(
        "f",
        [
            Block(
                "e",
                [
                    I.mov(a, R.RDI),
                    I.mov(b, a),
                    I.add(b, a),
                    I.mov(c, b),
                    I.mov(R.RAX, c),
                    I.ret(R.RAX),
                ],
            )
        ],
    )
    live = liveness.analyze(fn)
    ia, ib, ic = (live.intervals[x] for x in (a, b, c))
    assert ia.ranges == [(liveness.def_pos(0), liveness.use_pos(2) + 1)]
    assert ib.start == liveness.def_pos(1) and ib.end == liveness.use_pos(3) + 1
    assert not ib.overlaps(ic)  # c is born where b dies: they may share a register
    assert live.intervals[R.RAX].ranges == [(liveness.def_pos(4), liveness.use_pos(5) + 1)]


def test_nested_loops_reach_a_fixpoint():
    x, i, j, n = v(0), v(1), v(2), v(3)
    fn = VCodeFunction(
        "nest",
        [
            Block("e", [I.mov(x, R.RDI), I.mov(n, R.RSI), I.mov_imm(i, 0), I.jmp("oh")], ("oh",)),
            Block("oh", [I.cmp(i, n), I.branch("ge", "out", "ob")], ("out", "ob")),
            Block("ob", [I.mov_imm(j, 0), I.jmp("ih")], ("ih",)),
            Block("ih", [I.cmp(j, n), I.branch("ge", "ol", "ib")], ("ol", "ib")),
            Block("ib", [I.alu_imm("add", j, 1), I.jmp("ih")], ("ih",)),
            Block("ol", [I.alu_imm("add", i, 1), I.jmp("oh")], ("oh",)),
            Block("out", [I.mov(R.RAX, x), I.ret(R.RAX)]),
        ],
    )
    live = liveness.analyze(fn)
    for b in ("oh", "ob", "ih", "ib", "ol"):
        assert x in live.live_in[b] and n in live.live_in[b] and i in live.live_in[b], b
    assert j not in live.live_in["ob"] and j in live.live_in["ib"]
    assert live.rounds >= 2


def test_dead_definition_still_occupies_a_point():
    a = v(0)
    fn = VCodeFunction("dead", [Block("e", [I.mov_imm(a, 1), I.mov_imm(R.RAX, 0), I.ret(R.RAX)])])
    iv = liveness.analyze(fn).intervals[a]
    assert iv.ranges == [(1, 2)]


def test_reading_an_undefined_vreg_is_an_error():
    fn = VCodeFunction("u", [Block("e", [I.mov(R.RAX, v(7)), I.ret(R.RAX)])])
    with pytest.raises(VCodeError, match="before any definition"):
        liveness.analyze(fn)
    assert liveness.analyze(fn, allow_undefined=[v(7)]).live_in["e"] == frozenset({v(7)})


def test_reading_a_clobbered_register_is_an_error():
    f = v(0)
    fn = VCodeFunction(
        "c",
        [
            Block(
                "e",
                [
                    I.mov(R.RCX, R.RDI),
                    I.mov_imm(f, 0),
                    I.call(f, clobbers=[R.RCX]),
                    I.mov(R.RAX, R.RCX),
                    I.ret(R.RAX),
                ],
            )
        ],
    )
    with pytest.raises(VCodeError, match="clobbered"):
        liveness.analyze(fn)


def test_malformed_functions_are_rejected():
    with pytest.raises(VCodeError, match="unknown successor"):
        liveness.analyze(VCodeFunction("f", [Block("e", [I.ret()], ("nowhere",))]))
    with pytest.raises(VCodeError, match="not among its successors"):
        liveness.analyze(VCodeFunction("f", [Block("e", [I.jmp("x")]), Block("x", [I.ret()])]))
    with pytest.raises(VCodeError, match="not last"):
        liveness.analyze(VCodeFunction("f", [Block("e", [I.ret(), I.ret()])]))
    with pytest.raises(VCodeError, match="duplicate"):
        liveness.analyze(VCodeFunction("f", [Block("e", [I.ret()]), Block("e", [I.ret()])]))
