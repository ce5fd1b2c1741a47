"""Canonical reductions and the builtins built on them (docs/semantics.md §6-§7).

A float sum is defined over the *logical* element order (row-major), independent of
how a target lays the work out:

* the elements are cut into **tiles** of ``TILE = LANES * STEPS = 16 * 64 = 1024``
  consecutive elements (the last tile may be short);
* inside a tile, **lane** ``j`` (0..15) starts at +0.0 and adds, one rounding at a time,
  the tile's elements ``j, j + 16, j + 32, …`` in increasing order;
* the 16 lane totals are combined by a fixed tree: ``l[j] + l[j + 8]`` (j < 8), then
  ``+ [j + 4]`` (j < 4), ``+ [j + 2]``, ``+ [j + 1]`` — the tile total;
* tile totals are combined by the **left-complete binary tree** over tile indices:
  a range of ``n > 1`` tiles is split after the largest power of two below ``n``, and the
  two halves' sums are added (left + right). An empty sum is +0.0.

A SIMD unit of 4, 8 or 16 lanes keeps 16 accumulators (4, 2 or 1 registers); threads or
machines each take a contiguous run of whole tiles and send the sums of the tree nodes
their run covers (``tree_cover``); anyone can finish the tree (``merge_nodes``). The split
API below is exactly that, and tests/test_interp_reduce.py checks that every split gives
the same bits.
"""

from __future__ import annotations

import numpy as np

from kera_core.interp.fp import canon, fmt_of, int_to_float, maximum, minimum

LANES = 16
STEPS = 64
TILE = LANES * STEPS

Node = tuple[int, int]  # a tree node: the half-open range [lo, hi) of tile indices


# --- tiles ---------------------------------------------------------------------------


def tile_sums(x) -> np.ndarray:
    """The total of every tile of the 1-D float array ``x`` (short last tile included)."""
    x = np.ascontiguousarray(x).reshape(-1)
    dt = x.dtype
    n = x.size
    nt = -(-n // TILE)
    if nt == 0:
        return np.zeros(0, dtype=dt)
    if n != nt * TILE:
        # +0.0 padding is invisible: a lane accumulator starts at +0.0 and is never -0.0
        # (x + y is -0.0 only when both are -0.0), and acc + (+0.0) == acc otherwise.
        xp = np.zeros(nt * TILE, dtype=dt)
        xp[:n] = x
        x = xp
    blocks = x.reshape(nt, STEPS, LANES)
    acc = np.zeros((nt, LANES), dtype=dt)
    with np.errstate(all="ignore"):
        for s in range(STEPS):
            np.add(acc, blocks[:, s, :], out=acc)
        return lane_tree(acc)


def lane_tree(acc: np.ndarray) -> np.ndarray:
    """Combine 16 lane totals (last axis) by the fixed tree (0+8, 1+9, …; then +4, +2, +1)."""
    width = LANES
    v = acc
    while width > 1:
        width //= 2
        v = v[..., :width] + v[..., width : 2 * width]
    return v[..., 0]


# --- the tree over tiles ------------------------------------------------------------------


def _split(lo: int, hi: int) -> int:
    """Where the canonical tree splits [lo, hi): after the largest power of two below n."""
    n = hi - lo
    return lo + (1 << ((n - 1).bit_length() - 1))


def tree_sum(partials: np.ndarray):
    """Sum tile totals with the left-complete tree (vectorised by complete subtrees)."""
    n = partials.size
    if n == 0:
        return None
    with np.errstate(all="ignore"):
        return _tree(partials, 0, n)


def _complete(v: np.ndarray):
    """A power-of-two run: pairwise levels, (0+1), (2+3), … then again."""
    while v.size > 1:
        v = v[0::2] + v[1::2]
    return v[0]


def _tree(p: np.ndarray, lo: int, hi: int):
    if hi - lo == 1:
        return p[lo]
    mid = _split(lo, hi)
    left = _complete(p[lo:mid])  # the left part is always a complete, aligned subtree
    return left + _tree(p, mid, hi)


def tree_cover(lo: int, hi: int, n: int) -> list[Node]:
    """The maximal nodes of the tree over ``n`` tiles that lie inside tiles [lo, hi).

    A worker that owns tiles [lo, hi) computes exactly these nodes' sums; the nodes of
    all workers together determine the root.
    """
    out: list[Node] = []

    def walk(a: int, b: int) -> None:
        if b <= lo or a >= hi:
            return
        if lo <= a and b <= hi:
            out.append((a, b))
            return
        m = _split(a, b)
        walk(a, m)
        walk(m, b)

    if n:
        walk(0, n)
    return out


def node_sum(partials: np.ndarray, node: Node, first_tile: int = 0):
    """The sum of one tree node from tile totals that start at tile ``first_tile``."""
    a, b = node
    with np.errstate(all="ignore"):
        return _tree(partials, a - first_tile, b - first_tile)


def merge_nodes(known: dict[Node, object], n: int):
    """Finish the tree over ``n`` tiles from node sums computed elsewhere."""

    def get(a: int, b: int):
        v = known.get((a, b))
        if v is not None:
            return v
        if b - a == 1:
            raise KeyError(f"tile {a} is covered by no worker")
        m = _split(a, b)
        return get(a, m) + get(m, b)

    with np.errstate(all="ignore"):
        return get(0, n)


# --- the builtins -------------------------------------------------------------------------


def canonical_sum(x):
    """``sum`` of a float tensor: the canonical tree; NaN canonical."""
    x = np.asarray(x)
    dt = x.dtype
    parts = tile_sums(x)
    if parts.size == 0:
        return dt.type(0)
    return canon(dt.type(tree_sum(parts)))


def int_sum(x):
    """``sum`` of an integer tensor: wrapping, so every order gives the same result."""
    x = np.asarray(x)
    return np.add.reduce(x.reshape(-1), dtype=x.dtype)


def total(x):
    x = np.asarray(x)
    return canonical_sum(x) if x.dtype.kind == "f" else int_sum(x)


def mean(x):
    """``sum(x) / n``, n converted to the element type (nearest even); integers truncate."""
    x = np.asarray(x)
    n = x.size
    s = total(x)
    if x.dtype.kind == "f":
        with np.errstate(all="ignore"):
            return canon(s / int_to_float(np.int64(n), fmt_of(x))[()])
    if n == 0:
        raise ZeroDivisionError
    q = abs(int(s)) // n
    return x.dtype.type(q if int(s) >= 0 else -q)


def _order_key(x):
    """An unsigned key whose order is the total order -inf < … < -0 < +0 < … < +inf < NaN."""
    f = fmt_of(x)
    b = np.ascontiguousarray(x).view(f.udtype)
    sign = f.udtype(1 << (f.bits - 1))
    key = np.where(b & sign, ~b, b | sign)
    return np.where(np.isnan(x), np.iinfo(f.udtype).max, key)


def reduce_max(x):
    """Largest element; NaN if any element is NaN; +0 is larger than -0."""
    x = np.asarray(x).reshape(-1)
    if x.dtype.kind != "f":
        return x.max()
    i = int(np.argmax(_order_key(x)))
    return canon(x[i])


def reduce_min(x):
    """Smallest element; NaN if any element is NaN; -0 is smaller than +0."""
    x = np.asarray(x).reshape(-1)
    if x.dtype.kind != "f":
        return x.min()
    if np.isnan(x).any():
        return fmt_of(x).nan
    return x[int(np.argmin(_order_key(x)))]


def argmax(x):
    """Lowest index of the largest element; NaN counts as larger than every number."""
    x = np.asarray(x).reshape(-1)
    if x.dtype.kind == "f":
        return np.int64(np.argmax(_order_key(x)))
    return np.int64(np.argmax(x))


def argmin(x):
    """Lowest index of the smallest element; NaN counts as smaller than every number, so the
    first NaN wins and ``x[argmin(x)]`` is ``min(x)``."""
    x = np.asarray(x).reshape(-1)
    if x.dtype.kind == "f":
        return np.int64(np.argmin(_min_key(x)))
    return np.int64(np.argmin(x))


def _min_key(x):
    """The key of argmin's order NaN < -inf < … < -0 < +0 < … < +inf."""
    return np.where(np.isnan(x), 0, _order_key(x))


# --- along one axis (docs/semantics.md §7.6) ----------------------------------------------------
#
# Each result element is the rank-1 operation over the elements along the axis, in increasing
# index order. The functions below compute all of them at once, vectorised over the other axes,
# with exactly the rank-1 functions' operations (tests/test_axis_reductions.py compares every
# slice with the rank-1 function bit for bit).


def rows_of(x, axis: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """``x`` as a 2-D array with one row per position of the other axes (in row-major order
    of those axes) and the axis along each row; and the shape of those other axes."""
    x = np.asarray(x)
    moved = np.moveaxis(x, axis, -1)
    rest = moved.shape[:-1]
    count = 1
    for d in rest:
        count *= d
    return np.ascontiguousarray(moved).reshape(count, x.shape[axis]), rest


def _back(rows: np.ndarray, x, axis: int) -> np.ndarray:
    """Rows of a shape-keeping operation put back in ``x``'s layout."""
    x = np.asarray(x)
    moved = np.moveaxis(x, axis, -1).shape
    return np.ascontiguousarray(np.moveaxis(rows.reshape(moved), -1, axis))


def canonical_sum_rows(r: np.ndarray) -> np.ndarray:
    """The canonical sum of every row of the 2-D float array ``r`` (§7.1 per row)."""
    rows, n = r.shape
    dt = r.dtype
    nt = -(-n // TILE)
    if nt == 0:
        return np.zeros(rows, dtype=dt)
    if n != nt * TILE:
        rp = np.zeros((rows, nt * TILE), dtype=dt)  # +0.0 padding, as in tile_sums
        rp[:, :n] = r
        r = rp
    blocks = r.reshape(rows, nt, STEPS, LANES)
    acc = np.zeros((rows, nt, LANES), dtype=dt)
    with np.errstate(all="ignore"):
        for s in range(STEPS):
            np.add(acc, blocks[:, :, s, :], out=acc)
        return canon(_tree_rows(lane_tree(acc), 0, nt))


def _tree_rows(p: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``_tree`` over the last axis of ``p`` (tile totals of each row)."""
    if hi - lo == 1:
        return p[:, lo]
    mid = _split(lo, hi)
    v = p[:, lo:mid]
    while v.shape[1] > 1:
        v = v[:, 0::2] + v[:, 1::2]
    return v[:, 0] + _tree_rows(p, mid, hi)


def _total_rows(r: np.ndarray) -> np.ndarray:
    if r.dtype.kind == "f":
        return canonical_sum_rows(r)
    return np.add.reduce(r, axis=1, dtype=r.dtype)


def _mean_rows(r: np.ndarray) -> np.ndarray:
    n = r.shape[1]
    s = _total_rows(r)
    if r.dtype.kind == "f":
        with np.errstate(all="ignore"):
            return canon(s / int_to_float(np.int64(n), fmt_of(r))[()])
    if n == 0:
        raise ZeroDivisionError
    q = [abs(int(v)) // n * (1 if int(v) >= 0 else -1) for v in s]
    return np.array(q, dtype=r.dtype).reshape(s.shape)


def _pick(r: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return r[np.arange(r.shape[0]), idx]


def _extreme_rows(r: np.ndarray, which: str) -> np.ndarray:
    if r.dtype.kind != "f":
        return r.max(axis=1) if which == "max" else r.min(axis=1)
    if which == "max":
        return canon(_pick(r, np.argmax(_order_key(r), axis=1)))
    return canon(_pick(r, np.argmin(_min_key(r), axis=1)))


def _arg_rows(r: np.ndarray, which: str) -> np.ndarray:
    if r.dtype.kind == "f":
        key = _order_key(r) if which == "argmax" else _min_key(r)
    else:
        key = r
    idx = np.argmax(key, axis=1) if which == "argmax" else np.argmin(key, axis=1)
    return idx.astype(np.int64)


def _softmax_rows(r: np.ndarray) -> np.ndarray:
    from kera_core.interp.mathfns import exp

    m = _extreme_rows(r, "max")
    with np.errstate(all="ignore"):
        e = exp(r - m[:, None])
        return canon(e / canonical_sum_rows(e)[:, None])


def _layernorm_rows(r: np.ndarray, eps) -> np.ndarray:
    mu = _mean_rows(r)
    with np.errstate(all="ignore"):
        d = r - mu[:, None]
        v = _mean_rows(d * d)
        return canon(d / np.sqrt(v + eps)[:, None])


def along(op: str, x, axis: int, eps=None) -> np.ndarray:
    """``op(x, …, axis)``: ``sum mean max min argmax argmin`` (the axis removed) or
    ``softmax layernorm`` (the shape kept). The caller checks an empty axis (R0004)."""
    x = np.asarray(x)
    r, rest = rows_of(x, axis)
    if op == "softmax":
        if r.shape[0] == 0:
            return x.copy()
        return _back(_softmax_rows(r), x, axis)
    if op == "layernorm":
        if r.shape[0] == 0:
            return x.copy()
        return _back(_layernorm_rows(r, eps), x, axis)
    if r.shape[0] == 0:
        dt = np.int64 if op in ("argmax", "argmin") else x.dtype
        return np.zeros(rest, dtype=dt)
    if op == "sum":
        out = _total_rows(r)
    elif op == "mean":
        out = _mean_rows(r)
    elif op in ("max", "min"):
        out = _extreme_rows(r, op)
    else:
        out = _arg_rows(r, op)
    return np.asarray(out).reshape(rest)


def dot(x, y):
    """Products rounded once each, then the canonical sum (no fma)."""
    x, y = np.asarray(x), np.asarray(y)
    with np.errstate(all="ignore"):
        p = x * y
    return total(p)


def matmul(a, b):
    """c[i, j] = (((+0 + a[i,0]*b[0,j]) + a[i,1]*b[1,j]) + …): k in increasing order."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim == 1:  # [K] x [K, N] -> [N]: a one-row matrix
        return matmul(a.reshape(1, -1), b).reshape(-1)
    vec = b.ndim == 1
    bm = b.reshape(b.shape[0], 1) if vec else b
    m, k = a.shape
    n = bm.shape[1]
    acc = np.zeros((m, n), dtype=a.dtype)
    with np.errstate(all="ignore"):
        for kk in range(k):
            acc += a[:, kk : kk + 1] * bm[kk : kk + 1, :]
    acc = canon(acc)
    return acc.reshape(m) if vec else acc


def conv1d(x, k):
    """y[i] = (((+0 + x[i]*k[0]) + x[i+1]*k[1]) + …), x read as +0.0 past its end."""
    x, k = np.asarray(x), np.asarray(k)
    n, kn = x.size, k.size
    xp = np.zeros(n + kn, dtype=x.dtype)
    xp[:n] = x
    acc = np.zeros(n, dtype=x.dtype)
    with np.errstate(all="ignore"):
        for j in range(kn):
            acc += xp[j : j + n] * k[j]
    return canon(acc)


def softmax(x):
    """e = exp(x - max(x)); e / sum(e)."""
    from kera_core.interp.mathfns import exp

    x = np.asarray(x)
    m = reduce_max(x)
    with np.errstate(all="ignore"):
        e = exp(x - m)
        return canon(e / canonical_sum(e))


def layernorm(x, eps):
    """d = x - mean(x); d / sqrt(mean(d * d) + eps)."""
    x = np.asarray(x)
    mu = mean(x)
    with np.errstate(all="ignore"):
        d = x - mu
        v = mean(d * d)
        return canon(d / np.sqrt(v + eps))


__all__ = [
    "LANES",
    "STEPS",
    "TILE",
    "along",
    "argmax",
    "argmin",
    "canonical_sum",
    "canonical_sum_rows",
    "conv1d",
    "dot",
    "lane_tree",
    "layernorm",
    "matmul",
    "maximum",
    "mean",
    "merge_nodes",
    "minimum",
    "node_sum",
    "reduce_max",
    "reduce_min",
    "rows_of",
    "softmax",
    "tile_sums",
    "total",
    "tree_cover",
    "tree_sum",
]
