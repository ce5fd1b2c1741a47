"""Graph-building benchmark: a generated 20k-line file through parse + lowering + fingerprint.

python bench/graph_build.py [--lines 20000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import generate  # noqa: E402
from kera_core.sema import LoweringCache, lower_module  # noqa: E402
from kera_core.syntax.parse import parse  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=20_000)
    args = ap.parse_args()
    text = generate(args.lines)
    print(f"file: {text.count(chr(10))} lines, {len(text.encode()) / 1e3:.0f} kB")

    t0 = time.perf_counter()
    p = parse(text)
    t_parse = time.perf_counter() - t0

    cache = LoweringCache()
    t0 = time.perf_counter()
    m = lower_module(p, cache)
    t_lower = time.perf_counter() - t0
    assert not [d for d in m.diagnostics if d.is_error], m.diagnostics[:3]
    g = m.graph
    n_nodes = len(g.nodes)
    built = sum(len(lf.nodes) for lf in m.functions.values())  # before cross-function dedup

    t0 = time.perf_counter()
    for _ in range(100):
        fp = g.fingerprint()
    t_fp = (time.perf_counter() - t0) / 100

    t0 = time.perf_counter()
    lower_module(p, cache)  # every function reused from the cache
    t_cached = time.perf_counter() - t0

    print(f"parse            {t_parse * 1000:8.0f} ms")
    print(f"lower + check    {t_lower * 1000:8.0f} ms   {len(g.functions)} functions, "
          f"{built} nodes built ({built / t_lower:,.0f} nodes/s), "
          f"{n_nodes} unique after dedup")  # fmt: skip
    print(f"fingerprint      {t_fp * 1000:8.3f} ms   (over function hashes)  {fp.hex()[:16]}…")
    print(f"source -> fingerprint {(t_parse + t_lower) * 1000:6.0f} ms")
    print(f"re-lower, all cached  {t_cached * 1000:6.0f} ms   ({cache.reused} reused)")


if __name__ == "__main__":
    main()
