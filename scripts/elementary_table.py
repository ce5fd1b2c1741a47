"""Rows of the binary32 accuracy table of docs/semantics.md §6.9, measured as
tests/test_elementary.py measures them (the same samples, the same references).

    .venv/bin/python scripts/elementary_table.py atan2 pow erf erfc   # the default samples
    KERA_EXHAUSTIVE=1 .venv/bin/python scripts/elementary_table.py pow  # the larger f32 ones

binary32: every input (pair) of tests/test_elementary.py's sample for the function — for a
unary function its dense sample and its 2^18-pattern window — checked against the correctly
rounded result (tests/elementary_ref.py: numpy's binary64 function rounded, mpmath at 256
bits near every rounding boundary and wherever they disagree). The binary64 table:
scripts/ulp_table.py (10^7 samples per function against MPFR). All 2^32 binary32 inputs of a
unary function: scripts/cr32_sweep.py.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, ".")

from tests import test_elementary as T  # noqa: E402
from tests.elementary_ref import check_f32  # noqa: E402


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


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("fns", nargs="+", choices=T.FNS)
    args = ap.parse_args()
    for fn in args.fns:
        t0 = time.time()
        print(f32_row(fn), f"({time.time() - t0:.0f} s)", flush=True)
