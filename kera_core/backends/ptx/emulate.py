"""Running the ptx target's kernels without a GPU: an emulator of the PTX this backend
selects, so the bits of every kernel are checked here against the reference interpreter.

The emulator is an *independent reading of the PTX ISA*, not of the selector: it parses
the module text (the artifact a GPU loads), and gives each instruction the meaning the ISA
manual gives it — rounding of every ``.rn`` operation to nearest even, subnormals kept
(nothing here is ``.ftz``), the GPU's own NaN (``0x7FFFFFFF``, ``0x7FFFFFFFFFFFFFFF``) as
the result of any float operation that makes one, saturating float-to-integer ``cvt``,
ordered and unordered ``setp`` comparisons, shift counts past the width, sign-extending
narrow loads. An instruction it does not know is an error, never a guess.

**Threads.** Every thread of every CTA runs on its own (the independent thread scheduling
of ``sm_70`` and later), one after another: a thread runs until it reaches ``bar.sync``
(it waits until every thread of its CTA is there; one that returned from the kernel
meanwhile is a deadlock), ``nanosleep`` (it yields: the grid
barrier spins on a counter in global memory with it) or its quantum is spent. Memory is
sequentially consistent, which every correct PTX program's outcome is independent of, so
a kernel that needs a fence it lacks is not caught here; a missing barrier is, often: the
order in which threads run is a parameter (:class:`Shape`), and the tests run several.

**Launch shapes.** A kernel selected for 256 threads per CTA and as many CTAs as the GPU
holds reads its shape from ``%ntid``/``%nctaid``, so it is run here on a small one
(:class:`Shape`: 3 CTAs of 5 threads by default): what it computes does not depend on the
shape (docs/targets/ptx.md, "Grid mapping"), and a shape whose thread count is not a power
of two, or exceeds the work, exercises the edges of every strided loop.

**Memory.** Global memory is a set of regions (the run's arenas, the log, the context
cells, each parameter buffer) at addresses far apart; an access outside them is a fault
(R0008, with the address). The device arena is 16 MiB at most (an allocation past it is
R0009, as past a GPU's 1 GiB), the `pinned` and `unified` arenas 4 MiB. The device arena is filled with ``0x5A`` bytes before the
launch — not the interpreter's ``0xA5`` — so a kernel that reads an element of a fresh
buffer before writing it disagrees with the interpreter instead of passing by luck.
Shared memory is one buffer per CTA; ``.param`` space is per call.

**Speed.** Each basic block of each function is compiled once into a Python function
(its instructions as Python statements on a register list), so a block costs one call:
a sum of 10⁵ f32 on 3 CTAs of 5 threads runs in 0.16 s, every example function at sizes up
to 17 (808 runs) in about 18 s.
"""

from __future__ import annotations

import bisect
import math
import re
import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kera_core.backends.ptx import select as S
from kera_core.interp.errors import InterpError

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF
NAN32 = 0x7FFFFFFF  # the GPU's NaN
NAN64 = 0x7FFFFFFFFFFFFFFF
JUNK = 0x5A  # the device arena's bytes before a launch
QUANTUM = 4096  # blocks a thread runs before the next one gets a turn
DEFAULT_BLOCK_LIMIT = 50_000_000  # blocks a launch may run (a safety net, not a budget)
ARENA = 16 << 20  # the device arena of an emulated run (at most; R0009 past it)
SPACE_ARENA = 4 << 20  # the `pinned` and `unified` arenas of an emulated run

_F = struct.Struct("<f")
_I = struct.Struct("<I")
_D = struct.Struct("<d")
_Q = struct.Struct("<Q")


class EmulationError(InterpError):
    """The emulated kernel did something a GPU would stop on (a fault, a deadlock), or
    used PTX this emulator does not know."""

    def __init__(self, message: str) -> None:
        super().__init__("R0008", f"ptx emulation: {message}")


class EmulationLimit(EmulationError):
    """The emulator's own budget ran out (a kernel too long to emulate), not the program's."""

    machine_limit = True


@dataclass(frozen=True)
class Shape:
    """The launch an emulated run uses: ``blocks`` CTAs (a grid kernel; a one-CTA kernel
    gets one) of at most ``threads`` threads (a kernel selected for one thread gets one)."""

    blocks: int = 3
    threads: int = 5


# --- float helpers (bits in, bits out) -------------------------------------------------------


def f32v(bits: int) -> float:
    return _F.unpack(_I.pack(bits))[0]


def f64v(bits: int) -> float:
    return _D.unpack(_Q.pack(bits))[0]


def f32b(x: float) -> int:
    """The f32 nearest ``x`` (ties to even), as bits; NaN is the GPU's."""
    if x != x:
        return NAN32
    try:
        return _I.unpack(_F.pack(x))[0]
    except OverflowError:  # finite, but rounds past the largest f32
        return 0x7F800000 if x > 0 else 0xFF800000


def f64b(x: float) -> int:
    if x != x:
        return NAN64
    return _Q.unpack(_D.pack(x))[0]


def fdiv(a: float, b: float) -> float:
    if b == 0.0:
        if a != a or a == 0.0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def fsqrt(a: float) -> float:
    if a != a or a < 0.0:
        return math.nan
    return math.sqrt(a)


def rni(a: float) -> float:
    """Round to the nearest integer, ties to even, keeping the sign of a zero."""
    if a != a or math.isinf(a) or abs(a) >= 2.0**52:
        return a
    return math.copysign(float(round(a)), a)


def _round_fraction(q: Fraction, mant: int, emin: int, emax: int) -> float | None:
    """``q`` (non-zero) rounded to a binary float of ``mant`` significand bits, exponents
    ``emin..emax`` (subnormals below), ties to even; None when it overflows."""
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, emin)  # subnormal: the quantum stops shrinking
    scale = Fraction(2) ** (mant - 1 - e)
    n = q * scale
    whole = n.numerator // n.denominator
    rest = n - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole & 1):
        whole += 1
    value = Fraction(whole) / scale
    if value >= Fraction(2) ** (emax + 1):
        return None
    return sign * float(value)  # exact: ``value`` has at most ``mant`` <= 53 bits


def _fma(a: float, b: float, c: float, mant: int, emin: int, emax: int) -> float:
    if any(math.isnan(x) or math.isinf(x) for x in (a, b, c)):
        return a * b + c  # inf and NaN cases: IEEE's rules, exact in double
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        p = a * b  # an exact zero: -0 only when both addends are -0
        return -0.0 if (math.copysign(1.0, p) < 0 and math.copysign(1.0, c) < 0) else 0.0
    r = _round_fraction(q, mant, emin, emax)
    return (math.inf if q > 0 else -math.inf) if r is None else r


def fma32(a: int, b: int, c: int) -> int:
    return f32b(_fma(f32v(a), f32v(b), f32v(c), 24, -126, 127))


def fma64(a: int, b: int, c: int) -> int:
    return f64b(_fma(f64v(a), f64v(b), f64v(c), 53, -1022, 1023))


def i2f32(n: int) -> int:
    """An integer rounded once to f32 (a 64-bit integer rounded through double would be
    rounded twice)."""
    if -(1 << 53) <= n <= 1 << 53:
        return f32b(float(n))  # exact in double: rounded once, to f32
    r = _round_fraction(Fraction(n), 24, -126, 127)
    return f32b(r if r is not None else math.copysign(math.inf, n))


def f2i(x: float, signed: bool, width: int) -> int:
    """``cvt.rzi`` to an integer: toward zero, saturating, NaN -> 0; as bits."""
    if x != x:
        return 0
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    if math.isinf(x):
        v = hi if x > 0 else lo
    else:
        v = min(max(int(x), lo), hi)
    return v & ((1 << width) - 1)


def sx(v: int, width: int) -> int:
    return v - (1 << width) if v >> (width - 1) else v


def idiv(a: int, b: int, width: int, signed: bool, rem: bool) -> int:
    """``div``/``rem``; what the ISA leaves undefined (a zero divisor, ``MIN / -1``) gives
    junk bytes, so a kernel relying on one disagrees instead of passing by luck."""
    m = (1 << width) - 1
    if b == 0 or (signed and a == 1 << (width - 1) and b == m):
        return int.from_bytes(bytes([JUNK]) * (width // 8), "little")
    if signed:
        a, b = sx(a, width), sx(b, width)
        q = abs(a) // abs(b)
        if (a < 0) != (b < 0):
            q = -q
        return (a - q * b) & m if rem else q & m
    return (a % b) if rem else (a // b)


def bfe(a: int, pos: int, ln: int, width: int, signed: bool) -> int:
    pos, ln = pos & 0xFF, ln & 0xFF
    if ln == 0:
        return 0
    msb = min(pos + ln - 1, width - 1)
    field = (a >> min(pos, width)) & ((1 << ln) - 1) if pos < width else 0
    if signed:
        top = (a >> msb) & 1 if pos < width else (a >> (width - 1)) & 1
        if top and ln < width:
            field |= ((1 << width) - 1) & ~((1 << ln) - 1)
    return field & ((1 << width) - 1)


# --- memory ----------------------------------------------------------------------------------


class Memory:
    """Global memory: regions at addresses far apart (a gap of unmapped space around each)."""

    GAP = 1 << 24
    START = 0x7F00_0000_0000

    def __init__(self) -> None:
        self.bases: list[int] = []
        self.regions: list[np.ndarray] = []
        self.next = self.START
        self.last = (0, 0, None)  # (base, end, buffer): the region hit last

    def map(self, nbytes: int, fill: int = 0) -> int:
        n = max(nbytes, 8)
        buf = np.zeros(n, dtype=np.uint8) if not fill else np.full(n, fill, dtype=np.uint8)
        base = self.next
        self.next = (base + n + self.GAP + 0xFFFF) & ~0xFFFF
        self.bases.append(base)
        self.regions.append(buf)
        return base

    def unmap(self, base: int) -> None:
        i = bisect.bisect_left(self.bases, base)
        if i < len(self.bases) and self.bases[i] == base:
            del self.bases[i], self.regions[i]
            self.last = (0, 0, None)

    def at(self, addr: int, n: int) -> tuple[np.ndarray, int]:
        base, end, buf = self.last
        if base <= addr and addr + n <= end:
            return buf, addr - base
        i = bisect.bisect_right(self.bases, addr) - 1
        if i >= 0:
            base = self.bases[i]
            buf = self.regions[i]
            if addr + n <= base + len(buf):
                self.last = (base, base + len(buf), buf)
                return buf, addr - base
        raise EmulationError(f"a {n}-byte access at 0x{addr:x} is outside every allocation")

    def load(self, addr: int, n: int) -> int:
        buf, off = self.at(addr, n)
        return int.from_bytes(buf[off : off + n].tobytes(), "little")

    def store(self, addr: int, n: int, v: int) -> None:
        buf, off = self.at(addr, n)
        buf[off : off + n] = np.frombuffer(
            (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little"), np.uint8
        )

    def read(self, addr: int, nbytes: int) -> np.ndarray:
        if not nbytes:
            return np.zeros(0, dtype=np.uint8)
        buf, off = self.at(addr, nbytes)
        return buf[off : off + nbytes].copy()

    def write(self, addr: int, data: np.ndarray) -> None:
        raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
        if raw.size:
            buf, off = self.at(addr, raw.size)
            buf[off : off + raw.size] = raw


def _bytes_load(buf, off: int, n: int) -> int:
    if off < 0 or off + n > len(buf):
        raise EmulationError(f"a {n}-byte access at offset {off} is outside its space")
    return int.from_bytes(bytes(buf[off : off + n]), "little")


def _bytes_store(buf, off: int, n: int, v: int) -> None:
    if off < 0 or off + n > len(buf):
        raise EmulationError(f"a {n}-byte access at offset {off} is outside its space")
    buf[off : off + n] = (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")


# --- parsing ---------------------------------------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*")
_REGDECL = re.compile(r"^\.reg\s+\.(\w+)\s+(.*)$")
_PARAMDECL = re.compile(r"^\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+(\w+)(?:\[(\d+)\])?$")
_SHARED = re.compile(r"^\.shared\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(\w+)(?:\[(\d+)\])?$")
_FUNC = re.compile(
    r"(\.visible\s+)?\.(func|entry)\s*(\((?P<ret>[^)]*)\))?\s*(?P<name>\w+)\s*\((?P<params>[^)]*)\)"
    r"(?P<attrs>[^{;]*)(?P<end>[{;])",
    re.S,
)
_TYPES = {
    "b8": (8, "b"),
    "u8": (8, "u"),
    "s8": (8, "s"),
    "b16": (16, "b"),
    "u16": (16, "u"),
    "s16": (16, "s"),
    "b32": (32, "b"),
    "u32": (32, "u"),
    "s32": (32, "s"),
    "f32": (32, "f"),
    "b64": (64, "b"),
    "u64": (64, "u"),
    "s64": (64, "s"),
    "f64": (64, "f"),
    "pred": (1, "p"),
}
SPECIALS = {"%tid.x": "T.tid", "%ntid.x": "T.ntid", "%ctaid.x": "T.ctaid", "%nctaid.x": "T.nctaid"}


def _size(ty: str, count: str | None) -> int:
    w = _TYPES[ty][0]
    return max(w // 8, 1) * (int(count) if count else 1)


@dataclass
class Param:
    name: str
    size: int


class Function:
    """One ``.func``/``.entry``: its parameters and its blocks, compiled."""

    def __init__(self, name: str, ret: Param | None, params: list[Param], body: str, mod: Module):
        self.name, self.ret, self.params = name, ret, params
        self.mod = mod
        self.regs: dict[str, tuple[int, int, str]] = {}  # name -> (index, width, kind)
        self.blocks: list = []
        self._compile(body)

    # registers and operands

    def _declare(self, ty: str, spec: str) -> None:
        w, kind = _TYPES[ty]
        for part in spec.split(","):
            part = part.strip()
            m = re.fullmatch(r"(%\w+)<(\d+)>", part)
            names = [f"{m.group(1)}{i}" for i in range(int(m.group(2)))] if m else [part]
            for n in names:
                self.regs[n] = (len(self.regs), w, kind)

    def reg(self, name: str) -> str:
        if name not in self.regs:
            raise EmulationError(f"{self.name}: register {name} is not declared")
        return f"R[{self.regs[name][0]}]"

    def value(self, tok: str, width: int, kind: str) -> str:
        """A Python expression for an operand read as ``width`` bits."""
        tok = tok.strip()
        if tok.startswith("%"):
            if tok in SPECIALS:
                return SPECIALS[tok]
            return self.reg(tok)
        if tok.startswith(("0f", "0F", "0d", "0D")):  # a float's bits, in hex
            return str(int(tok[2:], 16))
        if tok in self.mod.shared:
            return str(self.mod.shared[tok])
        try:
            v = int(tok, 0)
        except ValueError:
            raise EmulationError(f"{self.name}: operand {tok!r} is not understood") from None
        return str(v & ((1 << max(width, 1)) - 1))

    def address(self, tok: str, space: str) -> tuple[str, str | None]:
        """``[base+off]``: (an offset expression, the param name when the base is one)."""
        inner = tok.strip()[1:-1].replace(" ", "")
        m = re.fullmatch(r"([%$\w.]+)(?:([+-])(\d+|0x[0-9a-fA-F]+))?", inner)
        if not m:
            raise EmulationError(f"{self.name}: address {tok!r} is not understood")
        base, sign, off = m.group(1), m.group(2), m.group(3)
        k = int(off, 0) * (-1 if sign == "-" else 1) if off else 0
        if space == "param":
            return str(k), base
        if base.startswith("%"):
            return f"({self.reg(base)} + {k})", None
        if base in self.mod.shared:
            return str(self.mod.shared[base] + k), None
        raise EmulationError(f"{self.name}: address base {base!r} is not understood")

    # compiling

    def _compile(self, body: str) -> None:
        stmts: list[tuple[str, str]] = []  # ("label", name) | ("ins", text)
        for raw in body.split("\n"):
            line = raw.strip()
            while line:
                m = re.match(r"^([$\w]+):", line)
                if m:
                    stmts.append(("label", m.group(1)))
                    line = line[m.end() :].strip()
                    continue
                if line[0] in "{}":
                    line = line[1:].strip()
                    continue
                head, sep, rest = line.partition(";")
                if not sep:
                    raise EmulationError(f"{self.name}: {line!r} does not end with ';'")
                stmts.append(("ins", head.strip()))
                line = rest.strip()
        insns = []
        for kind, text in stmts:
            if kind == "ins":
                m = _REGDECL.match(text)
                if m:
                    self._declare(m.group(1), m.group(2))
                    continue
            insns.append((kind, text))
        # blocks: a label starts one; a branch or an instruction that leaves the block
        # (barrier, yield, call, return) ends one
        labels: dict[str, int] = {}
        blocks: list[list[str]] = [[]]
        for kind, text in insns:
            if kind == "label":
                if blocks[-1]:
                    blocks.append([])
                labels[text] = len(blocks) - 1
                continue
            blocks[-1].append(text)
            if _ends_block(text):
                blocks.append([])
        if not blocks[-1]:
            blocks[-1].append("ret")  # falling off the end returns
        self.labels = labels
        self.calls: list[tuple[str, str | None, list[str]]] = []
        src = []
        for i, insns_i in enumerate(blocks):
            src.append(self._block(i, insns_i, len(blocks)))
        env = dict(_ENV)
        code = "\n".join(src)
        try:
            exec(compile(code, f"<ptx {self.name}>", "exec"), env)  # noqa: S102 - our own text
        except SyntaxError as e:  # pragma: no cover - an emulator bug
            raise EmulationError(f"{self.name}: compiled badly ({e})") from None
        self.blocks = [env[f"b{i}"] for i in range(len(blocks))]
        self.code = code

    def _block(self, i: int, insns: list[str], n: int) -> str:
        out = [f"def b{i}(R, T):"]
        nxt = i + 1
        ended = False
        for text in insns:
            lines, ended = self._insn(text, nxt)
            out += ["    " + ln for ln in lines]
        if not ended:
            out.append(f"    return {nxt}" if nxt < n else "    return -4")
        return "\n".join(out)

    def _insn(self, text: str, nxt: int) -> tuple[list[str], bool]:
        pred = None
        m = re.match(r"^@(!?)(%\w+)\s+", text)
        if m:
            pred = ("not " if m.group(1) else "") + self.reg(m.group(2))
            text = text[m.end() :]
        op, _, rest = text.partition(" ")
        ops = _split(rest)
        parts = op.split(".")
        base = parts[0]
        if base == "bra":
            target = self.labels.get(ops[0])
            if target is None:
                raise EmulationError(f"{self.name}: no label {ops[0]}")
            if pred:
                return [f"return {target} if {pred} else {nxt}"], True
            return [f"return {target}"], True
        if base in ("bar", "nanosleep", "call", "ret"):
            if pred:
                raise EmulationError(f"{self.name}: a predicated {op} is not emulated")
            if base == "bar":
                if ops and ops[0] != "0":
                    raise EmulationError(f"{self.name}: only barrier 0 is emulated")
                return [f"T.resume = {nxt}", "return -1"], True
            if base == "nanosleep":
                return [f"T.resume = {nxt}", "return -2"], True
            if base == "ret":
                return ["return -4"], True
            return self._call(rest, nxt), True
        if base == "membar" or base == "fence":
            return [], False  # the emulator's memory is sequentially consistent
        if op == ".param" or text.startswith(".param"):
            m = _PARAMDECL.match(text)
            if not m:
                raise EmulationError(f"{self.name}: {text!r} is not understood")
            size = _size(m.group(1), m.group(3))
            return [f"T.p[{m.group(2)!r}] = bytearray({size})"], False
        line = self._plain(op, parts, ops)
        if pred:
            return [f"if {pred}:", f"    {line}"], False
        return [line], False

    def _call(self, rest: str, nxt: int) -> list[str]:
        ops = _split(rest)
        if ops and ops[0].startswith("("):
            ret = ops[0].strip("() ")
            fn, args = ops[1], ops[2] if len(ops) > 2 else "()"
        else:
            ret, fn, args = None, ops[0], ops[1] if len(ops) > 1 else "()"
        names = [a.strip() for a in args.strip("() ").split(",") if a.strip()]
        self.calls.append((fn, ret or None, names))
        return [f"T.resume = {nxt}", f"T.calling = {len(self.calls) - 1}", "return -3"]

    def _plain(self, op: str, parts: list[str], ops: list[str]) -> str:
        base = parts[0]
        ty = parts[-1]
        if ty not in _TYPES:
            raise EmulationError(f"{self.name}: {op} is not emulated")
        w, kind = _TYPES[ty]
        mods = parts[1:-1]

        def d() -> str:
            return self.reg(ops[0])

        def v(k: int, width: int = w, k_: str = kind) -> str:
            return self.value(ops[k], width, k_)

        m = (1 << w) - 1
        if base == "mov":
            if ops[0].startswith("{"):  # unpack into halves
                lo, hi = (x.strip() for x in ops[0].strip("{}").split(","))
                half = w // 2
                return (
                    f"_v = {v(1)}; {self.reg(lo)} = _v & {(1 << half) - 1}; "
                    f"{self.reg(hi)} = _v >> {half}"
                )
            if ops[1].startswith("{"):
                lo, hi = (x.strip() for x in ops[1].strip("{}").split(","))
                return f"{d()} = {self.reg(lo)} | ({self.reg(hi)} << {w // 2})"
            return f"{d()} = {v(1)}"
        if base in ("ld", "st"):
            return self._memory(base, mods, ty, ops)
        if base == "atom":
            space, what = mods[0], mods[1]
            addr, _ = self.address(ops[1], space)
            fn = {"add": "_atom_add", "min": "_atom_min", "max": "_atom_max", "exch": "_atom_exch"}
            if what not in fn or kind not in "ub":
                raise EmulationError(f"{self.name}: {op} is not emulated")
            where = "T.shared" if space == "shared" else "T.mem"
            return f"{d()} = {fn[what]}({where}, {space == 'shared'}, {addr}, {w // 8}, {v(2)})"
        if base == "setp":
            return self._setp(mods, w, kind, ops)
        if base == "selp":
            return f"{d()} = {v(1)} if {self.reg(ops[3])} else {v(2)}"
        if base == "cvt":
            return self._cvt(mods, parts, ops)
        if kind == "f":
            return self._float(base, mods, w, ops)
        if kind == "p":
            a = [self.reg(x) for x in ops[1:]]
            if base == "not":
                return f"{d()} = not {a[0]}"
            sym = {"and": "and", "or": "or", "xor": "!="}[base]
            return f"{d()} = bool({a[0]}) {sym} bool({a[1]})"
        signed = kind == "s"
        if base in ("add", "sub"):
            return f"{d()} = ({v(1)} {'+' if base == 'add' else '-'} {v(2)}) & {m}"
        if base == "mul" and mods == ["lo"]:
            return f"{d()} = ({v(1)} * {v(2)}) & {m}"
        if base == "mul" and mods == ["hi"]:
            a, b = (f"sx({v(k)}, {w})" if signed else v(k) for k in (1, 2))
            return f"{d()} = (({a} * {b}) >> {w}) & {m}"
        if base == "mad" and mods == ["lo"]:
            return f"{d()} = ({v(1)} * {v(2)} + {v(3)}) & {m}"
        if base == "neg":
            return f"{d()} = (-{v(1)}) & {m}"
        if base in ("min", "max"):
            ca, cb = (f"sx(_a, {w})", f"sx(_b, {w})") if signed else ("_a", "_b")
            cmp = "<" if base == "min" else ">"
            return f"_a = {v(1)}; _b = {v(2)}; {d()} = _a if {ca} {cmp} {cb} else _b"
        if base in ("div", "rem"):
            return f"{d()} = idiv({v(1)}, {v(2)}, {w}, {signed}, {base == 'rem'})"
        if base in ("and", "or", "xor"):
            sym = {"and": "&", "or": "|", "xor": "^"}[base]
            return f"{d()} = {v(1)} {sym} {v(2)}"
        if base == "not":
            return f"{d()} = {v(1)} ^ {m}"
        if base == "shl":
            return f"_n = {v(2, 32, 'u')}; {d()} = ({v(1)} << _n) & {m} if _n < {w} else 0"
        if base == "shr":
            if signed:
                return f"_n = {v(2, 32, 'u')}; {d()} = (sx({v(1)}, {w}) >> min(_n, {w - 1})) & {m}"
            return f"_n = {v(2, 32, 'u')}; {d()} = {v(1)} >> _n if _n < {w} else 0"
        if base == "bfe":
            return f"{d()} = bfe({v(1)}, {v(2, 32, 'u')}, {v(3, 32, 'u')}, {w}, {signed})"
        raise EmulationError(f"{self.name}: {op} is not emulated")

    def _memory(self, base: str, mods: list[str], ty: str, ops: list[str]) -> str:
        w, kind = _TYPES[ty]
        n = max(w // 8, 1)
        space = next((x for x in mods if x in ("global", "shared", "param", "local", "const")), "")
        if space in ("local", "const"):
            raise EmulationError(f"{self.name}: {space} space is not emulated")
        at = ops[1] if base == "ld" else ops[0]
        addr, pname = self.address(at, space)
        if space == "param":
            where = f"T.p[{pname!r}]"
            load = f"_bytes_load({where}, {addr}, {n})"
        elif space == "shared":
            where = "T.shared"
            load = f"_bytes_load(T.shared, {addr}, {n})"
        else:
            where = None
            load = f"T.mem.load({addr}, {n})"
        if base == "ld":
            rw = self.regs[ops[0]][1] if ops[0] in self.regs else w
            expr = load
            if kind == "s" and w < rw:
                expr = f"sx({load}, {w}) & {(1 << rw) - 1}"
            return f"{self.reg(ops[0])} = {expr}"
        val = self.value(ops[1], w, kind)
        if where is None:
            return f"T.mem.store({addr}, {n}, {val})"
        return f"_bytes_store({where}, {addr}, {n}, {val})"

    def _setp(self, mods: list[str], w: int, kind: str, ops: list[str]) -> str:
        cmp = mods[0]
        combine = mods[1] if len(mods) > 1 else None
        a, b = self.value(ops[1], w, kind), self.value(ops[2], w, kind)
        if kind == "f":
            fv = "f32v" if w == 32 else "f64v"
            x, y = f"{fv}({a})", f"{fv}({b})"
            unordered = cmp.endswith("u") and cmp not in ("nan",)
            c = cmp[:-1] if unordered else cmp
            if c == "nan":
                e = "(_x != _x or _y != _y)"
            elif c == "num":
                e = "(_x == _x and _y == _y)"
            else:
                sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[c]
                if unordered:
                    e = f"(_x != _x or _y != _y or _x {sym} _y)"
                elif c == "ne":
                    e = "(_x == _x and _y == _y and _x != _y)"
                else:
                    e = f"(_x {sym} _y)"
            pre = f"_x = {x}; _y = {y}; "
        else:
            sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}.get(cmp)
            if cmp in ("lo", "ls", "hi", "hs"):
                sym = {"lo": "<", "ls": "<=", "hi": ">", "hs": ">="}[cmp]
                kind = "u"
            if sym is None:
                raise EmulationError(f"{self.name}: setp.{cmp} is not emulated")
            if kind == "s":
                pre, e = "", f"(sx({a}, {w}) {sym} sx({b}, {w}))"
            else:
                pre, e = "", f"({a} {sym} {b})"
        if combine:
            c = ops[3].strip()
            neg = c.startswith("!")
            pv = self.reg(c.lstrip("!"))
            pv = f"(not {pv})" if neg else f"bool({pv})"
            join = {"and": "and", "or": "or", "xor": "!="}[combine]
            e = f"({e} {join} {pv})"
        return f"{pre}{self.reg(ops[0])} = {e}"

    def _float(self, base: str, mods: list[str], w: int, ops: list[str]) -> str:
        fv, fb = ("f32v", "f32b") if w == 32 else ("f64v", "f64b")
        if any(x in mods for x in ("ftz", "approx", "sat", "full")) or (
            base in ("add", "sub", "mul", "div", "sqrt", "fma") and "rn" not in mods
        ):
            raise EmulationError(f"{self.name}: {base}.{'.'.join(mods)}.f{w} is not emulated")
        d = self.reg(ops[0])
        a = [f"{fv}({self.value(x, w, 'f')})" for x in ops[1:]]
        if base in ("add", "sub", "mul"):
            sym = {"add": "+", "sub": "-", "mul": "*"}[base]
            return f"{d} = {fb}({a[0]} {sym} {a[1]})"
        if base == "div":
            return f"{d} = {fb}(fdiv({a[0]}, {a[1]}))"
        if base == "sqrt":
            return f"{d} = {fb}(fsqrt({a[0]}))"
        if base == "fma":
            raw = [self.value(x, w, "f") for x in ops[1:]]
            return f"{d} = fma{w}({raw[0]}, {raw[1]}, {raw[2]})"
        if base in ("neg", "abs"):  # the sign bit only
            bit = 1 << (w - 1)
            x = self.value(ops[1], w, "f")
            return f"{d} = {x} ^ {bit}" if base == "neg" else f"{d} = {x} & {bit - 1}"
        raise EmulationError(f"{self.name}: {base}.f{w} is not emulated")

    def _cvt(self, mods: list[str], parts: list[str], ops: list[str]) -> str:
        dt, st = parts[-2], parts[-1]
        rnd = [x for x in mods[:-1] if x in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")]
        if any(x in mods for x in ("ftz", "sat")):
            raise EmulationError(f"{self.name}: cvt.{'.'.join(mods)} is not emulated")
        (dw, dk), (sw, sk) = _TYPES[dt], _TYPES[st]
        d = self.reg(ops[0])
        a = self.value(ops[1], sw, sk)
        if dk != "f" and sk != "f":  # integer -> integer
            src = f"sx({a}, {sw})" if sk == "s" else a
            return f"{d} = {src} & {(1 << dw) - 1}"
        if dk == "f" and sk == "f":
            if dw == sw:
                if rnd != ["rni"]:
                    raise EmulationError(f"{self.name}: cvt.{'.'.join(mods)} is not emulated")
                fv, fb = ("f32v", "f32b") if dw == 32 else ("f64v", "f64b")
                return f"{d} = {fb}(rni({fv}({a})))"
            if dw == 64:
                return f"{d} = f64b(f32v({a}))"  # exact; NaN -> the GPU's
            if rnd != ["rn"]:
                raise EmulationError(f"{self.name}: cvt.{'.'.join(mods)} is not emulated")
            return f"{d} = f32b(f64v({a}))"
        if dk == "f":  # integer -> float
            if rnd != ["rn"]:
                raise EmulationError(f"{self.name}: cvt.{'.'.join(mods)} is not emulated")
            src = f"sx({a}, {sw})" if sk == "s" else a
            return f"{d} = i2f32({src})" if dw == 32 else f"{d} = f64b(float({src}))"
        if rnd != ["rzi"]:
            raise EmulationError(f"{self.name}: cvt.{'.'.join(mods)} is not emulated")
        fv = "f32v" if sw == 32 else "f64v"
        return f"{d} = f2i({fv}({a}), {dk == 's'}, {dw})"


def _ends_block(text: str) -> bool:
    t = re.sub(r"^@!?%\w+\s+", "", text)
    return t.split(" ", 1)[0].split(".")[0] in ("bra", "bar", "nanosleep", "call", "ret")


def _split(rest: str) -> list[str]:
    """Operands, split at the commas outside brackets, braces and parentheses."""
    out, depth, cur = [], 0, []
    for ch in rest:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _atom(space_buf, shared: bool, addr: int, n: int, fn) -> int:
    if shared:
        old = _bytes_load(space_buf, addr, n)
        _bytes_store(space_buf, addr, n, fn(old))
    else:
        old = space_buf.load(addr, n)
        space_buf.store(addr, n, fn(old))
    return old


def _atom_add(buf, shared, addr, n, v):
    return _atom(buf, shared, addr, n, lambda o: (o + v) & ((1 << (8 * n)) - 1))


def _atom_min(buf, shared, addr, n, v):
    return _atom(buf, shared, addr, n, lambda o: min(o, v))


def _atom_max(buf, shared, addr, n, v):
    return _atom(buf, shared, addr, n, lambda o: max(o, v))


def _atom_exch(buf, shared, addr, n, v):
    return _atom(buf, shared, addr, n, lambda o: v)


_ENV = {
    "f32v": f32v,
    "f64v": f64v,
    "f32b": f32b,
    "f64b": f64b,
    "fdiv": fdiv,
    "fsqrt": fsqrt,
    "fma32": fma32,
    "fma64": fma64,
    "rni": rni,
    "i2f32": i2f32,
    "f2i": f2i,
    "sx": sx,
    "idiv": idiv,
    "bfe": bfe,
    "min": min,
    "float": float,
    "bool": bool,
    "bytearray": bytearray,
    "_bytes_load": _bytes_load,
    "_bytes_store": _bytes_store,
    "_atom_add": _atom_add,
    "_atom_min": _atom_min,
    "_atom_max": _atom_max,
    "_atom_exch": _atom_exch,
}


class Module:
    """A parsed PTX module: its shared variables (laid out), functions and kernel."""

    def __init__(self, text: str) -> None:
        text = _COMMENT.sub("", text)
        self.shared: dict[str, int] = {}
        self.shared_size = 0
        self.functions: dict[str, Function] = {}
        self.entry: str | None = None
        at = 0
        pending: list[tuple] = []
        while at < len(text):
            m = _FUNC.search(text, at)
            head = text[at : m.start() if m else len(text)]
            lines = head.split("\n")  # .version, .target, .address_size end at the line
            kept = [ln for ln in lines if not ln.strip().startswith(_HEADER_DIRECTIVES)]
            for stmt in "\n".join(kept).split(";"):
                self._directive(stmt.strip())
            if not m:
                break
            if m.group("end") == ";":  # a prototype
                at = m.end()
                continue
            close = _matching(text, m.end() - 1)
            pending.append((m, text[m.end() : close]))
            at = close + 1
        for m, body in pending:
            ret = None
            if m.group("ret"):
                pm = _PARAMDECL.match(m.group("ret").strip())
                if not pm:
                    raise EmulationError(f"return parameter {m.group('ret')!r} not understood")
                ret = Param(pm.group(2), _size(pm.group(1), pm.group(3)))
            params = []
            for p in m.group("params").split(","):
                p = p.strip()
                if not p:
                    continue
                pm = _PARAMDECL.match(p)
                if not pm:
                    raise EmulationError(f"parameter {p!r} not understood")
                params.append(Param(pm.group(2), _size(pm.group(1), pm.group(3))))
            name = m.group("name")
            self.functions[name] = Function(name, ret, params, body, self)
            if m.group(2) == "entry":
                self.entry = name
        if self.entry is None:
            raise EmulationError("the module has no .entry")

    def _directive(self, stmt: str) -> None:
        if not stmt:
            return
        m = _SHARED.match(stmt)
        if m:
            align = int(m.group(1) or 1)
            self.shared_size = (self.shared_size + align - 1) // align * align
            self.shared[m.group(3)] = self.shared_size
            self.shared_size += _size(m.group(2), m.group(4))
            return
        raise EmulationError(f"directive {stmt[:60]!r} is not emulated")


_HEADER_DIRECTIVES = (".version", ".target", ".address_size")


def _matching(text: str, at: int) -> int:
    depth = 0
    for i in range(at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise EmulationError("a function's body is not closed")


# --- threads ---------------------------------------------------------------------------------

RUN, BAR, DONE = 0, 1, 2


class Frame:
    __slots__ = ("fn", "R", "p", "bi", "call")

    def __init__(self, fn: Function, params: dict) -> None:
        self.fn, self.R, self.p, self.bi = fn, [0] * len(fn.regs), params, 0
        self.call = None


class Thread:
    __slots__ = (
        "tid",
        "ntid",
        "ctaid",
        "nctaid",
        "shared",
        "mem",
        "frames",
        "p",
        "state",
        "resume",
        "calling",
        "mod",
    )

    def __init__(self, mod: Module, tid, ntid, ctaid, nctaid, shared, mem, params) -> None:
        self.tid, self.ntid, self.ctaid, self.nctaid = tid, ntid, ctaid, nctaid
        self.shared, self.mem, self.mod = shared, mem, mod
        entry = mod.functions[mod.entry]
        self.frames = [Frame(entry, params)]
        self.p = params
        self.state = RUN
        self.resume = 0
        self.calling = 0

    def run(self, quantum: int) -> int:
        """Run up to ``quantum`` blocks; how many ran."""
        fr = self.frames[-1]
        blocks, R, bi = fr.fn.blocks, fr.R, fr.bi
        ran = 0
        while ran < quantum:
            ran += 1
            bi = blocks[bi](R, self)
            if bi >= 0:
                continue
            if bi == -1:  # bar.sync
                fr.bi = self.resume
                self.state = BAR
                return ran
            if bi == -2:  # nanosleep: let the others run
                fr.bi = self.resume
                return ran
            if bi == -3:  # call
                fr.bi = self.resume
                fname, ret, args = fr.fn.calls[self.calling]
                callee = self.mod.functions.get(fname)
                if callee is None:
                    raise EmulationError(f"a call of {fname}, which the module lacks")
                if len(args) != len(callee.params):
                    raise EmulationError(f"a call of {fname} with {len(args)} arguments")
                params = {}
                for a, p in zip(args, callee.params, strict=True):
                    given = self.p.get(a)
                    if given is None:
                        raise EmulationError(f"argument {a} of a call of {fname} is undeclared")
                    params[p.name] = bytearray(given[: p.size].ljust(p.size, b"\0"))
                if callee.ret is not None:
                    params[callee.ret.name] = bytearray(callee.ret.size)
                fr.call = (ret, callee.ret.name if callee.ret else None)
                if len(self.frames) > 4096:
                    raise EmulationError("calls nested past 4096 frames (the stack is gone)")
                fr = Frame(callee, params)
                self.frames.append(fr)
                self.p = params
                blocks, R, bi = callee.blocks, fr.R, 0
                continue
            # return
            done = self.frames.pop()
            if not self.frames:
                self.state = DONE
                return ran
            fr = self.frames[-1]
            ret, name = fr.call
            if ret is not None:
                self.p = fr.p
                self.p[ret] = done.p[name] if name else bytearray(0)
            self.p = fr.p
            blocks, R, bi = fr.fn.blocks, fr.R, fr.bi
        fr.bi = bi
        return ran


def launch(
    mod: Module,
    mem: Memory,
    kernel_params: dict[str, int],
    blocks: int,
    threads: int,
    block_limit: int = DEFAULT_BLOCK_LIMIT,
) -> int:
    """Run the kernel on ``blocks`` CTAs of ``threads`` threads; the blocks it ran."""
    entry = mod.functions[mod.entry]
    ctas = []
    for c in range(blocks):
        shared = bytearray(mod.shared_size)
        members = []
        for t in range(threads):
            params = {}
            for p in entry.params:
                params[p.name] = bytearray(kernel_params[p.name].to_bytes(8, "little")[: p.size])
            members.append(Thread(mod, t, threads, c, blocks, shared, mem, params))
        ctas.append(members)
    everyone = [t for cta in ctas for t in cta]
    total = 0
    while True:
        ran_any = False
        for th in everyone:
            if th.state == RUN:
                total += _step(th)
                ran_any = True
                if total > block_limit:
                    raise EmulationLimit(f"the kernel ran past {block_limit:,} blocks")
        released = False
        for cta in ctas:
            if all(t.state == BAR for t in cta):
                for t in cta:
                    t.state = RUN
                released = True
            elif any(t.state == DONE for t in cta) and any(t.state == BAR for t in cta):
                # undefined in the ISA; never what this backend means
                raise EmulationError(
                    "deadlock: a thread returned from the kernel while others wait at a barrier"
                )
        if not ran_any and not released:
            if all(t.state == DONE for t in everyone):
                return total
            waiting = sum(t.state == BAR for t in everyone)
            raise EmulationError(
                f"deadlock: {waiting} thread(s) wait at a barrier that the others never reach"
            )


def _step(th: Thread) -> int:
    try:
        return th.run(QUANTUM)
    except EmulationError:
        raise
    except (ArithmeticError, ValueError, TypeError, IndexError, KeyError) as e:
        where = th.frames[-1].fn.name if th.frames else "?"
        raise EmulationError(f"in {where}, thread {th.tid} of CTA {th.ctaid}: {e}") from None


# --- the device the runtime launches on ------------------------------------------------------


class EmulatedDevice:
    """What :mod:`kera_core.backends.ptx.runtime` launches a kernel on when no GPU is asked
    for: its arenas, log and cells are regions of emulated global memory."""

    def __init__(self, memory: int, shape: Shape = Shape()) -> None:
        from kera_core.backends.ptx import runtime as R

        self.R = R
        self.shape = shape
        self.memory = min(memory, ARENA)
        self.mem = Memory()
        self.modules: dict[bytes, Module] = {}
        self.last_blocks = 1
        self.last_threads = 1
        self.last_kernel_ms = 0.0
        self.blocks_run = 0

    def module(self, text: str) -> Module:
        key = self.R.ptx_key(text)
        mod = self.modules.get(key)
        if mod is None:
            mod = self.modules[key] = Module(text)
        return mod

    def get_bytes(self, addr: int, nbytes: int) -> np.ndarray:
        return self.mem.read(int(addr), nbytes)

    def launch(self, launch, text: str) -> tuple[np.ndarray, np.ndarray, bytes]:
        R = self.R
        mod = self.module(text)
        mem = self.mem = Memory()  # a fresh device per launch
        cells = list(launch.cells)
        for slot, arr, _space in launch.buffers:
            at = mem.map(arr.nbytes)
            mem.write(at, arr)
            cells[slot] = at
        io = np.array(cells + [0] * launch.n_results, dtype=np.uint64)
        dio = mem.map(io.nbytes)
        mem.write(dio, io)
        log = mem.map(R.LOG_BYTES)
        arenas = {"device": (mem.map(self.memory, fill=JUNK), self.memory)}
        for space in ("pinned", "unified"):
            arenas[space] = (mem.map(SPACE_ARENA, fill=JUNK), SPACE_ARENA)
        ctx = R.context_cells(launch.steps, arenas, log, R.LOG_BYTES)
        cells_at = mem.map(ctx.nbytes)
        mem.write(cells_at, ctx)
        blocks = self.shape.blocks if launch.grid else 1
        threads = max(1, min(launch.threads, self.shape.threads))
        self.last_blocks, self.last_threads = blocks, threads
        self.blocks_run = launch_module(mod, mem, dio, cells_at, blocks, threads)
        ctx_after = mem.read(cells_at, ctx.nbytes).view(np.uint64)
        io_after = mem.read(dio, io.nbytes).view(np.uint64)
        at = int(ctx_after[S.CTX_LOG_AT])
        logged = b"" if at == 2**64 - 1 else mem.read(log, at - log).tobytes()
        return ctx_after, io_after, logged

    def release(self) -> None:
        pass


def launch_module(mod: Module, mem: Memory, io: int, cells: int, blocks: int, threads: int) -> int:
    entry = mod.functions[mod.entry]
    names = [p.name for p in entry.params]
    if len(names) != 2:
        raise EmulationError(f"the kernel takes {len(names)} parameters, not (io, ctx)")
    return launch(mod, mem, {names[0]: io, names[1]: cells}, blocks, threads)


__all__ = ["EmulatedDevice", "EmulationError", "Module", "Shape", "launch"]
