"""WebAssembly selected from the loop program: one WAT function per loop-program function.

The loop program (kera_core/loops, docs/lowering.md) has planned everything that decides
bits or memory; this module spells each statement and primitive in WebAssembly:

* a scalar ``Var`` is a local ``$v<id>`` of its WebAssembly type — ``bool`` and the integers
  up to 32 bits are ``i32``, kept sign- (signed) or zero-extended (unsigned, ``bool``) from
  their width after every operation that can leave it; ``i64``/``u64`` are ``i64``; floats
  are themselves. A ``Buf`` is a local ``$b<id>``: the ``i32`` address of its first element
  in linear memory (elements row-major, natural width, little-endian);
* statements are structured control as they are in the loop program (``block``/``loop``/
  ``if``), a ``Check`` is ``$kera_fail`` (which records the error and traps), ``Alloc`` and
  ``Free`` call the module's allocator (module.py), ``Copy`` is ``memory.copy``;
* a primitive missing from WebAssembly — ``fma``, float ``rem`` — is a helper function of
  exact integer arithmetic (softfloat.py); every other primitive is one instruction or a
  short fixed sequence (the integer ``MIN / -1`` guard, narrow integers' re-extension,
  saturating conversions to 8/16-bit integers);
* ``lanes`` loops with a vector plan (kera_core/loops/vectorize.py) run their first
  iterations as 128-bit vector steps (vector.py), the rest as the scalar loop.
"""

from __future__ import annotations

from kera_core.loops import induction, ir, vectorize
from kera_core.loops.composite import nan
from kera_core.loops.ir import BITS, FLOATS, Imm, is_float, is_signed
from kera_core.loops.run_abi import ERROR_NUMBERS

NAN_BITS = {t: nan(t).bits for t in FLOATS}  # the canonical NaNs (docs/semantics.md §3)


class NotSelected(Exception):
    """A loop-program construct this backend does not select."""


def wtype(t: str) -> str:
    """The WebAssembly value type of a loop-program scalar type."""
    if t in FLOATS:
        return t
    return "i64" if BITS[t] == 64 else "i32"


def size(t: str) -> int:
    return 1 if t == "bool" else BITS[t] // 8


SHIFT = {1: 0, 2: 1, 4: 2, 8: 3}


def _i32(bits: int) -> int:
    """The low 32 bits of ``bits`` as a signed ``i32.const`` literal."""
    v = bits & 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def const(t: str, bits: int) -> str:
    """The constant of type ``t`` with the given bit pattern, in its WebAssembly form."""
    w = wtype(t)
    if t in FLOATS:
        it = "i32" if t == "f32" else "i64"
        n = BITS[t]
        v = bits & ((1 << n) - 1)
        if v >> (n - 1):
            v -= 1 << n
        return f"({t}.reinterpret_{it} ({it}.const {v}))"
    n = BITS[t] if t != "bool" else 1
    v = bits & ((1 << n) - 1)
    if is_signed(t) and v >> (n - 1):
        v -= 1 << n
    width = 64 if w == "i64" else 32
    if v >= 1 << (width - 1):  # unsigned above the signed range: the same bits
        v -= 1 << width
    return f"({w}.const {v})"


def norm(t: str, e: str) -> str:
    """An ``i32`` result brought back to ``t``'s width (sign- or zero-extended)."""
    if t in ("i8", "i16"):
        return f"(i32.extend{BITS[t]}_s {e})"
    if t in ("u8", "u16"):
        return f"(i32.and {e} (i32.const {(1 << BITS[t]) - 1}))"
    if t == "bool":
        return f"(i32.and {e} (i32.const 1))"
    return e


def load_op(t: str) -> str:
    n = size(t)
    if n in (4, 8):
        return f"{wtype(t)}.load"
    return f"i32.load{n * 8}_{'s' if is_signed(t) else 'u'}"


def store_op(t: str) -> str:
    n = size(t)
    if n in (4, 8):
        return f"{wtype(t)}.store"
    return f"i32.store{n * 8}"


def canon(t: str, e: str) -> str:
    """``e`` (a side-effect-free expression: it is evaluated twice) with NaN canonical."""
    return f"(select {const(t, NAN_BITS[t])} {e} ({t}.ne {e} {e}))"


def fname(name: str) -> str:
    return f"$k_{name}"


class FunctionSelector:
    """The WAT of one loop-program function. ``helpers`` collects the module's helper
    functions (name → text) that the body calls; ``prints`` the descriptors of its `print`
    sites (module.py lays them out as data)."""

    def __init__(self, lf: ir.LFunction, module) -> None:
        self.lf = lf
        self.mod = module
        self.locals: dict[str, str] = {}
        self.params: set[str] = set()
        self.lines: list[str] = []
        self.depth = 2
        self.labels = 0
        self.defined: set[int] = set()  # Var ids selected so far (a vector plan's invariants)
        self.origin = None
        self.reads = ir.reads(lf)  # Var id → reads in the function
        # the strided accesses of the straight-line loops being selected (induction.py):
        # id(Load/Store) → the i32 local holding its address; index statements left out
        self.pointers: dict[int, str] = {}
        self.unused: set[int] = set()

    # --- names --------------------------------------------------------------------------------
    def var(self, v: ir.Var) -> str:
        name = f"$v{v.id}"
        if name not in self.params and name not in self.locals:
            self.locals[name] = wtype(v.type)
        return name

    def buf(self, b: ir.Buf) -> str:
        name = f"$b{b.id}"
        if name not in self.params and name not in self.locals:
            self.locals[name] = "i32"
        return name

    def local(self, wt: str, hint: str) -> str:
        name = f"${hint}{len(self.locals)}"
        self.locals[name] = wt
        return name

    def label(self, hint: str) -> str:
        self.labels += 1
        return f"${hint}{self.labels}"

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def get(self, x) -> str:
        if isinstance(x, Imm):
            return const(x.type, x.bits)
        if isinstance(x, ir.Buf):
            return f"(local.get {self.buf(x)})"
        self.defined.add(x.id)
        return f"(local.get {self.var(x)})"

    def set(self, v: ir.Var, expr: str) -> None:
        self.emit(f"(local.set {self.var(v)} {expr})")
        self.defined.add(v.id)

    # --- the function -------------------------------------------------------------------------
    def select(self) -> str:
        lf = self.lf
        params = []
        for x in [*lf.dims, *(x for g in lf.params for x in g)]:
            if isinstance(x, ir.Buf):
                name, wt = f"$b{x.id}", "i32"
            else:
                name, wt = f"$v{x.id}", wtype(x.type)
                self.defined.add(x.id)
            self.params.add(name)
            params.append(f"(param {name} {wt})")
        results = [x for g in lf.results for x in g]
        self.stmts(lf.body)
        for x in results:
            self.emit(f"{self.get(x)}")
        rtypes = ["i32" if isinstance(x, ir.Buf) else wtype(x.type) for x in results]
        head = f"  (func {fname(lf.name)} " + " ".join(params)
        if rtypes:
            head += " (result " + " ".join(rtypes) + ")"
        decl = " ".join(f"(local {n} {t})" for n, t in self.locals.items())
        return "\n".join([head, *(["    " + decl] if decl else []), *self.lines, "  )"])

    # --- statements ---------------------------------------------------------------------------
    def stmts(self, body: list) -> None:
        origins = self.mod.program.origins
        for s in body:
            o = origins.get(id(s))
            if o is not None and o != self.origin:
                self.origin = o
                self.emit(f";; node {o[0].hex()[:12]} `{o[1]}`")
            self.stmt(s)

    def stmt(self, s) -> None:
        t = type(s)
        if id(s) in self.unused:
            return  # index arithmetic of strided accesses only
        if t is ir.Op:
            self.set(s.dst, self.op(s))
        elif t is ir.Load:
            self.set(s.dst, f"({load_op(s.buf.elem)} {self.at(s)})")
        elif t is ir.Store:
            self.emit(f"({store_op(s.buf.elem)} {self.at(s)} {self.get(s.value)})")
        elif t is ir.Loop:
            self.loop(s)
        elif t is ir.While:
            brk, cont = self.label("wdone"), self.label("while")
            self.emit(f"(block {brk} (loop {cont}")
            self.depth += 1
            self.stmts(s.cond)
            self.emit(f"(br_if {brk} (i32.eqz {self.get(s.test)}))")
            self.stmts(s.body)
            self.emit(f"(br {cont})")
            self.depth -= 1
            self.emit("))")
        elif t is ir.If:
            self.emit(f"(if {self.get(s.cond)}")
            self.depth += 1
            self.emit("(then")
            self.depth += 1
            self.stmts(s.then)
            self.depth -= 1
            self.emit(")")
            if s.orelse:
                self.emit("(else")
                self.depth += 1
                self.stmts(s.orelse)
                self.depth -= 1
                self.emit(")")
            self.depth -= 1
            self.emit(")")
        elif t is ir.Check:
            code = ERROR_NUMBERS.get(s.code)
            if code is None:
                raise NotSelected(f"checked error {s.code} has no number")
            self.emit(
                f"(if (i32.eqz {self.get(s.ok)}) (then (call $kera_fail (i32.const {code}))))"
            )
        elif t is ir.Alloc:
            n = self.get(s.buf.size)
            nbytes = n if size(s.buf.elem) == 1 else f"(i64.mul {n} (i64.const {size(s.buf.elem)}))"
            self.emit(f"(local.set {self.buf(s.buf)} (call $kera_alloc {nbytes}))")
        elif t is ir.Free:
            self.emit(f"(call $kera_free {self.get(s.buf)})")
        elif t is ir.Copy:
            w = size(s.dst.elem)
            count = f"(i32.wrap_i64 {self.get(s.count)})"
            if w > 1:
                count = f"(i32.shl {count} (i32.const {SHIFT[w]}))"
            dst = self.address(s.dst, s.dst_at)
            src = self.address(s.src, s.src_at)
            self.emit(f"(memory.copy {dst} {src} {count})")
        elif t is ir.Exchange:  # the two buffers' addresses trade places
            a, b = self.buf(s.a), self.buf(s.b)
            self.emit(f"(local.get {a}) (local.get {b}) (local.set {a}) (local.set {b})")
        elif t is ir.Call:
            args = " ".join(self.get(a) for a in s.args)
            self.emit(f"(call {fname(s.fn)} {args})")
            for r in reversed(s.results):
                if isinstance(r, ir.Buf):
                    self.emit(f"local.set {self.buf(r)}")
                else:
                    self.emit(f"local.set {self.var(r)}")
                    self.defined.add(r.id)
        elif t is ir.Print:
            self.print(s)
        else:  # pragma: no cover - a lowering bug
            raise NotSelected(f"no selection for {t.__name__}")

    def address(self, b: ir.Buf, index) -> str:
        """The byte address of element ``index`` (an ``i64`` operand) of ``b``."""
        base = self.get(b)
        if isinstance(index, Imm):
            # wrapped to 32 bits like a computed index (the address of an element past the
            # end is never used: the bounds check before it fails first)
            off = _i32(index.bits * size(b.elem))
            return base if off == 0 else f"(i32.add {base} (i32.const {off}))"
        i = f"(i32.wrap_i64 {self.get(index)})"
        w = size(b.elem)
        if w > 1:
            i = f"(i32.shl {i} (i32.const {SHIFT[w]}))"
        return f"(i32.add {base} {i})"

    def at(self, s: ir.Load | ir.Store) -> str:
        """The byte address a load or store statement accesses: its strided address local
        inside a straight-line loop, else computed from its index."""
        p = self.pointers.get(id(s))
        return f"(local.get {p})" if p is not None else self.address(s.buf, s.index)

    def loop(self, s: ir.Loop) -> None:
        """A planned `lanes` loop runs its first iterations as vector steps, the rest (or
        every iteration, without a plan) as the scalar loop."""
        plan = None
        if self.mod.vectors:
            from kera_core.backends.wasm import vector

            plan = vectorize.plan(s, set(self.defined), vector.TARGET)

        def vector_steps(i: str, hi: str) -> None:
            if plan is not None:
                vector.VectorLoop(self, plan).emit(i, hi)

        self.range_loop(s, self.stmts, vector_steps)

    def range_loop(self, s: ir.Loop, body, first=None, unroll: int = 1, fresh=None) -> None:
        """``for var in lo..hi``: a counter of its own (the bound read once, at entry), the
        body emitted by ``body(statements)``; ``first(counter, bound)`` emits what runs
        before the loop and may advance the counter. ``unroll > 1``: a first loop runs
        ``unroll`` iterations (in order) per trip, the usual one the rest; ``fresh()`` is
        called before each (what one emitted loop computes, the next cannot reuse)."""
        i = self.local("i64", "i")
        hi = self.local("i64", "n")
        self.emit(f"(local.set {i} {self.get(s.lo)})")
        self.emit(f"(local.set {hi} {self.get(s.hi)})")
        if first is not None:
            first(i, hi)
        plan = induction.plan(s, self.reads)
        steps = self.strided(plan, i) if plan is not None else []
        for n in (unroll, 1) if unroll > 1 else (1,):
            if fresh is not None:
                fresh()
            brk, cont = self.label("done"), self.label("loop")
            self.emit(f"(block {brk} (loop {cont}")
            self.depth += 1
            if n == 1:
                self.emit(f"(br_if {brk} (i64.ge_s (local.get {i}) (local.get {hi})))")
            else:
                self.emit(
                    f"(br_if {brk} (i64.gt_s (i64.add (local.get {i}) (i64.const {n})) "
                    f"(local.get {hi})))"
                )
            for u in range(n):
                at = f"(local.get {i})"
                self.set(s.var, at if u == 0 else f"(i64.add {at} (i64.const {u}))")
                body(s.body)
                for p, step in steps:
                    self.emit(f"(local.set {p} (i32.add (local.get {p}) {step}))")
            self.emit(f"(local.set {i} (i64.add (local.get {i}) (i64.const {n})))")
            self.emit(f"(br {cont})")
            self.depth -= 1
            self.emit("))")
        if plan is not None:  # this emission's: another of the same loop makes its own
            for key in plan.access:
                del self.pointers[key]
            self.unused -= plan.unused

    def strided(self, plan: induction.Strides, i: str) -> list[tuple[str, str]]:
        """Address locals for the strided accesses of a straight-line loop (induction.py),
        set to iteration ``i``'s addresses before the loop; returns (local, bytes added per
        iteration) pairs. One local per buffer and affine form: a load and a store of one
        element share it. (The 32-bit address arithmetic wraps as the indices' does.)"""
        made: dict[tuple, str] = {}
        steps = []
        for key, (buf, _, f) in plan.access.items():
            form = (buf.id, f)
            p = made.get(form)
            if p is None:
                w = size(buf.elem)
                index = self.term32_at(f, f"(i32.wrap_i64 (local.get {i}))")
                p = made[form] = self.local("i32", "p")
                scaled = index if w == 1 else f"(i32.shl {index} (i32.const {SHIFT[w]}))"
                self.emit(f"(local.set {p} (i32.add {self.get(buf)} {scaled}))")
                if isinstance(f.step, Imm):
                    step = f"(i32.const {_i32(f.step.bits * w)})"
                else:
                    step = self.local("i32", "q")
                    by = self.term32(f.step)
                    by = by if w == 1 else f"(i32.shl {by} (i32.const {SHIFT[w]}))"
                    self.emit(f"(local.set {step} {by})")
                    step = f"(local.get {step})"
                steps.append((p, step))
            self.pointers[key] = p
        self.unused |= plan.unused
        return steps

    def term32_at(self, f: induction.Affine, counter: str) -> str:
        """``base + counter·step`` wrapped to 32 bits, ``counter`` an i32 expression."""
        if f.step == induction.ONE:
            k = counter
        else:
            k = f"(i32.mul {counter} {self.term32(f.step)})"
        return k if f.base == induction.ZERO else f"(i32.add {self.term32(f.base)} {k})"

    def term32(self, t) -> str:
        """An induction term (induction.py) wrapped to 32 bits."""
        if isinstance(t, Imm):
            return f"(i32.const {_i32(t.bits)})"
        if isinstance(t, ir.Var):
            return f"(i32.wrap_i64 {self.get(t)})"
        op, a, b = t
        return f"(i32.{op} {self.term32(a)} {self.term32(b)})"

    def print(self, s: ir.Print) -> None:
        """``kera.print(descriptor, length, value, shape)``: the descriptor (JSON in a data
        segment) says what ``value`` is — nothing (text), a scalar's bits, or the address
        of a buffer's first printed element with its ``rank`` dimensions as ``i64`` at
        ``shape`` (scratch memory)."""
        if s.text is not None:
            at, n = self.mod.descriptor({"text": s.text})
            self.emit(
                f"(call $kera_print (i32.const {at}) (i32.const {n}) (i64.const 0) (i32.const 0))"
            )
            return
        v = s.value
        if isinstance(v, ir.Buf):
            at, n = self.mod.descriptor({"elem": v.elem, "rank": len(s.shape)})
            for k, d in enumerate(s.shape):
                self.emit(f"(i64.store (i32.const {PRINT_SHAPE + 8 * k}) {self.get(d)})")
            addr = self.address(v, s.offset) if s.offset is not None else self.get(v)
            self.emit(
                f"(call $kera_print (i32.const {at}) (i32.const {n}) "
                f"(i64.extend_i32_u {addr}) (i32.const {PRINT_SHAPE}))"
            )
            return
        at, n = self.mod.descriptor({"elem": v.type})
        self.emit(
            f"(call $kera_print (i32.const {at}) (i32.const {n}) {self.bits64(v)} (i32.const 0))"
        )

    def bits64(self, x) -> str:
        """A scalar's bits in the low end of an ``i64`` (floats canonicalised)."""
        t = x.type
        e = self.get(x)
        if t == "f32":
            return f"(i64.extend_i32_u (i32.reinterpret_f32 {self.canon(t, e)}))"
        if t == "f64":
            return f"(i64.reinterpret_f64 {self.canon(t, e)})"
        if wtype(t) == "i64":
            return e
        return f"(i64.extend_i32_{'s' if is_signed(t) else 'u'} {e})"

    # --- primitives ---------------------------------------------------------------------------
    def canon(self, t: str, e: str) -> str:
        return canon(t, e)

    def op(self, s: ir.Op) -> str:
        name = s.op
        t = s.dst.type
        a = [self.get(x) for x in s.args]
        at = s.args[0].type
        w = wtype(at)
        if name == "select":
            return f"(select {a[1]} {a[2]} {a[0]})"
        if name == "convert":
            if is_float(at) and not is_float(t) and BITS[t] < 32:
                self.mod.helper("clamp_i32")
            return convert(at, t, a[0])
        if name == "bitcast":
            return bitcast(at, t, a[0])
        if is_float(at):
            return self.float_op(name, at, a)
        sg = "s" if is_signed(at) else "u"
        if name in ("eq", "ne"):
            return f"({w}.{name} {a[0]} {a[1]})"
        if name in ("lt", "le", "gt", "ge"):
            return f"({w}.{name}_{sg} {a[0]} {a[1]})"
        if name in ("add", "sub", "mul"):
            return norm(t, f"({w}.{name} {a[0]} {a[1]})")
        if name in ("and", "or", "xor"):
            return f"({w}.{name} {a[0]} {a[1]})"
        if name == "not":
            if t == "bool":
                return f"(i32.eqz {a[0]})"
            return norm(t, f"({w}.xor {a[0]} ({w}.const -1))")
        if name == "neg":
            return norm(t, f"({w}.sub ({w}.const 0) {a[0]})")
        if name == "abs":
            if not is_signed(t):
                return a[0]
            return norm(
                t, f"(select ({w}.sub ({w}.const 0) {a[0]}) {a[0]} ({w}.lt_s {a[0]} ({w}.const 0)))"
            )
        if name in ("minimum", "maximum"):
            cmp = "lt" if name == "minimum" else "gt"
            return f"(select {a[0]} {a[1]} ({w}.{cmp}_{sg} {a[0]} {a[1]}))"
        if name == "div":
            if is_signed(at) and BITS[at] >= 32:
                # MIN / -1 = MIN (WebAssembly traps on it): divide by 1 there and negate
                m1 = f"({w}.eq {a[1]} ({w}.const -1))"
                q = f"({w}.div_s {a[0]} (select ({w}.const 1) {a[1]} {m1}))"
                return f"(select ({w}.sub ({w}.const 0) {a[0]}) {q} {m1})"
            return norm(t, f"({w}.div_{sg} {a[0]} {a[1]})")
        if name == "rem":  # MIN % -1 is 0 in WebAssembly, as in Kera
            return f"({w}.rem_{sg} {a[0]} {a[1]})"
        if name in ("shl", "shr"):
            bits = BITS[at]
            ct = s.args[1].type
            cw = wtype(ct)
            c = f"({cw}.and {a[1]} ({cw}.const {bits - 1}))"
            if cw != w:
                c = f"(i32.wrap_i64 {c})" if w == "i32" else f"(i64.extend_i32_u {c})"
            if name == "shl":
                return norm(t, f"({w}.shl {a[0]} {c})")
            return f"({w}.shr_{sg} {a[0]} {c})"
        raise NotSelected(f"no selection for `{name}` on {at}")

    def float_op(self, name: str, t: str, a: list[str]) -> str:
        if name in ("add", "sub", "mul", "div"):
            return f"({t}.{name} {a[0]} {a[1]})"
        if name in ("minimum", "maximum"):  # WebAssembly's min/max are IEEE 754-2019's
            return f"({t}.{name[:3]} {a[0]} {a[1]})"
        if name in ("eq", "ne", "lt", "le", "gt", "ge"):
            return f"({t}.{name} {a[0]} {a[1]})"
        if name in ("neg", "abs", "sqrt"):
            return f"({t}.{name} {a[0]})"
        if name == "roundeven":
            return f"({t}.nearest {a[0]})"
        if name == "canon":
            return self.canon(t, a[0])
        if name == "fma":
            return f"(call {self.mod.helper(f'fma_{t}')} {a[0]} {a[1]} {a[2]})"
        if name == "rem":
            return f"(call {self.mod.helper(f'fmod_{t}')} {a[0]} {a[1]})"
        raise NotSelected(f"no selection for `{name}` on {t}")


PRINT_SHAPE = 16  # scratch: the dimensions of a printed buffer (i64 each)


def convert(src: str, dst: str, e: str) -> str:
    """Kera's ``as`` (docs/semantics.md §5) from ``src`` to ``dst``."""
    ws, wd = wtype(src), wtype(dst)
    if is_float(src) and is_float(dst):
        if src == dst:
            return e
        return f"(f32.demote_f64 {e})" if dst == "f32" else f"(f64.promote_f32 {e})"
    if is_float(dst):  # integer → float: rounded to nearest even (WebAssembly's convert)
        sg = "s" if is_signed(src) else "u"
        return f"({dst}.convert_{ws}_{sg} {e})"
    if is_float(src):  # float → integer: truncate, saturate, NaN → 0
        if BITS[dst] >= 32:
            sg = "s" if is_signed(dst) else "u"
            return f"({wd}.trunc_sat_{src}_{sg} {e})"
        lo = -(1 << (BITS[dst] - 1)) if is_signed(dst) else 0
        hi = (1 << (BITS[dst] - 1)) - 1 if is_signed(dst) else (1 << BITS[dst]) - 1
        if dst == "bool":
            lo, hi = 0, 1
        v = f"(i32.trunc_sat_{src}_s {e})"
        return f"(call $clamp_i32 {v} (i32.const {lo}) (i32.const {hi}))"
    # integer → integer: wraps (an i32 value of any type, re-extended to the new width)
    if ws == wd:
        return norm(dst, e)
    if wd == "i64":
        return f"(i64.extend_i32_{'s' if is_signed(src) else 'u'} {e})"
    return norm(dst, f"(i32.wrap_i64 {e})")


def bitcast(src: str, dst: str, e: str) -> str:
    if is_float(src) and not is_float(dst):
        return f"({wtype(dst)}.reinterpret_{src} {e})"
    if is_float(dst) and not is_float(src):
        return f"({dst}.reinterpret_{wtype(src)} {e})"
    return norm(dst, e)
