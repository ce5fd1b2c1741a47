"""Scaling benchmark: time must grow linearly with the size of ordinary code.

Each shape of bench/shapes.py (long `else if` ladders, a constant repeated on every line,
long operator chains, many `let`s, loops, functions) is generated at n, 2n and 4n, and
every stage an editor runs on it is timed: analysis (parse, graph, checks), the
workspace's open + analysis + semantic tokens + outline, and formatting. The figure is
the growth factor per doubling, t(4n) / t(2n): 2.0 is linear, 4.0 quadratic; the goal is
at most 2.2. The anchor, measured in the same process on the same text, is tree-sitter
parsing it (linear by construction): its growth factor shows the noise of the machine.

    python bench/scaling.py            # n = 1000
    python bench/scaling.py --quick    # n = 250 (a smoke run)
    python bench/scaling.py --shapes else_if,const
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.shapes import CHAINS  # noqa: E402
from kera_core.analysis import analyze  # noqa: E402
from kera_core.fmt import format_text  # noqa: E402
from kera_core.ide import outline, tokens  # noqa: E402
from kera_core.workspace import Workspace  # noqa: E402

GOAL = 2.2


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def editor(src: str) -> None:
    a = Workspace().open("file:///scaling.kera", src).analysis()
    tokens.semantic_tokens(a)
    outline.document_symbols(a)


def tree_sitter_parse():
    import tree_sitter
    import tree_sitter_kera

    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_kera.language()))
    return lambda src: parser.parse(src.encode())


STAGES = {
    "analyze": analyze,
    "editor": editor,
    "format": format_text,
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--shapes", default=",".join(CHAINS))
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    n = args.n or (250 if args.quick else 1000)
    anchor = tree_sitter_parse()
    sizes = (n, 2 * n, 4 * n)
    print(f"growth per doubling, t({4 * n}) / t({2 * n}); goal <= {GOAL} (2.0 is linear)")
    print(f"{'shape':14} " + "".join(f"{s:>18}" for s in STAGES) + f"{'tree-sitter':>18}")
    worst = 0.0
    for shape in args.shapes.split(","):
        gen = CHAINS[shape]
        srcs = [gen(k) for k in sizes]
        cols = []
        for stage in list(STAGES.values()) + [anchor]:
            t = [best(lambda s=s, f=stage: f(s), args.repeat) for s in srcs[1:]]
            growth = t[1] / max(t[0], 1e-9)
            cols.append(f"{growth:6.2f}x {t[1] * 1000:7.0f} ms")
            if stage is not anchor:
                worst = max(worst, growth)
        print(f"{shape:14} " + "".join(f"{c:>18}" for c in cols), flush=True)
    print(f"worst growth {worst:.2f}x per doubling (goal <= {GOAL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
