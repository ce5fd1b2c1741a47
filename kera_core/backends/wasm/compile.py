"""The wasm backend's driver: a graph function → its loop program → WebAssembly text.

`lower_wat(graph, fn)` is the module text (cached per function name and hash, which covers
everything it calls); `unsupported(graph, fn)` says why a function cannot be compiled — a
lowering gap of the loop program, or a construct this backend does not select.
"""

from __future__ import annotations

from collections import OrderedDict

from kera_core.backends.wasm.module import Module
from kera_core.backends.wasm.select import NotSelected
from kera_core.ir.graph import Graph
from kera_core.loops import NotLowered
from kera_core.loops.lower import program_of

_CACHE: OrderedDict[tuple, str] = OrderedDict()
CACHE_SIZE = 64


def lower_wat(graph: Graph, fn: str, *, vectors: bool = True, poison: bool = False) -> str:
    """The module of exported function ``fn`` (and every function it calls) as WAT.
    ``vectors=False`` keeps every loop scalar; ``poison=True`` fills fresh blocks with 0xA5
    (tests: a read of memory never written shows)."""
    key = (fn, graph.functions[fn].hash, vectors, poison)
    got = _CACHE.get(key)
    if got is not None:
        _CACHE.move_to_end(key)
        return got
    text = Module(program_of(graph, fn), fn, vectors=vectors, poison=poison).text()
    _CACHE[key] = text
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return text


def unsupported(graph: Graph, fn: str) -> list[str]:
    """Why ``fn`` cannot be compiled to wasm (empty when it can)."""
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    try:
        lower_wat(graph, fn)
    except (NotLowered, NotSelected) as e:
        return [str(e)]
    return []
