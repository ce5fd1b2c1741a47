"""The loop program's primitives: each one correctly rounded IEEE operation or one exactly
specified integer/bit operation (docs/lowering.md has the table; docs/semantics.md §2-§5
defines every clause).

``PRIMS[name]`` gives the operand count, which operand types it takes and the meaning, as a
function of the destination type and numpy scalar operands. This is what the loop-program
interpreter runs and what each backend must spell in its instructions. Nothing here is a
composite: ``exp``, the canonical sum, ``matmul`` … are expanded into these by the lowering.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kera_core.interp import fp
from kera_core.interp.values import DTYPES
from kera_core.loops.ir import BITS, is_float, is_signed

UINT_OF_WIDTH = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


@dataclass(frozen=True)
class Prim:
    name: str
    arity: int
    kinds: str  # which operand types: "f" float, "i" integer, "b" bool, "n" any number, "*" any
    doc: str
    run: Callable


PRIMS: dict[str, Prim] = {}


def prim(name: str, arity: int, kinds: str, doc: str):
    def deco(fn):
        PRIMS[name] = Prim(name, arity, kinds, doc, fn)
        return fn

    return deco


def _canon(r):
    return fp.nan_of(type(r)) if r != r else r


def _typed(t: str, v):
    return DTYPES[t](v)


# --- arithmetic (floats: IEEE, NaN canonical; integers: wrapping) ----------------------------


@prim("add", 2, "n", "a + b (IEEE; integers wrap)")
def _add(t, a, b):
    r = a + b
    return _canon(r) if is_float(t) else r


@prim("sub", 2, "n", "a - b (IEEE; integers wrap)")
def _sub(t, a, b):
    r = a - b
    return _canon(r) if is_float(t) else r


@prim("mul", 2, "n", "a * b (IEEE; integers wrap)")
def _mul(t, a, b):
    r = a * b
    return _canon(r) if is_float(t) else r


@prim("div", 2, "n", "a / b: IEEE; integers truncate toward zero, MIN / -1 = MIN; b != 0")
def _div(t, a, b):
    if is_float(t):
        return _canon(a / b)
    if b == 0:
        raise ZeroDivisionError("integer division by zero reached a `div` (a lowering bug)")
    if is_signed(t) and b == -1:
        return -a  # wraps
    q = abs(int(a)) // abs(int(b))
    return _typed(t, q if (a < 0) == (b < 0) else -q)


@prim("rem", 2, "n", "a % b: C fmod (exact) for floats; integers: sign of a, MIN % -1 = 0")
def _rem(t, a, b):
    if is_float(t):
        return _canon(np.fmod(a, b))
    if b == 0:
        raise ZeroDivisionError("integer remainder by zero reached a `rem` (a lowering bug)")
    if is_signed(t) and b == -1:
        return _typed(t, 0)
    r = abs(int(a)) % abs(int(b))
    return _typed(t, -r if a < 0 else r)


@prim("neg", 1, "n", "-a (floats: flip the sign bit; integers wrap)")
def _neg(t, a):
    return _canon(-a) if is_float(t) else -a


@prim("abs", 1, "n", "|a| (floats: clear the sign bit; integers wrap: abs(MIN) = MIN)")
def _abs(t, a):
    if is_float(t):
        return _canon(np.abs(a))
    return a if a >= 0 else -a


@prim("minimum", 2, "n", "IEEE 754-2019 minimum: NaN if either is NaN, -0 < +0")
def _minimum(t, a, b):
    return fp.minimum(a, b)[()] if is_float(t) else min(a, b)


@prim("maximum", 2, "n", "IEEE 754-2019 maximum: NaN if either is NaN, -0 < +0")
def _maximum(t, a, b):
    return fp.maximum(a, b)[()] if is_float(t) else max(a, b)


@prim("sqrt", 1, "f", "IEEE squareRoot")
def _sqrt(t, a):
    return _canon(np.sqrt(a))


@prim("fma", 3, "f", "a*b + c rounded once")
def _fma(t, a, b, c):
    return _canon(fp.fma(a, b, c)[()])


@prim("roundeven", 1, "f", "round to an integral value, ties to even (exact)")
def _roundeven(t, a):
    return _canon(np.rint(a))


@prim("canon", 1, "f", "a, with any NaN replaced by the canonical NaN")
def _canon_prim(t, a):
    return _canon(a)


# --- comparisons (result bool) ---------------------------------------------------------------


@prim("eq", 2, "*", "a == b (IEEE: NaN unequal, -0 == +0)")
def _eq(t, a, b):
    return np.bool_(a == b)


@prim("ne", 2, "*", "a != b")
def _ne(t, a, b):
    return np.bool_(a != b)


@prim("lt", 2, "n", "a < b")
def _lt(t, a, b):
    return np.bool_(a < b)


@prim("le", 2, "n", "a <= b")
def _le(t, a, b):
    return np.bool_(a <= b)


@prim("gt", 2, "n", "a > b")
def _gt(t, a, b):
    return np.bool_(a > b)


@prim("ge", 2, "n", "a >= b")
def _ge(t, a, b):
    return np.bool_(a >= b)


@prim("select", 3, "*", "c ? a : b (c bool)")
def _select(t, c, a, b):
    return a if c else b


# --- bits ------------------------------------------------------------------------------------


@prim("and", 2, "ib", "bitwise and (bool: logical)")
def _and(t, a, b):
    return a & b


@prim("or", 2, "ib", "bitwise or (bool: logical)")
def _or(t, a, b):
    return a | b


@prim("xor", 2, "ib", "bitwise xor (bool: logical)")
def _xor(t, a, b):
    return a ^ b


@prim("not", 1, "ib", "bitwise not (bool: logical)")
def _not(t, a):
    return np.bool_(not a) if t == "bool" else ~a


def _count(t: str, c) -> int:
    bits = BITS[t]
    return int(np.asarray(c).astype(np.int64)) & (bits - 1)


@prim("shl", 2, "i", "a << (c mod bits): bits shifted out are dropped")
def _shl(t, a, c):
    u = UINT_OF_WIDTH[BITS[t]]
    return (np.asarray(a).view(u) << u(_count(t, c))).astype(u).view(DTYPES[t])[()]


@prim("shr", 2, "i", "a >> (c mod bits): arithmetic for signed types, logical for unsigned")
def _shr(t, a, c):
    return DTYPES[t](a >> DTYPES[t](_count(t, c)))


@prim("bitcast", 1, "*", "the same bits as another type of the same width")
def _bitcast(t, a):
    return np.asarray(a).view(DTYPES[t])[()]


@prim("convert", 1, "*", "Kera's `as` (semantics.md §5): wrap, round to nearest even, saturate")
def _convert(t, a):
    src = np.asarray(a)
    if is_float(t):
        f = fp.FORMATS[t]
        if src.dtype.kind == "f":
            return fp.float_to_float(src, f)[()]
        return _canon(fp.int_to_float(src, f)[()])
    if t == "bool":
        return np.bool_(a != 0)
    if src.dtype.kind == "f":
        return fp.float_to_int(src, DTYPES[t])[()]
    return src.astype(DTYPES[t])[()]


def result_type(name: str, arg_types: tuple[str, ...], to: str | None = None) -> str:
    """The destination type of a primitive on these operand types (``to`` for conversions)."""
    if name in ("eq", "ne", "lt", "le", "gt", "ge"):
        return "bool"
    if name in ("bitcast", "convert"):
        assert to is not None
        return to
    if name == "select":
        return arg_types[1]
    return arg_types[0]
