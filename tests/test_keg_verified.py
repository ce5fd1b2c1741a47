"""Loaded graphs are verified: a `.keg` whose every hash is right but whose graph breaks
the IR's rules (an op's types, a region's parameters, a function's signature) is refused
with KegError("ill-typed") before any consumer sees it. The files are made by mutating a
node of a real program and resealing: every hash that depends on it is recomputed, so only
the verifier can tell."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kera_core.analysis import analyze
from kera_core.ir.cycles import component_hash
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.types import FnType, Prim, Tensor
from kera_core.ir.verify import verify
from kera_core.keg import KegError, read_keg, write_keg

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
PRIMS = ["f32", "f64", "i32", "i64", "u8", "bool"]


def reseal(g: Graph, old: bytes, new: Node) -> Graph:
    """``g`` with node ``old`` replaced by ``new``, every dependent rehashed."""
    nodes = {h: n for h, n in g.nodes.items() if h != old}
    regions = dict(g.regions)
    fns = dict(g.functions)
    nmap, rmap = {old: new.hash}, {}
    nodes[new.hash] = new
    changed = True
    while changed:
        changed = False
        for h, n in list(nodes.items()):
            ins = tuple(Value(nmap.get(v.node, v.node), v.index) for v in n.inputs)
            regs = tuple(rmap.get(r, r) for r in n.regions)
            if ins != n.inputs or regs != n.regions:
                m = Node(n.op, ins, n.types, n.attrs, regs)
                del nodes[h]
                nodes[m.hash] = m
                nmap[h] = m.hash
                for k, v in list(nmap.items()):
                    if v == h:
                        nmap[k] = m.hash
                changed = True
        for h, r in list(regions.items()):
            ys = tuple(Value(nmap.get(v.node, v.node), v.index) for v in r.yields)
            if ys != r.yields:
                q = Region(r.params, ys)
                del regions[h]
                regions[q.hash] = q
                rmap[h] = q.hash
                for k, v in list(rmap.items()):
                    if v == h:
                        rmap[k] = q.hash
                changed = True
    for name, f in fns.items():
        if f.region in rmap:
            fns[name] = Function(
                f.name, f.type, rmap[f.region], f.exported, f.outputs, f.component, f.index
            )
    # a recursive component is rehashed from its members' new bodies (docs/graph.md)
    for comp in {f.component for f in fns.values() if f.component is not None}:
        members = sorted((f for f in fns.values() if f.component == comp), key=lambda f: f.index)
        ch = component_hash([f.body_hash for f in members])
        for f in members:
            fns[f.name] = Function(f.name, f.type, f.region, f.exported, f.outputs, ch, f.index)
    out = Graph()
    out.nodes, out.regions, out.functions = nodes, regions, fns
    return out


def other_type(t, rng: random.Random):
    if isinstance(t, Prim):
        return Prim(rng.choice([p for p in PRIMS if p != t.name]))
    if isinstance(t, Tensor):
        return Tensor(other_type(t.elem, rng), t.shape, t.space)
    return None


def mutants(g: Graph, rng: random.Random, n: int):
    """Nodes of ``g`` with one output type changed (the op's rule no longer holds)."""
    cands = [h for h, x in g.nodes.items() if x.op not in ("param",) and x.types]
    rng.shuffle(cands)
    for h in cands[:n]:
        x = g.nodes[h]
        t = other_type(x.types[0], rng)
        if t is None:
            continue
        yield h, Node(x.op, x.inputs, (t, *x.types[1:]), x.attrs, x.regions)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_resealed_ill_typed_graphs_are_refused(path: Path) -> None:
    g = analyze(path.read_text()).module.graph
    assert not verify(g)
    rng = random.Random(path.stem)
    tried = 0
    for old, new in mutants(g, rng, 12):
        bad = reseal(g, old, new)
        if not verify(bad):  # a change the rules allow (rare): not a defect
            continue
        data = write_keg(bad)  # hashes, checksums and fingerprint all consistent
        with pytest.raises(KegError) as info:
            read_keg(data)
        # a mutated callee also changes its hash: its callers then name a missing function
        assert info.value.kind in ("ill-typed", "bad-callee"), info.value
        tried += 1
    assert tried > 0


@pytest.mark.parametrize("path", EXAMPLES[:4], ids=lambda p: p.stem)
def test_a_function_whose_signature_lies_is_refused(path: Path) -> None:
    g = analyze(path.read_text()).module.graph
    called = {v for n in g.nodes.values() for _, v in n.attrs if isinstance(v, bytes)}
    for name, f in list(g.functions.items()):
        wrong = other_type(f.type.result, random.Random(name))
        if wrong is None or f.hash in called:  # a callee's new hash would break its callers
            continue
        lying = Graph()
        lying.nodes, lying.regions = dict(g.nodes), dict(g.regions)
        lying.functions = dict(g.functions)
        t = FnType(f.type.n_dims, f.type.params, wrong, f.type.effects)
        lying.functions[name] = Function(f.name, t, f.region, f.exported, f.outputs)
        if ("result", -1) not in f.outputs:
            continue
        with pytest.raises(KegError) as info:
            read_keg(write_keg(lying))
        assert info.value.kind == "ill-typed"
        return
    pytest.fail("no function with a result to lie about")
