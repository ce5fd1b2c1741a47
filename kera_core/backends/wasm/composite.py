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


# The element types with a SIMD kernel: their lane shape and element size in bytes.
_VEC = {
    "f32": ("f32x4", 4),
    "f64": ("f64x2", 8),
    "i32": ("i32x4", 4),
    "u32": ("i32x4", 4),
    "i64": ("i64x2", 8),
    "u64": ("i64x2", 8),
}
# The register block of the SIMD kernel: _MR rows of `a` times _NR vectors of columns
# (4×4: 16 accumulators; at 512² f32 the kernel runs at about one vector multiply and one
# vector add per cycle, the bound for SIMD128 without fma, and costs ≈2.2 fuel per
# multiply-add against ≈33 for the scalar loop).
_MR = 4
_NR = 4


def _matmul_scalar(mod, p: Prim) -> str:
    """``(a, b, out, M, K, N, j0)``: the scalar loop of §8.1 over the columns ``j0 ≤ j < N``."""
    emit = _emit_mod()
    name = f"$matmul_{p.name}_cols"
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
  (func {name} (param $a i32) (param $b i32) (param $c i32) (param $M i32) (param $K i32) (param $N i32) (param $j0 i32)
    (local $i i32) (local $j i32) (local $k i32) (local $s {w})
    (block $bi (loop $li
      (br_if $bi (i32.ge_u (local.get $i) (local.get $M)))
      (local.set $j (local.get $j0))
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


def _matmul_block(mod, p: Prim, mr: int, nr: int) -> str:
    """``(a, bp, out, K, N, i0, j0, bs)``: rows ``i0 … i0+mr−1``, columns ``j0 … j0+nr·L−1``.

    ``bp`` is the address of ``b[0, j0]`` and ``bs`` the byte stride from one ``k`` to the
    next: ``b`` itself (``bs = N·size``) or a packed copy of the panel (``bs = nr·16``).

    One ``v128`` accumulator per row and vector of ``L`` columns, from +0; for each ``k`` in
    increasing order, each lane adds the rounded product ``a[i,k]·b[k,j]`` — §8.1's order per
    element, ``L`` columns at a time. The accumulators stay in locals over the whole ``k``
    loop and are stored once; each ``b`` vector is loaded once per ``k`` for all ``mr`` rows.
    """
    shape, sz = _VEC[p.name]
    name = f"$matmul_{p.name}_{mr}x{nr}"
    splat = f"v128.load{sz * 8}_splat"
    decl = ["(local $pa i32) (local $pb i32) (local $pc i32) (local $end i32) (local $NS i32)"]
    decl += [f"(local $o{r} i32)" for r in range(1, mr)]
    decl += [f"(local $x{r} v128)" for r in range(mr)]
    decl += [f"(local $v{v} v128)" for v in range(nr)]
    decl += [f"(local $c{r}_{v} v128)" for r in range(mr) for v in range(nr)]
    setup = [
        f"(local.set $NS (i32.mul (local.get $N) (i32.const {sz})))",
        f"(local.set $o1 (i32.mul (local.get $K) (i32.const {sz})))" if mr > 1 else "",
    ]
    setup += [
        f"(local.set $o{r} (i32.add (local.get $o{r - 1}) (local.get $o1)))" for r in range(2, mr)
    ]
    setup += [
        f"(local.set $pa (i32.add (local.get $a) (i32.mul (i32.mul (local.get $i0) (local.get $K)) (i32.const {sz}))))",
        f"(local.set $end (i32.add (local.get $pa) (i32.mul (local.get $K) (i32.const {sz}))))",
        "(local.set $pb (local.get $bp))",
    ]
    body = []
    for v in range(nr):
        off = f" offset={16 * v}" if v else ""
        body.append(f"(local.set $v{v} (v128.load{off} align={sz} (local.get $pb)))")
    for r in range(mr):
        at = "(local.get $pa)" if r == 0 else f"(i32.add (local.get $pa) (local.get $o{r}))"
        body.append(f"(local.set $x{r} ({splat} {at}))")
        for v in range(nr):
            c = f"$c{r}_{v}"
            body.append(
                f"(local.set {c} ({shape}.add (local.get {c}) "
                f"({shape}.mul (local.get $x{r}) (local.get $v{v}))))"
            )
    body += [
        f"(local.set $pa (i32.add (local.get $pa) (i32.const {sz})))",
        "(local.set $pb (i32.add (local.get $pb) (local.get $bs)))",
    ]
    store = [
        "(local.set $pc (i32.add (local.get $c) "
        f"(i32.mul (i32.add (i32.mul (local.get $i0) (local.get $N)) (local.get $j0)) (i32.const {sz}))))"
    ]
    for r in range(mr):
        if r:
            store.append("(local.set $pc (i32.add (local.get $pc) (local.get $NS)))")
        for v in range(nr):
            off = f" offset={16 * v}" if v else ""
            store.append(f"(v128.store{off} align={sz} (local.get $pc) (local.get $c{r}_{v}))")
    nl = "\n    "
    nl6 = "\n      "
    text = f"""\
  (func {name} (param $a i32) (param $bp i32) (param $c i32) (param $K i32) (param $N i32) (param $i0 i32) (param $j0 i32) (param $bs i32)
    {" ".join(decl)}
    {nl.join(s for s in setup if s)}
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $pa) (local.get $end)))
      {nl6.join(body)}
      (br $l)))
    {nl.join(store)})"""
    return rt._helper(mod, name, text)


def matmul_helper(mod, p: Prim) -> str:
    """``(a, b, out, M, K, N)``: out[i,j] = ((+0 + a[i,0]·b[0,j]) + a[i,1]·b[1,j]) + …

    For `f32`, `f64` and the 32/64-bit integers the columns are computed ``L`` at a time
    (``L`` = 16 bytes ÷ the element size) by register-blocked SIMD kernels
    (:func:`_matmul_block`): blocks of ``_NR`` vectors of columns — ``_MR`` rows at a time,
    then single rows — then single vectors of columns, and the last ``N mod L`` columns by
    the scalar loop. Every element is the same sequence of rounded operations either way.
    """
    name = f"$matmul_{p.name}"
    cols = _matmul_scalar(mod, p)
    if p.name not in _VEC:
        text = f"""\
  (func {name} (param $a i32) (param $b i32) (param $c i32) (param $M i32) (param $K i32) (param $N i32)
    (call {cols} (local.get $a) (local.get $b) (local.get $c) (local.get $M) (local.get $K) (local.get $N) (i32.const 0)))"""
        return rt._helper(mod, name, text)
    sz = _VEC[p.name][1]
    lanes = 16 // sz
    width = _NR * lanes  # columns of a packed panel
    big, one = _matmul_block(mod, p, _MR, _NR), _matmul_block(mod, p, 1, _NR)
    big1, one1 = _matmul_block(mod, p, _MR, 1), _matmul_block(mod, p, 1, 1)
    args = "(local.get $a) (local.get $pk) (local.get $c) (local.get $K) (local.get $N)"
    copy = "\n          ".join(
        f"(v128.store offset={16 * v} (local.get $q) (v128.load offset={16 * v} (local.get $r)))"
        for v in range(_NR)
    )

    def rows(blk: str, blk1: str, a: str, bs: str, tag: str) -> str:
        """Call ``blk`` on _MR rows at a time, then ``blk1`` on the rows left over."""
        return f"""\
      (local.set $i (i32.const 0))
      (block $bi{tag} (loop $li{tag}
        (br_if $bi{tag} (i32.gt_u (i32.add (local.get $i) (i32.const {_MR})) (local.get $M)))
        (call {blk} {a} (local.get $i) (local.get $j) {bs})
        (local.set $i (i32.add (local.get $i) (i32.const {_MR})))
        (br $li{tag})))
      (block $bo{tag} (loop $lo{tag}
        (br_if $bo{tag} (i32.ge_u (local.get $i) (local.get $M)))
        (call {blk1} {a} (local.get $i) (local.get $j) {bs})
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $lo{tag})))"""

    text = f"""\
  (func {name} (param $a i32) (param $b i32) (param $c i32) (param $M i32) (param $K i32) (param $N i32)
    (local $i i32) (local $j i32) (local $hp i32) (local $pk i32) (local $q i32) (local $r i32) (local $end i32)
    ;; panels of {width} columns: copied to a contiguous scratch block (k-major), then run
    (local.set $hp (global.get $hp))
    (local.set $pk (call $kera_alloc (i64.extend_i32_u (i32.mul (local.get $K) (i32.const {width * sz})))))
    (block $bj (loop $lj
      (br_if $bj (i32.gt_u (i32.add (local.get $j) (i32.const {width})) (local.get $N)))
      (local.set $q (local.get $pk))
      (local.set $r (i32.add (local.get $b) (i32.mul (local.get $j) (i32.const {sz}))))
      (local.set $end (i32.add (local.get $pk) (i32.mul (local.get $K) (i32.const {width * sz}))))
      (block $bp (loop $lp
        (br_if $bp (i32.ge_u (local.get $q) (local.get $end)))
          {copy}
        (local.set $q (i32.add (local.get $q) (i32.const {width * sz})))
        (local.set $r (i32.add (local.get $r) (i32.mul (local.get $N) (i32.const {sz}))))
        (br $lp)))
{rows(big, one, args, f"(i32.const {width * sz})", "")}
      (local.set $j (i32.add (local.get $j) (i32.const {width})))
      (br $lj)))
    (global.set $hp (local.get $hp))
    ;; single vectors of {lanes} columns, straight from b
    (block $bv (loop $lv
      (br_if $bv (i32.gt_u (i32.add (local.get $j) (i32.const {lanes})) (local.get $N)))
      (local.set $pk (i32.add (local.get $b) (i32.mul (local.get $j) (i32.const {sz}))))
{rows(big1, one1, args, f"(i32.mul (local.get $N) (i32.const {sz}))", "1")}
      (local.set $j (i32.add (local.get $j) (i32.const {lanes})))
      (br $lv)))
    ;; the last N mod {lanes} columns: scalar
    (call {cols} (local.get $a) (local.get $b) (local.get $c) (local.get $M) (local.get $K) (local.get $N) (local.get $j)))"""
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


def _conv1d_scalar(mod, p: Prim) -> str:
    """``(x, k, out, N, K, i0)``: §8.2's scalar loop for the outputs ``i0 ≤ i < N``."""
    emit = _emit_mod()
    name = f"$conv1d_{p.name}_from"
    w = p.name
    xv = (
        f"(if (result {w}) (i32.lt_u (i32.add (local.get $i) (local.get $j)) (local.get $N)) "
        f"(then {emit.load(p, _at(p, '(local.get $x)', '(i32.add (local.get $i) (local.get $j))'))}) "
        f"(else ({w}.const 0)))"
    )
    kv = emit.load(p, _at(p, "(local.get $k)", "(local.get $j)"))
    text = f"""\
  (func {name} (param $x i32) (param $k i32) (param $y i32) (param $N i32) (param $K i32) (param $i0 i32)
    (local $i i32) (local $j i32) (local $s {w})
    (local.set $i (local.get $i0))
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


def _conv1d_block(mod, p: Prim, nr: int) -> str:
    """``(x, k, y, K, i0)``: y[i0 … i0+nr·L−1], every tap in range (the caller checks).

    One ``v128`` accumulator per ``L`` outputs, from +0; for each ``j`` in increasing order,
    each lane adds the rounded product ``x[i+j]·k[j]`` — §8.2's order per element.
    """
    shape, sz = _VEC[p.name]
    name = f"$conv1d_{p.name}_{nr}"
    decl = " ".join(
        ["(local $px i32) (local $pk i32) (local $end i32) (local $kv v128)"]
        + [f"(local $c{t} v128)" for t in range(nr)]
    )
    body = [f"(local.set $kv (v128.load{sz * 8}_splat (local.get $pk)))"]
    for t in range(nr):
        off = f" offset={16 * t}" if t else ""
        body.append(
            f"(local.set $c{t} ({shape}.add (local.get $c{t}) ({shape}.mul "
            f"(v128.load{off} align={sz} (local.get $px)) (local.get $kv))))"
        )
    stores = [
        f"(v128.store{f' offset={16 * t}' if t else ''} align={sz} "
        f"(i32.add (local.get $y) (i32.mul (local.get $i0) (i32.const {sz}))) (local.get $c{t}))"
        for t in range(nr)
    ]
    nl, nl6 = "\n    ", "\n      "
    text = f"""\
  (func {name} (param $x i32) (param $k i32) (param $y i32) (param $K i32) (param $i0 i32)
    {decl}
    (local.set $px (i32.add (local.get $x) (i32.mul (local.get $i0) (i32.const {sz}))))
    (local.set $pk (local.get $k))
    (local.set $end (i32.add (local.get $k) (i32.mul (local.get $K) (i32.const {sz}))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $pk) (local.get $end)))
      {nl6.join(body)}
      (local.set $px (i32.add (local.get $px) (i32.const {sz})))
      (local.set $pk (i32.add (local.get $pk) (i32.const {sz})))
      (br $l)))
    {nl.join(stores)})"""
    return rt._helper(mod, name, text)


def conv1d_helper(mod, p: Prim) -> str:
    """``(x, k, out, N, K)``: y[i] = ((+0 + x[i]·k[0]) + x[i+1]·k[1]) + …, x[m ≥ N] = +0.

    For `f32`/`f64`, blocks of outputs whose taps all lie inside ``x`` are computed by
    :func:`_conv1d_block` (``_NR`` vectors, then single vectors); the rest — the outputs
    whose window reaches past the end — by the scalar loop.
    """
    name = f"$conv1d_{p.name}"
    scalar = _conv1d_scalar(mod, p)
    if p.name not in ("f32", "f64"):
        text = f"""\
  (func {name} (param $x i32) (param $k i32) (param $y i32) (param $N i32) (param $K i32)
    (call {scalar} (local.get $x) (local.get $k) (local.get $y) (local.get $N) (local.get $K) (i32.const 0)))"""
        return rt._helper(mod, name, text)
    lanes = 16 // _VEC[p.name][1]
    args = "(local.get $x) (local.get $k) (local.get $y) (local.get $K) (local.get $i)"

    def run(nr: int) -> str:
        blk = _conv1d_block(mod, p, nr)
        return f"""\
    (block $b{nr} (loop $l{nr}
      (br_if $b{nr} (i32.gt_u (i32.add (local.get $i) (i32.const {nr * lanes})) (local.get $lim)))
      (call {blk} {args})
      (local.set $i (i32.add (local.get $i) (i32.const {nr * lanes})))
      (br $l{nr})))"""

    text = f"""\
  (func {name} (param $x i32) (param $k i32) (param $y i32) (param $N i32) (param $K i32)
    (local $i i32) (local $d i32) (local $lim i32)
    ;; outputs i < lim read only x[i + j], j < K, inside x: lim = max(N − max(K − 1, 0), 0)
    (local.set $d (select (i32.sub (local.get $K) (i32.const 1)) (i32.const 0) (local.get $K)))
    (local.set $lim (select (i32.sub (local.get $N) (local.get $d)) (i32.const 0)
      (i32.ge_u (local.get $N) (local.get $d))))
{run(_NR)}
{run(1)}
    (call {scalar} (local.get $x) (local.get $k) (local.get $y) (local.get $N) (local.get $K) (local.get $i)))"""
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


def softmax(fe, n, ins, tin, out: str) -> None:
    """m = max(x); e = exp(x − m); y = e ÷ sum(e) (§8.3), as fused (SIMD) loops."""
    from kera_core.backends.wasm.fusion import Leaf, Op, Scalar, emit_map, emit_sum

    t = strip_ref(tin[0])
    p = t.elem
    cnt = f"(i32.wrap_i64 {fe.count(t)})"
    m = fe.local(p.name, "m")
    fe.emit(f"local.set {m} (call {rt.reduction(fe.mod, 'max', p)} {ins[0]} {cnt})")
    shifted = Op("sub", p, t, [Leaf(ins[0], t), Scalar(f"(local.get {m})", p)])
    e = emit_map(fe, Op("exp", p, t, [shifted]))
    s = emit_sum(fe, Leaf(f"(local.get {e})", t), t)
    y = emit_map(fe, Op("div", p, t, [Leaf(f"(local.get {e})", t), Scalar(f"(local.get {s})", p)]))
    fe.emit(f"local.set {out} (local.get {y})")


def layernorm(fe, n, ins, tin, out: str) -> None:
    """μ = mean(x); d = x − μ; v = mean(d·d); y = d ÷ sqrt(v + eps) (§8.4), fused loops."""
    from kera_core.backends.wasm.fusion import Leaf, Op, Scalar, emit_map, emit_sum

    t = strip_ref(tin[0])
    p = t.elem
    w = p.name
    nf = f"({w}.convert_i64_s {fe.count(t)})"
    mu = fe.local(w, "mu")
    fe.emit(f"local.set {mu} ({w}.div (local.get {emit_sum(fe, Leaf(ins[0], t), t)}) {nf})")
    d = emit_map(fe, Op("sub", p, t, [Leaf(ins[0], t), Scalar(f"(local.get {mu})", p)]))
    dl = Leaf(f"(local.get {d})", t)
    v = emit_sum(fe, Op("mul", p, t, [dl, dl]), t)
    den = fe.local(w, "den")
    fe.emit(f"local.set {den} ({w}.sqrt ({w}.add ({w}.div (local.get {v}) {nf}) {ins[1]}))")
    y = emit_map(fe, Op("div", p, t, [dl, Scalar(f"(local.get {den})", p)]))
    fe.emit(f"local.set {out} (local.get {y})")


OPS = {
    "array": array,
    "argmax": argmax,
    "matmul": matmul,
    "conv1d": conv1d,
    "softmax": softmax,
    "layernorm": layernorm,
}
