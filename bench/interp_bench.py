"""How much slower is the reference interpreter than plain numpy on the examples?

Run: `.venv/bin/python bench/interp_bench.py [--n 1000000] [--repeat 3] [--no-loops]`.

Each row runs one exported example function through `run_function` (inputs prepared
beforehand) and the obvious numpy expression for the same result (numpy's own order of
summation, its own exp, BLAS for matmul: *not* bit-identical, just the speed yardstick).
Loop kernels execute one interpreted region activation per iteration. The last rows
compare the canonical sum with `np.sum`.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from kera_core.analysis import analyze
from kera_core.interp import run_function
from kera_core.interp.reduce import canonical_sum

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MODS: dict[str, object] = {}


def module(name: str):
    if name not in _MODS:
        with open(os.path.join(ROOT, "examples", name), encoding="utf-8") as f:
            _MODS[name] = analyze(f.read()).module
    return _MODS[name]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def rows(n: int, loops: bool, rng):
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    a = np.float32(0.5)
    k16 = rng.uniform(-1, 1, 16).astype(np.float32)
    gamma, beta = np.ones(n, np.float32), np.zeros(n, np.float32)
    eps = np.float32(1e-5)

    def np_layernorm():
        d = x - x.mean()
        return d / np.sqrt((d * d).mean() + eps)

    def np_softmax():
        e = np.exp(x - x.max())
        return e / e.sum()

    def np_conv():
        xp = np.concatenate([x, np.zeros(16, np.float32)])
        return np.correlate(xp, k16, "valid")[:n]

    out = [
        ("saxpy_pure", "saxpy.kera", {"a": a, "x": x, "y": y}, lambda: a * x + y, n),
        ("saxpy_fused", "saxpy.kera", {"a": a, "x": x, "y": y}, lambda: a * x + y, n),
        ("dot_builtin", "dot.kera", {"x": x, "y": y}, lambda: np.dot(x, y), n),
        ("softmax_builtin", "softmax.kera", {"x": x}, np_softmax, n),
        ("gate (sigmoid)", "softmax.kera", {"x": x}, lambda: 1 / (1 + np.exp(-x)), n),
        (
            "layernorm_builtin",
            "layernorm.kera",
            {"x": x, "gamma": gamma, "beta": beta, "eps": eps},
            lambda: gamma * np_layernorm() + beta,
            n,
        ),
        ("conv1d_builtin K=16", "conv1d.kera", {"x": x, "k": k16}, np_conv, n),
    ]
    m = int(round(n ** (1 / 2)))
    am = rng.uniform(-1, 1, (m, m)).astype(np.float32)
    bm = rng.uniform(-1, 1, (m, m)).astype(np.float32)
    out.append((f"matmul_builtin {m}^3", "matmul.kera", {"a": am, "b": bm}, lambda: am @ bm, m * m))
    if loops:
        out += [
            ("saxpy (loop)", "saxpy.kera", {"a": a, "x": x, "y": y}, lambda: a * x + y, n),
            ("dot_loop", "dot.kera", {"x": x, "y": y}, lambda: np.dot(x, y), n),
        ]
        c = int(round(n ** (1 / 3)))
        ac = rng.uniform(-1, 1, (c, c)).astype(np.float32)
        bc = rng.uniform(-1, 1, (c, c)).astype(np.float32)
        out.append(
            (f"matmul_loops {c}^3", "matmul.kera", {"a": ac, "b": bc}, lambda: ac @ bc, c**3)
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-loops", action="store_true", help="skip the interpreted loops")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    header = f"{'kernel':<24} {'size':>9} {'interp ms':>11} {'numpy ms':>10} {'ratio':>8}"
    print(header)
    print("-" * len(header))
    for label, file, inputs, np_fn, size in rows(args.n, not args.no_loops, rng):
        fn = label.split()[0]
        mod = module(file)
        is_loop = "loop" in label
        rep = 1 if is_loop else args.repeat
        t_i = best(lambda fn=fn, mod=mod, inputs=inputs: run_function(mod, fn, inputs), rep)
        t_n = best(np_fn, args.repeat)
        print(f"{label:<24} {size:>9} {t_i * 1e3:>11.1f} {t_n * 1e3:>10.2f} {t_i / t_n:>8.1f}")
    for n in (args.n, 10 * args.n):
        x = rng.uniform(-1, 1, n).astype(np.float32)
        t_c = best(lambda x=x: canonical_sum(x), args.repeat)
        t_s = best(lambda x=x: np.sum(x), args.repeat)
        label = "canonical sum vs np.sum"
        print(f"{label:<24} {n:>9} {t_c * 1e3:>11.1f} {t_s * 1e3:>10.2f} {t_c / t_s:>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
