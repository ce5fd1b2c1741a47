"""`array`, `argmax`, `matmul`, `conv1d`, `softmax`, `layernorm` (docs/semantics.md §7.5, §8).

Each is emitted as loops over the pieces the other operations use — the same scalar
operations (`rt.scalar`, each rounded), the canonical `sum`, the `max` fold and the `exp`
helper — in exactly the order the definition gives, so the bits are the interpreter's.
"""

from __future__ import annotations

from kera_core.backends.wasm import rt
from kera_core.ir.types import Prim, Tensor, strip_ref


def _emit_mod():
    from kera_core.backends.wasm import emit

    return emit


def _at(p: Prim, base: str, i: str) -> str:
    """The address of element ``i`` (an i32 expression) of the buffer at ``base``."""
    sz = _emit_mod().size_of(p)
    return f"(i32.add {base} (i32.mul {i} (i32.const {sz})))"


def array(fe, n, ins, tin, out: str) -> None:
    """Stack the elements (scalars or equally shaped tensors) in order."""
    emit = _emit_mod()
    t = strip_ref(n.types[0])
    p = t.elem
    buf = fe.alloc(t)
    first = strip_ref(tin[0])
    if isinstance(first, Tensor):
        each = f"(i32.wrap_i64 (i64.mul {fe.count(first)} (i64.const {emit.size_of(p)})))"
        for k, e in enumerate(ins):
            dst = f"(i32.add (local.get {buf}) (i32.mul (i32.const {k}) {each}))"
            fe.emit(f"memory.copy {dst} {e} {each}")
    else:
        for k, e in enumerate(ins):
            fe.emit(emit.store(p, _at(p, f"(local.get {buf})", f"(i32.const {k})"), e))
    fe.emit(f"local.set {out} (local.get {buf})")


def argmax_helper(mod, p: Prim) -> str:
    """``(param a i32) (param n i32) (result i64)``: the lowest index of the largest element.

    Floats compare by the key of the total order −inf < … < −0 < +0 < … < +inf < NaN (any
    NaN is the largest key), so the first NaN wins; integers by their value.
    """
    emit = _emit_mod()
    name = f"$argmax_{p.name}"
    elem = emit.load(p, _at(p, "(local.get $a)", "(local.get $i)"))
    if p.is_float:
        iw = "i32" if p.bits == 32 else "i64"
        sign = "-2147483648" if p.bits == 32 else "-9223372036854775808"
        key = (
            f"(select ({iw}.const -1) "
            f"(select ({iw}.xor (local.get $b) ({iw}.const -1)) ({iw}.or (local.get $b) ({iw}.const {sign})) "
            f"({iw}.lt_s (local.get $b) ({iw}.const 0))) "
            f"({p.name}.ne (local.get $x) (local.get $x)))"
        )
        decl = f"(local $x {p.name}) (local $b {iw}) (local $k {iw}) (local $bk {iw})"
        getkey = (
            f"(local.set $x {elem})\n"
            f"      (local.set $b ({iw}.reinterpret_{p.name} (local.get $x)))\n"
            f"      (local.set $k {key})"
        )
        better = f"({iw}.gt_u (local.get $k) (local.get $bk))"
    else:
        iw = "i64" if p.bits == 64 else "i32"
        sg = "s" if p.is_signed else "u"
        decl = f"(local $k {iw}) (local $bk {iw})"
        getkey = f"(local.set $k {elem})"
        better = f"({iw}.gt_{sg} (local.get $k) (local.get $bk))"
    text = f"""\
  (func {name} (param $a i32) (param $n i32) (result i64) (local $i i32) (local $best i32) {decl}
    (if (i32.eqz (local.get $n)) (then (call $kera_fail (i32.const 4))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      {getkey}
      (if (i32.or (i32.eqz (local.get $i)) {better})
        (then (local.set $bk (local.get $k)) (local.set $best (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (i64.extend_i32_u (local.get $best)))"""
    return rt._helper(mod, name, text)


def argmax(fe, n, ins, tin, out: str) -> None:
    t = strip_ref(tin[0])
    h = argmax_helper(fe.mod, t.elem)
    fe.emit(f"local.set {out} (call {h} {ins[0]} (i32.wrap_i64 {fe.count(t)}))")


def matmul_helper(mod, p: Prim) -> str:
    """``(a, b, out, M, K, N)``: out[i,j] = ((+0 + a[i,0]·b[0,j]) + a[i,1]·b[1,j]) + …"""
    emit = _emit_mod()
    name = f"$matmul_{p.name}"
    w = rt._w(p)
    zero = f"({w}.const 0)"
    ai = _at(
        p, "(local.get $a)", "(i32.add (i32.mul (local.get $i) (local.get $K)) (local.get $k))"
    )
    bk = _at(
        p, "(local.get $b)", "(i32.add (i32.mul (local.get $k) (local.get $N)) (local.get $j))"
    )
    prod = rt.scalar(mod, "mul", p, emit.load(p, ai), emit.load(p, bk))
    acc = rt.scalar(mod, "add", p, "(local.get $s)", prod)
    dst = _at(
        p, "(local.get $c)", "(i32.add (i32.mul (local.get $i) (local.get $N)) (local.get $j))"
    )
    text = f"""\
  (func {name} (param $a i32) (param $b i32) (param $c i32) (param $M i32) (param $K i32) (param $N i32)
    (local $i i32) (local $j i32) (local $k i32) (local $s {w})
    (block $bi (loop $li
      (br_if $bi (i32.ge_u (local.get $i) (local.get $M)))
      (local.set $j (i32.const 0))
      (block $bj (loop $lj
        (br_if $bj (i32.ge_u (local.get $j) (local.get $N)))
        (local.set $s {zero})
        (local.set $k (i32.const 0))
        (block $bk (loop $lk
          (br_if $bk (i32.ge_u (local.get $k) (local.get $K)))
          (local.set $s {acc})
          (local.set $k (i32.add (local.get $k) (i32.const 1)))
          (br $lk)))
        {emit.store(p, dst, "(local.get $s)")}
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $lj)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $li))))"""
    return rt._helper(mod, name, text)


def matmul(fe, n, ins, tin, out: str) -> None:
    a, b = strip_ref(tin[0]), strip_ref(tin[1])
    t = strip_ref(n.types[0])
    m = "(i32.const 1)" if len(a.shape) == 1 else f"(i32.wrap_i64 {fe.dim(a.shape[0])})"
    k = f"(i32.wrap_i64 {fe.dim(a.shape[-1])})"
    nn = "(i32.const 1)" if len(b.shape) == 1 else f"(i32.wrap_i64 {fe.dim(b.shape[1])})"
    buf = fe.alloc(t)
    h = matmul_helper(fe.mod, a.elem)
    fe.emit(f"(call {h} {ins[0]} {ins[1]} (local.get {buf}) {m} {k} {nn})")
    fe.emit(f"local.set {out} (local.get {buf})")


def conv1d_helper(mod, p: Prim) -> str:
    """``(x, k, out, N, K)``: y[i] = ((+0 + x[i]·k[0]) + x[i+1]·k[1]) + …, x[m ≥ N] = +0."""
    emit = _emit_mod()
    name = f"$conv1d_{p.name}"
    w = p.name
    xv = (
        f"(if (result {w}) (i32.lt_u (i32.add (local.get $i) (local.get $j)) (local.get $N)) "
        f"(then {emit.load(p, _at(p, '(local.get $x)', '(i32.add (local.get $i) (local.get $j))'))}) "
        f"(else ({w}.const 0)))"
    )
    kv = emit.load(p, _at(p, "(local.get $k)", "(local.get $j)"))
    text = f"""\
  (func {name} (param $x i32) (param $k i32) (param $y i32) (param $N i32) (param $K i32)
    (local $i i32) (local $j i32) (local $s {w})
    (block $bi (loop $li
      (br_if $bi (i32.ge_u (local.get $i) (local.get $N)))
      (local.set $s ({w}.const 0))
      (local.set $j (i32.const 0))
      (block $bj (loop $lj
        (br_if $bj (i32.ge_u (local.get $j) (local.get $K)))
        (local.set $s ({w}.add (local.get $s) ({w}.mul {xv} {kv})))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br $lj)))
      {emit.store(p, _at(p, "(local.get $y)", "(local.get $i)"), "(local.get $s)")}
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $li))))"""
    return rt._helper(mod, name, text)


def conv1d(fe, n, ins, tin, out: str) -> None:
    x, k = strip_ref(tin[0]), strip_ref(tin[1])
    buf = fe.alloc(x)
    h = conv1d_helper(fe.mod, x.elem)
    fe.emit(
        f"(call {h} {ins[0]} {ins[1]} (local.get {buf}) "
        f"(i32.wrap_i64 {fe.count(x)}) (i32.wrap_i64 {fe.count(k)}))"
    )
    fe.emit(f"local.set {out} (local.get {buf})")


def _elem_at(fe, p: Prim, buf: str, i: str) -> str:
    return _emit_mod().load(p, _at(p, buf, f"(local.get {i})"))


def softmax(fe, n, ins, tin, out: str) -> None:
    """m = max(x); e = exp(x − m); y = e ÷ sum(e) (§8.3)."""
    t = strip_ref(tin[0])
    p = t.elem
    cnt = f"(i32.wrap_i64 {fe.count(t)})"
    m = fe.local(p.name, "m")
    fe.emit(f"local.set {m} (call {rt.reduction(fe.mod, 'max', p)} {ins[0]} {cnt})")
    e = fe.alloc(t)
    fe.loop_elems(
        t,
        e,
        lambda i: rt.math(
            fe.mod, "exp", p, f"({p.name}.sub {_elem_at(fe, p, ins[0], i)} (local.get {m}))"
        ),
    )
    s = fe.local(p.name, "s")
    fe.emit(f"local.set {s} (call {rt.reduction(fe.mod, 'sum', p)} (local.get {e}) {cnt})")
    y = fe.alloc(t)
    fe.loop_elems(
        t, y, lambda i: f"({p.name}.div {_elem_at(fe, p, f'(local.get {e})', i)} (local.get {s}))"
    )
    fe.emit(f"local.set {out} (local.get {y})")


def layernorm(fe, n, ins, tin, out: str) -> None:
    """μ = mean(x); d = x − μ; v = mean(d·d); y = d ÷ sqrt(v + eps) (§8.4)."""
    t = strip_ref(tin[0])
    p = t.elem
    w = p.name
    cnt = f"(i32.wrap_i64 {fe.count(t)})"
    nf = f"({w}.convert_i64_s {fe.count(t)})"
    total = rt.reduction(fe.mod, "sum", p)
    mu = fe.local(w, "mu")
    fe.emit(f"local.set {mu} ({w}.div (call {total} {ins[0]} {cnt}) {nf})")
    d = fe.alloc(t)
    fe.loop_elems(t, d, lambda i: f"({w}.sub {_elem_at(fe, p, ins[0], i)} (local.get {mu}))")
    sq = fe.alloc(t)
    fe.loop_elems(
        t,
        sq,
        lambda i: (
            f"({w}.mul {_elem_at(fe, p, f'(local.get {d})', i)} {_elem_at(fe, p, f'(local.get {d})', i)})"
        ),
    )
    den = fe.local(w, "den")
    fe.emit(
        f"local.set {den} ({w}.sqrt ({w}.add ({w}.div (call {total} (local.get {sq}) {cnt}) {nf}) {ins[1]}))"
    )
    y = fe.alloc(t)
    fe.loop_elems(
        t, y, lambda i: f"({w}.div {_elem_at(fe, p, f'(local.get {d})', i)} (local.get {den}))"
    )
    fe.emit(f"local.set {out} (local.get {y})")


OPS = {
    "array": array,
    "argmax": argmax,
    "matmul": matmul,
    "conv1d": conv1d,
    "softmax": softmax,
    "layernorm": layernorm,
}
