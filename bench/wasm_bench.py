"""The wasm target against the interpreter and numpy, and the wasm compile time.

Usage: python bench/wasm_bench.py [--sizes 1000,10000,100000,1000000,10000000] [--reps 3]
                                  [--kernels saxpy,matmul] [--no-compile] [--opt]

One run prints two tables. ``--opt`` builds the kernels from the optimized graph (as
`kera build --opt` does), so loops the optimizer marks with ``lanes`` run lane-wise; the
interpreter always runs the unoptimized graph, the reference.

1. Run time, for each kernel and size N (elements per input; matmul: square matrices of
   side round(sqrt(N)) for each N, and always side 512 — the size at which the goals
   are stated). Every time is the median of ``--reps`` runs (one run if the first takes
   over 0.5 s):

   * ``wasm ms``: one end-to-end call through `WasmTarget.run`: the fingerprint check,
     checking the inputs, a fresh store and instance (the compiled module is cached),
     writing the inputs into linear memory, the call, reading the outputs back into
     numpy arrays and building the `RunResult`.
   * ``call ms``: the exported function alone (`runtime.WasmInstance.call(read=False)`):
     one instance, its inputs written into linear memory once beforehand; each timed
     call refuels the store, saves `kera_heap`, calls the export and restores
     `kera_heap`. Outputs are *not* read back (so no copy out of linear memory). The
     run is under fuel metering, as every run of the target is.
   * ``interp ms``: the reference interpreter (`run_function`), "-" where its
     element-at-a-time loops would take too long.
   * ``numpy ms``: the plain numpy expression (`np.sum`, `@` through BLAS, …), which does
     not follow Kera's reduction order: a speed yardstick only.
   * ``interp/wasm``, ``wasm/numpy``, ``call/numpy``: ratios of those times. The goals
     (at 512²/large N): `call/numpy` within 10x for matmul, 2x for elementwise kernels,
     3x for the deterministic sum.
   * ``same``: whether wasm's and the interpreter's output bytes (result digests) agree
     ("-" where the interpreter did not run). A repeated `call()` whose result differs
     from the end-to-end run is reported as "CALL DIFFERS".

   A kernel the target cannot compile prints "unsupported".
2. Compile time per 1000 graph nodes, on generated straight-line and loop functions of
   about 1k and 10k nodes: WAT emission (`lower_wat`), assembly (`wasmtime.wat2wasm`,
   with the fingerprint section), and wasmtime's native compilation (Cranelift).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from functools import partial

import numpy as np
import wasmtime

from kera_core.analysis import analyze
from kera_core.backends.wasm import assemble, lower_wat
from kera_core.backends.wasm.runtime import WasmInstance, engine
from kera_core.interp import InterpError, run_function
from kera_core.targets.wasm import TARGET

SRC = """
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N { y[i] = a * x[i] + y[i]; }
}
pub fn saxpy_pure[N](a: f32, x: &f32[N], y: &f32[N]) -> f32[N] { a * x + y }
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn inner[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn softmax_manual[N](x: &f32[N]) -> f32[N] {
    let e = exp(x - max(x));
    e / sum(&e)
}
pub fn softmax_builtin[N](x: &f32[N]) -> f32[N] { softmax(x) }
fn mean_loop[N](x: &f32[N]) -> f32 {
    let mut s: f32 = 0.0;
    for i in 0..N { s += x[i]; }
    s / N as f32
}
pub fn layernorm_loops[N](x: &f32[N], gamma: &f32[N], beta: &f32[N], eps: f32) -> f32[N] {
    let mu = mean_loop(x);
    let var = {
        let mut acc: f32 = 0.0;
        for i in 0..N { let d = x[i] - mu; acc += d * d; }
        acc / N as f32
    };
    let inv = 1.0 / sqrt(var + eps);
    let mut y: f32[N] = zeros();
    for i in 0..N { y[i] = gamma[i] * ((x[i] - mu) * inv) + beta[i]; }
    y
}
pub fn layernorm_tensor[N](x: &f32[N], gamma: &f32[N], beta: &f32[N], eps: f32) -> f32[N] {
    let d = x - mean(x);
    gamma * (d / sqrt(mean(d * d) + eps)) + beta
}
pub fn layernorm_builtin[N](x: &f32[N], gamma: &f32[N], beta: &f32[N], eps: f32) -> f32[N] {
    gamma * layernorm(x, eps) + beta
}
pub fn matmul_loops[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] {
    let mut c: f32[M, N] = zeros();
    for i in 0..M {
        for j in 0..N {
            let mut acc: f32 = 0.0;
            for k in 0..K { acc += a[i, k] * b[k, j]; }
            c[i, j] = acc;
        }
    }
    c
}
pub fn matmul_builtin[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
"""


def _np_layernorm(i):
    d = i["x"] - i["x"].mean()
    return i["gamma"] * (d / np.sqrt((d * d).mean() + i["eps"])) + i["beta"]


def _np_softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


# name: (inputs kind, numpy yardstick, interpreter loop iterations per element or None)
KERNELS = {
    "saxpy": ("axy", lambda i: i["a"] * i["x"] + i["y"], 1),
    "saxpy_pure": ("axy", lambda i: i["a"] * i["x"] + i["y"], None),
    "total": ("x", lambda i: np.sum(i["x"]), None),
    "inner": ("xy", lambda i: np.dot(i["x"], i["y"]), None),
    "softmax_manual": ("x", lambda i: _np_softmax(i["x"]), None),
    "softmax_builtin": ("x", lambda i: _np_softmax(i["x"]), None),
    "layernorm_loops": ("ln", _np_layernorm, 3),
    "layernorm_tensor": ("ln", _np_layernorm, None),
    "layernorm_builtin": ("ln", _np_layernorm, None),
    "matmul_loops": ("mm", lambda i: i["a"] @ i["b"], "cube"),
    "matmul_builtin": ("mm", lambda i: i["a"] @ i["b"], None),
}
INTERP_MAX_ITERS = 200_000  # the interpreter's scalar loops run ~10 µs per iteration
WASM_MAX_ITERS = 2 * 10**9  # matmul's triple loop beyond this takes minutes
FUEL = 10**13
MEMORY = 4 << 30  # all of wasm32's address space (the runner's default is 1 GiB)
MATMUL_GOAL_SIDE = 512  # the goals are stated for 512x512 matmul


def _inputs(kind: str, n: int, rng) -> tuple[dict, int]:
    """The inputs and the number of scalar-loop iterations per pass (for matmul, side³)."""
    f = lambda k: rng.standard_normal(k).astype(np.float32)  # noqa: E731
    if kind == "axy":
        return {"a": np.float32(1.5), "x": f(n), "y": f(n)}, n
    if kind == "x":
        return {"x": f(n)}, n
    if kind == "xy":
        return {"x": f(n), "y": f(n)}, n
    if kind == "ln":
        return {"x": f(n), "gamma": f(n), "beta": f(n), "eps": np.float32(1e-5)}, n
    side = max(1, round(math.sqrt(n)))
    a = f(side * side).reshape(side, side)
    b = f(side * side).reshape(side, side)
    return {"a": a, "b": b}, side**3


def _time(fn, reps: int) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    if first > 0.5 or reps <= 1:
        return first, out
    ts = [first]
    for _ in range(reps - 1):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), out


def _sizes(kind: str, sizes: list[int]) -> list[int]:
    """The sizes of a kernel: matmul adds 512², the size of the goal."""
    if kind != "mm":
        return sizes
    sides = sorted({max(1, round(math.sqrt(n))) for n in sizes} | {MATMUL_GOAL_SIDE})
    return [side * side for side in sides]


def select(names: str | None) -> list[str]:
    """Kernels by name or name prefix (``matmul`` → matmul_loops, matmul_builtin)."""
    if not names:
        return list(KERNELS)
    out = []
    for want in names.split(","):
        hit = [k for k in KERNELS if k == want or k.startswith(want)]
        if not hit:
            raise SystemExit(f"no kernel {want!r} (kernels: {', '.join(KERNELS)})")
        out += [k for k in hit if k not in out]
    return out


def run_table(
    sizes: list[int], reps: int, kernels: list[str] | None = None, opt: bool = False
) -> None:
    m = analyze(SRC).module
    g, prov = m.graph, m.provenance
    if opt:  # the optimized graph (`kera build --opt`): loops marked `lanes` run lane-wise
        from kera_core.cli.opt import carry_provenance
        from kera_core.opt import optimize

        g = optimize(g).graph
        prov = carry_provenance(prov, g)
    rng = np.random.default_rng(0)
    print(
        f"{'kernel':<18} {'N':>9} {'wasm ms':>10} {'call ms':>10} {'interp ms':>10} "
        f"{'numpy ms':>9} {'interp/wasm':>11} {'wasm/numpy':>10} {'call/numpy':>10} same"
    )
    for name in kernels or list(KERNELS):
        kind, npf, loops = KERNELS[name]
        why = TARGET.unsupported(g, name)
        if why:
            print(f"{name:<18} {'all':>9} unsupported: {why[0]}")
            continue
        art = TARGET.lower(g, prov, name)
        for n in _sizes(kind, sizes):
            ins, iters = _inputs(kind, n, rng)
            label = f"{ins['a'].shape[0]}²" if kind == "mm" else str(n)
            if kind == "mm" and iters > WASM_MAX_ITERS:
                print(f"{name:<18} {label:>9} skipped ({iters:.1e} loop iterations)")
                continue
            try:
                run = partial(TARGET.run, art, g, name, ins, provenance=prov)
                tw, rw = _time(partial(run, fuel=FUEL, memory_limit=MEMORY), reps)
                inst = WasmInstance(
                    art.data, g, name, ins, provenance=prov, fuel=FUEL, memory_limit=MEMORY
                )
                tc, _ = _time(partial(inst.call, read=False), reps)
                call_same = inst.call().digest() == rw.digest()
                del inst  # its linear memory
            except InterpError as e:
                print(f"{name:<18} {label:>9} wasm failed: {e}")
                continue
            tn, _ = _time(lambda: npf(ins), reps)  # noqa: B023
            run_interp = loops is None or iters * (loops if loops != "cube" else 1) <= (
                INTERP_MAX_ITERS
            )
            if run_interp:
                ti, ri = _time(lambda: run_function(m, name, ins), reps)  # noqa: B023
                same = str(ri.digest() == rw.digest())
                ti_s, ratio = f"{ti * 1e3:>10.2f}", f"{ti / tw:>11.1f}"
            else:
                ti_s, ratio, same = f"{'-':>10}", f"{'-':>11}", "-"
            if not call_same:
                same += " CALL DIFFERS"
            print(
                f"{name:<18} {label:>9} {tw * 1e3:>10.2f} {tc * 1e3:>10.3f} {ti_s} "
                f"{tn * 1e3:>9.3f} {ratio} {tw / tn:>10.1f} {tc / tn:>10.1f} {same}",
                flush=True,
            )


def _straight(k: int) -> str:
    lines = ["pub fn big[N](x: &f32[N], a: f32) -> f32 {", "    let v0: f32 = a;"]
    for i in range(1, k):
        lines.append(f"    let v{i}: f32 = v{i - 1} * {1 + i * 1e-4:.6f} + x[{i % 7}];")
    lines.append(f"    v{k - 1}")
    lines.append("}")
    return "\n".join(lines)


def _loops(k: int) -> str:
    lines = ["pub fn big[N](x: &f32[N], a: f32) -> f32 {", "    let mut acc: f32 = a;"]
    for i in range(k):
        lines.append(
            f"    for i in 0..N {{ acc = acc * {1 + i * 1e-4:.6f} + x[i] * {0.5 + i * 1e-4:.6f}; }}"
        )
    lines.append("    acc")
    lines.append("}")
    return "\n".join(lines)


def _nodes(g, fn) -> int:
    return sum(len(g.region_nodes(r)) for r in g.all_regions(g.functions[fn].region))


def compile_table() -> None:
    print()
    print(
        f"{'generated fn':<16} {'nodes':>7} {'emit ms/1k':>11} {'assemble ms/1k':>15} "
        f"{'cranelift ms/1k':>16} {'total ms/1k':>12} {'wasm KiB':>9}"
    )
    for label, gen, k in [
        ("straight-line", _straight, 330),
        ("straight-line", _straight, 3300),
        ("loops", _loops, 120),
        ("loops", _loops, 1200),
    ]:
        m = analyze(gen(k)).module
        g = m.graph
        nodes = _nodes(g, "big")
        t0 = time.perf_counter()
        wat = lower_wat(g, "big")
        t1 = time.perf_counter()
        data = assemble(wat, g.fingerprint())
        t2 = time.perf_counter()
        wasmtime.Module(engine(), data)
        t3 = time.perf_counter()
        per = 1e3 * 1000 / nodes
        print(
            f"{label:<16} {nodes:>7} {(t1 - t0) * per:>11.2f} {(t2 - t1) * per:>15.2f} "
            f"{(t3 - t2) * per:>16.2f} {(t3 - t0) * per:>12.2f} {len(data) / 1024:>9.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000,10000000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kernels", help="comma-separated kernel names or prefixes (default: all)")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time table")
    ap.add_argument("--opt", action="store_true", help="run the optimized graph's kernels")
    args = ap.parse_args()
    run_table([int(s) for s in args.sizes.split(",")], args.reps, select(args.kernels), args.opt)
    if not args.no_compile:
        compile_table()


if __name__ == "__main__":
    main()
