"""The loop program: the target-neutral form between the graph and every backend.

A :class:`Program` is a set of :class:`LFunction`\\ s. A function's body is a list of
statements over

* **scalars** — :class:`Var`, a mutable local of one scalar type (a virtual register), and
  :class:`Imm`, a constant given by its bits;
* **buffers** — :class:`Buf`, a flat array of one element type with a size (an ``i64``
  operand) and a memory space; tensors are row-major buffers, structs are flattened into
  their fields by the lowering, so neither exists here.

Every :class:`Op` is one primitive of :mod:`kera_core.loops.prims` — one correctly rounded
IEEE operation or one exactly specified integer/bit operation — on scalars or on fixed-width
vectors (``Var.lanes > 1``). Control is structured: :class:`Loop` (a counted range with a
``mark``: ``seq``, ``lanes`` or ``parallel``), :class:`While`, :class:`If`; :class:`Check`
is a checked-error exit; :class:`Alloc` / :class:`Free` bracket a temporary buffer's life.
docs/lowering.md is the reference for a backend author.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kera_core.ir.types import DimError, DimExpr, dim_value

SCALARS = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64")
FLOATS = ("f32", "f64")
BITS = {
    "bool": 8,
    "i8": 8,
    "i16": 16,
    "i32": 32,
    "i64": 64,
    "u8": 8,
    "u16": 16,
    "u32": 32,
    "u64": 64,
    "f32": 32,
    "f64": 64,
}


def is_float(t: str) -> bool:
    return t in FLOATS


def is_signed(t: str) -> bool:
    return t.startswith("i")


def is_int(t: str) -> bool:
    return t[0] in "iu"


@dataclass(eq=False, slots=True)
class Var:
    """A mutable scalar (or fixed-width vector) local: a virtual register."""

    id: int
    type: str
    name: str = ""
    lanes: int = 1

    def __repr__(self) -> str:
        return f"%{self.name}.{self.id}" if self.name else f"%v{self.id}"


@dataclass(frozen=True, slots=True)
class Imm:
    """A constant: ``bits`` is the value's bit pattern (two's complement for integers)."""

    type: str
    bits: int

    def __repr__(self) -> str:
        return imm_text(self)


Operand = Var | Imm


@dataclass(eq=False, slots=True)
class Buf:
    """A flat buffer of ``size`` elements of ``elem`` in memory space ``space``.

    ``role``: ``param`` (the caller's memory; ``mutable`` if the function may write it),
    ``result`` (allocated here and handed to the caller), ``temp`` (allocated and freed here).
    """

    id: int
    elem: str
    size: Operand
    space: str = "host"
    role: str = "temp"
    mutable: bool = False
    name: str = ""

    def __repr__(self) -> str:
        return f"@{self.name}.{self.id}" if self.name else f"@b{self.id}"


# --- statements ------------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Op:
    dst: Var
    op: str
    args: tuple[Operand, ...]


@dataclass(eq=False, slots=True)
class Load:
    dst: Var
    buf: Buf
    index: Operand


@dataclass(eq=False, slots=True)
class Store:
    buf: Buf
    index: Operand
    value: Operand


@dataclass(eq=False, slots=True)
class Loop:
    """``for var in lo..hi`` (``hi`` excluded), step 1. ``counted``: each iteration spends one
    step of the run's budget (a source-level loop); element loops the lowering made do not.
    ``mark``: ``seq`` (in order), ``lanes`` (iterations independent: may run as vector lanes),
    ``parallel`` (independent: may run on threads)."""

    var: Var
    lo: Operand
    hi: Operand
    body: list
    mark: str = "seq"
    counted: bool = False
    node: bytes | None = None


@dataclass(eq=False, slots=True)
class While:
    """Run ``cond`` then, while ``test`` is true, ``body`` (then ``cond`` again). Counted."""

    cond: list
    test: Operand
    body: list
    node: bytes | None = None


@dataclass(eq=False, slots=True)
class If:
    cond: Operand
    then: list
    orelse: list


@dataclass(eq=False, slots=True)
class Check:
    """Stop the run with checked error ``code`` unless ``ok`` is true."""

    ok: Operand
    code: str
    message: str
    node: bytes | None = None


@dataclass(eq=False, slots=True)
class Alloc:
    buf: Buf


@dataclass(eq=False, slots=True)
class Free:
    buf: Buf


@dataclass(eq=False, slots=True)
class Copy:
    """``dst[dst_at + k] = src[src_at + k]`` for ``k < count`` (buffers of one element type)."""

    dst: Buf
    dst_at: Operand
    src: Buf
    src_at: Operand
    count: Operand


@dataclass(eq=False, slots=True)
class Exchange:
    """``a`` and ``b`` trade their memory: afterwards ``a`` names what ``b`` named and the
    reverse — O(1), no element moves (a handle exchange). Both are ``temp`` buffers of this
    function with one element type, size and space; made only for a target with
    ``buffer_handles`` (loops/target.py), for a loop's carried buffers that trade places."""

    a: Buf
    b: Buf


@dataclass(eq=False, slots=True)
class Call:
    """Call ``fn`` with scalars and buffers; scalar results land in ``results`` (Vars), result
    buffers are the callee's allocations, bound to the ``results`` Bufs."""

    fn: str
    args: tuple
    results: tuple


@dataclass(eq=False, slots=True)
class Print:
    """Write ``text``, or the value: a scalar, or a buffer of ``shape`` (row-major)."""

    text: str | None
    value: Operand | Buf | None = None
    shape: tuple[Operand, ...] = ()
    fmt_type: object = None  # the Kera type of the value, for formatting
    offset: Operand | None = None  # where a buffer's elements start


Stmt = Op | Load | Store | Loop | While | If | Check | Alloc | Free | Copy | Exchange | Call | Print


@dataclass(eq=False)
class LFunction:
    """A function: scalar and buffer parameters (dimension sizes first, as ``i64`` Vars), its
    body, and what it returns (Vars and Bufs, in the graph function's output order)."""

    name: str
    dims: list[Var]
    params: list  # per graph parameter: a flat list of Var | Buf (structs are flattened)
    body: list
    results: list  # per output: a flat list of Var | Buf
    # per output: per flat Buf, its shape — Imm, a dimension Var of ``dims``, or a
    # DimSize (`N + 1`: computed from the dimensions); Vars: ()
    result_shapes: list
    exported: bool = False
    # the recursive component (ir/cycles.py) of the graph function it lowers, if any: a
    # native backend bounds the stack its nested calls can take (native/abi.py)
    component: bytes | None = None

    def sizes(self, shape: tuple, bound) -> tuple[int, ...]:
        """A result shape's sizes for bound dimensions ``bound`` (index -> size). A
        dimension expression that is not a size counts 0: the run stops with R0003 on entry
        before it returns anything (a host that plans its reads ahead asks all the same)."""
        index = {d.id: i for i, d in enumerate(self.dims)}
        out = []
        for d in shape:
            if isinstance(d, Imm):
                out.append(d.bits)
            elif isinstance(d, DimSize):
                try:
                    out.append(dim_value(d.expr, bound))
                except DimError:
                    out.append(0)
            else:
                out.append(int(bound[index[d.id]]))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class DimSize:
    """A dimension of a function's result given by a dimension expression over the
    function's dimensions (docs/language.md §7.5): checked on entry, so a host evaluates it
    from the bound sizes."""

    expr: DimExpr


@dataclass(eq=False)
class Program:
    functions: dict[str, LFunction] = field(default_factory=dict)
    # id(statement) → (graph node hash, op) of the node whose lowering made it
    origins: dict[int, tuple[bytes, str]] = field(default_factory=dict)


def assigned(stmts: list) -> set[int]:
    """The ids of the Vars that ``stmts`` (and everything nested in them) define."""
    out: set[int] = set()
    for s in stmts:
        if isinstance(s, (Op, Load)):
            out.add(s.dst.id)
        elif isinstance(s, Loop):
            out.add(s.var.id)
            out |= assigned(s.body)
        elif isinstance(s, While):
            out |= assigned(s.cond) | assigned(s.body)
        elif isinstance(s, If):
            out |= assigned(s.then) | assigned(s.orelse)
        elif isinstance(s, Call):
            out.update(r.id for r in s.results if isinstance(r, Var))
    return out


def reads(f: LFunction) -> Counter:
    """How often each Var id is read in function ``f``: by its statements (every operand
    position, nested bodies included), its results and their shapes."""
    out: Counter = Counter()

    def take(*xs) -> None:
        out.update(x.id for x in xs if isinstance(x, Var))

    def walk(stmts: list) -> None:
        for s in stmts:
            t = type(s)
            if t is Op:
                take(*s.args)
            elif t is Load:
                take(s.index)
            elif t is Store:
                take(s.index, s.value)
            elif t is Loop:
                take(s.lo, s.hi)
                walk(s.body)
            elif t is While:
                walk(s.cond)
                take(s.test)
                walk(s.body)
            elif t is If:
                take(s.cond)
                walk(s.then)
                walk(s.orelse)
            elif t is Check:
                take(s.ok)
            elif t is Alloc:
                take(s.buf.size)
            elif t is Copy:
                take(s.dst_at, s.src_at, s.count)
            elif t is Call:
                take(*s.args)
            elif t is Print:
                take(s.value, *s.shape, s.offset)

    walk(f.body)
    for group in f.results:
        take(*group)
    for shapes in f.result_shapes:
        for shape in shapes:
            take(*shape)
    return out


# --- text ------------------------------------------------------------------------------------


def imm_text(c: Imm) -> str:
    if c.type in FLOATS:
        import numpy as np

        dt, ut = (np.float32, np.uint32) if c.type == "f32" else (np.float64, np.uint64)
        v = np.array(c.bits, dtype=ut).view(dt)[()]
        return f"{c.type}:{float(v)!r}"
    if c.type == "bool":
        return "true" if c.bits else "false"
    v = c.bits
    if is_signed(c.type) and v >> (BITS[c.type] - 1):
        v -= 1 << BITS[c.type]
    return f"{c.type}:{v}"


def _opnd(x) -> str:
    return repr(x)


def format_program(p: Program) -> str:
    return "\n".join(format_function(f) for f in p.functions.values())


def format_function(f: LFunction) -> str:
    params = [f"{d!r}: i64" for d in f.dims]
    for group in f.params:
        for x in group:
            params.append(_decl(x))
    res = ", ".join(_decl(x) for group in f.results for x in group)
    lines = [f"fn {f.name}({', '.join(params)}) -> ({res}) {{"]
    _block(f.body, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _decl(x) -> str:
    if isinstance(x, Buf):
        mut = " mut" if x.mutable else ""
        return f"{x!r}: {x.elem}[{_opnd(x.size)}]{mut} @{x.space}"
    return f"{x!r}: {x.type}" + (f"x{x.lanes}" if x.lanes > 1 else "")


def _block(stmts: list, depth: int, out: list[str]) -> None:
    pad = "    " * depth
    for s in stmts:
        t = type(s)
        if t is Op:
            args = ", ".join(_opnd(a) for a in s.args)
            out.append(f"{pad}{s.dst!r}: {s.dst.type} = {s.op} {args}")
        elif t is Load:
            out.append(f"{pad}{s.dst!r}: {s.dst.type} = load {s.buf!r}[{_opnd(s.index)}]")
        elif t is Store:
            out.append(f"{pad}store {s.buf!r}[{_opnd(s.index)}] = {_opnd(s.value)}")
        elif t is Loop:
            extra = (" counted" if s.counted else "") + (f" {s.mark}" if s.mark != "seq" else "")
            out.append(f"{pad}for {s.var!r} in {_opnd(s.lo)}..{_opnd(s.hi)}{extra} {{")
            _block(s.body, depth + 1, out)
            out.append(f"{pad}}}")
        elif t is While:
            out.append(f"{pad}while {{")
            _block(s.cond, depth + 1, out)
            out.append(f"{pad}}} {_opnd(s.test)} {{")
            _block(s.body, depth + 1, out)
            out.append(f"{pad}}}")
        elif t is If:
            out.append(f"{pad}if {_opnd(s.cond)} {{")
            _block(s.then, depth + 1, out)
            if s.orelse:
                out.append(f"{pad}}} else {{")
                _block(s.orelse, depth + 1, out)
            out.append(f"{pad}}}")
        elif t is Check:
            out.append(f"{pad}check {_opnd(s.ok)} else {s.code}")
        elif t is Alloc:
            out.append(f"{pad}alloc {_decl(s.buf)}")
        elif t is Free:
            out.append(f"{pad}free {s.buf!r}")
        elif t is Copy:
            out.append(
                f"{pad}copy {s.dst!r}[{_opnd(s.dst_at)}..] = {s.src!r}[{_opnd(s.src_at)}..] "
                f"x {_opnd(s.count)}"
            )
        elif t is Exchange:
            out.append(f"{pad}exchange {s.a!r}, {s.b!r}")
        elif t is Call:
            res = ", ".join(repr(r) for r in s.results)
            args = ", ".join(repr(a) for a in s.args)
            out.append(f"{pad}({res}) = call {s.fn}({args})")
        elif t is Print:
            what = repr(s.text) if s.text is not None else _opnd(s.value)
            out.append(f"{pad}print {what}")
        else:  # pragma: no cover - a lowering bug
            raise TypeError(f"not a statement: {s!r}")
