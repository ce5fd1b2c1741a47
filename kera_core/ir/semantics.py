"""The semantics version, and which operations' bits each version changed.

``SEMANTICS_VERSION`` numbers the bit-level definitions of docs/semantics.md. It is recorded
in every `.keg` (docs/keg.md) and every artifact (wasm, x86-64, arm64, ptx, verilog), and it
goes up whenever an operation's bits change. The operations a version changed are listed in
``REVISIONS``: their opcodes are **versioned** — a node whose operation last changed in
version ``r ≥ 2`` (for its element type) hashes its opcode as ``op@r`` (docs/graph.md) — so
the fingerprint of every graph that uses a changed operation changes with it, and every
other graph keeps its fingerprint.

History:

* 1 — the first definitions.
* 2 — binary32 `exp`, `log`, `tanh`, `sigmoid` correctly rounded (§6.2–§6.5, evaluated in
  binary64); `softmax` on binary32, which is defined with `exp`, with them.
* 3 — binary64 `tanh`, `sigmoid` within 0.51 ulp, 0.75 where `sigmoid`'s result is in the
  top subnormal binade (§6.4, §6.5: expm1's double-double kernel and a double-double
  quotient, rounded once).
"""

from __future__ import annotations

from kera_core.ir.types import Type, elem_of

SEMANTICS_VERSION = 3

# op -> {element type of its result -> the semantics version that last changed its bits}
REVISIONS: dict[str, dict[str, int]] = {
    **{op: {"f32": 2} for op in ("exp", "log", "softmax")},
    **{op: {"f32": 2, "f64": 3} for op in ("tanh", "sigmoid")},
}


def revision(op: str, types: tuple[Type, ...]) -> int:
    """The semantics version that last changed the bits of ``op`` with result ``types``
    (1 if none since the first)."""
    by_type = REVISIONS.get(op)
    if not by_type or not types:
        return 1
    e = elem_of(types[0])
    return by_type.get(e.name, 1) if e is not None else 1


def hashed_opcode(op: str, types: tuple[Type, ...]) -> str:
    """The opcode as a node hash encodes it: ``op``, or ``op@r`` for a revised operation."""
    r = revision(op, types)
    return op if r == 1 else f"{op}@{r}"
