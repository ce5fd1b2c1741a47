"""The one exception a `.keg` reader raises, and the closed list of its kinds.

Every way a file can be wrong has a stable ``kind`` (documented in docs/keg.md), so
tools can branch on it and tests can check that no other exception escapes.
"""

from __future__ import annotations

KINDS: dict[str, str] = {
    "magic": "the file does not start with the bytes KEG\\0",
    "truncated": "the data ends inside a field, or a section reaches past the end of the file",
    "version": "the format version is not one this reader knows",
    "flags": "a reserved header flag is set",
    "schema": "the IR schema version differs from the one this reader hashes with",
    "semantics": "the semantics version is newer than this reader's, or the graph uses an "
    "operation whose bits changed after the file's semantics version",
    "layout": "sections are not laid out back to back right after the section table",
    "unknown-section": "a section id this version does not define",
    "missing-section": "a required section is absent",
    "duplicate": "something that must be unique appears twice",
    "order": "entries that must be sorted are not",
    "checksum": "a section's SHA3-256 differs from the one in the section table",
    "trailing": "bytes left over after the last section or at the end of a section",
    "varint": "a LEB128 integer is longer than 10 bytes or not minimally encoded",
    "count": "a count is larger than the remaining bytes of its section could hold",
    "index": "an index into a table is out of range",
    "forward-ref": "a value refers to its own node or to a node stored later (a cycle)",
    "output-index": "a value names an output its node does not have",
    "utf8": "a string of the graph is not valid UTF-8",
    "bad-type": "a type entry is malformed or not a valid Kera type",
    "bad-attr": "an attribute set is malformed",
    "unknown-op": "a node's opcode is not in the opcode registry",
    "bad-function": "a function entry is malformed",
    "bad-callee": "a call node names a function hash that no function in the file has",
    "hash-mismatch": "a recomputed hash differs from the one stored in the file",
    "unreachable": "a node or region is not reachable from any function",
    "unused": "a string, type or attribute set that nothing refers to",
    "ill-typed": "the graph is well formed but breaks the IR's rules (kera_core.ir.verify): "
    "an op's types, a region's parameters or yields, a function's signature",
}


class KegError(Exception):
    """A `.keg` file is malformed; ``kind`` is one of :data:`KINDS`, ``offset`` a byte offset.

    The message names the section and what is wrong, so a user can act on it without
    a hex editor; ``offset`` is absolute (from the start of the file) or ``None``.
    """

    def __init__(self, kind: str, message: str, offset: int | None = None) -> None:
        if kind not in KINDS:  # pragma: no cover - a reader bug
            raise ValueError(f"unknown KegError kind {kind!r}")
        where = f" (byte {offset})" if offset is not None else ""
        super().__init__(f"{kind}: {message}{where}")
        self.kind = kind
        self.message = message
        self.offset = offset
