"""`kera run --target` goes through the target registry: a registered target that can run
is a `--target` choice and part of `--target all`, with no edit to kera_core/cli/run.py."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from kera_core import targets
from kera_core.cli import main
from kera_core.cli import run as run_cli
from kera_core.targets import Artifact

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAXPY = os.path.join(ROOT, "examples", "saxpy.kera")


class EchoTarget:
    """A target that "runs" its artifact on the reference interpreter."""

    description = "test target"
    suffix = ".echo"

    def __init__(self, name: str, why: list[str] | None = None, wrong: bool = False):
        self.name = name
        self.why = why or []
        self.wrong = wrong
        self.runs = 0

    def unsupported(self, graph, fn=None):
        return list(self.why)

    def lower(self, graph, provenance, fn=None):
        return Artifact(self.name, b"", graph.fingerprint(), self.suffix)

    def preview(self, graph, provenance, fn):
        return ""

    def run(self, artifact, graph, fn, inputs, dims=None, *, provenance=None, stdout=None):
        from kera_core.interp import run_function

        self.runs += 1
        if self.wrong:
            inputs = {k: v * 2 for k, v in inputs.items()}
        module = SimpleNamespace(graph=graph, provenance=provenance)
        return run_function(module, fn, inputs, dims, stdout=stdout)


TEST_TARGETS = ("echo", "broken")


@pytest.fixture
def registry():
    """The registry, with the test targets taken out again after the test."""
    yield targets
    for name in TEST_TARGETS:
        targets.REGISTRY.pop(name, None)
        targets._DECLARED.pop(name, None)


def kera_run(capsys, *argv):
    rc = main(["run", SAXPY, "--entry", "saxpy", "--dims", "N=8", "--seed", "1", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_target_choices_come_from_the_registry(registry):
    assert run_cli.target_names() == ["interp", "arm64", "ptx", "verilog", "wasm", "x86_64", "all"]
    registry.register(EchoTarget("echo"))
    assert run_cli.target_names() == [
        "interp",
        "arm64",
        "echo",
        "ptx",
        "verilog",
        "wasm",
        "x86_64",
        "all",
    ]
    assert "keg" not in run_cli.target_names()  # it cannot run what it builds


def test_a_registered_target_runs_and_matches_the_interpreter(capsys, registry):
    echo = registry.register(EchoTarget("echo"))
    rc, ref, _ = kera_run(capsys)
    assert rc == 0
    rc, out, _ = kera_run(capsys, "--target", "echo")
    assert rc == 0 and echo.runs == 1
    assert out == ref
    rc, out, err = kera_run(capsys, "--target", "all")
    assert rc == 0 and echo.runs == 2
    assert out == ref
    digest = ref.splitlines()[-1].split()[-1]
    assert f"target interp {digest}" in err
    assert f"target echo {digest}" in err
    assert f"target wasm {digest}" in err


def test_all_skips_what_a_target_cannot_compile_and_fails_on_a_difference(capsys, registry):
    registry.register(EchoTarget("echo", why=["no tensors here"]))
    rc, _, err = kera_run(capsys, "--target", "all")
    assert rc == 0
    assert "target echo skipped: the echo target cannot run `saxpy`: no tensors here" in err
    rc, _, err = kera_run(capsys, "--target", "echo")
    assert rc == 2 and "the echo target cannot run `saxpy`" in err

    registry.register(EchoTarget("echo", wrong=True))
    rc, out, err = kera_run(capsys, "--target", "all")
    assert rc == 1
    assert out.splitlines()[-1] == "result error R0010"
    assert "target `echo` disagrees with the interpreter" in err


def test_max_steps_is_refused_by_a_target_that_does_not_count_steps(capsys, registry):
    registry.register(EchoTarget("echo"))
    rc, _, err = kera_run(capsys, "--target", "echo", "--max-steps", "10")
    assert rc == 2 and "--max-steps is not supported by the echo target" in err
    rc, _, err = kera_run(capsys, "--target", "wasm", "--max-steps", "10")
    assert (
        rc == 2
        and "--max-steps is not supported by the wasm target (it uses fuel: see --fuel)" in err
    )
    # --target all compares only the targets that stop where the interpreter stops
    rc, out, err = kera_run(capsys, "--target", "all", "--max-steps", "3")
    assert rc == 1 and out.splitlines()[-1] == "result error R0007", (out, err)
    assert "target wasm skipped: --max-steps does not apply" in err
    assert "target x86_64 error R0007" in err


def test_a_declared_target_is_imported_on_first_use_only(capsys, registry):
    registry.declare("broken", "kera_test_no_such_backend", ".broken", runs=True)
    assert "broken" in registry.names()
    assert "broken" in run_cli.target_names()
    # `all` runs every target that can run on this machine; one that cannot load is skipped
    rc, _, err = kera_run(capsys, "--target", "all")
    assert rc == 0
    assert "target broken skipped: cannot load it here" in err
    rc, _, err = kera_run(capsys, "--target", "broken")
    assert rc == 2 and "target `broken` cannot be loaded here" in err


def test_the_cheap_check_agrees_with_the_full_one_on_every_example() -> None:
    """`likely_unsupported` (lowering and selection only: what the editor's action list asks
    on every cursor move) refuses exactly the example functions `unsupported` refuses, at a
    fraction of the cost; in general it may miss only a late (allocation) refusal."""
    import glob

    from kera_core.analysis import analyze

    checked = 0
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.kera"))):
        with open(path) as fh:
            m = analyze(fh.read()).module
        for f in m.graph.exported():
            for t in targets.available():
                cheap = getattr(t, "likely_unsupported", None)
                if cheap is None:
                    continue
                assert bool(cheap(m.graph, f.name)) == bool(t.unsupported(m.graph, f.name)), (
                    t.name,
                    f.name,
                )
                checked += 1
    assert checked >= 100
