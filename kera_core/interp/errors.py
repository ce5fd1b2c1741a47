"""Checked run-time errors: one stable code per kind, the same on every target."""

from __future__ import annotations

CODES: dict[str, str] = {
    # the program failed (a clause of docs/semantics.md §8)
    "R0001": "index out of bounds",
    "R0002": "integer division by zero",
    "R0003": "dimension mismatch",
    "R0004": "reduction of an empty tensor",
    "R0007": "step limit reached",
    "R0011": "range step not positive",
    "R0012": "recursion too deep",
    # the caller gave bad arguments (never a property of the program)
    "R0005": "bad input value",
    "R0006": "missing dimension",
    "R0008": "unsupported operation",
}


class InterpError(Exception):
    """A checked run-time error: ``code`` (see CODES) and a readable message.

    ``node`` is the hash of the graph node that failed, when there is one, so a front
    end can point at the source through the provenance table.
    """

    def __init__(self, code: str, message: str, node: bytes | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.node = node

    @property
    def kind(self) -> str:
        return CODES.get(self.code, "error")


class InputError(InterpError):
    """The arguments of a run were wrong (missing, mistyped, inconsistent shapes)."""


def index_error(i: int, n: int, axis: int, node: bytes | None = None) -> InterpError:
    return InterpError(
        "R0001", f"index {i} is out of bounds for dimension {axis} of size {n}", node
    )
