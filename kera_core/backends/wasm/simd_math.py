"""`exp`, `log`, `tanh`, `sigmoid` on 128-bit vectors (f32x4 / f64x2), as WebAssembly text.

Lane by lane these compute exactly the step lists of docs/semantics.md §6, the same
operations in the same order as the scalar helpers of :mod:`rt` (``rt._exp`` …), so every
lane gives the scalar helper's bits (NaN: a NaN; its payload is left to the export's
canonicalisation). Only core SIMD128 is used — lane-wise IEEE arithmetic, ``nearest``,
comparisons giving lane masks, ``v128.bitselect`` and integer lane operations; no relaxed
SIMD and no fused multiply-add.

How the scalar code maps onto lanes:

* ``select(a, b, c)`` is ``v128.bitselect(a, b, mask)`` with the mask of the comparison
  ``c`` (all ones where true); ``c1 | c2`` is ``v128.or`` of the masks. Selecting ``+0``
  is ``v128.andnot`` / ``v128.and`` (the same bits). The final selects keep their order.
* Both sides of every scalar branch are computed and selected: the scalar code is
  straight-line already except for ``scaleB``'s three cases, which become one pair of
  multiplications ``(y × pow2(j1)) × pow2(j2)`` with per-lane exponents
  ``(j1, j2) = (k + 64, −64)`` for ``k < emin``, ``(1, k − 1)`` for ``k > emax`` and
  ``(k, 0)`` otherwise: the first two are the scalar products exactly (``pow2(1) = 2``),
  and the third is the scalar ``y × pow2(k)`` followed by an exact ``× 1``.
* ``pow2(j)`` is built from bits, ``(j + bias) << mantissa_bits`` in integer lanes.
* ``k`` (an integer-valued float from ``nearest``, |k| ≤ 1075) becomes integer lanes as
  ``bits(k + M) − bits(M)`` with ``M = 1.5·2^mantissa_bits``: the addition is exact and
  the low bits of the sum are ``k`` — the same value as the scalar ``trunc_sat``, with no
  f64 → i64 lane conversion (SIMD128 has none) and a little faster than
  ``i32x4.trunc_sat_f64x2_s_zero`` + ``i64x2.extend_low_i32x4_s`` (which also works).
  The case tests compare the float ``k`` with ``emin``/``emax`` (exact).
* ``log``'s ``float(e)`` is ``f32x4.convert_i32x4_s``; for f64 (no i64 → f64 lane
  conversion) ``(bits(M) + e) as float − M`` with ``M = 1.5·2^52``, exact for
  ``|e| < 2^51`` and ``+0`` for ``e = 0``, as the scalar conversion.
* tanh's f64 denominator starts ``1 × s + TQ0``; the exact ``1 × s`` is left out.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kera_core.backends.wasm import rt
from kera_core.ir.types import Prim


@dataclass(frozen=True)
class _Fmt:
    w: str  # f32 / f64
    f: str  # f32x4 / f64x2
    i: str  # i32x4 / i64x2
    lanes: int
    bits: int
    mant: int
    bias: int

    def bits_of(self, v: float) -> int:
        if self.bits == 32:
            return struct.unpack("<I", struct.pack("<f", v))[0]
        return struct.unpack("<Q", struct.pack("<d", v))[0]

    def ki(self, v: int) -> str:
        """A splat integer constant (lane value ``v`` modulo 2**bits)."""
        v &= (1 << self.bits) - 1
        if v >> (self.bits - 1):
            v -= 1 << self.bits
        shape = "i32x4" if self.bits == 32 else "i64x2"
        return f"(v128.const {shape} {' '.join([str(v)] * self.lanes)})"

    def kf(self, v: float) -> str:
        """A splat float constant."""
        return self.ki(self.bits_of(v))


_F32 = _Fmt("f32", "f32x4", "i32x4", 4, 32, 23, 127)
_F64 = _Fmt("f64", "f64x2", "i64x2", 2, 64, 52, 1023)


def _fmt(p: Prim) -> _Fmt:
    return {"f32": _F32, "f64": _F64}[p.name]


def _consts(p: Prim):
    from kera_core.interp.mathfns import CONSTS

    return CONSTS[p.name]


def _g(name: str) -> str:
    return f"(local.get ${name})"


def _set(name: str, e: str) -> str:
    return f"(local.set ${name} {e})"


def _sel(a: str, b: str, mask: str) -> str:
    """Lane-wise ``mask ? a : b``."""
    return f"(v128.bitselect {a} {b} {mask})"


def _or(*m: str) -> str:
    e = m[0]
    for x in m[1:]:
        e = f"(v128.or {e} {x})"
    return e


def _func(name: str, locals_: list[str], body: list[str], result: str) -> str:
    decl = " ".join(f"(local ${n} v128)" for n in locals_)
    inner = "\n".join("    " + b for b in body)
    return f"  (func {name} (param $x v128) (result v128) {decl}\n{inner}\n    {result})"


def _horner(F: _Fmt, t: str, coeffs, dst: str) -> list[str]:
    """u = c[-1]; u = c[j] + t*u for j descending (rt._horner)."""
    f = F.f
    lines = [_set(dst, F.ki(coeffs[-1]))]
    for b in reversed(coeffs[:-1]):
        lines.append(_set(dst, f"({f}.add {F.ki(b)} ({f}.mul {t} {_g(dst)}))"))
    return lines


def _horner_high_first(F: _Fmt, t: str, coeffs, dst: str) -> list[str]:
    """u = c[0]; u = u*t + c[j] for j ascending (rt._horner_high_first)."""
    f = F.f
    lines = [_set(dst, F.ki(coeffs[0]))]
    for b in coeffs[1:]:
        lines.append(_set(dst, f"({f}.add ({f}.mul {_g(dst)} {t}) {F.ki(b)})"))
    return lines


def _pow2(F: _Fmt, j: str) -> str:
    """2**j per lane from bits; j integer lanes in [emin, emax]."""
    return f"({F.i}.shl ({F.i}.add {j} {F.ki(F.bias)}) (i32.const {F.mant}))"


def _scaleb(F: _Fmt, y: str, kf: str) -> list[str]:
    """``$y = scaleB(y, k)`` (§6.1) with ``kf`` the integer-valued float k; uses $k $lw $hg $j1."""
    f, i = F.f, F.i
    emin, emax = 1 - F.bias, F.bias
    magic = 1.5 * 2.0**F.mant  # |k| < 2**(mant - 1): k is the low bits of k + magic
    k = f"({i}.sub ({f}.add {kf} {F.kf(magic)}) {F.kf(magic)})"
    return [
        _set("k", k),
        _set("lw", f"({f}.lt {kf} {F.kf(float(emin))})"),
        _set("hg", f"({f}.gt {kf} {F.kf(float(emax))})"),
        # low: (k + 64, -64); high: (1, k - 1); otherwise (k, 0)
        _set(
            "j1",
            _sel(f"({i}.add {_g('k')} {F.ki(64)})", _sel(F.ki(1), _g("k"), _g("hg")), _g("lw")),
        ),
        _set(
            "k",
            _sel(F.ki(-64), f"(v128.and ({i}.sub {_g('k')} {F.ki(1)}) {_g('hg')})", _g("lw")),
        ),
        _set("y", f"({f}.mul ({f}.mul {y} {_pow2(F, _g('j1'))}) {_pow2(F, _g('k'))})"),
    ]


def vmath(mod, op: str, p: Prim, a: str) -> str:
    """A WAT expression (type v128) computing `op` ("exp"|"log"|"tanh"|"sigmoid") lane-wise
    on the v128 expression `a` holding 4 f32 (p = f32) or 2 f64 (p = f64) lanes."""
    name = f"$v{op}_{p.name}"
    if name not in mod.helpers:
        if op in ("tanh", "sigmoid"):
            vmath(mod, "exp", p, "(local.get $x)")  # they call it
        build = {"exp": _exp, "log": _log, "tanh": _tanh, "sigmoid": _sigmoid}[op]
        rt._helper(mod, name, build(p, name))
    return f"(call {name} {a})"


def _exp(p: Prim, name: str) -> str:
    F = _fmt(p)
    f = F.f
    c = _consts(p)
    x = _g("x")
    body = [
        _set("ov", f"({f}.gt {x} {F.ki(c.exp_over)})"),
        _set("un", f"({f}.lt {x} {F.ki(c.exp_under)})"),
        _set("nn", f"({f}.ne {x} {x})"),
        _set("xs", f"(v128.andnot {x} {_or(_g('ov'), _g('un'), _g('nn'))})"),
        _set("kf", f"({f}.nearest ({f}.mul {_g('xs')} {F.ki(c.inv_ln2)}))"),
        _set("hi", f"({f}.sub {_g('xs')} ({f}.mul {_g('kf')} {F.ki(c.ln2_hi)}))"),
        _set("lo", f"({f}.mul {_g('kf')} {F.ki(c.ln2_lo)})"),
        _set("r", f"({f}.sub {_g('hi')} {_g('lo')})"),
        _set("t", f"({f}.mul {_g('r')} {_g('r')})"),
        *_horner(F, _g("t"), c.exp_p, "u"),
        _set("c", f"({f}.sub {_g('r')} ({f}.mul {_g('t')} {_g('u')}))"),
        _set(
            "y",
            f"({f}.sub {F.kf(1.0)} ({f}.sub ({f}.sub {_g('lo')} ({f}.div "
            f"({f}.mul {_g('r')} {_g('c')}) ({f}.sub {F.kf(2.0)} {_g('c')}))) {_g('hi')}))",
        ),
        *_scaleb(F, _g("y"), _g("kf")),
        _set("y", _sel(F.kf(float("inf")), _g("y"), _g("ov"))),
        _set("y", f"(v128.andnot {_g('y')} {_g('un')})"),  # +0 where x < EXP_UNDER
        _set("y", _sel(x, _g("y"), _g("nn"))),
    ]
    locs = ["ov", "un", "nn", "xs", "kf", "hi", "lo", "r", "t", "u", "c", "y"]
    return _func(name, [*locs, "k", "lw", "hg", "j1"], body, _g("y"))


def _log(p: Prim, name: str) -> str:
    F = _fmt(p)
    f, i = F.f, F.i
    c = _consts(p)
    x = _g("x")
    if F.bits == 32:
        dk = f"(f32x4.convert_i32x4_s {_g('e')})"
    else:
        magic = 1.5 * 2.0**52
        dk = f"(f64x2.sub (i64x2.add {_g('e')} {F.kf(magic)}) {F.kf(magic)})"
    inf = F.kf(float("inf"))
    body = [
        _set(
            "xs",
            _sel(
                F.kf(1.0),
                x,
                _or(f"({f}.ne {x} {x})", f"({f}.le {x} {F.kf(0.0)})", f"({f}.eq {x} {inf})"),
            ),
        ),
        _set("sb", f"({f}.lt {_g('xs')} {F.ki(1 << F.mant)})"),
        _set(
            "xs",
            _sel(
                f"({f}.mul {_g('xs')} {F.ki((c.sub_scale + F.bias) << F.mant)})",
                _g("xs"),
                _g("sb"),
            ),
        ),
        _set(
            "e",
            f"({i}.sub ({i}.sub ({i}.shr_u {_g('xs')} (i32.const {F.mant})) {F.ki(F.bias)}) "
            f"(v128.and {F.ki(c.sub_scale)} {_g('sb')}))",
        ),
        _set(
            "m",
            f"(v128.or (v128.and {_g('xs')} {F.ki((1 << F.mant) - 1)}) {F.ki(F.bias << F.mant)})",
        ),
        _set("bg", f"({f}.ge {_g('m')} {F.ki(c.sqrt2)})"),
        _set("m", _sel(f"({f}.mul {_g('m')} {F.kf(0.5)})", _g("m"), _g("bg"))),
        _set("e", f"({i}.sub {_g('e')} {_g('bg')})"),  # the mask is -1: e + 1 where big
        _set("f", f"({f}.sub {_g('m')} {F.kf(1.0)})"),
        _set("s", f"({f}.div {_g('f')} ({f}.add {F.kf(2.0)} {_g('f')}))"),
        _set("dk", dk),
        _set("z", f"({f}.mul {_g('s')} {_g('s')})"),
        _set("w", f"({f}.mul {_g('z')} {_g('z')})"),
        *_horner(F, _g("w"), c.log_lg_even, "t1"),
        _set("t1", f"({f}.mul {_g('w')} {_g('t1')})"),
        *_horner(F, _g("w"), c.log_lg_odd, "t2"),
        _set("t2", f"({f}.mul {_g('z')} {_g('t2')})"),
        _set("rr", f"({f}.add {_g('t2')} {_g('t1')})"),
        _set("h", f"({f}.mul ({f}.mul {F.kf(0.5)} {_g('f')}) {_g('f')})"),
        _set(
            "y",
            f"({f}.sub ({f}.mul {_g('dk')} {F.ki(c.ln2_hi)}) ({f}.sub ({f}.sub "
            f"{_g('h')} ({f}.add ({f}.mul {_g('s')} ({f}.add {_g('h')} {_g('rr')})) "
            f"({f}.mul {_g('dk')} {F.ki(c.ln2_lo)}))) {_g('f')}))",
        ),
        _set("y", _sel(F.kf(float("-inf")), _g("y"), f"({f}.eq {x} {F.kf(0.0)})")),
        _set("y", _sel(inf, _g("y"), f"({f}.eq {x} {inf})")),
        _set(
            "y",
            _sel(
                F.kf(float("nan")),
                _g("y"),
                _or(f"({f}.ne {x} {x})", f"({f}.lt {x} {F.kf(0.0)})"),
            ),
        ),
    ]
    locs = ["xs", "sb", "e", "m", "bg", "f", "s", "dk", "z", "w", "t1", "t2", "rr", "h", "y"]
    return _func(name, locs, body, _g("y"))


def _tanh(p: Prim, name: str) -> str:
    F = _fmt(p)
    f = F.f
    c = _consts(p)
    x = _g("x")
    if F.bits == 32:
        small = [
            *_horner_high_first(F, _g("s"), c.tanh_p, "n"),
            _set("sm", f"({f}.add ({f}.mul ({f}.mul {_g('n')} {_g('s')}) {x}) {x})"),
        ]
    else:
        small = [
            *_horner_high_first(F, _g("s"), c.tanh_p, "n"),
            # d = ((1*s + TQ0)*s + TQ1)*s + TQ2; 1*s = s exactly
            _set("d", f"({f}.add {_g('s')} {F.ki(c.tanh_q[0])})"),
            *[
                _set("d", f"({f}.add ({f}.mul {_g('d')} {_g('s')}) {F.ki(q)})")
                for q in c.tanh_q[1:]
            ],
            _set(
                "sm",
                f"({f}.add {x} ({f}.mul ({f}.mul {x} {_g('s')}) ({f}.div {_g('n')} {_g('d')})))",
            ),
        ]
    neg = f"({f}.lt {x} {F.kf(0.0)})"
    body = [
        _set("a", f"({f}.abs {x})"),
        _set("s", f"({f}.mul {x} {x})"),
        *small,
        _set(
            "e",
            f"(call $vexp_{F.w} (v128.and ({f}.add {_g('a')} {_g('a')}) "
            f"({f}.lt {_g('a')} {F.ki(c.tanh_one)})))",
        ),
        _set(
            "l",
            f"({f}.sub {F.kf(1.0)} ({f}.div {F.kf(2.0)} ({f}.add {_g('e')} {F.kf(1.0)})))",
        ),
        _set("ng", neg),
        _set("l", _sel(f"({f}.neg {_g('l')})", _g("l"), _g("ng"))),
        _set("y", _sel(_g("sm"), _g("l"), f"({f}.lt {_g('a')} {F.ki(c.tanh_small)})")),
        _set(
            "y",
            _sel(
                _sel(F.kf(-1.0), F.kf(1.0), _g("ng")),
                _g("y"),
                f"({f}.ge {_g('a')} {F.ki(c.tanh_one)})",
            ),
        ),
        _set("y", _sel(x, _g("y"), f"({f}.eq {x} {F.kf(0.0)})")),
        _set("y", _sel(x, _g("y"), f"({f}.ne {x} {x})")),
    ]
    locs = ["a", "s", "n", "d", "sm", "e", "l", "ng", "y"]
    return _func(name, locs, body, _g("y"))


def _sigmoid(p: Prim, name: str) -> str:
    F = _fmt(p)
    f = F.f
    x = _g("x")
    body = [
        _set("e", f"(call $vexp_{F.w} ({f}.neg ({f}.abs {x})))"),
        _set("d", f"({f}.add {F.kf(1.0)} {_g('e')})"),
        _set(
            "y",
            f"({f}.div {_sel(F.kf(1.0), _g('e'), f'({f}.ge {x} {F.kf(0.0)})')} {_g('d')})",
        ),
    ]
    return _func(name, ["e", "d", "y"], body, _g("y"))
