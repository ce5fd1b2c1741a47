"""Nodes, regions and functions of the content-addressed graph.

A node's hash covers the schema version, its opcode (versioned where its bits changed:
:mod:`kera_core.ir.semantics`), its output types, its input
values (as hashes), its attributes in key order and its region hashes — nothing
else. Spans and names never enter a hash; they live in :mod:`provenance`.
"""

from __future__ import annotations

from typing import NamedTuple

from kera_core.ir.cycles import body_hash, member_hash
from kera_core.ir.encoding import (
    BYTE,
    SCHEMA_VERSION,
    record_digest,
    str_bytes,
    uvar_bytes,
)
from kera_core.ir.semantics import hashed_opcode
from kera_core.ir.types import FnType, Type

AttrValue = int | str | bool | bytes | Type | tuple


class Value(NamedTuple):
    """One output of one node: the node's hash and the output's position."""

    node: bytes
    index: int = 0


def _attr_parts(parts: list[bytes], v: AttrValue) -> None:
    """Append an attribute value's encoding (docs/graph.md: a tag byte, then the value)."""
    if v.__class__ is int:  # the common kinds first (by exact class: a bool is an int too)
        parts.append(b"\x01")
        parts.append(uvar_bytes((v << 1) if v >= 0 else ((-v << 1) - 1)))  # type: ignore[operator]
        return
    if isinstance(v, Type):  # never also a number, string, bytes or tuple
        parts.append(b"\x05")
        parts.append(v.canonical)
        return
    if isinstance(v, bool):
        parts.append(b"\x03\x01" if v else b"\x03\x00")
    elif isinstance(v, int):
        parts.append(b"\x01")
        parts.append(uvar_bytes((v << 1) if v >= 0 else ((-v << 1) - 1)))
    elif isinstance(v, str):
        parts.append(b"\x02")
        parts.append(str_bytes(v))
    elif isinstance(v, bytes):
        parts.append(b"\x04")
        parts.append(uvar_bytes(len(v)))
        parts.append(v)
    elif isinstance(v, tuple):
        parts.append(b"\x06")
        parts.append(uvar_bytes(len(v)))
        for x in v:
            _attr_parts(parts, x)
    else:  # pragma: no cover - builder bug
        raise TypeError(f"unsupported attribute value {v!r}")


_HEAD = uvar_bytes(SCHEMA_VERSION)
_new_value = tuple.__new__


class Node:
    __slots__ = ("op", "inputs", "types", "attrs", "regions", "hash")

    def __init__(
        self,
        op: str,
        inputs: tuple[Value, ...] = (),
        types: tuple[Type, ...] = (),
        attrs: dict[str, AttrValue] | tuple[tuple[str, AttrValue], ...] = (),
        regions: tuple[bytes, ...] = (),
    ) -> None:
        self.op = op
        self.inputs = tuple(inputs)
        self.types = tuple(types)
        items = attrs.items() if isinstance(attrs, dict) else attrs
        self.attrs = tuple(sorted(items))
        self.regions = tuple(regions)
        self.hash = record_digest("node", self.canonical())

    def canonical(self) -> bytes:
        # The layout of docs/graph.md, as one list of parts (each type's encoding is
        # cached on the type, small integers are shared one-byte objects).
        types = self.types
        inputs = self.inputs
        attrs = self.attrs
        regions = self.regions
        n = len(types)  # a count below 128 is its own one-byte uvar
        parts = [
            _HEAD,
            str_bytes(hashed_opcode(self.op, types)),
            BYTE[n] if n < 0x80 else uvar_bytes(n),
        ]
        for t in types:
            parts.append(t.canonical)
        n = len(inputs)
        parts.append(BYTE[n] if n < 0x80 else uvar_bytes(n))
        for v in inputs:
            parts.append(v.node)
            i = v.index
            parts.append(BYTE[i] if 0 <= i < 0x80 else uvar_bytes(i))
        n = len(attrs)
        parts.append(BYTE[n] if n < 0x80 else uvar_bytes(n))
        for k, v in attrs:
            parts.append(str_bytes(k))
            _attr_parts(parts, v)
        n = len(regions)
        parts.append(BYTE[n] if n < 0x80 else uvar_bytes(n))
        parts += regions
        return b"".join(parts)

    def attr(self, key: str, default: AttrValue | None = None) -> AttrValue | None:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def out(self, index: int = 0) -> Value:
        return _new_value(Value, (self.hash, index))  # ``Value(…)`` without its Python ``__new__``

    def __repr__(self) -> str:
        return f"Node({self.op} {self.hash.hex()[:10]})"


class Region:
    """A closed body: positional parameters, the values it yields, nothing from outside."""

    __slots__ = ("params", "yields", "hash")

    def __init__(self, params: tuple[Type, ...], yields: tuple[Value, ...]) -> None:
        self.params = params = tuple(params)
        self.yields = yields = tuple(yields)
        # ``Writer``'s layout, as one list of parts: each type's encoding is cached on the type
        parts = [uvar_bytes(len(params))]
        for t in params:
            parts.append(t.canonical)
        parts.append(uvar_bytes(len(yields)))
        for v in yields:
            parts.append(v.node)
            i = v.index
            parts.append(BYTE[i] if 0 <= i < 0x80 else uvar_bytes(i))
        self.hash = record_digest("region", b"".join(parts))


class Function:
    """A function: its type, its body region, and whether it is exported (`pub`).

    ``outputs`` lists what the region yields after the effect token (if any): the
    declared result unless it is `()`, then the final value of every `&mut`
    parameter, in parameter order.

    A member of a recursive component (ir/cycles.py) has ``component`` (the component's
    hash) and ``index`` (its position in it); its hash is made from those two.
    """

    __slots__ = ("name", "type", "region", "exported", "outputs", "hash", "component", "index")

    def __init__(
        self,
        name: str,
        type: FnType,
        region: bytes,
        exported: bool,
        outputs: tuple[tuple[str, int], ...],
        component: bytes | None = None,
        index: int = 0,
    ) -> None:
        self.name = name
        self.type = type
        self.region = region
        self.exported = exported
        self.outputs = outputs  # ("result", -1) or ("param", i)
        self.component = component
        self.index = index
        if component is None:
            self.hash = body_hash(type.hash, region)
        else:
            self.hash = member_hash(component, index)

    @property
    def body_hash(self) -> bytes:
        """The hash the function would have outside any component (what a component hash
        covers for its members)."""
        return body_hash(self.type.hash, self.region)
