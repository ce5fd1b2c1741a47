"""What the editor shows for builtins, primitive types, memory spaces and effects.

The names come from sema (``BUILTINS``, ``PRIMS``, ``SPACES``, ``EFFECTS``) so nothing
can drift; the one-line signatures and meanings mirror docs/language.md §12.
"""

from __future__ import annotations

from dataclasses import dataclass

from kera_core.ir.types import EFFECTS, PRIM_NAMES, SPACES
from kera_core.sema.lower_calls import BUILTINS
from kera_core.syntax.kinds import KEYWORDS


@dataclass(frozen=True)
class BuiltinInfo:
    name: str
    params: tuple[str, ...]  # parameter labels, e.g. ("x: F[S]",)
    result: str
    doc: str
    effect: str = ""

    @property
    def label(self) -> str:
        s = f"fn {self.name}({', '.join(self.params)}) -> {self.result}"
        return s + (f" ! {self.effect}" if self.effect else "")


def _b(name: str, params: tuple[str, ...], result: str, doc: str, effect: str = "") -> BuiltinInfo:
    return BuiltinInfo(name, params, result, doc, effect)


_INFO = [
    _b("exp", ("x: F | F[S]",), "same", "e raised to `x`, elementwise"),
    _b("log", ("x: F | F[S]",), "same", "natural logarithm, elementwise"),
    _b("sqrt", ("x: F | F[S]",), "same", "square root (correctly rounded), elementwise"),
    _b("tanh", ("x: F | F[S]",), "same", "hyperbolic tangent, elementwise"),
    _b("sigmoid", ("x: F | F[S]",), "same", "the logistic function `1 / (1 + exp(-x))`"),
    _b("abs", ("x: E | E[S]",), "same", "absolute value (integers wrap: `abs(MIN) == MIN`)"),
    _b("floor", ("x: F | F[S]",), "same", "the largest integer <= `x`, elementwise (exact)"),
    _b("ceil", ("x: F | F[S]",), "same", "the smallest integer >= `x`, elementwise (exact)"),
    _b("trunc", ("x: F | F[S]",), "same", "`x` rounded toward zero, elementwise (exact)"),
    _b("round", ("x: F | F[S]",), "same", "`x` rounded to an integer, ties to even (exact)"),
    _b(
        "round_half_away",
        ("x: F | F[S]",),
        "same",
        "`x` rounded to an integer, ties away from zero (exact)",
    ),
    _b(
        "copysign",
        ("x: F", "y: F"),
        "F",
        "`x`'s magnitude with `y`'s sign, elementwise (a NaN `y` counts as positive)",
    ),
    _b("exp2", ("x: F | F[S]",), "same", "`2^x`, elementwise (f32: correctly rounded)"),
    _b("log2", ("x: F | F[S]",), "same", "base-2 logarithm, elementwise (f32: correctly rounded)"),
    _b("expm1", ("x: F | F[S]",), "same", "`exp(x) - 1`, accurate near 0 (f32: correctly rounded)"),
    _b("log1p", ("x: F | F[S]",), "same", "`log(1 + x)`, accurate near 0 (f32: correctly rounded)"),
    _b(
        "sin", ("x: F | F[S]",), "same", "sine of `x` radians, elementwise (f32: correctly rounded)"
    ),
    _b(
        "cos",
        ("x: F | F[S]",),
        "same",
        "cosine of `x` radians, elementwise (f32: correctly rounded)",
    ),
    _b(
        "tan",
        ("x: F | F[S]",),
        "same",
        "tangent of `x` radians, elementwise (f32: correctly rounded)",
    ),
    _b(
        "hypot",
        ("x: F", "y: F"),
        "F",
        "`sqrt(x^2 + y^2)` without undue overflow, elementwise (f32: correctly rounded)",
    ),
    _b(
        "erf",
        ("x: F | F[S]",),
        "same",
        "the error function, elementwise (`erf(inf) == 1`; f32: correctly rounded)",
    ),
    _b(
        "erfc",
        ("x: F | F[S]",),
        "same",
        "`1 - erf(x)` without cancellation, elementwise (f32: correctly rounded)",
    ),
    _b(
        "atan2",
        ("y: F", "x: F"),
        "F",
        "the angle of the point `(x, y)` in `[-pi, pi]`, elementwise (f32: correctly rounded)",
    ),
    _b(
        "pow",
        ("x: F", "y: F"),
        "F",
        "`x` to the power `y`, elementwise; C99 special cases (f32: correctly rounded)",
    ),
    _b("fma", ("a: F", "b: F", "c: F"), "F", "`a * b + c` rounded once, elementwise"),
    _b("minimum", ("a: E", "b: E"), "E", "the smaller of `a` and `b`, elementwise"),
    _b("maximum", ("a: E", "b: E"), "E", "the larger of `a` and `b`, elementwise"),
    _b(
        "sum",
        ("x: &E[S]",),
        "E",
        "sum of the elements, in the order semantics.md fixes; `sum(x, axis)` along one axis",
    ),
    _b("max", ("x: &E[S]",), "E", "largest element; `max(x, axis)` along one axis"),
    _b("min", ("x: &E[S]",), "E", "smallest element; `min(x, axis)` along one axis"),
    _b(
        "mean",
        ("x: &F[S]",),
        "F",
        "`sum(x)` divided by the element count; `mean(x, axis)` along one axis",
    ),
    _b(
        "argmax",
        ("x: &E[N]",),
        "i64",
        "index of the largest element; ties go to the lowest; `argmax(x, axis)` along one axis",
    ),
    _b(
        "argmin",
        ("x: &E[N]",),
        "i64",
        "index of the smallest element (the first NaN); ties go to the lowest; "
        "`argmin(x, axis)` along one axis",
    ),
    _b("dot", ("x: &E[N]", "y: &E[N]"), "E", "the sum of `x[i] * y[i]`"),
    _b("matmul", ("a: &E[M, K]", "b: &E[K, N]"), "E[M, N]", "matrix product (or matrix-vector)"),
    _b(
        "softmax",
        ("x: &F[N]",),
        "F[N]",
        "`let e = exp(x - max(x)); e / sum(e)`; `softmax(x, axis)` along one axis",
    ),
    _b(
        "layernorm",
        ("x: &F[N]", "eps: F"),
        "F[N]",
        "`let d = x - mean(x); d / sqrt(mean(d * d) + eps)`; `layernorm(x, eps, axis)` along "
        "one axis",
    ),
    _b("conv1d", ("x: &F[N]", "k: &F[K]"), "F[N]", "1-D cross-correlation, output as long as `x`"),
    _b("zeros", (), "E[S]", "a tensor of zeros; its type is the expected type"),
    _b(
        "full",
        ("v: E",),
        "E[S]",
        "a tensor with `v` in every element; its type is the expected type",
    ),
    _b(
        "transpose",
        ("x: &E[S]", "axes…"),
        "E[S']",
        "the axes reversed, or permuted: `transpose(x, 2, 0, 1)` has `x`'s axis 2 first",
    ),
    _b(
        "reshape",
        ("x: &E[S]",),
        "E[S']",
        "the elements in row-major order; its type is the expected type",
    ),
    _b(
        "broadcast_to",
        ("x: &E[S]",),
        "E[S']",
        "`x` repeated NumPy-style; the shape is the expected type's",
    ),
    _b("outer", ("u: &E[M]", "v: &E[N]"), "E[M, N]", "`u[i] * v[j]`, each product rounded once"),
    _b("concat", ("x1: &E[S]", "…", "axis"), "E[S']", "the tensors joined along a constant axis"),
    _b(
        "stack",
        ("x1: &E[S]", "…", "axis"),
        "E[S']",
        "the tensors stacked along a new constant axis",
    ),
    _b(
        "where",
        ("c: bool[S]", "a: E[S]", "b: E[S]"),
        "E[S]",
        "elementwise: `a` where `c` is true, else `b` (bits unchanged)",
    ),
    _b("clone", ("x: &E[S]",), "E[S]", "an owned copy of `x`"),
    _b(
        "arange",
        ("start: E?", "step: E?"),
        "E[N]",
        "`i as E`, or `start + (i as E) * step`; its type is the expected type",
    ),
    _b(
        "linspace",
        ("lo: F", "hi: F"),
        "F[N]",
        "`lo + (i as F) * ((hi - lo) / ((N - 1) as F))`, the last point `hi`; its type is the "
        "expected type",
    ),
    _b(
        "move_to",
        ("x: E[S] @a", "space"),
        "E[S] @space",
        "moves the owned tensor `x` into `space`; `x` is consumed",
        "transfer",
    ),
    _b(
        "copy_to",
        ("x: &E[S] @a", "space"),
        "E[S] @space",
        "a copy of `x` in `space`; `x` stays usable",
        "transfer",
    ),
    _b("print", ("x",), "()", "writes a string literal, scalar or host tensor", "io"),
    _b(
        "swap",
        ("a: &mut T", "b: &mut T"),
        "()",
        "exchanges the values of two variables of one type (tensors of one shape, or scalars);"
        " nothing is copied in the graph",
    ),
]

INFO: dict[str, BuiltinInfo] = {b.name: b for b in _INFO if b.name in BUILTINS}
#: Every builtin sema knows, even one this table has not caught up with.
BUILTIN_NAMES: tuple[str, ...] = tuple(sorted(BUILTINS))
for _name in BUILTIN_NAMES:
    INFO.setdefault(_name, BuiltinInfo(_name, ("…",), "…", "builtin function"))

PRIMITIVES: tuple[str, ...] = PRIM_NAMES
MEMORY_SPACES: tuple[str, ...] = SPACES
EFFECT_NAMES: tuple[str, ...] = EFFECTS
KEYWORD_NAMES: tuple[str, ...] = tuple(sorted(KEYWORDS))

PRIMITIVE_DOCS = {
    "bool": "boolean",
    **{f"i{n}": f"{n}-bit signed integer (wraps on overflow)" for n in (8, 16, 32, 64)},
    **{f"u{n}": f"{n}-bit unsigned integer (wraps on overflow)" for n in (8, 16, 32, 64)},
    "f32": "IEEE-754 binary32, round-to-nearest-even, subnormals kept",
    "f64": "IEEE-754 binary64, round-to-nearest-even, subnormals kept",
}
SPACE_DOCS = {
    "host": "memory space: host (CPU) memory, the default",
    "device": "memory space: accelerator memory",
    "pinned": "memory space: page-locked host memory",
    "unified": "memory space: unified (host and device) memory",
}
BOUND_DOCS = {
    "Float": "bound: the floating-point types `f32` and `f64`",
    "Int": "bound: the integer types `i8` … `i64` and `u8` … `u64`",
    "Num": "bound: every numeric type (`Float` and `Int`)",
}

EFFECT_DOCS = {
    "io": "effect: observable input/output (`print`)",
    "transfer": "effect: moving or copying data between memory spaces (`move_to`, `copy_to`)",
    "alloc": "effect: allocation whose size is not known at compile time (reserved)",
    "random": "effect: a nondeterministic source of randomness (reserved)",
    "time": "effect: reading a clock (reserved)",
}


def reserved(name: str) -> str | None:
    """Why ``name`` cannot be a user-chosen name, or None if it can."""
    if name in KEYWORDS:
        return f"`{name}` is a keyword"
    if name in BUILTINS:
        return f"`{name}` is a builtin function"
    if name in PRIMITIVES:
        return f"`{name}` is a primitive type"
    return None
