"""The list scheduler: valid orders on random DAGs, priorities, and unchanged results."""

from __future__ import annotations

import ctypes
import itertools
import random
import sys
from dataclasses import dataclass

import pytest

from kera_core.native.schedule import dependence_graph, schedule_block
from kera_core.native.vcode import Block, PReg, RegClass, VCodeFunction, VReg
from kera_core.native.x86 import inst as I
from kera_core.native.x86 import interp
from kera_core.native.x86 import regs as R
from kera_core.native.x86.emit import assemble
from kera_core.native.x86.target import latency, x86_64_target

INT = RegClass.INT


@dataclass(frozen=True)
class Fake:
    """A protocol-only instruction for random dependence graphs."""

    n: int
    d: tuple = ()
    u: tuple = ()
    c: tuple = ()
    rd: bool = False
    wr: bool = False
    fx: bool = False
    term: bool = False
    lat: int = 1

    def defs(self):
        return self.d

    def uses(self):
        return self.u

    def clobbers(self):
        return self.c

    def is_move(self):
        return None

    def branch_targets(self):
        return ()

    def is_terminator(self):
        return self.term

    def has_side_effect(self):
        return self.fx

    def reads_memory(self):
        return self.rd

    def writes_memory(self):
        return self.wr

    def rename(self, mapping):
        return self


def random_block(rnd: random.Random, n: int) -> list[Fake]:
    regs = [VReg(k, INT) for k in range(8)] + [PReg(f"p{k}", INT, k) for k in range(2)]
    out = []
    for k in range(n):
        kind = rnd.random()
        out.append(
            Fake(
                k,
                d=tuple(rnd.sample(regs, rnd.randrange(0, 3))),
                u=tuple(rnd.sample(regs, rnd.randrange(0, 3))),
                c=(regs[8],) if rnd.random() < 0.05 else (),
                rd=0.5 < kind < 0.7,
                wr=0.7 < kind < 0.8,
                fx=0.8 < kind < 0.85,
                lat=rnd.choice([1, 1, 3, 5, 14]),
            )
        )
    out.append(Fake(n, u=(regs[0],), term=True))
    return out


def must_precede(a: Fake, b: Fake) -> bool:
    """Brute-force: does ``a`` (earlier) have to stay before ``b``?"""
    da, db = set(a.d) | set(a.c), set(b.d) | set(b.c)
    if da & set(b.u) or set(a.u) & db or da & db:
        return True
    if (a.wr and (b.rd or b.wr)) or (a.rd and b.wr):
        return True
    return a.fx or b.fx or a.term or b.term


@pytest.mark.parametrize("seed", range(40))
def test_random_blocks_schedule_to_valid_orders(seed):
    rnd = random.Random(seed)
    block = random_block(rnd, rnd.randrange(2, 60))
    out = schedule_block(block, lambda x: x.lat)
    assert sorted(x.n for x in out) == list(range(len(block)))
    pos = {x.n: k for k, x in enumerate(out)}
    for a, b in itertools.combinations(block, 2):
        if must_precede(a, b):
            assert pos[a.n] < pos[b.n], (a, b)
    assert out[-1].term
    assert schedule_block(block, lambda x: x.lat) == out  # deterministic


def test_graph_edges_only_go_forward_with_latencies():
    rnd = random.Random(1)
    block = random_block(rnd, 40)
    g = dependence_graph(block, lambda x: x.lat)
    for i, j, w in g.edges():
        assert i < j and w >= 0
    a, b = VReg(0, INT), VReg(1, INT)
    pair = [Fake(0, d=(a,), lat=7), Fake(1, u=(a,), d=(b,))]
    assert dependence_graph(pair, lambda x: x.lat).edges() == [(0, 1, 7)]


def test_critical_path_goes_first_and_loads_reorder_with_loads():
    v = [VReg(k, INT) for k in range(10)]
    block = [
        Fake(0, d=(v[0],)),  # short independent work
        Fake(1, d=(v[1],)),
        Fake(2, d=(v[2],), rd=True, lat=5),  # load feeding a long chain
        Fake(3, d=(v[3],), u=(v[2],), lat=3),
        Fake(4, d=(v[4],), u=(v[3],), lat=3),
        Fake(5, d=(v[5],), rd=True, lat=5),  # a second load: may pass nothing but loads
        Fake(6, u=(v[0], v[1], v[4], v[5]), term=True),
    ]
    out = [x.n for x in schedule_block(block, lambda x: x.lat)]
    assert out[0] == 2 and out.index(5) < out.index(0)
    assert out[-1] == 6
    store_between = block[:5] + [Fake(7, u=(v[1],), wr=True)] + block[5:]
    out2 = [x.n for x in schedule_block(store_between, lambda x: x.lat)]
    assert out2.index(2) < out2.index(7) < out2.index(5)


def mem_program(seed: int):
    """Loads, stores and arithmetic on a caller buffer (rdi) — results depend on the order of
    memory operations, so a wrong schedule gives a different answer."""
    rnd = random.Random(seed)
    p = VReg(0, INT)
    vals = [VReg(1 + k, INT) for k in range(6)]
    insts = [I.mov(p, R.RDI)]
    for k, x in enumerate(vals):
        insts.append(I.load(x, I.mem(p, 8 * k)))
    nxt = 100
    for _ in range(30):
        r = rnd.random()
        a, b = rnd.choice(vals), rnd.choice(vals)
        if r < 0.3:
            insts.append(I.store(I.mem(p, 8 * rnd.randrange(6)), a))
        elif r < 0.5:
            t = VReg(nxt, INT)
            nxt += 1
            insts.append(I.load(t, I.mem(p, 8 * rnd.randrange(6))))
            vals[rnd.randrange(6)] = t
        else:
            t = VReg(nxt, INT)
            nxt += 1
            insts += [I.mov(t, a), I.alu(rnd.choice(["add", "imul", "xor", "sub"]), t, b)]
            vals[rnd.randrange(6)] = t
    acc = VReg(nxt, INT)
    insts.append(I.mov_imm(acc, 0))
    for x in vals:
        insts.append(I.add(acc, x))
    insts += [I.mov(R.RAX, acc), I.ret(R.RAX)]
    return VCodeFunction(f"mem{seed}", [Block("e", insts)])


@pytest.mark.parametrize("seed", range(8))
def test_scheduling_does_not_change_results(seed):
    fn = mem_program(seed)
    sched = VCodeFunction(fn.name, [Block("e", schedule_block(fn.blocks[0].insts, latency))])
    assert sorted(map(id, sched.blocks[0].insts)) == sorted(map(id, fn.blocks[0].insts))
    base = 0x10000
    mem = {base + 8 * k: 3 * k + 1 for k in range(6)}
    want = interp.run(fn, {R.RDI: base}, mem)
    got = interp.run(sched, {R.RDI: base}, mem)
    assert got.regs[R.RAX] == want.regs[R.RAX]
    assert got.memory == want.memory
    if sys.platform == "linux":
        f = assemble(fn, x86_64_target(), schedule=True).load(ctypes.c_int64, (ctypes.c_void_p,))
        buf = (ctypes.c_int64 * 6)(*[3 * k + 1 for k in range(6)])
        assert f(ctypes.addressof(buf)) == want.regs[R.RAX]
        assert list(buf) == [want.memory[base + 8 * k] for k in range(6)]
        f.owner.close()


def test_compare_stays_next_to_its_branch():
    i, n, t, u = VReg(0, INT), VReg(1, INT), VReg(2, INT), VReg(3, INT)
    # the imul chain is the critical path, but every add/imul writes the flags: none of them may
    # move between the cmp and the branch that reads its flags
    block = [
        I.mov_imm(t, 5),
        I.mov_imm(u, 7),
        I.imul(t, u),
        I.imul(t, u),
        I.cmp(i, n),
        I.branch("l", "a", "b"),
    ]
    out = schedule_block(block, latency)
    assert out[-1] is block[5] and out[-2] is block[4]
    g = dependence_graph(block, latency)
    assert (4, 5, 1) in g.edges()  # flags: true dependence cmp -> branch


def max_live(order, live_in, live_out) -> int:
    """The most virtual registers live at once when ``order`` runs (brute force)."""
    live = set(live_in)
    peak = len(live)
    for k, x in enumerate(order):
        later = {r for y in order[k + 1 :] for r in y.uses()} | set(live_out)
        # a use's register is free for the instruction's own result
        peak = max(peak, len({r for r in live if r in later} | set(x.d)))
        live = {r for r in live | set(x.d) if r in later}
    return peak


def jammed_body(chains: int):
    """A jammed loop body: ``chains`` accumulators (live in and out), each updated by
    load → mul → add, the loads all ready at once (as the vector matmul's k loop is)."""
    accs = [VReg(100 + c, INT) for c in range(chains)]
    block, n = [], 0
    for c in range(chains):
        x, p = VReg(200 + c, INT), VReg(300 + c, INT)
        block += [
            Fake(n, d=(x,), rd=True, lat=5),
            Fake(n + 1, d=(p,), u=(x,), lat=3),
            Fake(n + 2, d=(accs[c],), u=(accs[c], p), lat=3),
        ]
        n += 3
    block.append(Fake(n, term=True))
    return block, frozenset(accs)


def test_pressure_aware_order_keeps_the_accumulators_in_registers():
    block, accs = jammed_body(8)
    plain = schedule_block(block, lambda x: x.lat)
    assert max_live(plain, accs, accs) == 8 + 8  # every load issued first: 16 live
    limits = {INT: 12}
    out = schedule_block(block, lambda x: x.lat, accs, accs, limits)
    assert sorted(x.n for x in out) == list(range(len(block)))
    assert max_live(out, accs, accs) <= 12
    assert schedule_block(block, lambda x: x.lat, accs, accs, limits) == out  # deterministic


@pytest.mark.parametrize("seed", range(40))
def test_random_blocks_under_pressure_schedule_to_valid_orders(seed):
    rnd = random.Random(seed)
    block = random_block(rnd, rnd.randrange(2, 60))
    live_out = frozenset(VReg(k, INT) for k in range(8) if rnd.random() < 0.4)
    live_in = frozenset(VReg(k, INT) for k in range(8) if rnd.random() < 0.5)
    out = schedule_block(block, lambda x: x.lat, live_in, live_out, {INT: rnd.randrange(1, 6)})
    pos = {x.n: k for k, x in enumerate(out)}
    assert sorted(pos) == list(range(len(block)))
    for a, b in itertools.combinations(block, 2):
        if must_precede(a, b):
            assert pos[a.n] < pos[b.n], (a, b)
