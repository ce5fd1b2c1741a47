"""Exact integer spellings of the primitives WebAssembly lacks: `fma` and float `rem`.

WebAssembly has no fused multiply-add outside relaxed SIMD (whose fusing is the engine's
choice) and no floating-point remainder; the loop program's `fma` (rounded once) and `rem`
(C `fmod`, exact) are helper functions of exact arithmetic, emitted once per module that
uses them (module.py). Tested bit for bit against the interpreter's `fp.fma` and numpy's
`fmod` (tests/test_wasm_fma64.py, tests/test_wasm_ops.py).
"""

from __future__ import annotations


def fmod_text(t: str) -> str:
    """Float `%`: C `fmod`, exact (docs/semantics.md §5) — musl's integer long division.

    NaN for `y = ±0`, NaN operands or infinite `x`; `x` itself when `|x| < |y|` (so
    `x % inf = x`); otherwise the mantissas are normalised (subnormals shifted up) and the
    remainder is found by shift-and-subtract over the exponent difference, renormalised
    and given `x`'s sign. Every step is integer arithmetic, so the result is exact.
    """
    w = t
    W = 32 if t == "f32" else 64
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
    return text


def fma_text(t: str) -> str:
    """`fma(a, b, c)`: a*b + c rounded once, as the interpreter does it (fp._fma32, fp._fma64).

    f32: the product of two f32 is exact in f64; the sum p + c is rounded to f64 *to odd*
    (round-to-nearest, then TwoSum's error sets the last bit when the sum was inexact),
    and the demotion to f32 then rounds correctly (53 >= 24 + 2). Infinite or NaN sums
    are left as they are. f64: `$fma_f64`, exact integer arithmetic (see `_FMA64`).
    """
    if t == "f64":
        return _FMA64
    return """\
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


TEXT = {
    "fma_f32": lambda: fma_text("f32"),
    "fma_f64": lambda: fma_text("f64"),
    "fmod_f32": lambda: fmod_text("f32"),
    "fmod_f64": lambda: fmod_text("f64"),
}
