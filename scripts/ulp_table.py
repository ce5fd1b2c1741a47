"""Accuracy of Kera's elementary functions, as the ULP table in docs/semantics.md.

binary32: exhaustive over all 2**32 inputs, against numpy's binary64 functions (whose own
error, below one binary64 ulp, is 2**-29 binary32 ulps: invisible at the printed precision);
since semantics version 2 exp/log/tanh/sigmoid are correctly rounded, which
scripts/cr32_sweep.py checks exactly (mpmath near every rounding boundary).
binary64: sampled, against mpmath at 200 bits.

    .venv/bin/python scripts/ulp_table.py                 # everything (tens of minutes)
    .venv/bin/python scripts/ulp_table.py --f32-chunks 64 # a quick partial f32 run
    .venv/bin/python scripts/ulp_table.py --skip-f32 --f64-samples 20000
    .venv/bin/python scripts/ulp_table.py --skip-f32 --funcs tanh,sigmoid --f64-samples 1000000
    .venv/bin/python scripts/ulp_table.py --skip-f32 --funcs tanh --around 0.625,22 --width 50000

The error of a result y against the exact value v is |y - v| / ulp(v), where ulp(v) is
the spacing of the format in v's binade (2**(max(e, emin) - mantissa bits)); values at or
beyond 2**emax+1 count as 2**(emax+1), so an overflow to inf next to the largest finite
number is measured like any other rounding.
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


def run_f64(
    samples: int,
    seed: int = 7,
    funcs: tuple[str, ...] = FUNCS,
    around: tuple[float, ...] = (),
    width: int = 0,
) -> list[dict]:
    """``samples`` inputs per function — or, with ``around``, every binary64 number within
    ``width`` ulps of each of those values (a dense sweep)."""
    import mpmath

    mpmath.mp.prec = 200
    rng = np.random.default_rng(seed)
    ranges = {
        "exp": (-746.0, 710.0),
        "log": (0.0, 4.0),
        "tanh": (-23.0, 23.0),
        "sigmoid": (-750.0, 40.0),
        "sqrt": (0.0, 4.0),
    }
    refs = {
        "exp": mpmath.exp,
        "log": mpmath.log,
        "tanh": mpmath.tanh,
        "sigmoid": lambda v: 1 / (1 + mpmath.exp(-v)),
        "sqrt": mpmath.sqrt,
    }
    rows = []
    for name in funcs:
        t0 = time.time()
        lo, hi = ranges[name]
        q = samples // 4
        xs = np.concatenate(
            [
                rng.uniform(lo, hi, q),
                rng.uniform(-1.0, 1.0, q),
                rng.integers(0, 1 << 64, q, dtype=np.uint64).view(np.float64),
                np.exp(rng.uniform(-740.0, 700.0, samples - 3 * q)),
            ]
        )
        if around:
            b = np.array(around, np.float64).view(np.int64)
            xs = (b[:, None] + np.arange(-width, width + 1)).ravel().view(np.float64)
        if name in ("log", "sqrt"):
            xs = np.abs(xs)
        xs = xs[np.isfinite(xs)]
        ys = mathfns.UNARY[name](xs)
        worst, at, not_cr = 0.0, 0.0, 0
        rest, rest_at = 0.0, 0.0  # outside the top subnormal binade (rounded twice there)
        top_sub = (mpmath.mpf(2) ** -1023, mpmath.mpf(2) ** -1022)
        for xv, yv in zip(xs.tolist(), ys.tolist(), strict=True):
            v = refs[name](mpmath.mpf(xv)) if not (name == "log" and xv == 0) else -mpmath.inf
            if mpmath.isinf(v) or abs(v) >= mpmath.mpf(2) ** 1024:
                ok = np.isinf(yv) and (yv > 0) == (v > 0)
                err = 0.0 if ok else float("inf")
                rounded = yv if ok else None
            elif v == 0:
                err = 0.0 if yv == 0 else float("inf")
                rounded = 0.0
            else:
                e = max(int(mpmath.floor(mpmath.log(abs(v), 2))), -1022)
                err = float(abs(mpmath.mpf(yv) - v) / mpmath.mpf(2) ** (e - 52))
                rounded = float(v)
            if rounded is None or yv != rounded:
                not_cr += 1
            if err > worst:
                worst, at = err, xv
            if err > rest and not top_sub[0] <= abs(v) < top_sub[1]:
                rest, rest_at = err, xv
        rows.append(
            {
                "fn": name,
                "inputs": len(xs),
                "max_ulp": worst,
                "at": repr(at),
                "max_ulp_not_top_subnormal": rest,
                "at_not_top_subnormal": repr(rest_at),
                "correctly_rounded": 100.0 * (len(xs) - not_cr) / len(xs),
                "seconds": time.time() - t0,
            }
        )
        print(rows[-1], flush=True)
    return rows


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
                f"| `{r['fn']}` | {r['inputs']:,} | {r['max_ulp']:.3f} | {r['at']} "
                f"| {r['correctly_rounded']:.3f} % | {r['seconds']:.0f} s |"
            )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--f32-chunks", type=int, default=1 << 10, help="chunks of 2**22 (1024 = all)")
    ap.add_argument("--f64-samples", type=int, default=200_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--skip-f32", action="store_true")
    ap.add_argument("--skip-f64", action="store_true")
    ap.add_argument("--progress", metavar="FILE", help="write running f32 totals here (JSON)")
    ap.add_argument("--funcs", default=",".join(FUNCS), help="binary64: these functions only")
    ap.add_argument(
        "--around",
        metavar="X,Y,…",
        help="binary64: sweep the numbers within --width of these (negative: --around=-4,-5)",
    )
    ap.add_argument("--width", type=int, default=10_000, help="ulps either side (--around)")
    args = ap.parse_args()
    funcs = tuple(args.funcs.split(","))
    if not set(funcs) <= set(FUNCS):
        ap.error(f"--funcs: one of {', '.join(FUNCS)}")
    t0 = time.time()
    rows32 = [] if args.skip_f32 else run_f32(args.f32_chunks, args.workers, args.progress)
    around = tuple(float(v) for v in args.around.split(",")) if args.around else ()
    rows64 = (
        []
        if args.skip_f64
        else run_f64(args.f64_samples, funcs=funcs, around=around, width=args.width)
    )
    print()
    print(markdown(rows32, rows64))
    print(f"\ntotal {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
