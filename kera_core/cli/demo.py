"""`kera demo`: the product's promise on one screen, for the examples folder.

Today it checks and formats every example and prints the size of its tree; each
later stage (fingerprints, targets, result digests) adds its columns here.
"""

from __future__ import annotations

import glob
import os
import time

from kera_core.analysis import analyze
from kera_core.cli.inputs import UsageError, read_input


def register(sub) -> None:
    d = sub.add_parser("demo", help="check, format and summarise every example")
    d.add_argument("dir", nargs="?", default="examples", help="folder of .kera files")
    d.set_defaults(func=cmd_demo)


def cmd_demo(args) -> int:
    from kera_core.fmt import format_text

    if not os.path.isdir(args.dir):
        raise UsageError(f"{args.dir}: not a directory")
    files = sorted(glob.glob(os.path.join(args.dir, "*.kera")))
    if not files:
        raise UsageError(f"{args.dir}: no .kera files")
    header = (
        f"{'example':<20} {'bytes':>7} {'nodes':>7} {'tokens':>7} {'diags':>6} {'fmt':>9} {'ms':>7}"
    )
    print(header)
    print("-" * len(header))
    bad = 0
    for path in files:
        inp = read_input(path)
        t0 = time.perf_counter()
        a = analyze(inp.text)
        fmt = format_text(inp.text)
        ms = (time.perf_counter() - t0) * 1000
        nodes = tokens = 0
        for el in a.parse.tree.preorder():
            if el.is_token:
                tokens += 1
            else:
                nodes += 1
        state = "refused" if fmt.diagnostics else ("changes" if fmt.changed else "clean")
        bad += a.has_errors or bool(fmt.diagnostics)
        name = os.path.basename(path)
        print(
            f"{name:<20} {len(inp.raw):>7} {nodes:>7} {tokens:>7} {len(a.diagnostics):>6} "
            f"{state:>9} {ms:>7.1f}"
        )
    print(f"\n{len(files)} examples, {bad} with problems")
    return 1 if bad else 0
