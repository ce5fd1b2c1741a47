"""Graph → loop program: every operation, control flow and memory decision, made once.

One :class:`_FnLowering` per graph function walks each region in ``Graph.region_nodes``
order (the reference order, so checked errors and prints come out as the interpreter's) and
appends statements. A graph value becomes

* a scalar operand (:class:`Var` / :class:`Imm`);
* a :class:`TVal` — a buffer, the tensor's shape as operands and an element offset (a view
  made by indexing fewer axes than the rank shares its tensor's buffer);
* a tuple for a struct (fields flattened, so structs cost nothing), a :class:`RangeV`, or
  ``None`` for an effect token.

**Memory** is planned here from ownership facts alone (never from a target's name):

* a buffer is *owned* by a value when no one else can read it (a result of an operation in
  this activation, a loop's carried buffer, a ``&mut`` parameter, one handed over by a
  dying operand); ``update`` writes in place when its tensor is owned, dies at the update
  and no other live value shares the buffer — otherwise it copies;
* each region activation frees the temporaries it allocated at their last use;
* a loop's carried tensors live in one buffer per carried value for the whole loop (the
  initial value's buffer is taken over when it dies there); an iteration's new value is
  written back into it, so T iterations over N elements need O(N) memory;
* ``if`` hands a dying owned operand to its branches and makes that buffer the result, so an
  update under ``if`` stays in place;
* ``&mut`` parameters end in the caller's buffer (in place from the caller's view); other
  tensor results are buffers the callee allocated and the caller owns.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from kera_core.ir import ops
from kera_core.ir.cycles import RECURSION_LIMIT, resolve
from kera_core.ir.dims import at_path, binding_plan, exprs_of_function
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.types import DimExpr, Prim, Ref, Struct, Sym, Tensor, TokenType, Type, strip_ref
from kera_core.loops import composite as C
from kera_core.loops.dims import dim_operand, solve_operand
from kera_core.loops.emit import Emitter, imm
from kera_core.loops.ir import (
    Alloc,
    Buf,
    Call,
    Check,
    Copy,
    DimSize,
    Exchange,
    Free,
    If,
    Imm,
    LFunction,
    Loop,
    Operand,
    Print,
    Program,
    Var,
    While,
)
from kera_core.loops.target import CPU, LoweringTarget


class NotLowered(Exception):
    """The graph uses something the loop program cannot express (a lowering gap)."""


@dataclass(eq=False)
class TVal:
    buf: Buf
    shape: tuple  # operands (i64)
    offset: Operand
    elem: str
    owned: bool = False  # may an update that consumes this value write its buffer?

    @property
    def whole(self) -> bool:
        return isinstance(self.offset, Imm) and self.offset.bits == 0


@dataclass(eq=False)
class LazyT:
    """A fused elementwise result: no buffer; each consumer computes element ``i`` from the
    operands (DESIGN.md's fusion). Made for an elementwise operation whose result has one
    use and whose tensor operands have its shape; integer `/` and `%` are never deferred, so
    checked errors keep the reference order."""

    node: Node
    ins: list
    shape: tuple
    elem: str
    space: str


@dataclass(frozen=True)
class RangeV:
    """`lo..hi` (or `lo..=hi`) of element type ``elem``, then ``steps`` in order: ``("rev",)``
    for `.rev()`, ``("step", k)`` for `.step_by(k)` (``k`` already checked positive)."""

    lo: Operand
    hi: Operand
    inclusive: bool
    elem: str
    steps: tuple = ()


@dataclass(frozen=True)
class Walk:
    """The integers of a range as ``first + t * stride`` (``i64``, wrapping) for
    ``t = 0 … last`` (``u64``), or none at all when ``empty``: the form every composition of
    `.rev()` and `.step_by(k)` keeps (``walk``)."""

    empty: Operand
    last: Operand
    first: Operand
    stride: Operand


ELEMENTWISE_BINARY = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "rem": "rem",
    "and": "and",
    "or": "or",
    "xor": "xor",
    "land": "and",
    "lor": "or",
    "shl": "shl",
    "shr": "shr",
    "eq": "eq",
    "ne": "ne",
    "lt": "lt",
    "le": "le",
    "gt": "gt",
    "ge": "ge",
    "minimum": "minimum",
    "maximum": "maximum",
}
ELEMENTWISE_UNARY = (
    *("neg", "not", "abs", "sqrt", "exp", "log", "tanh", "sigmoid", "cast"),
    *("floor", "ceil", "trunc", "round", "round_half_away"),
    *("exp2", "log2", "expm1", "log1p", "sin", "cos", "tan", "erf", "erfc"),
)


MATMUL_ROWS = 4  # rows of a matmul that share each loaded element of b
# columns of a matmul computed together: a row block walks a K × 64 panel of b, which stays in
# a 512 KiB cache for K up to 2048 (f32) — a row block over all of a wide b does not
MATMUL_PANEL = 64


def lower_program(graph: Graph, fn: str | None = None, target: LoweringTarget = CPU) -> Program:
    """The loop program of the whole graph, or of ``fn`` and what it calls, with the
    composites shaped for ``target`` (loops/target.py)."""
    prog = Program()
    low = _Lowerer(graph, prog, target)
    names = [fn] if fn is not None else sorted(graph.functions)
    for name in names:
        low.function(graph.functions[name])
    return prog


_PROGRAMS: OrderedDict[tuple[str, bytes, LoweringTarget], Program] = OrderedDict()
PROGRAM_CACHE = 64


def program_of(graph: Graph, fn: str, target: LoweringTarget = CPU) -> Program:
    """`lower_program(graph, fn, target)`, cached by the function's name and hash (the hash
    covers its callees, named by hash) and the target description: a backend's compile and
    every run of the same function share one lowering. The program is never changed after
    lowering."""
    key = (fn, graph.functions[fn].hash, target)
    got = _PROGRAMS.get(key)
    if got is None:
        got = _PROGRAMS[key] = lower_program(graph, fn, target)
        while len(_PROGRAMS) > PROGRAM_CACHE:
            _PROGRAMS.popitem(last=False)
    else:
        _PROGRAMS.move_to_end(key)
    return got


class _Lowerer:
    def __init__(self, graph: Graph, prog: Program, target: LoweringTarget) -> None:
        self.graph = graph
        self.prog = prog
        self.target = target
        self.counter = [0]
        self.by_hash = {f.hash: f for f in graph.functions.values()}
        self.busy: set[str] = set()

    def function(self, fn: Function, nested: bool = False) -> LFunction | None:
        """Lower ``fn`` (once). A member of a recursive component has two loop functions
        (docs/lowering.md "Recursion"): ``name``, entered from outside the component at
        depth 1, and ``name@rec`` (``nested``), called from inside the component with the
        depth as its last parameter. A function being lowered gives None: a call needs only
        its callee's signature."""
        name = rec_name(fn.name) if nested else fn.name
        done = self.prog.functions.get(name)
        if done is not None or name in self.busy:
            return done
        self.busy.add(name)
        lf = _FnLowering(self, fn, nested).run()
        self.prog.functions[name] = lf
        self.busy.discard(name)
        return lf


def rec_name(name: str) -> str:
    """The loop function a recursive component's member is called by from inside it."""
    return f"{name}@rec"


@dataclass
class _Frame:
    """One region activation being lowered: values, remaining uses, buffer sharing."""

    vals: dict = field(default_factory=dict)  # (node, index) -> value
    uses: dict = field(default_factory=dict)  # (node, index) -> uses left
    refs: dict = field(default_factory=dict)  # buf id -> live values holding it
    freeable: set = field(default_factory=set)  # buf ids this frame frees at their last use
    bufs: dict = field(default_factory=dict)  # buf id -> Buf
    users: dict = field(default_factory=dict)  # (node, index) -> the region's nodes using it


def leaves(v) -> list:
    if isinstance(v, tuple):
        out = []
        for x in v:
            out += leaves(x)
        return out
    return [v]


def leaf_types(t: Type) -> list[Type]:
    """The types of a value's leaves as :func:`leaves` lists them: a struct's or a tuple's
    fields flattened in order, through a reference."""
    t = strip_ref(t)
    if isinstance(t, Struct):
        return [x for _, ft in t.fields for x in leaf_types(ft)]
    return [t]


def ref_leaves(v) -> list:
    """The buffers a value keeps alive (a fused value, those of its operands)."""
    out = []
    for leaf in leaves(v):
        if isinstance(leaf, LazyT):
            for x in leaf.ins:
                out += ref_leaves(x)
        else:
            out.append(leaf)
    return out


# Elementwise operations of more than one operand besides ELEMENTWISE_BINARY's.
_OTHER_ELEMENTWISE = ("fma", "select", "where", "copysign", "hypot", "atan2", "pow")

# Consumers that read a fused operand element by element; any other materialises it.
_READS_LAZILY = (
    set(ELEMENTWISE_BINARY)
    | set(ELEMENTWISE_UNARY)
    | {
        "fma",
        "copysign",
        "hypot",
        "atan2",
        "pow",
        "sum",
        "mean",
        "dot",
        "max",
        "min",
        "argmax",
        "argmin",
        "where",
    }
)


def rebuild(template, flat: list):
    it = iter(flat)

    def go(t):
        if isinstance(t, tuple):
            return tuple(go(x) for x in t)
        return next(it)

    return go(template)


class _FnLowering:
    def __init__(self, owner: _Lowerer, fn: Function, nested: bool = False) -> None:
        self.owner = owner
        self.graph = owner.graph
        self.fn = fn
        self.nested = nested
        self.e = Emitter(owner.counter, owner.prog.origins, owner.target)
        self.dims = [self.e.var("i64", f"d{i}") for i in range(fn.type.n_dims)]
        # the calls of its recursive component in progress, this one included (ir/cycles.py)
        self.depth = self.e.var("i64", "depth") if fn.component is not None else None
        self.frames: list[_Frame] = []
        # inside a loop the optimizer marked `lanes` every index is proven in bounds
        # (docs/optimizer.md): no R0001 check can fail there, so none is emitted
        self.proven_in_bounds = 0
        # constant tables (an `array` of constants: a `const W: f32[5] = […]` at its uses)
        # are built once per call, before the body, however deep in loops they are used
        self.tables: dict[bytes, TVal] = {}
        self.table_stmts: list = []

    # --- types --------------------------------------------------------------------------
    def dim(self, d) -> Operand:
        if isinstance(d, Sym):
            return self.dims[d.index]
        if isinstance(d, DimExpr):
            return self.dim_vals[d]  # computed and checked on entry (`entry_dims`)
        return imm("i64", int(d))

    def host_shape(self, t: Tensor) -> tuple:
        """A result's shape as a host reads it, from its declared type: sizes, dimension
        Vars, and DimSizes for dimension expressions (the host evaluates them from the
        bound sizes; the body checked them on entry)."""
        return tuple(DimSize(d) if isinstance(d, DimExpr) else self.dim(d) for d in t.shape)

    def entry_dims(self) -> list:
        """Statements that compute every dimension expression of the function's types on
        entry, each checked to be a size (R0003), as the interpreter checks them."""
        self.dim_vals: dict = {}
        with self.e.block() as blk:
            for d in exprs_of_function(self.graph, self.fn):
                self.dim_vals[d] = dim_operand(
                    self.e, d, self.dims.__getitem__, f"`{self.fn.name}`: dimension `{d}`", None
                )
        return blk

    def shape_of(self, t: Tensor) -> tuple:
        return tuple(self.dim(d) for d in t.shape)

    def param_value(self, t: Type, name: str, mutable: bool = False):
        """The value of a parameter of type t: fresh Vars and param Bufs (a struct's or a
        tuple's flattened, its tensors writable when it is behind `&mut`)."""
        mutable = mutable or (isinstance(t, Ref) and t.mutable)
        t0 = t.inner if isinstance(t, Ref) else t
        if isinstance(t0, Prim):
            return self.e.var(t0.name, name)
        if isinstance(t0, Tensor):
            shape = self.shape_of(t0)
            b = self.e.buf(t0.elem.name, self.e_product_static(shape), t0.space, "param", name)
            b.mutable = mutable
            return TVal(b, shape, imm("i64", 0), t0.elem.name, owned=mutable)
        if isinstance(t0, Struct):
            return tuple(self.param_value(ft, f"{name}.{fn}", mutable) for fn, ft in t0.fields)
        if isinstance(t0, TokenType):
            return None
        raise NotLowered(f"a parameter of type {t0}")

    def e_product_static(self, shape) -> Operand:
        """A buffer size known at the function's entry: constants and dimension Vars only."""
        if all(isinstance(s, Imm) for s in shape):
            n = 1
            for s in shape:
                n *= s.bits
            return imm("i64", n)
        if len(shape) == 1:
            return shape[0]
        n = self.e.var("i64", "size")
        self.prologue.append((n, shape))
        return n

    # --- the function ----------------------------------------------------------------------
    def run(self) -> LFunction:
        fn = self.fn
        region = self.graph.regions[fn.region]
        self.prologue: list = []
        dim_stmts = self.entry_dims()
        effects = bool(fn.type.effects)
        params = [self.param_value(t, f"p{i}") for i, t in enumerate(fn.type.params)]
        if self.depth is not None and not self.nested:  # entered from outside: depth 1
            self.e.assign(self.depth, imm("i64", 1))
        args = ([None] if effects else []) + params
        frame = _Frame()
        for v in args:
            for leaf in leaves(v):
                if isinstance(leaf, TVal):
                    frame.bufs[leaf.buf.id] = leaf.buf
        ys = self.region(region, args, frame)
        if effects:
            ys = ys[1:]
        self.frames.append(frame)  # the results are planned in the body's frame
        results = []
        shapes = []
        pending: list = []  # every `&mut` parameter's write-back, at once (`swap(a, b)`)
        written = {
            id(leaf) for kind, i in fn.outputs if kind == "param" for leaf in leaves(params[i])
        }
        for (kind, i), y in zip(fn.outputs, ys, strict=True):
            if kind == "param":
                target = params[i]
                pending += self.write_back(y, target)
                out = target
            else:
                out = self.as_result(y, frame, written)
            flat = leaves(out)
            results.append([x.buf if isinstance(x, TVal) else x for x in flat])
            declared = fn.type.result if kind == "result" else fn.type.params[i]
            shapes.append(
                [self.host_shape(t) if isinstance(t, Tensor) else () for t in leaf_types(declared)]
            )
        self.parallel_assign(pending)
        self.free_rest(frame, keep={x.id for g in results for x in g if isinstance(x, Buf)})
        for t in self.tables.values():
            self.e.emit(Free(t.buf))
        self.frames.pop()
        body = self.e.stmts
        pro = []
        for n, shape in self.prologue:
            acc: Operand = imm("i64", 1)
            with self.e.block() as blk:
                acc = self.e.product(shape)
                self.e.assign(n, acc)
            pro += blk
        flat_params = [[x.buf if isinstance(x, TVal) else x for x in leaves(p)] for p in params]
        if self.nested:
            flat_params.append([self.depth])
            return LFunction(
                rec_name(fn.name),
                self.dims,
                flat_params,
                dim_stmts + pro + self.table_stmts + body,
                results,
                shapes,
                component=fn.component,
            )
        return LFunction(
            fn.name,
            self.dims,
            flat_params,
            dim_stmts + pro + self.table_stmts + body,
            results,
            shapes,
            fn.exported,
            fn.component,
        )

    def as_result(self, y, frame: _Frame, written: set):
        """A result value the caller will own: the function's own whole temporaries as they
        are, anything else (a parameter, a view, a shared buffer) copied out — and a scalar
        that a `&mut` parameter's write-back (``written``: ids of its Vars) will change."""
        out = []
        for leaf in leaves(y):
            if isinstance(leaf, TVal):
                b = leaf.buf
                if leaf.whole and b.id in frame.freeable and frame.refs.get(b.id, 0) <= 1:
                    frame.freeable.discard(b.id)
                    b.role = "result"
                    out.append(leaf)
                else:
                    out.append(self.copy_new(leaf, role="result"))
            elif isinstance(leaf, Imm) or (isinstance(leaf, Var) and id(leaf) in written):
                v = self.e.var(leaf.type)
                self.e.assign(v, leaf)
                out.append(v)
            else:
                out.append(leaf)
        return rebuild(y, out)

    def write_back(self, y, target) -> list:
        """The final value of a `&mut` parameter ends in the parameter's own storage: the
        (source, target) pairs still to assign."""
        ys, ts = leaves(y), leaves(target)
        pending = []
        for yl, tl in zip(ys, ts, strict=True):
            if isinstance(tl, TVal):
                if yl.buf is tl.buf and yl.whole:
                    continue
                pending.append((yl, tl))
            elif isinstance(tl, Var):
                if yl is not tl:
                    pending.append((yl, tl))
        return pending

    def parallel_assign(self, pending: list) -> None:
        """Assign each (source, target) pair as if all at once (a swap works): a pair runs
        once no other pending pair still reads its target; a cycle (`swap(&mut a, &mut b)`
        in a loop) stages one source in a temporary, which is freed here."""

        def key(x) -> int:
            return id(x.buf) if isinstance(x, TVal) else id(x)

        left = list(pending)
        temps = []
        while left:
            reads = {key(src) for src, _ in left}
            ready = next((p for p in left if key(p[1]) not in reads), None)
            if ready is None:  # a cycle: stage one source that another pair overwrites
                targets = {key(t) for _, t in left}
                i = next(k for k, (src, _) in enumerate(left) if key(src) in targets)
                src, tgt = left[i]
                if isinstance(src, TVal):
                    staged = self.copy_new(src)
                    self.frames[-1].freeable.discard(staged.buf.id)  # freed below, not there
                    temps.append(staged.buf)
                else:
                    staged = self.e.var(src.type)
                    self.e.assign(staged, src)
                left[i] = (staged, tgt)
                continue
            left.remove(ready)
            src, tgt = ready
            if isinstance(tgt, TVal):
                n = self.size(tgt.shape)
                self.e.emit(Copy(tgt.buf, tgt.offset, src.buf, src.offset, n))
            else:
                self.e.assign(tgt, src)
        for b in temps:
            self.e.emit(Free(b))

    def free_rest(self, frame: _Frame, keep: set) -> None:
        for bid in sorted(frame.freeable):
            if bid not in keep:
                self.e.emit(Free(frame.bufs[bid]))
        frame.freeable.clear()

    # --- buffers ------------------------------------------------------------------------------
    def size(self, shape) -> Operand:
        return self.e.product(shape)

    def alloc(self, elem: str, shape, space: str = "host", role: str = "temp") -> TVal:
        b = self.e.buf(elem, self.size(shape), space, role)
        self.e.emit(Alloc(b))
        f = self.frames[-1]
        f.bufs[b.id] = b
        if role == "temp":
            f.freeable.add(b.id)
        return TVal(b, tuple(shape), imm("i64", 0), elem, owned=True)

    def copy_new(self, t: TVal, role: str = "temp") -> TVal:
        out = self.alloc(t.elem, t.shape, t.buf.space, role)
        self.e.emit(Copy(out.buf, imm("i64", 0), t.buf, t.offset, self.size(t.shape)))
        return out

    # --- regions --------------------------------------------------------------------------------
    def region(self, region: Region, args: list, frame: _Frame) -> list:
        """Lower one activation of `region` with `args` into the current block; returns the
        yielded values. The frame's buffers are freed at their last use here."""
        self.frames.append(frame)
        try:
            nodes = reads_before_updates(self.graph.region_nodes(region))
            for n in nodes:
                for v in n.inputs:
                    k = (v.node, v.index)
                    frame.uses[k] = frame.uses.get(k, 0) + 1
                    frame.users.setdefault(k, []).append(n)
            for v in region.yields:
                k = (v.node, v.index)
                frame.uses[k] = frame.uses.get(k, 0) + 1
            for n in nodes:
                if n.op == "param":
                    self.bind(frame, (n.hash, 0), args[n.attr("index")])
                    continue
                if n.op not in _READS_LAZILY:
                    for v in n.inputs:
                        self.materialize(frame, (v.node, v.index))
                ins = [frame.vals[(v.node, v.index)] for v in n.inputs]
                dying = [self.dies_here(frame, v) for v in n.inputs]
                outer, self.e.origin = self.e.origin, (n.hash, n.op)
                outs = self.node(n, ins, dying)
                self.e.origin = outer
                # outputs first: one that took over an input's buffer keeps it alive
                for i, o in enumerate(outs):
                    self.bind(frame, (n.hash, i), o)
                for v in n.inputs:
                    self.use(frame, (v.node, v.index))
            for v in region.yields:
                self.materialize(frame, (v.node, v.index))
            ys = [frame.vals[(v.node, v.index)] for v in region.yields]
            for v in region.yields:  # the yields are handed out: no longer counted here
                k = (v.node, v.index)
                frame.uses[k] -= 1
                if frame.uses[k] == 0:
                    self.unref(frame, frame.vals[k], free=False)
            return ys
        finally:
            self.frames.pop()

    def materialize(self, frame: _Frame, key) -> None:
        """Give a fused value its buffer (its consumer reads memory)."""
        v = frame.vals.get(key)
        if not isinstance(v, LazyT):
            return
        out = self.alloc(v.elem, v.shape, v.space)
        e = self.e
        with e.loop(imm("i64", 0), self.size(v.shape), mark="lanes") as i:
            e.store(out.buf, i, self.element(v, i))
        # the buffer replaces the operands it was computed from
        frame.refs[out.buf.id] = frame.refs.get(out.buf.id, 0) + 1
        frame.vals[key] = out
        self.unref(frame, v, free=True)

    def element(self, x, i: Operand) -> Operand:
        if isinstance(x, LazyT):
            return self.scalar_op(x.node, [self.element(a, i) for a in x.ins])
        if isinstance(x, TVal):
            return self.e.load(x.buf, self.e.add_i(x.offset, i))
        return x

    def dies_here(self, frame: _Frame, v: Value) -> bool:
        return frame.uses.get((v.node, v.index), 0) == 1

    def bind(self, frame: _Frame, key, value) -> None:
        frame.vals[key] = value
        if frame.uses.get(key, 0) == 0:
            self.unref(frame, value, free=True, counted=False)
            return
        for leaf in ref_leaves(value):
            if isinstance(leaf, TVal):
                frame.bufs.setdefault(leaf.buf.id, leaf.buf)
                frame.refs[leaf.buf.id] = frame.refs.get(leaf.buf.id, 0) + 1

    def use(self, frame: _Frame, key) -> None:
        left = frame.uses[key] - 1
        frame.uses[key] = left
        if left == 0:
            self.unref(frame, frame.vals[key], free=True)

    def unref(self, frame: _Frame, value, free: bool, counted: bool = True) -> None:
        for leaf in ref_leaves(value):
            if isinstance(leaf, TVal):
                bid = leaf.buf.id
                if counted:
                    frame.refs[bid] -= 1
                if frame.refs.get(bid, 0) == 0 and free and bid in frame.freeable:
                    frame.freeable.discard(bid)
                    self.e.emit(Free(leaf.buf))

    def exclusive(self, frame: _Frame, t: TVal, dying: bool) -> bool:
        """May the consumer of `t` (where it dies) take over its buffer?"""
        return t.owned and t.whole and dying and frame.refs.get(t.buf.id, 0) == 1

    def take(self, frame: _Frame, t: TVal) -> None:
        """The consumer takes `t`'s buffer: this frame no longer frees it."""
        frame.freeable.discard(t.buf.id)

    # --- nodes -----------------------------------------------------------------------------------
    def node(self, n: Node, ins: list, dying: list) -> list:
        op = n.op
        e = self.e
        if op == "const":
            t: Prim = n.attr("type")
            bits = int(n.attr("value"))
            width = 8 if t.name == "bool" else t.bits
            c = Imm(t.name, bits & ((1 << width) - 1))
            if t.is_float:
                c = C.fbits(t.name, bits & ((1 << width) - 1))
                if _is_nan_bits(t.name, c.bits):
                    c = C.nan(t.name)
            elif t.name == "bool":
                c = Imm("bool", 1 if bits else 0)
            return [c]
        if op == "dim":
            return [self.dims[n.attr("index")]]
        if op in ELEMENTWISE_BINARY or op in ELEMENTWISE_UNARY or op in _OTHER_ELEMENTWISE:
            if op == "select" and not isinstance(ins[1], (Var, Imm)):
                return [self.select_value(ins)]
            return [self.elementwise(n, ins)]
        if op == "range":
            return [RangeV(ins[0], ins[1], bool(n.attr("inclusive", False)), ins[0].type)]
        if op == "range_rev":
            r = ins[0]
            return [RangeV(r.lo, r.hi, r.inclusive, r.elem, (*r.steps, ("rev",)))]
        if op == "range_step":
            r, k = ins
            positive = e.op("gt", k, imm(k.type, 0))
            e.emit(Check(positive, "R0011", "the step of `step_by` must be positive", n.hash))
            return [RangeV(r.lo, r.hi, r.inclusive, r.elem, (*r.steps, ("step", k)))]
        if op == "index":
            return [self.index(n, ins)]
        if op == "update":
            return [self.update(n, ins, dying)]
        if op == "slice":
            return [self.slice(n, ins)]
        if op == "update_slice":
            return [self.update_slice(n, ins, dying)]
        if op == "full":
            t = n.attr("type")
            out = self.alloc(t.elem.name, self.shape_of(t), t.space)
            with e.loop(imm("i64", 0), self.size(out.shape), mark="lanes") as i:
                e.store(out.buf, i, ins[0])
            return [out]
        if op == "array":
            if len(self.frames) > 1 and self.constant_table(n):
                return [self.table(n, ins)]
            return [self.array(n, ins)]
        if op in ("sum", "mean", "max", "min", "argmax", "argmin"):
            if n.attr("axis") is not None:
                return [self.reduction_along(n, ins[0])]
            return [self.reduction(n, ins[0])]
        if op == "dot":
            return [self.dot(n, ins[0], ins[1])]
        if op == "matmul":
            return [self.matmul(n, ins[0], ins[1])]
        if op == "conv1d":
            return [self.conv1d(n, ins[0], ins[1])]
        if op == "softmax":
            if n.attr("axis") is not None:
                return [self.composite_along(n, ins[0])]
            return [self.softmax(n, ins[0])]
        if op == "layernorm":
            if n.attr("axis") is not None:
                return [self.composite_along(n, ins[0], ins[1])]
            return [self.layernorm(n, ins[0], ins[1])]
        if op in SHAPE_OPS:
            return [self.shape_op(n, ins, dying)]
        if op == "struct":
            return [tuple(self.share(x, d) for x, d in zip(ins, dying, strict=True))]
        if op == "field":
            return [self.share(ins[0][n.attr("index")], dying[0])]
        if op == "set_field":
            i = n.attr("index")
            s = list(ins[0])
            s[i] = self.share(ins[1], dying[1])
            return [tuple(self.share(x, dying[0]) if k != i else x for k, x in enumerate(s))]
        if op in ("move_to", "copy_to"):
            return [None, self.transfer(n, ins[1], dying[1])]
        if op == "print":
            return [self.print(n, ins)]
        if op == "if":
            return self.if_(n, ins, dying)
        if op == "for":
            return self.for_(n, ins, dying)
        if op == "while":
            return self.while_(n, ins, dying)
        if op == "call":
            return self.call(n, ins, dying)
        raise NotLowered(f"no lowering of `{op}`")

    def transfer(self, n: Node, x, dying: bool):
        """`move_to`/`copy_to`: on a target whose spaces are separate memories
        (``LoweringTarget.distinct_spaces``) a tensor changing space is copied into a
        buffer allocated in the new space (the old one is freed at its last use, as every
        buffer is); elsewhere every space is the same memory and the value is shared."""
        t = strip_ref(n.types[1])
        if (
            self.e.target.distinct_spaces
            and isinstance(x, TVal)
            and isinstance(t, Tensor)
            and x.buf.space != t.space
        ):
            out = self.alloc(x.elem, x.shape, t.space)
            self.e.emit(Copy(out.buf, imm("i64", 0), x.buf, x.offset, self.size(x.shape)))
            return out
        return self.share(x, dying)

    def share(self, v, dying: bool):
        """The same value under another name (a struct field, a transfer): it keeps owning its
        buffer only if the old name dies here."""
        if isinstance(v, TVal) and v.owned and not dying:
            return TVal(v.buf, v.shape, v.offset, v.elem, owned=False)
        if isinstance(v, tuple):
            return tuple(self.share(x, dying) for x in v)
        return v

    # --- elementwise --------------------------------------------------------------------------
    def elementwise(self, n: Node, ins: list):
        out_t = n.types[0]
        if not any(isinstance(x, (TVal, LazyT)) for x in ins):
            return self.scalar_op(n, ins)
        assert isinstance(out_t, Tensor)
        shape = self.shape_of(out_t)
        rank = len(shape)
        e = self.e
        same = all(
            len(x.shape) == rank and all(_same(a, b) for a, b in zip(x.shape, shape, strict=True))
            for x in ins
            if isinstance(x, (TVal, LazyT))
        )
        int_division = n.op in ("div", "rem") and out_t.elem.name not in ("f32", "f64")
        if same and not int_division and self.frames[-1].uses.get((n.hash, 0), 0) == 1:
            return LazyT(n, list(ins), shape, out_t.elem.name, out_t.space)
        if not same:  # the broadcasting loop below reads memory
            ins = [self.force(x) for x in ins]
        out = self.alloc(out_t.elem.name, shape, out_t.space)
        if same:
            with e.loop(imm("i64", 0), self.size(shape), mark="lanes") as i:
                e.store(out.buf, i, self.scalar_op(n, [self.element(x, i) for x in ins]))
            return out
        # broadcasting: a loop per axis, each operand's index from its own strides
        idx = []
        blocks = []
        for axis in range(rank):
            v = e.var("i64", f"i{axis}")
            idx.append(v)
            blocks.append(e.stmts)
            e.stmts = []
        flat = imm("i64", 0)
        for axis in range(rank):
            flat = e.add_i(e.mul_i(flat, shape[axis]), idx[axis])
        vals = []
        for x in ins:
            if not isinstance(x, TVal):
                vals.append(x)
                continue
            k = len(x.shape)
            at: Operand = x.offset
            stride: Operand = imm("i64", 1)
            for j in range(k - 1, -1, -1):
                axis = rank - k + j
                d = x.shape[j]
                if not (isinstance(d, Imm) and d.bits == 1):
                    at = e.add_i(at, e.mul_i(idx[axis], stride))
                stride = e.mul_i(stride, d)
            vals.append(e.load(x.buf, at))
        e.store(out.buf, flat, self.scalar_op(n, vals))
        for axis in range(rank - 1, -1, -1):
            body = e.stmts
            e.stmts = blocks[axis]
            e.emit(Loop(idx[axis], imm("i64", 0), shape[axis], body, "lanes"))
        return out

    def scalar_op(self, n: Node, vals: list) -> Operand:
        e = self.e
        op = n.op
        elem = _elem_name(n.types[0])
        if op in ELEMENTWISE_BINARY:
            a, b = vals
            if op in ("div", "rem") and elem not in ("f32", "f64"):
                e.emit(
                    Check(
                        e.op("ne", b, imm(b.type, 0)), "R0002", "integer division by zero", n.hash
                    )
                )
            return e.op(ELEMENTWISE_BINARY[op], a, b)
        if op == "cast":
            to = n.attr("to").name
            return e.op("convert", vals[0], to=to)
        if op in ("exp", "log", "tanh", "sigmoid"):
            return C.UNARY[op](e, vals[0], elem)
        if op in C.EXACT_UNARY:
            return C.EXACT_UNARY[op](e, vals[0], elem)
        if op == "copysign":
            return C.copysign(e, vals[0], vals[1], elem)
        if op in C.ELEMENTARY_UNARY:
            return C.ELEMENTARY_UNARY[op](e, vals[0], elem)
        if op in C.ELEMENTARY_BINARY:
            return C.ELEMENTARY_BINARY[op](e, vals[0], vals[1], elem)
        if op == "fma":
            return e.op("fma", *vals)
        if op in ("select", "where"):
            return e.op("select", *vals)
        return e.op(op, vals[0])

    def select_value(self, ins: list):
        """`select` of whole tensors or structs: the chosen value, copied into one place."""
        c, a, b = ins
        out = []
        e = self.e
        for la, lb in zip(leaves(a), leaves(b), strict=True):
            if isinstance(la, TVal):
                r = self.alloc(la.elem, la.shape, la.buf.space)
                n = self.size(la.shape)
                with e.block() as then:
                    e.emit(Copy(r.buf, imm("i64", 0), la.buf, la.offset, n))
                with e.block() as other:
                    e.emit(Copy(r.buf, imm("i64", 0), lb.buf, lb.offset, n))
                e.emit(If(c, then, other))
                out.append(r)
            else:
                out.append(e.op("select", c, la, lb))
        return rebuild(a, out)

    # --- indexing ------------------------------------------------------------------------------
    def flat_index(self, n: Node, t: TVal, idx: list) -> tuple[Operand, tuple]:
        """Checks every index (R0001, axis by axis) and returns (element offset, rest shape)."""
        e = self.e
        at: Operand = imm("i64", 0)
        for axis, i in enumerate(idx):
            i64 = i if i.type == "i64" else e.op("convert", i, to="i64")
            d = t.shape[axis]
            if not self.proven_in_bounds:
                ok = e.op("and", e.op("ge", i64, imm("i64", 0)), e.op("lt", i64, d))
                e.emit(Check(ok, "R0001", f"index out of bounds on axis {axis}", n.hash))
            at = e.add_i(e.mul_i(at, d), i64)
        rest = t.shape[len(idx) :]
        for d in rest:
            at = e.mul_i(at, d)
        return e.add_i(t.offset, at), rest

    def index(self, n: Node, ins: list):
        t, idx = ins[0], ins[1:]
        at, rest = self.flat_index(n, t, idx)
        if not rest:
            return self.e.load(t.buf, at)
        return TVal(t.buf, rest, at, t.elem, owned=False)

    def update(self, n: Node, ins: list, dying: list):
        frame = self.frames[-1]
        t, idx, v = ins[0], ins[1:-1], ins[-1]
        at, rest = self.flat_index(n, t, idx)
        if self.exclusive(frame, t, dying[0]):
            out = TVal(t.buf, t.shape, t.offset, t.elem, owned=True)
        elif self.stored_back(n, frame, t, dying[0]):
            out = TVal(t.buf, t.shape, t.offset, t.elem, owned=False)
        else:
            out = self.copy_new(t)
            at = self.e.add_i(self.e.op("sub", at, t.offset) if not t.whole else at, imm("i64", 0))
        if rest:
            self.e.emit(Copy(out.buf, at, v.buf, v.offset, self.size(rest)))
        else:
            self.e.store(out.buf, at, v)
        return out

    # --- slices (docs/semantics.md §7.8) ---------------------------------------------------------
    def slice_layout(self, n: Node, t: TVal, bounds: list) -> tuple[Operand, list, tuple, bool]:
        """Check a slice's bounds (R0001, axis by axis, as the interpreter) and lay it out
        over ``t``: (element offset of its first element relative to ``t``'s, the stride of
        each kept axis, the view's shape, whether its elements are contiguous — leading
        indices, then at most one range, then whole axes)."""
        e = self.e
        shape = self.shape_of(n.attr("type"))
        strides: list[Operand] = []
        acc: Operand = imm("i64", 1)
        for d in reversed(t.shape):
            strides.insert(0, acc)
            acc = e.mul_i(acc, d)
        at: Operand = imm("i64", 0)
        kept: list[Operand] = []
        k = 0
        contiguous = True
        for axis, a in enumerate(n.attr("axes")):
            d = t.shape[axis]
            if a == "all":
                kept.append(strides[axis])
                continue
            if kept:
                contiguous = False  # an index or a range after a kept axis
            lo = bounds[k]
            lo = lo if lo.type == "i64" else e.op("convert", lo, to="i64")
            zero = imm("i64", 0)
            if a == "index":
                ok = e.op("and", e.op("ge", lo, zero), e.op("lt", lo, d))
                e.emit(Check(ok, "R0001", f"index out of bounds on axis {axis}", n.hash))
                k += 1
            else:
                if a == "range":
                    hi = bounds[k + 1]
                    hi = hi if hi.type == "i64" else e.op("convert", hi, to="i64")
                    k += 2
                else:
                    hi = d
                    k += 1
                size = shape[len(kept)]
                ok = e.op(
                    "and",
                    e.op("and", e.op("ge", lo, zero), e.op("le", lo, hi)),
                    e.op("and", e.op("le", hi, d), e.op("eq", e.op("sub", hi, lo), size)),
                )
                e.emit(Check(ok, "R0001", f"slice out of bounds on axis {axis}", n.hash))
                kept.append(strides[axis])
            at = e.add_i(at, e.mul_i(lo, strides[axis]))
        return at, kept, shape, contiguous

    def slice(self, n: Node, ins: list):
        """A read view: the tensor's own buffer at an offset where the region is
        contiguous (nothing copied), else its elements gathered into a new buffer."""
        t = ins[0]
        at, strides, shape, contiguous = self.slice_layout(n, t, ins[1:])
        if contiguous:
            return TVal(t.buf, shape, self.e.add_i(t.offset, at), t.elem, owned=False)
        out = self.alloc(t.elem, shape, t.buf.space)
        e = self.e

        def body(idx: list) -> None:
            src = at
            for i, st in zip(idx, strides, strict=True):
                src = e.add_i(src, e.mul_i(i, st))
            e.store(out.buf, self.flat(idx, shape), self.element(t, src))

        self.nest(shape, body)
        return out

    def stored_back(self, n: Node, frame: _Frame, t, dying: bool) -> bool:
        """Is the ``update`` ``n`` a store through a view that goes straight back —
        ``update_slice(x, b, update(slice(x, b), j, v))``, `r[j] = v` with
        `let r = &mut x[…];` — with ``x`` owned, whole and used by nothing else? Then the
        element is stored into ``x``'s buffer where the view lies, and the write-back has
        nothing left to copy (``update_slice``)."""
        if not (isinstance(t, TVal) and not t.owned and dying):
            return False
        s = self.graph.nodes[n.inputs[0].node]
        key = (n.hash, 0)
        users = frame.users.get(key, [])
        if s.op != "slice" or len(users) != 1 or frame.uses.get(key) != 1:
            return False
        u = users[0]
        if not (
            u.op == "update_slice"
            and u.inputs[0] == s.inputs[0]
            and u.inputs[1:-1] == s.inputs[1:]
            and u.inputs[-1] == n.out(0)
            and u.attrs == s.attrs
        ):
            return False
        x_key = (s.inputs[0].node, s.inputs[0].index)
        x = frame.vals.get(x_key)
        return (
            isinstance(x, TVal)
            and x.buf is t.buf
            and x.owned
            and x.whole
            and frame.uses.get(x_key) == 1
            and frame.refs.get(t.buf.id, 0) == 2
        )

    def written_in_place(self, n: Node, frame: _Frame, t, v, dying: list) -> bool:
        """The ``update_slice`` of a store that :meth:`stored_back` made in place: its value
        already lies in ``t``'s buffer, in its region."""
        if not (isinstance(v, TVal) and v.buf is t.buf and dying[0] and dying[-1]):
            return False
        w = self.graph.nodes[n.inputs[-1].node]
        if w.op != "update":
            return False
        s = self.graph.nodes[w.inputs[0].node]
        return (
            s.op == "slice"
            and s.inputs[0] == n.inputs[0]
            and s.inputs[1:] == n.inputs[1:-1]
            and s.attrs == n.attrs
            and t.owned
            and t.whole
            and frame.refs.get(t.buf.id, 0) == 2
        )

    def update_slice(self, n: Node, ins: list, dying: list):
        """A store through a view: in place when the tensor is exclusively this node's (as
        ``update``), else into a copy; a contiguous region is one ``Copy``."""
        frame = self.frames[-1]
        t, v = ins[0], ins[-1]
        at, strides, shape, contiguous = self.slice_layout(n, t, ins[1:-1])
        if self.written_in_place(n, frame, t, v, dying):
            return TVal(t.buf, t.shape, t.offset, t.elem, owned=True)
        if self.exclusive(frame, t, dying[0]):
            out = TVal(t.buf, t.shape, t.offset, t.elem, owned=True)
        else:
            out = self.copy_new(t)
        e = self.e
        base = e.add_i(out.offset, at)
        if contiguous:
            e.emit(Copy(out.buf, base, v.buf, v.offset, self.size(shape)))
            return out

        def body(idx: list) -> None:
            dst = base
            for i, st in zip(idx, strides, strict=True):
                dst = e.add_i(dst, e.mul_i(i, st))
            e.store(out.buf, dst, self.element(v, self.flat(idx, shape)))

        self.nest(shape, body)
        return out

    def array(self, n: Node, ins: list):
        t = n.types[0]
        out = self.alloc(t.elem.name, self.shape_of(t), t.space)
        self.fill(out.buf, ins)
        return out

    def fill(self, buf: Buf, ins: list) -> None:
        """An array literal's elements (scalars) or rows (tensors) into ``buf``, in order."""
        e = self.e
        if isinstance(ins[0], TVal):
            k = self.size(ins[0].shape)
            for j, x in enumerate(ins):
                e.emit(Copy(buf, e.mul_i(imm("i64", j), k), x.buf, x.offset, k))
        else:
            for j, x in enumerate(ins):
                e.store(buf, imm("i64", j), x)

    def constant_table(self, n: Node) -> bool:
        """An `array` of constants (rows of constants): the same value at every activation."""
        for v in n.inputs:
            m = self.graph.nodes[v.node]
            if m.op != "const" and not (m.op == "array" and self.constant_table(m)):
                return False
        return True

    def table(self, n: Node, ins: list) -> TVal:
        """A constant table used inside a loop (or a branch): built once, on the function's
        entry, and shared read-only by every use (an update copies it first, as for any
        buffer it does not own); freed on the function's exit."""
        t = self.tables.get(n.hash)
        if t is None:
            ty = n.types[0]
            e = self.e
            shape = self.shape_of(ty)
            b = e.buf(ty.elem.name, self.size(shape), ty.space, "temp")
            with e.block() as blk:
                e.emit(Alloc(b))
                self.fill(b, ins)
            self.table_stmts += blk
            t = self.tables[n.hash] = TVal(b, tuple(shape), imm("i64", 0), ty.elem.name)
        return t

    # --- reductions and composites -------------------------------------------------------------
    def getter(self, t):
        return lambda i: self.element(t, i)

    def force(self, x):
        """A fused operand in a buffer of its own (for a consumer that does not fuse)."""
        if not isinstance(x, LazyT):
            return x
        frame = self.frames[-1]
        for key, v in frame.vals.items():
            if v is x:
                self.materialize(frame, key)
                return frame.vals[key]
        raise AssertionError("a fused value outside its frame")

    def reduction(self, n: Node, x: TVal) -> Operand:
        e = self.e
        count = self.size(x.shape)
        get = self.getter(x)
        op = n.op
        if op == "sum":
            return C.total(e, count, get, x.elem)
        if op == "mean":
            return C.mean(e, count, get, x.elem, n.hash)
        C.nonempty(e, count, op, n.hash)
        if op in ("argmax", "argmin"):
            return C.argmax(e, count, get, x.elem, op)
        return C.fold_extreme(e, count, get, x.elem, "maximum" if op == "max" else "minimum")

    # --- along one axis (docs/semantics.md §7.6) -------------------------------------------
    def axis_layout(self, x, axis: int) -> tuple[Operand, Operand, Operand]:
        """(outer, n, inner): the sizes of the axes before ``axis``, of ``axis``, after it."""
        e = self.e
        return e.product(x.shape[:axis]), x.shape[axis], e.product(x.shape[axis + 1 :])

    def rows(self, outer: Operand, n: Operand, inner: Operand):
        """``with self.rows(…) as (o, base):`` one ``parallel`` iteration per position ``o``
        of the other axes (row-major: ``o = p·inner + q``), whose elements along the axis are
        at ``base + k·inner`` (``base = p·n·inner + q``) for k = 0 … n−1."""
        return _Rows(self, outer, n, inner)

    def reduction_along(self, n: Node, x) -> TVal:
        """``sum mean max min argmax argmin`` along ``axis``: per output element, the rank-1
        composite over the elements along the axis (get(k) reads base + k·inner)."""
        e = self.e
        op = n.op
        t = n.types[0]
        outer, count, inner = self.axis_layout(x, n.attr("axis"))
        checked = op != "sum" and not (op == "mean" and x.elem in ("f32", "f64"))
        if checked:  # before any output element: an empty axis fails whatever the others
            C.nonempty(e, count, op, n.hash)
        out = self.alloc(t.elem.name, self.shape_of(t), t.space)
        with self.rows(outer, count, inner) as (o, base):
            get = self.strided(x, base, inner)
            if op == "sum":
                r = C.total(e, count, get, x.elem)
            elif op == "mean":
                r = e.op("div", C.total(e, count, get, x.elem), e.op("convert", count, to=x.elem))
            elif op in ("argmax", "argmin"):
                r = C.argmax(e, count, get, x.elem, op)
            else:
                r = C.fold_extreme(e, count, get, x.elem, "maximum" if op == "max" else "minimum")
            e.store(out.buf, o, r)
        return out

    def strided(self, x, base: Operand, stride: Operand):
        e = self.e
        return lambda k: self.element(x, e.add_i(base, e.mul_i(k, stride)))

    def composite_along(self, n: Node, x: TVal, eps: Operand | None = None) -> TVal:
        """``softmax``/``layernorm`` along ``axis``: §8.3/§8.4 per row of the other axes,
        the same steps as the rank-1 lowering; softmax keeps its ``exp`` values in the
        output (the rank-1 form's temporary), then divides them in place."""
        e = self.e
        t = n.types[0]
        outer, count, inner = self.axis_layout(x, n.attr("axis"))
        if n.op == "softmax":
            C.nonempty(e, count, "softmax", n.hash)
        out = self.alloc(t.elem.name, self.shape_of(t), t.space)
        with self.rows(outer, count, inner) as (_, base):
            get = self.strided(x, base, inner)

            def at(k: Operand) -> Operand:
                return e.add_i(base, e.mul_i(k, inner))

            if n.op == "softmax":
                m = C.fold_extreme(e, count, get, x.elem, "maximum")
                with e.loop(imm("i64", 0), count, mark="lanes") as k:
                    e.store(out.buf, at(k), C.exp(e, e.op("sub", get(k), m), x.elem))
                s = C.canonical_sum(e, count, lambda k: e.load(out.buf, at(k)), x.elem)
                with e.loop(imm("i64", 0), count, mark="lanes") as k:
                    e.store(out.buf, at(k), e.op("div", e.load(out.buf, at(k)), s))
            else:
                assert eps is not None
                mu = C.mean(e, count, get, x.elem, n.hash)
                v = C.mean(e, count, lambda k: _sq(e, e.op("sub", get(k), mu)), x.elem, n.hash)
                den = e.op("sqrt", e.op("add", v, eps))
                with e.loop(imm("i64", 0), count, mark="lanes") as k:
                    e.store(out.buf, at(k), e.op("div", e.op("sub", get(k), mu), den))
        return out

    # --- shape operations (docs/semantics.md §7.7) ------------------------------------------
    def shape_op(self, n: Node, ins: list, dying: list):
        """Data movement is element loads and stores in ``lanes`` loops (every element is
        independent); ``reshape`` and an exclusive ``clone`` move nothing."""
        e = self.e
        op = n.op
        t = n.types[0]
        if op == "reshape":
            x = ins[0]
            shape = self.shape_of(t)
            if ops.same_count(strip_ref(self.graph_type(n, 0)).shape, t.shape) is not True:
                ok = e.op("eq", self.size(x.shape), self.size(shape))
                e.emit(Check(ok, "R0003", "`reshape` to another element count", n.hash))
            return TVal(x.buf, shape, x.offset, x.elem, owned=x.owned and dying[0])
        if op == "clone":
            x = ins[0]
            if self.exclusive(self.frames[-1], x, dying[0]):
                return TVal(x.buf, x.shape, x.offset, x.elem, owned=True)
            return self.copy_new(x)
        if op == "concat":
            axis = n.attr("axis")
            shape = self.shape_of(t)
            if not all(
                isinstance(d, Imm)
                for d in shape[axis : axis + 1] + tuple(x.shape[axis] for x in ins)
            ):
                total: Operand = imm("i64", 0)
                for x in ins:
                    total = e.add_i(total, x.shape[axis])
                ok = e.op("eq", total, shape[axis])
                e.emit(Check(ok, "R0003", "`concat` into another length", n.hash))
            out = self.alloc(t.elem.name, shape, t.space)
            outer = e.product(shape[:axis])
            inner = e.product(shape[axis + 1 :])
            width = e.mul_i(shape[axis], inner)
            at: Operand = imm("i64", 0)
            for x in ins:
                w = e.mul_i(x.shape[axis], inner)
                self.place(out, outer, width, at, x, w)
                at = e.add_i(at, w)
            return out
        if op == "stack":
            axis = n.attr("axis")
            shape = self.shape_of(t)
            out = self.alloc(t.elem.name, shape, t.space)
            outer = e.product(shape[:axis])
            inner = e.product(shape[axis + 1 :])
            width = e.mul_i(imm("i64", len(ins)), inner)
            for j, x in enumerate(ins):
                self.place(out, outer, width, e.mul_i(imm("i64", j), inner), x, inner)
            return out
        if op in ("transpose", "broadcast_to"):
            x = ins[0]
            shape = self.shape_of(t)
            out = self.alloc(t.elem.name, shape, t.space)
            strides: list[Operand] = [imm("i64", 0)] * len(shape)
            if isinstance(x, TVal):
                own: list[Operand] = []
                acc: Operand = imm("i64", 1)
                for d in reversed(x.shape):
                    own.insert(0, acc)
                    acc = e.mul_i(acc, d)
                if op == "transpose":
                    strides = [own[p] for p in n.attr("perm")]
                else:
                    lead = len(shape) - len(x.shape)
                    for j, d in enumerate(x.shape):
                        if not (isinstance(d, Imm) and d.bits == 1):
                            strides[lead + j] = own[j]

            def body(idx: list) -> None:
                src: Operand = imm("i64", 0)
                for i, st in zip(idx, strides, strict=True):
                    if not (isinstance(st, Imm) and st.bits == 0):
                        src = e.add_i(src, e.mul_i(i, st))
                e.store(out.buf, self.flat(idx, shape), self.element(x, src))

            self.nest(shape, body)
            return out
        if op == "outer":
            u, v = ins
            shape = self.shape_of(t)
            out = self.alloc(t.elem.name, shape, t.space)

            def body(idx: list) -> None:
                i, j = idx
                prod = e.op("mul", self.element(u, i), self.element(v, j))
                e.store(out.buf, self.flat(idx, shape), prod)

            self.nest(shape, body)
            return out
        # arange, linspace: vectors whose length is the result type's
        elem = t.elem.name
        (count,) = self.shape_of(t)
        out = self.alloc(elem, (count,), t.space)
        if op == "linspace":
            lo, hi = ins
            div = e.op(
                "convert",
                e.op(
                    "select",
                    e.op("gt", count, imm("i64", 1)),
                    e.op("sub", count, imm("i64", 1)),
                    imm("i64", 1),
                ),
                to=elem,
            )
            step = e.op("div", e.op("sub", hi, lo), div)
            with e.loop(imm("i64", 0), count, mark="parallel") as i:
                x = e.op("add", lo, e.op("mul", e.op("convert", i, to=elem), step))
                e.store(out.buf, i, x)
            with e.block() as last:
                e.store(out.buf, e.op("sub", count, imm("i64", 1)), hi)
            e.emit(If(e.op("ge", count, imm("i64", 2)), last, []))
            return out
        # `parallel`, not `lanes`: the index itself is a value (no vector form of it yet)
        with e.loop(imm("i64", 0), count, mark="parallel") as i:
            x = e.op("convert", i, to=elem) if elem != "i64" else i
            if ins:
                start, step = ins
                x = e.op("add", start, e.op("mul", x, step))
            e.store(out.buf, i, x)
        return out

    def graph_type(self, n: Node, k: int) -> Type:
        """The type of input ``k`` of ``n``."""
        v = n.inputs[k]
        return self.graph.nodes[v.node].types[v.index]

    def flat(self, idx: list, shape) -> Operand:
        e = self.e
        at: Operand = imm("i64", 0)
        for i, d in zip(idx, shape, strict=True):
            at = e.add_i(e.mul_i(at, d), i)
        return at

    def nest(self, shape, body) -> None:
        """One ``lanes`` loop per axis of ``shape`` (outermost first) around ``body(idx)``."""
        e = self.e
        idx = [e.var("i64", f"i{a}") for a in range(len(shape))]
        blocks = []
        for _ in shape:
            blocks.append(e.stmts)
            e.stmts = []
        body(idx)
        for a in range(len(shape) - 1, -1, -1):
            inner = e.stmts
            e.stmts = blocks[a]
            e.emit(Loop(idx[a], imm("i64", 0), shape[a], inner, "lanes"))

    def place(self, out: TVal, rows: Operand, width: Operand, at: Operand, x, w: Operand):
        """``out`` as ``rows`` rows of ``width``: row p's elements ``at … at + w`` are row p of
        ``x`` (seen as ``rows`` rows of ``w``)."""
        e = self.e

        def body(idx: list) -> None:
            p, q = idx
            dst = e.add_i(e.add_i(e.mul_i(p, width), at), q)
            e.store(out.buf, dst, self.element(x, e.add_i(e.mul_i(p, w), q)))

        self.nest((rows, w), body)

    def same_shape(self, n: Node, a: TVal, b: TVal, what: str) -> None:
        e = self.e
        if len(a.shape) != len(b.shape):
            e.emit(Check(imm("bool", 0), "R0003", f"`{what}` of different ranks", n.hash))
            return
        for da, db in zip(a.shape, b.shape, strict=True):
            if not _same(da, db):
                e.emit(Check(e.op("eq", da, db), "R0003", f"`{what}` of different shapes", n.hash))

    def dot(self, n: Node, a: TVal, b: TVal) -> Operand:
        self.same_shape(n, a, b, "dot")
        e = self.e
        ga, gb = self.getter(a), self.getter(b)
        return C.total(e, self.size(a.shape), lambda i: e.op("mul", ga(i), gb(i)), a.elem)

    def matmul(self, n: Node, a: TVal, b: TVal) -> TVal:
        e = self.e
        t = n.types[0]
        rows = a.shape[0] if len(a.shape) == 2 else imm("i64", 1)
        k = a.shape[-1]
        cols = b.shape[1] if len(b.shape) == 2 else imm("i64", 1)
        if not _same(k, b.shape[0]):
            e.emit(
                Check(
                    e.op("eq", k, b.shape[0]), "R0003", "`matmul` of shapes that do not fit", n.hash
                )
            )
        out = self.alloc(t.elem.name, self.shape_of(t), t.space)
        zero = imm(a.elem, 0) if a.elem not in ("f32", "f64") else C.fconst(a.elem, 0.0)
        if e.target.many_threads:
            self.matmul_grid(a, b, out, rows, k, cols, zero)
            return out
        # panels of MATMUL_PANEL columns (the panel of b a row block walks stays in cache);
        # in each, rows in blocks of MATMUL_ROWS (each b element loaded once per block), then
        # one at a time. Every output still adds its products from +0 with k increasing (§8.1)
        width = imm("i64", MATMUL_PANEL)
        panels = e.op("div", e.op("add", cols, imm("i64", MATMUL_PANEL - 1)), width)
        with e.loop(imm("i64", 0), panels, name="cp") as p:
            c0 = e.mul_i(p, width)
            c1 = e.op("minimum", e.add_i(c0, width), cols)
            blocks = e.op("div", rows, imm("i64", MATMUL_ROWS))
            with e.loop(imm("i64", 0), blocks, mark="parallel", name="rb") as ib:
                first = e.mul_i(ib, imm("i64", MATMUL_ROWS))
                self.matmul_rows(a, b, out, first, MATMUL_ROWS, k, cols, (c0, c1), zero)
            done = e.mul_i(blocks, imm("i64", MATMUL_ROWS))
            with e.loop(done, rows, mark="parallel", name="r") as i:
                self.matmul_rows(a, b, out, i, 1, k, cols, (c0, c1), zero)
        return out

    def matmul_grid(self, a, b, out, rows, k, cols, zero) -> None:
        """Every output element one iteration of a parallel loop (consecutive iterations
        are consecutive columns: neighbouring threads read neighbouring elements of b)."""
        e = self.e
        with e.loop(imm("i64", 0), e.mul_i(rows, cols), mark="parallel", name="ij") as q:
            i = e.op("div", q, cols)
            j = e.op("sub", q, e.op("mul", i, cols))
            at = e.add_i(a.offset, e.mul_i(i, k))
            acc = e.var(a.elem, "acc")
            e.assign(acc, zero)
            with e.loop(imm("i64", 0), k, name="k") as kk:
                x = e.load(a.buf, e.add_i(at, kk))
                y = e.load(b.buf, e.add_i(b.offset, e.add_i(e.mul_i(kk, cols), j)))
                e.op("add", acc, e.op("mul", x, y), into=acc)
            e.store(out.buf, q, acc)

    def matmul_rows(self, a, b, out, first, count: int, k, cols, panel, zero) -> None:
        """Rows first … first+count-1 of a matmul, columns panel[0] … panel[1]-1: a `lanes`
        loop over the columns whose body keeps one accumulator per row across the k loop."""
        e = self.e
        rows = [e.add_i(first, imm("i64", r)) for r in range(count)]
        with e.loop(panel[0], panel[1], mark="lanes", name="c") as j:
            starts = [e.add_i(a.offset, e.mul_i(i, k)) for i in rows]
            accs = []
            for _ in rows:
                acc = e.var(a.elem, "acc")
                e.assign(acc, zero)
                accs.append(acc)
            with e.loop(imm("i64", 0), k, name="k") as kk:
                y = e.load(b.buf, e.add_i(b.offset, e.add_i(e.mul_i(kk, cols), j)))
                for acc, at in zip(accs, starts, strict=True):
                    x = e.load(a.buf, e.add_i(at, kk))
                    e.op("add", acc, e.op("mul", x, y), into=acc)
            for acc, i in zip(accs, rows, strict=True):
                e.store(out.buf, e.add_i(e.mul_i(i, cols), j), acc)

    def conv1d(self, n: Node, x: TVal, k: TVal) -> TVal:
        e = self.e
        t = n.types[0]
        nx, nk = x.shape[0], k.shape[0]
        out = self.alloc(t.elem.name, self.shape_of(t), t.space)
        zero = C.fconst(x.elem, 0.0)
        # outputs whose window lies inside x read it directly; the last nk - 1 read +0 past
        # its end (the same products: the split only spares the interior the bounds test)
        edge = e.op("add", e.op("sub", nx, nk), imm("i64", 1))
        edge = e.op("minimum", e.op("maximum", edge, imm("i64", 0)), nx)
        for lo, hi, guarded in ((imm("i64", 0), edge, False), (edge, nx, True)):
            with e.loop(lo, hi, mark="lanes", name="i") as i:
                acc = e.var(x.elem, "acc")
                e.assign(acc, zero)
                with e.loop(imm("i64", 0), nk, name="j") as j:
                    m = e.op("add", i, j)
                    if guarded:
                        inside = e.op("lt", m, nx)
                        safe = e.op("select", inside, m, imm("i64", 0))
                        xv = e.op("select", inside, e.load(x.buf, e.add_i(x.offset, safe)), zero)
                    else:
                        xv = e.load(x.buf, e.add_i(x.offset, m))
                    kv = e.load(k.buf, e.add_i(k.offset, j))
                    e.op("add", acc, e.op("mul", xv, kv), into=acc)
                e.store(out.buf, i, acc)
        return out

    def softmax(self, n: Node, x: TVal) -> TVal:
        e = self.e
        t = n.types[0]
        count = self.size(x.shape)
        C.nonempty(e, count, "softmax", n.hash)
        m = C.fold_extreme(e, count, self.getter(x), x.elem, "maximum")
        ex = self.alloc(x.elem, x.shape, x.buf.space)
        with e.loop(imm("i64", 0), count, mark="lanes") as i:
            d = e.op("sub", e.load(x.buf, e.add_i(x.offset, i)), m)
            e.store(ex.buf, i, C.exp(e, d, x.elem))
        s = C.canonical_sum(e, count, self.getter(ex), x.elem)
        out = self.alloc(t.elem.name, self.shape_of(t), t.space)
        with e.loop(imm("i64", 0), count, mark="lanes") as i:
            e.store(out.buf, i, e.op("div", e.load(ex.buf, i), s))
        self.free_now(ex)
        return out

    def layernorm(self, n: Node, x: TVal, eps: Operand) -> TVal:
        e = self.e
        t = n.types[0]
        count = self.size(x.shape)
        get = self.getter(x)
        mu = C.mean(e, count, get, x.elem, n.hash)
        v = C.mean(
            e,
            count,
            lambda i: _sq(e, e.op("sub", get(i), mu)),
            x.elem,
            n.hash,
        )
        den = e.op("sqrt", e.op("add", v, eps))
        out = self.alloc(t.elem.name, self.shape_of(t), t.space)
        with e.loop(imm("i64", 0), count, mark="lanes") as i:
            e.store(out.buf, i, e.op("div", e.op("sub", get(i), mu), den))
        return out

    def free_now(self, t: TVal) -> None:
        f = self.frames[-1]
        f.freeable.discard(t.buf.id)
        self.e.emit(Free(t.buf))

    # --- effects ------------------------------------------------------------------------------
    def print(self, n: Node, ins: list):
        text = n.attr("text")
        if text is not None:
            self.e.emit(Print(text))
            return None
        self.print_value(ins[1], self.graph.type_of(n.inputs[1]))
        return None

    def print_value(self, v, vt) -> None:
        """A value's text as the interpreter writes it: a struct as `{a, b, …}` of its fields,
        a tuple as `(a, b, …)` or `(a,)` (one `Print` per field and per piece of
        punctuation)."""
        if isinstance(v, TVal):
            self.e.emit(Print(None, v.buf, v.shape, vt, v.offset))
        elif isinstance(v, tuple):
            st = strip_ref(vt)
            fields = st.fields
            self.e.emit(Print("(" if st.is_tuple else "{"))
            for k, (x, (_, ft)) in enumerate(zip(v, fields, strict=True)):
                if k:
                    self.e.emit(Print(", "))
                self.print_value(x, ft)
            if st.is_tuple and len(fields) == 1:
                self.e.emit(Print(","))
            self.e.emit(Print(")" if st.is_tuple else "}"))
        else:
            self.e.emit(Print(None, v, (), vt))

    # --- control flow ---------------------------------------------------------------------------
    def hand_over(self, frame: _Frame, v, dying: bool):
        """Pass `v` into a nested region: a dying, exclusively owned buffer moves in (owned
        there); anything else is read-only there."""
        out = []
        for leaf in leaves(v):
            if isinstance(leaf, TVal):
                if self.exclusive(frame, leaf, dying):
                    self.take(frame, leaf)
                    out.append(TVal(leaf.buf, leaf.shape, leaf.offset, leaf.elem, owned=True))
                else:
                    out.append(TVal(leaf.buf, leaf.shape, leaf.offset, leaf.elem, owned=False))
            else:
                out.append(leaf)
        return rebuild(v, out)

    def carried_slots(self, n: Node, inits: list, dying: list):
        """One storage place per carried leaf for the whole loop: a Var, or a loop-owned
        buffer (the initial value's own buffer when it dies here, else a copy)."""
        frame = self.frames[-1]
        slots = []
        self.loop_frees = set()  # the slots the enclosing frame frees after the loop
        for init, d in zip(inits, dying, strict=True):
            flat = []
            for leaf in leaves(init):
                if isinstance(leaf, TVal):
                    if self.exclusive(frame, leaf, d):
                        # the loop takes the buffer over; whoever freed it still does
                        if leaf.buf.id in frame.freeable:
                            frame.freeable.discard(leaf.buf.id)
                            self.loop_frees.add(leaf.buf.id)
                        flat.append(TVal(leaf.buf, leaf.shape, leaf.offset, leaf.elem, owned=True))
                    else:
                        c = self.copy_new(leaf)
                        frame.freeable.discard(c.buf.id)
                        self.loop_frees.add(c.buf.id)
                        flat.append(c)
                elif isinstance(leaf, RangeV) or leaf is None:
                    flat.append(leaf)
                else:
                    v = self.e.var(leaf.type, "c")
                    self.e.assign(v, leaf)
                    flat.append(v)
            slots.append(rebuild(init, flat))
        return slots

    def loop_results(self, slots: list, frees: set):
        """After the loop, the carried buffers go back to whoever frees them."""
        frame = self.frames[-1]
        for s in slots:
            for leaf in leaves(s):
                if isinstance(leaf, TVal) and leaf.buf.id in frees:
                    frame.bufs[leaf.buf.id] = leaf.buf
                    frame.freeable.add(leaf.buf.id)
        return slots

    def body_frame(self, slots: list) -> _Frame:
        f = _Frame()
        for s in slots:
            for leaf in leaves(s):
                if isinstance(leaf, TVal):
                    f.bufs[leaf.buf.id] = leaf.buf
        return f

    def end_iteration(self, body: _Frame, ys: list, slots: list) -> None:
        pending = []
        for y, s in zip(ys, slots, strict=True):
            for yl, sl in zip(leaves(y), leaves(s), strict=True):
                if isinstance(sl, TVal):
                    if yl.buf is sl.buf and yl.whole:
                        continue
                    pending.append((yl, sl))
                elif isinstance(sl, Var) and yl is not sl:
                    pending.append((yl, sl))
        exchanges = self.exchanges(pending) if self.owner.target.buffer_handles else []
        done = {id(p) for cycle in exchanges for p in cycle}
        self.parallel_assign([p for p in pending if id(p) not in done])
        for cycle in exchanges:  # slot k takes slot k+1's buffer: k - 1 handle exchanges
            for (_, s1), (_, s2) in zip(cycle, cycle[1:], strict=False):
                self.e.emit(Exchange(s1.buf, s2.buf))
        keep = {leaf.buf.id for s in slots for leaf in leaves(s) if isinstance(leaf, TVal)}
        self.free_rest(body, keep)

    def walk(self, rng: RangeV) -> Walk:
        """A range as a :class:`Walk` (docs/lowering.md, "Ranges").

        ``lo..hi`` is ``lo + t`` for ``t = 0 … hi − lo − 1`` (``hi − lo`` for `..=`), empty
        when ``hi <= lo`` (``hi < lo``) in the range's own type; the offsets are taken modulo
        2⁶⁴, which is exact for every integer type. `.step_by(k)` keeps ``t = 0 … last / k``
        at ``k`` times the stride; `.rev()` starts at the last element and negates the
        stride. Every element is then ``first + t · stride`` modulo 2⁶⁴, converted (wrapping)
        to the range's type: the exact integer, because it lies inside the range."""
        e = self.e
        lo, hi = rng.lo, rng.hi
        lo64 = lo if lo.type == "i64" else e.op("convert", lo, to="i64")
        hi64 = hi if hi.type == "i64" else e.op("convert", hi, to="i64")
        empty = e.op("lt" if rng.inclusive else "le", hi, lo)
        span = e.op("sub", hi64, lo64)
        if not rng.inclusive:
            span = e.op("sub", span, imm("i64", 1))
        w = Walk(empty, e.op("convert", span, to="u64"), lo64, imm("i64", 1))
        for step in rng.steps:
            if step[0] == "rev":
                at_last = e.op("mul", e.op("convert", w.last, to="i64"), w.stride)
                w = Walk(w.empty, w.last, e.op("add", w.first, at_last), e.op("neg", w.stride))
            else:
                k = step[1]
                k64 = k if k.type == "i64" else e.op("convert", k, to="i64")
                ku = e.op("convert", k64, to="u64")
                w = Walk(w.empty, e.op("div", w.last, ku), w.first, e.op("mul", w.stride, k64))
        return w

    def walk_count(self, w: Walk) -> Operand:
        """How many iterations a walk takes, as the `i64` bound of a loop: ``last + 1``, at
        most 2⁶³ − 1 (a loop that long spends the run's step budget either way)."""
        e = self.e
        top = imm("u64", (1 << 63) - 1)
        long = e.op("ge", w.last, top)
        count = e.op("convert", e.op("add", w.last, imm("u64", 1)), to="i64")
        count = e.op("select", long, imm("i64", (1 << 63) - 1), count)
        return e.op("select", w.empty, imm("i64", 0), count)

    def exchanges(self, pending: list) -> list[list]:
        """The cycles among ``pending`` (source, slot) pairs in which every slot's new value
        is another slot's whole buffer (`swap(&mut a, &mut b)` of carried tensors): each
        becomes handle exchanges instead of copies. A cycle qualifies when its buffers are
        this function's temporaries (a parameter's memory is its caller's) and no other
        pending pair reads them. Each cycle is listed in order: pair k's slot receives
        pair k+1's slot buffer."""
        by_slot = {}
        for p in pending:
            src, slot = p
            if (
                isinstance(slot, TVal)
                and isinstance(src, TVal)
                and slot.whole
                and src.whole
                and src.buf is not slot.buf
                and slot.buf.role == "temp"
                and src.buf.role == "temp"
                and src.buf.elem == slot.buf.elem
                and src.buf.space == slot.buf.space
            ):
                by_slot[id(slot.buf)] = p
        cycles = []
        seen: set = set()
        for start in list(by_slot):
            if start in seen:
                continue
            cycle, at = [], start
            while at in by_slot and at not in seen and not any(id(p[1].buf) == at for p in cycle):
                cycle.append(by_slot[at])
                at = id(by_slot[at][0].buf)
            seen.update(id(p[1].buf) for p in cycle)
            if at != start or len(cycle) < 2:
                continue
            bufs = {id(p[1].buf) for p in cycle}
            others = [p for p in pending if not any(p is q for q in cycle)]
            if any(isinstance(src, TVal) and id(src.buf) in bufs for src, _ in others):
                continue
            cycles.append(cycle)
        return cycles

    def for_(self, n: Node, ins: list, dying: list) -> list:
        e = self.e
        frame = self.frames[-1]
        rng: RangeV = ins[0]
        nc = len(n.types)
        slots = self.carried_slots(n, ins[1 : 1 + nc], dying[1 : 1 + nc])
        frees = self.loop_frees
        captured = [self.hand_over(frame, v, False) for v in ins[1 + nc :]]
        if rng.steps or rng.elem == "u64" or (rng.inclusive and rng.elem == "i64"):
            # reversed or stepped; or bounds whose `hi + 1` or signed order is not the
            # range's (`..=i64::MAX`, `u64` past 2⁶³): the walk is exact for every range
            return self.walk_for(n, rng, slots, frees, captured)
        lo, hi = rng.lo, rng.hi
        t = rng.elem
        lo64 = lo if lo.type == "i64" else e.op("convert", lo, to="i64")
        hi64 = hi if hi.type == "i64" else e.op("convert", hi, to="i64")
        if rng.inclusive:  # `i8` … `u32`: `hi + 1` fits in `i64`
            hi64 = e.op("add", hi64, imm("i64", 1))
        iv = e.var("i64", "it")
        body_frame = self.body_frame(slots)
        lanes = bool(n.attr("lanes"))
        with e.block() as body:
            i_t = iv if t == "i64" else e.op("convert", iv, to=t)
            self.proven_in_bounds += lanes
            ys = self.region(self.graph.regions[n.regions[0]], [i_t, *slots, *captured], body_frame)
            self.proven_in_bounds -= lanes
            self.end_iteration(body_frame, ys, slots)
        # the optimizer's `lanes` promise (docs/optimizer.md): independent iterations, no
        # checked error — a target that does not spend steps per iteration may use lanes
        mark = "lanes" if lanes else "seq"
        e.emit(Loop(iv, lo64, hi64, body, mark, True, n.hash))
        return self.loop_results(slots, frees)

    def walk_for(self, n: Node, rng: RangeV, slots: list, frees: set, captured: list) -> list:
        """A `for` over a walk (a reversed or stepped range, `..=` on `i64`, a `u64` range):
        a `seq` loop over the walk's ``t``, the element computed from it at the top of each
        iteration (the optimizer's `lanes` promise still proves the body's indices)."""
        e = self.e
        w = self.walk(rng)
        count = self.walk_count(w)
        tv = e.var("i64", "t")
        body_frame = self.body_frame(slots)
        lanes = bool(n.attr("lanes"))
        with e.block() as body:
            i64 = e.op("add", w.first, e.op("mul", tv, w.stride))
            i_t = i64 if rng.elem == "i64" else e.op("convert", i64, to=rng.elem)
            self.proven_in_bounds += lanes
            ys = self.region(self.graph.regions[n.regions[0]], [i_t, *slots, *captured], body_frame)
            self.proven_in_bounds -= lanes
            self.end_iteration(body_frame, ys, slots)
        e.emit(Loop(tv, imm("i64", 0), count, body, "seq", True, n.hash))
        return self.loop_results(slots, frees)

    def while_(self, n: Node, ins: list, dying: list) -> list:
        e = self.e
        frame = self.frames[-1]
        nc = len(n.types)
        slots = self.carried_slots(n, ins[:nc], dying[:nc])
        frees = self.loop_frees
        captured = [self.hand_over(frame, v, False) for v in ins[nc:]]
        cond_r, body_r = (self.graph.regions[r] for r in n.regions)
        ro = [self.hand_over(_Frame(), s, False) for s in slots]
        with e.block() as cond:
            cf = _Frame()
            (c,) = self.region(cond_r, [*ro, *captured], cf)
            test = e.var("bool", "w")
            e.assign(test, c)
            self.free_rest(cf, set())
        body_frame = self.body_frame(slots)
        with e.block() as body:
            ys = self.region(body_r, [*slots, *captured], body_frame)
            self.end_iteration(body_frame, ys, slots)
        e.emit(While(cond, test, body, n.hash))
        return self.loop_results(slots, frees)

    def if_(self, n: Node, ins: list, dying: list) -> list:
        e = self.e
        frame = self.frames[-1]
        cond, args = ins[0], ins[1:]
        before = set(frame.freeable)
        passed = [self.hand_over(frame, v, d) for v, d in zip(args, dying[1:], strict=True)]
        moved = {
            leaf.buf.id: leaf
            for p in passed
            for leaf in leaves(p)
            if isinstance(leaf, TVal) and leaf.owned
        }
        # where each result leaf lives: a moved-in buffer that a branch yields as it is, else
        # a fresh buffer; scalars in fresh Vars
        then_r, else_r = (self.graph.regions[r] for r in n.regions)
        branches = []
        for region in (then_r, else_r):
            f = _Frame()
            for p in passed:
                for leaf in leaves(p):
                    if isinstance(leaf, TVal):
                        f.bufs[leaf.buf.id] = leaf.buf
            with e.block() as blk:
                ys = self.region(region, list(passed), f)
            branches.append((f, blk, ys))
        results = []
        used: set = set()
        flat_then = [leaves(y) for y in branches[0][2]]
        flat_else = [leaves(y) for y in branches[1][2]]
        for k in range(len(n.types)):
            out = []
            for lt, le in zip(flat_then[k], flat_else[k], strict=True):
                if isinstance(lt, TVal) or isinstance(le, TVal):
                    target = None
                    for cand in (lt, le):
                        if cand.buf.id in moved and cand.whole and cand.buf.id not in used:
                            target = moved[cand.buf.id]
                            break
                    if target is None:
                        target = self.alloc(lt.elem, lt.shape, lt.buf.space)
                        frame.freeable.discard(target.buf.id)
                    used.add(target.buf.id)
                    out.append(target)
                elif lt is None:
                    out.append(None)
                else:
                    out.append(e.var(lt.type, "r"))
            results.append(rebuild(branches[0][2][k], out))
        for f, blk, ys in branches:
            saved = e.stmts
            e.stmts = blk
            pending = []
            for y, r in zip(ys, results, strict=True):
                for yl, rl in zip(leaves(y), leaves(r), strict=True):
                    if isinstance(rl, TVal):
                        if not (yl.buf is rl.buf and yl.whole):
                            pending.append((yl, rl))
                    elif rl is not None:
                        pending.append((yl, rl))
            self.parallel_assign(pending)
            self.free_rest(f, used)
            for bid in sorted(set(moved) - used):  # moved in, not a result: freed here
                if bid in before:
                    e.emit(Free(moved[bid].buf))
            e.stmts = saved
        e.emit(If(cond, branches[0][1], branches[1][1]))
        for r in results:
            for leaf in leaves(r):
                if isinstance(leaf, TVal):
                    frame.bufs[leaf.buf.id] = leaf.buf
                    # a result in a moved-in buffer is freed by whoever freed that buffer
                    if leaf.buf.id not in moved or leaf.buf.id in before:
                        frame.freeable.add(leaf.buf.id)
        return results

    def call(self, n: Node, ins: list, dying: list) -> list:
        e = self.e
        frame = self.frames[-1]
        callee = self.owner.by_hash[resolve(n.attr("callee"), self.fn)]
        nested = callee.component is not None and callee.component == self.fn.component
        self.owner.function(callee, nested)
        effects = bool(callee.type.effects)
        args = ins[1:] if effects else ins
        dying = dying[1:] if effects else dying
        # the callee's dimensions, from the argument shapes: solved and checked (R0003)
        # by the callee's binding plan (docs/language.md §7.2)
        dims: dict[int, Operand] = {}
        steps, unbound = binding_plan(callee.type.params, callee.type.n_dims)
        shapes = [getattr(a, "shape", None) for a in args]
        if unbound:  # dimensions only the result fixes: from the call's result type
            r = strip_ref(n.types[1 if effects else 0]) if n.types[1 if effects else 0 :] else None
            steps, unbound = binding_plan(
                (*callee.type.params, callee.type.result), callee.type.n_dims
            )
            if unbound or not isinstance(r, Tensor):
                raise NotLowered(f"`{callee.name}` has dimensions its arguments do not determine")
            shapes.append(self.shape_of(r))
        for st in steps:
            held = at_path(args[st.param], st.path).shape if st.path else shapes[st.param]
            got = held[st.axis]
            where = f"`{callee.name}`: dimension {st.axis} of argument {st.param + 1}"
            if st.solves is not None:
                dims[st.solves] = solve_operand(e, st, got, dims.__getitem__, where, n.hash)
                continue
            want = (
                imm("i64", st.dim)
                if isinstance(st.dim, int)
                else dim_operand(e, st.dim, dims.__getitem__, where, n.hash)
            )
            if not _same(want, got):
                ok = e.op("eq", got, want)
                e.emit(Check(ok, "R0003", f"{where} does not fit", n.hash))
        flat_args: list = [dims[i] for i in range(callee.type.n_dims)]
        mut_targets = {}
        for i, (pt, v, d) in enumerate(zip(callee.type.params, args, dying, strict=True)):
            mutable = isinstance(pt, Ref) and pt.mutable
            for leaf in leaves(v):
                if isinstance(leaf, TVal):
                    if mutable:
                        if self.exclusive(frame, leaf, d):
                            self.take(frame, leaf)
                            given = leaf
                        else:
                            given = self.copy_new(leaf)
                            frame.freeable.discard(given.buf.id)
                        mut_targets.setdefault(i, []).append(given)
                        flat_args.append(given.buf)
                    elif leaf.whole:
                        flat_args.append(leaf.buf)
                    else:
                        view = self.copy_new(leaf)
                        flat_args.append(view.buf)
                else:
                    flat_args.append(leaf)
        name = callee.name
        if nested:  # one call deeper into the component: R0012 past the limit
            assert self.depth is not None
            deeper = e.op("add", self.depth, imm("i64", 1))
            ok = e.op("le", deeper, imm("i64", RECURSION_LIMIT))
            e.emit(Check(ok, "R0012", f"a call of `{name}` past the recursion limit", n.hash))
            flat_args.append(deeper)
            name = rec_name(name)
        results_flat = []
        outs = []
        for (kind, i), group in zip(callee.outputs, self.output_leaves(callee), strict=True):
            t = callee.type.result if kind == "result" else callee.type.params[i]
            vals = []
            if kind == "param":
                given = iter(mut_targets.get(i, []))
                for x in group:
                    if isinstance(x, _BufLeaf):
                        g = next(given)
                        vals.append(TVal(g.buf, g.shape, imm("i64", 0), g.elem, owned=True))
                        results_flat.append(g.buf)
                    else:
                        v = e.var(x.type, "r")
                        vals.append(v)
                        results_flat.append(v)
            else:
                # the callee's result shapes, in the callee's dimensions as bound here
                shape_src = self.result_shapes(t, dims, f"`{callee.name}`: its result", n.hash)
                for x, shp in zip(group, shape_src, strict=True):
                    if isinstance(x, _BufLeaf):
                        b = e.buf(x.elem, self.size(shp), x.space, "temp", "r")
                        frame.bufs[b.id] = b
                        vals.append(TVal(b, shp, imm("i64", 0), x.elem, owned=True))
                        results_flat.append(b)
                    else:
                        v = e.var(x.type, "r")
                        vals.append(v)
                        results_flat.append(v)
            template = self.template(strip_ref(t))
            outs.append(rebuild(template, vals) if isinstance(template, tuple) else vals[0])
        e.emit(Call(name, tuple(flat_args), tuple(results_flat)))
        for o in outs:
            for leaf in leaves(o):
                if isinstance(leaf, TVal):
                    # a `&mut` parameter passed on comes back in the caller's memory: never
                    # freed here, even when the call's new value of it is never read
                    if leaf.buf.role != "param":
                        frame.freeable.add(leaf.buf.id)
                    frame.bufs[leaf.buf.id] = leaf.buf
        return ([None] if effects else []) + outs

    def output_leaves(self, callee: Function) -> list[list]:
        """Per output of ``callee``, its flat leaves as the callee's loop function returns
        them — a :class:`_BufLeaf` per tensor, a typed :class:`_VarLeaf` per scalar — from its
        signature alone (a recursive callee may still be being lowered)."""
        out = []
        for kind, i in callee.outputs:
            t = callee.type.result if kind == "result" else callee.type.params[i]
            out.append(_type_leaves(strip_ref(t)))
        return out

    def template(self, t: Type):
        if isinstance(t, Struct):
            return tuple(self.template(strip_ref(ft)) for _, ft in t.fields)
        return 0

    def result_shapes(self, t: Type, dims: dict, what: str, node: bytes) -> list:
        t = strip_ref(t)
        if isinstance(t, Struct):
            out = []
            for _, ft in t.fields:
                out += self.result_shapes(ft, dims, what, node)
            return out
        if isinstance(t, Tensor):
            return [tuple(dim_operand(self.e, d, dims.__getitem__, what, node) for d in t.shape)]
        return [()]


# Operations that cannot fail, or fail only with R0001 (an index): moving an element read
# across them cannot change which checked error a run reports.
_NO_OTHER_ERROR = set(ELEMENTWISE_UNARY) | {
    "const",
    "dim",
    "index",
    "update",
    "struct",
    "field",
    "set_field",
    "select",
    "where",
    "fma",
    "copysign",
    "hypot",
    "atan2",
    "pow",
    "range",
    "range_rev",
    "full",
    "array",
    "add",
    "sub",
    "mul",
    "and",
    "or",
    "xor",
    "land",
    "lor",
    "shl",
    "shr",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "minimum",
    "maximum",
    "param",
}


@dataclass(frozen=True)
class _BufLeaf:
    elem: str
    space: str


@dataclass(frozen=True)
class _VarLeaf:
    type: str


def _type_leaves(t: Type) -> list:
    """The flat loop-program leaves of a value of type ``t`` (structs field by field, as
    `param_value` and `as_result` lay them out)."""
    if isinstance(t, Prim):
        return [_VarLeaf(t.name)]
    if isinstance(t, Tensor):
        return [_BufLeaf(t.elem.name, t.space)]
    if isinstance(t, Struct):
        return [x for _, ft in t.fields for x in _type_leaves(strip_ref(ft))]
    raise NotLowered(f"a result of type {t}")


class _Rows:
    """The loop of :meth:`_FnLowering.rows`."""

    def __init__(self, owner: _FnLowering, outer: Operand, n: Operand, inner: Operand) -> None:
        self.e = owner.e
        self.outer, self.n, self.inner = outer, n, inner

    def __enter__(self):
        e = self.e
        self.cm = e.loop(imm("i64", 0), e.mul_i(self.outer, self.inner), "parallel", "row")
        o = self.cm.__enter__()
        if isinstance(self.inner, Imm) and self.inner.bits == 1:
            base = e.mul_i(o, self.n)  # along the last axis: rows are contiguous
        else:
            # inner > 0 here: the loop runs only when outer·inner > 0
            p = e.op("div", o, self.inner)
            q = e.op("sub", o, e.op("mul", p, self.inner))
            base = e.add_i(e.mul_i(p, e.mul_i(self.n, self.inner)), q)
        return o, base

    def __exit__(self, *exc):
        return self.cm.__exit__(*exc)


SHAPE_OPS = frozenset(
    {
        "transpose",
        "reshape",
        "broadcast_to",
        "outer",
        "concat",
        "stack",
        "clone",
        "arange",
        "linspace",
    }
)


def reads_before_updates(nodes: list[Node]) -> list[Node]:
    """The reference order, except that an element read of a tensor placed after an update
    of that same tensor moves (with the pure operations computing its indices) to just
    before the update — so `let t = a[i]; a[i] = a[j]; a[j] = t;` updates in place: the
    reference order reads `a[i]` after the first update. A read moves only when it does not
    depend on the update and only reads, updates and non-failing operations lie in between,
    so the same checked error (R0001 alone can be reordered) is reported."""
    if not any(n.op == "update" for n in nodes):
        return nodes
    order = list(nodes)
    readers: dict = {}
    for n in order:
        if n.op == "index" and isinstance(n.types[0], Prim):
            readers.setdefault(n.inputs[0], []).append(n)
    pos = {n.hash: k for k, n in enumerate(order)}  # kept current as nodes move
    for u in [n for n in order if n.op == "update"]:
        t = u.inputs[0]
        for r in readers.get(t, ()):
            pu, pr = pos[u.hash], pos.get(r.hash)
            if pr is None or pr < pu:
                continue
            closure: set = set()
            stack = [r]
            ok = True
            while stack and ok:
                n = stack.pop()
                if n.hash in closure:
                    continue
                if n is u or n.op not in _NO_OTHER_ERROR:
                    ok = False
                    break
                closure.add(n.hash)
                for v in n.inputs:
                    k = pos.get(v.node)
                    if k is not None and k > pu:
                        stack.append(order[k])
            if not ok or any(
                order[k].op not in _NO_OTHER_ERROR
                for k in range(pu, pr)
                if order[k].hash not in closure
            ):
                continue
            moved = [n for n in order[pu : pr + 1] if n.hash in closure]
            rest = [n for n in order[pu : pr + 1] if n.hash not in closure]
            order[pu : pr + 1] = moved + rest
            for k in range(pu, pr + 1):
                pos[order[k].hash] = k
    return order


def _elem_name(t: Type) -> str:
    t = strip_ref(t)
    if isinstance(t, Tensor):
        return t.elem.name
    if isinstance(t, Prim):
        return t.name
    return "i64"  # a range's counter


def _same(a: Operand, b: Operand) -> bool:
    if a is b:
        return True
    return isinstance(a, Imm) and isinstance(b, Imm) and a == b


def _is_nan_bits(t: str, bits: int) -> bool:
    if t == "f32":
        return (bits & 0x7F800000) == 0x7F800000 and (bits & 0x7FFFFF) != 0
    return (bits & 0x7FF0000000000000) == 0x7FF0000000000000 and (bits & ((1 << 52) - 1)) != 0


def _sq(e: Emitter, d: Operand) -> Operand:
    return e.op("mul", d, d)
