"""PTX selected from the loop program (docs/targets/ptx.md).

Every loop-program function becomes a PTX ``.func``; the entry is wrapped in one
``.entry`` kernel (``kera_main``). The kernel runs as a **grid** — as many CTAs of 256
threads as the GPU holds at once, launched cooperatively — when the program has a mapped
loop and no loop repeating memory effects in order without one (:func:`sequential_effects`),
else as **one CTA** (256 threads with a mapped loop, else 1). Every function is executed by
all threads *uniformly*:

* scalar code (every :class:`~kera_core.loops.ir.Op`, every ``Load``) is replicated: each
  thread computes the same values, so conditions, trip counts and call arguments agree;
* memory effects are made once: a ``Store``, ``Alloc``, ``Free`` or ``Print`` outside a
  mapped loop is done by thread 0 (of the grid) between two barriers (``bar.sync``, or the
  grid barrier ``k_gsync``), so no thread reads a location before or after it is written out
  of order; a ``Copy`` is strided over all threads (a fresh buffer is not zeroed: the loop
  program writes every element before it reads it);
* a loop marked ``parallel`` or ``lanes`` whose body is only arithmetic, loads, stores,
  ``If``, ``Check``, ``Copy`` and uncounted inner loops is **mapped**: thread ``t`` of ``T``
  runs iterations ``lo + t, lo + t + T, …`` (inner loops sequential in the thread). A failing
  ``Check`` in a mapped loop records ``(iteration << 8) | code`` with ``atom.min`` (shared
  memory on one CTA, a context cell on a grid), so after the loop the error of the lowest
  failing iteration is the one reported — the reference order of semantics.md §9;
* a function returns a status (0 or the checked error's number) first, then its results;
  a non-zero status is passed up by every caller, and the kernel writes it to the run's
  context.

Values: ``bool`` and 8–32-bit integers live in ``.b32`` registers, kept sign- or
zero-extended to 32 bits by their type after every operation that can leave the range
(``bfe``/``and``), 64-bit integers in ``.b64``, floats in ``.f32``/``.f64``. Every float
operation carries ``.rn``; nothing uses ``.ftz`` or ``.approx``; ``fma.rn`` is emitted only
for the loop program's ``fma``.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from kera_core.loops import ir
from kera_core.loops.ir import BITS, is_float, is_signed
from kera_core.loops.run_abi import ERROR_NUMBERS

MAX_THREADS = 256

# The run's context: u64 cells in device memory, written by the host before the launch.
CTX_STATUS = 0  # the kernel's status (0 or an error number)
CTX_STEPS = 1  # the step budget (R0007)
CTX_CURSOR = 2  # the arena: next free byte
CTX_TOP = 3  # the arena: header of the last live block (0: none)
CTX_END = 4  # the arena: one past its last byte
CTX_BASE = 5  # the arena: its first byte
CTX_LOG = 6  # the print log: its first byte
CTX_LOG_AT = 7  # the print log: the next byte to write (all ones: overflowed)
CTX_LOG_END = 8  # the print log: one past its last byte
# a grid's cells (several CTAs: docs/targets/ptx.md, "Grid mapping")
CTX_BAR_COUNT = 9  # CTAs arrived at the current grid barrier
CTX_BAR_GEN = 10  # grid barriers completed
CTX_ERRMIN = 11  # a mapped loop's first failure, (iteration << 8) | code; all ones: none
CTX_BCAST = 12  # global thread 0's value for the grid (an allocation's address)
# the arenas of the other memory spaces, four cells each like the device arena's (cursor,
# top, end, base): page-locked host memory mapped into the device (`pinned`), managed memory
# (`unified`). `host` and `device` buffers share the device arena: the runner stages `host`
# parameters and results through device memory (docs/targets/ptx.md, "Memory spaces").
CTX_PINNED = 13
CTX_UNIFIED = 17
CTX_CELLS = 21
ARENA_CELLS = {
    "device": (CTX_CURSOR, CTX_TOP, CTX_END, CTX_BASE),
    "host": (CTX_CURSOR, CTX_TOP, CTX_END, CTX_BASE),
    "pinned": tuple(range(CTX_PINNED, CTX_PINNED + 4)),
    "unified": tuple(range(CTX_UNIFIED, CTX_UNIFIED + 4)),
}

HEADER = 64  # bytes before each arena block: [previous top, freed]; keeps 64-byte alignment


class NotSelected(Exception):
    """A loop-program construct this backend does not select (yet)."""


def _cls(t: str) -> str:
    if t in ("i64", "u64"):
        return "b64"
    if t == "f32":
        return "f32"
    if t == "f64":
        return "f64"
    return "b32"  # bool, 8-32-bit integers


REG_PREFIX = {"b32": "%r", "b64": "%rd", "f32": "%f", "f64": "%fd", "pred": "%p"}
SIZE = {
    "bool": 1,
    "i8": 1,
    "u8": 1,
    "i16": 2,
    "u16": 2,
    "i32": 4,
    "u32": 4,
    "f32": 4,
    "i64": 8,
    "u64": 8,
    "f64": 8,
}
LDST = {
    "bool": "u8",
    "i8": "s8",
    "u8": "u8",
    "i16": "s16",
    "u16": "u16",
    "i32": "b32",
    "u32": "b32",
    "f32": "f32",
    "i64": "b64",
    "u64": "b64",
    "f64": "f64",
}
CANON = {"f32": "0f7FC00000", "f64": "0d7FF8000000000000"}
SIGN = {"f32": "0x80000000", "f64": "0x8000000000000000"}


def _ityp(t: str) -> str:
    """The PTX integer type an operation on a Kera integer (or bool) uses."""
    w = 64 if _cls(t) == "b64" else 32
    return f"{'s' if is_signed(t) else 'u'}{w}"


def _fimm(t: str, value: float) -> str:
    if t == "f32":
        return "0f{:08X}".format(struct.unpack("<I", struct.pack("<f", value))[0])
    return "0d{:016X}".format(struct.unpack("<Q", struct.pack("<d", value))[0])


def imm_text(c: ir.Imm) -> str:
    """The literal of an immediate in its register class."""
    t = c.type
    if t == "f32":
        return "0f%08X" % (c.bits & 0xFFFFFFFF)
    if t == "f64":
        return "0d%016X" % (c.bits & (2**64 - 1))
    if _cls(t) == "b64":
        return "0x%016X" % (c.bits & (2**64 - 1))
    bits = BITS[t]
    v = c.bits & ((1 << bits) - 1)
    if t == "bool":
        v = 1 if v else 0
    elif is_signed(t) and v >> (bits - 1):
        v -= 1 << bits  # sign-extend to 32 bits
    return "0x%08X" % (v & 0xFFFFFFFF)


def print_sites(program: ir.Program) -> list[ir.Print]:
    """Every Print statement of the program, numbered in program order (the log's site)."""
    out: list[ir.Print] = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, ir.Print):
                out.append(s)
            elif isinstance(s, ir.Loop):
                walk(s.body)
            elif isinstance(s, ir.While):
                walk(s.cond)
                walk(s.body)
            elif isinstance(s, ir.If):
                walk(s.then)
                walk(s.orelse)

    for lf in program.functions.values():
        walk(lf.body)
    return out


def why_not_mapped(loop: ir.Loop) -> str | None:
    """Why a ``parallel``/``lanes`` loop runs sequentially (None: it is mapped to threads)."""
    if loop.mark not in ("parallel", "lanes"):
        return "marked seq"
    if loop.counted:
        return "a counted (source) loop: its steps are spent in order"

    def body_ok(stmts) -> str | None:
        for s in stmts:
            t = type(s)
            if t in (ir.Op, ir.Load, ir.Store, ir.Check, ir.Copy):
                continue
            if t is ir.If:
                r = body_ok(s.then) or body_ok(s.orelse)
                if r:
                    return r
                continue
            if t is ir.Loop:
                if s.counted:
                    return "its body has a counted loop"
                r = body_ok(s.body)
                if r:
                    return r
                continue
            return f"its body has a {t.__name__} (done once, in order, by thread 0)"
        return None

    return body_ok(loop.body)


@dataclass
class LoopInfo:
    function: str
    var: str
    mark: str
    mapped: bool
    why: str | None


@dataclass
class Selected:
    text: str
    entry: str
    threads: int  # the CTA size the kernel is launched with
    loops: list[LoopInfo] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # Kera name -> PTX name
    grid: bool = False  # launched as many CTAs as fit on the GPU at once (else one)


class Fn:
    """One loop-program function as a PTX ``.func``. ``grid``: the kernel runs as several
    CTAs, so barriers are grid barriers and thread 0 is the grid's."""

    def __init__(
        self,
        lf: ir.LFunction,
        prog: ir.Program,
        names: dict,
        sites: dict,
        loops: list,
        grid: bool = False,
    ):
        self.grid = grid
        self.lf = lf
        self.prog = prog
        self.names = names
        self.sites = sites
        self.loops = loops
        self.counts = {"b32": 0, "b64": 0, "f32": 0, "f64": 0, "pred": 0}
        self.vars: dict[int, str] = {}
        self.bufs: dict[int, str] = {}
        self.lines: list[str] = []
        self.labels = 0
        self.thread_fail: str | None = None  # inside a mapped loop: its exit label
        self.helpers: set[str] = set()  # the module's helper functions this one calls
        self.mapped_key = None  # (iteration register, lo register)

    # --- registers ------------------------------------------------------------------------

    def reg(self, cls: str) -> str:
        n = self.counts[cls]
        self.counts[cls] = n + 1
        return f"{REG_PREFIX[cls]}{n}"

    def label(self, what: str) -> str:
        self.labels += 1
        return f"$L_{what}_{self.labels}"

    def e(self, text: str) -> None:
        self.lines.append("\t" + text)

    def place(self, label: str) -> None:
        self.lines.append(f"{label}:")

    def var(self, v: ir.Var) -> str:
        if v.lanes != 1:
            raise NotSelected("vector Vars (lanes > 1) are not selected for ptx")
        r = self.vars.get(v.id)
        if r is None:
            r = self.vars[v.id] = self.reg(_cls(v.type))
        return r

    def buf(self, b: ir.Buf) -> str:
        r = self.bufs.get(b.id)
        if r is None:
            r = self.bufs[b.id] = self.reg("b64")
        return r

    def val(self, x) -> str:
        """A register holding operand ``x`` (an immediate is moved into a fresh one)."""
        if isinstance(x, ir.Var):
            return self.var(x)
        c = _cls(x.type)
        r = self.reg(c)
        self.e(f"mov.{c} {r}, {imm_text(x)};")
        return r

    def norm(self, r: str, t: str) -> None:
        """Re-extend an 8/16-bit (or bool) value in a 32-bit register after an operation."""
        if t in ("i8", "i16"):
            self.e(f"bfe.s32 {r}, {r}, 0, {BITS[t]};")
        elif t in ("u8", "u16"):
            self.e(f"and.b32 {r}, {r}, {(1 << BITS[t]) - 1};")
        elif t == "bool":
            self.e(f"and.b32 {r}, {r}, 1;")

    def pred_of(self, x) -> str:
        p = self.reg("pred")
        self.e(f"setp.ne.u32 {p}, {self.val(x)}, 0;")
        return p

    def canon(self, r: str, t: str) -> str:
        p = self.reg("pred")
        d = self.reg(t)
        self.e(f"setp.nan.{t} {p}, {r}, {r};")
        self.e(f"selp.{t} {d}, {CANON[t]}, {r}, {p};")
        return d

    # --- the function ---------------------------------------------------------------------

    def params(self) -> list:
        flat: list = list(self.lf.dims)
        for g in self.lf.params:
            flat += g
        return flat

    def results(self) -> list:
        return [x for g in self.lf.results for x in g]

    @staticmethod
    def ptype(x) -> str:
        return "b64" if isinstance(x, ir.Buf) else _cls(x.type)

    def signature(self) -> str:
        """One return parameter (PTX allows one): the status at byte 0, result ``i`` at
        ``8 * (i + 1)``."""
        name = self.names[self.lf.name]
        size = 8 * (1 + len(self.results()))
        args = [f"\t.param .{self.ptype(x)} arg_{i}" for i, x in enumerate(self.params())]
        return (
            f".func (.param .align 8 .b8 ret[{size}]) {name} (\n"
            + ",\n".join(args)
            + ("\n" if args else "")
            + ")"
        )

    def select(self) -> str:
        self.status = self.reg("b32")
        self.tid = self.reg("b32")
        self.ntid = self.reg("b32")
        self.t0 = self.reg("pred")
        self.ctx = self.reg("b64")
        self.steps_at = self.reg("b32")
        self.exit = "$L_exit"
        local = self.reg("b32")
        self.e(f"mov.u32 {local}, %tid.x;")
        if self.grid:  # thread t of the grid; ntid: the grid's threads
            self.e(f"mov.u32 {self.ntid}, %ctaid.x;")
            self.e(f"mov.u32 {self.tid}, %ntid.x;")
            self.e(f"mad.lo.u32 {self.tid}, {self.ntid}, {self.tid}, {local};")
            self.e(f"mov.u32 {self.ntid}, %nctaid.x;")
            self.e(f"mov.u32 {local}, %ntid.x;")
            self.e(f"mul.lo.u32 {self.ntid}, {self.ntid}, {local};")
            self.e(f"mov.u32 {local}, %tid.x;")
        else:
            self.e(f"mov.u32 {self.tid}, {local};")
            self.e(f"mov.u32 {self.ntid}, %ntid.x;")
        self.e(f"setp.eq.u32 {self.t0}, {self.tid}, 0;")
        self.e(f"ld.shared.u64 {self.ctx}, [k_ctx];")
        self.e(f"mov.u32 {self.steps_at}, k_steps;")
        self.e(f"mad.lo.u32 {self.steps_at}, {local}, 8, {self.steps_at};")
        self.e(f"mov.u32 {self.status}, 0;")
        for i, x in enumerate(self.params()):
            r = self.buf(x) if isinstance(x, ir.Buf) else self.var(x)
            self.e(f"ld.param.{self.ptype(x)} {r}, [arg_{i}];")
        self.block(self.lf.body)
        self.place(self.exit)
        self.e(f"st.param.b32 [ret], {self.status};")
        for i, x in enumerate(self.results()):
            r = self.buf(x) if isinstance(x, ir.Buf) else self.var(x)
            self.e(f"st.param.{self.ptype(x)} [ret+{8 * (i + 1)}], {r};")
        self.e("ret;")
        decls = [f"\t.reg .{c} {REG_PREFIX[c]}<{max(n, 1)}>;" for c, n in self.counts.items()]
        head = f"// {self.lf.name}\n{self.signature()}\n{{"
        return "\n".join([head, *decls, *self.lines, "}"]) + "\n"

    # --- statements -----------------------------------------------------------------------

    @property
    def in_thread(self) -> bool:
        return self.thread_fail is not None

    def barrier(self) -> None:
        if not self.in_thread:
            self.sync()

    def sync(self) -> None:
        """Every thread of the kernel waits here: ``bar.sync`` on one CTA, the grid barrier
        (``k_gsync``) on several."""
        text = "call.uni k_gsync;" if self.grid else "bar.sync 0;"
        if self.lines and self.lines[-1] == "\t" + text:
            return  # nothing happened since the last barrier (no label either: no jump in)
        self.e(text)

    def errmin(self) -> str:
        """The address of the mapped loop's first-failure cell."""
        return f"{self.ctx}+{8 * CTX_ERRMIN}" if self.grid else "k_errmin"

    def fail(self, pred: str, code: int) -> None:
        """Stop with error ``code`` where ``pred`` holds (uniform outside mapped loops)."""
        if self.in_thread:
            it, lo = self.mapped_key
            skip = self.label("ok")
            k = self.reg("b64")
            old = self.reg("b64")
            self.e(f"@!{pred} bra {skip};")
            self.e(f"sub.s64 {k}, {it}, {lo};")
            self.e(f"shl.b64 {k}, {k}, 8;")
            self.e(f"or.b64 {k}, {k}, {code};")
            space = "global" if self.grid else "shared"
            self.e(f"atom.{space}.min.u64 {old}, [{self.errmin()}], {k};")
            self.e(f"bra {self.thread_fail};")
            self.place(skip)
        else:
            self.e(f"@{pred} mov.u32 {self.status}, {code};")
            self.e(f"@{pred} bra {self.exit};")

    def block(self, stmts: list) -> None:
        for s in stmts:
            t = type(s)
            if t is ir.Op:
                self.op(s)
            elif t is ir.Load:
                self.load(s)
            elif t is ir.Store:
                self.store(s)
            elif t is ir.Loop:
                self.loop(s)
            elif t is ir.While:
                self.while_(s)
            elif t is ir.If:
                p = self.pred_of(s.cond)
                other, end = self.label("else"), self.label("endif")
                self.e(f"@!{p} bra {other};")
                self.block(s.then)
                self.e(f"bra {end};")
                self.place(other)
                self.block(s.orelse)
                self.place(end)
            elif t is ir.Check:
                p = self.reg("pred")
                self.e(f"setp.eq.u32 {p}, {self.val(s.ok)}, 0;")
                self.fail(p, ERROR_NUMBERS[s.code])
            elif t is ir.Alloc:
                self.alloc(s.buf)
            elif t is ir.Free:
                self.free(s.buf)
            elif t is ir.Copy:
                self.copy(s)
            elif t is ir.Call:
                self.call(s)
            elif t is ir.Print:
                self.print_(s)
            else:  # pragma: no cover - a lowering bug
                raise NotSelected(f"ptx does not select {t.__name__}")

    def address(self, b: ir.Buf, index) -> str:
        a = self.reg("b64")
        size = SIZE[b.elem]
        if isinstance(index, ir.Imm):
            off = (index.bits & (2**64 - 1)) * size & (2**64 - 1)
            self.e(f"add.s64 {a}, {self.buf(b)}, {off};")
        else:
            self.e(f"mad.lo.s64 {a}, {self.var(index)}, {size}, {self.buf(b)};")
        return a

    def load(self, s: ir.Load) -> None:
        a = self.address(s.buf, s.index)
        self.e(f"ld.{LDST[s.buf.elem]} {self.var(s.dst)}, [{a}];")

    def store(self, s: ir.Store) -> None:
        v = self.val(s.value)
        a = self.address(s.buf, s.index)
        if self.in_thread:
            self.e(f"st.{LDST[s.buf.elem]} [{a}], {v};")
            return
        self.barrier()
        self.e(f"@{self.t0} st.{LDST[s.buf.elem]} [{a}], {v};")
        self.barrier()

    def tick(self) -> None:
        """One step of the run's budget (each thread keeps its own copy: all spend alike)."""
        s = self.reg("b64")
        p = self.reg("pred")
        self.e(f"ld.shared.u64 {s}, [{self.steps_at}];")
        self.e(f"sub.s64 {s}, {s}, 1;")
        self.e(f"st.shared.u64 [{self.steps_at}], {s};")
        self.e(f"setp.lt.s64 {p}, {s}, 0;")
        self.fail(p, ERROR_NUMBERS["R0007"])

    def loop(self, s: ir.Loop) -> None:
        why = None if self.in_thread else why_not_mapped(s)
        if not self.in_thread and s.mark != "seq":
            self.loops.append(LoopInfo(self.lf.name, repr(s.var), s.mark, why is None, why))
        lo = self.reg("b64")
        hi = self.reg("b64")
        self.e(f"mov.b64 {lo}, {self.val(s.lo)};")
        self.e(f"mov.b64 {hi}, {self.val(s.hi)};")
        i = self.reg("b64")
        head, done = self.label("loop"), self.label("done")
        p = self.reg("pred")
        if why is None and not self.in_thread:
            # mapped: thread t runs iterations lo + t, lo + t + ntid, ...
            can_fail = _has_check(s.body)
            space = "global" if self.grid else "shared"
            self.sync()
            if can_fail:  # the first-failure cell: reset, and every thread sees it reset
                self.e(f"@{self.t0} st.{space}.u64 [{self.errmin()}], -1;")
                self.sync()
            step = self.reg("b64")
            self.e(f"cvt.u64.u32 {step}, {self.tid};")
            self.e(f"add.s64 {i}, {lo}, {step};")
            self.e(f"cvt.u64.u32 {step}, {self.ntid};")
            self.place(head)
            self.e(f"setp.ge.s64 {p}, {i}, {hi};")
            self.e(f"@{p} bra {done};")
            self.e(f"mov.b64 {self.var(s.var)}, {i};")
            self.thread_fail, self.mapped_key = done, (i, lo)
            self.block(s.body)
            self.thread_fail, self.mapped_key = None, None
            self.e(f"add.s64 {i}, {i}, {step};")
            self.e(f"bra {head};")
            self.place(done)
            self.sync()
            if not can_fail:
                return
            err = self.reg("b64")
            ld = "ld.volatile.global" if self.grid else "ld.shared"
            self.e(f"{ld}.u64 {err}, [{self.errmin()}];")
            self.sync()
            q = self.reg("pred")
            code = self.reg("b64")
            self.e(f"setp.ne.u64 {q}, {err}, -1;")
            self.e(f"and.b64 {code}, {err}, 255;")
            self.e(f"@{q} cvt.u32.u64 {self.status}, {code};")
            self.e(f"@{q} bra {self.exit};")
            return
        self.e(f"mov.b64 {i}, {lo};")
        self.place(head)
        self.e(f"setp.ge.s64 {p}, {i}, {hi};")
        self.e(f"@{p} bra {done};")
        if s.counted:
            self.tick()
        self.e(f"mov.b64 {self.var(s.var)}, {i};")
        self.block(s.body)
        self.e(f"add.s64 {i}, {i}, 1;")
        self.e(f"bra {head};")
        self.place(done)

    def while_(self, s: ir.While) -> None:
        head, done = self.label("while"), self.label("wend")
        self.place(head)
        self.block(s.cond)
        p = self.pred_of(s.test)
        self.e(f"@!{p} bra {done};")
        self.tick()
        self.block(s.body)
        self.e(f"bra {head};")
        self.place(done)

    def strided(self, count: str, body) -> None:
        """``body(k)`` for ``k`` in ``0..count``: strided over the CTA (uniform code) or in
        order (inside a mapped loop)."""
        k = self.reg("b64")
        step = self.reg("b64")
        head, done = self.label("each"), self.label("eachend")
        p = self.reg("pred")
        if self.in_thread:
            self.e(f"mov.b64 {k}, 0;")
            self.e(f"mov.b64 {step}, 1;")
        else:
            self.e(f"cvt.u64.u32 {k}, {self.tid};")
            self.e(f"cvt.u64.u32 {step}, {self.ntid};")
        self.place(head)
        self.e(f"setp.ge.s64 {p}, {k}, {count};")
        self.e(f"@{p} bra {done};")
        body(k)
        self.e(f"add.s64 {k}, {k}, {step};")
        self.e(f"bra {head};")
        self.place(done)

    def copy(self, s: ir.Copy) -> None:
        n = self.val(s.count)
        da, sa = self.val(s.dst_at), self.val(s.src_at)
        size = SIZE[s.dst.elem]
        d0, s0 = self.reg("b64"), self.reg("b64")
        self.e(f"mad.lo.s64 {d0}, {da}, {size}, {self.buf(s.dst)};")
        self.e(f"mad.lo.s64 {s0}, {sa}, {size}, {self.buf(s.src)};")
        v = self.reg(_cls(s.dst.elem))
        lt = LDST[s.dst.elem]

        def body(k):
            a, b = self.reg("b64"), self.reg("b64")
            self.e(f"mad.lo.s64 {a}, {k}, {size}, {s0};")
            self.e(f"mad.lo.s64 {b}, {k}, {size}, {d0};")
            self.e(f"ld.{lt} {v}, [{a}];")
            self.e(f"st.{lt} [{b}], {v};")

        self.barrier()
        self.strided(n, body)
        self.barrier()

    def alloc(self, b: ir.Buf) -> None:
        if self.in_thread:  # pragma: no cover - why_not_mapped keeps allocations out
            raise NotSelected("an allocation inside a mapped loop")
        n = self.val(b.size)
        ptr = self.buf(b)
        nbytes, total = self.reg("b64"), self.reg("b64")
        self.e(f"mul.lo.s64 {nbytes}, {n}, {SIZE[b.elem]};")
        self.e(f"add.s64 {total}, {nbytes}, {63 + HEADER};")
        self.e(f"and.b64 {total}, {total}, -64;")
        skip = self.label("alloced")
        self.sync()
        self.e(f"@!{self.t0} bra {skip};")
        cur, top, end, new, got = (self.reg("b64") for _ in range(5))
        p, q = self.reg("pred"), self.reg("pred")
        c = self.ctx
        k_cur, k_top, k_end, _ = ARENA_CELLS[b.space]
        self.e(f"ld.u64 {cur}, [{c}+{8 * k_cur}];")
        self.e(f"ld.u64 {top}, [{c}+{8 * k_top}];")
        self.e(f"ld.u64 {end}, [{c}+{8 * k_end}];")
        self.e(f"add.s64 {new}, {cur}, {total};")
        self.e(f"setp.gt.u64 {p}, {new}, {end};")
        self.e(f"setp.gt.u64 {q}, {n}, 0x10000000000;")  # 2^40 elements: past any arena
        self.e(f"or.pred {p}, {p}, {q};")
        self.e(f"mov.b64 {got}, 0;")
        fits = self.label("fits")
        self.e(f"@{p} bra {fits};")
        self.e(f"st.u64 [{cur}], {top};")
        self.e(f"st.u64 [{cur}+8], 0;")
        self.e(f"st.u64 [{c}+{8 * k_top}], {cur};")
        self.e(f"st.u64 [{c}+{8 * k_cur}], {new};")
        self.e(f"add.s64 {got}, {cur}, {HEADER};")
        self.place(fits)
        bcast = f"{c}+{8 * CTX_BCAST}" if self.grid else "k_bcast"
        space = "global" if self.grid else "shared"
        self.e(f"st.{space}.u64 [{bcast}], {got};")
        self.place(skip)
        self.sync()
        self.e(f"ld.{'volatile.global' if self.grid else 'shared'}.u64 {ptr}, [{bcast}];")
        self.sync()
        z = self.reg("pred")
        self.e(f"setp.eq.u64 {z}, {ptr}, 0;")
        self.fail(z, ERROR_NUMBERS["R0009"])
        # not zeroed: the loop program writes every element of a fresh buffer before it
        # reads it (docs/lowering.md; its interpreter fills fresh buffers with 0xA5 bytes)

    def free(self, b: ir.Buf) -> None:
        if self.in_thread:  # pragma: no cover
            raise NotSelected("a free inside a mapped loop")
        ptr = self.buf(b)
        skip = self.label("freed")
        c = self.ctx
        h, base, end, top, flag, prev = (self.reg("b64") for _ in range(6))
        p = self.reg("pred")
        k_cur, k_top, k_end, k_base = ARENA_CELLS[b.space]
        self.sync()
        self.e(f"@!{self.t0} bra {skip};")
        self.e(f"ld.u64 {base}, [{c}+{8 * k_base}];")
        self.e(f"ld.u64 {end}, [{c}+{8 * k_end}];")
        self.e(f"setp.lt.u64 {p}, {ptr}, {base};")  # not an arena block: nothing to do
        self.e(f"@{p} bra {skip};")
        self.e(f"setp.ge.u64 {p}, {ptr}, {end};")
        self.e(f"@{p} bra {skip};")
        self.e(f"sub.s64 {h}, {ptr}, {HEADER};")
        self.e(f"st.u64 [{h}+8], 1;")
        pop = self.label("pop")
        self.place(pop)  # release freed blocks from the top: any free order works
        self.e(f"ld.u64 {top}, [{c}+{8 * k_top}];")
        self.e(f"setp.eq.u64 {p}, {top}, 0;")
        self.e(f"@{p} bra {skip};")
        self.e(f"ld.u64 {flag}, [{top}+8];")
        self.e(f"setp.eq.u64 {p}, {flag}, 0;")
        self.e(f"@{p} bra {skip};")
        self.e(f"ld.u64 {prev}, [{top}];")
        self.e(f"st.u64 [{c}+{8 * k_cur}], {top};")
        self.e(f"st.u64 [{c}+{8 * k_top}], {prev};")
        self.e(f"bra {pop};")
        self.place(skip)
        self.sync()

    def call(self, s: ir.Call) -> None:
        if self.in_thread:  # pragma: no cover
            raise NotSelected("a call inside a mapped loop")
        callee = self.prog.functions[s.fn]
        cf = Fn(callee, self.prog, self.names, self.sites, [])
        params, results = cf.params(), cf.results()
        if len(params) != len(s.args) or len(results) != len(s.results):
            raise NotSelected(f"call of `{s.fn}` does not match its signature")
        self.e("{")
        names = []
        for i, (p, a) in enumerate(zip(params, s.args, strict=True)):
            ty = self.ptype(p)
            r = self.buf(a) if isinstance(a, ir.Buf) else self.val(a)
            self.e(f".param .{ty} ca_{i};")
            self.e(f"st.param.{ty} [ca_{i}], {r};")
            names.append(f"ca_{i}")
        self.e(f".param .align 8 .b8 cr[{8 * (1 + len(results))}];")
        self.e(f"call.uni (cr), {self.names[s.fn]}, ({', '.join(names)});")
        st = self.reg("b32")
        self.e(f"ld.param.b32 {st}, [cr];")
        for i, (p, r) in enumerate(zip(results, s.results, strict=True)):
            dst = self.buf(r) if isinstance(r, ir.Buf) else self.var(r)
            self.e(f"ld.param.{self.ptype(p)} {dst}, [cr+{8 * (i + 1)}];")
        self.e("}")
        p = self.reg("pred")
        self.e(f"setp.ne.u32 {p}, {st}, 0;")
        self.e(f"@{p} mov.u32 {self.status}, {st};")
        self.e(f"@{p} bra {self.exit};")

    def word(self, r: str, t: str) -> str:
        """A value widened to the 64-bit word the log (and a result cell) holds."""
        c = _cls(t)
        w = self.reg("b64")
        if c == "b64":
            self.e(f"mov.b64 {w}, {r};")
        elif c == "f64":
            self.e(f"mov.b64 {w}, {r};")
        elif c == "f32":
            b = self.reg("b32")
            self.e(f"mov.b32 {b}, {r};")
            self.e(f"cvt.u64.u32 {w}, {b};")
        else:
            self.e(f"cvt.u64.u32 {w}, {r};")
        return w

    def print_(self, s: ir.Print) -> None:
        if self.in_thread:  # pragma: no cover
            raise NotSelected("print inside a mapped loop")
        site = self.sites[id(s)]
        c = self.ctx
        words = self.reg("b64")
        vals: list[str] = []
        count = None
        if s.text is not None:
            self.e(f"mov.b64 {words}, 0;")
        elif isinstance(s.value, ir.Buf):
            count = self.reg("b64")
            self.e(f"mov.b64 {count}, 1;")
            for d in s.shape:
                r = self.val(d)
                vals.append(r)
                self.e(f"mul.lo.s64 {count}, {count}, {r};")
            self.e(f"add.s64 {words}, {count}, {len(s.shape)};")
        else:
            vals.append(self.word(self.val(s.value), s.value.type))
            self.e(f"mov.b64 {words}, 1;")
        at, end, need = (self.reg("b64") for _ in range(3))
        p = self.reg("pred")
        skip, over = self.label("printed"), self.label("overflow")
        self.sync()
        self.e(f"@!{self.t0} bra {skip};")
        self.e(f"ld.u64 {at}, [{c}+{8 * CTX_LOG_AT}];")
        self.e(f"ld.u64 {end}, [{c}+{8 * CTX_LOG_END}];")
        self.e(f"setp.eq.u64 {p}, {at}, -1;")
        self.e(f"@{p} bra {skip};")
        self.e(f"mad.lo.s64 {need}, {words}, 8, {at};")
        self.e(f"add.s64 {need}, {need}, 16;")
        self.e(f"setp.gt.u64 {p}, {need}, {end};")
        self.e(f"@{p} bra {over};")
        self.e(f"st.u64 [{at}], {site};")
        self.e(f"st.u64 [{at}+8], {words};")
        for k, r in enumerate(vals):
            self.e(f"st.u64 [{at}+{16 + 8 * k}], {r};")
        if count is not None:
            b = s.value
            start = self.reg("b64")
            if s.offset is not None:
                self.e(f"mad.lo.s64 {start}, {self.val(s.offset)}, {SIZE[b.elem]}, {self.buf(b)};")
            else:
                self.e(f"mov.b64 {start}, {self.buf(b)};")
            out0 = self.reg("b64")
            self.e(f"add.s64 {out0}, {at}, {16 + 8 * len(vals)};")
            v = self.reg(_cls(b.elem))
            k = self.reg("b64")
            head, done = self.label("pel"), self.label("pelend")
            q = self.reg("pred")
            self.e(f"mov.b64 {k}, 0;")
            self.place(head)
            self.e(f"setp.ge.s64 {q}, {k}, {count};")
            self.e(f"@{q} bra {done};")
            a = self.reg("b64")
            self.e(f"mad.lo.s64 {a}, {k}, {SIZE[b.elem]}, {start};")
            self.e(f"ld.{LDST[b.elem]} {v}, [{a}];")
            w = self.word(v, b.elem)
            self.e(f"mad.lo.s64 {a}, {k}, 8, {out0};")
            self.e(f"st.u64 [{a}], {w};")
            self.e(f"add.s64 {k}, {k}, 1;")
            self.e(f"bra {head};")
            self.place(done)
        self.e(f"st.u64 [{c}+{8 * CTX_LOG_AT}], {need};")
        self.e(f"bra {skip};")
        self.place(over)
        self.e(f"st.u64 [{c}+{8 * CTX_LOG_AT}], -1;")
        self.place(skip)
        self.sync()
        flag = self.reg("b64")
        self.e(f"ld.volatile.u64 {flag}, [{c}+{8 * CTX_LOG_AT}];")
        self.sync()
        self.e(f"setp.eq.u64 {p}, {flag}, -1;")
        self.fail(p, ERROR_NUMBERS["R0009"])

    # --- primitives -----------------------------------------------------------------------

    def op(self, s: ir.Op) -> None:
        name, t = s.op, s.dst.type
        d = self.var(s.dst)
        args = s.args
        if name in ("eq", "ne", "lt", "le", "gt", "ge"):
            self.compare(d, name, args)
            return
        if name == "select":
            p = self.pred_of(args[0])
            a, b = self.val(args[1]), self.val(args[2])
            self.e(f"selp.{_cls(t)} {d}, {a}, {b}, {p};")
            return
        if name == "bitcast":
            self.bitcast(d, t, args[0])
            return
        if name == "convert":
            self.convert(d, t, args[0])
            return
        if is_float(t):
            self.float_op(d, name, t, [self.val(a) for a in args])
        else:
            self.int_op(d, name, t, args)

    def compare(self, d: str, name: str, args) -> None:
        at = args[0].type
        a, b = self.val(args[0]), self.val(args[1])
        if is_float(at):
            cmp = {"ne": "neu"}.get(name, name)  # ordered, except `ne` (true on NaN)
            ty = at
        else:
            cmp, ty = name, _ityp(at)
        p = self.reg("pred")
        self.e(f"setp.{cmp}.{ty} {p}, {a}, {b};")
        self.e(f"selp.u32 {d}, 1, 0, {p};")

    def float_op(self, d: str, name: str, t: str, a: list[str]) -> None:
        bt = "b32" if t == "f32" else "b64"
        if name in ("add", "sub", "mul", "div"):
            self.e(f"{name}.rn.{t} {d}, {a[0]}, {a[1]};")
        elif name == "sqrt":
            self.e(f"sqrt.rn.{t} {d}, {a[0]};")
        elif name == "fma":
            self.e(f"fma.rn.{t} {d}, {a[0]}, {a[1]}, {a[2]};")
        elif name == "roundeven":
            self.e(f"cvt.rni.{t}.{t} {d}, {a[0]};")
        elif name == "canon":
            self.e(f"mov.{t} {d}, {self.canon(a[0], t)};")
        elif name in ("neg", "abs"):
            # the sign bit itself: exact for every input (subnormals, zeros, NaN)
            b = self.reg(bt)
            self.e(f"mov.{bt} {b}, {a[0]};")
            if name == "neg":
                self.e(f"xor.{bt} {b}, {b}, {SIGN[t]};")
            else:
                mask = "0x7FFFFFFF" if t == "f32" else "0x7FFFFFFFFFFFFFFF"
                self.e(f"and.{bt} {b}, {b}, {mask};")
            self.e(f"mov.{bt} {d}, {b};")
        elif name in ("minimum", "maximum"):
            # PTX min/max drop NaN and order zeros arbitrarily: compare and select instead.
            p, q, n = self.reg("pred"), self.reg("pred"), self.reg("pred")
            r = self.reg(t)
            self.e(f"setp.{'gt' if name == 'maximum' else 'lt'}.{t} {p}, {a[0]}, {a[1]};")
            self.e(f"selp.{t} {r}, {a[0]}, {a[1]}, {p};")
            x, y = self.reg(bt), self.reg(bt)
            self.e(f"mov.{bt} {x}, {a[0]};")
            self.e(f"mov.{bt} {y}, {a[1]};")
            # equal operands: AND of the bits makes +0 win (maximum), OR makes -0 win
            self.e(f"{'and' if name == 'maximum' else 'or'}.{bt} {x}, {x}, {y};")
            z = self.reg(t)
            self.e(f"mov.{bt} {z}, {x};")
            self.e(f"setp.eq.{t} {q}, {a[0]}, {a[1]};")
            self.e(f"selp.{t} {r}, {z}, {r}, {q};")
            self.e(f"setp.nan.{t} {n}, {a[0]}, {a[1]};")
            self.e(f"selp.{t} {d}, {CANON[t]}, {r}, {n};")
        elif name == "rem":
            # PTX has no exact remainder: C fmod in integer arithmetic (fmod_text)
            self.helpers.add(f"fmod_{t}")
            self.e("{")
            self.e(f".param .{bt} fa;")
            self.e(f".param .{bt} fb;")
            self.e(f".param .{bt} fr;")
            self.e(f"st.param.{bt} [fa], {a[0]};")
            self.e(f"st.param.{bt} [fb], {a[1]};")
            self.e(f"call (fr), k_fmod_{t}, (fa, fb);")
            self.e(f"ld.param.{bt} {d}, [fr];")
            self.e("}")
        else:
            raise NotSelected(f"ptx does not select float `{name}`")

    def int_op(self, d: str, name: str, t: str, args) -> None:
        c = _cls(t)
        it = _ityp(t)
        w = 64 if c == "b64" else 32
        if name == "not":
            a = self.val(args[0])
            if t == "bool":
                self.e(f"xor.b32 {d}, {a}, 1;")
            else:
                self.e(f"not.{c} {d}, {a};")
                self.norm(d, t)
            return
        if name in ("neg", "abs"):
            a = self.val(args[0])
            if name == "neg":
                self.e(f"neg.s{w} {d}, {a};")
            elif is_signed(t):
                m, x = self.reg(c), self.reg(c)
                self.e(f"shr.s{w} {m}, {a}, {w - 1};")
                self.e(f"xor.{c} {x}, {a}, {m};")
                self.e(f"sub.s{w} {d}, {x}, {m};")
            else:
                self.e(f"mov.{c} {d}, {a};")
            self.norm(d, t)
            return
        if name in ("shl", "shr"):
            a = self.val(args[0])
            cnt = args[1]
            n = self.reg("b32")
            if _cls(cnt.type) == "b64":
                hi = self.reg("b32")
                self.e(f"mov.b64 {{{n}, {hi}}}, {self.val(cnt)};")
            else:
                self.e(f"mov.b32 {n}, {self.val(cnt)};")
            self.e(f"and.b32 {n}, {n}, {BITS[t] - 1};")  # the count modulo the width, first
            if name == "shl":
                self.e(f"shl.b{w} {d}, {a}, {n};")
            else:
                self.e(f"shr.{it} {d}, {a}, {n};")
            self.norm(d, t)
            return
        a, b = self.val(args[0]), self.val(args[1])
        if name in ("and", "or", "xor"):
            self.e(f"{name}.{c} {d}, {a}, {b};")
        elif name in ("add", "sub"):
            self.e(f"{name}.{it} {d}, {a}, {b};")
            self.norm(d, t)
        elif name == "mul":
            self.e(f"mul.lo.{it} {d}, {a}, {b};")
            self.norm(d, t)
        elif name in ("minimum", "maximum"):
            self.e(f"{name[:3]}.{it} {d}, {a}, {b};")
        elif name in ("div", "rem"):
            if not is_signed(t):
                self.e(f"{name}.{it} {d}, {a}, {b};")
                return
            # MIN / -1 = MIN and MIN % -1 = 0, never the hardware's: divide by 1 instead
            p = self.reg("pred")
            b1, q = self.reg(c), self.reg(c)
            self.e(f"setp.eq.{it} {p}, {b}, -1;")
            self.e(f"selp.{c} {b1}, 1, {b}, {p};")
            self.e(f"{name}.{it} {q}, {a}, {b1};")
            if name == "div":
                n = self.reg(c)
                self.e(f"neg.{it} {n}, {a};")
                self.e(f"selp.{c} {d}, {n}, {q}, {p};")
            else:
                self.e(f"selp.{c} {d}, 0, {q}, {p};")
            self.norm(d, t)
        else:
            raise NotSelected(f"ptx does not select integer `{name}`")

    def bitcast(self, d: str, t: str, x) -> None:
        s = x.type
        a = self.val(x)
        if is_float(s):
            a = self.canon(a, s)  # a bitcast exposes a NaN's bits: canonical
        bt = "b64" if BITS[t] == 64 else "b32"
        self.e(f"mov.{bt} {d}, {a};")
        if not is_float(t):
            self.norm(d, t)

    def convert(self, d: str, t: str, x) -> None:
        s = x.type
        a = self.val(x)
        sc, tc = _cls(s), _cls(t)
        if s == t:
            self.e(f"mov.{tc} {d}, {a};")
            return
        if t == "bool":
            p = self.reg("pred")
            if is_float(s):
                self.e(f"setp.neu.{s} {p}, {a}, {_fimm(s, 0.0)};")
            else:
                self.e(f"setp.ne.{_ityp(s)} {p}, {a}, 0;")
            self.e(f"selp.u32 {d}, 1, 0, {p};")
            return
        if is_float(t):
            if is_float(s):
                if t == "f64":
                    self.e(f"cvt.f64.f32 {d}, {a};")
                else:
                    self.e(f"cvt.rn.f32.f64 {d}, {a};")
            else:
                src = "u32" if s == "bool" else _ityp(s)
                self.e(f"cvt.rn.{t}.{src} {d}, {a};")  # one rounding, 64-bit sources too
            return
        if is_float(s):
            self.float_to_int(d, t, s, a)
            return
        # integer (or bool) -> integer: keep the low bits
        if sc == "b32" and tc == "b32":
            self.e(f"mov.b32 {d}, {a};")
            self.norm(d, t)
        elif sc == "b32":
            src = "s32" if is_signed(s) else "u32"
            self.e(f"cvt.{'s64' if src == 's32' else 'u64'}.{src} {d}, {a};")
        elif tc == "b32":
            hi = self.reg("b32")
            self.e(f"mov.b64 {{{d}, {hi}}}, {a};")
            self.norm(d, t)
        else:
            self.e(f"mov.b64 {d}, {a};")

    def float_to_int(self, d: str, t: str, s: str, a: str) -> None:
        """Truncate toward zero, saturate to ``t``'s range, NaN -> 0 (semantics.md §5),
        with explicit compares: nothing relies on the hardware's out-of-range result."""
        bits = BITS[t]
        signed = is_signed(t)
        lo = -(2 ** (bits - 1)) if signed else 0
        hi = 2 ** (bits - 1) - 1 if signed else 2**bits - 1
        c = _cls(t)
        if bits < 32:
            # through s32 (exact for every value in range), then clamp to the narrow range
            r = self.reg("b32")
            self.e(f"cvt.rzi.s32.{s} {r}, {a};")
            p = self.reg("pred")
            self.e(f"setp.ge.{s} {p}, {a}, {_fimm(s, 2.0**31)};")
            self.e(f"selp.b32 {r}, 0x7FFFFFFF, {r}, {p};")
            self.e(f"setp.lt.{s} {p}, {a}, {_fimm(s, -(2.0**31))};")
            self.e(f"selp.b32 {r}, 0x80000000, {r}, {p};")
            self.e(f"max.s32 {r}, {r}, {lo};")
            self.e(f"min.s32 {r}, {r}, {hi};")
        else:
            r = self.reg(c)
            it = _ityp(t)
            self.e(f"cvt.rzi.{it}.{s} {r}, {a};")
            p = self.reg("pred")
            top = 2.0 ** (bits - 1) if signed else 2.0**bits
            hexw = 16 if c == "b64" else 8
            self.e(f"setp.ge.{s} {p}, {a}, {_fimm(s, top)};")
            self.e(f"selp.{c} {r}, 0x{hi:0{hexw}X}, {r}, {p};")
            self.e(f"setp.lt.{s} {p}, {a}, {_fimm(s, float(lo))};")
            lo_bits = lo & ((1 << (64 if c == "b64" else 32)) - 1)
            self.e(f"selp.{c} {r}, 0x{lo_bits:0{hexw}X}, {r}, {p};")
        n = self.reg("pred")
        self.e(f"setp.nan.{s} {n}, {a}, {a};")
        self.e(f"selp.{c} {d}, 0, {r}, {n};")
        self.norm(d, t)


# Several CTAs (``Selected.grid``) when the program has a mapped loop and nothing repeats a
# barrier without one: a loop of stores made by thread 0 costs a barrier per store, cheap
# on one CTA (bar.sync) and dear across the grid. KERA_PTX_GRID=0 selects one CTA everywhere
# (to tell a grid-barrier fault from any other on a new GPU or driver).
GRID = os.environ.get("KERA_PTX_GRID", "1") != "0"

# The grid barrier: the kernel is launched cooperatively (every CTA resident at once), so
# thread 0 of each CTA can arrive on a counter and wait for the generation to move on (the
# last to arrive resets the counter and moves it), fenced at GPU scope like
# cooperative_groups' grid.sync().
GRID_SYNC = f"""// the grid barrier
.func k_gsync ()
{{
	.reg .b64 %c, %gen, %old, %last, %now;
	.reg .b32 %t;
	.reg .pred %p;
	bar.sync 0;
	mov.u32 %t, %tid.x;
	setp.ne.u32 %p, %t, 0;
	@%p bra $GS_done;
	ld.shared.u64 %c, [k_ctx];
	membar.gl;
	ld.volatile.global.u64 %gen, [%c+{8 * CTX_BAR_GEN}];
	mov.u32 %t, %nctaid.x;
	cvt.u64.u32 %last, %t;
	sub.s64 %last, %last, 1;
	atom.global.add.u64 %old, [%c+{8 * CTX_BAR_COUNT}], 1;
	setp.ne.u64 %p, %old, %last;
	@%p bra $GS_wait;
	st.volatile.global.u64 [%c+{8 * CTX_BAR_COUNT}], 0;
	membar.gl;
	add.s64 %gen, %gen, 1;
	st.volatile.global.u64 [%c+{8 * CTX_BAR_GEN}], %gen;
	bra $GS_fence;
$GS_wait:
	nanosleep.u32 20;
	ld.volatile.global.u64 %now, [%c+{8 * CTX_BAR_GEN}];
	setp.eq.u64 %p, %now, %gen;
	@%p bra $GS_wait;
$GS_fence:
	membar.gl;
$GS_done:
	bar.sync 0;
	ret;
}}
"""


def fmod_text(t: str) -> str:
    """Float `%`: C ``fmod``, exact (semantics.md §5), in integer arithmetic on the bits — the
    long division of musl's fmod, as the wasm target's helper does it (wasm/softfloat.py).

    NaN (Kera's) for ``y = ±0``, a NaN ``y`` or a non-finite ``x`` (a NaN ``x`` included);
    ``x`` itself when ``|x| < |y|``; otherwise the significands are normalised (subnormals
    shifted up), the remainder found by shift-and-subtract over the exponent difference,
    renormalised and given ``x``'s sign. Every step is exact, so the result is."""
    w = 32 if t == "f32" else 64
    m = 23 if w == 32 else 52
    e = (1 << (w - m - 1)) - 1
    b = f"b{w}"
    u = f"u{w}"
    sign = 1 << (w - 1)
    inf = e << m
    nan = 0x7FC00000 if w == 32 else 0x7FF8000000000000
    hexw = w // 4

    def h(v: int) -> str:
        return f"0x{v:0{hexw}X}"

    def narrow(d: str, a: str) -> str:  # a w-bit value that fits 32 bits, to 32
        return f"mov.b32 {d}, {a};" if w == 32 else f"cvt.u32.u64 {d}, {a};"

    def widen(d: str, a: str) -> str:
        return f"mov.b32 {d}, {a};" if w == 32 else f"cvt.u64.u32 {d}, {a};"

    def normalise(x: str, ex: str, tag: str) -> str:
        return f"""\
	setp.ne.s32 %p, {ex}, 0;
	@%p bra $FM_{tag}_normal;
	shl.b{w} %i, {x}, {w - m};
$FM_{tag}_scan:
	shr.{u} %j, %i, {w - 1};
	setp.ne.{u} %p, %j, 0;
	@%p bra $FM_{tag}_shift;
	sub.s32 {ex}, {ex}, 1;
	shl.b{w} %i, %i, 1;
	bra $FM_{tag}_scan;
$FM_{tag}_shift:
	sub.s32 %k, 1, {ex};
	shl.b{w} {x}, {x}, %k;
	bra $FM_{tag}_done;
$FM_{tag}_normal:
	and.b{w} {x}, {x}, {h((1 << m) - 1)};
	or.b{w} {x}, {x}, {h(1 << m)};
$FM_{tag}_done:"""

    def step(tag: str) -> str:
        return f"""\
	sub.s{w} %i, %ux, %uy;
	shr.{u} %j, %i, {w - 1};
	setp.ne.{u} %p, %j, 0;
	@%p bra $FM_{tag}_neg;
	setp.eq.{u} %p, %i, 0;
	@%p bra $FM_zero;
	mov.b{w} %ux, %i;
$FM_{tag}_neg:"""

    return f"""\
// float `%` on {t}: C fmod, exact
.func (.param .{b} fr) k_fmod_{t} (.param .{b} fa, .param .{b} fb)
{{
	.reg .{b} %ux, %uy, %sx, %i, %j, %ax, %ay;
	.reg .b32 %ex, %ey, %k;
	.reg .pred %p, %q;
	ld.param.{b} %ux, [fa];
	ld.param.{b} %uy, [fb];
	and.b{w} %sx, %ux, {h(sign)};
	and.b{w} %ax, %ux, {h(sign - 1)};
	and.b{w} %ay, %uy, {h(sign - 1)};
	setp.eq.{u} %p, %ay, 0;
	setp.gt.{u} %q, %ay, {h(inf)};
	or.pred %p, %p, %q;
	setp.ge.{u} %q, %ax, {h(inf)};
	or.pred %p, %p, %q;
	@%p bra $FM_nan;
	setp.lt.{u} %p, %ax, %ay;
	@%p bra $FM_x;
	setp.eq.{u} %p, %ax, %ay;
	@%p bra $FM_zero;
	shr.{u} %i, %ux, {m};
	cvt.u32.{u} %ex, %i;
	and.b32 %ex, %ex, {e};
	shr.{u} %i, %uy, {m};
	cvt.u32.{u} %ey, %i;
	and.b32 %ey, %ey, {e};
{normalise("%ux", "%ex", "x")}
{normalise("%uy", "%ey", "y")}
$FM_loop:
	setp.le.s32 %p, %ex, %ey;
	@%p bra $FM_last;
{step("a")}
	shl.b{w} %ux, %ux, 1;
	sub.s32 %ex, %ex, 1;
	bra $FM_loop;
$FM_last:
{step("b")}
$FM_norm:
	shr.{u} %j, %ux, {m};
	setp.ne.{u} %p, %j, 0;
	@%p bra $FM_pack;
	shl.b{w} %ux, %ux, 1;
	sub.s32 %ex, %ex, 1;
	bra $FM_norm;
$FM_pack:
	setp.gt.s32 %p, %ex, 0;
	@!%p bra $FM_sub;
	sub.s{w} %ux, %ux, {h(1 << m)};
	cvt.u{w}.u32 %i, %ex;
	shl.b{w} %i, %i, {m};
	or.b{w} %ux, %ux, %i;
	bra $FM_out;
$FM_sub:
	sub.s32 %k, 1, %ex;
	shr.{u} %ux, %ux, %k;
$FM_out:
	or.b{w} %ux, %ux, %sx;
	st.param.{b} [fr], %ux;
	ret;
$FM_x:
	st.param.{b} [fr], %ux;
	ret;
$FM_zero:
	st.param.{b} [fr], %sx;
	ret;
$FM_nan:
	st.param.{b} [fr], {h(nan)};
	ret;
}}
"""


def _has_check(stmts: list) -> bool:
    """Whether ``stmts`` can fail (a Check at any depth; mapped bodies tick no budget)."""
    for s in stmts:
        if isinstance(s, ir.Check):
            return True
        for attr in ("body", "cond", "then", "orelse"):
            inner = getattr(s, attr, None)
            if isinstance(inner, list) and _has_check(inner):
                return True
    return False


def _mapped_in(stmts: list) -> bool:
    """Whether ``stmts`` hold a mapped loop (at any depth)."""
    for s in stmts:
        if isinstance(s, ir.Loop):
            if why_not_mapped(s) is None or _mapped_in(s.body):
                return True
        elif isinstance(s, ir.While):
            if _mapped_in(s.cond) or _mapped_in(s.body):
                return True
        elif isinstance(s, ir.If):
            if _mapped_in(s.then) or _mapped_in(s.orelse):
                return True
    return False


def _has_mapped_loop(prog: ir.Program) -> bool:
    return any(_mapped_in(lf.body) for lf in prog.functions.values())


_EFFECTS = (ir.Store, ir.Alloc, ir.Free, ir.Print, ir.Copy, ir.Call)


def sequential_effects(prog: ir.Program) -> str | None:
    """Why the kernel keeps to one CTA (None: it may use the grid): a loop run by every
    thread in order whose body makes memory effects (each one a barrier) but holds no
    mapped loop to amortise them over."""

    def effects(stmts) -> bool:
        for s in stmts:
            if isinstance(s, _EFFECTS):
                return True
            if isinstance(s, ir.Loop) and why_not_mapped(s) is None:
                continue  # inside a mapped loop nothing waits
            for attr in ("body", "cond", "then", "orelse"):
                inner = getattr(s, attr, None)
                if isinstance(inner, list) and effects(inner):
                    return True
        return False

    def walk(stmts, fn: str) -> str | None:
        for s in stmts:
            if isinstance(s, ir.Loop) and why_not_mapped(s) is None:
                continue
            if isinstance(s, (ir.Loop, ir.While)):
                body = s.body + (s.cond if isinstance(s, ir.While) else [])
                if effects(body) and not _mapped_in(body):
                    what = "a loop" if isinstance(s, ir.Loop) else "a while loop"
                    return f"{what} in `{fn}` stores (or allocates, prints, calls) in order"
            for attr in ("body", "cond", "then", "orelse"):
                inner = getattr(s, attr, None)
                if isinstance(inner, list):
                    r = walk(inner, fn)
                    if r:
                        return r
        return None

    for lf in prog.functions.values():
        r = walk(lf.body, lf.name)
        if r:
            return r
    return None


def ptx_name(i: int) -> str:
    return f"kfn_{i}"


def select_program(prog: ir.Program, entry: str) -> Selected:
    """The PTX module of ``entry`` and what it calls (the kernel is ``kera_main``)."""
    names = {name: ptx_name(i) for i, name in enumerate(prog.functions)}
    sites = {id(s): i for i, s in enumerate(print_sites(prog))}
    loops: list[LoopInfo] = []
    bodies = []
    protos = []
    grid = GRID and sequential_effects(prog) is None and _has_mapped_loop(prog)
    helpers: set[str] = set()
    for lf in prog.functions.values():
        f = Fn(lf, prog, names, sites, loops, grid)
        bodies.append(f.select())
        protos.append(f.signature() + ";")
        helpers |= f.helpers
    threads = MAX_THREADS if any(li.mapped for li in loops) else 1
    kernel = _kernel(prog.functions[entry], prog, names, sites, grid)
    text = "\n".join(
        [
            ".version 8.0",
            ".target sm_80",
            ".address_size 64",
            "",
            f".shared .align 8 .b64 k_steps[{MAX_THREADS}];  // each thread's step budget",
            ".shared .align 8 .b64 k_errmin;  // a mapped loop's first failure",
            ".shared .align 8 .b64 k_bcast;  // thread 0's value for the CTA",
            ".shared .align 8 .b64 k_ctx;  // the run's context",
            "",
            *([GRID_SYNC] if grid else []),
            *(fmod_text(h.split("_")[1]) for h in sorted(helpers)),
            *protos,
            "",
            *bodies,
            kernel,
        ]
    )
    return Selected(text, entry, threads, loops, names, grid)


def _kernel(lf: ir.LFunction, prog: ir.Program, names: dict, sites: dict, grid: bool) -> str:
    """``kera_main(io, ctx)``: io holds one u64 cell per dimension, flattened parameter
    (integers as their bits, floats as bits, buffers as device addresses) and result."""
    f = Fn(lf, prog, names, sites, [])
    params, results = f.params(), f.results()
    k = Fn(lf, prog, names, sites, [])
    io, ctx, tid, s = k.reg("b64"), k.reg("b64"), k.reg("b32"), k.reg("b64")
    t0 = k.reg("pred")
    k.e(f"ld.param.u64 {io}, [kio];")
    k.e(f"ld.param.u64 {ctx}, [kctx];")
    k.e(f"mov.u32 {tid}, %tid.x;")
    k.e(f"setp.eq.u32 {t0}, {tid}, 0;")
    k.e(f"ld.u64 {s}, [{ctx}+{8 * CTX_STEPS}];")
    at = k.reg("b32")
    k.e(f"mov.u32 {at}, k_steps;")
    k.e(f"mad.lo.u32 {at}, {tid}, 8, {at};")
    k.e(f"st.shared.u64 [{at}], {s};")
    k.e(f"@{t0} st.shared.u64 [k_ctx], {ctx};")
    k.e(f"@{t0} st.shared.u64 [k_errmin], -1;")
    k.e("bar.sync 0;")
    if grid:  # the status and results are written by the grid's thread 0
        b = k.reg("b32")
        k.e(f"mov.u32 {b}, %ctaid.x;")
        k.e(f"setp.eq.and.u32 {t0}, {b}, 0, {t0};")
    regs = []
    for i, x in enumerate(params):
        cell = k.reg("b64")
        k.e(f"ld.u64 {cell}, [{io}+{8 * i}];")
        ty = "b64" if isinstance(x, ir.Buf) else _cls(x.type)
        if ty == "b64":
            regs.append(cell)
            continue
        lo, hi = k.reg("b32"), k.reg("b32")
        k.e(f"mov.b64 {{{lo}, {hi}}}, {cell};")
        if ty == "f64":
            r = k.reg("f64")
            k.e(f"mov.b64 {r}, {cell};")
        elif ty == "f32":
            r = k.reg("f32")
            k.e(f"mov.b32 {r}, {lo};")
        else:
            r = lo
            k.norm(r, x.type)
        regs.append(r)
    k.e("{")
    for i, (x, r) in enumerate(zip(params, regs, strict=True)):
        ty = Fn.ptype(x)
        k.e(f".param .{ty} ka_{i};")
        k.e(f"st.param.{ty} [ka_{i}], {r};")
    k.e(f".param .align 8 .b8 kr[{8 * (1 + len(results))}];")
    outs = [(x, Fn.ptype(x), k.reg(Fn.ptype(x))) for x in results]
    args = ", ".join(f"ka_{i}" for i in range(len(params)))
    k.e(f"call.uni (kr), {names[lf.name]}, ({args});")
    st = k.reg("b32")
    k.e(f"ld.param.b32 {st}, [kr];")
    for i, (_, ty, r) in enumerate(outs):
        k.e(f"ld.param.{ty} {r}, [kr+{8 * (i + 1)}];")
    k.e("}")
    st64 = k.reg("b64")
    k.e(f"cvt.u64.u32 {st64}, {st};")
    k.e(f"@{t0} st.u64 [{ctx}+{8 * CTX_STATUS}], {st64};")
    p = k.reg("pred")
    k.e(f"setp.ne.u32 {p}, {st}, 0;")
    k.e(f"@!{t0} bra $L_end;")
    k.e(f"@{p} bra $L_end;")
    base = len(params)
    for i, (x, ty, r) in enumerate(outs):
        w = r if ty == "b64" else k.word(r, x.type)
        k.e(f"st.u64 [{io}+{8 * (base + i)}], {w};")
    k.place("$L_end")
    k.e("ret;")
    decls = [f"\t.reg .{c} {REG_PREFIX[c]}<{max(n, 1)}>;" for c, n in k.counts.items()]
    head = (
        f"// the kernel: `{lf.name}` on one CTA\n"
        ".visible .entry kera_main (\n\t.param .u64 kio,\n\t.param .u64 kctx\n)\n"
        f".maxntid {MAX_THREADS}, 1, 1\n{{"
    )
    return "\n".join([head, *decls, *k.lines, "}"]) + "\n"


__all__ = ["NotSelected", "Selected", "print_sites", "select_program", "why_not_mapped"]
