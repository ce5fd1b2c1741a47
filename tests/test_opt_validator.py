"""The validator runs after every pass and names the pass that broke the graph.

Each test plugs a deliberately broken pass into the pass manager and checks that
`optimize` stops with an :class:`OptimizerError` naming that pass, the kind of
violation, and the node (hash prefix and opcode).
"""

from __future__ import annotations

import pytest

from kera_core.analysis import analyze
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.types import F32, F64, I64
from kera_core.opt import ConstFold, OptimizerError, optimize
from kera_core.opt.rewrite import copy_store, param_value

SRC = """
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N { y[i] = a * x[i] + y[i]; }
}
pub fn scalar(a: f32, b: f32) -> f32 { a * b + 1.0f32 }
"""


def graph() -> Graph:
    a = analyze(SRC)
    assert not a.has_errors
    return a.module.graph


class Broken:
    """A pass that applies ``damage`` to a copy of its input."""

    def __init__(self, name, damage) -> None:
        self.name = name
        self.damage = damage

    def run(self, g: Graph) -> Graph:
        out = copy_store(g)
        self.damage(out)
        return out


def set_yields(g: Graph, fn: str, yields: tuple[Value, ...]) -> None:
    f = g.functions[fn]
    r = g.regions[f.region]
    nr = g.add_region(Region(r.params, yields))
    g.functions[fn] = Function(f.name, f.type, nr.hash, f.exported, f.outputs)


def node_of(g: Graph, fn: str, op: str) -> Node:
    for rh in g.all_regions(g.functions[fn].region):
        for n in g.region_nodes(rh):
            if n.op == op:
                return n
    raise AssertionError(op)


def broken_run(name, damage) -> OptimizerError:
    with pytest.raises(OptimizerError) as ei:
        optimize(graph(), passes=[ConstFold(), Broken(name, damage)])
    e = ei.value
    assert e.pass_name == name
    assert f"`{name}`" in str(e)
    assert e.violations
    return e


def test_hash_mismatch():
    def damage(g: Graph) -> None:
        n = node_of(g, "scalar", "mul")
        g.nodes[n.hash] = Node("add", n.inputs, n.types, n.attrs)  # stored under the old key

    e = broken_run("break-hash", damage)
    v = e.violations[0]
    assert v.kind == "hash"
    assert v.node.hex()[:10] in str(e) and "(`add`)" in str(e)


def test_dangling_input():
    def damage(g: Graph) -> None:
        ghost = Value(b"\x01" * 32, 0)
        bad = g.add(Node("neg", (ghost,), (F32,)))
        set_yields(g, "scalar", (bad.out(0),))

    e = broken_run("break-dangling", damage)
    assert e.violations[0].kind == "dangling"
    assert "0101010101" in str(e)


def test_wrong_edge_type():
    def damage(g: Graph) -> None:
        n = node_of(g, "scalar", "add")
        wrong = g.add(Node("add", n.inputs, (F64,), n.attrs))  # f32 + f32 stored as f64
        set_yields(g, "scalar", (wrong.out(0),))

    e = broken_run("break-type", damage)
    v = e.violations[0]
    assert v.kind == "type" and "f64" in v.message
    assert f"at node {v.node.hex()[:10]} (`add`)" in str(e)


def test_open_region():
    def damage(g: Graph) -> None:
        loop = node_of(g, "saxpy", "for")
        body = g.regions[loop.regions[0]]
        carried_t = body.params[1]
        outside = param_value(g, 7, carried_t)  # not a parameter of the body
        nb = g.add_region(Region(body.params, (outside,)))
        nl = g.add(Node("for", loop.inputs, loop.types, loop.attrs, (nb.hash,)))
        set_yields(g, "saxpy", (nl.out(0),))

    e = broken_run("break-closure", damage)
    v = e.violations[0]
    assert v.kind == "open-region" and "(`param`)" in str(e)


def test_a_crashing_pass_is_named():
    def damage(g: Graph) -> None:
        raise KeyError("oops")

    with pytest.raises(OptimizerError) as ei:
        optimize(graph(), passes=[Broken("crashy", damage)])
    assert ei.value.pass_name == "crashy" and "KeyError" in str(ei.value)


def test_a_broken_input_is_reported_before_any_pass():
    g = graph()
    n = node_of(g, "scalar", "mul")
    g.nodes[n.hash] = Node("sub", n.inputs, n.types, n.attrs)
    with pytest.raises(OptimizerError) as ei:
        optimize(g)
    assert ei.value.pass_name == "<input>"


def test_validation_can_be_skipped_but_is_on_by_default():
    def damage(g: Graph) -> None:
        n = node_of(g, "scalar", "mul")
        g.nodes[n.hash] = Node("add", n.inputs, n.types, n.attrs)

    r = optimize(graph(), passes=[Broken("quiet", damage)], max_iterations=1, validate=False)
    assert r.report.runs[0].name == "quiet"


def test_the_exported_interface_may_not_change():
    def damage(g: Graph) -> None:
        del g.functions["scalar"]

    with pytest.raises(OptimizerError) as ei:
        optimize(graph(), passes=[Broken("drop-export", damage)])
    assert ei.value.pass_name == "drop-export" and "scalar" in str(ei.value)


def test_a_dim_outside_the_function_is_caught():
    def damage(g: Graph) -> None:
        bad = g.add(Node("dim", (), (I64,), {"index": 3}))
        cast = g.add(Node("cast", (bad.out(0),), (F32,), {"to": F32}))
        set_yields(g, "scalar", (cast.out(0),))

    with pytest.raises(OptimizerError) as ei:
        optimize(graph(), passes=[Broken("bad-dim", damage)])
    assert ei.value.pass_name == "bad-dim" and "no dimension 3" in str(ei.value)
