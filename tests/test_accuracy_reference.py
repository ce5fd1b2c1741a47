"""The binary64 reference of the accuracy tables (docs/semantics.md §6.7, §6.9): MPFR through
gmpy2 (tests/elementary_ref.py's ``gm_reference``, what scripts/ulp_table.py measures with)
agrees with mpmath at 256 bits (``mp_value``, raised with the exponent for the trigonometric
functions) on ~10^4 inputs per function — the tables' own sample and special bit patterns
(zeros, subnormals, every 7th of each exponent's edge patterns, infinities, NaNs): the same
correctly rounded binary64 result, and the same error of the interpreter's result in ulps.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.elementary_ref import gm_reference, mp_value, round_mp, ulp_error
from tests.test_elementary import BIN, F64, kera64, sample64
from tests.test_exact_functions import special_bits

pytest.importorskip("gmpy2")
mpmath = pytest.importorskip("mpmath")

N = 6_000  # sampled inputs per function, besides the ~4,700 special bit patterns


def _inputs(fn: str) -> tuple[np.ndarray, np.ndarray | None]:
    special = np.array(special_bits("f64")[::7], np.uint64).view(np.float64)
    a, b = sample64(fn, N, 21)
    if fn not in BIN:
        return np.concatenate([a[:N], special]), None
    rng = np.random.default_rng(22)
    other = special[rng.permutation(special.size)]
    return np.concatenate([a[:N], special]), np.concatenate([b[:N], other])


@pytest.mark.parametrize("fn", F64)
def test_gmpy2_agrees_with_mpmath(fn: str) -> None:
    a, b = _inputs(fn)
    with np.errstate(all="ignore"):
        got = kera64(fn, a, b)
    err, want = gm_reference(fn, got, a, b)
    assert np.isfinite(want).sum() > a.size // 2  # mostly finite, nonzero work
    for i in range(a.size):
        args = (float(a[i]),) if b is None else (float(a[i]), float(b[i]))
        v = mp_value(fn, *args)
        w = round_mp(v, "f64")
        assert w == want[i] or (w != w and want[i] != want[i]), (fn, args, w, want[i])
        e = ulp_error(float(got[i]), v, "f64")
        assert e == err[i] or abs(e - err[i]) <= 1e-9 * max(e, 1.0), (fn, args, e, err[i])


def test_gmpy2_decides_midpoints_and_the_range_ends_exactly() -> None:
    """Exact binary64 midpoints (pow's exact squares, 2^−1075) round to even, subnormal
    results round once, a result just below the overflow threshold is finite."""
    u = 2.0**-27
    a = np.array([1 + u, 1 + 3 * u, -(1 + u), 2.0**-537, 1.5 * 2.0**-538, 2.0**-538])
    b = np.full(a.size, 2.0)
    got = kera64("pow", a, b)
    _, want = gm_reference("pow", got, a, b)
    for i in range(a.size):
        assert want[i] == round_mp(mp_value("pow", float(a[i]), 2.0), "f64")
    assert want[0] == want[2] == 1 + 2.0**-26  # the tie 1 + 2^−26 + 2^−54, to even
    assert list(want[3:]) == [2.0**-1074, 2.0**-1074, 0.0]
    x = np.array([-1075.0, -1074.5, 1023.9999999999999, 1024.0])
    _, want = gm_reference("exp2", kera64("exp2", x), x)
    assert want[0] == 0.0 and want[1] == 2.0**-1074 and np.isfinite(want[2]) and want[3] == np.inf
