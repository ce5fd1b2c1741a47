"""`kera check` on generated files: the stages in one process, then the command itself.

    python bench/check_bench.py                   # 20k lines
    python bench/check_bench.py --lines 200000 --repeat 1

In one process (best of ``--repeat``, CPU time): parse, lowering and checking (with the
graph built), ownership, and the whole ``analyze``, each also as a ratio to an anchor (a
fixed pure-Python loop timed in the same process), so runs on a loaded machine compare;
graph nodes built per second. Then ``python -m kera_core check -j 1 FILE`` as a
subprocess: its CPU time (user + system) from ``getrusage``, start-up and exit included;
and ``kera check -j 1`` against ``-j N`` (``--jobs``, default: the usable processors),
alternating, each with its wall time and its CPU time (its worker processes' included),
best of ``--repeat`` (``--check-only``: this comparison alone). Last, a
cold open (``--open-lines``, 5k by default): in a new process, with the modules imported,
the first ``analyze`` of the file (what a server does on opening it: every per-process memo
empty), with its stages, best of ``--repeat`` processes.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import generate  # noqa: E402
from kera_core.analysis import analyze  # noqa: E402
from kera_core.jobs import usable_cores  # noqa: E402
from kera_core.sema import lower_module  # noqa: E402
from kera_core.sema.borrow import check_ownership  # noqa: E402
from kera_core.syntax.parse import parse  # noqa: E402

clock = time.process_time


def anchor() -> float:
    t = clock()
    x = 0
    for i in range(2_000_000):
        x += i * i
    return clock() - t


def child_cpu(cmd: list[str]) -> float:
    return child_run(cmd)[1]


def child_run(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of running ``cmd`` (the CPU of the processes it forks and
    waits for included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=False, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def jobs_compare(path: str, jobs: int, repeat: int, a: float) -> None:
    """``kera check -j 1`` against ``-j jobs`` on ``path``, alternating: best wall and CPU."""
    cmd = [sys.executable, "-m", "kera_core", "check", path]
    best = {1: [9e9, 9e9], jobs: [9e9, 9e9]}
    for _ in range(repeat):
        for j in best:
            wall, cpu = child_run([*cmd[:-1], "-j", str(j), path])
            best[j] = [min(best[j][0], wall), min(best[j][1], cpu)]
    for j, (wall, cpu) in best.items():
        print(f"kera check -j {j:<3} wall {wall * 1000:7.0f} ms {wall / a:6.1f} anchors   "
              f"CPU {cpu * 1000:7.0f} ms {cpu / a:6.1f} anchors")  # fmt: skip
    w1, wn = best[1][0], best[jobs][0]
    print(
        f"  -j {jobs}: {w1 / wn:.2f}x the wall speed of -j 1, {best[jobs][1] / best[1][1]:.2f}x its CPU"
    )


_COLD_OPEN = """
import sys, time
sys.path.insert(0, {root!r})
from bench.corpus import generate
from kera_core.analysis import analyze
from kera_core.sema import lower_module
from kera_core.sema.borrow import check_ownership
from kera_core.syntax.parse import parse
from kera_core.stack import deep_recursion
text = generate({lines})
clock = time.process_time
if {stages}:
    with deep_recursion(quiet_gc=True):
        t0 = clock(); p = parse(text); t1 = clock(); m = lower_module(p); t2 = clock()
        check_ownership(m, p); t3 = clock()
    print(t1 - t0, t2 - t1, t3 - t2)
else:
    t0 = clock(); analyze(text); print(clock() - t0)
"""


def cold_open(lines: int, repeat: int) -> tuple[float, list[float]]:
    """The first ``analyze`` of a ``lines``-line file in a new process, and its stages
    (parse, lowering and checking, ownership) in another: CPU seconds, best of ``repeat``."""

    def run(stages: bool) -> list[float]:
        code = _COLD_OPEN.format(root=str(ROOT), lines=lines, stages=stages)
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        return [float(x) for x in out.stdout.split()]

    whole = min(run(False)[0] for _ in range(repeat))
    parts = [min(xs) for xs in zip(*(run(True) for _ in range(repeat)), strict=True)]
    return whole, parts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--open-lines", type=int, default=5_000, help="0: no cold open")
    ap.add_argument("--jobs", type=int, default=usable_cores(), help="-j N compared with -j 1")
    ap.add_argument("--check-only", action="store_true", help="only -j 1 against -j N")
    args = ap.parse_args()
    text = generate(args.lines)
    print(f"file: {text.count(chr(10))} lines, {len(text.encode()) / 1e3:.0f} kB")
    if args.check_only:
        a = min(anchor() for _ in range(3))
        print(f"anchor           {a * 1000:8.0f} ms")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bench.kera")
            Path(path).write_text(text)
            jobs_compare(path, args.jobs, args.repeat, a)
        return

    best: dict[str, float] = {}
    nodes = 0
    a = 9e9
    for _ in range(args.repeat):
        a = min(a, anchor())
        t0 = clock()
        p = parse(text)
        t1 = clock()
        m = lower_module(p)
        t2 = clock()
        check_ownership(m, p)
        t3 = clock()
        analyze(text)
        t4 = clock()
        nodes = sum(len(lf.nodes) for lf in m.functions.values())
        for k, v in (("parse", t1 - t0), ("lower + check", t2 - t1), ("ownership", t3 - t2),
                     ("analyze", t4 - t3)):  # fmt: skip
            best[k] = min(best.get(k, 9e9), v)
    print(f"anchor           {a * 1000:8.0f} ms")
    for k, v in best.items():
        print(f"{k:16} {v * 1000:8.0f} ms   {v / a:6.1f} anchors")
    print(f"graph nodes built: {nodes} ({nodes / best['lower + check']:,.0f} nodes/s)")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.kera")
        Path(path).write_text(text)
        cmd = [sys.executable, "-m", "kera_core", "check", "-j", "1", path]
        cpu = min(child_cpu(cmd) for _ in range(args.repeat))
        tiny = min(child_cpu([*cmd[:-1], str(ROOT / "examples" / "saxpy.kera")]) for _ in range(3))
        print(f"kera check (CPU) {cpu * 1000:8.0f} ms   {cpu / a:6.1f} anchors"
              f"   (start-up on a small file: {tiny * 1000:.0f} ms)")  # fmt: skip
        jobs_compare(path, args.jobs, args.repeat, a)
    if args.open_lines:
        whole, (p, lw, own) = cold_open(args.open_lines, args.repeat)
        print(f"cold open {args.open_lines} lines {whole * 1000:6.0f} ms   {whole / a:6.1f} anchors"
              f"   (parse {p * 1000:.0f}, lowering {lw * 1000:.0f}, ownership {own * 1000:.0f} ms)")  # fmt: skip


if __name__ == "__main__":
    main()
