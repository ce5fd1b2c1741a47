"""Constants that name constants: each is lowered once per lowering, not once per use (a
constant used twice by the next was exponential: 25 such constants never finished), and
the constants' check, the reachability of checked operations and the dependency digests
are linear in a chain (4,000 chained constants: 264 s before, under a second after)."""

from __future__ import annotations

from kera_core.analysis import analyze
from kera_core.interp import run_function
from kera_core.sema import deps as deps_mod
from kera_core.sema.lower import FnLowering
from kera_core.source import Span
from kera_core.workspace import Document


def doubling(n: int) -> str:
    lines = ["const C0: i64 = 1;"]
    lines += [f"const C{i}: i64 = C{i - 1} + C{i - 1};" for i in range(1, n)]
    return "\n".join(lines) + f"\npub fn f() -> i64 {{ C{n - 1} }}\n"


def chain(n: int, extra: str = "") -> str:
    lines = ["const C0: i64 = 1;"]
    lines += [f"const C{i}: i64 = C{i - 1} + {i};" for i in range(1, n)]
    return "\n".join(lines) + f"\n{extra}pub fn f() -> i64 {{ C{n - 1} }}\n"


def _counting(monkeypatch) -> list[int]:
    calls = [0]
    real = FnLowering._inline_const

    def counted(self, c, home):
        calls[0] += 1
        return real(self, c, home)

    monkeypatch.setattr(FnLowering, "_inline_const", counted)
    return calls


def test_a_constant_named_twice_is_inlined_once_per_lowering(monkeypatch) -> None:
    calls = _counting(monkeypatch)
    a = analyze(doubling(16))  # (2^15 inlinings each for the check and for f, before)
    assert not a.has_errors, a.diagnostics
    # the constants' check (one shared lowering state) and f's lowering: 15 each at most
    assert calls[0] <= 2 * 16, calls[0]
    a = analyze(doubling(64))  # C63 = 2^63: wraps to the smallest i64
    assert run_function(a.module, "f", {})["result"] == -(1 << 63)


def test_a_chain_of_constants_is_checked_in_linear_work(monkeypatch) -> None:
    calls = _counting(monkeypatch)
    n = 3000
    src = chain(n, "const D: i64 = C1500 / (C0 - 1);\n")
    a = analyze(src)
    assert [d.code for d in a.diagnostics] == ["K0317"]  # D's division by zero, once
    assert "constant `D`" in a.diagnostics[0].message
    assert calls[0] <= 3 * n, calls[0]


def test_the_dependency_digests_are_a_merkle_tree_and_follow_an_edit() -> None:
    """Each item's digest covers what it names transitively (an edit at the chain's start
    changes the digest at its end) and is made once per item; the incremental analysis
    after an edit in the middle of a chain is a cold one's."""
    own = {f"C{i}": bytes([i % 256]) * 4 for i in range(500)}
    mentions = {f"C{i}": frozenset({f"C{i - 1}"}) for i in range(1, 500)}
    first = deps_mod.Deps._closures(list(own), own, mentions, {})
    own2 = {**own, "C0": b"new!"}
    second = deps_mod.Deps._closures(list(own2), own2, mentions, {})
    assert all(first[k] != second[k] for k in own)  # every item reaches C0
    # a cycle (an error reported elsewhere): the flat digests, for every name
    cyc = {**mentions, "C0": frozenset({"C499"})}
    flat = deps_mod.Deps._closures(list(own), own, cyc, {})
    assert flat == {n: deps_mod.Deps._closure(n, own, cyc) for n in own}

    text = chain(200)
    doc = Document("file:///c.kera", text)
    doc.analysis()
    at = text.index("const C100: i64 = C99 + ") + len("const C100: i64 = C99 + ")
    doc.edit(Span(at, at), "7")
    doc.version = 2
    a = doc.analysis()
    cold = analyze(doc.text)
    assert a.diagnostics == cold.diagnostics
    assert a.module.graph.fingerprint() == cold.module.graph.fingerprint()
    want = run_function(cold.module, "f", {})["result"]
    assert run_function(a.module, "f", {})["result"] == want
