"""exp, log, tanh, sigmoid, sqrt (docs/semantics.md §6): special cases and accuracy.

The binary32 functions are correctly rounded (tests/test_cr32.py; all 2^32 inputs:
scripts/cr32_sweep.py); binary64 `tanh` and `sigmoid` are within half an ulp of mpmath
(tests/test_tanh_sigmoid64.py); the binary64 accuracy table is scripts/ulp_table.py's. Here a
sample keeps the default test run fast.
"""

from __future__ import annotations

import numpy as np
import pytest

from kera_core.interp import mathfns as M

CANON32 = 0x7FC00000


def b32(x) -> int:
    return int(np.asarray(x, np.float32).view(np.uint32))


def f32(bits: int) -> np.float32:
    return np.array(bits, np.uint32).view(np.float32)[()]


def ev(fn, x):
    return np.asarray(M.UNARY[fn](np.asarray(x, np.float32)))


INF, NAN = np.float32(np.inf), f32(0xFFC00001)


@pytest.mark.parametrize(
    "fn, x, want",
    [
        ("exp", 0.0, 1.0),
        ("exp", -0.0, 1.0),
        ("exp", np.inf, np.inf),
        ("exp", -np.inf, 0.0),
        ("exp", 89.0, np.inf),
        ("exp", -104.0, 0.0),
        ("log", 1.0, 0.0),
        ("log", 0.0, -np.inf),
        ("log", -0.0, -np.inf),
        ("log", np.inf, np.inf),
        ("tanh", np.inf, 1.0),
        ("tanh", -np.inf, -1.0),
        ("tanh", 30.0, 1.0),
        ("sigmoid", np.inf, 1.0),
        ("sigmoid", -np.inf, 0.0),
        ("sigmoid", 0.0, 0.5),
        ("sigmoid", -0.0, 0.5),
        ("sqrt", 4.0, 2.0),
        ("sqrt", np.inf, np.inf),
    ],
)
def test_special_values(fn, x, want):
    assert b32(ev(fn, x)) == b32(np.float32(want))


@pytest.mark.parametrize("fn", ["exp", "log", "tanh", "sigmoid", "sqrt"])
def test_nan_in_canonical_nan_out(fn):
    for x in (NAN, f32(0x7F800001), f32(0x7FC00000)):
        assert b32(ev(fn, x)) == CANON32


@pytest.mark.parametrize("fn, x", [("log", -1.0), ("log", -np.inf), ("sqrt", -1.0)])
def test_domain_errors_give_nan(fn, x):
    assert b32(ev(fn, x)) == CANON32


def test_signed_zeros():
    assert b32(ev("tanh", -0.0)) == 0x80000000
    assert b32(ev("tanh", 0.0)) == 0
    assert b32(ev("sqrt", -0.0)) == 0x80000000


def test_exp_reaches_the_subnormals_and_the_top():
    assert 0 < b32(ev("exp", -100.0)) < 0x00800000
    assert b32(ev("exp", -103.0)) > 0
    assert b32(ev("exp", f32(0x42B17217))) == 0x7F7FFF84  # largest x with a finite exp
    assert b32(ev("exp", f32(0x42B17218))) == 0x7F800000


def test_log_of_subnormals():
    assert ev("log", f32(1)) == np.float32(-103.27893)  # log(2^-149)
    assert np.isclose(float(ev("log", f32(0x00400000))), np.log(2.0**-127), rtol=1e-7)


def test_tanh_and_sigmoid_symmetry():
    x = np.linspace(-12, 12, 2001, dtype=np.float32)
    assert np.array_equal(ev("tanh", -x), -ev("tanh", x))
    s = ev("sigmoid", x)
    assert np.all((s >= 0) & (s <= 1))
    assert np.all(np.diff(s) >= 0)


def test_elementwise_is_per_element():
    """Evaluating a vector gives each element's scalar result (no cross-element effects)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-20, 20, 64).astype(np.float32)
    for fn in M.UNARY:
        vec = ev(fn, x)
        for i in range(0, 64, 7):
            assert b32(vec[i]) == b32(ev(fn, x[i]))


def _ulp_err32(y, ref):
    _, e = np.frexp(ref)
    e = np.maximum(e - 1, -126)
    return np.abs(y.astype(np.float64) - ref) / np.ldexp(1.0, e - 23)


REFS = {
    "exp": (np.exp, (-103.0, 88.7)),
    "log": (np.log, (1e-30, 1e30)),
    "tanh": (np.tanh, (-12.0, 12.0)),
    "sigmoid": (lambda v: 1.0 / (1.0 + np.exp(-v)), (-100.0, 40.0)),
    "sqrt": (np.sqrt, (0.0, 1e30)),
}
# binary32: correctly rounded (the binary64 reference's own error is ~2^-29 binary32 ulps)
BOUNDS = {fn: 0.5 + 2.0**-20 for fn in REFS}


@pytest.mark.parametrize("fn", sorted(REFS))
def test_sampled_accuracy_f32(fn):
    ref, (lo, hi) = REFS[fn]
    rng = np.random.default_rng(1)
    if fn in ("log", "sqrt"):
        x = np.exp(rng.uniform(np.log(max(lo, 1e-38)), np.log(hi), 100_000)).astype(np.float32)
    else:
        x = rng.uniform(lo, hi, 100_000).astype(np.float32)
    y = ev(fn, x)
    err = _ulp_err32(y, ref(x.astype(np.float64)))
    assert err.max() <= BOUNDS[fn], (fn, err.max(), x[np.argmax(err)])


@pytest.mark.parametrize("fn", ["exp", "log", "tanh", "sigmoid"])
def test_sampled_accuracy_f64(fn):
    """Against float64 numpy (itself good to ~1 ulp): a loose bound that still catches bugs."""
    ref, (lo, hi) = REFS[fn]
    rng = np.random.default_rng(2)
    x = rng.uniform(max(lo, 1e-3) if fn == "log" else lo, min(hi, 700.0), 20_000)
    y = M.UNARY[fn](x)
    r = ref(x)
    rel = np.abs(y - r) / np.abs(r)
    assert rel.max() < 8e-16  # both sides err: ours and the naive float64 reference
