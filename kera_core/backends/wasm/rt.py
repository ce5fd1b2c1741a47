"""Scalar operations, conversions, reductions and the allocator, as WebAssembly text.

Expressions are folded S-expressions over their operands (which are themselves
expressions without side effects that may be evaluated once). Anything that needs an
operand twice becomes a small helper function, emitted once per module on demand.
"""

from __future__ import annotations

from kera_core.ir.types import Prim

HEAP_BASE = 1024

ALLOC = """\
  (func $kera_fail (param $code i32)
    (global.set $err (local.get $code))
    unreachable)
  (func $kera_alloc (export "kera_alloc") (param $n i64) (result i32)
    (local $p i32) (local $end i64) (local $have i64)
    (local.set $p (i32.and (i32.add (global.get $hp) (i32.const 15)) (i32.const -16)))
    (local.set $end (i64.add (i64.extend_i32_u (local.get $p)) (local.get $n)))
    (if (i64.gt_u (local.get $end) (i64.const 4294901760)) (then (call $kera_fail (i32.const 9))))
    (local.set $have (i64.shl (i64.extend_i32_u (memory.size)) (i64.const 16)))
    (if (i64.gt_u (local.get $end) (local.get $have))
      (then
        (if (i32.eq (memory.grow (i32.wrap_i64 (i64.shr_u
              (i64.add (i64.sub (local.get $end) (local.get $have)) (i64.const 65535))
              (i64.const 16)))) (i32.const -1))
          (then (call $kera_fail (i32.const 9))))))
    (global.set $hp (i32.wrap_i64 (local.get $end)))
    (local.get $p))"""


def _w(p: Prim) -> str:
    """The WebAssembly value type of a scalar."""
    if p.is_float:
        return p.name
    return "i64" if p.bits == 64 else "i32"


def _norm(p: Prim, e: str) -> str:
    from kera_core.backends.wasm.emit import norm

    return norm(p, e)


def _helper(mod, name: str, text: str) -> str:
    if name not in mod.helpers:
        mod.helpers[name] = text
    return name


def canon(p: Prim, e: str, local: str) -> str:
    nan = "(f32.reinterpret_i32 (i32.const 2143289344))"
    if p.name == "f64":
        nan = "(f64.reinterpret_i64 (i64.const 9221120237041090560))"
    return f"(select {nan} {e} ({p.name}.ne (local.get {local}) (local.get {local})))"


_FLOAT_BIN = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "minimum": "min",
    "maximum": "max",
}
_INT_WRAP = {"add": "add", "sub": "sub", "mul": "mul", "and": "and", "or": "or", "xor": "xor"}
_CMP = {"eq": "eq", "ne": "ne"}
_ORD = {"lt", "le", "gt", "ge"}


def scalar(mod, op: str, p: Prim, *a: str) -> str:
    """One elementwise operation on scalars of element type ``p``."""
    w = _w(p)
    if p.is_float:
        if op in _FLOAT_BIN:
            return f"({w}.{_FLOAT_BIN[op]} {a[0]} {a[1]})"
        if op in _CMP:
            return f"({w}.{_CMP[op]} {a[0]} {a[1]})"
        if op in _ORD:
            return f"({w}.{op} {a[0]} {a[1]})"
        if op in ("neg", "abs", "sqrt"):
            return f"({w}.{op} {a[0]})"
        if op == "rem":
            return fmod(mod, p, a[0], a[1])
        if op in ("exp", "log", "tanh", "sigmoid"):
            return math(mod, op, p, a[0])
        if op == "fma":
            return fma(mod, p, a[0], a[1], a[2])
        raise AssertionError(f"`{op}` is refused by support.unsupported")
    sg = "s" if p.is_signed else "u"
    if op in _INT_WRAP or op in ("land", "lor"):
        o = {"land": "and", "lor": "or"}.get(op, _INT_WRAP.get(op))
        return _norm(p, f"({w}.{o} {a[0]} {a[1]})")
    if op in _CMP:
        return f"({w}.{_CMP[op]} {a[0]} {a[1]})"
    if op in _ORD:
        return f"({w}.{op}_{sg} {a[0]} {a[1]})"
    if op in ("minimum", "maximum"):  # operands are normalised, so the result is too
        name = f"${op}_{w}_{sg}"
        cmp = "lt" if op == "minimum" else "gt"
        text = f"""\
      (func {name} (param $a {w}) (param $b {w}) (result {w})
        (select (local.get $a) (local.get $b) ({w}.{cmp}_{sg} (local.get $a) (local.get $b))))"""
        return f"(call {_helper(mod, name, text)} {a[0]} {a[1]})"
    if op == "neg":
        return _norm(p, f"({w}.sub ({w}.const 0) {a[0]})")
    if op == "not":
        if p.name == "bool":
            return f"(i32.xor {a[0]} (i32.const 1))"
        return _norm(p, f"({w}.xor {a[0]} ({w}.const -1))")
    if op in ("shl", "shr"):
        cnt = f"({w}.and {a[1]} ({w}.const {p.bits - 1}))"
        if op == "shl":
            return _norm(p, f"({w}.shl {a[0]} {cnt})")
        return f"({w}.shr_{sg} {a[0]} {cnt})"
    if op == "abs":
        name = f"$abs_{w}"
        text = f"""\
  (func {name} (param $a {w}) (result {w})
    (select ({w}.sub ({w}.const 0) (local.get $a)) (local.get $a)
      ({w}.lt_s (local.get $a) ({w}.const 0))))"""
        if not p.is_signed:
            return a[0]
        return _norm(p, f"(call {_helper(mod, name, text)} {a[0]})")
    if op in ("div", "rem"):
        name = f"${op}_{w}_{sg}"
        if sg == "u":
            body = f"({w}.{op}_u (local.get $a) (local.get $b))"
        elif op == "div":  # MIN / -1 wraps to MIN (= 0 - MIN)
            body = (
                f"(if (result {w}) ({w}.eq (local.get $b) ({w}.const -1)) "
                f"(then ({w}.sub ({w}.const 0) (local.get $a))) "
                f"(else ({w}.div_s (local.get $a) (local.get $b))))"
            )
        else:  # MIN % -1 is 0
            body = (
                f"(if (result {w}) ({w}.eq (local.get $b) ({w}.const -1)) "
                f"(then ({w}.const 0)) (else ({w}.rem_s (local.get $a) (local.get $b))))"
            )
        text = f"""\
  (func {name} (param $a {w}) (param $b {w}) (result {w})
    (if ({w}.eqz (local.get $b)) (then (call $kera_fail (i32.const 2))))
    {body})"""
        return _norm(p, f"(call {_helper(mod, name, text)} {a[0]} {a[1]})")
    raise AssertionError(f"`{op}` is refused by support.unsupported")


def cast(mod, src: Prim, to: Prim, a: str) -> str:
    """``a as to`` (docs/semantics.md §5)."""
    ws, wt = _w(src), _w(to)
    if to.is_float:
        if src.is_float:
            if src == to:
                return a
            return f"({wt}.{'promote' if wt == 'f64' else 'demote'}_{ws} {a})"
        sg = "s" if src.is_signed else "u"
        # WebAssembly's convert rounds to nearest even, from the full 64-bit value
        return f"({wt}.convert_{ws}_{sg} {a})"
    if src.is_float:
        sg = "s" if to.is_signed else "u"
        if to.bits >= 32:
            return f"({wt}.trunc_sat_{ws}_{sg} {a})"
        name = f"$f2{to.name}_{ws}"
        lo, hi = (
            (-(1 << (to.bits - 1)), (1 << (to.bits - 1)) - 1)
            if to.is_signed
            else (0, (1 << to.bits) - 1)
        )
        cmp = "s" if to.is_signed else "u"
        text = f"""\
  (func {name} (param $x {ws}) (result i32) (local $v i32)
    (local.set $v (i32.trunc_sat_{ws}_{sg} (local.get $x)))
    (if (i32.lt_{cmp} (local.get $v) (i32.const {lo})) (then (local.set $v (i32.const {lo}))))
    (if (i32.gt_{cmp} (local.get $v) (i32.const {hi})) (then (local.set $v (i32.const {hi}))))
    (local.get $v))"""
        return f"(call {_helper(mod, name, text)} {a})"
    # integer or bool -> integer: keep the low bits
    if ws == wt:
        return _norm(to, a)
    if wt == "i64":
        return f"(i64.extend_i32_{'s' if src.is_signed else 'u'} {a})"
    return _norm(to, f"(i32.wrap_i64 {a})")


def reduction(mod, op: str, p: Prim) -> str:
    """A helper ``(param ptr i32) (param n i32) (result …)`` for sum/max/min over ``p``."""
    w = _w(p)
    sz = 1 if p.name == "bool" else p.bits // 8
    from kera_core.backends.wasm.emit import load

    elem = load(p, f"(i32.add (local.get $a) (i32.mul (local.get $i) (i32.const {sz})))")
    name = f"${op}_{p.name}"
    if op == "sum" and not p.is_float:
        text = f"""\
  (func {name} (param $a i32) (param $n i32) (result {w}) (local $i i32) (local $s {w})
    (block $b (loop $l
      (br_if $b (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $s ({w}.add (local.get $s) {elem}))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    {_norm(p, "(local.get $s)")})"""
        return _helper(mod, name, text)
    if op in ("max", "min"):
        if p.is_float:
            from kera_core.backends.wasm import simd

            return simd.fold_helper(mod, op, p)
        sg = "s" if p.is_signed else "u"
        c = "gt" if op == "max" else "lt"
        comb = (
            f"(select (local.get $x) (local.get $s) ({w}.{c}_{sg} (local.get $x) (local.get $s)))"
        )
        text = f"""\
  (func {name} (param $a i32) (param $n i32) (result {w}) (local $i i32) (local $s {w}) (local $x {w})
    (if (i32.eqz (local.get $n)) (then (call $kera_fail (i32.const 4))))
    (local.set $s {load(p, "(local.get $a)")})
    (local.set $i (i32.const 1))
    (block $b (loop $l
      (br_if $b (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $x {elem})
      (local.set $s {comb})
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    (local.get $s))"""
        return _helper(mod, name, text)
    assert op == "sum"
    from kera_core.backends.wasm import simd

    return simd.sum_helper(mod, p)


# --- elementary functions: the step lists of docs/semantics.md §6 ----------------------


def _k(p: Prim, bits: int) -> str:
    from kera_core.backends.wasm.emit import const

    return const(p, bits)


def _g(name: str) -> str:
    return f"(local.get ${name})"


def _horner(p: Prim, w: str, t: str, coeffs, dst: str) -> list[str]:
    """u = c[-1]; u = c[j] + t*u for j descending (mul then add)."""
    lines = [f"(local.set ${dst} {_k(p, coeffs[-1])})"]
    for b in reversed(coeffs[:-1]):
        lines.append(f"(local.set ${dst} ({w}.add {_k(p, b)} ({w}.mul {t} {_g(dst)})))")
    return lines


def _horner_high_first(p: Prim, w: str, t: str, coeffs, dst: str) -> list[str]:
    """u = c[0]; u = u*t + c[j] for j ascending (Cephes' polevl order)."""
    lines = [f"(local.set ${dst} {_k(p, coeffs[0])})"]
    for b in coeffs[1:]:
        lines.append(f"(local.set ${dst} ({w}.add ({w}.mul {_g(dst)} {t}) {_k(p, b)}))")
    return lines


def _consts(p: Prim):
    from kera_core.interp.mathfns import CONSTS

    return CONSTS[p.name]


def _func(name: str, w: str, locals_: list[str], body: list[str], result: str) -> str:
    decl = " ".join(f"(local ${n} {t})" for n, t in (x.split(":") for x in locals_))
    inner = "\n".join("    " + b for b in body)
    return f"  (func {name} (param $x {w}) (result {w}) {decl}\n{inner}\n    {result})"


def _scaleb(p: Prim, y: str, k: str) -> str:
    """y * 2**k rounded once (§6.1), k an i32 (f32) or i64 (f64) local expression."""
    w = p.name
    iw = "i32" if w == "f32" else "i64"
    mant, bias = (23, 127) if w == "f32" else (52, 1023)
    emin, emax = 1 - bias, bias

    def pow2(j: str) -> str:
        return f"({w}.reinterpret_{iw} ({iw}.shl ({iw}.add {j} ({iw}.const {bias})) ({iw}.const {mant})))"

    mid = f"({w}.mul {y} {pow2(k)})"
    low = (
        f"({w}.mul ({w}.mul {y} {pow2(f'({iw}.add {k} ({iw}.const 64))')}) "
        f"{pow2(f'({iw}.const -64)')})"
    )
    high = f"({w}.mul ({w}.mul {y} ({w}.const 2)) {pow2(f'({iw}.sub {k} ({iw}.const 1))')})"
    return (
        f"(if (result {w}) ({iw}.lt_s {k} ({iw}.const {emin})) (then {low}) (else "
        f"(if (result {w}) ({iw}.gt_s {k} ({iw}.const {emax})) (then {high}) (else {mid}))))"
    )


def math(mod, op: str, p: Prim, a: str) -> str:
    """A call of Kera's `exp`/`log`/`tanh`/`sigmoid` helper on ``a``."""
    name = f"${op}_{p.name}"
    if name not in mod.helpers:
        if op in ("tanh", "sigmoid"):
            math(mod, "exp", p, "(local.get $x)")  # emitted first: they call it
        mod.helpers[name] = {"exp": _exp, "log": _log, "tanh": _tanh, "sigmoid": _sigmoid}[op](
            p, name
        )
    return f"(call {name} {a})"


def _exp(p: Prim, name: str) -> str:
    w = p.name
    iw = "i32" if w == "f32" else "i64"
    c = _consts(p)
    x = _g("x")
    body = [
        f"(local.set $sp (i32.or (i32.or ({w}.gt {x} {_k(p, c.exp_over)}) "
        f"({w}.lt {x} {_k(p, c.exp_under)})) ({w}.ne {x} {x})))",
        f"(local.set $xs (select ({w}.const 0) {x} (local.get $sp)))",
        f"(local.set $kf ({w}.nearest ({w}.mul {_g('xs')} {_k(p, c.inv_ln2)})))",
        f"(local.set $hi ({w}.sub {_g('xs')} ({w}.mul {_g('kf')} {_k(p, c.ln2_hi)})))",
        f"(local.set $lo ({w}.mul {_g('kf')} {_k(p, c.ln2_lo)}))",
        f"(local.set $r ({w}.sub {_g('hi')} {_g('lo')}))",
        f"(local.set $t ({w}.mul {_g('r')} {_g('r')}))",
        *_horner(p, w, _g("t"), c.exp_p, "u"),
        f"(local.set $c ({w}.sub {_g('r')} ({w}.mul {_g('t')} {_g('u')})))",
        f"(local.set $y ({w}.sub ({w}.const 1) ({w}.sub ({w}.sub {_g('lo')} ({w}.div "
        f"({w}.mul {_g('r')} {_g('c')}) ({w}.sub ({w}.const 2) {_g('c')}))) {_g('hi')})))",
        f"(local.set $k ({iw}.trunc_sat_{w}_s {_g('kf')}))",
        f"(local.set $y {_scaleb(p, _g('y'), _g('k'))})",
        f"(local.set $y (select ({w}.const inf) {_g('y')} ({w}.gt {x} {_k(p, c.exp_over)})))",
        f"(local.set $y (select ({w}.const 0) {_g('y')} ({w}.lt {x} {_k(p, c.exp_under)})))",
        f"(local.set $y (select {x} {_g('y')} ({w}.ne {x} {x})))",
    ]
    locs = ["sp:i32", f"k:{iw}"] + [
        f"{n}:{w}" for n in ("xs", "kf", "hi", "lo", "r", "t", "u", "c", "y")
    ]
    return _func(name, w, locs, body, _g("y"))


def _log(p: Prim, name: str) -> str:
    w = p.name
    iw = "i32" if w == "f32" else "i64"
    mant, bias = (23, 127) if w == "f32" else (52, 1023)
    c = _consts(p)
    x = _g("x")
    body = [
        f"(local.set $xs (select ({w}.const 1) {x} (i32.or (i32.or ({w}.ne {x} {x}) "
        f"({w}.le {x} ({w}.const 0))) ({w}.eq {x} ({w}.const inf)))))",
        f"(local.set $sub ({w}.lt {_g('xs')} {_k(p, 1 << mant)}))",
        f"(local.set $xs (select ({w}.mul {_g('xs')} {_k(p, (c.sub_scale + bias) << mant)}) "
        f"{_g('xs')} {_g('sub')}))",
        f"(local.set $ix ({iw}.reinterpret_{w} {_g('xs')}))",
        f"(local.set $e ({iw}.sub ({iw}.sub ({iw}.shr_u {_g('ix')} ({iw}.const {mant})) "
        f"({iw}.const {bias})) (select ({iw}.const {c.sub_scale}) ({iw}.const 0) {_g('sub')})))",
        f"(local.set $m ({w}.reinterpret_{iw} ({iw}.or ({iw}.and {_g('ix')} "
        f"({iw}.const {(1 << mant) - 1})) ({iw}.const {bias << mant}))))",
        f"(local.set $big ({w}.ge {_g('m')} {_k(p, c.sqrt2)}))",
        f"(local.set $m (select ({w}.mul {_g('m')} ({w}.const 0.5)) {_g('m')} {_g('big')}))",
        f"(local.set $e ({iw}.add {_g('e')} (select ({iw}.const 1) ({iw}.const 0) {_g('big')})))",
        f"(local.set $f ({w}.sub {_g('m')} ({w}.const 1)))",
        f"(local.set $s ({w}.div {_g('f')} ({w}.add ({w}.const 2) {_g('f')})))",
        f"(local.set $dk ({w}.convert_{iw}_s {_g('e')}))",
        f"(local.set $z ({w}.mul {_g('s')} {_g('s')}))",
        f"(local.set $w ({w}.mul {_g('z')} {_g('z')}))",
        *_horner(p, w, _g("w"), c.log_lg_even, "t1"),
        f"(local.set $t1 ({w}.mul {_g('w')} {_g('t1')}))",
        *_horner(p, w, _g("w"), c.log_lg_odd, "t2"),
        f"(local.set $t2 ({w}.mul {_g('z')} {_g('t2')}))",
        f"(local.set $rr ({w}.add {_g('t2')} {_g('t1')}))",
        f"(local.set $h ({w}.mul ({w}.mul ({w}.const 0.5) {_g('f')}) {_g('f')}))",
        f"(local.set $y ({w}.sub ({w}.mul {_g('dk')} {_k(p, c.ln2_hi)}) ({w}.sub ({w}.sub "
        f"{_g('h')} ({w}.add ({w}.mul {_g('s')} ({w}.add {_g('h')} {_g('rr')})) "
        f"({w}.mul {_g('dk')} {_k(p, c.ln2_lo)}))) {_g('f')})))",
        f"(local.set $y (select ({w}.const -inf) {_g('y')} ({w}.eq {x} ({w}.const 0))))",
        f"(local.set $y (select ({w}.const inf) {_g('y')} ({w}.eq {x} ({w}.const inf))))",
        f"(local.set $y (select ({w}.const nan) {_g('y')} (i32.or ({w}.ne {x} {x}) "
        f"({w}.lt {x} ({w}.const 0)))))",
    ]
    locs = ["sub:i32", "big:i32", f"ix:{iw}", f"e:{iw}"] + [
        f"{n}:{w}" for n in ("xs", "m", "f", "s", "dk", "z", "w", "t1", "t2", "rr", "h", "y")
    ]
    return _func(name, w, locs, body, _g("y"))


def _tanh(p: Prim, name: str) -> str:
    w = p.name
    c = _consts(p)
    x = _g("x")
    one64 = 0x3FF0000000000000  # 1.0, the leading coefficient of Q
    if w == "f32":
        small = [
            *_horner_high_first(p, w, _g("s"), c.tanh_p, "n"),
            f"(local.set $sm ({w}.add ({w}.mul ({w}.mul {_g('n')} {_g('s')}) {x}) {x}))",
        ]
    else:
        small = [
            *_horner_high_first(p, w, _g("s"), c.tanh_p, "n"),
            *_horner_high_first(p, w, _g("s"), (one64, *c.tanh_q), "d"),
            f"(local.set $sm ({w}.add {x} ({w}.mul ({w}.mul {x} {_g('s')}) "
            f"({w}.div {_g('n')} {_g('d')}))))",
        ]
    body = [
        f"(local.set $a ({w}.abs {x}))",
        f"(local.set $s ({w}.mul {x} {x}))",
        *small,
        f"(local.set $e (call $exp_{w} (select ({w}.add {_g('a')} {_g('a')}) ({w}.const 0) "
        f"({w}.lt {_g('a')} {_k(p, c.tanh_one)}))))",
        f"(local.set $l ({w}.sub ({w}.const 1) ({w}.div ({w}.const 2) ({w}.add {_g('e')} ({w}.const 1)))))",
        f"(local.set $l (select ({w}.neg {_g('l')}) {_g('l')} ({w}.lt {x} ({w}.const 0))))",
        f"(local.set $y (select {_g('sm')} {_g('l')} ({w}.lt {_g('a')} {_k(p, c.tanh_small)})))",
        f"(local.set $y (select (select ({w}.const -1) ({w}.const 1) ({w}.lt {x} ({w}.const 0))) "
        f"{_g('y')} ({w}.ge {_g('a')} {_k(p, c.tanh_one)})))",
        f"(local.set $y (select {x} {_g('y')} ({w}.eq {x} ({w}.const 0))))",
        f"(local.set $y (select {x} {_g('y')} ({w}.ne {x} {x})))",
    ]
    locs = [f"{n}:{w}" for n in ("a", "s", "n", "d", "sm", "e", "l", "y")]
    return _func(name, w, locs, body, _g("y"))


def _sigmoid(p: Prim, name: str) -> str:
    w = p.name
    x = _g("x")
    body = [
        f"(local.set $e (call $exp_{w} ({w}.neg ({w}.abs {x}))))",
        f"(local.set $d ({w}.add ({w}.const 1) {_g('e')}))",
        f"(local.set $y ({w}.div (select ({w}.const 1) {_g('e')} ({w}.ge {x} ({w}.const 0))) {_g('d')}))",
    ]
    return _func(name, w, ["e:" + w, "d:" + w, "y:" + w], body, _g("y"))


def fmod(mod, p: Prim, a: str, b: str) -> str:
    """Float `%`: C `fmod`, exact (docs/semantics.md §5) — musl's integer long division.

    NaN for `y = ±0`, NaN operands or infinite `x`; `x` itself when `|x| < |y|` (so
    `x % inf = x`); otherwise the mantissas are normalised (subnormals shifted up) and the
    remainder is found by shift-and-subtract over the exponent difference, renormalised
    and given `x`'s sign. Every step is integer arithmetic, so the result is exact.
    """
    w = p.name
    W = p.bits
    M = 23 if W == 32 else 52
    E = (1 << (W - M - 1)) - 1
    iw = "i32" if W == 32 else "i64"
    sh = (lambda e: e) if W == 32 else (lambda e: f"(i64.extend_i32_s {e})")
    one = f"({iw}.const {1 << M})"
    mask = f"({iw}.const {(1 << M) - 1})"
    sign = "-2147483648" if W == 32 else "-9223372036854775808"
    nan = f"({w}.reinterpret_{iw} ({iw}.const {0x7FC00000 if W == 32 else 0x7FF8000000000000}))"
    zero = f"(return ({w}.reinterpret_{iw} (local.get $sx)))"
    top = f"({iw}.const {W - 1})"
    exp_of = lambda u: (  # noqa: E731
        f"({iw}.and ({iw}.shr_u (local.get {u}) ({iw}.const {M})) ({iw}.const {E}))"
    )
    if W == 64:
        exp_of_ = exp_of
        exp_of = lambda u: f"(i32.wrap_i64 {exp_of_(u)})"  # noqa: E731

    def normalise(u: str, e: str) -> str:
        return f"""\
    (if (i32.eqz (local.get {e}))
      (then
        (local.set $i ({iw}.shl (local.get {u}) ({iw}.const {W - M})))
        (block $d (loop $l
          (br_if $d ({iw}.ne ({iw}.shr_u (local.get $i) {top}) ({iw}.const 0)))
          (local.set {e} (i32.sub (local.get {e}) (i32.const 1)))
          (local.set $i ({iw}.shl (local.get $i) ({iw}.const 1)))
          (br $l)))
        (local.set {u} ({iw}.shl (local.get {u}) {sh(f"(i32.sub (i32.const 1) (local.get {e}))")})))
      (else (local.set {u} ({iw}.or ({iw}.and (local.get {u}) {mask}) {one}))))"""

    step = f"""\
    (local.set $i ({iw}.sub (local.get $ux) (local.get $uy)))
    (if ({iw}.eqz ({iw}.shr_u (local.get $i) {top}))
      (then (if ({iw}.eqz (local.get $i)) (then {zero})) (local.set $ux (local.get $i))))"""
    name = f"$fmod_{w}"
    text = f"""\
  (func {name} (param $x {w}) (param $y {w}) (result {w})
    (local $ux {iw}) (local $uy {iw}) (local $i {iw}) (local $sx {iw}) (local $ex i32) (local $ey i32)
    (local.set $ux ({iw}.reinterpret_{w} (local.get $x)))
    (local.set $uy ({iw}.reinterpret_{w} (local.get $y)))
    (local.set $ex {exp_of("$ux")})
    (local.set $ey {exp_of("$uy")})
    (local.set $sx ({iw}.and (local.get $ux) ({iw}.const {sign})))
    (if (i32.or (i32.or ({iw}.eqz ({iw}.shl (local.get $uy) ({iw}.const 1)))
                        ({w}.ne (local.get $y) (local.get $y)))
                (i32.eq (local.get $ex) (i32.const {E})))
      (then (return {nan})))
    (if ({iw}.le_u ({iw}.shl (local.get $ux) ({iw}.const 1)) ({iw}.shl (local.get $uy) ({iw}.const 1)))
      (then
        (if ({iw}.eq ({iw}.shl (local.get $ux) ({iw}.const 1)) ({iw}.shl (local.get $uy) ({iw}.const 1)))
          (then {zero}))
        (return (local.get $x))))
{normalise("$ux", "$ex")}
{normalise("$uy", "$ey")}
    (block $d (loop $l
      (br_if $d (i32.le_s (local.get $ex) (local.get $ey)))
{step}
      (local.set $ux ({iw}.shl (local.get $ux) ({iw}.const 1)))
      (local.set $ex (i32.sub (local.get $ex) (i32.const 1)))
      (br $l)))
{step}
    (block $d (loop $l
      (br_if $d ({iw}.ne ({iw}.shr_u (local.get $ux) ({iw}.const {M})) ({iw}.const 0)))
      (local.set $ux ({iw}.shl (local.get $ux) ({iw}.const 1)))
      (local.set $ex (i32.sub (local.get $ex) (i32.const 1)))
      (br $l)))
    (if (i32.gt_s (local.get $ex) (i32.const 0))
      (then (local.set $ux ({iw}.or ({iw}.sub (local.get $ux) {one})
                                    ({iw}.shl {sh("(local.get $ex)")} ({iw}.const {M})))))
      (else (local.set $ux ({iw}.shr_u (local.get $ux) {sh("(i32.sub (i32.const 1) (local.get $ex))")}))))
    ({w}.reinterpret_{iw} ({iw}.or (local.get $ux) (local.get $sx))))"""
    return f"(call {_helper(mod, name, text)} {a} {b})"


def fma(mod, p: Prim, a: str, b: str, c: str) -> str:
    """`fma(a, b, c)`: a*b + c rounded once, as the interpreter does it (fp._fma32, fp._fma64).

    f32: the product of two f32 is exact in f64; the sum p + c is rounded to f64 *to odd*
    (round-to-nearest, then TwoSum's error sets the last bit when the sum was inexact),
    and the demotion to f32 then rounds correctly (53 >= 24 + 2). Infinite or NaN sums
    are left as they are. f64: `$fma_f64`, exact integer arithmetic (see `_FMA64`).
    """
    if p.name == "f64":
        return f"(call {_helper(mod, '$fma_f64', _FMA64)} {a} {b} {c})"
    name = "$fma_f32"
    text = """\
  (func $fma_f32 (param $a f32) (param $b f32) (param $c f32) (result f32)
    (local $p f64) (local $c64 f64) (local $s f64) (local $bb f64) (local $e f64) (local $sb i64)
    (local.set $p (f64.mul (f64.promote_f32 (local.get $a)) (f64.promote_f32 (local.get $b))))
    (local.set $c64 (f64.promote_f32 (local.get $c)))
    (local.set $s (f64.add (local.get $p) (local.get $c64)))
    (local.set $bb (f64.sub (local.get $s) (local.get $p)))
    (local.set $e (f64.add (f64.sub (local.get $p) (f64.sub (local.get $s) (local.get $bb)))
                           (f64.sub (local.get $c64) (local.get $bb))))
    (local.set $sb (i64.reinterpret_f64 (local.get $s)))
    (if (i32.and (i32.and (f64.ne (local.get $e) (f64.const 0))
                          (i64.eqz (i64.and (local.get $sb) (i64.const 1))))
                 (f64.lt (f64.abs (local.get $s)) (f64.const inf)))
      (then
        (local.set $s (f64.reinterpret_i64
          (select (i64.add (local.get $sb) (i64.const 1)) (i64.sub (local.get $sb) (i64.const 1))
            (i32.eq (f64.gt (local.get $e) (f64.const 0)) (f64.gt (local.get $s) (f64.const 0))))))))
    (f32.demote_f64 (local.get $s)))"""
    return f"(call {_helper(mod, name, text)} {a} {b} {c})"


def _g64(x: str) -> str:
    return f"(local.get ${x})"


def _fma64_unpack(x: str) -> str:
    """$m{x}, $e{x} := an integer significand with its leading bit at bit 52 (0 for a zero)
    and the exponent of its last bit: the finite f64 $i{x} is m * 2^e."""
    m, e, i = f"$m{x}", f"$e{x}", f"$i{x}"
    return f"""\
    (local.set {e} (i64.and (i64.shr_u (local.get {i}) (i64.const 52)) (i64.const 2047)))
    (local.set {m} (i64.and (local.get {i}) (i64.const 4503599627370495)))
    (if (i64.eqz (local.get {e}))
      (then (local.set {e} (i64.const 1)))
      (else (local.set {m} (i64.or (local.get {m}) (i64.const 4503599627370496)))))
    (local.set $t (i64.sub (i64.clz (local.get {m})) (i64.const 11)))
    (local.set {m} (i64.shl (local.get {m}) (local.get $t)))
    (local.set {e} (i64.sub (i64.sub (local.get {e}) (i64.const 1075)) (local.get $t)))"""


def _fma64_shr(h: str, lo: str) -> str:
    """(${h}, ${lo}) >>= $n (an unsigned 128-bit shift, $n >= 0); the bits shifted out are
    or-ed into $st as 1."""
    H, L, n = _g64(h), _g64(lo), "(local.get $n)"
    nz = "(i64.extend_i32_u (i64.ne {} (i64.const 0)))"
    mask = "(i64.sub (i64.shl (i64.const 1) {}) (i64.const 1))"
    n64 = f"(i64.sub {n} (i64.const 64))"
    return f"""\
    (if (i64.ge_u {n} (i64.const 128))
      (then
        (local.set $st (i64.or (local.get $st) {nz.format(f"(i64.or {H} {L})")}))
        (local.set ${h} (i64.const 0))
        (local.set ${lo} (i64.const 0)))
      (else (if (i64.ge_u {n} (i64.const 64))
        (then
          (local.set $st (i64.or (local.get $st)
            {nz.format(f"(i64.or {L} (i64.and {H} {mask.format(n64)}))")}))
          (local.set ${lo} (i64.shr_u {H} {n64}))
          (local.set ${h} (i64.const 0)))
        (else
          (local.set $st (i64.or (local.get $st) {nz.format(f"(i64.and {L} {mask.format(n)})")}))
          (local.set ${lo} (i64.or (i64.shr_u {L} {n})
            (i64.shl (i64.shl {H} (i64.const 1)) (i64.sub (i64.const 63) {n}))))
          (local.set ${h} (i64.shr_u {H} {n}))))))"""


def _fma64_swap(x: str, y: str) -> str:
    return (
        f"(local.set $t (local.get ${x})) (local.set ${x} (local.get ${y}))"
        f" (local.set ${y} (local.get $t))"
    )


# fma on f64 with integers. NaN, infinite or zero a/b, or NaN c: a*b + c in f64 is already
# exact (IEEE); infinite c (a, b finite): c. Otherwise a = ma*2^ea, b = mb*2^eb, c = mc*2^ec
# with 53-bit significands (subnormals normalised, mc = 0 for a zero c). The product
# ma*mb (< 2^106, 64x64 -> 128 bits from 32-bit halves) and mc are both placed with their
# leading bit at bit 125 of 128 (x = the larger magnitude, y the other); y is shifted right
# to x's exponent with the bits shifted out kept as a sticky bit st, and
# r = x + y or x - y - st (exact: the true sum lies in [r, r + 1) units, = r iff st = 0;
# st = 1 only when the shift is > 20, so r still has >= 124 bits). r = 0: exact
# cancellation, +0. Then q, the bit of r that becomes the f64's last bit (the leading bit
# minus 52, or the one worth 2^-1074 when the result is subnormal), round to nearest even
# on bit q-1 and the bits below it (and st), and the bits are (field << 52) + m, so that a
# rounding carry moves into the exponent (and onto inf); a field >= 2046 is an overflow.
_FMA64_LOCALS = (
    "ia ib ic ma mb mc ea eb ec sx sy xh xl ex yh yl ey t n st rh rl q ef m a0 a1 b0 b1 lo mid"
).split()
_FMA64 = f"""\
  (func $fma_f64 (param $a f64) (param $b f64) (param $c f64) (result f64)
    {" ".join(f"(local ${v} i64)" for v in _FMA64_LOCALS)}
    (if (i32.or (i32.or (i32.eqz (f64.lt (f64.abs (local.get $a)) (f64.const inf)))
                        (i32.eqz (f64.lt (f64.abs (local.get $b)) (f64.const inf))))
                (i32.or (f64.ne (local.get $c) (local.get $c))
                        (i32.or (f64.eq (local.get $a) (f64.const 0))
                                (f64.eq (local.get $b) (f64.const 0)))))
      (then (return (f64.add (f64.mul (local.get $a) (local.get $b)) (local.get $c)))))
    (if (f64.eq (f64.abs (local.get $c)) (f64.const inf)) (then (return (local.get $c))))
    (local.set $ia (i64.reinterpret_f64 (local.get $a)))
    (local.set $ib (i64.reinterpret_f64 (local.get $b)))
    (local.set $ic (i64.reinterpret_f64 (local.get $c)))
{_fma64_unpack("a")}
{_fma64_unpack("b")}
{_fma64_unpack("c")}
    (local.set $a0 (i64.and (local.get $ma) (i64.const 4294967295)))
    (local.set $a1 (i64.shr_u (local.get $ma) (i64.const 32)))
    (local.set $b0 (i64.and (local.get $mb) (i64.const 4294967295)))
    (local.set $b1 (i64.shr_u (local.get $mb) (i64.const 32)))
    (local.set $lo (i64.mul (local.get $a0) (local.get $b0)))
    (local.set $mid (i64.add (i64.mul (local.get $a1) (local.get $b0))
                             (i64.mul (local.get $a0) (local.get $b1))))
    (local.set $xl (i64.add (local.get $lo) (i64.shl (local.get $mid) (i64.const 32))))
    (local.set $xh (i64.add (i64.add (i64.mul (local.get $a1) (local.get $b1))
                                     (i64.shr_u (local.get $mid) (i64.const 32)))
                            (i64.extend_i32_u (i64.lt_u (local.get $xl) (local.get $lo)))))
    (local.set $t (i64.sub (i64.clz (local.get $xh)) (i64.const 2)))
    (local.set $xh (i64.or (i64.shl (local.get $xh) (local.get $t))
                           (i64.shr_u (local.get $xl) (i64.sub (i64.const 64) (local.get $t)))))
    (local.set $xl (i64.shl (local.get $xl) (local.get $t)))
    (local.set $ex (i64.sub (i64.add (local.get $ea) (local.get $eb)) (local.get $t)))
    (local.set $sx (i64.and (i64.xor (local.get $ia) (local.get $ib)) (i64.const 0x8000000000000000)))
    (local.set $yh (i64.shl (local.get $mc) (i64.const 9)))
    (local.set $yl (i64.const 0))
    (local.set $ey (select (i64.const -100000) (i64.sub (local.get $ec) (i64.const 73))
                           (i64.eqz (local.get $mc))))
    (local.set $sy (i64.and (local.get $ic) (i64.const 0x8000000000000000)))
    (if (i32.or (i64.gt_s (local.get $ey) (local.get $ex))
                (i32.and (i64.eq (local.get $ey) (local.get $ex))
                         (i32.or (i64.gt_u (local.get $yh) (local.get $xh))
                                 (i32.and (i64.eq (local.get $yh) (local.get $xh))
                                          (i64.gt_u (local.get $yl) (local.get $xl))))))
      (then
        {_fma64_swap("xh", "yh")} {_fma64_swap("xl", "yl")}
        {_fma64_swap("ex", "ey")} {_fma64_swap("sx", "sy")}))
    (local.set $n (i64.sub (local.get $ex) (local.get $ey)))
    (local.set $st (i64.const 0))
{_fma64_shr("yh", "yl")}
    (if (i64.eq (local.get $sx) (local.get $sy))
      (then
        (local.set $rl (i64.add (local.get $xl) (local.get $yl)))
        (local.set $rh (i64.add (i64.add (local.get $xh) (local.get $yh))
                                (i64.extend_i32_u (i64.lt_u (local.get $rl) (local.get $xl))))))
      (else
        (local.set $rl (i64.sub (local.get $xl) (local.get $yl)))
        (local.set $rh (i64.sub (i64.sub (local.get $xh) (local.get $yh))
                                (i64.extend_i32_u (i64.lt_u (local.get $xl) (local.get $yl)))))
        (local.set $rh (i64.sub (local.get $rh)
                                (i64.extend_i32_u (i64.lt_u (local.get $rl) (local.get $st)))))
        (local.set $rl (i64.sub (local.get $rl) (local.get $st)))))
    (if (i64.eqz (i64.or (local.get $rh) (local.get $rl))) (then (return (f64.const 0))))
    (local.set $q (i64.sub (i64.const 75)
      (select (i64.clz (local.get $rh)) (i64.add (i64.const 64) (i64.clz (local.get $rl)))
              (i64.ne (local.get $rh) (i64.const 0)))))
    (local.set $t (i64.sub (i64.const -1074) (local.get $ex)))
    (if (i64.gt_s (local.get $t) (local.get $q)) (then (local.set $q (local.get $t))))
    (local.set $ef (i64.add (i64.add (local.get $q) (local.get $ex)) (i64.const 1074)))
    (if (i64.ge_s (local.get $ef) (i64.const 2046))
      (then (return (f64.reinterpret_i64
        (i64.or (local.get $sx) (i64.const 0x7FF0000000000000))))))
    (if (i64.le_s (local.get $q) (i64.const 0))
      (then (local.set $m (i64.shl (local.get $rl) (i64.sub (i64.const 0) (local.get $q)))))
      (else
        (local.set $n (i64.sub (local.get $q) (i64.const 1)))
{_fma64_shr("rh", "rl")}
        (local.set $m (i64.shr_u (local.get $rl) (i64.const 1)))
        (if (i32.and (i32.wrap_i64 (local.get $rl))
                     (i64.ne (i64.or (local.get $st) (i64.and (local.get $m) (i64.const 1)))
                             (i64.const 0)))
          (then (local.set $m (i64.add (local.get $m) (i64.const 1)))))))
    (f64.reinterpret_i64 (i64.or (local.get $sx)
      (i64.add (i64.shl (local.get $ef) (i64.const 52)) (local.get $m)))))"""
