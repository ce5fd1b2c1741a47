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

from kera_core import targets
from kera_core.cli.inputs import UsageError, read_input
from kera_core.source import encode


def register(sub) -> None:
    d = sub.add_parser("demo", help="check, format and fingerprint every example")
    d.add_argument("dir", nargs="?", default="examples", help="folder of .kera files")
    d.set_defaults(func=cmd_demo)


def cmd_demo(args) -> int:
    from kera_core.analysis import analyze
    from kera_core.cli.run import cannot_run_here
    from kera_core.fmt import format_text

    if not os.path.isdir(args.dir):
        raise UsageError(f"{args.dir}: not a directory")
    files = sorted(glob.glob(os.path.join(args.dir, "*.kera")))
    if not files:
        raise UsageError(f"{args.dir}: no .kera files")
    runnable = targets.runners()
    unable: dict[str, str] = {}  # target → why this machine cannot run it
    cols = "".join(f" {t.name:>13}" for t in runnable)
    head = (
        f"{'example':<16} {'fns':>4} {'nodes':>6} {'diags':>6} {'format':>8} {'ms':>6}  "
        f"{'fingerprint':<24} {'interp (seed 1)':<24}{cols}"
    )
    print(head)
    print("-" * len(head))
    bad = 0
    for path in files:
        inp = read_input(path)
        t0 = time.perf_counter()
        a = analyze(inp.text)
        fmt = format_text(inp.text)
        ms = (time.perf_counter() - t0) * 1000
        g = a.module.graph
        state = "refused" if fmt.diagnostics else ("changes" if fmt.changed else "clean")
        bad += a.has_errors or bool(fmt.diagnostics)
        fp = f"sha3-256:{g.fingerprint().hex()[:15]}" if not a.has_errors else "(errors)"
        cells = ""
        result = "-"
        if not a.has_errors:
            reference = _results(a.module, "interp")
            result = _combined(reference)
            bad += any(d.startswith("error") for d in reference.values())
            for t in runnable:
                why = cannot_run_here(t)
                if why:  # a column that says so rather than disappearing
                    cells += f" {'not here':>13}"
                    unable.setdefault(t.name, why)
                    continue
                got = _results(a.module, t.name)
                same = [f for f in got if got[f] == reference[f]]
                bad += len(got) - len(same)
                cells += f" {f'{len(same)}/{len(reference)} same':>13}"
        name = os.path.basename(path)
        print(
            f"{name:<16} {len(g.exported()):>4} {len(g.nodes):>6} "
            f"{len(a.diagnostics):>6} {state:>8} {ms:>6.0f}  {fp:<24} {result:<24}{cells}"
        )
    print(f"\n{len(files)} examples, {bad} problem(s)")
    for name, why in sorted(unable.items()):
        print(f"{name}: not run here: {why}")
    print(
        "a target column counts the exported functions whose result digest equals the"
        " interpreter's;\nfunctions a target cannot compile yet are not counted"
        " (`kera run --target all` lists them)"
    )
    return 1 if bad else 0


def _results(module, target: str) -> dict[str, str]:
    """`kera run --seed 1 --target T` result digest per exported function it can compile."""
    from kera_core.cli.run import run_seeded
    from kera_core.interp import InterpError

    t = targets.get(target)
    out = {}
    for f in module.graph.exported():
        if t is not None and t.unsupported(module.graph, f.name):
            continue
        try:
            r = run_seeded(module, f.name, seed=1, target=target)
        except InterpError as e:
            out[f.name] = f"error {e.code}"
            continue
        out[f.name] = r.digest()
    return out


def _combined(digests: dict[str, str]) -> str:
    h = hashlib.sha3_256()
    for name in sorted(digests):
        h.update(encode(f"{name} {digests[name]}\n"))
    return "sha3-256:" + h.hexdigest()[:15]
