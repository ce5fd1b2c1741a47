"""`kera demo`: the product's promise on one screen, for the examples folder.

For every example: check it (every stage), format it, build its graph, print the
fingerprint, then run every exported function on the documented seeded inputs
(`kera run --seed 1`) on each target that can run here and show the combined result
digest per target; a digest that differs from the reference interpreter's is a failure.
"""

from __future__ import annotations

import glob
import hashlib
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
        f"{'example':<16} {'fns':>4} {'nodes':>6} {'diags':>6} {'format':>8} {'ms':>6}  "
        f"{'fingerprint':<24} {'interp result (seed 1)':<24}"
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
        fp = f"sha3-256:{g.fingerprint().hex()[:15]}" if not a.has_errors else "(errors)"
        result = _result_digest(a.module) if not a.has_errors else "-"
        bad += result.startswith("error")
        name = os.path.basename(path)
        print(
            f"{name:<16} {len(g.exported()):>4} {len(g.nodes):>6} "
            f"{len(a.diagnostics):>6} {state:>8} {ms:>6.0f}  {fp:<24} {result:<24}"
        )
    print(f"\n{len(files)} examples, {bad} with problems")
    print("targets that run here: interp (the reference); more join through kera_core.targets")
    return 1 if bad else 0


def _result_digest(module) -> str:
    """One digest over every exported function's `kera run --seed 1` result digest."""
    from kera_core.cli.run import run_seeded
    from kera_core.interp import InterpError

    h = hashlib.sha3_256()
    for f in module.graph.exported():
        try:
            r = run_seeded(module, f.name, seed=1)
        except InterpError as e:
            h.update(f"{f.name} error {e.code}\n".encode())
            continue
        h.update(f"{f.name} {r.digest()}\n".encode())
    return "sha3-256:" + h.hexdigest()[:15]
