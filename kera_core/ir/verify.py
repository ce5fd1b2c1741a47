"""The invariant validator: a graph is well formed, whoever built or rewrote it.

Checks, for every function reachable region:
- hash consistency: every stored node and region rehashes to its key;
- dependency integrity: inputs exist, output indices are in range, regions exist,
  no cycles, and regions are closed (a region reaches only its own parameters);
- edge types: re-running each op's type rule over its input types gives the
  stored output types; region parameter and yield types match what their
  control-flow node passes in and expects.

Returns a list of :class:`Violation`; the optimizer turns one into an error that
names the pass and the node.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ir import ops
from kera_core.ir.cycles import calls_outside_members, component_errors, member_index, member_ref
from kera_core.ir.graph import Graph
from kera_core.ir.node import Node, Region
from kera_core.ir.types import TOKEN, RangeType, Type, strip_ref


@dataclass(frozen=True)
class Violation:
    kind: str  # hash | dangling | cycle | open-region | type | region-signature | signature | component
    node: bytes | None
    message: str

    def __str__(self) -> str:
        where = f" at node {self.node.hex()[:10]}" if self.node else ""
        return f"{self.kind}{where}: {self.message}"


def _same(a: Type, b: Type) -> bool:
    """Dataflow equality: a `&T` argument carries a `T` value."""
    return strip_ref(a) == strip_ref(b)


def verify(g: Graph) -> list[Violation]:
    out: list[Violation] = []
    for h, n in g.nodes.items():
        if Node(n.op, n.inputs, n.types, n.attrs, n.regions).hash != h:
            out.append(Violation("hash", h, f"`{n.op}` does not rehash to its key"))
    for h, r in g.regions.items():
        if Region(r.params, r.yields).hash != h:
            out.append(Violation("hash", None, f"region {h.hex()[:10]} does not rehash to its key"))
    seen: set[bytes] = set()  # regions shared between functions are checked once
    fn_hashes = {f.hash for f in g.functions.values()}
    # a call inside a recursive component names a member by position (ir/cycles.py)
    sizes = [f.index + 1 for f in g.functions.values() if f.component is not None]
    fn_hashes |= {member_ref(j) for j in range(max(sizes, default=0))}
    for msg in component_errors(g):
        out.append(Violation("component", None, msg))
    for h in sorted(calls_outside_members(g)):
        if member_index(g.nodes[h].attr("callee")) is not None:
            out.append(Violation("dangling", h, "a member reference outside a recursive component"))
    for f in g.functions.values():
        if f.region not in g.regions:
            out.append(Violation("dangling", None, f"function `{f.name}` has no region"))
            continue
        _region(g, f.region, out, seen, fn_hashes)
        _signature(g, f, out)  # after the body: a wrong op is the first thing to report
    return out


def _signature(g: Graph, f, out: list[Violation]) -> None:
    """A function's region takes its parameters (after the effect token, if it has
    effects) and yields the token, then its ``outputs``: the result, or the final value of
    a `&mut` parameter."""
    r = g.regions[f.region]
    token = (TOKEN,) if f.type.effects else ()
    want_params = token + tuple(f.type.params)
    if len(r.params) != len(want_params) or not all(
        _same(a, b) for a, b in zip(r.params, want_params, strict=False)
    ):
        out.append(
            Violation(
                "signature", None, f"function `{f.name}`: region parameters differ from its type"
            )
        )
        return
    want: list[Type] = list(token)
    for kind, i in f.outputs:
        if kind == "result":
            want.append(f.type.result)
        elif kind == "param" and isinstance(i, int) and 0 <= i < len(f.type.params):
            want.append(strip_ref(f.type.params[i]))
        else:
            out.append(Violation("signature", None, f"function `{f.name}`: bad output {kind!r}"))
            return
    got = []
    for y in r.yields:
        n = g.nodes.get(y.node)
        if n is None or y.index >= len(n.types):
            return  # reported as dangling by the region walk
        got.append(n.types[y.index])
    if len(got) != len(want) or not all(_same(a, b) for a, b in zip(got, want, strict=False)):
        out.append(
            Violation("signature", None, f"function `{f.name}`: yields differ from its type")
        )


def _region(
    g: Graph, rh: bytes, out: list[Violation], seen: set[bytes], fn_hashes: set[bytes]
) -> None:
    if rh in seen:
        return
    seen.add(rh)
    r = g.regions[rh]
    state: dict[bytes, int] = {}  # 1 visiting, 2 done
    for y in r.yields:
        if not _walk(g, y.node, r, state, out):
            return
        if y.node in g.nodes and y.index >= len(g.nodes[y.node].types):
            out.append(Violation("dangling", y.node, "yield of a missing output"))
    for h, st in state.items():
        if st != 2 or h not in g.nodes:
            continue
        n = g.nodes[h]
        _check_node(g, n, r, out, fn_hashes)
        for sub in n.regions:
            if sub not in g.regions:
                out.append(Violation("dangling", h, f"region {sub.hex()[:10]} is missing"))
            else:
                _region(g, sub, out, seen, fn_hashes)


def _walk(g: Graph, start: bytes, r: Region, state: dict[bytes, int], out: list[Violation]) -> bool:
    stack = [(start, 0)]
    while stack:
        h, i = stack.pop()
        n = g.nodes.get(h)
        if n is None:
            out.append(Violation("dangling", h, "input node is missing"))
            return False
        if i == 0:
            if state.get(h) == 2:
                continue
            if state.get(h) == 1:
                out.append(Violation("cycle", h, "the node depends on itself"))
                return False
            state[h] = 1
        if i < len(n.inputs):
            stack.append((h, i + 1))
            child = n.inputs[i].node
            if state.get(child) == 1:
                out.append(Violation("cycle", child, "the node depends on itself"))
                return False
            if state.get(child) != 2:
                stack.append((child, 0))
        else:
            state[h] = 2
    return True


def _check_node(g: Graph, n: Node, r: Region, out: list[Violation], fn_hashes: set[bytes]) -> None:
    in_types = []
    for v in n.inputs:
        src = g.nodes[v.node]
        if v.index >= len(src.types):
            out.append(
                Violation("dangling", n.hash, f"input refers to output {v.index} of `{src.op}`")
            )
            return
        in_types.append(src.types[v.index])
    if n.op == "param":
        i = n.attr("index")
        if not isinstance(i, int) or i >= len(r.params) or not _same(r.params[i], n.types[0]):
            out.append(
                Violation("open-region", n.hash, f"parameter {i} is not a parameter of its region")
            )
        return
    if n.op not in ops.REGISTRY:
        out.append(Violation("type", n.hash, f"unknown opcode `{n.op}`"))
        return
    try:
        expect = ops.infer(n.op, tuple(in_types), dict(n.attrs))
    except ops.TypeRuleError as e:
        out.append(Violation("type", n.hash, f"`{n.op}`: {e}"))
        return
    if len(expect) != len(n.types) or not all(
        _same(a, b) for a, b in zip(expect, n.types, strict=False)
    ):
        out.append(
            Violation(
                "type",
                n.hash,
                f"`{n.op}` stores types {list(map(str, n.types))}, its rule gives {list(map(str, expect))}",
            )
        )
        return
    if n.op in ("if", "for", "while"):
        _check_control(g, n, in_types, out)
    elif n.op == "call" and n.attr("callee") not in fn_hashes:
        out.append(Violation("dangling", n.hash, "call of a function that is not in the graph"))


def _check_control(g: Graph, n: Node, in_types: list[Type], out: list[Violation]) -> None:
    regions = [g.regions.get(h) for h in n.regions]
    if any(r is None for r in regions):
        return
    want = {"if": 2, "for": 1, "while": 2}[n.op]
    if len(regions) != want:
        out.append(Violation("region-signature", n.hash, f"`{n.op}` needs {want} region(s)"))
        return
    results = list(n.types)
    if n.op == "if":
        passed = in_types[1:]
        for r in regions:
            _sig(n, r, passed, results, out)
    elif n.op == "for":
        rng = in_types[0]
        if not isinstance(rng, RangeType):
            out.append(Violation("type", n.hash, "`for` needs a range first"))
            return
        _sig(n, regions[0], [rng.elem, *in_types[1:]], results, out)
    else:
        from kera_core.ir.types import BOOL

        _sig(n, regions[0], in_types, [BOOL], out)
        _sig(n, regions[1], in_types, results, out)


def _sig(n: Node, r: Region, params: list[Type], yields: list[Type], out: list[Violation]) -> None:
    if len(r.params) < len(params) and n.op != "if":
        out.append(Violation("region-signature", n.hash, "region has fewer parameters than inputs"))
    if len(r.params) != len(params) or not all(
        _same(a, b) for a, b in zip(r.params, params, strict=False)
    ):
        out.append(
            Violation(
                "region-signature",
                n.hash,
                f"`{n.op}` passes ({', '.join(map(str, params))}) to a region taking"
                f" ({', '.join(map(str, r.params))})",
            )
        )
    if len(r.yields) != len(yields):
        out.append(
            Violation(
                "region-signature",
                n.hash,
                f"region yields {len(r.yields)} values, `{n.op}` expects {len(yields)}",
            )
        )


__all__ = ["TOKEN", "Violation", "verify"]
