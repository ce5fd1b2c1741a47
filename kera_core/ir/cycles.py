"""Recursive functions in the content-addressed graph (docs/graph.md "Recursion").

Functions that call each other in a cycle form a strongly connected component of the
call graph. A member's hash cannot contain itself, so (as in Unison) the component is
hashed as one unit: each member's body is hashed with every call *inside* the component
naming its callee by position — the callee attribute is the **member reference**
``H(fn, "member" ‖ uvar j)`` — and the component hash covers the members' bodies in
their canonical order. A member's hash is ``H(fn, "component" ‖ component ‖ uvar i)``.
Calls to anything outside the component name the callee's hash, as usual.

A member reference is resolved against the function whose body holds the call
(:func:`resolve`): member ``j`` of that function's own component.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kera_core.ir.encoding import Writer, digest, uvar_bytes

if TYPE_CHECKING:
    from kera_core.ir.node import Function

RECURSION_LIMIT = 1024
"""The most calls inside one recursive component that may be in progress at once (the
first call from outside it is depth 1); the next one is the checked error R0012
(docs/semantics.md §9)."""

_REFS: list[bytes] = []
_INDEX: dict[bytes, int] = {}


def member_ref(j: int) -> bytes:
    """The callee attribute of a call to member ``j`` of the caller's own component."""
    while len(_REFS) <= j:
        k = len(_REFS)
        h = digest("fn", b"member" + uvar_bytes(k))
        _REFS.append(h)
        _INDEX[h] = k
    return _REFS[j]


def member_index(callee: bytes) -> int | None:
    """``j`` when ``callee`` is :func:`member_ref` ``(j)``, for ``j`` below
    :data:`KNOWN_REFS` or below the size of any component made or read so far
    (:func:`component_errors` extends the table to a graph's largest component)."""
    return _INDEX.get(callee)


KNOWN_REFS = 64
member_ref(KNOWN_REFS - 1)


PLACEHOLDER = digest("fn", b"member ?")
"""The callee attribute every call inside a component gets while the members are ordered:
a reference to some member, which one not said (docs/graph.md)."""


def body_hash(type_hash: bytes, region: bytes) -> bytes:
    """A function's hash as if it were not recursive: ``H(fn, type_hash ‖ region_hash)``."""
    return digest("fn", type_hash + region)


def component_hash(bodies: list[bytes]) -> bytes:
    """``H(component, uvar k ‖ body_hash*)`` over the members in canonical order."""
    w = Writer()
    w.uvar(len(bodies))
    for b in bodies:
        w.raw(b)
    return digest("component", w.getvalue())


def member_hash(component: bytes, index: int) -> bytes:
    return digest("fn", b"component" + component + uvar_bytes(index))


def resolve(callee: bytes, caller: Function) -> bytes:
    """The hash of the function a call node in ``caller``'s body calls."""
    j = _INDEX.get(callee)
    if j is None or caller.component is None:
        return callee
    return member_hash(caller.component, j)


def is_recursive(fn: Function) -> bool:
    return fn.component is not None


def recursive_reached(graph, fn: str) -> list[str]:
    """The recursive functions ``fn`` is or calls, directly or not (names, sorted): what a
    target without a call stack refuses (docs/targets/ptx.md, verilog.md)."""
    by_hash = {f.hash: f for f in graph.functions.values()}
    start = graph.functions[fn]
    seen = {start.hash}
    todo = [start]
    out = set()
    while todo:
        f = todo.pop()
        if f.component is not None:
            out.add(f.name)
        for n in _calls_in(graph, f):
            g = by_hash.get(resolve(n.attr("callee"), f))
            if g is not None and g.hash not in seen:
                seen.add(g.hash)
                todo.append(g)
    return sorted(out)


def refusal(graph, fn: str, why: str) -> list[str]:
    """Why a target that cannot run recursion (``why`` says why not) refuses ``fn``: none if
    ``fn`` reaches no recursive function."""
    rec = recursive_reached(graph, fn)
    if not rec:
        return []
    names = ", ".join(f"`{n}`" for n in rec)
    return [
        f"recursion: `{fn}` reaches the recursive function{'s' if len(rec) > 1 else ''} {names}: {why}"
    ]


def component_errors(graph) -> list[str]:
    """What is wrong with the recursive components of ``graph`` (nothing when each
    component's members are numbered 0..k-1, its hash is the hash of their bodies in that
    order, and every member reference in a member's body names a member): shared by the
    graph verifier and the .keg reader."""
    groups: dict[bytes, list] = {}
    for f in graph.functions.values():
        if f.component is not None:
            groups.setdefault(f.component, []).append(f)
    member_ref(max((f.index for m in groups.values() for f in m), default=0))
    out = []
    for comp, found in groups.items():
        # two functions with equal text are one member under two names (equal hashes)
        names = ", ".join(f"`{f.name}`" for f in sorted(found, key=lambda f: f.index))
        bodies = {}
        for f in found:
            if bodies.setdefault(f.index, f.body_hash) != f.body_hash:
                out.append(f"member {f.index} of the recursive component of {names} has two bodies")
        members = [min((f for f in found if f.index == i), key=lambda f: f.name) for i in bodies]
        members.sort(key=lambda f: f.index)
        if [f.index for f in members] != list(range(len(members))):
            out.append(f"the recursive component of {names} is not numbered 0..{len(members) - 1}")
            continue
        if component_hash([f.body_hash for f in members]) != comp:
            out.append(f"the recursive component of {names} does not hash to its members")
            continue
        for f in members:
            for n in _calls_in(graph, f):
                j = member_index(n.attr("callee"))
                if j is not None and j >= len(members):
                    out.append(f"`{f.name}` calls member {j} of a component of {len(members)}")
    return out


def _calls_in(graph, f) -> list:
    """The call nodes of ``f``'s body and nested regions; none if the body dangles (the
    verifier reports that on its own)."""
    try:
        return [
            n for r in graph.all_regions(f.region) for n in graph.region_nodes(r) if n.op == "call"
        ]
    except KeyError:
        return []


def calls_outside_members(graph) -> set[bytes]:
    """The call nodes reachable from a function that is not a member of a recursive
    component: a member reference there names nothing."""
    out: set[bytes] = set()
    for f in graph.functions.values():
        if f.component is None:
            out.update(n.hash for n in _calls_in(graph, f))
    return out
