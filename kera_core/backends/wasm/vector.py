"""The loop program's vector plans as WebAssembly 128-bit SIMD (``f32x4``, ``f64x2``).

Which `lanes` loops run as vectors, which values vary per lane, which are uniform and how
many vectors a step jams is decided by the shared layer (kera_core/loops/vectorize.py, from
:data:`TARGET`); this module only spells a plan:

* a varying value is one ``v128`` local per jammed copy (``$x<id>_<copy>``); uniform and
  contiguous values (index arithmetic, loads at a uniform index) are selected by the scalar
  selector once per step with the loop variable at the step's first lane — so a contiguous
  index addresses copy ``u``'s lanes at the memory-argument offset ``16·u``;
* a uniform value read by vector code is splatted there; values of the enclosing code
  (the plan's invariants) once, before the vector loops;
* every primitive of :data:`OPS` is one WebAssembly SIMD instruction whose lanes are the
  scalar instruction's: ``add sub mul div sqrt neg abs``, ``nearest`` for ``roundeven``,
  ``min``/``max`` (IEEE 754-2019's minimum/maximum in WebAssembly, as the scalar ones), the
  comparisons (all-ones masks) and ``v128.bitselect`` for ``select`` and ``canon`` — so a
  lane computes the scalar bits. ``fma`` has no SIMD form outside relaxed SIMD (whose
  fusing is the engine's choice), so a body with it stays scalar;
* integer lanes (:data:`INT_OPS`): ``i32x4``/``i64x2`` arithmetic, bitwise operations and
  comparisons, shifts by one (uniform) count, the f32↔32-bit-integer conversions
  (``trunc_sat``: truncate, saturate, NaN → 0, as the scalar ones) and bit casts (no
  instruction) — so integer kernels and the elementary functions' step lists (integer
  exponent arithmetic, §6.1's scaleB) run lane-wise too;
* mixed widths (the binary32 elementary functions evaluated in binary64): the lanes are
  ``f64x2``'s and an f32 value fills the low half of its ``v128`` (``promote_low`` and
  ``demote_zero`` convert; its loads and stores are ``v128.load64_zero`` and
  ``v128.store64_lane``; its operations are the ``f32x4`` ones, the high lanes unused);
* inner ``seq`` loops stay loops; their varying accumulators are the same ``v128`` locals.
"""

from __future__ import annotations

from collections import Counter

from kera_core.backends.wasm.select import NAN_BITS
from kera_core.loops import induction, ir
from kera_core.loops.ir import BITS, Imm, is_float, is_signed
from kera_core.loops.vectorize import LanesPlan, VectorTarget

COMPARES = ("eq", "ne", "lt", "le", "gt", "ge")
OPS = frozenset(
    {"add", "sub", "mul", "div", "sqrt", "minimum", "maximum", "neg", "abs", "select"}
    | {"roundeven", "canon", *COMPARES}
)
# integer lanes: i32x4 has every comparison and min/max, signed and unsigned; i64x2 only
# signed ordering and no min/max; conversions exist between f32 and 32-bit integers only
_BOTH = ("add", "sub", "mul", "and", "or", "xor", "not", "neg", "abs", "shl", "shr", "eq", "ne")
INT_OPS = frozenset(
    [f"{op}:{t}" for t in ("i32", "u32", "i64", "u64") for op in (*_BOTH, "select")]
    + [f"{op}:{t}" for t in ("i32", "u32", "i64") for op in ("lt", "le", "gt", "ge")]
    + [f"{op}:{t}" for t in ("i32", "u32") for op in ("minimum", "maximum")]
    + [f"{op}:bool" for op in ("and", "or", "xor", "not", "eq", "ne", "select")]
    + ["convert:f32>i32", "convert:f32>u32", "convert:i32>f32", "convert:u32>f32"]
    + ["convert:f32>f64", "convert:f64>f32"]  # with narrow lanes: promote_low, demote_zero
    + [
        f"bitcast:{a}>{b}"
        for group in (("f32", "i32", "u32"), ("f64", "i64", "u64"))
        for a in group
        for b in group
        if a != b
    ]
)
# 16-byte vectors. `registers` is the plan's register budget: Cranelift maps v128 locals to
# the host's 16 (x86-64) or 32 (AArch64) vector registers and spills the rest; 22 lets a
# matmul block keep 4 rows × 4 vectors of accumulators (measured: 1.3-1.6x faster than 2
# vectors on x86-64, spills and all). A run's budget is fuel, not steps: loops the
# optimizer marked `lanes` may run lane-wise.
TARGET = VectorTarget(
    width_bytes=16,
    registers=22,
    ops=OPS,
    int_ops=INT_OPS,
    counts_steps=False,
    narrow_lanes=True,
)
# iterations per trip of a straight-line inner loop (matmul's k loop, the canonical sum's
# group loop). Fuel metering checks the budget at every loop header, and the out-of-fuel
# call there clobbers every vector register, so Cranelift keeps the loop's accumulators in
# stack slots: a load and a store per accumulator per trip. Two iterations a trip halve
# that; more load more `b` vectors ahead than there are registers (f32 matmul at 512² and
# 1000², time against one iteration a trip: 2 → 0.77, 3 → 0.8–0.87, 4 → 0.92, 8 → 1.1).
UNROLL = 2

_NAME = {"minimum": "min", "maximum": "max", "roundeven": "nearest"}
_SIGNED = ("lt", "le", "gt", "ge", "shr", "minimum", "maximum")
_CONVERT = {
    ("f32", "i32"): "i32x4.trunc_sat_f32x4_s",
    ("f32", "u32"): "i32x4.trunc_sat_f32x4_u",
    ("i32", "f32"): "f32x4.convert_i32x4_s",
    ("u32", "f32"): "f32x4.convert_i32x4_u",
    # mixed widths: the f32 lanes are the low half of a vector (vectorize.py)
    ("f32", "f64"): "f64x2.promote_low_f32x4",
    ("f64", "f32"): "f32x4.demote_f64x2_zero",
}


def shape(t: str) -> str:
    """The SIMD shape of lanes of type ``t``."""
    return {"f32": "f32x4", "f64": "f64x2"}.get(t) or ("i32x4" if BITS[t] == 32 else "i64x2")


class VectorLoop:
    """Emits the vector steps of one planned loop through the scalar selector ``sel``."""

    def __init__(self, sel, plan: LanesPlan) -> None:
        self.sel = sel
        self.plan = plan
        self.t = plan.elem
        self.invariant: dict = {}
        self.splat_loads = self.only_splat()
        self.compares = _compares(plan)  # for clamp selects

    def emit(self, i: str, hi: str) -> None:
        """The loop's first iterations as vector steps — jam × W lanes a step, then W;
        ``i`` (the loop's counter) ends where the scalar loop takes over."""
        s = self.sel
        p = self.plan
        for x in p.invariants():
            key = ("imm", x.type, x.bits) if isinstance(x, Imm) else ("var", x.id)
            name = s.local("v128", "s")
            s.emit(f"(local.set {name} ({shape(x.type)}.splat {s.get(x)}))")
            self.invariant[key] = name
        for jam in (p.jam, 1) if p.jam > 1 else (1,):
            step = p.width * jam
            brk, cont = s.label("vdone"), s.label("vstep")
            s.emit(f"(block {brk} (loop {cont}")
            s.depth += 1
            s.emit(
                f"(br_if {brk} (i64.gt_s (i64.add (local.get {i}) (i64.const {step})) "
                f"(local.get {hi})))"
            )
            s.set(p.loop.var, f"(local.get {i})")
            self.jam = jam
            self.splats: dict = {}  # uniform values splat in this step (until redefined)
            self.stmts(p.loop.body)
            s.emit(f"(local.set {i} (i64.add (local.get {i}) (i64.const {step})))")
            s.emit(f"(br {cont})")
            s.depth -= 1
            s.emit("))")

    def only_splat(self) -> set[int]:
        """The uniform loads of lane-type elements whose value only vector code of the same
        block reads (a matmul row's ``a[i, k]``): one ``v128.load*_splat`` each, no scalar.
        (A read in a nested loop would find the splat gone: see :meth:`inner_loop`.)"""
        p = self.plan
        out: set[int] = set()
        reads = self.sel.reads

        def block(body: list) -> None:
            loads: dict[int, ir.Load] = {}
            vector_reads: Counter = Counter()
            for st in body:
                if isinstance(st, ir.Loop):
                    block(st.body)
                elif isinstance(st, ir.Load) and p.kind(st.dst) == "uniform":
                    if st.buf.elem == self.t and st.dst.id not in p.reassigned:
                        loads[st.dst.id] = st
                elif isinstance(st, ir.Op) and p.kind(st.dst) == "varying":
                    args = st.args[:1] if st.op in ("shl", "shr") else st.args
                    vector_reads.update(a.id for a in args if isinstance(a, ir.Var))
                elif isinstance(st, ir.Store) and isinstance(st.value, ir.Var):
                    vector_reads[st.value.id] += 1
            out.update(id(st) for v, st in loads.items() if reads[v] == vector_reads[v])

        block(p.loop.body)
        return out

    # --- values -------------------------------------------------------------------------------
    def vec(self, v: ir.Var, u: int) -> str:
        name = f"$x{v.id}_{u}"
        self.sel.locals.setdefault(name, "v128")
        return name

    def operand(self, x, u: int, narrow: bool = False) -> str:
        """``narrow``: a uniform mask is splat at half the lane width (mixed widths)."""
        if isinstance(x, ir.Var) and x.id in self.plan.varying:
            return f"(local.get {self.vec(x, u)})"
        key = ("imm", x.type, x.bits) if isinstance(x, Imm) else ("var", x.id)
        if x.type == "bool":
            key = (*key, narrow)
        name = self.invariant.get(key)
        if name is not None:
            return f"(local.get {name})"
        v = self.sel.get(x)
        got = self.splats.get(key)
        if got is not None:
            return f"(local.get {got})"
        if x.type == "bool":  # a uniform mask: all ones or all zeros in every lane
            if BITS[self.t] == 64 and not narrow:
                v = f"(i64x2.splat (i64.sub (i64.const 0) (i64.extend_i32_u {v})))"
            else:
                v = f"(i32x4.splat (i32.sub (i32.const 0) {v}))"
        else:
            v = f"({shape(x.type)}.splat {v})"
        name = self.sel.local("v128", "u")
        self.sel.emit(f"(local.set {name} {v})")  # once, for every jammed copy
        self.splats[key] = name
        return f"(local.get {name})"

    # --- statements ---------------------------------------------------------------------------
    def stmts(self, body: list) -> None:
        s = self.sel
        p = self.plan
        for st in body:
            if isinstance(st, ir.Loop):
                self.inner_loop(st)
            elif isinstance(st, ir.Op) and p.kind(st.dst) == "varying":
                for u in range(self.jam):
                    s.emit(f"(local.set {self.vec(st.dst, u)} {self.op(st, u)})")
            elif isinstance(st, ir.Load) and p.kind(st.dst) == "varying":
                addr = self.address(st)
                half = p.half(st.dst)
                load = "v128.load64_zero" if half else "v128.load"
                for u in range(self.jam):
                    off = f" offset={(8 if half else 16) * u}" if u else ""
                    s.emit(f"(local.set {self.vec(st.dst, u)} ({load}{off} {addr}))")
            elif id(st) in self.splat_loads:
                name = s.local("v128", "u")
                bits = BITS[self.t]
                s.emit(f"(local.set {name} (v128.load{bits}_splat {s.at(st)}))")
                self.splats[("var", st.dst.id)] = name
            elif isinstance(st, ir.Store):
                values = [self.operand(st.value, u) for u in range(self.jam)]
                addr = self.address(st)
                half = p.half(st.value)
                for u in range(self.jam):
                    off = f" offset={(8 if half else 16) * u}" if u else ""
                    if half:  # the low 8 bytes
                        s.emit(f"(v128.store64_lane{off} 0 {addr} {values[u]})")
                    else:
                        s.emit(f"(v128.store{off} {addr} {values[u]})")
            elif isinstance(st, (ir.Op, ir.Load)):
                s.stmt(st)  # uniform or contiguous: scalar, once per step
                self.splats.pop(("var", st.dst.id), None)
            else:  # pragma: no cover - the plan admits only the above
                raise AssertionError(type(st).__name__)

    def address(self, st) -> str:
        """The byte address of a vector load's or store's first lane, once for every copy."""
        at = self.sel.at(st)
        if self.jam == 1 or id(st) in self.sel.pointers:
            return at
        name = self.sel.local("i32", "a")
        self.sel.emit(f"(local.set {name} {at})")
        return f"(local.get {name})"

    def inner_loop(self, st: ir.Loop) -> None:
        # its vector accumulators stay in their locals; a splat made inside the loop may not
        # have run (no iteration), one made before it may be of a value the loop redefines
        def fresh() -> None:
            self.splats = {}

        unroll = UNROLL if induction.straight(st) else 1
        self.sel.range_loop(st, self.stmts, unroll=unroll, fresh=fresh)
        self.splats = {}

    def clamp(self, st: ir.Op):
        """``select(q < p, q, p)`` is ``pmin(p, q)`` and ``select(p < q, q, p)`` is
        ``pmax(p, q)`` — WebAssembly's pseudo-minimum ``b < a ? b : a`` and pseudo-maximum
        ``a < b ? b : a``, bit for bit (NaN and zeros included): one ``minpd``/``maxpd`` on
        x86-64 where IEEE ``min``/``max`` take several. None for any other select."""
        c, x, y = st.args
        cmp = self.compares.get(c.id) if isinstance(c, ir.Var) else None
        if cmp is None or not is_float(y.type):
            return None
        lo, hi = cmp.args if cmp.op == "lt" else cmp.args[::-1]  # the mask is lo < hi
        if _same(lo, x) and _same(hi, y):
            name = "pmin"  # q < p ? q : p
        elif _same(hi, x) and _same(lo, y):
            name = "pmax"  # p < q ? q : p
        else:
            return None
        sh = shape(y.type)
        return lambda u: f"({sh}.{name} {self.operand(y, u)} {self.operand(x, u)})"

    def op(self, st: ir.Op, u: int) -> str:
        name = st.op
        a = st.args
        narrow = self.plan.half(st.dst)  # (a mask's width is that of what it combines)
        if name == "select":
            c = a[0]
            if isinstance(c, Imm):  # a copy
                return self.operand(a[1] if c.bits & 1 else a[2], u)
            clamp = self.clamp(st)
            if clamp is not None:
                return clamp(u)
            c, x, y = (self.operand(v, u, narrow) for v in a)
            return f"(v128.bitselect {x} {y} {c})"
        t = a[0].type
        if name == "bitcast" or (name == "abs" and not is_float(t) and not is_signed(t)):
            return self.operand(a[0], u)  # the same bits
        if name == "convert":
            return f"({_CONVERT[t, st.dst.type]} {self.operand(a[0], u)})"
        if name in ("shl", "shr"):  # one count for every lane, taken modulo the lane width
            count = self.sel.get(a[1])
            if BITS[a[1].type] == 64:
                count = f"(i32.wrap_i64 {count})"
            op = "shl" if name == "shl" else f"shr_{'s' if is_signed(t) else 'u'}"
            return f"({shape(t)}.{op} {self.operand(a[0], u)} {count})"
        args = " ".join(self.operand(x, u, narrow) for x in a)
        if name in ("and", "or", "xor", "not") and not is_float(t):
            return f"(v128.{name} {args})"  # integers and masks alike
        if t == "bool":  # masks: equal where the xor is zero
            xor = f"(v128.xor {args})"
            return xor if name == "ne" else f"(v128.not {xor})"
        if name == "canon":  # the canonical NaN where a lane is unordered
            x = self.operand(a[0], u)
            nan = self.operand(Imm(t, NAN_BITS[t]), u)
            return f"(v128.bitselect {nan} {x} ({shape(t)}.ne {x} {x}))"
        if is_float(t):
            return f"({shape(t)}.{_NAME.get(name, name)} {args})"
        op = _NAME.get(name, name)
        if name in _SIGNED:
            op += "_s" if is_signed(t) else "_u"
        return f"({shape(t)}.{op} {args})"


def _same(a, b) -> bool:
    """The same operand: one variable, or equal immediates."""
    if isinstance(a, ir.Var) or isinstance(b, ir.Var):
        return a is b or (isinstance(a, ir.Var) and isinstance(b, ir.Var) and a.id == b.id)
    return a.type == b.type and a.bits == b.bits


def _compares(plan: LanesPlan) -> dict:
    """The `lt`/`gt` of floats in the body's straight-line part, by mask id — those whose
    mask and operands are defined once (so a select reading the mask sees those operands)."""
    out: dict = {}
    for st in plan.loop.body:
        if isinstance(st, ir.Op) and st.op in ("lt", "gt") and is_float(st.args[0].type):
            ids = [v.id for v in (st.dst, *st.args) if isinstance(v, ir.Var)]
            if not any(v in plan.reassigned for v in ids):
                out[st.dst.id] = st
    return out
