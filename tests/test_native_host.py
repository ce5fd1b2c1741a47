"""The host runner's memory (kera_core/native/host.py): large blocks of finished runs are
pooled for the next run — never while the caller still holds a result in one, always zeroed
when handed out again, and bounded."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp.api import run_function as reference
from kera_core.native.host import BlockPool, Heap

MB = 1 << 20


def test_a_block_is_reused_only_when_nothing_holds_it() -> None:
    pool = BlockPool()
    raw = np.zeros(2 * MB, np.uint8)
    view = raw[64 : 64 + 4000].view(np.float32).reshape(10, 100)  # a result's view
    pool.give(raw)
    del raw
    assert pool.take(2 * MB - 100) is None  # the view holds it
    del view
    assert pool.take(2 * MB - 100) is not None


def test_a_reused_block_comes_back_zeroed_and_sizes_fit() -> None:
    heap = Heap(1 << 30, BlockPool())
    a = heap._alloc(3 * MB)
    np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * (3 * MB)).from_address(a))[:] = 0xAB
    heap._free(a)
    assert heap._alloc(8 * MB) != a  # far larger: not that block
    b = heap._alloc(3 * MB - 5)
    assert b == a  # the same memory again...
    got = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * (3 * MB - 5)).from_address(b))
    assert not got.any()  # ...zeroed
    assert heap._alloc(100) != 0  # small blocks are numpy's, never pooled
    heap.close()


def test_the_pool_is_bounded() -> None:
    pool = BlockPool(capacity=8 * MB)
    for _ in range(10):
        pool.give(np.zeros(3 * MB, np.uint8))
    assert pool.bytes <= 8 * MB and len(pool.blocks) == 2
    pool.give(np.zeros(100, np.uint8))  # too small to keep
    assert len(pool.blocks) == 2


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 code")
def test_results_the_caller_holds_survive_later_runs() -> None:
    """Run a function with a 4 MB result twice with other inputs, holding the first result:
    it keeps the interpreter's bytes; dropping results lets the memory be reused."""
    from kera_core.backends.x86_64 import compile as X
    from kera_core.backends.x86_64.runtime import Loaded, run

    m = analyze("pub fn f[N](a: f32, x: &f32[N]) -> f32[N] { a * x + 1.0 }").module
    data, _ = X.build(m.graph, "f", X.isa_for(None))
    loaded = Loaded(X.read(data, m.graph)[1])
    try:
        n = 1 << 20
        x = np.arange(n, dtype=np.float32)
        first = run(loaded, m, "f", {"a": np.float32(2.0), "x": x})
        keep = first.digest()
        for k in range(3):
            again = run(loaded, m, "f", {"a": np.float32(3.0 + k), "x": x})
            want = reference(m, "f", {"a": np.float32(3.0 + k), "x": x})
            assert again.digest() == want.digest()
        assert first.digest() == keep
        assert keep == reference(m, "f", {"a": np.float32(2.0), "x": x}).digest()
    finally:
        loaded.close()
