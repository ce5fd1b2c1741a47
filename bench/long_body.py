"""Keystrokes in one long function, in one process: CPU time of ``Document.edit`` plus the
diagnostics (``analysis()``), per edit, each a new text (issue 17: p95 < 100 ms at 5,000
lines).

    python bench/long_body.py                       # 5,000-line body, 20 edits per kind
    python bench/long_body.py --lines 2000 --samples 10
    python bench/long_body.py --tree /path/to/other/checkout    # the same, another tree

Kinds of edit (bench/corpus.py ``long_function``, sites spread over the body): a digit
typed into a float literal (every later `acc` changes value, not type), a letter typed at
the end of a name (an unknown name: an error), a new statement pasted after one, the first
letter of a new statement (a syntax error: `l` before the next `let`), and a `{` that
opens a block never closed (the rest of the body moves into it: parsed whole); each
undone before the next (not timed: the text seen before is cached). Times are
``time.thread_time`` (CPU of this thread) of the reparse (``Document.edit``) and the
analysis, also as a ratio to an anchor (a fixed pure-Python loop timed in the same
process, as bench/check_bench.py), so runs on a loaded machine compare. The graph is not
read (a keystroke publishes diagnostics only); the last line times reading it once after
the edits (a fingerprint: the body lowered whole).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def anchor() -> float:
    t = time.thread_time()
    x = 0
    for i in range(2_000_000):
        x += i * i
    return time.thread_time() - t


def p95(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--samples", type=int, default=20, help="edits per kind")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the checkout to measure")
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree))
    sys.path.insert(1, str(ROOT))
    from bench.corpus import long_function
    from kera_core.source import Span
    from kera_core.workspace import Document

    text = long_function(args.lines)
    doc = Document("file:///long.kera", text)
    t0 = time.thread_time()
    doc.analysis()
    print(f"{args.tree}: one function of {args.lines} lines")
    print(f"open (parse, lower, check)   {(time.thread_time() - t0) * 1000:8.0f} ms CPU")
    a = min(anchor() for _ in range(3))
    print(f"anchor                       {a * 1000:8.0f} ms")

    def sites(pattern: str) -> list[int]:
        found = [m.end() for m in re.finditer(pattern, doc.text)]
        step = max(1, len(found) // args.samples)
        return found[::step][: args.samples]

    kinds = {
        "a digit in a float literal": (r"\d\.\d", "7"),
        "a letter ending a name (error)": (r"acc(?= \+ a)", "q"),
        "a new statement": (r"\d\.25;", " let z = 1.5;"),
        "a letter starting a statement": (r"\d\.25;", " l"),
        "a `{` typed (unbalanced)": (r"\d\.25;", " {"),
    }
    for what, (pattern, typed) in kinds.items():
        times = []
        for at in sites(pattern):
            t = time.thread_time()
            doc.edit(Span(at, at), typed)
            doc.version += 1
            doc.analysis()
            times.append((time.thread_time() - t) * 1000)
            # undone (a text seen: answered from the document's cache, not timed), so each
            # edit is one keystroke into the clean body
            doc.edit(Span(at, at + len(typed)), "")
            doc.version += 1
            doc.analysis()
        med, top = statistics.median(times), p95(times)
        print(
            f"{what:30} p50 {med:7.1f} ms  p95 {top:7.1f} ms  max {max(times):7.1f} ms"
            f"   (p95 {top / 1000 / a:5.2f} anchors)"
        )
    at = sites(r"\d\.\d")[len(sites(r"\d\.\d")) // 2]
    doc.edit(Span(at, at), "7")  # one more digit: its graph is made when read
    doc.version += 1
    doc.analysis()
    t = time.thread_time()
    doc.analysis().module.graph.fingerprint()
    print(f"the graph read once after    {(time.thread_time() - t) * 1000:8.0f} ms CPU")


if __name__ == "__main__":
    main()
