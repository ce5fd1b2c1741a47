"""The wasm target against the interpreter and numpy: saxpy (loop and pure), sum, dot.

Usage: python bench/wasm_bench.py [--sizes 1000,100000,1000000]

For each kernel and size: the median wall time of wasm (one call of the export, inputs
already in linear memory is NOT assumed: the time includes writing inputs and reading
outputs through run_wasm), of the reference interpreter, and of the plain numpy
expression (which does not follow Kera's reduction order; a speed yardstick only), and
whether the wasm and interpreter output bytes agree.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from kera_core.analysis import analyze
from kera_core.interp import run_function
from kera_core.targets.wasm import TARGET

SRC = """
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N { y[i] = a * x[i] + y[i]; }
}
pub fn saxpy_pure[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn inner[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
"""

NUMPY = {
    "saxpy": lambda a, x, y: a * x + y,
    "saxpy_pure": lambda a, x, y: a * x + y,
    "total": lambda a, x, y: np.sum(x),
    "inner": lambda a, x, y: np.dot(x, y),
}


def _time(fn, reps: int, *args) -> float:
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _run_wasm(art, g, name, ins, prov):
    return TARGET.run(art, g, name, ins, provenance=prov)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    m = analyze(SRC).module
    g = m.graph
    rng = np.random.default_rng(0)
    print(
        f"{'kernel':<11} {'N':>8} {'wasm ms':>9} {'interp ms':>10} {'numpy ms':>9} "
        f"{'interp/wasm':>11} {'wasm/numpy':>10} same"
    )
    for name in NUMPY:
        art = TARGET.lower(g, m.provenance, name)
        for n in (int(s) for s in args.sizes.split(",")):
            if name == "saxpy" and n > 100_000:
                reps_i = 1  # the interpreter runs the loop one element at a time
            else:
                reps_i = args.reps
            a = np.float32(1.5)
            x = rng.standard_normal(n).astype(np.float32)
            y = rng.standard_normal(n).astype(np.float32)
            ins = {"x": x}
            if name != "total":
                ins["y"] = y
            if name.startswith("saxpy"):
                ins["a"] = a
            tw = _time(_run_wasm, args.reps, art, g, name, ins, m.provenance)
            ti = _time(run_function, reps_i, m, name, ins)
            tn = _time(NUMPY[name], args.reps, a, x, y)
            rw = TARGET.run(art, g, name, ins, provenance=m.provenance).digest()
            ri = run_function(m, name, ins).digest()
            print(
                f"{name:<11} {n:>8} {tw * 1e3:>9.2f} {ti * 1e3:>10.2f} {tn * 1e3:>9.3f} "
                f"{ti / tw:>11.1f} {tw / tn:>10.1f} {rw == ri}"
            )


if __name__ == "__main__":
    main()
