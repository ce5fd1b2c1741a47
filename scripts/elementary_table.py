"""Rows of the accuracy tables of docs/semantics.md §6.9, measured as tests/test_elementary.py
measures them (the same samples, the same references).

    .venv/bin/python scripts/elementary_table.py atan2 pow erf erfc   # the default samples
    KERA_EXHAUSTIVE=1 .venv/bin/python scripts/elementary_table.py pow  # the larger f32 ones

binary32: every input (pair) of tests/test_elementary.py's sample for the function — for a
unary function its dense sample and its 2^18-pattern window — checked against the correctly
rounded result (tests/elementary_ref.py: numpy's binary64 function rounded, mpmath at 256
bits near every rounding boundary and wherever they disagree). binary64: ``--f64 N`` per part
of the test suite's binary64 sample, every input against mpmath at 256 bits. All 2^32
binary32 inputs of a unary function: ``python -m tests.elementary_ref NAME``.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, ".")

from kera_core.interp import elementary as E  # noqa: E402
from tests import test_elementary as T  # noqa: E402
from tests.elementary_ref import check_f32, mp_value, round_mp, ulp_error  # noqa: E402


def f32_row(fn: str) -> str:
    if fn in T.UNARY:
        xb = T.dense_f32(fn)
        lo = 0x3C000000 + T.UNARY.index(fn) * (1 << 23)
        chunks = [xb[i : i + (1 << 20)] for i in range(0, xb.size, 1 << 20)]
        chunks.append(np.arange(lo, lo + T.BRIEF, dtype=np.uint32))
        checked = decided = wrong = 0
        for c in chunks:
            f, d = check_f32(fn, c.view(np.float32))
            checked, decided, wrong = checked + c.size, decided + d, wrong + len(f)
        return f"| `{fn}` | {checked:,} | {decided} | {wrong} | ≤ 0.5 |"
    rng = np.random.default_rng(14)
    n = 1_000_000 if T.EXHAUSTIVE else 200_000
    pairs = (T.atan2_pairs_f32 if fn == "atan2" else T.pow_pairs_f32)(rng, n)
    checked = decided = wrong = 0
    for a, b in pairs:
        f, d = check_f32(fn, a, b)
        checked, decided, wrong = checked + a.size, decided + d, wrong + len(f)
    return f"| `{fn}` | {checked:,} pairs | {decided} | {wrong} | ≤ 0.5 |"


def f64_row(fn: str, n: int) -> str:
    rng = np.random.default_rng(15)
    x = T._first_f64(fn, T.sample_f64(fn, n, 16), rng)
    if fn in T.UNARY:
        a, b, got = x, None, E.unary(fn, x)
    else:
        y = T.second_f64(fn, x, rng)
        a, b = (x, y) if fn == "pow" else (y, x)
        got = E.binary(fn, a, b)
    worst, at, correct = 0.0, None, 0
    for i in range(a.size):
        args = (float(a[i]),) if b is None else (float(a[i]), float(b[i]))
        v = mp_value(fn, *args)
        err = ulp_error(float(got[i]), v, "f64")
        w = round_mp(v, "f64")
        correct += float(got[i]) == w or (w != w and got[i] != got[i])
        if err > worst:
            worst, at = err, args
    return f"| `{fn}` | {a.size:,} | {worst:.6f} | {at} | {100 * correct / a.size:.3f} % |"


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("fns", nargs="+", choices=T.FNS)
    ap.add_argument("--f64", type=int, default=20_000, help="binary64 samples per part")
    args = ap.parse_args()
    for fn in args.fns:
        t0 = time.time()
        print(f32_row(fn), flush=True)
        print(f64_row(fn, args.f64), f"({time.time() - t0:.0f} s)", flush=True)
