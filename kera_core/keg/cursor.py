"""A bounds-checked reader over one section of a `.keg` file.

Unlike :class:`kera_core.ir.encoding.Reader` it never reads past its section, rejects
overlong LEB128, checks every count against the bytes left before anything is
allocated, and raises only :class:`KegError` with an absolute offset.
"""

from __future__ import annotations

from kera_core.ir.types import (
    EFFECTS,
    INT_TYPES,
    PRIMS,
    SPACES,
    Dim,
    DimError,
    DimExpr,
    FnType,
    Prim,
    RangeType,
    Ref,
    Struct,
    Sym,
    Tensor,
    TokenType,
    Type,
    Unit,
    dim_affine,
    soa_shape,
)
from kera_core.keg.errors import KegError
from kera_core.keg.format import MAX_TYPE_DEPTH, MAX_VARINT_BYTES


class Cursor:
    __slots__ = ("data", "pos", "end", "section")

    def __init__(self, data: bytes, start: int, end: int, section: str) -> None:
        self.data = data
        self.pos = start
        self.end = end
        self.section = section

    def fail(self, kind: str, message: str, offset: int | None = None) -> KegError:
        return KegError(
            kind, f"{self.section} section: {message}", self.pos if offset is None else offset
        )

    @property
    def left(self) -> int:
        return self.end - self.pos

    def u8(self) -> int:
        if self.pos >= self.end:
            raise self.fail("truncated", "ends inside a field")
        v = self.data[self.pos]
        self.pos += 1
        return v

    def flag(self, what: str, kind: str) -> bool:
        at = self.pos
        v = self.u8()
        if v > 1:
            raise self.fail(kind, f"{what} must be 0 or 1, not {v}", at)
        return v == 1

    def uvar(self) -> int:
        pos = self.pos
        if pos < self.end:  # fast path: one byte
            b = self.data[pos]
            if b < 0x80:
                self.pos = pos + 1
                return b
        start = pos
        v = 0
        shift = 0
        while True:
            if pos >= self.end:
                raise self.fail("truncated", "ends inside a LEB128 integer", start)
            b = self.data[pos]
            pos += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if pos - start >= MAX_VARINT_BYTES:
                raise self.fail(
                    "varint", f"LEB128 integer longer than {MAX_VARINT_BYTES} bytes", start
                )
        if b == 0 and pos - start > 1:
            raise self.fail("varint", "LEB128 integer is not minimally encoded", start)
        self.pos = pos
        return v

    def svar(self) -> int:
        u = self.uvar()
        return (u >> 1) if not u & 1 else -((u + 1) >> 1)

    def raw(self, n: int) -> bytes:
        if n > self.end - self.pos:
            raise self.fail("truncated", f"needs {n} bytes, {self.end - self.pos} left")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def count(self, what: str, min_size: int) -> int:
        """A count of entries of at least ``min_size`` bytes each, checked against what is left."""
        at = self.pos
        n = self.uvar()
        if n * min_size > self.end - self.pos:
            raise self.fail(
                "count",
                f"{n} {what} cannot fit in the {self.end - self.pos} bytes left",
                at,
            )
        return n

    def index(self, what: str, limit: int) -> int:
        at = self.pos
        i = self.uvar()
        if i >= limit:
            raise self.fail("index", f"{what} index {i} out of range (there are {limit})", at)
        return i

    def blob(self) -> bytes:
        """A length-prefixed byte string; a length past the section end is `truncated`."""
        at = self.pos
        n = self.uvar()
        if n > self.end - self.pos:
            raise self.fail("truncated", f"a {n}-byte string, {self.end - self.pos} bytes left", at)
        return self.raw(n)

    def text(self) -> str:
        """A strict UTF-8 string: what the graph hashes must be valid UTF-8."""
        at = self.pos
        b = self.blob()
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail("utf8", f"invalid UTF-8 in a string ({e.reason})", at) from None

    def expect_end(self, what: str) -> None:
        if self.pos != self.end:
            raise self.fail("trailing", f"{self.end - self.pos} unused bytes after the {what}")


def _dim_expr(c: Cursor, at: int) -> DimExpr:
    """A dimension expression (kind 2), accepted only in its normal form, so that one
    dimension has one encoding (docs/graph.md)."""
    n = c.count("dimension terms", 2)
    terms = tuple((c.uvar(), c.svar()) for _ in range(n))
    const = c.svar()
    div = c.uvar()
    try:
        d = dim_affine(dict(terms), const, div) if div else None
    except DimError:
        d = None
    want = DimExpr(terms, const, div)
    if d != want or len({k for k, _ in terms}) != n:
        raise c.fail("bad-type", "a dimension expression not in normal form", at)
    return want


def _soa_fields(fields) -> bool:
    """Are ``fields`` those of a tensor of structs: each a host tensor or a tensor of
    structs, all of one shape, at least one?"""
    shapes = set()
    for _, t in fields:
        if isinstance(t, Struct) and t.soa:
            shapes.add(soa_shape(t))
        elif isinstance(t, Tensor) and t.space == "host":
            shapes.add(t.shape)
        else:
            return False
    return len(shapes) == 1


def decode_type(c: Cursor, depth: int = 0) -> Type:
    """The inverse of ``Type.encode``, validating names as docs/graph.md lists them."""
    if depth > MAX_TYPE_DEPTH:
        raise c.fail("bad-type", f"type nested deeper than {MAX_TYPE_DEPTH} levels")
    at = c.pos
    tag = c.u8()
    if tag == 1:
        name = c.text()
        if name not in PRIMS:
            raise c.fail("bad-type", f"unknown primitive type {name!r}", at)
        return PRIMS[name]
    if tag == 2:
        elem = _prim(c, depth)
        rank = c.count("dimensions", 2)
        shape: list[Dim] = []
        for _ in range(rank):
            kind_at = c.pos
            kind = c.u8()
            if kind == 0:
                shape.append(c.uvar())
            elif kind == 1:
                shape.append(Sym(c.uvar()))
            elif kind == 2:
                shape.append(_dim_expr(c, kind_at))
            else:
                raise c.fail("bad-type", f"dimension kind {kind} is not 0, 1 or 2", kind_at)
        space_at = c.pos
        space = c.text()
        if space not in SPACES:
            raise c.fail("bad-type", f"unknown memory space {space!r}", space_at)
        return Tensor(elem, tuple(shape), space)
    if tag in (3, 10):  # a struct; a tensor of structs (docs/graph.md)
        name = c.text()
        n = c.count("struct fields", 2)
        fields = tuple((c.text(), decode_type(c, depth + 1)) for _ in range(n))
        if tag == 10 and not _soa_fields(fields):
            raise c.fail("bad-type", "a tensor of structs whose fields are not one shape", at)
        return Struct(name, fields, soa=tag == 10)
    if tag == 4:
        mutable = c.flag("a reference's mutability", "bad-type")
        return Ref(decode_type(c, depth + 1), mutable)
    if tag == 5:
        n_dims = c.uvar()
        n = c.count("parameters", 1)
        params = tuple(decode_type(c, depth + 1) for _ in range(n))
        result = decode_type(c, depth + 1)
        effects_at = c.pos
        k = c.count("effects", 1)
        effects = tuple(c.text() for _ in range(k))
        if any(e not in EFFECTS for e in effects) or list(effects) != sorted(set(effects)):
            raise c.fail("bad-type", f"effects {effects} are not sorted known effects", effects_at)
        return FnType(n_dims, params, result, effects)
    if tag == 6:
        return Unit()
    if tag == 7:
        return TokenType()
    if tag == 8:
        elem = _prim(c, depth)
        if elem.name not in INT_TYPES:
            raise c.fail("bad-type", f"a range over `{elem.name}`, not an integer type", at)
        return RangeType(elem)
    raise c.fail("bad-type", f"unknown type tag {tag}", at)


def _prim(c: Cursor, depth: int) -> Prim:
    at = c.pos
    t = decode_type(c, depth + 1)
    if not isinstance(t, Prim):
        raise c.fail("bad-type", f"element type must be primitive, found `{t}`", at)
    return t
