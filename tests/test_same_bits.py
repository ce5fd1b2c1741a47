"""The same-bits check (kera_core/ide/same_bits.py): verdicts, in process and through the
child process — a differing target, a refusing one, the step budget, checked errors, and a
run that hangs or kills its process. The language server's lens: tests/test_lsp_same_bits.py."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path

import pytest

from kera_core import targets as registry
from kera_core.analysis import analyze
from kera_core.ide import same_bits as sb

ROOT = Path(__file__).resolve().parent.parent

TEXT = """\
pub fn saxpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = a * x[i] + y[i];
    }
}

pub fn past_the_end[N](x: &f32[N]) -> f32 {
    x[N]
}

fn helper(a: f32) -> f32 { a * 2.0 }

pub fn twice(a: f32) -> f32 { helper(a) }
"""

FAKES = ("flip", "slow", "crash", "picky")
FAKE_MODULE = "tests.same_bits_fake"


@pytest.fixture
def fakes(monkeypatch):
    """The fake targets, declared (so that a child process imports them) and removed after."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    for name in FAKES:
        registry.declare(name, FAKE_MODULE, ".fake", runs=True)
    importlib.import_module(FAKE_MODULE).register_all()
    yield
    for name in FAKES:
        registry._DECLARED.pop(name, None)
        registry.REGISTRY.pop(name, None)


def module():
    a = analyze(TEXT)
    assert not a.has_errors
    return a.module


def test_every_target_agrees_on_a_clean_module():
    reports = {r.function: r for r in sb.check_module(module(), ("interp", "wasm", "x86_64"))}
    assert set(reports) == {"saxpy", "past_the_end", "twice"}  # exported only
    rep = reports["saxpy"]
    assert rep.verdict == "same" and rep.same == ["interp", "wasm", "x86_64"]
    assert rep.title() == "same bits on interp, wasm, x86_64"
    ref = rep.outcome("interp")
    assert ref.kind == "digest" and len(ref.value) == 64
    # the digest is `kera run --seed 1`'s
    from kera_core.cli.run import run_seeded

    assert run_seeded(module(), "saxpy", seed=1).digest() == ref.value
    table = rep.table("t.kera")
    assert f"sha3-256:{ref.value}" in table and "kera run t.kera --entry saxpy --seed 1" in table


def test_a_checked_error_compares_by_its_code():
    rep = sb.check_function(module(), "past_the_end", ("wasm", "x86_64"))
    assert [o.shown() for o in rep.outcomes] == ["error R0001"] * 3
    assert rep.verdict == "same"


def test_a_differing_target_is_named(fakes):
    m = module()
    rep = sb.check_function(m, "saxpy", [registry.get("flip"), "wasm"])
    assert rep.verdict == "differs" and rep.differing == ["flip"]
    assert rep.same == ["interp", "wasm"]
    ref, bad = rep.outcome("interp"), rep.outcome("flip")
    assert rep.title() == f"differs on flip (interp {ref.value[:8]}…, flip {bad.value[:8]}…)"
    assert "DIFFERS" in rep.table() and "--target flip" in rep.table()


def test_refused_and_unavailable_targets_are_not_differences(fakes):
    rep = sb.check_function(module(), "twice", ["picky", "no_such_target", "x86_64"])
    kinds = {o.target: o.kind for o in rep.outcomes}
    assert kinds == {
        "interp": "digest",
        "picky": "refused",
        "no_such_target": "unknown",
        "x86_64": "digest",
    }
    assert rep.verdict == "same"
    assert rep.title() == "same bits on interp, x86_64 · picky refused, no_such_target unknown"
    assert "picky refuses everything" in rep.table()


def test_a_target_that_cannot_run_here_says_so(monkeypatch):
    t = registry.get("wasm")
    monkeypatch.setattr(type(t), "cannot_run_here", lambda self: "no wasm today", raising=False)
    rep = sb.check_function(module(), "twice", ["wasm"])
    assert rep.outcome("wasm").kind == "not-here" and rep.outcome("wasm").detail == "no wasm today"
    assert rep.title() == "same bits: only interp ran"


def test_over_the_step_budget_is_unchecked_and_runs_no_target():
    rep = sb.check_function(module(), "saxpy", ["wasm", "x86_64"], max_steps=5)
    assert [o.target for o in rep.outcomes] == ["interp"]
    assert rep.verdict == "unchecked"
    assert rep.title() == "same bits: not checked (more than 5 loop iterations)"


def test_report_round_trips_through_json():
    rep = sb.check_function(module(), "twice", ["wasm"])
    again = sb.FunctionReport.from_json(rep.to_json())
    assert again == rep and again.verdict == "same"


def test_child_process_checks_and_verifies_hashes():
    m = module()
    fns = dict(sb.exported(m))
    fns["twice"] = "0" * 64  # the caller's `twice` is another function: not reported
    seen = []
    reports = asyncio.run(
        sb.check_text(TEXT, fns, sb.Options(targets=("interp", "wasm")), seen.append)
    )
    assert [r.function for r in reports] == [r.function for r in seen]
    assert sorted(r.function for r in reports) == ["past_the_end", "saxpy"]
    by = {r.function: r for r in reports}
    assert by["saxpy"].title() == "same bits on interp, wasm"
    inproc = sb.check_function(m, "saxpy", ["wasm"])
    assert [o.shown() for o in by["saxpy"].outcomes] == [o.shown() for o in inproc.outcomes]


def test_child_process_survives_a_hang_and_a_crash(fakes):
    m = module()
    fns = {"twice": dict(sb.exported(m))["twice"], "saxpy": dict(sb.exported(m))["saxpy"]}
    opts = sb.Options(targets=("interp", "slow", "crash", "flip", "wasm"), time_limit=1.0)
    reports = {r.function: r for r in asyncio.run(sb.check_text(TEXT, fns, opts))}
    assert set(reports) == {"twice", "saxpy"}
    for rep in reports.values():
        kinds = {o.target: o.kind for o in rep.outcomes}
        assert kinds == {
            "interp": "digest",
            "slow": "timeout",
            "crash": "crashed",
            "flip": "digest",
            "wasm": "digest",
        }, rep
        assert [o.target for o in rep.outcomes] == ["interp", "slow", "crash", "flip", "wasm"]
        assert rep.verdict == "differs" and rep.differing == ["flip"]


def test_cancelling_kills_the_child(fakes):
    m = module()
    fns = {"twice": dict(sb.exported(m))["twice"]}

    async def go():
        task = asyncio.ensure_future(
            sb.check_text(TEXT, fns, sb.Options(targets=("interp", "slow"), time_limit=60))
        )
        await asyncio.sleep(1.5)
        task.cancel()
        t0 = asyncio.get_running_loop().time()
        with pytest.raises(asyncio.CancelledError):
            await task
        return asyncio.get_running_loop().time() - t0

    assert asyncio.run(go()) < 2.0
