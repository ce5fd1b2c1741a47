"""128-bit SIMD: lane-wise float operations, the canonical sum, folds and NaN canonicalisation.

Only core SIMD128 instructions whose every result is fully specified are used — never
relaxed SIMD. A lane-wise `f32x4`/`f64x2` instruction rounds each lane exactly as the
scalar instruction does, so a vector loop computes the same bits as the scalar loop it
replaces (NaN *bits* aside: WebAssembly leaves them open in both, and the export
canonicalises every float it hands back).

The canonical `sum` of docs/semantics.md §7.1 fits SIMD exactly: lane `j` of a tile
accumulates the elements `i ≡ j (mod 16)` in increasing order, so four `f32x4` (eight
`f64x2`) accumulators that each load the next 16 consecutive elements are the 16 lanes.
"""

from __future__ import annotations

from collections.abc import Callable

from kera_core.backends.wasm import rt
from kera_core.ir.types import Prim

#: Kera op → lane-wise instruction suffix (the same IEEE operation as the scalar one).
BINARY = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "minimum": "min",
    "maximum": "max",
}
UNARY = {"neg": "neg", "abs": "abs", "sqrt": "sqrt"}
MATH = {"exp", "log", "tanh", "sigmoid"}


def shape(p: Prim) -> str:
    """The vector shape of float element type ``p``: `f32x4` or `f64x2`."""
    return "f32x4" if p.name == "f32" else "f64x2"


def lanes(p: Prim) -> int:
    return 128 // p.bits


def log2_size(p: Prim) -> int:
    return 2 if p.bits == 32 else 3


def is_vector_float(p: Prim) -> bool:
    return p.name in ("f32", "f64")


def math_available(op: str, p: Prim) -> bool:
    """Whether a vector version of elementary function ``op`` exists (simd_math.py)."""
    try:
        from kera_core.backends.wasm import simd_math
    except ImportError:  # pragma: no cover - the module is part of the package
        return False
    return op in MATH and hasattr(simd_math, "vmath")


def op(mod, name: str, p: Prim, *a: str) -> str:
    """The v128 expression of elementwise op ``name`` on vector operands ``a``."""
    s = shape(p)
    if name in BINARY:
        return f"({s}.{BINARY[name]} {a[0]} {a[1]})"
    if name in UNARY:
        return f"({s}.{UNARY[name]} {a[0]})"
    if name in MATH:
        from kera_core.backends.wasm import simd_math

        return simd_math.vmath(mod, name, p, a[0])
    raise AssertionError(f"`{name}` has no vector form")


def vectorizable_op(name: str, p: Prim) -> bool:
    return is_vector_float(p) and (
        name in BINARY or name in UNARY or (name in MATH and math_available(name, p))
    )


def splat(p: Prim, e: str) -> str:
    """A v128 with every lane equal to scalar ``e`` of type ``p`` (any element type)."""
    if p.is_float:
        return f"({shape(p)}.splat {e})"
    size = 1 if p.name == "bool" else p.bits // 8
    return f"({ {1: 'i8x16', 2: 'i16x8', 4: 'i32x4', 8: 'i64x2'}[size] }.splat {e})"


def load(addr: str, offset: int = 0) -> str:
    off = f" offset={offset}" if offset else ""
    return f"(v128.load{off} {addr})"


def store(addr: str, v: str, offset: int = 0) -> str:
    off = f" offset={offset}" if offset else ""
    return f"(v128.store{off} {addr} {v})"


# --- the canonical sum ---------------------------------------------------------------


def tree_helper(mod, p: Prim) -> str:
    """``$tree_…(t, lo, hi)``: the left-complete tree over tile totals ``t[lo:hi]`` (§7.1)."""
    w = p.name
    sz = p.bits // 8
    name = f"$tree_{w}"
    return rt._helper(
        mod,
        name,
        f"""\
  (func {name} (param $t i32) (param $lo i32) (param $hi i32) (result {w}) (local $mid i32)
    (if (result {w}) (i32.eq (i32.sub (local.get $hi) (local.get $lo)) (i32.const 1))
      (then ({w}.load (i32.add (local.get $t) (i32.mul (local.get $lo) (i32.const {sz})))))
      (else
        (local.set $mid (i32.add (local.get $lo) (i32.shl (i32.const 1)
          (i32.sub (i32.const 31) (i32.clz (i32.sub (i32.sub (local.get $hi) (local.get $lo)) (i32.const 1)))))))
        ({w}.add (call {name} (local.get $t) (local.get $lo) (local.get $mid))
                 (call {name} (local.get $t) (local.get $mid) (local.get $hi))))))""",
    )


def canonical_sum(
    mod,
    p: Prim,
    n: str,
    vec_at: Callable[[str, int], str] | None,
    scal_at: Callable[[str], str],
    local: Callable[[str, str], str],
    label: Callable[[str], str],
) -> tuple[list[str], str]:
    """Lines computing the canonical float sum of ``n`` (an i32 expression) elements.

    ``scal_at(i)`` is element ``i`` (``i`` an i32 expression); ``vec_at(i, q)`` the v128
    of elements ``i + q·L … i + q·L + L − 1`` (L = 4 for f32, 2 for f64), or None when
    the elements cannot be computed lane-wise (then every lane is updated one element at
    a time). Returns the lines and the local holding the sum.
    """
    w = p.name
    sz = p.bits // 8
    q_count = 16 // lanes(p)
    tree = tree_helper(mod, p)
    mark = local("i32", "mark")
    nn, res, m, t, k, i, end = (
        local("i32", "sn"),
        local(w, "sum"),
        local("i32", "tiles"),
        local("i32", "tot"),
        local("i32", "tile"),
        local("i32", "si"),
        local("i32", "send"),
    )
    accs = [local("v128", "acc") for _ in range(q_count)] if vec_at else []
    vend = local("i32", "vend") if vec_at else None
    tb, tl, vb, vl, rb, rl = (label(h) for h in ("tb", "tl", "vb", "vl", "rb", "rl"))
    lane = f"(i32.mul (i32.and (local.get {i}) (i32.const 15)) (i32.const {sz}))"
    out = [
        f"(local.set {nn} {n})",
        f"(local.set {res} ({w}.const 0))",
        f"(if (i32.ne (local.get {nn}) (i32.const 0)) (then",
        f"  (local.set {m} (i32.shr_u (i32.add (local.get {nn}) (i32.const 1023)) (i32.const 10)))",
        f"  (local.set {mark} (global.get $hp))",
        f"  (local.set {t} (call $kera_alloc (i64.extend_i32_u (i32.mul (local.get {m}) (i32.const {sz})))))",
        f"  (local.set {k} (i32.const 0))",
        f"  (block {tb} (loop {tl}",
        f"    (br_if {tb} (i32.ge_u (local.get {k}) (local.get {m})))",
        f"    (local.set {i} (i32.shl (local.get {k}) (i32.const 10)))",
        f"    (local.set {end} (i32.add (local.get {i}) (i32.const 1024)))",
        f"    (if (i32.gt_u (local.get {end}) (local.get {nn})) (then (local.set {end} (local.get {nn}))))",
    ]
    if vec_at:
        out += [f"    (local.set {a} (v128.const i64x2 0 0))" for a in accs]
        out += [
            f"    (local.set {vend} (i32.add (local.get {i}) "
            f"(i32.and (i32.sub (local.get {end}) (local.get {i})) (i32.const -16))))",
            f"    (block {vb} (loop {vl}",
            f"      (br_if {vb} (i32.ge_u (local.get {i}) (local.get {vend})))",
        ]
        for q, a in enumerate(accs):
            out.append(
                f"      (local.set {a} ({shape(p)}.add (local.get {a}) {vec_at(f'(local.get {i})', q)}))"
            )
        out += [
            f"      (local.set {i} (i32.add (local.get {i}) (i32.const 16)))",
            f"      (br {vl})))",
        ]
        out += [
            f"    (v128.store (i32.const {16 * q}) (local.get {a}))" for q, a in enumerate(accs)
        ]
    else:
        out += [f"    ({w}.store (i32.const {j * sz}) ({w}.const 0))" for j in range(16)]
    out += [
        f"    (block {rb} (loop {rl}",
        f"      (br_if {rb} (i32.ge_u (local.get {i}) (local.get {end})))",
        f"      ({w}.store {lane} ({w}.add ({w}.load {lane}) {scal_at(f'(local.get {i})')}))",
        f"      (local.set {i} (i32.add (local.get {i}) (i32.const 1)))",
        f"      (br {rl})))",
    ]
    for width in (8, 4, 2, 1):  # the fixed lane tree
        for j in range(width):
            out.append(
                f"    ({w}.store (i32.const {j * sz}) ({w}.add ({w}.load (i32.const {j * sz})) "
                f"({w}.load (i32.const {(j + width) * sz}))))"
            )
    out += [
        f"    ({w}.store (i32.add (local.get {t}) (i32.mul (local.get {k}) (i32.const {sz}))) "
        f"({w}.load (i32.const 0)))",
        f"    (local.set {k} (i32.add (local.get {k}) (i32.const 1)))",
        f"    (br {tl})))",
        f"  (local.set {res} (call {tree} (local.get {t}) (i32.const 0) (local.get {m})))",
        f"  (global.set $hp (local.get {mark}))))",  # the tile totals are dead: free them
    ]
    return out, res


class _Locals:
    """Locals and labels of a helper function being generated."""

    def __init__(self) -> None:
        self.decl: list[str] = []
        self.n = 0

    def local(self, vt: str, hint: str) -> str:
        self.n += 1
        name = f"${hint}{self.n}"
        self.decl.append(f"(local {name} {vt})")
        return name

    def label(self, hint: str) -> str:
        self.n += 1
        return f"${hint}{self.n}"


def sum_helper(mod, p: Prim) -> str:
    """``$sum_…(a, n)``: the canonical sum of the ``n`` floats at address ``a``."""
    name = f"$sum_{p.name}"
    if name in mod.helpers:
        return name
    lg = log2_size(p)
    at = "(i32.add (local.get $a) (i32.shl {} (i32.const {})))"
    loc = _Locals()
    lines, res = canonical_sum(
        mod,
        p,
        "(local.get $n)",
        lambda i, q: load(at.format(i, lg), 16 * q),
        lambda i: f"({p.name}.load {at.format(i, lg)})",
        loc.local,
        loc.label,
    )
    body = "\n".join("    " + ln for ln in lines)
    text = (
        f"  (func {name} (param $a i32) (param $n i32) (result {p.name}) {' '.join(loc.decl)}\n"
        f"{body}\n    (local.get {res}))"
    )
    return rt._helper(mod, name, text)


def fold_helper(mod, which: str, p: Prim) -> str:
    """``$max_…`` / ``$min_…`` of ``n`` floats at ``a`` (R0004 when empty).

    IEEE 754-2019 maximum/minimum are commutative and associative on values (NaN
    propagates, −0 < +0), so a lane-wise fold then a fold of the lanes is the same value
    as the sequential fold.
    """
    name = f"${which}_{p.name}"
    w, s, lg, nl = p.name, shape(p), log2_size(p), lanes(p)
    at = f"(i32.add (local.get $a) (i32.shl (local.get $i) (i32.const {lg})))"
    comb = "\n".join(
        f"    (local.set $s ({w}.{which} (local.get $s) ({s}.extract_lane {j} (local.get $v))))"
        for j in range(nl)
    )
    text = f"""\
  (func {name} (param $a i32) (param $n i32) (result {w})
    (local $i i32) (local $vend i32) (local $v v128) (local $s {w})
    (if (i32.eqz (local.get $n)) (then (call $kera_fail (i32.const 4))))
    (local.set $s ({w}.load (local.get $a)))
    (local.set $v ({s}.splat (local.get $s)))
    (local.set $vend (i32.and (local.get $n) (i32.const {-nl})))
    (block $vb (loop $vl
      (br_if $vb (i32.ge_u (local.get $i) (local.get $vend)))
      (local.set $v ({s}.{which} (local.get $v) (v128.load {at})))
      (local.set $i (i32.add (local.get $i) (i32.const {nl})))
      (br $vl)))
{comb}
    (block $b (loop $l
      (br_if $b (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $s ({w}.{which} (local.get $s) ({w}.load {at})))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (local.get $s))"""
    return rt._helper(mod, name, text)


def canon_tensor(mod, p: Prim) -> str:
    """``$canon_…(a, n)``: every NaN among the ``n`` floats at ``a`` becomes the canonical NaN."""
    name = f"$canon_{p.name}"
    w, s, lg, nl = p.name, shape(p), log2_size(p), lanes(p)
    it = "i32x4" if p.bits == 32 else "i64x2"
    nan = "0x7fc00000" if p.bits == 32 else "0x7ff8000000000000"
    at = f"(i32.add (local.get $a) (i32.shl (local.get $i) (i32.const {lg})))"
    text = f"""\
  (func {name} (param $a i32) (param $n i32) (local $i i32) (local $vend i32) (local $v v128) (local $x {w})
    (local.set $vend (i32.and (local.get $n) (i32.const {-nl})))
    (block $vb (loop $vl
      (br_if $vb (i32.ge_u (local.get $i) (local.get $vend)))
      (local.set $v (v128.load {at}))
      (v128.store {at} (v128.bitselect ({it}.splat ({"i32" if p.bits == 32 else "i64"}.const {nan}))
        (local.get $v) ({s}.ne (local.get $v) (local.get $v))))
      (local.set $i (i32.add (local.get $i) (i32.const {nl})))
      (br $vl)))
    (block $b (loop $l
      (br_if $b (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $x ({w}.load {at}))
      ({w}.store {at} {rt.canon(p, "(local.get $x)", "$x")})
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l))))"""
    return rt._helper(mod, name, text)
