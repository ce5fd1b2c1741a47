"""The same-bits check: every exported function run on seeded inputs on the reference
interpreter and on each target that runs here, and their result digests compared.

What runs is exactly `kera run FILE --entry F --seed 1 --target T` (documented inputs
of seed :data:`SEED`, every dimension :data:`~kera_core.interp.gen.DEFAULT_DIM`), so
every digest in the table can be reproduced on the command line. The cost is bounded:

* the interpreter runs first with a step budget (:data:`MAX_STEPS` loop iterations); a
  function that needs more is reported *unchecked* and no target runs it;
* the targets that count loop iterations get the same budget; the others stop on their
  own bound (wasm: fuel);
* only the targets named in the setting run (:data:`DEFAULT_TARGETS`: the fast ones);
  a target that cannot run on this machine is reported *not here*, one that cannot
  compile the function *refused* — neither is a difference;
* :func:`check_text` runs the whole check in a child process (``python -m
  kera_core.ide.same_bits``), so a run never holds the language server's interpreter
  lock, a crash of a backend's machine code kills only the child, and a run that takes
  longer than ``time_limit`` seconds is stopped (*timeout*) and the check goes on with
  the next target.

Results depend only on the function's hash (a call names its callee by hash), so a
caller can key them by it: a result is never stale for the function it describes.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

#: The reference; always run first, whatever the setting says.
INTERP = "interp"
#: `kera.sameBits.targets` by default: the targets that are cheap to run on every save
#: (verilog needs a simulator run of several seconds per function; ptx a GPU).
DEFAULT_TARGETS: tuple[str, ...] = ("interp", "wasm", "x86_64", "arm64")
SEED = 1
MAX_STEPS = 200_000
TIME_LIMIT_S = 20.0

#: Outcome kinds. ``digest`` and ``error`` are results and are compared; the others say
#: why there is no result.
COMPARED = ("digest", "error")


@dataclass
class Outcome:
    target: str
    kind: (
        str  # digest | error | refused | not-here | unknown | timeout | crashed | failed | skipped
    )
    value: str = ""  # the digest (64 hex) or the error code (R0001)
    detail: str = ""  # why (refusal reasons, the error's message, what failed)
    seconds: float = 0.0

    @property
    def compared(self) -> bool:
        return self.kind in COMPARED

    def shown(self) -> str:
        if self.kind == "digest":
            return f"sha3-256:{self.value}"
        if self.kind == "error":
            return f"error {self.value}"
        return self.kind

    def short(self) -> str:
        return f"{self.value[:8]}…" if self.kind == "digest" else self.shown()


@dataclass
class FunctionReport:
    function: str
    hash: str  # the function's hash, hex
    outcomes: list[Outcome] = field(default_factory=list)
    note: str = ""  # why it was not checked (over the step budget, …)
    seed: int = SEED
    dim: int = 16
    max_steps: int = MAX_STEPS

    def outcome(self, target: str) -> Outcome | None:
        return next((o for o in self.outcomes if o.target == target), None)

    @property
    def reference(self) -> Outcome | None:
        ref = self.outcome(INTERP)
        return ref if ref is not None and ref.compared and not self.note else None

    @property
    def same(self) -> list[str]:
        ref = self.reference
        if ref is None:
            return []
        return [o.target for o in self.outcomes if o.compared and o.shown() == ref.shown()]

    @property
    def differing(self) -> list[str]:
        ref = self.reference
        if ref is None:
            return []
        return [o.target for o in self.outcomes if o.compared and o.shown() != ref.shown()]

    @property
    def verdict(self) -> str:
        """``same`` (every target that ran agrees), ``differs``, or ``unchecked``."""
        if self.reference is None:
            return "unchecked"
        return "differs" if self.differing else "same"

    def title(self) -> str:
        """The code lens: ``same bits on interp, wasm, x86_64, arm64``, ``differs on x86_64
        (interp 3f9a1c2d…, x86_64 77aa01bc…)`` or why it was not checked."""
        v = self.verdict
        if v == "unchecked":
            ref = self.outcome(INTERP)
            why = self.note or (ref.detail if ref is not None else "") or "no reference result"
            return f"same bits: not checked ({why})"
        if v == "differs":
            ref = self.reference
            assert ref is not None
            bad = self.differing
            shown = ", ".join(f"{t} {self.outcome(t).short()}" for t in bad[:2])  # type: ignore[union-attr]
            return f"differs on {', '.join(bad)} (interp {ref.short()}, {shown})"
        same = self.same
        extra = [o for o in self.outcomes if not o.compared and o.kind != "not-here"]
        text = f"same bits on {', '.join(same)}"
        if len(same) == 1:
            text = "same bits: only interp ran"
        if extra:
            text += " · " + ", ".join(f"{o.target} {o.kind}" for o in extra)
        return text

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FunctionReport:
        outs = [Outcome(**o) for o in d.get("outcomes", [])]
        keys = ("function", "hash", "note", "seed", "dim", "max_steps")
        return cls(outcomes=outs, **{k: d[k] for k in keys if k in d})

    def table(self, path: str = "FILE") -> str:
        """The per-target digest table (the document ``kera.showSameBits`` opens)."""
        lines = [
            f"same bits of `{self.function}` (fn {self.hash[:16]}…)",
            f"inputs: seed {self.seed}, every dimension {self.dim}; "
            f"step budget {self.max_steps} loop iterations",
            f"verdict: {self.title()}",
            "",
            f"{'target':<10} {'result':<76} {'ms':>7}",
        ]
        ref = self.reference
        for o in self.outcomes:
            mark = ""
            if ref is not None and o.compared and o.target != INTERP:
                mark = "  same" if o.shown() == ref.shown() else "  DIFFERS"
            ms = f"{o.seconds * 1000:.0f}" if o.seconds else ""
            lines.append(f"{o.target:<10} {o.shown() + mark:<76} {ms:>7}")
            if o.detail and not o.compared or o.kind == "error":
                lines.append(f"{'':<10}   {o.detail}")
        lines += [
            "",
            f"reproduce: kera run {path} --entry {self.function} --seed {self.seed} --target all",
        ]
        if self.differing:
            lines.append(
                f"           kera run {path} --entry {self.function} --seed {self.seed} "
                f"--target {self.differing[0]}"
            )
        return "\n".join(lines) + "\n"


# --- running, in this process ----------------------------------------------------------------


def _target(name: str):
    """``(target, why not)``: the registry's target, or why it cannot run here."""
    from kera_core import targets as registry

    try:
        t = registry.get(name)
    except ImportError as e:
        return None, "not-here", f"cannot load it here: {e}"
    if t is None or not hasattr(t, "run"):
        known = ", ".join([INTERP, *registry.runnable_names()])
        return None, "unknown", f"not a target that runs programs (targets: {known})"
    check = getattr(t, "cannot_run_here", None)
    why = check() if check is not None else None
    if why:
        return None, "not-here", why
    return t, "", ""


def _inputs(module, fn: str, seed: int, dim: int):
    from kera_core.interp.api import entry_signature
    from kera_core.interp.gen import InputGenerator

    sig = entry_signature(module, fn)
    dims = {i: dim for i in range(len(sig.dim_names))}
    gen = InputGenerator(seed)
    inputs = {pname: gen.value(t, dims) for pname, t in sig.value_params}
    return inputs, {sig.dim_names[i]: n for i, n in dims.items()}


def run_one(
    module, fn: str, target: str | Any, *, seed: int = SEED, dim: int | None = None,
    max_steps: int = MAX_STEPS,
) -> Outcome:  # fmt: skip
    """One run of ``fn`` on ``target`` (a name, or a target object), as an :class:`Outcome`."""
    from kera_core import targets as registry
    from kera_core.interp import InputError, InterpError, run_function
    from kera_core.interp.gen import DEFAULT_DIM

    dim = DEFAULT_DIM if dim is None else dim
    name = target if isinstance(target, str) else target.name
    t = None
    if name != INTERP:
        if isinstance(target, str):
            t, kind, why = _target(target)
            if t is None:
                return Outcome(name, kind, detail=why)
        else:
            t = target
        try:
            why_not = t.unsupported(module.graph, fn)
        except Exception as e:  # a target's bug: reported, never a difference
            return Outcome(name, "failed", detail=f"unsupported() raised {type(e).__name__}: {e}")
        if why_not:
            return Outcome(name, "refused", detail="; ".join(why_not))
    inputs, dims = _inputs(module, fn, seed, dim)
    start = time.perf_counter()
    try:
        if t is None:
            r = run_function(module, fn, inputs, dims, max_steps=max_steps)
        else:
            steps = max_steps if getattr(t, "supports_max_steps", False) else None
            r = registry.run_module(t, module, fn, inputs, dims, max_steps=steps)
    except InputError as e:
        return Outcome(name, "failed", detail=f"{e.code}: {e.message}")
    except InterpError as e:
        return Outcome(name, "error", e.code, e.message, time.perf_counter() - start)
    except Exception as e:  # a backend that fails to build or run: reported, not compared
        return Outcome(name, "failed", detail=f"{type(e).__name__}: {e}")
    return Outcome(name, "digest", r.digest(), "", time.perf_counter() - start)


def over_budget(ref: Outcome, max_steps: int) -> str:
    """Why the interpreter's outcome leaves the function unchecked ("" if it does not)."""
    if ref.kind == "error" and ref.value == "R0007":
        return f"more than {max_steps} loop iterations"
    if not ref.compared:
        return f"the interpreter could not run it: {ref.detail or ref.kind}"
    return ""


def check_function(
    module,
    fn: str,
    targets: Iterable[str | Any] = DEFAULT_TARGETS,
    *,
    seed: int = SEED,
    dim: int | None = None,
    max_steps: int = MAX_STEPS,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> FunctionReport:
    """Run ``fn`` on the interpreter, then on each of ``targets`` (names or target
    objects; ``interp`` is always first), in this process."""
    from kera_core.interp.gen import DEFAULT_DIM

    dim = DEFAULT_DIM if dim is None else dim
    f = module.graph.functions[fn]
    rep = FunctionReport(fn, f.hash.hex(), seed=seed, dim=dim, max_steps=max_steps)
    ref = run_one(module, fn, INTERP, seed=seed, dim=dim, max_steps=max_steps)
    rep.outcomes.append(ref)
    if on_outcome:
        on_outcome(ref)
    rep.note = over_budget(ref, max_steps)
    if rep.note:
        return rep
    for t in targets:
        name = t if isinstance(t, str) else t.name
        if name == INTERP or rep.outcome(name) is not None:
            continue
        o = run_one(module, fn, t, seed=seed, dim=dim, max_steps=max_steps)
        rep.outcomes.append(o)
        if on_outcome:
            on_outcome(o)
    return rep


def exported(module) -> list[tuple[str, str]]:
    """``(name, hash hex)`` of every exported function of an analysed module."""
    if module is None:
        return []
    return [(f.name, f.hash.hex()) for f in module.graph.exported()]


def check_module(
    module, targets: Iterable[str | Any] = DEFAULT_TARGETS, **kw
) -> list[FunctionReport]:
    """:func:`check_function` for every exported function, in this process."""
    targets = list(targets)
    return [check_function(module, name, targets, **kw) for name, _ in exported(module)]


# --- running in a child process ----------------------------------------------------------------


@dataclass
class Options:
    targets: tuple[str, ...] = DEFAULT_TARGETS
    seed: int = SEED
    dim: int | None = None
    max_steps: int = MAX_STEPS
    time_limit: float = TIME_LIMIT_S  # seconds per run

    def key(self) -> tuple:
        return (self.targets, self.seed, self.dim, self.max_steps)


def _declared_extras() -> list[list[Any]]:
    """Targets declared at run time (:func:`kera_core.targets.declare`), for the child."""
    from kera_core import targets as registry

    builtin = {d.name for d in registry.BUILTIN}
    return [
        [d.name, d.module, d.suffix, d.runs] for d in registry.declared() if d.name not in builtin
    ]


async def check_text(
    text: str,
    functions: dict[str, str],
    options: Options | None = None,
    on_report: Callable[[FunctionReport], None] | None = None,
) -> list[FunctionReport]:
    """Check ``functions`` (name → hash hex, as the caller's analysis of ``text`` has them)
    in child processes; ``on_report`` is called as each function is done.

    A function whose hash in the child differs from the caller's is not reported. A run
    over ``time_limit`` seconds is killed (*timeout*), a run that kills the child
    *crashed*; a new child carries on with the rest. Cancelling the awaiting task kills
    the child at once.
    """
    opts = options or Options()
    reports: dict[str, FunctionReport] = {}
    finished: set[str] = set()
    done: list[FunctionReport] = []
    todo = [name for name in functions]
    while todo:
        # what a previous child already ran (before a run timed out or crashed) is not rerun
        skip = [[n, o.target] for n, rep in reports.items() for o in rep.outcomes]
        request = {
            "text": text,
            "functions": {name: functions[name] for name in todo},
            "targets": list(opts.targets),
            "seed": opts.seed,
            "dim": opts.dim,
            "maxSteps": opts.max_steps,
            "skip": skip,
            "declare": _declared_extras(),
        }
        current = await _child(request, opts.time_limit, reports, finished, functions)
        if current is not None:
            name, target, kind, detail = current
            rep = reports.setdefault(name, FunctionReport(name, functions[name]))
            rep.outcomes.append(Outcome(target, kind, detail=detail))
            if target == INTERP:  # no reference: nothing to compare the others with
                rep.note = f"the interpreter's run {kind}"
                finished.add(name)
        for name in list(todo):
            if name in finished:
                todo.remove(name)
                done.append(reports[name])
                if on_report:
                    on_report(reports[name])
        if current is None:  # the child ran everything it could: a function left over
            break  # has another hash there than here (never reported)
    return done


async def _child(
    request, time_limit, reports, finished, functions
) -> tuple[str, str, str, str] | None:
    """One child process; fills ``reports``. Returns the run that timed out or crashed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kera_core.ide.same_bits",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        limit=16 * 1024 * 1024,
    )  # fmt: skip
    err_task = asyncio.ensure_future(proc.stderr.read())  # type: ignore[union-attr]
    running: tuple[str, str] | None = None
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request).encode())
        proc.stdin.close()
        while True:
            # between two runs (start-up, the analysis): more time than for one run
            wait = time_limit if running is not None else time_limit + 30.0
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), wait)
            except TimeoutError:
                if running is None:
                    raise RuntimeError("the same-bits child process did not answer") from None
                name, target = running
                return name, target, "timeout", f"stopped after {time_limit:g} s"
            if not line:
                break
            msg = json.loads(line)
            ev = msg.get("event")
            name = msg.get("function")
            if ev == "function":
                if msg["hash"] != functions.get(name):
                    continue  # not the function the caller has: never reported
                reports[name] = FunctionReport(
                    name, msg["hash"], seed=request["seed"], max_steps=request["maxSteps"],
                    dim=msg["dim"],
                ) if name not in reports else reports[name]  # fmt: skip
            elif ev == "start":
                running = (name, msg["target"])
            elif ev == "outcome":
                running = None
                if name in reports:
                    reports[name].outcomes.append(Outcome(**msg["outcome"]))
            elif ev == "done" and name in reports:
                reports[name].note = msg.get("note", "")
                finished.add(name)
        rc = await proc.wait()
        if running is not None:
            err = (await err_task).decode(errors="replace").strip().splitlines()
            tail = err[-1] if err else ""
            name, target = running
            return name, target, "crashed", f"the run ended the process (exit {rc}) {tail}".strip()
        if rc != 0:
            err = (await err_task).decode(errors="replace").strip()
            raise RuntimeError(f"the same-bits child process failed (exit {rc}): {err[-2000:]}")
        return None
    finally:
        if proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
            await proc.wait()
        err_task.cancel()


def child_main(stdin=None, stdout=None) -> int:
    """The child: a JSON request on standard input, one JSON event per line out.

    The request: ``text``, ``functions`` (name → the hash the caller has; another function
    of that name is not run), ``targets``, ``seed``, ``dim``, ``maxSteps``, ``skip``
    (``[function, target]`` pairs already run) and ``declare`` (targets declared at run
    time: ``[name, module, suffix, runs]``). The events: ``function``, then ``start`` and
    ``outcome`` per run, then ``done`` (with the ``note`` of an unchecked function)."""
    from kera_core import targets as registry
    from kera_core.analysis import analyze
    from kera_core.interp.gen import DEFAULT_DIM

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    req = json.loads(stdin.read())
    for name, module, suffix, runs in req.get("declare", []):
        registry.declare(name, module, suffix, runs)
    dim = req.get("dim") or DEFAULT_DIM
    seed, max_steps = req.get("seed", SEED), req.get("maxSteps", MAX_STEPS)
    skip = {tuple(p) for p in req.get("skip", [])}

    def emit(**msg) -> None:
        stdout.write(json.dumps(msg) + "\n")
        stdout.flush()

    module = analyze(req["text"]).module
    fns = module.graph.functions if module is not None else {}
    for name, h in req.get("functions", {}).items():
        f = fns.get(name)
        if f is None or f.hash.hex() != h:
            continue  # not the function the caller has
        emit(event="function", function=name, hash=f.hash.hex(), dim=dim)
        note = ""
        for target in [INTERP, *(t for t in req.get("targets", []) if t != INTERP)]:
            if (name, target) in skip:
                continue
            emit(event="start", function=name, target=target)
            o = run_one(module, name, target, seed=seed, dim=dim, max_steps=max_steps)
            emit(event="outcome", function=name, outcome=asdict(o))
            if target == INTERP:
                note = over_budget(o, max_steps)
                if note:
                    break
        emit(event="done", function=name, note=note)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(child_main())
