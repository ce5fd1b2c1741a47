"""How fast is `.keg` writing and reading, and how big are the files, for a ~10k-node graph?

Run: `.venv/bin/python bench/keg_bench.py [--nodes 10000] [--repeat 5]`. Reading
includes full verification (every node re-hashed); `analyze` is shown for scale.
"""

from __future__ import annotations

import argparse
import gzip
import time

from kera_core.analysis import analyze
from kera_core.keg import read_keg, write_keg


def big_program(n_fns: int, lets: int) -> str:
    """Private helpers with arithmetic chains, loops and ifs, called from exported functions."""
    out = []
    for f in range(n_fns):
        body = [
            f"fn h{f}[N](a: f32, b: i64, x: &f32[N]) -> f32 {{",
            "    let v0 = a;",
        ]
        for i in range(1, lets):
            op = "+-*"[i % 3]
            body.append(f"    let v{i} = v{i - 1} {op} {f}.{i}f32;")
        body += [
            "    let mut acc = 0.0f32;",
            "    for i in 0..N {",
            f"        acc += x[i] * v{lets - 1};",
            "    }",
            f"    let c = if b > {f}i64 {{ acc - v{lets // 2} }} else {{ acc }};",
            "    c + sum(x)",
            "}",
        ]
        out.append("\n".join(body))
    for f in range(0, n_fns, 4):
        calls = " + ".join(f"h{g}(a, b, x)" for g in range(f, min(f + 4, n_fns)))
        out.append(f"pub fn f{f}[N](a: f32, b: i64, x: &f32[N]) -> f32 {{\n    {calls}\n}}")
    return "\n\n".join(out) + "\n"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=10_000, help="about this many nodes")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    lets = 100
    n_fns = max(1, round(args.nodes / (2 * lets - 4)))  # each let is a constant and an op
    src = big_program(n_fns, lets)
    t = time.perf_counter()
    a = analyze(src)
    t_analyze = time.perf_counter() - t
    assert not a.has_errors, a.diagnostics[:3]
    g, prov = a.module.graph, a.module.provenance
    full = write_keg(g, prov)
    bare = write_keg(g)
    assert read_keg(full).graph.fingerprint() == g.fingerprint()
    t_write = best(lambda: write_keg(g, prov), args.repeat)
    t_write_bare = best(lambda: write_keg(g), args.repeat)
    t_read = best(lambda: read_keg(full), args.repeat)
    t_read_bare = best(lambda: read_keg(bare), args.repeat)
    n_nodes, n_regions = len(g.nodes), len(g.regions)
    print(f"graph: {n_nodes} nodes, {n_regions} regions, {len(g.functions)} functions")
    print(f"source: {len(src.encode())} bytes; analyze {t_analyze * 1000:.0f} ms")
    print(
        f".keg with provenance: {len(full)} bytes ({len(full) / n_nodes:.1f} B/node), "
        f"gzip -9: {len(gzip.compress(full, 9))}"
    )
    print(
        f".keg without provenance: {len(bare)} bytes ({len(bare) / n_nodes:.1f} B/node), "
        f"gzip -9: {len(gzip.compress(bare, 9))}"
    )
    print(f"per-node hashes would add {32 * n_nodes} bytes")
    print(
        f"write: {t_write * 1000:.1f} ms with provenance, {t_write_bare * 1000:.1f} ms without"
        f" ({t_write_bare / n_nodes * 1e6:.1f} us/node)"
    )
    print(
        f"read+verify: {t_read * 1000:.1f} ms with provenance, {t_read_bare * 1000:.1f} ms"
        f" without ({t_read_bare / n_nodes * 1e6:.1f} us/node)"
    )


if __name__ == "__main__":
    main()
