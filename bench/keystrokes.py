"""Keystrokes at bench/lsp_latency.py's sites, in one process: CPU time of ``Document.edit``
plus the diagnostics (``analysis()``) of each new text (issue 17: p95 < 30 ms at 5k lines,
< 50 ms at 50k, through the server — which adds its per-version work to these).

    python bench/keystrokes.py                       # 5k lines, 30 keys per kind
    python bench/keystrokes.py --lines 50000 --verbose
    python bench/keystrokes.py --tree /path/to/other/checkout    # the same, another tree

The kinds and sites are the server benchmark's (``body_anchors``, ``ITEM_SITES``): a digit
typed into a float in a function body (by byte offset: where the file has non-ASCII text
before it, the site can land in a comment or a constant, as it does through the server), a
letter into a parameter's name, into a struct's first field name, a digit into a
constant's value; each key is deleted again before the next (that deletion returns to a
text analysed before: it is not timed). ``--verbose`` lists the keys that took the
whole-module path or more than 40 ms, with how many functions were lowered.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--samples", type=int, default=30, help="keys per kind")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree))
    sys.path.insert(1, str(ROOT))
    from bench.corpus import generate
    from bench.lsp_latency import ITEM_SITES, body_anchors
    from kera_core.source import Span
    from kera_core.workspace import Document

    doc = Document("file:///keystrokes.kera", generate(args.lines), 1)
    t0 = time.process_time()
    doc.analysis()
    print(f"{args.tree}: {args.lines} lines, open {(time.process_time() - t0) * 1000:.0f} ms CPU")

    def typed(at: int, end: int, new: str) -> tuple[float, str, int]:
        text = doc.text
        start = len(text[:at].encode("utf-8"))
        stop = start + len(text[at:end].encode("utf-8"))
        module, lowered = doc.lowerings["module"], doc.cache.lowered
        t = time.process_time()
        doc.edit(Span(start, stop), new)
        doc.version += 1
        doc.analysis()
        ms = (time.process_time() - t) * 1000
        path = "module" if doc.lowerings["module"] > module else "item"
        return ms, path, doc.cache.lowered - lowered

    floats, _ = body_anchors(doc.text)
    step = max(1, len(floats) // args.samples)
    kinds = {"body": ([doc.text.index(".", k) + 1 for k in floats[::step]], "5")}
    for what, pattern, key in ITEM_SITES:
        found = [m.end(1) for m in re.finditer(pattern, doc.text)]
        kinds[what] = (found[:: max(1, len(found) // args.samples)], key)
    rows = []
    for what, (sites, key) in kinds.items():
        times = []
        for at in sites[: args.samples]:
            ms, path, lowered = typed(at, at, key)
            times.append(ms)
            if args.verbose and (path == "module" or ms > 40):
                print(f"  {what} at {at}: {ms:.1f} ms, {path} path, {lowered} lowered")
            typed(at, at + 1, "")
        rows.append((what, times))
    print(f"{'a key typed, CPU ms':<22} {'n':>3} {'p50':>7} {'p95':>7} {'max':>7}")
    for what, xs in rows:
        print(
            f"{what:<22} {len(xs):>3} {statistics.median(xs):>7.1f} {pct(xs, 0.95):>7.1f}"
            f" {max(xs):>7.1f}"
        )


if __name__ == "__main__":
    main()
