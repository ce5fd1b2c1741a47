"""Nodes, regions and functions of the content-addressed graph.

A node's hash covers the schema version, its opcode, its output types, its input
values (as hashes), its attributes in key order and its region hashes — nothing
else. Spans and names never enter a hash; they live in :mod:`provenance`.
"""

from __future__ import annotations

from typing import NamedTuple

from kera_core.ir.encoding import SCHEMA_VERSION, Writer, digest
from kera_core.ir.types import FnType, Type

AttrValue = int | str | bool | bytes | Type | tuple


class Value(NamedTuple):
    """One output of one node: the node's hash and the output's position."""

    node: bytes
    index: int = 0


def _encode_attr(w: Writer, v: AttrValue) -> None:
    if isinstance(v, bool):
        w.u8(3)
        w.u8(1 if v else 0)
    elif isinstance(v, int):
        w.u8(1)
        w.svar(v)
    elif isinstance(v, str):
        w.u8(2)
        w.str(v)
    elif isinstance(v, bytes):
        w.u8(4)
        w.bytes(v)
    elif isinstance(v, Type):
        w.u8(5)
        v.encode(w)
    elif isinstance(v, tuple):
        w.u8(6)
        w.uvar(len(v))
        for x in v:
            _encode_attr(w, x)
    else:  # pragma: no cover - builder bug
        raise TypeError(f"unsupported attribute value {v!r}")


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
        self.hash = digest("node", self.canonical())

    def canonical(self) -> bytes:
        w = Writer()
        w.uvar(SCHEMA_VERSION)
        w.str(self.op)
        w.uvar(len(self.types))
        for t in self.types:
            t.encode(w)
        w.uvar(len(self.inputs))
        for v in self.inputs:
            w.raw(v.node)
            w.uvar(v.index)
        w.uvar(len(self.attrs))
        for k, v in self.attrs:
            w.str(k)
            _encode_attr(w, v)
        w.uvar(len(self.regions))
        for r in self.regions:
            w.raw(r)
        return w.getvalue()

    def attr(self, key: str, default: AttrValue | None = None) -> AttrValue | None:
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def out(self, index: int = 0) -> Value:
        return Value(self.hash, index)

    def __repr__(self) -> str:
        return f"Node({self.op} {self.hash.hex()[:10]})"


class Region:
    """A closed body: positional parameters, the values it yields, nothing from outside."""

    __slots__ = ("params", "yields", "hash")

    def __init__(self, params: tuple[Type, ...], yields: tuple[Value, ...]) -> None:
        self.params = tuple(params)
        self.yields = tuple(yields)
        w = Writer()
        w.uvar(len(self.params))
        for t in self.params:
            t.encode(w)
        w.uvar(len(self.yields))
        for v in self.yields:
            w.raw(v.node)
            w.uvar(v.index)
        self.hash = digest("region", w.getvalue())


class Function:
    """A function: its type, its body region, and whether it is exported (`pub`).

    ``outputs`` lists what the region yields after the effect token (if any): the
    declared result unless it is `()`, then the final value of every `&mut`
    parameter, in parameter order.
    """

    __slots__ = ("name", "type", "region", "exported", "outputs", "hash")

    def __init__(
        self,
        name: str,
        type: FnType,
        region: bytes,
        exported: bool,
        outputs: tuple[tuple[str, int], ...],
    ) -> None:
        self.name = name
        self.type = type
        self.region = region
        self.exported = exported
        self.outputs = outputs  # ("result", -1) or ("param", i)
        self.hash = digest("fn", type.hash + region)
