"""`kera demo`: the product's promise on one screen, for the examples folder.

For every example: it checks it (every stage), formats it, builds its graph and
prints the fingerprint; where a target can run here, later stages add their
result digests to this table.
"""

from __future__ import annotations

import glob
import os
import time

from kera_core.analysis import analyze
from kera_core.cli.inputs import UsageError, read_input


def register(sub) -> None:
    d = sub.add_parser("demo", help="check, format and fingerprint every example")
    d.add_argument("dir", nargs="?", default="examples", help="folder of .kera files")
    d.set_defaults(func=cmd_demo)


def cmd_demo(args) -> int:
    from kera_core.fmt import format_text

    if not os.path.isdir(args.dir):
        raise UsageError(f"{args.dir}: not a directory")
    files = sorted(glob.glob(os.path.join(args.dir, "*.kera")))
    if not files:
        raise UsageError(f"{args.dir}: no .kera files")
    head = (
        f"{'example':<16} {'bytes':>6} {'fns':>4} {'nodes':>6} {'diags':>6} {'format':>8} "
        f"{'ms':>6}  fingerprint"
    )
    print(head)
    print("-" * (len(head) + 60))
    bad = 0
    for path in files:
        inp = read_input(path)
        t0 = time.perf_counter()
        a = analyze(inp.text)
        fmt = format_text(inp.text)
        ms = (time.perf_counter() - t0) * 1000
        g = a.module.graph
        state = "refused" if fmt.diagnostics else ("changes" if fmt.changed else "clean")
        ok = not a.has_errors and not fmt.diagnostics
        bad += not ok
        fp = f"sha3-256:{g.fingerprint().hex()}" if not a.has_errors else "(errors)"
        name = os.path.basename(path)
        print(
            f"{name:<16} {len(inp.raw):>6} {len(g.exported()):>4} {len(g.nodes):>6} "
            f"{len(a.diagnostics):>6} {state:>8} {ms:>6.0f}  {fp}"
        )
    print(f"\n{len(files)} examples, {bad} with problems")
    return 1 if bad else 0
