"""Simulation speed of the verilog target: iverilog against verilator on the same kernels.

Usage: python bench/verilog_sim_bench.py [--kernels matmul.matmul_loops,dot.dot_builtin]
                                         [--size 16] [--reps 3] [--fresh]

For each kernel (``example.function``; every dimension ``--size``, inputs generated with
seed 1) one table row, both simulators in the same process on the same design, test bench
and inputs:

* ``cycles``: the kernel's clock cycles from ``start`` to ``done`` (the module's own
  counter; both simulators must give the same number, and both the interpreter's result
  digest — a row that differs says so instead of timing it);
* ``ticks``: the clock cycles the test bench simulates: loading the inputs through the host
  port, the run, reading the results back;
* ``build s``: compiling the design and test bench (iverilog: the Verilog to vvp code;
  verilator: Verilog to C++ and the C++ build — from its disk cache, about 0 s, unless
  ``--fresh`` turns the cache off);
* ``run s``: the simulation process (best of ``--reps``), start to exit;
* ``cycles/s``: ticks / run s; ``vl/iv``: verilator's cycles/s over iverilog's.

The process start is in ``run s`` (a few ms): short kernels understate both simulators'
speed; the long ones (matmul_loops) show the steady state.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kera_core.analysis import analyze  # noqa: E402
from kera_core.backends.verilog import testbench as TB  # noqa: E402
from kera_core.interp import run_function  # noqa: E402
from kera_core.interp.api import entry_signature  # noqa: E402
from kera_core.interp.gen import InputGenerator  # noqa: E402
from kera_core.targets import get  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = [
    "saxpy.saxpy_pure",
    "dot.dot_builtin",
    "softmax.softmax_builtin",
    "conv1d.conv1d_builtin",
    "matmul.matmul_builtin",
    "matmul.matmul_loops",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--fresh", action="store_true", help="build verilator models uncached")
    args = ap.parse_args()
    for sim in TB.SIMULATORS:
        why = TB.tools_missing(sim)
        if why:
            print(f"{sim} cannot run here: {why}")
            return 1
    if args.fresh:
        os.environ["KERA_VERILATOR_CACHE"] = "off"
    target = get("verilog")
    head = (
        f"{'kernel':28} {'cycles':>9} {'ticks':>9} | {'iv build s':>10} {'iv run s':>9} "
        f"{'iv cycles/s':>12} | {'vl build s':>10} {'vl run s':>9} {'vl cycles/s':>12} | "
        f"{'vl/iv':>7}"
    )
    print(f"dimensions {args.size}, best of {args.reps} runs")
    print(head)
    print("-" * len(head))
    for name in args.kernels.split(","):
        example, fn = name.split(".")
        with open(os.path.join(ROOT, "examples", f"{example}.kera")) as fh:
            m = analyze(fh.read()).module
        sig = entry_signature(m, fn)
        dims = {i: args.size for i in range(len(sig.dim_names))}
        gen = InputGenerator(1, False)
        inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
        named = {sig.dim_names[i]: n for i, n in dims.items()}
        ref = run_function(m, fn, inputs, named).digest()
        art = target.lower(m.graph, None, fn)
        row: dict[str, dict] = {}
        for sim in TB.SIMULATORS:
            best: dict | None = None
            for _ in range(args.reps):
                st: dict = {}
                t0 = time.perf_counter()
                r = target.run(
                    art, m.graph, fn, inputs, named, provenance=m.provenance, sim=sim, stats=st
                )
                st["wall_s"] = time.perf_counter() - t0
                st["same"] = r.digest() == ref
                st["cycles"] = r.cycles
                if best is None:
                    best = dict(st)
                else:
                    best["run_s"] = min(best["run_s"], st["run_s"])
                    best["same"] = best["same"] and st["same"]
            assert best is not None
            row[sim] = best
        iv, vl = row["iverilog"], row["verilator"]
        if not (iv["same"] and vl["same"]) or iv["cycles"] != vl["cycles"]:
            print(
                f"{name:28} DIFFERS: iverilog same={iv['same']} cycles={iv['cycles']}, "
                f"verilator same={vl['same']} cycles={vl['cycles']}"
            )
            continue
        ips, vps = iv["ticks"] / iv["run_s"], vl["ticks"] / vl["run_s"]
        print(
            f"{name:28} {iv['cycles']:>9,} {iv['ticks']:>9,} | {iv['build_s']:>10.2f} "
            f"{iv['run_s']:>9.3f} {ips:>12,.0f} | {vl['build_s']:>10.2f} {vl['run_s']:>9.3f} "
            f"{vps:>12,.0f} | {vps / ips:>6.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
