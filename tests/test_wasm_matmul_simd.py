"""The wasm target's SIMD `matmul` and `conv1d` against the interpreter, byte for byte.

`matmul` on `f32`/`f64`/`i32`/`u32`/`i64`/`u64` runs the loop program's CPU shape
(docs/lowering.md): panels of columns, rows four at a time then one by one, each a `lanes`
loop over the columns whose vector steps jam up to four `v128`s of accumulators, then
single vectors, then the scalar loop for the last columns; the k loop inside steps its
addresses and runs two iterations a trip, then one (docs/targets/wasm.md, "Selection").
The shapes below cover every `N` residue modulo the vector width and the panel width,
every `M` residue modulo the row block, every `K` residue modulo the trip, zero
dimensions, and both vector forms; the inputs include NaN, ±inf, ±0, subnormals,
overflowing and underflowing products, and cancellations that any reordering of `k`
would change."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kera_core.interp import run_function
from kera_core.targets.wasm import TARGET
from tests.test_wasm import module, outcome
from tests.test_wasm_ops import floats, ints

SRC = """
pub fn mm_f32[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
pub fn mm_f64[M, K, N](a: &f64[M, K], b: &f64[K, N]) -> f64[M, N] { matmul(a, b) }
pub fn mm_i32[M, K, N](a: &i32[M, K], b: &i32[K, N]) -> i32[M, N] { matmul(a, b) }
pub fn mm_u32[M, K, N](a: &u32[M, K], b: &u32[K, N]) -> u32[M, N] { matmul(a, b) }
pub fn mm_i64[M, K, N](a: &i64[M, K], b: &i64[K, N]) -> i64[M, N] { matmul(a, b) }
pub fn mm_u64[M, K, N](a: &u64[M, K], b: &u64[K, N]) -> u64[M, N] { matmul(a, b) }
pub fn mm_u8[M, K, N](a: &u8[M, K], b: &u8[K, N]) -> u8[M, N] { matmul(a, b) }
pub fn mm_i16[M, K, N](a: &i16[M, K], b: &i16[K, N]) -> i16[M, N] { matmul(a, b) }
pub fn mv_f32[M, K](a: &f32[M, K], x: &f32[K]) -> f32[M] { matmul(a, x) }
pub fn vm_f32[K, N](x: &f32[K], b: &f32[K, N]) -> f32[N] { matmul(x, b) }
pub fn mv_f64[M, K](a: &f64[M, K], x: &f64[K]) -> f64[M] { matmul(a, x) }
pub fn vm_f64[K, N](x: &f64[K], b: &f64[K, N]) -> f64[N] { matmul(x, b) }
pub fn vm_i64[K, N](x: &i64[K], b: &i64[K, N]) -> i64[N] { matmul(x, b) }
pub fn cv_f32[N, K](x: &f32[N], k: &f32[K]) -> f32[N] { conv1d(x, k) }
pub fn cv_f64[N, K](x: &f64[N], k: &f64[K]) -> f64[N] { conv1d(x, k) }
"""

FLOAT = {"f32": np.float32, "f64": np.float64}
INT = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64}
SMALL = {"u8": np.uint8, "i16": np.int16}

_ARTS: dict[str, object] = {}


def same(name: str, inputs: dict) -> None:
    m = module(SRC)
    if name not in _ARTS:
        _ARTS[name] = TARGET.lower(m.graph, m.provenance, name)
    art = _ARTS[name]
    ref = outcome(lambda: run_function(m, name, inputs, {}))
    got = outcome(lambda: TARGET.run(art, m.graph, name, inputs, {}, provenance=m.provenance))
    assert got == ref, (name, {k: np.shape(v) for k, v in inputs.items()})


def test_the_kernel_shape_is_what_the_shapes_below_cover() -> None:
    # 16-byte vectors; a packed panel is _NR vectors wide; rows come _MR at a time.

    m = module(SRC)
    for sfx, shape in (("f32", "f32x4"), ("f64", "f64x2"), ("i32", "i32x4"), ("u64", "i64x2")):
        wat = TARGET.lower(m.graph, m.provenance, f"mm_{sfx}").text
        assert wat is not None and f"({shape}.mul" in wat and "relaxed" not in wat
    wat = TARGET.lower(m.graph, m.provenance, "cv_f32").text
    assert wat is not None and "(f32x4.mul" in wat


def _innermost_loops(wat: str) -> list[str]:
    """The text of every `loop` of the module that holds no other loop."""
    out = []
    for start in [i for i in range(len(wat)) if wat.startswith("(loop ", i)]:
        depth, end = 0, start
        for end in range(start, len(wat)):
            depth += {"(": 1, ")": -1}.get(wat[end], 0)
            if depth == 0:
                break
        body = wat[start : end + 1]
        if "(loop " not in body[1:]:
            out.append(body)
    return out


def test_the_k_loop_steps_its_addresses_two_iterations_a_trip() -> None:
    m = module(SRC)
    for sfx, shape, splat in (("f32", "f32x4", "load32"), ("f64", "f64x2", "load64")):
        wat = TARGET.lower(m.graph, m.provenance, f"mm_{sfx}").text
        k_loops = [x for x in _innermost_loops(wat) if f"({shape}.mul" in x]
        assert k_loops
        for body in k_loops:
            # no index arithmetic: the a and b addresses are locals stepped each iteration
            assert "i64.mul" not in body and "i32.wrap_i64" not in body
            assert f"(v128.{splat}_splat (local.get $p" in body  # a[i, k], one instruction
        # the widest vector step's k loops: 4 rows × 4 vectors, two iterations a trip, then one
        trips = [x.count(f"({shape}.mul") for x in k_loops]
        assert 32 in trips and 16 in trips


# Every N mod 4 and N mod 16 (f32 panel) / mod 8 (f64 panel) residue, every M mod 4, K = 0.
SHAPES = [
    (0, 3, 4), (3, 0, 8), (4, 0, 17), (0, 0, 0), (2, 3, 0),
    (1, 1, 1), (1, 2, 3), (1, 5, 4), (1, 7, 16), (1, 3, 17), (1, 16, 33),
    (2, 2, 2), (2, 4, 5), (2, 8, 7), (2, 17, 8), (3, 3, 3), (3, 5, 9), (3, 1, 12),
    (4, 4, 4), (4, 7, 6), (4, 16, 16), (4, 3, 19), (4, 33, 32), (5, 5, 5), (5, 2, 15),
    (5, 8, 11), (5, 15, 13), (7, 3, 14), (7, 16, 10), (7, 1, 33), (8, 8, 8), (8, 17, 31),
    (8, 5, 35), (15, 4, 1), (15, 7, 2), (16, 16, 16), (16, 2, 48), (17, 5, 34),
    (17, 33, 17), (33, 15, 33), (33, 1, 2), (9, 40, 70),
]  # fmt: skip


@pytest.mark.parametrize(("mm", "kk", "nn"), SHAPES)
def test_matmul_shapes(mm: int, kk: int, nn: int) -> None:
    rng = np.random.default_rng(mm * 10_000 + kk * 100 + nn)
    for sfx, dt in FLOAT.items():
        for adv in (False, True):
            a, b = floats(rng, dt, (mm, kk), adv), floats(rng, dt, (kk, nn), adv)
            same(f"mm_{sfx}", {"a": a, "b": b})
    for sfx, dt in INT.items():
        same(f"mm_{sfx}", {"a": ints(rng, dt, (mm, kk)), "b": ints(rng, dt, (kk, nn))})
    if mm * kk * nn < 2000:
        for sfx, dt in SMALL.items():
            same(f"mm_{sfx}", {"a": ints(rng, dt, (mm, kk)), "b": ints(rng, dt, (kk, nn))})


@pytest.mark.parametrize(("kk", "n"), [(0, 5), (3, 0), (1, 1), (5, 3), (7, 8), (16, 17), (33, 33)])
def test_vector_forms(kk: int, n: int) -> None:
    rng = np.random.default_rng(kk * 100 + n)
    for sfx, dt in FLOAT.items():
        x, a = floats(rng, dt, kk, True), floats(rng, dt, (n, kk), True)
        same(f"mv_{sfx}", {"a": a, "x": x})
        same(f"vm_{sfx}", {"x": x, "b": floats(rng, dt, (kk, n), True)})
    same("vm_i64", {"x": ints(rng, np.int64, kk), "b": ints(rng, np.int64, (kk, n))})


def _lanes(dt, rows: list[list[float]], n: int):
    """``a`` with the given rows and a ``b`` of ones scaled differently per column."""
    a = np.array(rows, dtype=dt)
    b = np.ones((a.shape[1], n), dtype=dt) * (np.arange(n, dtype=dt) % 3 + 1)
    return a, b


@pytest.mark.parametrize("n", [1, 4, 5, 16, 21, 35])
def test_k_order_in_every_lane(n: int) -> None:
    """1e8 + 1 − 1e8 is 0 in k order (1 after any reordering), in every lane and row."""
    for sfx, dt in FLOAT.items():
        big = 1e8 if dt == np.float32 else 1e17
        rows = [[big, 1.0, -big], [1.0, big, -big], [-big, big, 1.0], [big, -big, 1.0], [1, 1, 1]]
        a, b = _lanes(dt, rows, n)
        same(f"mm_{sfx}", {"a": a, "b": b})


@pytest.mark.parametrize("n", [3, 4, 8, 16, 19])
def test_special_values(n: int) -> None:
    for sfx, dt in FLOAT.items():
        fi = np.finfo(dt)
        tiny, huge = fi.smallest_subnormal, fi.max
        rows = [
            [huge, huge, -huge],  # overflow to +inf stays inf
            [huge, -huge, huge],  # +inf + -inf: NaN
            [tiny, tiny, tiny],  # products underflow to +0
            [-tiny, tiny, -0.0],  # -0 products: +0 + -0 = +0
            [np.nan, 1.0, 2.0],
            [np.inf, 0.0, 1.0],
            [-0.0, -0.0, -0.0],
            [fi.tiny, fi.eps, 1 / fi.eps],
            [3.0, 1 / 3.0, -1.0],
        ]
        a, b = _lanes(dt, rows, n)
        same(f"mm_{sfx}", {"a": a, "b": b})
        b2 = b.copy()
        b2[:, ::2] = np.array([0.0, -0.0, np.inf], dtype=dt)[:, None]
        b2[1, 1::3] = np.nan
        same(f"mm_{sfx}", {"a": a, "b": b2})
        with np.errstate(over="ignore", invalid="ignore"):
            b3 = b2 * dt(huge)
        same(f"mm_{sfx}", {"a": -a, "b": b3})


def test_integer_wrap_in_every_lane() -> None:
    for sfx, dt in INT.items():
        info = np.iinfo(dt)
        a = np.array([[info.max, info.max, 3], [info.min, -1 if info.min else 7, 1]], dtype=dt)
        b = np.full((3, 13), info.max, dtype=dt)
        b[2, ::2] = info.min
        same(f"mm_{sfx}", {"a": a, "b": b})


@settings(max_examples=60, deadline=None)
@given(
    mm=st.integers(0, 12),
    kk=st.integers(0, 12),
    nn=st.integers(0, 40),
    sfx=st.sampled_from(["f32", "f64", "i32", "u64"]),
    adv=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_matmul_random(mm: int, kk: int, nn: int, sfx: str, adv: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    if sfx in FLOAT:
        dt = FLOAT[sfx]
        if adv and rng.random() < 0.5:  # raw bit patterns: every exponent, NaNs, subnormals
            it = np.uint32 if dt == np.float32 else np.uint64
            info = np.iinfo(it)
            a = rng.integers(0, info.max, (mm, kk), dtype=it, endpoint=True).view(dt)
            b = rng.integers(0, info.max, (kk, nn), dtype=it, endpoint=True).view(dt)
        else:
            a, b = floats(rng, dt, (mm, kk), adv), floats(rng, dt, (kk, nn), adv)
    else:
        dt = INT[sfx]
        a, b = ints(rng, dt, (mm, kk)), ints(rng, dt, (kk, nn))
    same(f"mm_{sfx}", {"a": a, "b": b})


# conv1d: outputs whose window lies inside x run 4 (f32) / 2 (f64) at a time, in blocks of
# _NR vectors then single vectors; the last K − 1 outputs (reading +0 past the end) and the
# leftovers run the scalar loop. Every N residue around the block widths, K = 0 and K > N.
CONV_SHAPES = [
    (0, 0), (0, 3), (5, 0), (1, 1), (3, 8), (4, 4), (4, 1), (5, 2), (7, 3), (8, 1), (9, 2),
    (15, 1), (16, 1), (17, 1), (17, 2), (19, 4), (20, 5), (33, 2), (35, 3), (40, 17),
    (64, 16), (70, 7), (100, 33),
]  # fmt: skip


@pytest.mark.parametrize(("n", "k"), CONV_SHAPES)
def test_conv1d_shapes(n: int, k: int) -> None:
    rng = np.random.default_rng(n * 100 + k)
    for sfx, dt in FLOAT.items():
        for adv in (False, True):
            same(f"cv_{sfx}", {"x": floats(rng, dt, n, adv), "k": floats(rng, dt, k, adv)})


@pytest.mark.parametrize("n", [3, 9, 20])
def test_conv1d_order_and_edges(n: int) -> None:
    for sfx, dt in FLOAT.items():
        big = 1e8 if dt == np.float32 else 1e17
        x = np.tile(np.array([big, 1.0, -big, 0.5], dtype=dt), n)[: n + 3]
        same(f"cv_{sfx}", {"x": x, "k": np.ones(3, dtype=dt)})
        same(f"cv_{sfx}", {"x": x, "k": np.array([1.0, -0.0, np.inf], dtype=dt)})
        fi = np.finfo(dt)
        x2 = np.resize(np.array([fi.max, fi.smallest_subnormal, -0.0, np.nan], dtype=dt), n)
        same(f"cv_{sfx}", {"x": x2, "k": np.array([2.0, fi.max, 0.5], dtype=dt)})


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 40),
    k=st.integers(0, 12),
    sfx=st.sampled_from(["f32", "f64"]),
    adv=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_conv1d_random(n: int, k: int, sfx: str, adv: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    dt = FLOAT[sfx]
    same(f"cv_{sfx}", {"x": floats(rng, dt, n, adv), "k": floats(rng, dt, k, adv)})
