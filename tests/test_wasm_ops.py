"""The wasm target's composite operations against the interpreter, byte for byte.

`argmax`, `array` literals, `matmul`, `conv1d`, `softmax`, `layernorm` (and what later
steps add) on seeded, adversarial and hand-picked inputs: NaN, ±0, ±inf, subnormals,
ties, empty tensors, integer wrap-around. Each case must give the interpreter's raw
output bytes and digest, or the interpreter's checked-error code.
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.backends.wasm import unsupported
from tests.test_wasm import compare, module

SPECIAL32 = np.array(
    [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4e38, -3.4e38, 0.5, 1e-38],
    dtype=np.float32,
)
SPECIAL64 = np.array(
    [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 1.7e308, -1.7e308, 0.5],
    dtype=np.float64,
)


def floats(rng, dt, shape, adversarial: bool):
    x = (rng.standard_normal(shape) * 4).astype(dt)
    if adversarial and x.size:
        sp = SPECIAL32 if dt == np.float32 else SPECIAL64
        mask = rng.random(shape) < 0.3
        x[mask] = rng.choice(sp, size=int(mask.sum()))
    return x


def ints(rng, dt, shape):
    info = np.iinfo(dt)
    edge = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=dt)
    x = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    mask = rng.random(shape) < 0.3
    x[mask] = rng.choice(edge, size=int(mask.sum()))
    return x


ARGMAX = """
pub fn am_f32[N](x: &f32[N]) -> i64 { argmax(x) }
pub fn am_f64[N](x: &f64[N]) -> i64 { argmax(x) }
pub fn am_i32[N](x: &i32[N]) -> i64 { argmax(x) }
pub fn am_u8[N](x: &u8[N]) -> i64 { argmax(x) }
pub fn am_i64[N](x: &i64[N]) -> i64 { argmax(x) }
pub fn am_grid[R, C](x: &f32[R, C]) -> i64 { argmax(x) }
"""


@pytest.mark.parametrize("n", [0, 1, 2, 7, 100])
@pytest.mark.parametrize("seed", range(4))
def test_argmax(n: int, seed: int) -> None:
    m = module(ARGMAX)
    rng = np.random.default_rng(seed)
    for adv in (False, True):
        compare(m, "am_f32", {"x": floats(rng, np.float32, n, adv)}, {})
        compare(m, "am_f64", {"x": floats(rng, np.float64, n, adv)}, {})
    compare(m, "am_i32", {"x": ints(rng, np.int32, n)}, {})
    compare(m, "am_u8", {"x": ints(rng, np.uint8, n)}, {})
    compare(m, "am_i64", {"x": ints(rng, np.int64, n)}, {})
    compare(m, "am_grid", {"x": floats(rng, np.float32, (3, n), True)}, {})


@pytest.mark.parametrize(
    "x",
    [
        [-0.0, 0.0],
        [0.0, -0.0],
        [1.0, np.nan, np.inf, -np.nan],
        [-np.nan, np.nan],
        [np.inf, np.inf, 1.0],
        [-np.inf, -np.inf],
        [-1.0, -2.0, -0.0],
    ],
)
def test_argmax_total_order(x) -> None:
    m = module(ARGMAX)
    a = np.array(x, dtype=np.float32)
    if len(x) == 4:  # a negative NaN (sign bit set) is a NaN like any other
        a.view(np.uint32)[3] |= 0x80000000
    compare(m, "am_f32", {"x": a}, {})
    compare(m, "am_f64", {"x": a.astype(np.float64)}, {})


ARRAY = """
pub fn lit_f32(a: f32, b: f32) -> f32[3] { [a, b, a + b] }
pub fn lit_bool(a: bool) -> bool[2] { [a, !a] }
pub fn lit_i8(a: i8) -> i8[2] { [a, a + a] }
pub fn lit_rows[N](x: &f64[N], y: &f64[N]) -> f64[3, N] { [x * 2.0, y, x + y] }
pub fn lit_sum(a: f32, b: f32, c: f32) -> f32 { sum(&[a, b, c]) }
"""


@pytest.mark.parametrize("seed", range(6))
def test_array_literals(seed: int) -> None:
    m = module(ARRAY)
    rng = np.random.default_rng(seed)
    a, b, c = floats(rng, np.float32, 3, seed % 2 == 1)
    compare(m, "lit_f32", {"a": a, "b": b}, {})
    compare(m, "lit_sum", {"a": a, "b": b, "c": c}, {})
    compare(m, "lit_bool", {"a": bool(seed % 2)}, {})
    compare(m, "lit_i8", {"a": int(ints(rng, np.int8, 1)[0])}, {})
    for n in (0, 1, 5):
        x, y = floats(rng, np.float64, n, True), floats(rng, np.float64, n, True)
        compare(m, "lit_rows", {"x": x, "y": y}, {})


MATMUL = """
pub fn mm_f32[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
pub fn mm_f64[M, K, N](a: &f64[M, K], b: &f64[K, N]) -> f64[M, N] { matmul(a, b) }
pub fn mv_f32[M, K](a: &f32[M, K], x: &f32[K]) -> f32[M] { matmul(a, x) }
pub fn vm_f32[K, N](x: &f32[K], b: &f32[K, N]) -> f32[N] { matmul(x, b) }
pub fn mm_i32[M, K, N](a: &i32[M, K], b: &i32[K, N]) -> i32[M, N] { matmul(a, b) }
pub fn mm_i8[M, K, N](a: &i8[M, K], b: &i8[K, N]) -> i8[M, N] { matmul(a, b) }
pub fn mm_u64[M, K, N](a: &u64[M, K], b: &u64[K, N]) -> u64[M, N] { matmul(a, b) }
"""


@pytest.mark.parametrize(
    ("mm", "kk", "nn"), [(0, 3, 2), (2, 0, 3), (1, 1, 1), (3, 5, 4), (7, 33, 5)]
)
@pytest.mark.parametrize("adversarial", [False, True])
def test_matmul(mm: int, kk: int, nn: int, adversarial: bool) -> None:
    m = module(MATMUL)
    rng = np.random.default_rng(mm * 100 + kk * 10 + nn)
    for name, dt in (("mm_f32", np.float32), ("mm_f64", np.float64)):
        a, b = floats(rng, dt, (mm, kk), adversarial), floats(rng, dt, (kk, nn), adversarial)
        compare(m, name, {"a": a, "b": b}, {})
    a = floats(rng, np.float32, (mm, kk), adversarial)
    compare(m, "mv_f32", {"a": a, "x": floats(rng, np.float32, kk, adversarial)}, {})
    b = floats(rng, np.float32, (kk, nn), adversarial)
    compare(m, "vm_f32", {"x": floats(rng, np.float32, kk, adversarial), "b": b}, {})
    for name, dt in (("mm_i32", np.int32), ("mm_i8", np.int8), ("mm_u64", np.uint64)):
        compare(m, name, {"a": ints(rng, dt, (mm, kk)), "b": ints(rng, dt, (kk, nn))}, {})


def test_matmul_keeps_k_order() -> None:
    """1e8 + 1 − 1e8 in f32 is 0 in k order and 1 in any reordering."""
    m = module(MATMUL)
    a = np.array([[1e8, 1.0, -1e8]], dtype=np.float32)
    b = np.ones((3, 1), dtype=np.float32)
    compare(m, "mm_f32", {"a": a, "b": b}, {})


CONV = """
pub fn cv_f32[N, K](x: &f32[N], k: &f32[K]) -> f32[N] { conv1d(x, k) }
pub fn cv_f64[N, K](x: &f64[N], k: &f64[K]) -> f64[N] { conv1d(x, k) }
"""


@pytest.mark.parametrize(("n", "k"), [(0, 3), (5, 0), (1, 1), (8, 3), (3, 8), (50, 7)])
@pytest.mark.parametrize("adversarial", [False, True])
def test_conv1d(n: int, k: int, adversarial: bool) -> None:
    m = module(CONV)
    rng = np.random.default_rng(n * 10 + k)
    for name, dt in (("cv_f32", np.float32), ("cv_f64", np.float64)):
        compare(
            m,
            name,
            {"x": floats(rng, dt, n, adversarial), "k": floats(rng, dt, k, adversarial)},
            {},
        )


def test_conv1d_multiplies_past_the_end() -> None:
    """An infinite tap makes NaN even where x is read as +0 past its end."""
    m = module(CONV)
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    k = np.array([1.0, np.inf], dtype=np.float32)
    compare(m, "cv_f32", {"x": x, "k": k}, {})
    compare(m, "cv_f32", {"x": -x, "k": np.array([-0.0, -0.0], dtype=np.float32)}, {})


NORM = """
pub fn sm_f32[N](x: &f32[N]) -> f32[N] { softmax(x) }
pub fn sm_f64[N](x: &f64[N]) -> f64[N] { softmax(x) }
pub fn ln_f32[N](x: &f32[N], eps: f32) -> f32[N] { layernorm(x, eps) }
pub fn ln_f64[N](x: &f64[N], eps: f64) -> f64[N] { layernorm(x, eps) }
"""


@pytest.mark.parametrize("n", [0, 1, 2, 17, 1023, 1025, 2500])
@pytest.mark.parametrize("adversarial", [False, True])
def test_softmax_layernorm(n: int, adversarial: bool) -> None:
    m = module(NORM)
    rng = np.random.default_rng(n + 1000 * adversarial)
    for sfx, dt in (("f32", np.float32), ("f64", np.float64)):
        x = floats(rng, dt, n, adversarial)
        compare(m, f"sm_{sfx}", {"x": x}, {})
        with np.errstate(over="ignore"):
            big = x * dt(30)
        compare(m, f"sm_{sfx}", {"x": big}, {})
        for eps in (1e-5, 0.0, -1.0):
            compare(m, f"ln_{sfx}", {"x": x, "eps": dt(eps)}, {})


@pytest.mark.parametrize(
    "x",
    [
        [np.inf, 1.0],
        [-np.inf, -np.inf],
        [np.nan, 0.0],
        [-0.0, 0.0],
        [88.0, 89.0, -200.0],
        [5.0] * 4,
    ],
)
def test_softmax_layernorm_special(x) -> None:
    m = module(NORM)
    for sfx, dt in (("f32", np.float32), ("f64", np.float64)):
        a = np.array(x, dtype=dt)
        compare(m, f"sm_{sfx}", {"x": a}, {})
        compare(m, f"ln_{sfx}", {"x": a, "eps": dt(1e-5)}, {})


BROADCAST = """
pub fn outer[N, M](x: &f32[N, 1], y: &f32[M]) -> f32[N, M] { x * y }
pub fn rowb[N, M](x: &f32[N, M], y: &f32[M]) -> f32[N, M] { x - y }
pub fn colb[N](x: &f64[N, 3], y: &f64[N, 1]) -> f64[N, 3] { y / x }
pub fn cmpb[N](x: &i32[2, N], y: &i32[1, N]) -> bool[2, N] { x < y }
pub fn remb[N](x: &i16[N, 2], y: &i16[2]) -> i16[N, 2] { x % y }
pub fn three(x: &f32[2, 1, 4], y: &f32[3, 1]) -> f32[2, 3, 4] { maximum(x, y) }
pub fn chain[N, M](x: &f32[N, 1], y: &f32[1, M], z: &f32[M]) -> f32 { sum(&(x + y * z)) }
"""


@pytest.mark.parametrize(("n", "mm"), [(0, 3), (3, 0), (1, 1), (4, 5), (33, 17)])
@pytest.mark.parametrize("adversarial", [False, True])
def test_broadcasting(n: int, mm: int, adversarial: bool) -> None:
    m = module(BROADCAST)
    rng = np.random.default_rng(n * 100 + mm + adversarial)
    f32 = lambda *s: floats(rng, np.float32, s, adversarial)  # noqa: E731
    compare(m, "outer", {"x": f32(n, 1), "y": f32(mm)}, {})
    compare(m, "rowb", {"x": f32(n, mm), "y": f32(mm)}, {})
    x64, y64 = (
        floats(rng, np.float64, (n, 3), adversarial),
        floats(rng, np.float64, (n, 1), adversarial),
    )
    compare(m, "colb", {"x": x64, "y": y64}, {})
    compare(m, "cmpb", {"x": ints(rng, np.int32, (2, mm)), "y": ints(rng, np.int32, (1, mm))}, {})
    y16 = ints(rng, np.int16, 2)
    y16[y16 == 0] = 3
    compare(m, "remb", {"x": ints(rng, np.int16, (n, 2)), "y": y16}, {})
    compare(m, "three", {"x": f32(2, 1, 4), "y": f32(3, 1)}, {})
    compare(m, "chain", {"x": f32(n, 1), "y": f32(1, mm), "z": f32(mm)}, {})


def test_broadcast_division_by_zero_is_checked() -> None:
    m = module(BROADCAST)
    x = np.ones((3, 2), dtype=np.int16)
    compare(m, "remb", {"x": x, "y": np.array([1, 0], dtype=np.int16)}, {})


STRUCTS = """
pub struct Inner { pub a: i8, pub b: f64, pub c: bool }
pub struct Outer { pub x: f32, pub inner: Inner, pub n: u16, pub k: i64 }

pub fn make(x: f32, a: i8, b: f64) -> Outer {
    Outer { x: x / x, inner: Inner { a: a + a, b: b * 2.0, c: b < 0.0 }, n: 65535, k: -1 }
}
pub fn get_b(o: Outer) -> f64 { o.inner.b - 1.0 }
pub fn bump(o: &mut Outer, d: f32) { o.x = o.x + d; o.inner.a = o.inner.a - 1; o.n = o.n + 1; }
pub fn swap_inner(o: Outer, i: Inner) -> Outer {
    let mut p = o;
    p.inner = i;
    p
}
pub fn pick(c: bool, o: Outer, p: Outer) -> Inner { if c { o.inner } else { p.inner } }
pub fn iterate(o: Outer, steps: i64) -> Outer {
    let mut q = o;
    for _k in 0..steps {
        q.x = q.x * 0.5 + 1.0;
        q.inner.b = q.inner.b - q.x as f64;
        q.k = q.k * 3;
    }
    q
}
pub fn from_tensor[N](v: &f32[N]) -> Outer {
    Outer { x: sum(v), inner: Inner { a: 1, b: max(v) as f64, c: true }, n: 0, k: argmax(v) }
}
"""


def _outer(rng, adversarial: bool):
    f = floats(rng, np.float32, 1, adversarial)[0]
    b = floats(rng, np.float64, 1, adversarial)[0]
    inner = {"a": int(ints(rng, np.int8, 1)[0]), "b": b, "c": bool(rng.integers(2))}
    return {
        "x": f,
        "inner": inner,
        "n": int(ints(rng, np.uint16, 1)[0]),
        "k": int(ints(rng, np.int64, 1)[0]),
    }


@pytest.mark.parametrize("seed", range(8))
def test_structs(seed: int) -> None:
    m = module(STRUCTS)
    rng = np.random.default_rng(seed)
    adv = seed % 2 == 1
    o, p = _outer(rng, adv), _outer(rng, adv)
    compare(m, "make", {"x": o["x"], "a": o["inner"]["a"], "b": o["inner"]["b"]}, {})
    compare(m, "get_b", {"o": o}, {})
    compare(m, "bump", {"o": o, "d": p["x"]}, {})
    compare(m, "swap_inner", {"o": o, "i": p["inner"]}, {})
    for c in (False, True):
        compare(m, "pick", {"c": c, "o": o, "p": p}, {})
    for steps in (0, 1, 13):
        compare(m, "iterate", {"o": o, "steps": steps}, {})
    for n in (0, 1, 9):
        compare(m, "from_tensor", {"v": floats(rng, np.float32, n, adv)}, {})


def test_struct_nan_fields_are_canonical() -> None:
    m = module(STRUCTS)
    compare(m, "make", {"x": 0.0, "a": -128, "b": np.nan}, {})
    o = {
        "x": np.float32(np.nan),
        "inner": {"a": 127, "b": -np.inf, "c": True},
        "n": 65535,
        "k": 2**62,
    }
    compare(m, "iterate", {"o": o, "steps": 3}, {})
    compare(m, "bump", {"o": o, "d": np.float32(-np.inf)}, {})


CONSTS64 = """
pub fn neg64(x: i64) -> i64 { x * -1 + -9223372036854775807 }
pub fn big_u64(x: u64) -> u64 { x + 18446744073709551615 }
pub fn lit64() -> i64[3] { [-1, -9223372036854775807, 9223372036854775807] }
"""


def test_64_bit_constants() -> None:
    """Negative `i64` constants once assembled to out-of-range text (`i64.const -2^64-1`)."""
    m = module(CONSTS64)
    for x in (0, 5, -(2**63), 2**63 - 1):
        compare(m, "neg64", {"x": x}, {})
    for x in (0, 1, 2**64 - 1):
        compare(m, "big_u64", {"x": x}, {})
    compare(m, "lit64", {}, {})


FMOD = """
pub fn fm32[N](x: &f32[N], y: &f32[N]) -> f32[N] { x % y }
pub fn fm64[N](x: &f64[N], y: &f64[N]) -> f64[N] { x % y }
pub fn fm_scalar(x: f32, y: f32) -> f32 { x % y }
"""


def _fmod_operands(rng, dt, udt, n: int):
    bits = np.dtype(udt).itemsize * 8
    x = rng.integers(0, 2**bits, size=n, dtype=udt, endpoint=False).view(dt)
    y = rng.integers(0, 2**bits, size=n, dtype=udt, endpoint=False).view(dt)
    # close exponents (long division over few bits), subnormals, exact multiples
    k = n // 4
    with np.errstate(all="ignore"):
        y[:k] = (x[:k] * rng.uniform(0.01, 1.0, k).astype(dt)).astype(dt)
        y[k : 2 * k] = rng.integers(1, 2**20, size=k, dtype=udt).view(dt)  # subnormal y
        x[2 * k : 3 * k] = (y[2 * k : 3 * k] * rng.integers(1, 1000, k).astype(dt)).astype(dt)
    sp = SPECIAL32 if dt == np.float32 else SPECIAL64
    grid = np.array([(a, b) for a in sp for b in sp], dtype=dt)
    return np.concatenate([x, grid[:, 0]]), np.concatenate([y, grid[:, 1]])


@pytest.mark.parametrize("seed", range(3))
def test_float_rem_is_exact(seed: int) -> None:
    m = module(FMOD)
    rng = np.random.default_rng(seed)
    x, y = _fmod_operands(rng, np.float32, np.uint32, 20000)
    compare(m, "fm32", {"x": x, "y": y}, {})
    x, y = _fmod_operands(rng, np.float64, np.uint64, 20000)
    compare(m, "fm64", {"x": x, "y": y}, {})
    for a, b in [(-4.0, 2.0), (5.5, -2.0), (1e30, 3.0), (-1e-45, 1e-45), (7.0, np.inf)]:
        compare(m, "fm_scalar", {"x": a, "y": b}, {})


def test_structs_are_offered() -> None:
    m = module(STRUCTS)
    assert unsupported(m.graph, "get_b") == []


@pytest.mark.parametrize("name", ["pid.kera", "particles.kera"])
def test_struct_examples_same_bytes(name: str) -> None:
    from tests.test_wasm import ROOT, example, seeded

    m = example(f"{ROOT}/examples/{name}")
    for f in m.graph.exported():
        assert not unsupported(m.graph, f.name), f.name
        for adversarial in (False, True):
            inputs, dims = seeded(m, f.name, 1, adversarial)
            compare(m, f.name, inputs, dims)


FMA = """
pub fn fma32[N](a: &f32[N], b: &f32[N], c: &f32[N]) -> f32[N] { fma(a, b, c) }
pub fn fma32_bcast[N](a: f32, b: &f32[N], c: &f32[1]) -> f32[N] { fma(a, b, c) }
pub fn fma32_scalar(a: f32, b: f32, c: f32) -> f32 { fma(a, b, c) }
pub fn fma64[N](a: &f64[N], b: &f64[N], c: &f64[N]) -> f64[N] { fma(a, b, c) }
"""


def _fma32_operands(rng, n: int):
    """Random bit patterns, close exponents, subnormals, constructed ties and near-ties."""
    u = lambda k: rng.integers(0, 2**32, size=k, dtype=np.uint32)  # noqa: E731
    a, b, c = u(n).view(np.float32), u(n).view(np.float32), u(n).view(np.float32)
    k = n // 6
    with np.errstate(all="ignore"):
        # c of the product's size, so the sum cancels or carries
        s = slice(0, k)
        c[s] = (-(a[s].astype(np.float64) * b[s]) * rng.uniform(0.5, 2.0, k)).astype(np.float32)
        # small magnitudes: products and sums in the subnormal range
        s = slice(k, 2 * k)
        a[s] = (
            rng.integers(0, 2**23, k, dtype=np.uint32)
            | (rng.integers(100, 140, k, dtype=np.uint32) << 23)
        ).view(np.float32)
        b[s] = (
            rng.integers(0, 2**23, k, dtype=np.uint32)
            | (rng.integers(0, 30, k, dtype=np.uint32) << 23)
        ).view(np.float32)
        c[s] = (
            rng.integers(0, 2**24, k, dtype=np.uint32)
            | (rng.integers(0, 2, k, dtype=np.uint32) << 31)
        ).view(np.float32)
        # exact ties: c = r, a*b = ±ulp(r)/2 (a a power of two)
        s = slice(2 * k, 3 * k)
        r = (rng.integers(1, 2**31, k, dtype=np.uint32) & np.uint32(0x7F7FFFFF)).view(np.float32)
        r = np.where(rng.random(k) < 0.5, -r, r).astype(np.float32)
        half = (np.spacing(np.abs(r)).astype(np.float64) / 2) * np.where(rng.random(k) < 0.5, -1, 1)
        e = rng.integers(-20, 20, k)
        a[s] = np.ldexp(1.0, e).astype(np.float32)
        b[s] = (half / a[s].astype(np.float64)).astype(np.float32)
        c[s] = r
        # near-ties below f64's precision: naive f64 rounding would land on the tie
        s = slice(3 * k, 4 * k)
        a[s] = np.float32(1 + 2**-23) * np.ldexp(1.0, e).astype(np.float32)
        b[s] = ((half / np.ldexp(1.0, e)) * (1 - 2**-23)).astype(np.float32)
        c[s] = r
        s = slice(4 * k, 5 * k)
        a[s] = np.float32(1 - 2**-24) * np.ldexp(1.0, e).astype(np.float32)
        b[s] = ((half / np.ldexp(1.0, e)) * (1 + 2**-23)).astype(np.float32)
        c[s] = r
    sp = SPECIAL32
    grid = np.array([(x, y, z) for x in sp for y in sp for z in sp], dtype=np.float32)
    return (
        np.concatenate([a, grid[:, 0]]),
        np.concatenate([b, grid[:, 1]]),
        np.concatenate([c, grid[:, 2]]),
    )


@pytest.mark.parametrize("seed", range(2))
def test_fma_f32_is_exact(seed: int) -> None:
    m = module(FMA)
    rng = np.random.default_rng(seed)
    a, b, c = _fma32_operands(rng, 30000)
    compare(m, "fma32", {"a": a, "b": b, "c": c}, {})


def test_fma_f32_broadcast_and_scalar() -> None:
    m = module(FMA)
    rng = np.random.default_rng(5)
    for adv in (False, True):
        b = floats(rng, np.float32, (37,), adv)
        compare(
            m,
            "fma32_bcast",
            {"a": np.float32(1.5), "b": b, "c": floats(rng, np.float32, (1,), adv)},
            {},
        )
    cases = [
        (np.inf, 0.0, 1.0),
        (0.0, -1.0, -0.0),
        (-0.0, 1.0, -0.0),
        (3.4e38, 3.4e38, -np.inf),
        (3.4e38, 2.0, 0.0),
        (1e-45, 0.5, 0.0),
        (1e-45, -0.5, -0.0),
        (np.nan, 1.0, 1.0),
        (1.0, 1.0, -1.0),
    ]
    for x, y, z in cases:
        compare(m, "fma32_scalar", {"a": x, "b": y, "c": z}, {})


def test_fma_is_supported_in_both_formats() -> None:
    m = module(FMA)
    assert unsupported(m.graph, "fma64") == []
    assert unsupported(m.graph, "fma32") == []


PRINTS = """
struct In { a: i8, b: f64 }
struct Out { p: In, q: bool }
pub fn pr_scalars(a: i8, b: u8, c: i16, d: u16, e: i32, f: u32, g: i64, h: u64, k: bool, x: f32, y: f64) ! io {
    print("a=\\t\\"q\\" \\u{3A3}\\n"); print(a); print(" "); print(b); print(" "); print(c);
    print(" "); print(d); print(" "); print(e); print(" "); print(f); print(" "); print(g);
    print(" "); print(h); print(" "); print(k); print(" "); print(x); print(" "); print(y);
    print("\\n");
}
pub fn pr_tensors[R, C](x: &f32[R, C], y: &f64[C], z: &i64[R], w: &bool[C]) -> f32 ! io {
    print(x); print(y); print(z); print(w); print(x * 2.0);
    sum(x)
}
pub fn pr_struct(a: i8, b: f64, q: bool) ! io {
    print(Out { p: In { a: a, b: b }, q: q });
}
pub fn pure(x: f32) -> f32 { x + 1.0 }
"""


def _compare_printed(m, name, inputs, dims) -> None:
    from kera_core.interp.api import run_function
    from kera_core.targets.wasm import run_module

    compare(m, name, inputs, dims)
    ref = run_function(m, name, inputs, dims)
    got = run_module(m, name, inputs, dims)
    assert got.printed == ref.printed and got.has_io and got.digest() == ref.digest()


def test_print_scalars() -> None:
    m = module(PRINTS)
    for y in (0.1, -0.0, np.nan, np.inf, -np.inf, 1e16, 1.5e-5, 5e-324, 123.25):
        for x in (np.float32(0.1), np.float32(-1e-45), np.float32(np.nan), np.float32(3.4e38)):
            args = dict(a=-128, b=255, c=-32768, d=65535, e=-(2**31), f=2**32 - 1)
            args.update(g=-(2**63), h=2**64 - 1, k=True, x=x, y=y)
            _compare_printed(m, "pr_scalars", args, {})


@pytest.mark.parametrize(("rr", "cc"), [(0, 3), (2, 0), (1, 1), (3, 4)])
def test_print_tensors(rr: int, cc: int) -> None:
    m = module(PRINTS)
    rng = np.random.default_rng(rr * 10 + cc)
    inputs = {
        "x": floats(rng, np.float32, (rr, cc), True),
        "y": floats(rng, np.float64, (cc,), True),
        "z": ints(rng, np.int64, (rr,)),
        "w": rng.random(cc) < 0.5,
    }
    _compare_printed(m, "pr_tensors", inputs, {})


def test_print_structs_and_imports() -> None:
    from kera_core.backends.wasm import lower_wat

    m = module(PRINTS)
    for b in (0.5, np.nan, -np.inf):
        _compare_printed(m, "pr_struct", {"a": -3, "b": b, "q": False}, {})
    assert "(import" not in lower_wat(m.graph, "pure")
    assert '(import "kera" "print"' in lower_wat(m.graph, "pr_struct")


def test_print_examples() -> None:
    from tests.test_wasm import ROOT, example, seeded

    m = example(f"{ROOT}/examples/transfer.kera")
    for name in ("report", "scale_relu_roundtrip", "maybe_print"):
        assert unsupported(m.graph, name) == []
        for seed, adversarial in [(0, False), (1, True), (2, True)]:
            inputs, dims = seeded(m, name, seed, adversarial)
            _compare_printed(m, name, inputs, dims)


def test_print_functions_are_offered() -> None:
    m = module(PRINTS)
    assert unsupported(m.graph, "pr_struct") == []
