"""All 2^32 binary32 inputs of `exp`, `log`, `tanh`, `sigmoid`: are the results correctly
rounded? (docs/semantics.md §6.7; the step lists of kera_core/interp/expolog32.py)

Each chunk of bit patterns is run through the step list — compiled by the x86-64 target
(the loop layer's code for it, bit-identical to the interpreter: tests/test_semantics_math.py)
when this machine runs it, else the interpreter — and compared with the correctly rounded
value by tests/elementary_ref.py: numpy's binary64 function rounded to binary32, and mpmath
at 256 bits for every input where that could differ (within 16 binary64 ulps of a binary32
rounding boundary) or where the results disagree.

    nice -n 19 .venv/bin/python scripts/cr32_sweep.py                # all four, all inputs
    .venv/bin/python scripts/cr32_sweep.py exp --chunks 16           # a quick partial run
    .venv/bin/python scripts/cr32_sweep.py log --engine interp
    .venv/bin/python scripts/cr32_sweep.py tanh --lo 0x3f000000 --hi 0x41200000  # a range

One process, chunks of 2^22 inputs; about 10 minutes per function with the x86-64 engine on
one idle core (the interpreter about as fast: the check against the reference dominates);
~26 minutes each with four at once at `nice -n 5` on a loaded two-core machine.

``--stride-fixed K``: where the step list's result is fixed whatever the input (``_fixed``
below: where it clamps the argument — exp's x > 89 and x < −104, tanh's |x| > 10, sigmoid's
|x| > 120 — it computes exactly what it does at the clamp; log's x < 0 selects NaN; NaN
everywhere), the step list runs only at every K-th input and at the ranges' ends, and must
give the fixed result there. The fixed result is checked against the correctly rounded one
at every input of a chunk that is partly fixed, and at the sampled inputs of a chunk that is
wholly fixed — there the rest follows from the sample: the functions are monotone and the
fixed results are the limits (inf, +0, ±1, the value at ±120) or NaN by definition. K = 1,
the default, runs and checks everything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

sys.path.insert(0, ".")

from kera_core.interp import expolog32  # noqa: E402
from tests.elementary_ref import check_f32  # noqa: E402

CHUNK = 1 << 22
E = expolog32


def _fixed(name: str, x: np.ndarray):
    """(mask, value): where the step list's last selects fix the result, and that result."""
    with np.errstate(invalid="ignore"):
        a = np.abs(x.astype(np.float64))
        nan = np.isnan(x)
        if name == "exp":  # clamped to [−104, 89]: what −104 and 89 give
            over, under = x > E.EXP_OVER, x < E.EXP_UNDER
            lo, hi = expolog32.unary(name, np.float32([E.EXP_UNDER, E.EXP_OVER]))
            v = np.where(over, hi, lo)
            return over | under | nan, np.where(nan, np.float32(np.nan), v)
        if name == "log":
            return (x < 0) | nan, np.full(x.shape, np.float32(np.nan))
        # tanh, sigmoid: |x| clamped, so every |x| beyond computes exactly what ±clamp does
        c = E.TANH_ONE if name == "tanh" else E.SIGMOID_CLAMP
        clamp = a > c
        lo, hi = expolog32.unary(name, np.float32([-c, c]))
        at = np.where(x < 0, lo, hi)
        return clamp | nan, np.where(nan, np.float32(np.nan), at).astype(np.float32)


def _x86_engine(name: str):
    """f(x) -> results, from the x86-64 target at the best level this CPU runs; None when
    this machine does not run it."""
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    from kera_core.analysis import analyze
    from kera_core.backends.x86_64 import compile as X
    from kera_core.backends.x86_64.runtime import Loaded, run
    from kera_core.native import cpu

    levels = [lv for lv in X.ISAS if X.runs(lv, cpu.detect())]
    if not levels:
        return None
    m = analyze(f"pub fn f[N](x: &f32[N]) -> f32[N] {{ {name}(x) }}\n").module
    data, _ = X.build(m.graph, "f", X.isa_for(levels[-1]))
    loaded = Loaded(X.read(data, m.graph)[1])

    def f(x):
        return np.asarray(run(loaded, m, "f", {"x": x}).outputs[0].value)

    return f


def sweep(
    name: str, chunks: int, engine: str, stride: int = 1, lo: int = 0, hi: int = 1 << 32
) -> dict:
    f = _x86_engine(name) if engine == "x86_64" else None
    used = "x86_64" if f is not None else "interp"
    if f is None:

        def f(x):
            return expolog32.unary(name, x)

    t0 = time.time()
    failures, decided, n, ran = [], 0, 0, 0
    step = (hi - lo) // chunks if chunks < (hi - lo) // CHUNK else CHUNK
    for start in range(lo, hi, step):
        xb = np.arange(start, min(start + CHUNK, hi), dtype=np.uint64).astype(np.uint32)
        x = xb.view(np.float32)
        if stride > 1:
            fixed, value = _fixed(name, x)
            # the step list at every input it computes, every stride-th fixed one, the ends
            run = ~fixed
            run[::stride] = True
            run[np.flatnonzero(np.diff(fixed.astype(np.int8))) + [[0], [1]]] = True
            run[[0, -1]] = True
            got = value.copy()
            got[run] = f(x[run])
            ok = np.isnan(got[run & fixed]) == np.isnan(value[run & fixed])
            same = got[run & fixed].view(np.uint32) == value[run & fixed].view(np.uint32)
            if not (ok & (same | np.isnan(value[run & fixed]))).all():
                raise AssertionError(f"{name}: a fixed range is not what the step list gives")
            ran += int(run.sum())
        else:
            got = f(x)
            ran += x.size
        if stride > 1 and fixed.all():  # the whole chunk fixed: the sampled inputs only
            fl, d = check_f32(name, x[run], got=got[run])
        else:
            fl, d = check_f32(name, x, got=got)
        failures += fl
        decided += d
        n += x.size
        if (start // step) % 64 == 63:
            print(f"{name} {start:#010x} inputs {n} decided {decided} failures {len(failures)}")
            sys.stdout.flush()
    return {
        "function": name,
        "engine": used,
        "bit_patterns": f"[{lo:#010x}, {hi:#010x})",
        "inputs": n,
        "step_list_runs": ran,
        "decided_by_mpmath": decided,
        "failures": len(failures),
        "first_failures": failures[:20],
        "seconds": round(time.time() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("functions", nargs="*", default=list(expolog32.UNARY))
    ap.add_argument("--chunks", type=int, default=1 << 10, help="chunks of 2^22 (1024: all)")
    ap.add_argument("--engine", choices=("x86_64", "interp"), default="x86_64")
    ap.add_argument("--stride-fixed", type=int, default=1, help="see the module docstring")
    ap.add_argument("--lo", type=lambda v: int(v, 0), default=0, help="first bit pattern")
    ap.add_argument("--hi", type=lambda v: int(v, 0), default=1 << 32, help="end (exclusive)")
    args = ap.parse_args()
    for name in args.functions:
        r = sweep(name, args.chunks, args.engine, args.stride_fixed, args.lo, args.hi)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
