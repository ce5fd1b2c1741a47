"""The GPU check (``scripts/gpu-check.sh``): every example function and N generated programs
run on the GPU through the ptx target, their outcomes (result digest over the raw bytes of
every output, or the checked error's code) compared with the reference interpreter's.

```
python -m kera_core.backends.ptx.check [--programs 1000] [--dry-run] [--jobs J]
python -m kera_core.backends.ptx.check --emulate [--blocks B --threads T] [--programs N]
```

Steps: draw the programs (tests/programs.py and tests/imperative_programs.py, derandomised,
so every machine checks the same ones), lower every function to PTX, assemble all of them
with ``ptxas`` for the GPU's architecture in parallel (``--dry-run``: for sm_80 and sm_90),
compute the interpreter's outcome of every case, then run each case on the GPU. With
``--dry-run`` everything but the launch happens: inputs are checked, flattened and laid out
in the kernel's cells, so a machine without a GPU tests all of it but the device. With
``--emulate`` each case runs on the PTX emulator (:mod:`kera_core.backends.ptx.emulate`,
``B`` CTAs of ``T`` threads) instead of a GPU, and nothing is assembled. Exit 0
when every case agrees, 1 when one differs (each difference is printed), 2 when the GPU or
a tool is missing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
STEPS = 20_000
SIZES = (0, 1, 3, 17)


def outcome(run_it) -> str:
    from kera_core.interp import InterpError

    try:
        return "ok " + run_it().digest()
    except InterpError as e:
        if e.code == "R0005" and "cannot run here" in str(getattr(e, "message", e)):
            raise
        return "error " + e.code


def draw_programs(n: int) -> list[str]:
    """``n`` generated sources (half expression-style, half imperative), the same on every
    machine (hypothesis derandomised)."""
    sys.path.insert(0, str(ROOT))
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests import imperative_programs, programs

    out: list[tuple[str, int, int]] = []
    common = dict(
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )

    @settings(max_examples=max(n - n // 2, 0), **common)
    @given(p=programs.program(), seed=st.integers(0, 2**32 - 1), size=st.sampled_from(SIZES))
    def expr(p, seed, size):
        out.append((programs.render(p), seed, size))

    @settings(max_examples=max(n // 2, 0), **common)
    @given(
        p=imperative_programs.imperative_program(),
        seed=st.integers(0, 2**32 - 1),
        size=st.sampled_from((0, 1, 2, 5, 17)),
    )
    def imper(p, seed, size):
        out.append((imperative_programs.render(p), seed, size))

    if n - n // 2:
        expr()
    if n // 2:
        imper()
    return out[:n]


class Case:
    __slots__ = (
        "label",
        "src",
        "graph",
        "fn",
        "size",
        "seed",
        "adversarial",
        "want",
        "text",
        "art",
        "program",
    )

    def __init__(self, label, src, graph, fn, size, seed, adversarial):
        self.label, self.src, self.graph, self.fn = label, src, graph, fn
        self.size, self.seed, self.adversarial = size, seed, adversarial
        self.want = self.text = self.art = None
        self.program = None  # a generated program's source (printed when it differs)


def cases(n_programs: int, log) -> tuple[list[Case], list[str]]:
    from kera_core.analysis import analyze
    from kera_core.opt import optimize

    out: list[Case] = []
    skipped: list[str] = []
    for path in sorted((ROOT / "examples").glob("*.kera")):
        m = analyze(path.read_text()).module
        for f in m.graph.exported():
            for size in SIZES:
                for adv in (False, True):
                    out.append(Case(f"{path.name}:{f.name}", m, m.graph, f.name, size, 1, adv))
    t0 = time.perf_counter()
    srcs = draw_programs(n_programs)
    log(f"drew {len(srcs)} generated programs in {time.perf_counter() - t0:.1f} s")
    for k, (text, seed, size) in enumerate(srcs):
        a = analyze(text)
        if a.has_errors:
            skipped.append(f"program {k}: does not check (a generator bug)")
            continue
        m = a.module
        g = optimize(m.graph).graph
        first = len(out)
        for f in m.graph.exported():
            adv = bool(k % 2)
            out.append(Case(f"program {k}:{f.name}", m, m.graph, f.name, size, seed, adv))
            if f.name in g.functions:
                out.append(Case(f"program {k}:{f.name} (opt)", g, g, f.name, size, seed, adv))
        for c in out[first:]:
            c.program = text
    return out, skipped


def inputs_of(c: Case):
    from kera_core.interp.api import entry_signature
    from kera_core.interp.gen import InputGenerator

    sig = entry_signature(c.src, c.fn)
    dims = {i: c.size for i in range(len(sig.dim_names))}
    gen = InputGenerator(c.seed + c.size, adversarial=c.adversarial)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    return inputs, {sig.dim_names[i]: n for i, n in dims.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="gpu-check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--programs", type=int, default=1000, help="generated programs (1000)")
    ap.add_argument("--dry-run", action="store_true", help="everything but the GPU launch")
    ap.add_argument("--emulate", action="store_true", help="run on the PTX emulator, no GPU")
    ap.add_argument("--blocks", type=int, default=3, help="emulated CTAs of a grid kernel (3)")
    ap.add_argument("--threads", type=int, default=5, help="emulated threads per CTA (5)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4, help="ptxas processes")
    ap.add_argument("--max-failures", type=int, default=20, help="differences to print")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {msg}", flush=True)

    start = time.perf_counter()
    from kera_core.backends.ptx import compile as P
    from kera_core.backends.ptx import runtime as R
    from kera_core.backends.ptx.emulate import Shape
    from kera_core.interp.api import run_function as reference

    shape = Shape(args.blocks, args.threads) if args.emulate else None
    if P.find_ptxas() is None and shape is None:
        print("gpu-check: ptxas not found: pip install nvidia-cuda-nvcc-cu12", file=sys.stderr)
        return 2
    dev = None
    if shape is not None:
        archs = []
    elif not args.dry_run:
        why = R.why_no_gpu()
        if why is not None:
            print(f"gpu-check: {why} (use --dry-run on a machine without one)", file=sys.stderr)
            return 2
        dev = R.Device.get(R.DEFAULT_MEMORY)
        archs = [dev.arch()]
        log(f"GPU 0 is {archs[0]}")
    else:
        archs = list(P.ARCHS)
    all_cases, skipped = cases(args.programs, log)
    log(f"{len(all_cases)} cases")
    unsupported = 0
    texts: dict[str, str] = {}
    runnable: list[Case] = []
    for c in all_cases:
        why = P.unsupported(c.graph, c.fn)
        if why:
            unsupported += 1
            skipped.append(f"{c.label}: {why[0]}")
            continue
        c.text = P.compiled(c.graph, c.fn).selected.text
        c.art = P.artifact_text(c.graph, c.fn)
        texts[c.text] = c.art
        runnable.append(c)
    grids = sum(1 for t in texts if R.grid_of(texts[t]))
    log(
        f"lowered: {len(texts)} distinct kernels ({grids} launched as a grid), "
        f"{unsupported} cases the target refuses"
    )

    def assemble(item):
        text, arch = item
        return text, arch, P.assemble(text, arch)[1]

    bad_asm = 0
    images: dict[str, bytes] = {}
    with ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        for text, arch, cubin in pool.map(_safe(assemble), [(t, a) for t in texts for a in archs]):
            if cubin is None:
                bad_asm += 1
                print(f"ptxas failed for {arch}:\n{text}", file=sys.stderr)
            else:
                images[text] = cubin
    if archs:
        log(f"assembled {len(texts)} kernels for {', '.join(archs)} ({bad_asm} failures)")

    failures = bad_asm
    agree = 0
    seen_ok = seen_err = 0
    for c in runnable:
        inputs, named = inputs_of(c)
        want = outcome(lambda: reference(c.src, c.fn, inputs, named, max_steps=STEPS))  # noqa: B023
        art_text = c.art
        if dev is not None and c.text in images:
            dev.images[R.ptx_key(art_text)] = images[c.text]
        entry, threads, _ = P.read(art_text.encode(), c.graph)
        if args.dry_run and shape is None:
            R.run(art_text, threads, c.src, c.fn, inputs, named, max_steps=STEPS, dry_run=True)
            got = want
        else:
            run = partial(R.run, art_text, threads, c.src, c.fn, inputs, named, emulate=shape)
            got = outcome(partial(run, max_steps=STEPS))
        if got == want:
            agree += 1
            seen_ok += want.startswith("ok")
            seen_err += want.startswith("error")
        else:
            failures += 1
            if failures <= args.max_failures:
                print(
                    f"DIFFERS {c.label} size={c.size} seed={c.seed} adversarial={c.adversarial}: "
                    f"ptx {got} / interp {want}",
                    flush=True,
                )
                if c.program is not None:
                    print(c.program, flush=True)
    mode = (
        f"emulated ({shape.blocks} CTAs of {shape.threads} threads)"
        if shape is not None
        else "dry run (no launch)"
        if args.dry_run
        else "on the GPU"
    )
    log(
        f"{mode}: {agree}/{len(runnable)} cases agree with the interpreter "
        f"({seen_ok} results, {seen_err} checked errors); {failures} failure(s); "
        f"{len(skipped)} skipped"
    )
    for s in skipped[:10]:
        print(f"  skipped: {s}")
    if len(skipped) > 10:
        print(f"  ... and {len(skipped) - 10} more skipped")
    return 1 if failures else 0


def _safe(fn):
    def go(item):
        try:
            return fn(item)
        except Exception as e:  # noqa: BLE001 - reported per kernel
            print(f"gpu-check: {e}", file=sys.stderr)
            return item[0], item[1], None

    return go


if __name__ == "__main__":
    sys.exit(main())
