"""SIMD and fused elementwise loops in the wasm target (fusion.py, simd.py).

Every case compares the module's output bytes with the interpreter's; sizes straddle the
vector width (4 f32 / 2 f64 lanes), the 16 lanes of a sum tile and the 1024-element
tiles, so vector bodies, scalar tails and partial tiles all run; inputs include NaN,
±inf, ±0 and subnormals. The WAT is checked too: the loops that can be lane-wise are,
the others are not, and no relaxed-SIMD instruction ever appears.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kera_core.backends.wasm import lower_wat
from kera_core.backends.wasm.select import fname
from kera_core.interp.gen import InputGenerator
from tests.test_wasm import compare, module, seeded

SRC = """
pub fn axpy[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }
pub fn poly64[N](x: &f64[N], y: &f64[N]) -> f64[N] { sqrt(abs(x * x - y / 3.0)) + -x }
pub fn minmax[N](x: &f32[N], y: &f32[N]) -> f32[N] { minimum(x, y) * maximum(x, 0.5) }
pub fn cast_mix[N](x: &i32[N], y: &f32[N]) -> f32[N] { x as f32 * y + 1.0 }
pub fn compare_mix[N](x: &f32[N], y: &f32[N]) -> bool[N] { x + y < y * 2.0 }
pub fn bcast[M, N](m: &f32[M, N], row: &f32[N], col: &f32[M, 1]) -> f32[M, N] {
    (m - row) * col + 1.0
}
pub fn int_tree[N](x: &i32[N], y: &i32[N]) -> i32[N] { (x * 3 + y) ^ (x - y) }
pub fn int_div[N](x: &i32[N], y: &i32[N]) -> i32[N] { x / y + x }
pub fn sum_expr[N](x: &f32[N], y: &f32[N]) -> f32 { sum(x * y - 0.25) }
pub fn mean_expr64[N](x: &f64[N]) -> f64 { mean(x * x) }
pub fn dot32[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn dot_expr64[N](x: &f64[N], y: &f64[N]) -> f64 { dot(x + 1.0, y * x) }
pub fn sum_cast[N](x: &i16[N]) -> f32 { sum(x as f32 * 0.5) }
pub fn sum64[N](x: &f64[N]) -> f64 { sum(x) }
pub fn peaks[N](x: &f32[N]) -> f32 { max(x) - min(x) }
pub fn peaks64[N](x: &f64[N]) -> f64 { max(x) + min(x) }
pub fn fills[N](like: &u8[N], v: u8) -> u8[N] { let z: u8[N] = full(v); z }
pub fn fills16[N](like: &i16[N], v: i16) -> i16[N] { let z: i16[N] = full(v); z }
pub fn ones64[N](like: &f64[N]) -> f64[N] { let z: f64[N] = full(1.0); z }
pub fn two_fills[N](like: &f32[N], v: f32) -> f32[N] {
    let a: f32[N] = full(v);
    let b: f32[N] = zeros();
    a - b
}
pub fn shared[N](x: &f32[N]) -> f32[N] { let d = x - 1.0; d * d }
pub fn softish[N](x: &f32[N]) -> f32[N] { let e = exp(x - max(x)); e / sum(&e) }
"""
SIZES = [0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 33, 1023, 1024, 1025, 2 * 1024 + 19]
NAMES = [
    "axpy",
    "poly64",
    "minmax",
    "cast_mix",
    "compare_mix",
    "int_tree",
    "int_div",
    "sum_expr",
    "mean_expr64",
    "dot32",
    "dot_expr64",
    "sum_cast",
    "sum64",
    "peaks",
    "peaks64",
    "fills",
    "fills16",
    "ones64",
    "two_fills",
    "shared",
    "softish",
]


@pytest.mark.parametrize("name", NAMES)
def test_every_size_and_input_kind_matches_the_interpreter(name: str) -> None:
    m = module(SRC)
    for size in SIZES:
        for seed, adversarial in ((1, False), (2, True), (3, True)):
            inputs, dims = seeded(m, name, seed, adversarial, size)
            compare(m, name, inputs, dims)


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (3, 1), (5, 4), (4, 9), (17, 33)])
def test_broadcasting_trees_match(shape) -> None:
    m = module(SRC)
    mm, n = shape
    for seed, adversarial in ((4, False), (5, True)):
        gen = InputGenerator(seed, adversarial)
        inputs, _ = seeded(m, "bcast", seed, adversarial, 1)
        from kera_core.ir.types import Prim, Tensor

        f32 = Prim("f32")
        inputs = {
            "m": gen.value(Tensor(f32, (mm, n)), {}),
            "row": gen.value(Tensor(f32, (n,)), {}),
            "col": gen.value(Tensor(f32, (mm, 1)), {}),
        }
        compare(m, "bcast", inputs, {"M": mm, "N": n})


def test_the_nan_at_any_lane_wins_the_fold() -> None:
    m = module(SRC)
    for n in (1, 3, 4, 5, 8, 9, 31):
        for at in range(n):
            x = np.arange(n, dtype=np.float32) - 3.0
            x[at] = np.nan
            compare(m, "peaks", {"x": x}, {"N": n})
            z = np.where(np.arange(n) % 2 == 0, np.float32(-0.0), np.float32(0.0))
            compare(m, "peaks", {"x": z.astype(np.float32)}, {"N": n})


def test_an_integer_division_by_zero_is_still_reported() -> None:
    m = module(SRC)
    x = np.arange(9, dtype=np.int32)
    y = np.ones(9, dtype=np.int32)
    y[6] = 0
    compare(m, "int_div", {"x": x, "y": y}, {"N": 9})


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 70),
    st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=8),
)
def test_generated_values_through_the_sum_lanes(n: int, pool: list[float]) -> None:
    m = module(SRC)
    rng = np.random.default_rng(n)
    x = np.array([pool[k] for k in rng.integers(0, len(pool), n)], dtype=np.float32)
    y = np.array([pool[k] for k in rng.integers(0, len(pool), n)], dtype=np.float32)
    for name in ("sum_expr", "dot32", "axpy", "minmax"):
        ins = {"x": x, "y": y} if name != "axpy" else {"a": np.float32(pool[0]), "x": x, "y": y}
        compare(m, name, ins, {"N": n})


def _body(wat: str, fn: str) -> str:
    start = wat.index(f"(func {fname(fn)} ")
    return wat[start : wat.index("\n  )", start)]


def test_lane_wise_loops_where_possible_and_only_there() -> None:
    """The shared vector plans (kera_core/loops/vectorize.py) as WebAssembly SIMD: fused
    elementwise loops, casts, integer kernels and the canonical sum's lanes run as v128;
    a comparison stored as `bool` bytes and integer `/` keep the scalar loop."""
    m = module(SRC)
    wat = {n: lower_wat(m.graph, n) for n in NAMES}
    for name in NAMES:
        assert "relaxed" not in wat[name]
    # one fused loop, one buffer, lane-wise
    body = _body(wat["axpy"], "axpy")
    assert body.count("$kera_alloc") == 1 and "f32x4.mul" in body and "f32x4.add" in body
    assert "f64x2.sqrt" in _body(wat["poly64"], "poly64")
    assert "f32x4.min" in _body(wat["minmax"], "minmax")
    # the sum of an expression reads its operands lane-wise; its only buffers are the
    # fixed ones of the canonical sum (the 64-entry tile stack, its sizes, 16 lane totals)
    body = _body(wat["sum_expr"], "sum_expr")
    assert "f32x4.mul" in body and body.count("$kera_alloc") == 3
    assert "f64x2.mul" in _body(wat["dot_expr64"], "dot_expr64")
    # integer lanes: a cast to f32, an integer expression
    body = _body(wat["cast_mix"], "cast_mix")
    assert "f32x4.convert_i32x4_s" in body and body.count("$kera_alloc") == 1
    assert "i32x4.mul" in _body(wat["int_tree"], "int_tree")
    # binary32 exp's step list lane-wise in binary64 (semantics.md §6.2): f32 lanes widened
    # to f64x2 and narrowed back, its exponent arithmetic on i64x2, the clamps as pmin/pmax
    body = _body(wat["softish"], "softish")
    for op in ("f64x2.promote_low_f32x4", "f32x4.demote_f64x2_zero", "v128.load64_zero"):
        assert op in body, op
    assert "i64x2.shl" in body and "f64x2.pmin" in body and "f64x2.pmax" in body
    assert "f32x4.div" in body  # the division by the sum: four lanes again
    # a comparison stored as bool bytes stays scalar, still one fused loop
    body = _body(wat["compare_mix"], "compare_mix")
    assert "v128" not in body and body.count("$kera_alloc") == 1
    # a value used twice is computed once, into its own buffer
    assert _body(wat["shared"], "shared").count("$kera_alloc") == 2
    # integer `/` is never deferred: its own loop (scalar: no vector division), then the add
    body = _body(wat["int_div"], "int_div")
    assert body.count("$kera_alloc") == 2 and "i32.div_s" in body and "i32x4.add" in body
