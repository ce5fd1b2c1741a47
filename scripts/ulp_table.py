"""Accuracy of Kera's elementary functions, as the ULP tables in docs/semantics.md (§6.7, §6.9).

binary32 (§6.7's five): exhaustive over all 2**32 inputs, against numpy's binary64 functions
(whose own error, below one binary64 ulp, is 2**-29 binary32 ulps: invisible at the printed
precision); since semantics version 2 exp/log/tanh/sigmoid are correctly rounded, which
scripts/cr32_sweep.py checks exactly (mpmath near every rounding boundary) — it also sweeps
§6.9's unary functions.
binary64 (all seventeen: exp log tanh sigmoid sqrt exp2 log2 expm1 log1p hypot sin cos tan
atan2 pow erf erfc): 10**7 samples per function by default, drawn as tests/test_elementary.py's
``sample64`` draws them, each result of the reference interpreter (numpy, vectorised; every
target gives its bits) against MPFR through gmpy2 (tests/elementary_ref.py's
``gm_reference``: 128 bits, 1024 near a binary64 midpoint).

    .venv/bin/python scripts/ulp_table.py --skip-f64      # the binary32 table (tens of minutes)
    .venv/bin/python scripts/ulp_table.py --f32-chunks 64 --skip-f64  # a quick partial run
    nice -n 10 .venv/bin/python scripts/ulp_table.py --skip-f32 --f64-out f64.jsonl
    .venv/bin/python scripts/ulp_table.py --skip-f32 --functions tanh,sigmoid --f64-samples 10000000
    .venv/bin/python scripts/ulp_table.py --skip-f32 --functions tanh --around 0.625,22 --width 50000

Per 10**7 binary64 samples, at `nice -n 10` on a shared two-core machine (load 5-7): 0.5-5
minutes, `erfc` ~20 (MPFR's erfc is slow for 4 < x < 16); all seventeen ~50 minutes.

The error of a result y against the exact value v is |y - v| / ulp(v), where ulp(v) is
the spacing of the format in v's binade (2**(max(e, emin) - mantissa bits)); values at or
beyond 2**emax+1 count as 2**(emax+1) (binary32), and a binary64 result whose exact value
rounds to ±inf is right (error 0) exactly when it is that infinity.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time

import numpy as np

sys.path.insert(0, ".")

from kera_core.interp import mathfns  # noqa: E402
from kera_core.interp.fp import F32  # noqa: E402
from tests.test_elementary import F64  # noqa: E402  (the binary64 table's functions)

FUNCS = ("exp", "log", "tanh", "sigmoid", "sqrt")
CHUNK = 1 << 22


def _ref64(name: str, x64):
    with np.errstate(all="ignore"):
        if name == "exp":
            return np.exp(x64)
        if name == "log":
            return np.log(x64)
        if name == "tanh":
            return np.tanh(x64)
        if name == "sigmoid":
            e = np.exp(-np.abs(x64))
            return np.where(x64 >= 0, 1.0 / (1.0 + e), e / (1.0 + e))
        if name == "sqrt":
            return np.sqrt(x64)
    raise KeyError(name)


def _ulp_err32(y, ref):
    """ULP error of binary32 results y against binary64 references."""
    big = 2.0**128
    y64 = y.astype(np.float64)
    y64 = np.where(np.isinf(y64), np.copysign(big, y64), y64)
    r = np.where(np.abs(ref) >= big, np.copysign(big, ref), ref)
    _, e = np.frexp(r)
    e = np.maximum(e - 1, -126)
    err = np.abs(y64 - r) / np.ldexp(1.0, e - 23)
    both_nan = np.isnan(y64) & np.isnan(r)
    return np.where(both_nan, 0.0, err)


def _chunk(start: int) -> dict:
    """All five functions on the 2**22 inputs whose bit patterns start at ``start``."""
    bits = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x64 = x.astype(np.float64)
    out = {}
    for name in FUNCS:
        y = mathfns.UNARY[name](x)
        ref = _ref64(name, x64)
        err = _ulp_err32(y, ref)
        nan_y, nan_r = np.isnan(y), np.isnan(ref)
        err = np.where(nan_y != nan_r, np.inf, err)
        i = int(np.argmax(err))
        with np.errstate(all="ignore"):
            rounded = ref.astype(np.float32)
        out[name] = (
            float(err[i]),
            int(bits[i]),
            int(((y != rounded) & ~(nan_y & nan_r)).sum()),
            int((nan_y != nan_r).sum()),
            int((y.view(np.uint32)[nan_y] != F32.nan_bits).sum()),
        )
    return out


def _spread_order(n: int) -> list[int]:
    """0..n-1 in bit-reversed order, so any prefix samples the whole range evenly."""
    width = max(n - 1, 1).bit_length()
    return sorted(range(n), key=lambda i: int(f"{i:0{width}b}"[::-1], 2))


def run_f32(n_chunks: int, workers: int, progress: str | None = None) -> list[dict]:
    total_chunks = (1 << 32) // CHUNK
    order = _spread_order(total_chunks)[:n_chunks]
    acc = {name: [0.0, 0, 0, 0, 0] for name in FUNCS}
    t0 = time.time()
    done = 0
    with mp.Pool(workers) as pool:
        for res in pool.imap_unordered(_chunk, [i * CHUNK for i in order]):
            done += 1
            for name, (e, b, ncr, nm, nc) in res.items():
                a = acc[name]
                if e > a[0]:
                    a[0], a[1] = e, b
                a[2] += ncr
                a[3] += nm
                a[4] += nc
            if progress:
                with open(progress, "w") as fh:
                    json.dump(
                        {
                            "chunks": done,
                            "of": total_chunks,
                            "seconds": time.time() - t0,
                            "acc": acc,
                        },
                        fh,
                    )
    elapsed = time.time() - t0
    rows = []
    n = done * CHUNK
    for name in FUNCS:
        worst, at, not_cr, nanmis, noncanon = acc[name]
        x_at = float(np.array(at, dtype=np.uint32).view(np.float32))
        rows.append(
            {
                "fn": name,
                "inputs": n,
                "max_ulp": worst,
                "at": f"0x{at:08X} ({x_at!r})",
                "correctly_rounded": 100.0 * (n - not_cr) / n,
                "nan_mismatch": nanmis,
                "noncanonical_nan": noncanon,
                "seconds": elapsed,
            }
        )
        print(rows[-1], flush=True)
    return rows


def dense(around: tuple[float, ...], width: int) -> np.ndarray:
    """Every binary64 number within ``width`` ulps of each of ``around`` (a dense sweep)."""
    b = np.array(around, np.float64).view(np.int64)
    xs = (b[:, None] + np.arange(-width, width + 1)).ravel().view(np.float64)
    return xs[np.isfinite(xs)]


def run_f64(
    fn: str,
    samples: int,
    seed: int = 7,
    batch: int = 1_000_000,
    around: tuple[float, ...] = (),
    width: int = 0,
) -> dict:
    """``fn`` on at least ``samples`` binary64 inputs (batches of tests/test_elementary.py's
    ``sample64``) — or, with ``around``, on :func:`dense`'s — every result against MPFR
    (tests/elementary_ref.py's ``gm_reference``)."""
    from tests import test_elementary as T
    from tests.elementary_ref import gm_reference

    t0 = time.time()
    n, worst, at, not_cr, not_cr_sub, k = 0, -1.0, None, 0, 0, 0
    rest, rest_at = -1.0, None  # the largest error outside the top subnormal binade
    sweep = dense(around, width) if around else None
    while n < (samples if sweep is None else sweep.size):
        if sweep is None:
            a, b = T.sample64(fn, min(batch, samples - n), seed + k)
        else:
            a, b = sweep[n : n + batch], None
        k += 1
        got = T.kera64(fn, a, b)
        err, want = gm_reference(fn, got, a, b)
        i = int(np.argmax(err))
        if err[i] > worst:
            worst, at = float(err[i]), float(a[i]) if b is None else (float(a[i]), float(b[i]))
        outside = np.where((np.abs(want) >= 2.0**-1023) & (np.abs(want) < 2.0**-1022), -1.0, err)
        i = int(np.argmax(outside))
        if outside[i] > rest:
            rest = float(outside[i])
            rest_at = float(a[i]) if b is None else (float(a[i]), float(b[i]))
        miss = ~((got == want) | (np.isnan(got) & np.isnan(want)))
        not_cr += int(miss.sum())
        not_cr_sub += int((miss & (np.abs(want) < 2.0**-1022)).sum())
        n += a.size
    row = {
        "fn": fn,
        "inputs": n,
        "max_ulp": worst,
        "at": repr(at),
        "max_ulp_outside_top_subnormal_binade": rest,
        "at_outside": repr(rest_at),
        "correctly_rounded": 100.0 * (n - not_cr) / n,
        "not_correctly_rounded": not_cr,
        "of_them_subnormal": not_cr_sub,  # results below 2^-1022 (rounded twice)
        "seconds": time.time() - t0,
    }
    print(json.dumps(row), flush=True)
    return row


def markdown(rows32: list[dict], rows64: list[dict]) -> str:
    out = []
    if rows32:
        out.append("| f32 function | inputs | max error (ulp) | worst input | correctly rounded |")
        out.append("|---|---|---|---|---|")
        for r in rows32:
            out.append(
                f"| `{r['fn']}` | {r['inputs']:,} | {r['max_ulp']:.3f} | {r['at']} "
                f"| {r['correctly_rounded']:.3f} % |"
            )
        out.append(f"\n(all five functions together: {rows32[0]['seconds']:.0f} s)")
    if rows64:
        out.append("")
        out.append(
            "| f64 function | samples | max error (ulp) | worst input | correctly rounded | time |"
        )
        out.append("|---|---|---|---|---|---|")
        for r in rows64:
            out.append(
                f"| `{r['fn']}` | {r['inputs']:,} | {r['max_ulp']:.6f} | {r['at']} "
                f"| {r['correctly_rounded']:.5f} % ({r['not_correctly_rounded']:,} not, "
                f"{r['of_them_subnormal']:,} of them subnormal) "
                f"| {r['seconds']:.0f} s |"
            )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--f32-chunks", type=int, default=1 << 10, help="chunks of 2**22 (1024 = all)")
    ap.add_argument("--f64-samples", type=int, default=10_000_000, help="per function")
    ap.add_argument(
        "--functions", default=",".join(F64), help=f"binary64 functions (default {','.join(F64)})"
    )
    ap.add_argument("--f64-out", metavar="FILE", help="append each binary64 row here (JSON)")
    ap.add_argument(
        "--around", help="binary64 only: sweep every number within --width ulps of these (a,b,…)"
    )
    ap.add_argument("--width", type=int, default=50_000, help="ulps each side, with --around")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-f32", action="store_true")
    ap.add_argument("--skip-f64", action="store_true")
    ap.add_argument("--progress", metavar="FILE", help="write running f32 totals here (JSON)")
    args = ap.parse_args()
    t0 = time.time()
    rows32 = [] if args.skip_f32 else run_f32(args.f32_chunks, args.workers, args.progress)
    rows64 = []
    for fn in [] if args.skip_f64 else args.functions.split(","):
        if fn not in F64:
            ap.error(f"unknown binary64 function {fn!r} (one of {', '.join(F64)})")
        around = tuple(float(v) for v in args.around.split(",")) if args.around else ()
        rows64.append(run_f64(fn, args.f64_samples, around=around, width=args.width))
        if args.f64_out:
            with open(args.f64_out, "a") as fh:
                fh.write(json.dumps(rows64[-1]) + "\n")
    print()
    print(markdown(rows32, rows64))
    print(f"\ntotal {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
