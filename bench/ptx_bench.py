"""The ptx target on a GPU against the device's copy bandwidth and cupy (anchors in the same
process), where a GPU exists; one line saying why not elsewhere.

Usage: python bench/ptx_bench.py [--sizes 10000000,100000000] [--sides 1024,4096] [--reps 3]
       [--only total,dotp,soft,mm] [--budget 20]

Per kernel and size: the kernel's own time (CUDA events around the launch: no transfers),
the bytes it must read at the device-to-device copy's rate (``cuMemcpyDtoD`` of the same
input bytes: the bandwidth anchor, counted as bytes read + written), the fraction of that
bandwidth the kernel reaches, and cupy's time for the same computation with the ratio
(where cupy imports). matmul: GFLOP/s and the fraction of the non-tensor-core FP32 peak
(``--fp32-peak``, the datasheet's 67 TFLOP/s for an H100/H200 SXM by default).

Whether the result bytes equal the interpreter's is checked at a small size per kernel. A
kernel whose first run takes longer than ``--budget`` seconds is not repeated, and larger
sizes of it are skipped (said so in the table).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kera_core.analysis import analyze  # noqa: E402
from kera_core.backends.ptx import compile as P  # noqa: E402
from kera_core.backends.ptx import runtime as R  # noqa: E402
from kera_core.interp import run_function  # noqa: E402

SRC = """
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn dotp[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn soft[N](x: &f32[N]) -> f32[N] { softmax(x) }
pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
"""


def inputs_for(rng, name: str, n: int) -> dict:
    if name == "mm":
        a = rng.standard_normal((n, n), dtype=np.float32)
        return {"a": a, "b": rng.standard_normal((n, n), dtype=np.float32)}
    out = {"x": rng.standard_normal(n, dtype=np.float32)}
    if name == "dotp":
        out["y"] = rng.standard_normal(n, dtype=np.float32)
    return out


def bytes_read(name: str, n: int) -> int:
    return {"total": 4 * n, "dotp": 8 * n, "soft": 4 * n, "mm": 8 * n * n}[name]


def cupy_anchor(name: str, inputs: dict):
    try:
        import cupy as cp
    except Exception:  # noqa: BLE001 - cupy is optional: the column says so
        return None
    dev = {k: cp.asarray(v) for k, v in inputs.items()}
    x = dev.get("x")
    if name == "total":
        return lambda: cp.sum(x)
    if name == "dotp":
        return lambda: cp.dot(x, dev["y"])
    if name == "soft":
        return lambda: (lambda e: e / e.sum())(cp.exp(x - x.max()))
    return lambda: dev["a"] @ dev["b"]


def cupy_ms(fn, reps: int) -> float:
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(ts)


def copy_gbs(dev: R.Device, nbytes: int, reps: int) -> float:
    """Device-to-device copy rate of `nbytes`, counting bytes read and written (GB/s)."""
    cu = dev.cu
    a, b = dev.alloc(nbytes), dev.alloc(nbytes)
    try:
        start, stop = dev._events()
        ts = []
        for _ in range(reps + 1):
            R._ok(cu, cu.cuEventRecord(start, 0))
            R._ok(cu, cu.cuMemcpyDtoD(b, a, nbytes))
            R._ok(cu, cu.cuEventRecord(stop, 0))
            R._ok(cu, cu.cuCtxSynchronize())
            ts.append(float(R._ok(cu, cu.cuEventElapsedTime(start, stop))))
        return 2 * nbytes / (statistics.median(ts[1:]) * 1e-3) / 1e9
    finally:
        dev.free(a)
        dev.free(b)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000000,100000000")
    ap.add_argument("--sides", default="1024,4096")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="total,dotp,soft,mm")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds a first run may take")
    ap.add_argument("--fp32-peak", type=float, default=67.0, help="TFLOP/s, non-tensor-core")
    args = ap.parse_args()
    why = R.why_no_gpu()
    if why is not None:
        print(f"ptx_bench: {why}; nothing to measure here")
        return 0
    if P.find_ptxas() is None:
        print("ptx_bench: ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
        return 0
    m = analyze(SRC).module
    g = m.graph
    dev = R.Device.get(8 << 30)
    arch = dev.arch()
    rng = np.random.default_rng(1)
    kernels = {}
    for f in g.exported():
        text = P.compiled(g, f.name).selected.text
        art = P.artifact_text(g, f.name)
        dev.images[R.ptx_key(art)] = P.assemble(text, arch)[1]
        entry, threads, _ = P.read(art.encode(), g)
        kernels[f.name] = (art, threads)

    def run(name, inp):
        art, threads = kernels[name]
        return R.run(art, threads, m, name, inp, memory_limit=8 << 30)

    print(
        f"ptx on {arch} (CUDA events, kernel only) vs device copy and cupy; median of {args.reps}"
    )
    print(
        f"{'kernel':7} {'N':>11} {'ptx ms':>10} {'of copy bw':>10} {'cupy ms':>9} {'ptx/cupy':>9}"
        f" {'same':>5}"
    )
    only = args.only.split(",")
    for name in only:
        small = inputs_for(rng, name, 24 if name == "mm" else 3000)
        same = run(name, small).digest() == run_function(m, name, small).digest()
        sizes = args.sides if name == "mm" else args.sizes
        for n in (int(s) for s in sizes.split(",")):
            inp = inputs_for(rng, name, n)
            t0 = time.perf_counter()
            run(name, inp)
            first = time.perf_counter() - t0
            ts = [dev.last_kernel_ms]
            if first < args.budget:
                for _ in range(args.reps - 1):
                    run(name, inp)
                    ts.append(dev.last_kernel_ms)
            t = statistics.median(ts)
            anchor = cupy_anchor(name, inp)
            t_cp = cupy_ms(anchor, args.reps) if anchor is not None else float("nan")
            label = f"{n}²" if name == "mm" else str(n)
            if name == "mm":
                gf = 2 * n**3 / (t * 1e-3) / 1e9
                extra = f"   {gf:.1f} GFLOP/s = {gf / (args.fp32_peak * 1e3):.2%} of FP32 peak"
                frac = ""
            else:
                bw = copy_gbs(dev, bytes_read(name, n), args.reps)
                reached = bytes_read(name, n) / (t * 1e-3) / 1e9
                frac = f"{reached / bw:.1%}"
                extra = f"   (copy {bw:.0f} GB/s)"
            print(
                f"{name:7} {label:>11} {t:10.3f} {frac:>10} {t_cp:9.3f} {t / t_cp:9.1f}"
                f" {str(same):>5}{extra}  [{dev.last_blocks} CTAs]",
                flush=True,
            )
            if first >= args.budget:
                print(f"{'':7} first run took {first:.0f} s: larger sizes of {name} skipped")
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
