"""`kera check -j N`: the diagnostics of files, checked across N processes.

The result is the serial one, diagnostic for diagnostic and in the same order
(:func:`kera_core.analysis.analyze`): only where the work is done changes.

*One big file.* The parent parses it and collects its items and signatures
(:func:`kera_core.sema.lower_module` up to its ``split`` callback), then forks: each
process — the parent included — lowers and checks the ownership of a share of the
functions, and the children send back their functions' diagnostics. A function's
diagnostics depend on which of its callees lowered (a call of one that did not is an
error value, which silences what follows), never on their hashes; so a share is made of
whole weakly connected components of the file's call graph (every callee of a function
lowered in the same process, in the serial order: the same answers), balanced by the
length of their text. The parent puts the diagnostics together exactly as the serial
``lower_module`` and ``check_ownership`` order them before they are sorted, so even
diagnostics that sort equal come out in the same order.

Where helpers called from all over tie the file into one component, the helpers called
from more than one function (with what they call; together at most a ``4 N``-th of the
text) are lowered in every process, and the components of the rest are shared out.

*Several files.* They are shared out whole among the processes where that balances
(each process parses and checks its own files: no waiting on one parse); else the files
too small to split are shared out whole, and the big ones split one after the other.

Children are forked (copy-on-write: they inherit the parse and the signatures) and end
with ``os._exit``. Where ``fork`` is missing, fails, or a child dies or sends something
unreadable, the work falls back to the serial path; a file too small to be worth a fork
(:data:`SPLIT_BYTES`) is checked serially.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Sequence

from kera_core.analysis import analyze, analyze_parsed, checked, has_uses
from kera_core.diagnostics import Diagnostic, Edit, Fix, Related, Severity, reported, sort_key
from kera_core.sema.module import Split, instances_of, lower_module
from kera_core.sema.ownership import check_each
from kera_core.source import Span
from kera_core.syntax.parse import parse

SPLIT_BYTES = 60_000
"""A file's functions are shared among processes from this many bytes of function text
on (~2,000 lines; forking, and the children's first touches of the parent's pages, cost
~20 ms, which a smaller file does not win back); files are shared out whole from this
many bytes in all."""


def usable_cores() -> int:
    """The processors this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    """Is ``os.fork`` there and safe? (Linux; macOS has it, but system libraries a process
    may have loaded are not safe across it, which is why Python spawns there.)"""
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def check_texts(
    texts: Sequence[str], jobs: int, min_bytes: int = SPLIT_BYTES
) -> list[list[Diagnostic]]:
    """The diagnostics of each text, as ``analyze(text).diagnostics``, with up to ``jobs``
    processes at work. ``min_bytes`` is :data:`SPLIT_BYTES` but in tests (0: split and
    share out whatever can be)."""
    if jobs <= 1 or not can_fork():
        return [analyze(t).diagnostics for t in texts]
    total = sum(map(len, texts))
    if (
        len(texts) > 1
        and total >= min_bytes
        and max(_shares_of(texts, jobs)[1]) <= 1.1 * total / jobs
    ):
        return _whole_files(list(texts), jobs)  # whole files balance: no parse waits for another
    out: list[list[Diagnostic] | None] = [None] * len(texts)
    small = [i for i, t in enumerate(texts) if len(t) < max(min_bytes, 1)]
    if len(small) > 1 and sum(len(texts[i]) for i in small) >= min_bytes:
        for i, diags in zip(small, _whole_files([texts[i] for i in small], jobs), strict=True):
            out[i] = diags
    for i, t in enumerate(texts):
        if out[i] is None:
            big = len(t) >= min_bytes
            out[i] = check_split(t, jobs, min_bytes) if big else analyze(t).diagnostics
    return out  # type: ignore[return-value]


# --- one file, its functions shared out ---------------------------------------------


class _Fork:
    """The ``split`` callback of :func:`lower_module`: shares the functions out, forks a
    child per share but the first (the parent's), and tells each process its share."""

    def __init__(self, jobs: int, min_bytes: int) -> None:
        self.jobs = jobs
        self.min_bytes = min_bytes
        self.plan: Split | None = None
        self.children = _Children()
        self.pipe: int | None = None  # in a child: the write end to the parent

    def __call__(self, plan: Split) -> frozenset[str] | None:
        shares = partition(plan, self.jobs, self.min_bytes)
        if shares is None:
            return None
        self.plan = plan
        for k in range(1, len(shares)):
            try:
                pipe = self.children.fork()
            except OSError:  # no more processes: the parent lowers what is left
                return frozenset().union(shares[0], *shares[k:])
            if pipe is not None:
                self.pipe = pipe
                return shares[k]
        return shares[0]


def partition(plan: Split, jobs: int, min_bytes: int = SPLIT_BYTES) -> list[frozenset[str]] | None:
    """Up to ``jobs`` shares of the functions of ``plan``, each closed under calls: whole
    weakly connected components of the call graph, the longest first, each to the share
    with the least text so far. Where that is lopsided (helpers called from all over tie
    the file into one component), the helpers called from several functions, with what
    they call, may go into every share (:func:`_shared_callees`), which leaves the
    components of the rest. None when the functions' text is under ``min_bytes``, or
    (``min_bytes`` not 0) one share would hold nearly all of it."""
    env = plan.env
    cost = {}
    for n in plan.order:
        span = env.fns[n].span
        cost[n] = (span.end - span.start) * max(1, len(instances_of(env, n)))
    total = sum(cost.values())
    if jobs < 2 or total < min_bytes:
        return None
    best = _balanced(plan, cost, jobs, frozenset())
    if best is None or best[0] > total / jobs * 1.2:
        shared = _shared_callees(plan, cost, jobs, total)
        other = _balanced(plan, cost, jobs, shared) if shared else None
        if other is not None and (best is None or other[0] < best[0]):
            best = other
    if best is None or (min_bytes and best[0] > 0.9 * total):
        return None  # nothing to share, or forking would not pay
    return best[1]


def _balanced(
    plan: Split, cost: dict[str, int], jobs: int, shared: frozenset[str]
) -> tuple[int, list[frozenset[str]]] | None:
    """The weakly connected components of the call graph without ``shared``, shared out
    longest first, each share with ``shared`` added: (the largest share's text, the
    shares); None if there is one component."""
    parent = {n: n for n in plan.order if n not in shared}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n in parent:
        for c in plan.callees[n]:
            if c in parent:
                a, b = root(n), root(c)
                if a != b:
                    parent[a] = b
    groups: dict[str, list[str]] = {}
    weight: dict[str, int] = {}
    for n in parent:
        r = root(n)
        groups.setdefault(r, []).append(n)
        weight[r] = weight.get(r, 0) + cost[n]
    if len(groups) < 2:
        return None
    roots, loads = _heaviest_first(weight, min(jobs, len(groups)), sum(cost[n] for n in shared))
    shares = [frozenset(n for r in rs for n in groups[r]) for rs in roots if rs]
    return max(loads), [s | shared for s in shares]


def _heaviest_first(weight: dict, k: int, base: int = 0) -> tuple[list[list], list[int]]:
    """The keys of ``weight`` in ``k`` shares, the heaviest first to the share with the
    least weight so far (each share starting at ``base``; ties in the keys' order); and
    each share's weight."""
    loads = [base] * k
    shares: list[list] = [[] for _ in range(k)]
    for key in sorted(weight, key=lambda key: -weight[key]):  # (stable)
        i = loads.index(min(loads))
        loads[i] += weight[key]
        shares[i].append(key)
    return shares, loads


def _shared_callees(plan: Split, cost: dict[str, int], jobs: int, total: int) -> frozenset[str]:
    """Functions called from more than one function (the most called first), each with
    every function it calls, directly or not, while together they are at most a
    ``4 * jobs``-th of the text: each share lowers them too (closed under calls, so their
    callers see them lowered or not exactly as the serial run does)."""
    callers: dict[str, set[str]] = {}
    for n in plan.order:
        for c in plan.callees[n]:
            if c in cost and c != n:
                callers.setdefault(c, set()).add(n)
    place = {n: i for i, n in enumerate(plan.order)}
    hubs = sorted(
        (c for c, s in callers.items() if len(s) > 1), key=lambda c: (-len(callers[c]), place[c])
    )
    budget = total // (4 * jobs)
    shared: set[str] = set()
    spent = 0
    for h in hubs:
        if h in shared:
            continue
        closure = {h}
        stack = [h]
        while stack:
            for c in plan.callees[stack.pop()]:
                if c in cost and c not in closure and c not in shared:
                    closure.add(c)
                    stack.append(c)
        extra = sum(cost[c] for c in closure)
        if spent + extra <= budget:
            shared |= closure
            spent += extra
    return frozenset(shared)


def check_split(text: str, jobs: int, min_bytes: int = SPLIT_BYTES) -> list[Diagnostic]:
    """``analyze(text).diagnostics``, the functions lowered and checked in ``jobs``
    processes (:class:`_Fork`)."""
    p = parse(text)
    if jobs <= 1 or not can_fork() or has_uses(p):  # (with `use`: a package of one module)
        return analyze_parsed(p).diagnostics
    fork = _Fork(jobs, min_bytes)
    try:
        module = lower_module(p, split=fork)
        if fork.pipe is not None:  # a child: send its share's diagnostics, and end
            _send(fork.pipe, _share(module, p))
        if fork.plan is None:  # not split: the module is the serial one
            return checked(p, module)
        shares = [_share(module, p), *fork.children.receive_all()]
    except BaseException:
        if fork.pipe is not None:
            os._exit(1)
        fork.children.stop()
        raise
    if any(share is None for share in shares):  # a child died or sent garbage
        return analyze_parsed(p).diagnostics  # everything again, serially
    return _merge(p, fork.plan, shares)


def _share(module, p) -> list[tuple]:
    """Per function of the module's share, in ``module.functions`` order: its name, its
    lowering's diagnostics and its ownership diagnostics (packed)."""
    owned = dict(check_each(module, p))
    return [
        (name, [pack(d) for d in lf.diagnostics], [pack(d) for d in owned.get(name, ())])
        for name, lf in module.functions.items()
    ]


def _merge(p, plan: Split, shares: list[list[tuple]]) -> list[Diagnostic]:
    """The serial ``analyze`` diagnostics from the shares: the functions in the order of
    ``Module.functions`` (the others, then the generic ones, each in lowering order), the
    lowering diagnostics after the module-level ones, then sorted, as ``lower_module``
    does; the ownership diagnostics likewise, as ``check_ownership`` does."""
    n = len(plan.order)
    rank = {
        name: i + (n if plan.env.fns[name].is_generic else 0) for i, name in enumerate(plan.order)
    }
    rows = sorted((row for share in shares for row in share), key=lambda row: rank[row[0]])
    lowering = list(plan.diagnostics)
    owned: list[Diagnostic] = []
    seen: set[str] = set()
    for name, low, own in rows:
        if name in seen:  # a function every share lowered (_shared_callees): once
            continue
        seen.add(name)
        lowering += map(unpack, low)
        owned += map(unpack, own)
    lowering.sort(key=sort_key)
    owned.sort(key=sort_key)
    return reported(list(p.diagnostics) + lowering + owned)


# --- several small files, shared out whole ------------------------------------------


def _shares_of(texts: Sequence[str], jobs: int) -> tuple[list[list[int]], list[int]]:
    """The texts (their indices) in up to ``jobs`` shares, the longest first to the
    share with the least text so far; and each share's length."""
    return _heaviest_first({i: len(t) for i, t in enumerate(texts)}, min(jobs, len(texts)))


def _whole_files(texts: list[str], jobs: int) -> list[list[Diagnostic]]:
    """``analyze(t).diagnostics`` of each text, the texts shared out among ``jobs``
    processes by length (the parent takes the first share)."""
    shares, _ = _shares_of(texts, jobs)
    children = _Children()
    theirs: list[list[int]] = []
    mine = list(shares[0])
    for share in shares[1:]:
        try:
            pipe = children.fork()
        except OSError:
            mine += share
            continue
        if pipe is not None:
            try:
                _send(pipe, [[pack(d) for d in analyze(texts[i]).diagnostics] for i in share])
            finally:
                os._exit(1)
        theirs.append(share)
    out: list[list[Diagnostic] | None] = [None] * len(texts)
    try:
        for i in mine:
            out[i] = analyze(texts[i]).diagnostics
        got = children.receive_all()
    except BaseException:
        children.stop()
        raise
    for share, sent in zip(theirs, got, strict=True):
        for j, i in enumerate(share):  # a child that failed: its files here
            out[i] = [unpack(d) for d in sent[j]] if sent is not None else None
    return [
        diags if diags is not None else analyze(texts[i]).diagnostics for i, diags in enumerate(out)
    ]


# --- the children's messages --------------------------------------------------------


def _send(fd: int, payload) -> None:
    """Write ``payload`` to the parent and end this child (status 0 once all is written)."""
    data = memoryview(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    try:
        while data:
            data = data[os.write(fd, data) :]
        os.close(fd)
    except BaseException:
        os._exit(1)
    os._exit(0)


class _Children:
    """Forked children, each with a pipe to the parent, until their results are in."""

    def __init__(self) -> None:
        self.running: list[tuple[int, int]] = []  # (pid, read end of its pipe), fork order

    def fork(self) -> int | None:
        """A new child: returns, in the child, the write end of its pipe (the pipes of
        the children before it closed); in the parent, None. OSError if it cannot."""
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            raise
        if pid == 0:
            os.close(r)
            for _, fd in self.running:
                os.close(fd)
            self.running = []
            return w
        os.close(w)
        self.running.append((pid, r))
        return None

    def receive_all(self) -> list:
        """What each child sent, in fork order (None for one that failed)."""
        out = []
        while self.running:
            out.append(_receive(*self.running.pop(0)))
        return out

    def stop(self) -> None:
        """End the children whose results are not wanted (the parent failed or was
        interrupted), close their pipes and wait for them."""
        for pid, fd in self.running:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.close(fd)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.running = []


def _receive(pid: int, fd: int):
    """What the child ``pid`` sent through ``fd``; None if it failed. Interrupted, it
    ends the child before it raises."""
    chunks = []
    try:
        try:
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError:
        chunks = []
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0 or not chunks:
        return None
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:
        return None


# --- diagnostics as plain tuples -----------------------------------------------------


def pack(d: Diagnostic) -> tuple:
    """A diagnostic as a tuple of strings and integers (cheap to pickle); see :func:`unpack`."""
    fix = d.fix
    return (
        d.code,
        d.severity.value,
        d.span.start,
        d.span.end,
        d.message,
        tuple((r.span.start, r.span.end, r.message, r.path) for r in d.related),
        None
        if fix is None
        else (fix.title, tuple((e.span.start, e.span.end, e.new_text) for e in fix.edits)),
    )


def unpack(t: tuple) -> Diagnostic:
    code, severity, start, end, message, related, fix = t
    return Diagnostic(
        code,
        Severity(severity),
        Span(start, end),
        message,
        tuple(Related(Span(a, b), m, path) for a, b, m, path in related),
        None if fix is None else Fix(fix[0], tuple(Edit(Span(a, b), s) for a, b, s in fix[1])),
    )
