"""All 2^32 binary32 inputs of a unary elementary function: are the results correctly
rounded? (docs/semantics.md §6.7 for `exp`, `log`, `tanh`, `sigmoid` — the step lists of
kera_core/interp/expolog32.py —, §6.9 for `exp2`, `log2`, `expm1`, `log1p`, `sin`, `cos`,
`tan`, `erf`, `erfc` — kera_core/interp/elementary.py)

Each chunk of bit patterns is run through the step list — compiled by the x86-64 target
(the loop layer's code for it, bit-identical to the interpreter: tests/test_cr32.py,
tests/test_elementary.py) when this machine runs it, else the interpreter — and compared
with the correctly rounded value by tests/elementary_ref.py: numpy's (for `erf`, `erfc`:
the C library's, through `math`) binary64 function rounded to binary32, and mpmath at 256
bits for every input where that could differ (within 16 binary64 ulps of a binary32
rounding boundary) or where the results disagree.

    nice -n 19 .venv/bin/python scripts/cr32_sweep.py                # all 13, all inputs
    .venv/bin/python scripts/cr32_sweep.py exp --chunks 16           # a quick partial run
    .venv/bin/python scripts/cr32_sweep.py log --engine interp
    .venv/bin/python scripts/cr32_sweep.py tanh --lo 0x3f000000 --hi 0x41200000  # a range
    .venv/bin/python scripts/cr32_sweep.py sin --log sweeps/sin.jsonl  # resumable
    .venv/bin/python scripts/cr32_sweep.py --summary sweeps/*.jsonl    # what the logs cover

One process, chunks of 2^22 inputs. Per chunk on one idle core (x86-64 engine, step list +
check): `exp2`, `log2`, `log1p` ~0.6–1 s, `expm1` ~1.5 s, `erf`, `erfc` ~6 s, `sin`, `cos`,
`tan` ~8 s (their argument reduction) — ~10 min to ~2.3 h per function, less with
``--stride-fixed``. ``--log FILE`` appends one JSON line per chunk (its range, inputs, step
list runs, inputs decided by mpmath, failures) and skips the chunks FILE already holds, so
an interrupted run resumes where it stopped; ``--summary`` merges such logs into the ranges
they cover.

``--stride-fixed K``: where the step list's result is fixed whatever the input (``_fixed``
below — by a clamp of the argument: exp's x > 89 and x < −104, tanh's |x| > 10, sigmoid's
|x| > 120, each computing exactly what it does at the clamp; or by a final select of a
constant: exp2's x ≥ 128 (+inf) and x ≤ −150 (+0), expm1's x > 709.78 (+inf) and x < −60
(−1), erf's |x| ≥ 27.3 (±1), erfc's x ≥ 27.3 (+0) and x ≤ −27.3 (2), cos's |x| < 2^−27 (1);
log's, log2's x < 0 and log1p's x < −1 select NaN; NaN, and the trigonometric functions'
±inf, everywhere), the step list runs only at every K-th input, the ranges' ends and
wherever the fixed result changes, and must give the fixed result there. The fixed result
is checked against the correctly rounded one at every input of a chunk that is partly
fixed, and at the sampled inputs of a chunk that is wholly fixed — there the rest follows
from the sample: a chunk is an interval of one sign, the functions are monotone on it (cos
on each side of 0) and the fixed results are the limits (inf, +0, −1, ±1, 2, 1, the value
at the clamp) or NaN by definition, so a correctly rounded value equal at the chunk's ends
is that value throughout. K = 1, the default, runs and checks everything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

sys.path.insert(0, ".")

from kera_core.interp import elementary, expolog32  # noqa: E402
from tests.elementary_ref import check_f32  # noqa: E402

CHUNK = 1 << 22
E = expolog32
L = elementary
FUNCTIONS = (*expolog32.UNARY, *elementary.UNARY)


def _step_list(name: str, x: np.ndarray) -> np.ndarray:
    """The interpreter's step list of ``name`` on binary32 x."""
    return (expolog32 if name in expolog32.UNARY else elementary).unary(name, x)


def _clamped(name: str, x: np.ndarray):
    """(mask, value) for §6.2–§6.5's clamps: every input beyond a clamp computes exactly what
    the clamp value does."""
    a = np.abs(x.astype(np.float64))
    if name == "exp":  # clamped to [−104, 89]: what −104 and 89 give
        over, under = x > E.EXP_OVER, x < E.EXP_UNDER
        lo, hi = expolog32.unary(name, np.float32([E.EXP_UNDER, E.EXP_OVER]))
        return over | under, np.where(over, hi, lo)
    # tanh, sigmoid: |x| clamped
    c = E.TANH_ONE if name == "tanh" else E.SIGMOID_CLAMP
    lo, hi = expolog32.unary(name, np.float32([-c, c]))
    return a > c, np.where(x < 0, lo, hi)


def _selected(name: str, x: np.ndarray):
    """[(mask, value)]: the ranges where a final select of the step list puts a constant
    (NaN aside)."""
    X = x.astype(np.float64)
    a = np.abs(X)
    if name == "exp2":
        return [(X >= 128.0, np.inf), (X <= -150.0, 0.0)]
    if name in ("log", "log2"):
        return [(X < 0.0, np.nan)]
    if name == "log1p":
        return [(X < -1.0, np.nan)]
    if name == "expm1":
        return [(X > L.EXPM1_OVER, np.inf), (X < L.EXPM1_UNDER, -1.0)]
    if name == "erf":
        return [(X >= L.ERFC_ZERO, 1.0), (X <= -L.ERFC_ZERO, -1.0)]
    if name == "erfc":
        return [(X >= L.ERFC_ZERO, 0.0), (X <= -L.ERFC_ZERO, 2.0)]
    if name == "cos":
        return [(a < L.TRIG_TINY, 1.0), (np.isinf(X), np.nan)]
    if name in ("sin", "tan"):
        return [(np.isinf(X), np.nan)]
    return []


def _fixed(name: str, x: np.ndarray):
    """(mask, value): where the step list's result is fixed whatever the input, and that
    result."""
    with np.errstate(invalid="ignore"):
        nan = np.isnan(x)
        mask, value = nan.copy(), np.full(x.shape, np.float32(np.nan))
        parts = [_clamped(name, x)] if name in ("exp", "tanh", "sigmoid") else []
        parts += [(m, np.float32(v)) for m, v in _selected(name, x)]
        for m, v in parts:
            m = m & ~nan
            mask |= m
            value = np.where(m, v, value)
        return mask, value.astype(np.float32)


def _x86_engine(name: str):
    """f(x) -> results, from the x86-64 target at the best level this CPU runs; None when
    this machine does not run it."""
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    from kera_core.analysis import analyze
    from kera_core.backends.x86_64 import compile as X
    from kera_core.backends.x86_64.runtime import Loaded, run
    from kera_core.native import cpu

    levels = [lv for lv in X.ISAS if X.runs(lv, cpu.detect())]
    if not levels:
        return None
    m = analyze(f"pub fn f[N](x: &f32[N]) -> f32[N] {{ {name}(x) }}\n").module
    data, _ = X.build(m.graph, "f", X.isa_for(levels[-1]))
    loaded = Loaded(X.read(data, m.graph)[1])

    def f(x):
        return np.asarray(run(loaded, m, "f", {"x": x}).outputs[0].value)

    return f


def _chunk(name: str, f, start: int, end: int, stride: int) -> dict:
    """One chunk [start, end) of bit patterns: run, check, count."""
    x = np.arange(start, end, dtype=np.uint64).astype(np.uint32).view(np.float32)
    fixed = None
    if stride > 1:
        fixed, value = _fixed(name, x)
        # the step list at every input it computes, every stride-th fixed one, the ends of
        # the fixed ranges and wherever the fixed result changes
        run = ~fixed
        run[::stride] = True
        vb = value.view(np.uint32)
        edges = np.flatnonzero(np.diff(fixed.astype(np.int8)) | (vb[1:] != vb[:-1]))
        run[edges] = run[edges + 1] = True
        run[[0, -1]] = True
        got = value.copy()
        got[run] = f(x[run])
        rf = run & fixed
        same = got[rf].view(np.uint32) == value[rf].view(np.uint32)
        if not (same | (np.isnan(got[rf]) & np.isnan(value[rf]))).all():
            raise AssertionError(f"{name}: a fixed range is not what the step list gives")
        ran = int(run.sum())
    else:
        got = f(x)
        ran = x.size
    if fixed is not None and fixed.all():  # the whole chunk fixed: the sampled inputs only
        fl, d = check_f32(name, x[run], got=got[run])
    else:
        fl, d = check_f32(name, x, got=got)
    return {"lo": start, "hi": end, "inputs": x.size, "runs": ran, "decided": d, "failures": fl}


def _done(log: str | None, name: str) -> dict[int, dict]:
    """The chunks a log already holds for ``name``, by their first bit pattern."""
    if not log:
        return {}
    try:
        with open(log) as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return {}
    return {r["lo"]: r for r in rows if r["function"] == name}


def sweep(
    name: str,
    chunks: int,
    engine: str,
    stride: int = 1,
    lo: int = 0,
    hi: int = 1 << 32,
    log: str | None = None,
) -> dict:
    f = _x86_engine(name) if engine == "x86_64" else None
    used = "x86_64" if f is not None else "interp"
    if f is None:

        def f(x):
            return _step_list(name, x)

    t0 = time.time()
    done = _done(log, name)
    failures, decided, n, ran, resumed = [], 0, 0, 0, 0
    step = (hi - lo) // chunks if chunks < (hi - lo) // CHUNK else CHUNK
    for i, start in enumerate(range(lo, hi, step)):
        end = min(start + CHUNK, hi)
        r = done.get(start)
        if r is not None and r["hi"] == end:
            resumed += 1
        else:
            c0 = time.time()
            r = {"function": name, **_chunk(name, f, start, end, stride)}
            r["seconds"] = round(time.time() - c0, 2)
            if log:
                with open(log, "a") as fh:
                    fh.write(json.dumps(r) + "\n")
        failures += [tuple(v) for v in r["failures"]]
        decided += r["decided"]
        n += r["inputs"]
        ran += r["runs"]
        if i % 64 == 63:
            print(f"{name} {start:#010x} inputs {n} decided {decided} failures {len(failures)}")
            sys.stdout.flush()
    return {
        "function": name,
        "engine": used,
        "bit_patterns": f"[{lo:#010x}, {hi:#010x})",
        "inputs": n,
        "step_list_runs": ran,
        "decided_by_mpmath": decided,
        "failures": len(failures),
        "first_failures": failures[:20],
        "chunks_from_log": resumed,
        "seconds": round(time.time() - t0, 1),
    }


def summary(logs: list[str]) -> list[dict]:
    """Per function: the maximal ranges of bit patterns the logs cover, with their totals."""
    rows: dict[str, dict[int, dict]] = {}
    for path in logs:
        with open(path) as fh:
            for k, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                    rows.setdefault(r["function"], {})[r["lo"]] = r
                except (ValueError, KeyError, TypeError) as e:
                    raise SystemExit(f"{path}:{k}: not a chunk line of --log ({e!r})") from None
    out = []
    for name, by_lo in rows.items():
        ranges: list[dict] = []
        for r in sorted(by_lo.values(), key=lambda r: r["lo"]):
            if ranges and ranges[-1]["hi"] == r["lo"]:
                g = ranges[-1]
            else:
                g = {"lo": r["lo"], "hi": r["lo"], "inputs": 0, "runs": 0, "decided": 0}
                g.update(failures=[], seconds=0.0)
                ranges.append(g)
            g["hi"] = r["hi"]
            for k in ("inputs", "runs", "decided", "seconds"):
                g[k] += r[k]
            g["failures"] += r["failures"]
        for g in ranges:
            lo_x, hi_x = (
                float(v)
                for v in np.array([g["lo"], g["hi"] - 1], np.uint64)
                .astype(np.uint32)
                .view(np.float32)
            )
            g["range"] = f"[{g['lo']:#010x}, {g['hi']:#010x}): {lo_x!r} to {hi_x!r}"
            g["seconds"] = round(g["seconds"])
            out.append({"function": name, **g})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("functions", nargs="*", default=list(FUNCTIONS))
    ap.add_argument("--chunks", type=int, default=1 << 10, help="chunks of 2^22 (1024: all)")
    ap.add_argument("--engine", choices=("x86_64", "interp"), default="x86_64")
    ap.add_argument("--stride-fixed", type=int, default=1, help="see the module docstring")
    ap.add_argument("--lo", type=lambda v: int(v, 0), default=0, help="first bit pattern")
    ap.add_argument("--hi", type=lambda v: int(v, 0), default=1 << 32, help="end (exclusive)")
    ap.add_argument("--log", metavar="FILE", help="one JSON line per chunk; resume from it")
    ap.add_argument("--summary", nargs="+", metavar="LOG", help="the ranges logs cover")
    args = ap.parse_args()
    if args.summary:
        for g in summary(args.summary):
            print(json.dumps(g))
        return
    for name in args.functions:
        if name not in FUNCTIONS:
            ap.error(f"unknown function {name!r} (one of {', '.join(FUNCTIONS)})")
        r = sweep(name, args.chunks, args.engine, args.stride_fixed, args.lo, args.hi, args.log)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
