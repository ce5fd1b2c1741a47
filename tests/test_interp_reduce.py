"""The canonical reduction order (docs/semantics.md §6): one result for every layout.

A sum computed on 4, 8 or 16 SIMD lanes, by several threads or machines each owning a
contiguous run of whole tiles, must give the bits of the reference definition.
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.interp import reduce as R
from kera_core.interp.reduce import LANES, STEPS, TILE


def ref_sum(x: np.ndarray):
    """The definition, written as plain scalar loops (independent of the vectorised code)."""
    dt = x.dtype.type
    xs = [dt(v) for v in x.reshape(-1)]
    n = len(xs)
    tiles = []
    for t0 in range(0, n, TILE):
        lanes = [dt(0)] * LANES
        for j in range(LANES):
            for s in range(STEPS):
                i = t0 + s * LANES + j
                if i < n:
                    lanes[j] = dt(lanes[j] + xs[i])
        w = LANES
        while w > 1:
            w //= 2
            lanes = [dt(lanes[j] + lanes[j + w]) for j in range(w)]
        tiles.append(lanes[0])

    def rec(lo: int, hi: int):
        if hi - lo == 1:
            return tiles[lo]
        h = 1
        while h * 2 < hi - lo:
            h *= 2
        return dt(rec(lo, lo + h) + rec(lo + h, hi))

    return rec(0, len(tiles)) if tiles else dt(0)


def bits(v) -> int:
    a = np.asarray(v)
    return int(a.view(np.uint32 if a.dtype == np.float32 else np.uint64))


def wild(n: int, seed: int, dtype=np.float32) -> np.ndarray:
    """Values over many binades, so a different order almost surely changes the bits."""
    rng = np.random.default_rng(seed)
    mag = np.exp(rng.uniform(-30, 30, n))
    return (mag * rng.choice([-1.0, 1.0], n)).astype(dtype)


@pytest.mark.parametrize("n", [0, 1, 15, 16, 17, 1023, 1024, 1025, 3000, 4096 + 77])
def test_vectorised_sum_is_the_definition(n):
    with np.errstate(all="ignore"):
        x = wild(n, n)
        assert bits(R.canonical_sum(x)) == bits(ref_sum(x))
        x64 = wild(n, n + 1, np.float64)
        assert bits(R.canonical_sum(x64)) == bits(ref_sum(x64))


def simd_tile_sums(x: np.ndarray, width: int) -> list:
    """A machine with `width`-lane registers: 16 // width accumulator registers per tile."""
    dt = x.dtype
    n = x.size
    out = []
    for t0 in range(0, n, TILE):
        regs = [np.zeros(width, dt) for _ in range(LANES // width)]
        for s in range(STEPS):
            for r in range(len(regs)):
                lo = t0 + s * LANES + r * width
                chunk = np.zeros(width, dt)
                got = x[lo : min(lo + width, n)] if lo < n else x[:0]
                chunk[: got.size] = got
                regs[r] = regs[r] + chunk
        span = LANES
        while span > 1:
            half = span // 2
            if half >= width:  # whole registers: vertical adds
                k = half // width
                regs = [regs[r] + regs[r + k] for r in range(k)]
            else:  # inside one register: shuffles
                v = regs[0]
                regs = [v[:half] + v[half:span]]
            span = half
        out.append(regs[0][0])
    return out


@pytest.mark.parametrize("width", [4, 8, 16])
def test_physical_lane_widths_agree(width):
    with np.errstate(all="ignore"):
        for n in (5, 1024, 2500):
            x = wild(n, 10 * width + n)
            parts = np.array(simd_tile_sums(x, width), dtype=x.dtype)
            assert bits(R.tree_sum(parts)) == bits(R.canonical_sum(x))


def piece_bounds(n_tiles: int, pieces: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    cuts = sorted(rng.choice(np.arange(1, n_tiles), size=pieces - 1, replace=False).tolist())
    return [0, *cuts, n_tiles]


@pytest.mark.parametrize("pieces", [1, 2, 3, 7])
@pytest.mark.parametrize("n", [20 * TILE, 20 * TILE - 300, 13 * TILE + 1])
def test_split_across_workers(pieces, n):
    """Each worker sums whole tiles [a, b) and sends the tree nodes it covers."""
    with np.errstate(all="ignore"):
        x = wild(n, pieces * 1000 + n)
        n_tiles = -(-n // TILE)
        bounds = piece_bounds(n_tiles, pieces, pieces)
        known = {}
        for a, b in zip(bounds, bounds[1:], strict=False):
            piece = x[a * TILE : min(b * TILE, n)]
            tiles = R.tile_sums(piece)  # computed without seeing the rest of x
            for node in R.tree_cover(a, b, n_tiles):
                known[node] = R.node_sum(tiles, node, first_tile=a)
        assert bits(R.merge_nodes(known, n_tiles)) == bits(R.canonical_sum(x))


def test_tree_cover_is_a_partition():
    for n in range(1, 40):
        for lo in range(n):
            for hi in range(lo + 1, n + 1):
                nodes = R.tree_cover(lo, hi, n)
                covered = sorted(t for a, b in nodes for t in range(a, b))
                assert covered == list(range(lo, hi))


def test_order_matters_so_the_tests_mean_something():
    x = wild(5000, 3)
    with np.errstate(all="ignore"):
        seq = np.float32(0)
        for v in x:
            seq = np.float32(seq + v)
    assert bits(seq) != bits(R.canonical_sum(x))


def test_empty_and_zero_sums_are_plus_zero():
    assert bits(R.canonical_sum(np.zeros(0, np.float32))) == 0
    assert bits(R.canonical_sum(np.array([-0.0, -0.0], np.float32))) == 0


def test_nan_and_inf_in_sums():
    x = np.ones(3000, np.float32)
    x[2000] = np.inf
    assert R.canonical_sum(x) == np.inf
    x[10] = -np.inf
    assert bits(R.canonical_sum(x)) == 0x7FC00000
    y = np.ones(10, np.float32)
    y[3] = np.array(0xFFC00123, np.uint32).view(np.float32)  # a negative NaN with payload
    assert bits(R.canonical_sum(y)) == 0x7FC00000


def test_integer_sum_wraps():
    x = np.array([2**31 - 1, 1, 5], dtype=np.int32)
    assert R.total(x) == np.int32(-(2**31) + 5)


def test_max_min_argmax_rules():
    z = np.array([-0.0, 0.0, -0.0], np.float32)
    assert bits(R.reduce_max(z)) == 0
    assert bits(R.reduce_min(np.array([0.0, -0.0], np.float32))) == 0x80000000
    assert R.argmax(z) == 1
    assert R.argmax(np.array([1.0, 3.0, 3.0, 2.0], np.float32)) == 1
    nan = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    assert R.argmax(nan) == 1
    assert bits(R.reduce_max(nan)) == 0x7FC00000
    assert bits(R.reduce_min(nan)) == 0x7FC00000
    assert R.argmax(np.array([3, 9, 9], np.int8)) == 1


def test_dot_rounds_products_then_uses_the_tree():
    x, y = wild(3000, 1), wild(3000, 2)
    with np.errstate(all="ignore"):
        assert bits(R.dot(x, y)) == bits(ref_sum(x * y))


def test_matmul_is_a_sequential_k_loop():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 40)).astype(np.float32)
    b = rng.standard_normal((40, 2)).astype(np.float32)
    c = R.matmul(a, b)
    for i in range(3):
        for j in range(2):
            acc = np.float32(0)
            for k in range(40):
                acc = np.float32(acc + np.float32(a[i, k] * b[k, j]))
            assert bits(c[i, j]) == bits(acc)
    assert np.array_equal(R.matmul(a, b[:, 0]), c[:, 0])
    assert np.array_equal(R.matmul(a[0], b), c[0])


def test_conv1d_reads_zeros_past_the_end():
    x = np.array([1, 2, 3, 4], np.float32)
    k = np.array([1, 10, 100], np.float32)
    assert R.conv1d(x, k).tolist() == [321.0, 432.0, 43.0, 4.0]
    # the padding is multiplied, so an infinite kernel tap makes NaN
    k2 = np.array([1, np.inf], np.float32)
    out = R.conv1d(x, k2)
    assert np.isnan(out[-1]) and bits(out[-1]) == 0x7FC00000
