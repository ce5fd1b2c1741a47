"""The x86_64 target against numpy (anchors run in the same process), and its compile time.

Usage: python bench/x86_bench.py [--sizes 1000000,10000000] [--isa sse2|avx2|avx512] [--reps 3]
       [--only axpy,total,dotp,soft,norm,mm,compile]

Prints, per kernel and size, the median time of one native run (`runtime.run`: checking
inputs, copying them in, the call, copying the outputs out) and of the call alone, the
numpy anchor, and the ratio:

* elementwise `a*x+y` against `np.copyto` of N floats (the bandwidth anchor) and against the
  numpy expression;
* `sum`, `dot` against `np.sum`, `np.dot`; `softmax`, `layernorm` against their numpy
  expressions;
* `matmul` 256² and 512² against numpy's `@` pinned to one BLAS thread (threadpoolctl),
  in GFLOP/s.

Whether the output bytes equal the interpreter's is checked at a small size per kernel.
Then compile time (loop program + selection + allocation + encoding) per 1000 graph nodes
of generated straight-line functions.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from kera_core.analysis import analyze
from kera_core.backends.x86_64 import compile as X
from kera_core.backends.x86_64.runtime import Loaded, run
from kera_core.interp import run_function

SRC = """
pub fn axpy[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn dotp[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn soft[N](x: &f32[N]) -> f32[N] { softmax(x) }
pub fn norm[N](x: &f32[N]) -> f32[N] { layernorm(x, 0.00001) }
pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
"""


def timed(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
        if ts[-1] > 2.0:
            break
    return statistics.median(ts)


def numpy_anchor(name: str, inputs: dict):
    x = inputs.get("x")
    if name == "axpy":
        return lambda: inputs["a"] * x + inputs["y"]
    if name == "total":
        return lambda: np.sum(x)
    if name == "dotp":
        return lambda: np.dot(x, inputs["y"])
    if name == "soft":
        return lambda: (lambda e: e / e.sum())(np.exp(x - x.max()))
    if name == "norm":
        return lambda: (lambda d: d / np.sqrt((d * d).mean() + np.float32(1e-5)))(x - x.mean())
    return lambda: inputs["a"] @ inputs["b"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000,10000000")
    ap.add_argument("--isa", default=None)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="axpy,total,dotp,soft,norm,mm,compile")
    args = ap.parse_args()
    isa = X.isa_for(args.isa)
    m = analyze(SRC).module
    g = m.graph
    rng = np.random.default_rng(1)
    loaded = {}
    for f in g.exported():
        data, _ = X.build(g, f.name, isa)
        loaded[f.name] = Loaded(X.read(data, g)[1])

    def inputs_for(name: str, n: int) -> dict:
        if name == "mm":
            a = rng.standard_normal((n, n)).astype(np.float32)
            return {"a": a, "b": rng.standard_normal((n, n)).astype(np.float32)}
        x = rng.standard_normal(n).astype(np.float32)
        out = {"x": x}
        if name in ("axpy", "dotp"):
            out["y"] = rng.standard_normal(n).astype(np.float32)
        if name == "axpy":
            out["a"] = np.float32(0.5)
        return out

    print(f"x86_64 ({isa.name}) vs numpy {np.__version__}; one thread; median of {args.reps}")
    print(
        f"{'kernel':8} {'N':>10} {'x86 ms':>9} {'call ms':>9} {'numpy ms':>9} {'x86/numpy':>9}"
        f" {'call/numpy':>10} {'same':>5}"
    )
    only = set(args.only.split(","))
    for name in [k for k in ("axpy", "total", "dotp", "soft", "norm") if k in only]:
        small = inputs_for(name, 3000)
        same = run(loaded[name], m, name, small).digest() == run_function(m, name, small).digest()
        for n in (int(s) for s in args.sizes.split(",")):
            inp = inputs_for(name, n)
            calls: list[float] = []
            t_x = timed(lambda: run(loaded[name], m, name, inp, call_times=calls), args.reps)  # noqa: B023
            t_c = statistics.median(calls)
            t_n = timed(numpy_anchor(name, inp), args.reps)
            print(
                f"{name:8} {n:>10} {t_x * 1e3:9.2f} {t_c * 1e3:9.2f} {t_n * 1e3:9.2f}"
                f" {t_x / t_n:9.1f} {t_c / t_n:10.1f} {str(same):>5}"
            )
        if name == "axpy":
            n = int(args.sizes.split(",")[-1])
            src, dst = np.ones(n, np.float32), np.empty(n, np.float32)
            inp = inputs_for(name, n)
            # interleaved, so both see the same machine (other work shares the memory bus)
            copies, calls = [], []
            for _ in range(2 * args.reps + 1):
                t = time.perf_counter()
                np.copyto(dst, src)
                copies.append(time.perf_counter() - t)
                run(loaded[name], m, name, inp, call_times=calls)
            t_c, t_x = statistics.median(copies), statistics.median(calls)
            # the a*x+y call moves 3 arrays (2 read, 1 written), copyto 2: bytes per second
            print(
                f"{'':8} {'copyto':>10} {t_c * 1e3:9.2f}   the a*x+y call moves data at "
                f"{(3 / t_x) / (2 / t_c):.0%} of copyto's bandwidth"
            )
    from threadpoolctl import threadpool_limits

    small = inputs_for("mm", 24)
    same = run(loaded["mm"], m, "mm", small).digest() == run_function(m, "mm", small).digest()
    with threadpool_limits(limits=1):
        for side in (256, 512) if "mm" in only else ():
            inp = inputs_for("mm", side)
            calls = []
            t_x = timed(
                lambda: run(loaded["mm"], m, "mm", inp, call_times=calls),  # noqa: B023
                args.reps,
            )
            t_c = statistics.median(calls)
            t_n = timed(numpy_anchor("mm", inp), args.reps)
            gf = 2 * side**3 / 1e9
            print(
                f"{'matmul':8} {side:>9}² {t_x * 1e3:9.2f} {t_c * 1e3:9.2f} {t_n * 1e3:9.2f}"
                f" {t_x / t_n:9.1f} {t_c / t_n:10.1f} {str(same):>5}   call {gf / t_c:.1f} vs"
                f" {gf / t_n:.1f} GFLOP/s ({(gf / t_c) / (gf / t_n):.0%} of OpenBLAS)"
            )
    # compile time per 1000 graph nodes
    for terms in (300, 3000) if "compile" in only else ():
        body = " + ".join(f"x * {i + 1}.5" for i in range(terms))
        src = f"pub fn f(x: f32) -> f32 {{ {body} }}\n"
        gm = analyze(src).module.graph
        nodes = len(gm.nodes)
        t = timed(lambda: X.build(gm, "f", isa), 1)  # noqa: B023
        print(
            f"compile {nodes:>6} nodes: {t * 1e3:8.1f} ms = {t * 1e6 / nodes:.1f} ms per 1k nodes"
        )
    for lo in loaded.values():
        lo.close()


if __name__ == "__main__":
    main()
