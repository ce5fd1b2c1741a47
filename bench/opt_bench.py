"""Optimizer benchmark: nodes before/after and time per pass, on the examples and large files.

python bench/opt_bench.py [--lines 5000] [--no-examples]

Three inputs: every example; ``bench/corpus.py``'s ``generate(lines)`` (the examples
repeated with fresh names — hash-consing folds the copies into one graph, so it measures
many functions over few unique nodes); and the same file with every float literal made
distinct, so that no two copies share nodes (many unique nodes). For each: unique nodes
and functions before and after, rounds to the fixpoint, the total time per pass over all
rounds, and how much of the total the validator (run after every pass) takes.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.corpus import generate  # noqa: E402
from kera_core.analysis import analyze  # noqa: E402
from kera_core.opt import optimize  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d+)")


def distinct(text: str) -> str:
    """Every float literal gets extra digits of its own: no two copies of a function agree."""
    counter = iter(range(1, 1 << 30))
    return _FLOAT.sub(lambda m: f"{m.group(1)}000{next(counter)}", text)


def bench(label: str, text: str) -> None:
    t0 = time.perf_counter()
    a = analyze(text)
    t_front = time.perf_counter() - t0
    assert not a.has_errors, [d.message for d in a.diagnostics if d.is_error][:3]
    g = a.module.graph
    r = optimize(g)
    t_plain = time.perf_counter()
    optimize(g, validate=False)
    t_plain = time.perf_counter() - t_plain
    rep = r.report
    per = {
        name: (removed, changed, secs, runs)
        for name, removed, changed, secs, runs in rep.per_pass()
    }
    cells = "  ".join(f"{n} {per[n][2] * 1000:6.0f}" for n in per)
    print(
        f"{label:<22} nodes {rep.nodes_before:>6} -> {rep.nodes_after:<6} "
        f"fns {rep.functions_before:>4} -> {rep.functions_after:<4} rounds {rep.iterations}  "
        f"total {rep.seconds * 1000:7.0f} ms (validator {100 * (1 - t_plain / rep.seconds):3.0f}%)"
        f"  front end {t_front * 1000:6.0f} ms"
    )
    print(f"{'':<22} ms per pass: {cells}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--no-examples", action="store_true")
    args = ap.parse_args()
    if not args.no_examples:
        for p in sorted((ROOT / "examples").glob("*.kera")):
            bench(p.name, p.read_text())
    text = generate(args.lines)
    bench(f"corpus {args.lines} lines", text)
    bench(f"distinct {args.lines} lines", distinct(text))


if __name__ == "__main__":
    main()
