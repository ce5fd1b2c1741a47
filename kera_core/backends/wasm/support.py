"""What the WebAssembly backend can compile, and why not the rest.

`unsupported` walks a function, every region nested in it and every function it calls,
and returns one reason per construct the emitter does not handle. A target that cannot
keep a clause of docs/semantics.md says so here, at compile time — never by running
and giving a different number.
"""

from __future__ import annotations

from kera_core.backends.wasm import structs
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node
from kera_core.ir.types import Prim, RangeType, Struct, Tensor, TokenType, Type, Unit, strip_ref

ELEMENTWISE_BIN = {
    "add",
    "sub",
    "mul",
    "div",
    "rem",
    "minimum",
    "maximum",
    "and",
    "or",
    "xor",
    "shl",
    "shr",
    "land",
    "lor",
}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
TERNARY = {"fma"}
UNARY = {"neg", "not", "abs", "sqrt", "cast", "exp", "log", "tanh", "sigmoid"}
REDUCE = {"sum", "max", "min", "mean", "dot"}
CONTROL = {"if", "for", "while", "call", "range"}
LEAVES = {"const", "param", "dim"}
TENSOR = {"index", "update", "full", "select", "move_to", "copy_to"}
COMPOSITE = {"array", "argmax", "matmul", "conv1d", "softmax", "layernorm"}
STRUCTS = {"struct", "field", "set_field"}
SUPPORTED = (
    ELEMENTWISE_BIN
    | TERNARY
    | COMPARE
    | UNARY
    | REDUCE
    | CONTROL
    | LEAVES
    | TENSOR
    | COMPOSITE
    | STRUCTS
)

# an operation outside SUPPORTED is one the shared loop layer lowers and wasm's own emitter
# does not (axis forms, shape operations, exact functions, argmin, …)
NOT_YET = "the wasm backend does not lower from the shared loop layer yet: issue 14"


def _type_ok(t: Type) -> str | None:
    t = strip_ref(t)
    if isinstance(t, Struct):
        if structs.fields_ok(t):
            return None
        return f"struct type `{t}` has a field that is not a scalar or a struct"
    if isinstance(t, Prim | Tensor | Unit | TokenType | RangeType):
        return None
    return f"type `{t}` is not supported"


def _node_reason(g: Graph, n: Node) -> str | None:
    if n.op not in SUPPORTED and n.op != "print":
        return f"`{n.op}` is not emitted yet ({NOT_YET})"
    if n.attr("axis") is not None:
        return f"`{n.op}` along an axis is not emitted yet ({NOT_YET})"
    for t in n.types:
        r = _type_ok(t)
        if r:
            return r
    in_types = [g.type_of(v) for v in n.inputs]
    for t in in_types:
        r = _type_ok(t)
        if r:
            return r
    if n.op == "matmul" and _elem(in_types[0]).name == "bool":
        return "`matmul` of `bool` tensors is not emitted (the interpreter's sum of bools is an or)"
    return None


def _elem(t: Type) -> Prim:
    t = strip_ref(t)
    return t.elem if isinstance(t, Tensor) else t  # type: ignore[return-value]


def reachable(g: Graph, fn: Function) -> list[Function]:
    """``fn`` and every function it calls, directly or not (``fn`` first)."""
    by_hash = {f.hash: f for f in g.functions.values()}
    out: list[Function] = []
    seen: set[bytes] = set()
    todo = [fn]
    while todo:
        f = todo.pop()
        if f.hash in seen:
            continue
        seen.add(f.hash)
        out.append(f)
        for rh in g.all_regions(f.region):
            for n in g.region_nodes(rh):
                if n.op == "call":
                    todo.append(by_hash[n.attr("callee")])
    return out


def unsupported(g: Graph, fn_name: str) -> list[str]:
    fn = g.functions.get(fn_name)
    if fn is None:
        return [f"no function `{fn_name}` in the graph"]
    reasons: list[str] = []
    for f in reachable(g, fn):
        for t in (*f.type.params, f.type.result):
            r = _type_ok(t)
            if r:
                reasons.append(f"`{f.name}`: {r}")
        for rh in g.all_regions(f.region):
            for n in g.region_nodes(rh):
                r = _node_reason(g, n)
                if r:
                    reasons.append(f"`{f.name}`: {r}")
    return sorted(set(reasons))
