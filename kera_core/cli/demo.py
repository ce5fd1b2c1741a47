"""`kera demo`: the product's promise on one screen, for the examples folder.

For every example — a `.kera` file, or a package directory (every file of it) — check it
(every stage), format it, build its graph, print the fingerprint, then run every exported function on the documented seeded inputs
(`kera run --seed 1`) on each target that can run here and show the combined result
digest per target; a digest that differs from the reference interpreter's is a failure.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any

from kera_core import targets
from kera_core.cli.inputs import UsageError, read_input
from kera_core.source import encode


def register(sub) -> None:
    d = sub.add_parser("demo", help="check, format and fingerprint every example")
    d.add_argument(
        "dir", nargs="?", default="examples", help="folder of .kera files and package directories"
    )
    d.set_defaults(func=cmd_demo)


@dataclass
class _Checked:
    """One example, checked and formatted: a file, or a package (a directory)."""

    name: str
    program: Any  # what runs: has ``graph`` and ``provenance``
    diagnostics: int
    has_errors: bool
    fmt: str  # clean | changes | refused


def examples_in(folder: str) -> list[str]:
    """The examples of ``folder``: its `.kera` files and its package directories (a
    directory with a `kera.toml` or with `.kera` files under it), in name order."""
    from kera_core.manifest import MANIFEST, package_files

    out = []
    for name in sorted(os.listdir(folder)):
        full = os.path.join(folder, name)
        if os.path.isfile(full) and name.endswith(".kera"):
            out.append(full)
        elif os.path.isdir(full) and (
            os.path.isfile(os.path.join(full, MANIFEST)) or package_files(full)
        ):
            out.append(full)
    return out


def _check(path: str) -> _Checked:
    from kera_core.analysis import analyze
    from kera_core.fmt import format_text

    if os.path.isdir(path):
        from kera_core.cli import package

        pkg = package.load(path)
        fmts = [format_text(m.unit.text) for m in pkg.modules.values()]
        diags = [d for m in pkg.modules.values() for d in m.diagnostics]
        return _Checked(
            os.path.basename(path) + "/",
            pkg,
            len(diags),
            pkg.has_errors,
            _fmt_state(any(f.diagnostics for f in fmts), any(f.changed for f in fmts)),
        )
    inp = read_input(path)
    a = analyze(inp.text)
    fmt = format_text(inp.text)
    return _Checked(
        os.path.basename(path),
        a.module,
        len(a.diagnostics),
        a.has_errors,
        _fmt_state(bool(fmt.diagnostics), fmt.changed),
    )


def _fmt_state(refused: bool, changed: bool) -> str:
    return "refused" if refused else ("changes" if changed else "clean")


def cmd_demo(args) -> int:
    from kera_core.cli.run import cannot_run_here

    if not os.path.isdir(args.dir):
        raise UsageError(f"{args.dir}: not a directory")
    paths = examples_in(args.dir)
    if not paths:
        raise UsageError(f"{args.dir}: no .kera files or packages")
    runnable = targets.runners()
    unable: dict[str, str] = {}  # target → why this machine cannot run it
    refused: dict[str, int] = {}  # target → functions it cannot compile yet
    cols = "".join(f" {t.name:>13}" for t in runnable)
    head = (
        f"{'example':<16} {'fns':>4} {'nodes':>6} {'diags':>6} {'format':>8} {'ms':>6}  "
        f"{'fingerprint':<24} {'interp (seed 1)':<24}{cols}"
    )
    print(head)
    print("-" * len(head))
    bad = 0
    for path in paths:
        t0 = time.perf_counter()
        c = _check(path)
        ms = (time.perf_counter() - t0) * 1000
        g = c.program.graph
        bad += c.has_errors or c.fmt == "refused"
        fp = f"sha3-256:{g.fingerprint().hex()[:15]}" if not c.has_errors else "(errors)"
        cells = ""
        result = "-"
        if not c.has_errors:
            reference = _results(c.program, "interp")
            result = _combined(reference)
            bad += any(d.startswith("error") for d in reference.values())
            for t in runnable:
                why = cannot_run_here(t)
                emulated = why is not None and emulate(t)
                if why and not emulated:  # a column that says so rather than disappearing
                    cells += f" {'not here':>13}"
                    unable.setdefault(t.name, why)
                    continue
                if emulated:
                    base = why.split("; --emulate")[0]
                    unable.setdefault(t.name, f"{base}; its column ran on the emulator")
                try:
                    got = _results(c.program, t.name)
                finally:
                    if emulated:
                        t.emulate = None
                same = [f for f in got if got[f] == reference[f]]
                bad += len(got) - len(same)
                refused[t.name] = refused.get(t.name, 0) + len(reference) - len(got)
                word = "emul." if emulated else "same"
                cell = f"{len(same)}/{len(got)} {word}" if got else "all refused"
                cells += f" {cell:>13}"
        print(
            f"{c.name:<16} {len(g.exported()):>4} {len(g.nodes):>6} "
            f"{c.diagnostics:>6} {c.fmt:>8} {ms:>6.0f}  {fp:<24} {result:<24}{cells}"
        )
    print(f"\n{len(paths)} examples, {bad} problem(s)")
    for name, why in sorted(unable.items()):
        print(f"{name}: not run here: {why}")
    for name, n in sorted(refused.items()):
        if n:
            print(f"{name}: {n} function(s) it cannot compile yet, refused at compile time")
    print(
        "a target column counts, of the exported functions the target compiles, those whose"
        " result digest equals the interpreter's (`emul.`: on the target's emulator);\nthe functions it refuses are counted"
        " apart (`kera run --target all` says why);\na name ending in `/` is a package"
        " (all of its files; its `pub` functions)"
    )
    return 1 if bad else 0


def emulate(t) -> bool:
    """Switch a target that cannot run here to its emulator, if it has one (ptx: the PTX
    emulator runs its kernels without a GPU); whether it did."""
    if not hasattr(t, "emulate"):
        return False
    from kera_core.backends.ptx.emulate import Shape

    t.emulate = Shape()
    return True


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
