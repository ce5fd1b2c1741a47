"""Canonical byte encoding and domain-separated SHA3-256 hashing.

Integers are unsigned LEB128 (``uvar``) or zigzag LEB128 (``svar``); strings are a
``uvar`` length then UTF-8; floats are their IEEE-754 bits, little-endian. The
layout of each record is documented in docs/graph.md.
"""

from __future__ import annotations

import hashlib
import struct

from kera_core.source import encode

SCHEMA_VERSION = 1

DOMAINS = {
    "type": b"kera/type/v1\x00",
    "node": b"kera/node/v1\x00",
    "region": b"kera/region/v1\x00",
    "fn": b"kera/fn/v1\x00",
    "graph": b"kera/graph/v1\x00",
    "component": b"kera/component/v1\x00",
}


def digest(domain: str, data: bytes) -> bytes:
    """SHA3-256 of ``data`` under a domain prefix, so hashes of different kinds never collide."""
    return hashlib.sha3_256(DOMAINS[domain] + data).digest()


_RECORD_DIGESTS: dict[str, dict[bytes, bytes]] = {d: {} for d in DOMAINS}
_RECORD_DIGESTS_MAX = 65_536  # per domain; emptied when full (a few MB at most)


def record_digest(domain: str, data: bytes) -> bytes:
    """:func:`digest`, memoised by content: content-addressed records recur (the same node
    over the same inputs in many functions, the same region shape), and a dict lookup of
    the record's bytes costs a fraction of SHA3 over them."""
    memo = _RECORD_DIGESTS[domain]
    h = memo.get(data)
    if h is None:
        if len(memo) >= _RECORD_DIGESTS_MAX:
            memo.clear()
        h = memo[data] = digest(domain, data)
    return h


BYTE = [bytes((i,)) for i in range(256)]
"""``BYTE[i] == bytes((i,))``, shared: a small ``uvar`` or a ``u8`` is one list index."""


def uvar_bytes(v: int) -> bytes:
    """The unsigned LEB128 encoding of ``v``."""
    if v < 0x80:
        if v < 0:
            raise ValueError("uvar must be non-negative")
        return BYTE[v]
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            break
    return bytes(out)


_STR_BYTES: dict[str, bytes] = {}
_STR_BYTES_MAX = 4096


def str_bytes(s: str) -> bytes:
    """``Writer.str``'s encoding of ``s`` (a ``uvar`` length, then UTF-8), memoised for the
    short strings that recur (opcode names, attribute keys)."""
    b = _STR_BYTES.get(s)
    if b is None:
        e = encode(s)
        b = uvar_bytes(len(e)) + e
        if len(s) <= 64 and len(_STR_BYTES) < _STR_BYTES_MAX:
            _STR_BYTES[s] = b
    return b


class Writer:
    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def u8(self, v: int) -> None:
        self._parts.append(BYTE[v] if 0 <= v < 256 else bytes((v,)))  # bytes() reports a bad v

    def uvar(self, v: int) -> None:
        self._parts.append(BYTE[v] if 0 <= v < 0x80 else uvar_bytes(v))

    def svar(self, v: int) -> None:
        self.uvar((v << 1) if v >= 0 else ((-v << 1) - 1))

    def raw(self, b: bytes) -> None:
        self._parts.append(b)

    def bytes(self, b: bytes) -> None:
        self.uvar(len(b))
        self._parts.append(b)

    def str(self, s: str) -> None:
        self._parts.append(str_bytes(s))

    def f64(self, v: float) -> None:
        self._parts.append(struct.pack("<d", v))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


class Reader:
    """The inverse of :class:`Writer`, bounds-checked (used by the .keg reader)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def _need(self, n: int) -> None:
        if self.pos + n > len(self.data):
            raise ValueError(f"truncated at byte {self.pos}: need {n} more")

    def u8(self) -> int:
        self._need(1)
        v = self.data[self.pos]
        self.pos += 1
        return v

    def uvar(self) -> int:
        shift = 0
        v = 0
        while True:
            b = self.u8()
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 70:
                raise ValueError(f"varint too long at byte {self.pos}")

    def svar(self) -> int:
        u = self.uvar()
        return (u >> 1) if not u & 1 else -((u + 1) >> 1)

    def raw(self, n: int) -> bytes:
        self._need(n)
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def bytes(self) -> bytes:
        return self.raw(self.uvar())

    def str(self) -> str:
        return self.bytes().decode("utf-8")

    def f64(self) -> float:
        return struct.unpack("<d", self.raw(8))[0]
