"""Lower one function of a graph (and what it calls) to WebAssembly text (docs/targets/wasm.md).

Every Kera value lives in a WebAssembly local: `bool` and the integers up to 32 bits as
`i32` (kept sign- or zero-extended from their width after every operation), 64-bit
integers as `i64`, floats as `f32`/`f64`, a tensor as the `i32` address of its elements
in linear memory (row-major, natural width, little-endian). Regions are inlined where
their node is; `for`/`while` carry their values in locals; calls are WebAssembly calls
whose first parameters are the callee's dimensions (`i64`).

Tensors are values: `update` copies, except on a loop-carried tensor that flows through
the loop body linearly (inplace.py), which the loop copies once on entry and then
updates in place — the "old value is dead" reasoning of docs/semantics.md §9.
"""

from __future__ import annotations

import json

from kera_core.backends.wasm import composite, fusion, rt, simd, structs, vector_loop
from kera_core.backends.wasm.inplace import Context, Planner
from kera_core.backends.wasm.support import reachable
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function, Node, Region, Value
from kera_core.ir.types import (
    Prim,
    RangeType,
    Struct,
    Sym,
    Tensor,
    TokenType,
    Type,
    Unit,
    strip_ref,
)

PRINT_SCALAR, PRINT_SHAPE, PRINT_MAX_RANK = 0, 16, 100  # scratch below rt.HEAP_BASE


def _struct_desc(t: Struct) -> list:
    """The fields of a struct block for the host: (offset, element type or nested fields)."""
    out = []
    for k, (_, ft) in enumerate(t.fields):
        ft = strip_ref(ft)
        off = structs.offset(t, k)
        out.append([off, _struct_desc(ft) if isinstance(ft, Struct) else ft.name])
    return out


def _wat_bytes(p: bytes) -> str:
    return "".join("\\" + format(b, "02x") for b in p)


ERR_INDEX, ERR_DIV0, ERR_EMPTY, ERR_OOM = 1, 2, 4, 9


def valtype(t: Type) -> str | None:
    t = strip_ref(t)
    if isinstance(t, Tensor | Struct):
        return "i32"
    if isinstance(t, Prim):
        if t.is_float:
            return t.name
        return "i64" if t.bits == 64 else "i32"
    if isinstance(t, TokenType | Unit):
        return None
    raise TypeError(f"no WebAssembly value for `{t}`")


def elem_of(t: Type) -> Prim:
    t = strip_ref(t)
    return t.elem if isinstance(t, Tensor) else t  # type: ignore[return-value]


def size_of(p: Prim) -> int:
    return 1 if p.name == "bool" else p.bits // 8


def norm(p: Prim, e: str) -> str:
    """Bring an i32 result back to ``p``'s width (sign- or zero-extended)."""
    if p.name in ("i8", "i16"):
        return f"(i32.extend{p.bits}_s {e})"
    if p.name in ("u8", "u16"):
        return f"(i32.and {e} (i32.const {(1 << p.bits) - 1}))"
    if p.name == "bool":
        return f"(i32.and {e} (i32.const 1))"
    return e


def load(p: Prim, addr: str) -> str:
    n = size_of(p)
    if n in (4, 8):
        return f"({valtype(p)}.load {addr})"
    sign = "s" if p.is_signed else "u"
    return f"(i32.load{n * 8}_{sign} {addr})"


def store(p: Prim, addr: str, v: str) -> str:
    n = size_of(p)
    vt = valtype(p)
    if n in (4, 8):
        return f"({vt}.store {addr} {v})"
    return f"(i32.store{n * 8} {addr} {v})"


def const(p: Prim, value: int) -> str:
    if p.is_float:
        bits = p.bits
        v = value & ((1 << bits) - 1)
        it = "i32" if bits == 32 else "i64"
        if v >> (bits - 1):
            v -= 1 << bits
        return f"({p.name}.reinterpret_{it} ({it}.const {v}))"
    if p.name == "bool":
        return f"(i32.const {1 if value else 0})"
    bits = p.bits
    v = value & ((1 << bits) - 1)
    if p.is_signed and v >> (bits - 1):
        v -= 1 << bits
    if bits == 64:
        if v >= 1 << 63:  # u64 above i64's range (negative i64 are already negative)
            v -= 1 << 64
        return f"(i64.const {v})"
    if v >= 1 << 31:
        v -= 1 << 32
    return f"(i32.const {v})"


def fname(f: Function) -> str:
    return f"$f_{f.hash.hex()[:16]}"


class FnEmitter:
    """The body of one WebAssembly function."""

    def __init__(self, mod: ModuleEmitter, fn: Function) -> None:
        self.mod = mod
        self.g = mod.g
        self.fn = fn
        self.locals: list[tuple[str, str]] = []
        self.lines: list[str] = []
        self.depth = 2
        self.labels = 0
        # nodes of the region being emitted that its consumer computes inline (fusion.py);
        # per region: a node of the same hash may recur in a nested or enclosing region,
        # yielded or used twice there, and must be computed there
        self.deferred: set[bytes] = set()
        self.ctx: list[Context] = []  # in-place decisions of the regions being emitted

    # --- locals and lines -------------------------------------------------------------
    def local(self, vt: str, hint: str = "v") -> str:
        name = f"${hint}{len(self.locals)}"
        self.locals.append((name, vt))
        return name

    def emit(self, line: str) -> None:
        if line.startswith(("local.set ", "memory.copy ")) and " (" in line:
            line = f"({line})"  # folded: operands first
        self.lines.append("  " * self.depth + line)

    def label(self, hint: str) -> str:
        self.labels += 1
        return f"${hint}{self.labels}"

    # --- the function ---------------------------------------------------------------
    def build(self) -> str:
        ft = self.fn.type
        params = [f"(param $d{i} i64)" for i in range(ft.n_dims)]
        args: list[str | None] = []
        if ft.effects:
            args.append(None)  # the token
        for i, t in enumerate(ft.params):
            params.append(f"(param $p{i} {valtype(t)})")
            args.append(f"$p{i}")
        region = self.g.regions[self.fn.region]
        outs = self.region(region, args)
        results = [o for o in outs if o is not None]
        rtypes = [valtype(self.g.type_of(v)) for v in region.yields]
        rtypes = [t for t in rtypes if t is not None]
        for o in results:
            self.emit(f"local.get {o}")
        head = f"  (func {fname(self.fn)} " + " ".join(params)
        if rtypes:
            head += " (result " + " ".join(rtypes) + ")"
        decl = (
            ["    " + " ".join(f"(local {n} {t})" for n, t in self.locals)] if self.locals else []
        )
        return "\n".join([head, *decl, *self.lines, "  )"])

    # --- regions ----------------------------------------------------------------------
    def region(
        self, region: Region, args: list[str | None], ctx: Context | None = None
    ) -> list[str | None]:
        """Emit ``region`` with its parameters bound to ``args``; the locals it yields."""
        env: dict[tuple[bytes, int], str | None] = {}
        nodes = self.g.region_nodes(region)
        # in-place decisions hold for the region in the role they were planned for (the
        # body of that loop, the branch of that `if`): passed down, never looked up by hash
        ctx = ctx if ctx is not None else Context()
        self.ctx.append(ctx)
        inplace = ctx.updates
        outer = self.deferred
        deferred = fusion.plan(self.g, region, nodes, bool(inplace))
        for n in nodes:
            if n.op == "param":
                env[(n.hash, 0)] = args[n.attr("index")]
                continue
            if n.hash in deferred:
                env[(n.hash, 0)] = "$deferred"  # never read: the consumer inlines it
                continue
            self.deferred = deferred  # a nested region emitted by the last node resets it
            self.node(n, env, n.hash in inplace)
        self.deferred = outer
        self.ctx.pop()
        return [env[(v.node, v.index)] for v in region.yields]

    def val(self, env, v: Value) -> str:
        name = env[(v.node, v.index)]
        assert name is not None
        return f"(local.get {name})"

    def dim(self, d) -> str:
        return f"(i64.const {d})" if isinstance(d, int) else f"(local.get $d{d.index})"

    def count(self, t: Type) -> str:
        """The element count of tensor type ``t`` as an i64 expression."""
        t = strip_ref(t)
        e = "(i64.const 1)"
        for d in t.shape:
            e = f"(i64.mul {e} {self.dim(d)})" if e != "(i64.const 1)" else self.dim(d)
        return e

    def alloc(self, t: Type) -> str:
        """A fresh buffer for a value of tensor type ``t``; the local holding its address."""
        p = self.local("i32", "buf")
        self.emit(
            f"local.set {p} (call $kera_alloc (i64.mul {self.count(t)} "
            f"(i64.const {size_of(elem_of(t))})))"
        )
        return p

    def copy(self, t: Type, src: str) -> str:
        dst = self.alloc(t)
        n = f"(i32.wrap_i64 (i64.mul {self.count(t)} (i64.const {size_of(elem_of(t))})))"
        self.emit(f"memory.copy (local.get {dst}) {src} {n}")
        return dst

    # --- nodes ----------------------------------------------------------------------
    def node(self, n: Node, env, inplace: bool) -> None:
        op = n.op
        outs = []
        for t in n.types:
            vt = valtype(t) if not isinstance(strip_ref(t), RangeType) else None
            outs.append(self.local(vt, "v") if vt else None)
        for i, o in enumerate(outs or [None]):
            env[(n.hash, i)] = o
        ins = [self.val(env, v) if env.get((v.node, v.index)) else None for v in n.inputs]
        tin = [self.g.type_of(v) for v in n.inputs]
        if op == "const":
            self.emit(f"local.set {outs[0]} {const(n.attr('type'), int(n.attr('value')))}")
        elif op == "dim":
            self.emit(f"local.set {outs[0]} (local.get $d{n.attr('index')})")
        elif op == "range":
            env[(n.hash, "range")] = (n, n.inputs)  # type: ignore[assignment]
        elif op in ("move_to", "copy_to"):
            self.emit(f"local.set {outs[1]} {ins[1]}")
        elif op == "select":
            vt = valtype(n.types[0])
            self.emit(f"local.set {outs[0]} (select (result {vt}) {ins[1]} {ins[2]} {ins[0]})")
        elif op == "index":
            addr = self.address(tin[0], ins[0], n.inputs[1:], tin[1:], env)
            self.emit(f"local.set {outs[0]} {load(elem_of(tin[0]), addr)}")
        elif op == "update":
            t = tin[0]
            addr_local = self.local("i32", "a")
            base = ins[0]
            if not inplace:
                base = f"(local.get {self.copy(t, ins[0])})"
            # bounds are checked before the copy is used, in the reference order
            addr = self.address(t, base, n.inputs[1:-1], tin[1:-1], env)
            self.emit(f"local.set {addr_local} {addr}")
            self.emit(store(elem_of(t), f"(local.get {addr_local})", ins[-1]))
            self.emit(f"local.set {outs[0]} {base}")
        elif op == "full":
            t = n.attr("type")
            self.emit(f"local.set {outs[0]} (local.get {self.full(t, ins[0])})")
        elif op in ("sum", "max", "min", "mean", "dot"):
            self.reduce(n, env, ins, tin, outs[0])
        elif op == "if":
            self.if_(n, env, ins, outs)
        elif op == "for":
            self.for_(n, env, ins, tin, outs)
        elif op == "while":
            self.while_(n, ins, tin, outs)
        elif op == "call":
            self.call(n, ins, tin, outs)
        elif op == "print":
            self.print_(n, ins, tin)
        elif op in composite.OPS:
            composite.OPS[op](self, n, ins, tin, outs[0])
        elif op in structs.OPS:
            structs.OPS[op](self, n, ins, tin, outs[0])
        else:
            self.elementwise(n, env, ins, tin, outs[0])

    # --- print (the io effect) -------------------------------------------------------------
    def print_(self, n: Node, ins, tin) -> None:
        """Call the host's `kera.print` with a descriptor (a JSON data segment), the value's
        address and the address of its shape (docs/targets/wasm.md, "Printing")."""
        text = n.attr("text")
        if text is not None or len(ins) < 2:
            desc: dict = {"text": text if text is not None else ""}
            ptr, shape = "(i32.const 0)", "(i32.const 0)"
        else:
            t = strip_ref(tin[1])
            shape = "(i32.const 0)"
            if isinstance(t, Struct):
                desc = {"struct": _struct_desc(t)}
                ptr = ins[1]
            elif isinstance(t, Tensor):
                desc = {"elem": t.elem.name, "rank": len(t.shape)}
                ptr = ins[1]
                if len(t.shape) > PRINT_MAX_RANK:
                    raise TypeError("print of a tensor of rank > 100")
                for k, d in enumerate(t.shape):
                    self.emit(f"(i64.store (i32.const {PRINT_SHAPE + 8 * k}) {self.dim(d)})")
                shape = f"(i32.const {PRINT_SHAPE})"
            else:
                desc = {"elem": t.name}
                self.emit(store(t, f"(i32.const {PRINT_SCALAR})", ins[1]))
                ptr = f"(i32.const {PRINT_SCALAR})"
        at, size = self.mod.data(json.dumps(desc, ensure_ascii=True).encode())
        self.emit(f"(call $kera_print (i32.const {at}) (i32.const {size}) {ptr} {shape})")

    # --- indexing ---------------------------------------------------------------------
    def address(self, t: Type, base: str, idx_vals, idx_types, env) -> str:
        """Check every index against its dimension (R0001) and return the element address."""
        t = strip_ref(t)
        lin = self.local("i64", "li")
        self.emit(f"local.set {lin} (i64.const 0)")
        for d, v, it in zip(t.shape, idx_vals, idx_types, strict=True):
            p = elem_of(it)
            e = self.val(env, v)
            if p.bits < 64:
                e = f"(i64.extend_i32_{'s' if p.is_signed else 'u'} {e})"
            i = self.local("i64", "ix")
            self.emit(f"local.set {i} {e}")
            self.emit(
                f"(if (i64.ge_u (local.get {i}) {self.dim(d)}) "
                f"(then (call $kera_fail (i32.const {ERR_INDEX}))))"
            )
            self.emit(
                f"local.set {lin} (i64.add (i64.mul (local.get {lin}) {self.dim(d)}) (local.get {i}))"
            )
        sz = size_of(t.elem)
        return f"(i32.add {base} (i32.mul (i32.wrap_i64 (local.get {lin})) (i32.const {sz})))"

    def loop_elems(self, t: Type, out: str, value) -> None:
        """``out[i] = value(i)`` for every element i of tensor type ``t`` (i an i32 local)."""
        p = elem_of(t)
        sz = size_of(p)
        n = self.local("i32", "n")
        i = self.local("i32", "i")
        self.emit(f"local.set {n} (i32.wrap_i64 {self.count(t)})")
        self.emit(f"local.set {i} (i32.const 0)")
        brk, top = self.label("brk"), self.label("top")
        self.emit(f"(block {brk} (loop {top}")
        self.depth += 1
        self.emit(f"(br_if {brk} (i32.ge_u (local.get {i}) (local.get {n})))")
        addr = f"(i32.add (local.get {out}) (i32.mul (local.get {i}) (i32.const {sz})))"
        self.emit(store(p, addr, value(i)))
        self.emit(f"local.set {i} (i32.add (local.get {i}) (i32.const 1))")
        self.emit(f"br {top}")
        self.depth -= 1
        self.emit("))")

    # --- elementwise --------------------------------------------------------------------
    def elementwise(self, n: Node, env, ins, tin, out: str) -> None:
        """One elementwise operation; on tensors one loop over its fused tree (fusion.py)."""
        if isinstance(strip_ref(n.types[0]), Tensor):
            buf = fusion.emit_map(self, fusion.tree(self, env, n))
            self.emit(f"local.set {out} (local.get {buf})")
        elif n.op == "cast":
            self.emit(f"local.set {out} {rt.cast(self.mod, elem_of(tin[0]), n.attr('to'), ins[0])}")
        else:
            self.emit(f"local.set {out} {rt.scalar(self.mod, n.op, elem_of(tin[0]), *ins)}")

    def full(self, t: Type, v: str) -> str:
        """A fresh buffer of tensor type ``t`` with every element ``v``: 16 bytes per store."""
        p = elem_of(t)
        sz = size_of(p)
        buf = self.alloc(t)
        sp, end, a = self.local("v128", "sp"), self.local("i32", "end"), self.local("i32", "a")
        self.emit(f"local.set {sp} {simd.splat(p, v)}")
        self.emit(f"local.set {a} (local.get {buf})")
        self.emit(
            f"local.set {end} (i32.add (local.get {buf}) "
            f"(i32.wrap_i64 (i64.mul {self.count(t)} (i64.const {sz}))))"
        )
        brk, top = self.label("brk"), self.label("top")
        self.emit(f"(block {brk} (loop {top}")
        self.depth += 1  # the last store may pass the end: blocks are padded to 16 bytes
        self.emit(f"(br_if {brk} (i32.ge_u (local.get {a}) (local.get {end})))")
        self.emit(f"(v128.store (local.get {a}) (local.get {sp}))")
        self.emit(f"local.set {a} (i32.add (local.get {a}) (i32.const 16))")
        self.emit(f"br {top}")
        self.depth -= 1
        self.emit("))")
        return buf

    def broadcast_index(self, src: Tensor, out: Tensor, i: str) -> str:
        """The flat index into ``src`` of flat element ``i`` of the broadcast shape ``out``.

        Right-aligned, NumPy-style (`ir.ops.broadcast_shapes`): a dimension of static size 1
        is read at coordinate 0; any other equals the output's and keeps its coordinate.
        """
        if tuple(src.shape) == tuple(out.shape):
            return i
        r, s = len(out.shape), len(src.shape)
        d32 = lambda d: f"(i32.wrap_i64 {self.dim(d)})"  # noqa: E731
        terms = []
        for k, d in enumerate(src.shape):
            if isinstance(d, int) and d == 1:
                continue
            pk = r - s + k
            coord = i
            if pk + 1 < r:
                st = d32(out.shape[pk + 1])
                for x in out.shape[pk + 2 :]:
                    st = f"(i32.mul {st} {d32(x)})"
                coord = f"(i32.div_u {coord} {st})"
            if pk > 0:
                coord = f"(i32.rem_u {coord} {d32(out.shape[pk])})"
            term = coord
            for x in src.shape[k + 1 :]:
                term = f"(i32.mul {term} {d32(x)})"
            terms.append(term)
        e = "(i32.const 0)"
        for t in terms:
            e = t if e == "(i32.const 0)" else f"(i32.add {e} {t})"
        return e

    # --- reductions ---------------------------------------------------------------------
    def operand_tree(self, env, v: Value):
        """Tensor operand ``v`` as an expression tree: its deferred operation, or its buffer."""
        src = self.g.nodes[v.node]
        if src.hash in self.deferred:
            return fusion.tree(self, env, src)
        return fusion.Leaf(self.val(env, v), strip_ref(self.g.type_of(v)))

    def reduce(self, n: Node, env, ins, tin, out: str) -> None:
        t = strip_ref(tin[0])
        p = t.elem
        if p.is_float and n.op in ("sum", "mean", "dot"):
            x = self.operand_tree(env, n.inputs[0])
            if n.op == "dot":  # the rounded products, summed canonically
                x = fusion.Op("mul", p, t, [x, self.operand_tree(env, n.inputs[1])])
            s = fusion.emit_sum(self, x, t)
            e = f"(local.get {s})"
            if n.op == "mean":
                e = f"({p.name}.div {e} ({p.name}.convert_i64_s {self.count(t)}))"
            self.emit(f"local.set {out} {e}")
            return
        cnt = f"(i32.wrap_i64 {self.count(t)})"
        src = ins[0]
        op = n.op
        if op == "dot":
            prod = self.alloc(t)
            sz = size_of(p)
            a, b = ins

            def mul(i: str) -> str:
                ad = f"(i32.mul (local.get {i}) (i32.const {sz}))"
                return rt.scalar(
                    self.mod,
                    "mul",
                    p,
                    load(p, f"(i32.add {a} {ad})"),
                    load(p, f"(i32.add {b} {ad})"),
                )

            self.loop_elems(t, prod, mul)
            src = f"(local.get {prod})"
            op = "sum"
        helper = rt.reduction(self.mod, "sum" if op == "mean" else op, p)
        e = f"(call {helper} {src} {cnt})"
        if op == "mean":
            s = self.local(valtype(p), "s")
            self.emit(f"local.set {s} {e}")
            w = "i64" if p.bits == 64 else "i32"
            k = self.count(t) if p.bits == 64 else f"(i32.wrap_i64 {self.count(t)})"
            sg = "s" if p.is_signed else "u"
            e = norm(p, f"({w}.div_{sg} (local.get {s}) {k})")
            self.emit(
                f"(if (i64.eqz {self.count(t)}) (then (call $kera_fail (i32.const {ERR_EMPTY}))))"
            )
        self.emit(f"local.set {out} {e}")

    # --- control --------------------------------------------------------------------------
    def _set_all(self, dsts: list[str | None], srcs: list[str | None]) -> None:
        """Parallel assignment (a yield may name another carried slot)."""
        tmps = []
        for d, s in zip(dsts, srcs, strict=True):
            if d is None or s is None:
                tmps.append(None)
                continue
            vt = dict(self.locals)[d]
            tmp = self.local(vt, "t")
            self.emit(f"local.set {tmp} (local.get {s})")
            tmps.append(tmp)
        for d, tmp in zip(dsts, tmps, strict=True):
            if d is not None and tmp is not None:
                self.emit(f"local.set {d} (local.get {tmp})")

    def _bind(self, ins) -> list[str | None]:
        """Region arguments: the locals holding the node's inputs."""
        out = []
        for e in ins:
            out.append(None if e is None else e[len("(local.get ") : -1])
        return out

    def if_(self, n: Node, env, ins, outs) -> None:
        args = self._bind(ins[1:])
        owned = {j for h, j in self.ctx[-1].ifs if h == n.hash}
        ctxs = self.mod.plans.branch_contexts(n, owned)
        self.emit(f"(if {ins[0]} (then")
        self.depth += 1
        ys = self.region(self.g.regions[n.regions[0]], args, ctxs[0])
        self._set_all(outs, ys)
        self.depth -= 1
        self.emit(") (else")
        self.depth += 1
        ys = self.region(self.g.regions[n.regions[1]], args, ctxs[1])
        self._set_all(outs, ys)
        self.depth -= 1
        self.emit("))")

    def _enter_carried(self, n: Node, carried_ins, carried_types, outs) -> None:
        owned = self.mod.plans.loop(n).owned
        handed = self.ctx[-1].handed
        for k, (e, t, o) in enumerate(zip(carried_ins, carried_types, outs, strict=True)):
            if o is None:
                continue
            if k in owned and (n.hash, k) not in handed:
                self.emit(f"local.set {o} (local.get {self.copy(t, e)})")
            else:
                self.emit(f"local.set {o} {e}")

    def _release_mark(self, n: Node, outs) -> tuple[str, int | None, int] | None:
        """Free each iteration's allocations at its end, where no allocation can outlive it.

        What an iteration allocates can outlive it only through a carried value. A tensor
        slot the loop updates in place holds a buffer from before the loop; a scalar
        holds no address; one struct slot is moved down to the mark (a struct block is
        self-contained and immutable). So when every carried tensor is updated in place
        and at most one slot is a struct, the heap goes back to the mark taken after
        entry (plus the struct) at the end of every iteration. Returns (mark local,
        struct slot or None, struct size), or None when the loop keeps what it allocates.
        """
        owned = self.mod.plans.loop(n).owned
        struct_slots = []
        for k, t in enumerate(n.types):
            t = strip_ref(t)
            if isinstance(t, Tensor) and k not in owned:
                return None
            if isinstance(t, Struct):
                struct_slots.append(k)
        if len(struct_slots) > 1:
            return None
        mark = self.local("i32", "mark")
        self.emit(f"local.set {mark} (global.get $hp)")
        if not struct_slots:
            return mark, None, 0
        k = struct_slots[0]
        return mark, k, structs.size(strip_ref(n.types[k]))

    def _release(self, release, outs) -> None:
        if release is None:
            return
        mark, k, size = release
        if k is None:
            self.emit(f"(global.set $hp (local.get {mark}))")
            return
        o = outs[k]
        self.emit(
            f"(if (i32.ge_u (local.get {o}) (local.get {mark})) (then "
            f"(memory.copy (local.get {mark}) (local.get {o}) (i32.const {size})) "
            f"(local.set {o} (local.get {mark}))))"
        )
        self.emit(f"(global.set $hp (i32.add (local.get {mark}) (i32.const {size})))")

    def for_(self, n: Node, env, ins, tin, outs) -> None:
        rng = self.g.node(n.inputs[0])
        rt_elem: Prim = strip_ref(self.g.type_of(n.inputs[0])).elem  # type: ignore[union-attr]
        lo, hi = (self.val(env, v) for v in rng.inputs)
        nc = len(n.types)
        self._enter_carried(n, ins[1 : 1 + nc], tin[1 : 1 + nc], outs)
        release = self._release_mark(n, outs)
        captured = self._bind(ins[1 + nc :])
        vt = valtype(rt_elem)
        i, h = self.local(vt, "i"), self.local(vt, "hi")
        self.emit(f"local.set {i} {lo}")
        self.emit(f"local.set {h} {hi}")
        sg = "s" if rt_elem.is_signed else "u"
        vec = vector_loop.plan(self, n)
        if vec is not None:  # whole groups of lanes first, the scalar body for the rest
            vector_loop.emit(self, vec, i, h, vt, sg, [i, *outs, *captured])
        cmp = "le" if rng.attr("inclusive", False) else "lt"
        brk, top = self.label("brk"), self.label("top")
        self.emit(f"(if ({vt}.{cmp}_{sg} (local.get {i}) (local.get {h})) (then")
        self.emit(f"(block {brk} (loop {top}")
        self.depth += 1
        body = self.mod.plans.loop(n).body
        ys = self.region(self.g.regions[n.regions[0]], [i, *outs, *captured], body)
        self._set_all(outs, ys)
        self._release(release, outs)
        if cmp == "le":
            self.emit(f"(br_if {brk} ({vt}.eq (local.get {i}) (local.get {h})))")
        self.emit(f"local.set {i} {norm(rt_elem, f'({vt}.add (local.get {i}) ({vt}.const 1))')}")
        if cmp == "lt":
            self.emit(f"(br_if {brk} ({vt}.eq (local.get {i}) (local.get {h})))")
        self.emit(f"br {top}")
        self.depth -= 1
        self.emit("))))")

    def while_(self, n: Node, ins, tin, outs) -> None:
        nc = len(n.types)
        self._enter_carried(n, ins[:nc], tin[:nc], outs)
        release = self._release_mark(n, outs)
        captured = self._bind(ins[nc:])
        brk, top = self.label("brk"), self.label("top")
        self.emit(f"(block {brk} (loop {top}")
        self.depth += 1
        (c,) = self.region(self.g.regions[n.regions[0]], [*outs, *captured])
        self.emit(f"(br_if {brk} (i32.eqz (local.get {c})))")
        body = self.mod.plans.loop(n).body
        ys = self.region(self.g.regions[n.regions[1]], [*outs, *captured], body)
        self._set_all(outs, ys)
        self._release(release, outs)
        self.emit(f"br {top}")
        self.depth -= 1
        self.emit("))")

    def call(self, n: Node, ins, tin, outs) -> None:
        callee = self.mod.by_hash[n.attr("callee")]
        ft = callee.type
        first = 1 if ft.effects else 0
        dims = []
        for d in range(ft.n_dims):
            dims.append(self._callee_dim(ft.params, tin[first:], d))
        args = dims + [e for e in ins[first:] if e is not None]
        self.mod.want(callee)
        real = [o for o in outs if o is not None]
        self.emit(f"(call {fname(callee)} {' '.join(args)})")
        for o in reversed(real):
            self.emit(f"local.set {o}")

    def _callee_dim(self, params, arg_types, d: int) -> str:
        for pt, at in zip(params, arg_types, strict=True):
            pt, at = strip_ref(pt), strip_ref(at)
            if isinstance(pt, Tensor):
                for pd, ad in zip(pt.shape, at.shape, strict=True):
                    if isinstance(pd, Sym) and pd.index == d:
                        return self.dim(ad)
        raise TypeError(f"dimension {d} of a callee is bound by no argument")


class ModuleEmitter:
    def __init__(self, g: Graph, fn: Function) -> None:
        self.g = g
        self.fn = fn
        self.by_hash = {f.hash: f for f in g.functions.values()}
        self.helpers: dict[str, str] = {}
        self.funcs: dict[str, str] = {}
        self.plans = Planner(g, SAFE_READERS)  # in-place updates (inplace.py)
        self.segments: list[tuple[int, bytes]] = []
        self.data_end = rt.HEAP_BASE
        for f in reachable(g, fn):
            for rh in g.all_regions(f.region):
                for node in g.region_nodes(rh):
                    if node.op in ("for", "while"):
                        self.plans.loop(node)

    def want(self, f: Function) -> None:
        pass

    def data(self, payload: bytes) -> tuple[int, int]:
        """Place ``payload`` in a data segment above the scratch; (address, length)."""
        for at, p in self.segments:
            if p == payload:
                return at, len(p)
        at = self.data_end
        self.segments.append((at, payload))
        self.data_end = at + len(payload)
        return at, len(payload)

    def build(self) -> str:
        order = reachable(self.g, self.fn)
        for f in order:
            self.funcs[f.hash.hex()] = FnEmitter(self, f).build()
        entry = self._entry()
        imports = []
        if self.segments:  # only a function with the io effect prints
            imports.append('  (import "kera" "print" (func $kera_print (param i32 i32 i32 i32)))')
        heap = (self.data_end + 15) & ~15
        data = [f'  (data (i32.const {at}) "{_wat_bytes(p)}")' for at, p in self.segments]
        parts = [
            "(module",
            *imports,
            f'  (memory (export "memory") {max(1, (heap + 65535) >> 16)})',
            *data,
            f'  (global $hp (export "kera_heap") (mut i32) (i32.const {heap}))',
            '  (global $err (export "kera_error") (mut i32) (i32.const 0))',
            rt.ALLOC,
            *self.helpers.values(),
            *self.funcs.values(),
            entry,
            ")",
        ]
        return "\n".join(parts) + "\n"

    def _entry(self) -> str:
        """The export: calls the function, then canonicalises every float it hands back."""
        f = self.fn
        ft = f.type
        params = [f"(param $d{i} i64)" for i in range(ft.n_dims)]
        args = [f"(local.get $d{i})" for i in range(ft.n_dims)]
        for i, t in enumerate(ft.params):
            params.append(f"(param $p{i} {valtype(t)})")
            args.append(f"(local.get $p{i})")
        region = self.g.regions[f.region]
        out_types = [self.g.type_of(v) for v in region.yields]
        real = [t for t in out_types if valtype(t) is not None]
        locs = [f"(local $r{i} {valtype(t)})" for i, t in enumerate(real)]
        locs += ["(local $cx_f32 f32) (local $cx_f64 f64)"]
        body = [f"    (call {fname(f)} {' '.join(args)})"]
        for i in reversed(range(len(real))):
            body.append(f"    local.set $r{i}")
        for i, t in enumerate(real):
            if isinstance(strip_ref(t), Struct):
                body += structs.canon_code(strip_ref(t), f"(local.get $r{i})", "    ")
                continue
            p = elem_of(t)
            if not p.is_float:
                continue
            if isinstance(strip_ref(t), Tensor):
                n = "(i64.const 1)"
                for d in strip_ref(t).shape:
                    dd = f"(i64.const {d})" if isinstance(d, int) else f"(local.get $d{d.index})"
                    n = f"(i64.mul {n} {dd})"
                body.append(
                    f"    (call {simd.canon_tensor(self, p)} (local.get $r{i}) (i32.wrap_i64 {n}))"
                )
            else:
                body.append(f"    (local.set $r{i} {rt.canon(p, f'(local.get $r{i})', f'$r{i}')})")
        body += [f"    local.get $r{i}" for i in range(len(real))]
        res = f" (result {' '.join(valtype(t) for t in real)})" if real else ""
        return (
            f'  (func (export "{f.name}") {" ".join(params)}{res} {" ".join(locs)}\n'
            + "\n".join(body)
            + "\n  )"
        )


#: Uses of a tensor that only read it (inplace.py): reductions, composites, and every
#: elementwise operation (each writes a fresh buffer or is fused into one).
SAFE_READERS = frozenset(
    {"index", "sum", "max", "min", "mean", "dot"} | set(composite.OPS) | fusion.ELEMENTWISE
)


def lower_wat(g: Graph, fn_name: str) -> str:
    return ModuleEmitter(g, g.functions[fn_name]).build()
