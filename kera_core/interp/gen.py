"""Deterministic inputs for `kera run --seed S [--adversarial]` (docs/semantics.md §10).

One PCG64 stream, seeded with S, is read as raw 64-bit words (``random_raw``, whose
sequence the PCG64 algorithm fixes, unlike numpy's distribution methods). Parameters
are filled in declaration order; a tensor in row-major order; a struct (a tuple) field by
field (element by element).

Ordinary values (one word per element):
  * f32: ``(w >> 40) * 2**-23 - 1`` — uniform on the 2**24 multiples of 2**-23 in [-1, 1);
  * f64: ``(w >> 11) * 2**-52 - 1`` — likewise with 2**53 values;
  * signed integers: ``(w >> 60) - 8`` in [-8, 8); unsigned: ``w >> 60`` in [0, 16);
  * bool: ``w >> 63``.

Adversarial values (two words per element: a class word c and a value word v):
  floats, by ``c >> 56``: 0–39 one of SPECIAL_FLOATS (``v % len``); 40–79 a subnormal of
  either sign; 80–119 a huge number (the top 28 binades); 120–159 a tiny normal (the
  lowest 20 binades); 160–199 any bit pattern (NaNs included, canonicalised on entry);
  200–255 an ordinary value from v as above. Integers: 0–79 one of MIN, MAX, 0, -1, 1,
  MIN+1, MAX-1 (``v % 7``, clipped for unsigned); otherwise all bits of v.
"""

from __future__ import annotations

import numpy as np

from kera_core.interp.fp import FORMATS, canon
from kera_core.interp.values import concrete_shape, dtype_of
from kera_core.ir.types import Prim, Struct, Tensor, Type, strip_ref

DEFAULT_DIM = 16


def _special_bits(name: str) -> list[int]:
    if name == "f32":
        return [
            0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001,
            0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000,
            0xBF800000, 0x3F000000, 0x33800000, 0x3F800001, 0x4B800000, 0xCB800001,
        ]  # fmt: skip
    return [
        0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
        0x7FF8000000000000, 0x0000000000000001, 0x8000000000000001, 0x000FFFFFFFFFFFFF,
        0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x3FF0000000000000,
        0xBFF0000000000000, 0x3FE0000000000000, 0x3CA0000000000000, 0x3FF0000000000001,
        0x4340000000000000, 0xC340000000000001,
    ]  # fmt: skip


MAX_SEED = (1 << 64) - 1


def check_seed(seed: int) -> int:
    """A seed is an integer in 0..2**64-1 (semantics.md §11); anything else is refused."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"a seed is an integer from 0 to 2**64-1, not {seed!r}")
    return seed


class InputGenerator:
    def __init__(self, seed: int, adversarial: bool = False) -> None:
        self.bitgen = np.random.PCG64(check_seed(seed))
        self.adversarial = adversarial

    def words(self, n: int) -> np.ndarray:
        return np.asarray(self.bitgen.random_raw(n), dtype=np.uint64).reshape(n)

    def value(self, t: Type, dims: dict[int, int]):
        t = strip_ref(t)
        if isinstance(t, Struct):
            return {f: self.value(ft, dims) for f, ft in t.fields}
        if isinstance(t, Tensor):
            shape = concrete_shape(t, dims)  # `f32[N + 1]`: R0003 if not a size
            n = int(np.prod(shape, dtype=np.int64))
            return self.elements(t.elem, n).reshape(shape)
        if isinstance(t, Prim):
            return self.elements(t, 1)[0]
        raise TypeError(f"cannot generate a value of type `{t}`")

    def elements(self, p: Prim, n: int) -> np.ndarray:
        if self.adversarial:
            c, v = self.words(n), self.words(n)
            return self._adversarial(p, c, v)
        return _ordinary(p, self.words(n))

    def _adversarial(self, p: Prim, c: np.ndarray, v: np.ndarray) -> np.ndarray:
        cls = (c >> np.uint64(56)).astype(np.int64)
        if p.name == "bool":
            return (v >> np.uint64(63)).astype(np.bool_)
        if p.is_int:
            dt = np.dtype(dtype_of(p))
            info = np.iinfo(dt)
            pool = [info.min, info.max, 0, -1, 1, info.min + 1, info.max - 1]
            pool = np.array([min(max(x, info.min), info.max) for x in pool], dtype=dt)
            bits = (v & np.uint64((1 << (dt.itemsize * 8)) - 1)).astype(dt.str.replace("i", "u"))
            out = bits.view(dt).copy()
            pick = cls < 80
            out[pick] = pool[(v[pick] % np.uint64(len(pool))).astype(np.int64)]
            return out
        f = FORMATS[p.name]
        u = f.udtype
        width = 32 if p.name == "f32" else 64
        vb = (v >> np.uint64(64 - width)).astype(u) if width == 32 else v.astype(u)
        sign = vb & u(1 << (width - 1))
        mant = vb & u((1 << f.mant) - 1)
        out_bits = np.empty(c.shape, dtype=u)
        special = np.array(_special_bits(p.name), dtype=u)
        ordinary = _ordinary(p, v).view(u)
        exp_bits = f.bits - 1 - f.mant
        top = (1 << exp_bits) - 2  # the largest finite biased exponent
        span = (v % np.uint64(28)).astype(u)
        huge = sign | ((u(top) - span) << u(f.mant)) | mant
        tiny = sign | ((u(1) + (v % np.uint64(20)).astype(u)) << u(f.mant)) | mant
        sub = sign | np.where(mant == 0, u(1), mant)
        choices = [
            (cls < 40, special[(v % np.uint64(len(special))).astype(np.int64)]),
            ((cls >= 40) & (cls < 80), sub),
            ((cls >= 80) & (cls < 120), huge),
            ((cls >= 120) & (cls < 160), tiny),
            ((cls >= 160) & (cls < 200), vb),
            (cls >= 200, ordinary),
        ]
        for mask, bits in choices:
            out_bits[mask] = bits[mask]
        return canon(out_bits.view(f.dtype))

    def inputs(self, params: list[tuple[str, Type]], dims: dict[int, int]) -> dict[str, object]:
        return {name: self.value(t, dims) for name, t in params}


def _ordinary(p: Prim, w: np.ndarray) -> np.ndarray:
    if p.name == "bool":
        return (w >> np.uint64(63)).astype(np.bool_)
    if p.name == "f32":
        u = (w >> np.uint64(40)).astype(np.float32)
        return u * np.float32(2.0**-23) - np.float32(1.0)
    if p.name == "f64":
        u = (w >> np.uint64(11)).astype(np.float64)
        return u * 2.0**-52 - 1.0
    dt = dtype_of(p)
    top = (w >> np.uint64(60)).astype(np.int64)
    return (top - 8 if p.is_signed else top).astype(dt)


__all__ = ["DEFAULT_DIM", "InputGenerator"]
