"""Human and tool views of a graph: indented text, JSON and Graphviz DOT.

The text view is also the golden-dump format of the tests, so it is fully
deterministic: regions are printed in topological order and hashes as prefixes.
"""

from __future__ import annotations

import json

from kera_core.ir.cycles import member_index
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Value
from kera_core.ir.provenance import Provenance
from kera_core.ir.types import Type, dim_names_for_display

PREFIX = 10


def short(h: bytes) -> str:
    return h.hex()[:PREFIX]


def _val(v: Value) -> str:
    return f"%{short(v.node)}" + (f".{v.index}" if v.index else "")


def _attr(v) -> str:
    if isinstance(v, bytes):
        j = member_index(v)  # a call inside a recursive component (graph.md "Recursion")
        return short(v) if j is None else f"member#{j}"
    if isinstance(v, Type):
        return str(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(_attr(x) for x in v) + ")"
    return json.dumps(v) if isinstance(v, str) else str(v)


def _node_line(n: Node) -> str:
    ins = ", ".join(_val(v) for v in n.inputs)
    attrs = " ".join(f"{k}={_attr(v)}" for k, v in n.attrs if k not in ("results",))
    types = ", ".join(str(t) for t in n.types)
    parts = [f"%{short(n.hash)} = {n.op}"]
    if ins:
        parts.append(ins)
    if attrs:
        parts.append("{" + attrs + "}")
    return " ".join(parts) + f" : {types}"


def _region(g: Graph, rh: bytes, indent: int, out: list[str], label: str = "region") -> None:
    r = g.regions[rh]
    pad = "  " * indent
    params = ", ".join(str(t) for t in r.params)
    out.append(f"{pad}{label} ^{short(rh)}({params}) {{")
    for n in g.region_nodes(r):
        out.append(f"{pad}  {_node_line(n)}")
        names = {"for": ["body"], "while": ["cond", "body"], "if": ["then", "else"]}.get(n.op, [])
        for i, sub in enumerate(n.regions):
            _region(g, sub, indent + 2, out, names[i] if i < len(names) else "region")
    out.append(f"{pad}  yield " + ", ".join(_val(v) for v in r.yields))
    out.append(f"{pad}}}")


def function_text(g: Graph, f: Function, prov: Provenance | None = None) -> str:
    fp = prov.functions.get(f.name) if prov else None
    dims = fp.dim_names if fp else ()
    with dim_names_for_display(dims):
        vis = "pub " if f.exported else ""
        head = f"{vis}fn {f.name}: {f.type.display(dims)}  fn:{short(f.hash)}"
        if f.component is not None:
            head += f"  component:{short(f.component)}#{f.index}"
        out = [head]
        _region(g, f.region, 1, out, "body")
    return "\n".join(out)


def graph_text(g: Graph, prov: Provenance | None = None, fn: str | None = None) -> str:
    out = [f"graph sha3-256:{g.fingerprint().hex()}"]
    for f in sorted(g.functions.values(), key=lambda f: f.name):
        if fn is None or f.name == fn:
            out.append(function_text(g, f, prov))
    return "\n".join(out) + "\n"


def _node_json(n: Node) -> dict:
    return {
        "hash": n.hash.hex(),
        "op": n.op,
        "inputs": [[v.node.hex(), v.index] for v in n.inputs],
        "types": [str(t) for t in n.types],
        "attrs": {k: _attr(v) for k, v in n.attrs},
        "regions": [r.hex() for r in n.regions],
    }


def graph_json(g: Graph, prov: Provenance | None = None, fn: str | None = None) -> str:
    fns = [f for f in sorted(g.functions.values(), key=lambda f: f.name) if fn in (None, f.name)]
    regions: dict[str, dict] = {}
    nodes: dict[str, dict] = {}
    for f in fns:
        for rh in g.all_regions(f.region):
            r = g.regions[rh]
            regions[rh.hex()] = {
                "params": [str(t) for t in r.params],
                "yields": [[v.node.hex(), v.index] for v in r.yields],
            }
            for n in g.region_nodes(r):
                j = _node_json(n)
                if prov is not None:
                    j["spans"] = [[s.start, s.end] for s in prov.spans_of(n.hash)]
                nodes[n.hash.hex()] = j
    doc = {
        "fingerprint": "sha3-256:" + g.fingerprint().hex(),
        "functions": [
            {
                "name": f.name,
                "exported": f.exported,
                "hash": "sha3-256:" + f.hash.hex(),
                "type": str(f.type),
                "region": f.region.hex(),
                **(
                    {"component": f.component.hex(), "index": f.index}
                    if f.component is not None
                    else {}
                ),
            }
            for f in fns
        ],
        "regions": regions,
        "nodes": nodes,
    }
    return json.dumps(doc, indent=2)


def graph_dot(g: Graph, prov: Provenance | None = None, fn: str | None = None) -> str:
    out = ["digraph kera {", '  node [shape=box, fontname="monospace"];']
    counter = [0]

    def region(rh: bytes, scope: str, indent: str) -> dict[bytes, str]:
        r = g.regions[rh]
        counter[0] += 1
        cid = counter[0]
        out.append(f'{indent}subgraph cluster_{cid} {{ label="{scope} ^{short(rh)}";')
        ids: dict[bytes, str] = {}
        for n in g.region_nodes(r):
            nid = f"n{cid}_{short(n.hash)}"
            ids[n.hash] = nid
            label = f"{n.op}\\n{', '.join(str(t) for t in n.types)}"
            out.append(f'{indent}  {nid} [label="{label}"];')
            for v in n.inputs:
                out.append(f"{indent}  {ids[v.node]} -> {nid};")
            for sub in n.regions:
                region(sub, n.op, indent + "  ")
        out.append(f"{indent}}}")
        return ids

    for f in sorted(g.functions.values(), key=lambda f: f.name):
        if fn in (None, f.name):
            region(f.region, f"fn {f.name}", "  ")
    out.append("}")
    return "\n".join(out) + "\n"
