"""Start-up cost of the `kera` command line: commands that do not run or optimize a program
do not import numpy (the interpreter, the optimizer) nor wasmtime (the wasm target)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAXPY = os.path.join(ROOT, "examples", "saxpy.kera")
HEAVY = ("numpy", "wasmtime", "kera_core.interp", "kera_core.opt", "kera_core.backends")

_PROBE = """
import contextlib, io, json, sys
from kera_core.cli import main
argv = json.loads(sys.argv[1])
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
heavy = json.loads(sys.argv[2])
print(json.dumps({"rc": rc, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def _loaded(argv: list[str], heavy=HEAVY) -> list[str]:
    """The modules of ``heavy`` that `kera ARGV` imported, in a fresh interpreter."""
    p = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv), json.dumps(list(heavy))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["rc"] in (0, None), (argv, result)
    return result["loaded"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["run", "--help"],
        ["build", "--help"],
        ["check", SAXPY],
        ["fmt", SAXPY],
        ["parse", SAXPY],
        ["fingerprint", SAXPY],
        ["graph", SAXPY],
        ["graph", SAXPY, "--json"],
    ],
)
def test_front_end_commands_import_neither_numpy_nor_wasmtime(argv):
    assert _loaded(argv) == []


@pytest.mark.parametrize("argv", [["check", SAXPY], ["fmt", SAXPY], ["parse", SAXPY]])
def test_checking_does_not_load_the_keg_reader_nor_the_graph_views(argv):
    """Every module imported is compiled when there is no bytecode cache: `kera check`
    leaves out what only the graph and build commands use, and what only a package needs
    (its manifest's TOML, the package analysis)."""
    heavy = ("kera_core.keg", "kera_core.ir.view", "tomllib", "kera_core.sema.package")
    assert _loaded(argv, heavy) == []


def test_literal_dimension_constants_are_checked_without_the_interpreter(tmp_path):
    """A dimension constant that is a literal has its value without evaluation (an
    expression, `2 * N`, is evaluated by the interpreter's handlers: bit for bit)."""
    src = tmp_path / "dims.kera"
    src.write_text(
        "const N: i64 = 4;\nconst M: u8 = 0x03;\n"
        "pub fn f(x: f32[N], y: &mut f32[M]) -> f32 { y[0] = x[1]; x[0] }\n"
    )
    assert _loaded(["check", str(src)]) == []
    src.write_text(
        "const N: i64 = 4;\nconst K: i64 = 2 * N;\npub fn f(x: f32[K]) -> f32 { x[7] }\n"
    )
    assert _loaded(["check", str(src)], ("numpy",)) == ["numpy"]


def test_building_a_keg_does_not_load_the_wasm_target(tmp_path):
    out = str(tmp_path / "saxpy.keg")
    assert _loaded(["build", SAXPY, "--target", "keg", "-o", out]) == []


def test_running_on_the_interpreter_does_not_load_wasmtime():
    argv = ["run", SAXPY, "--entry", "saxpy", "--dims", "N=4"]
    assert _loaded(argv, ("wasmtime", "kera_core.backends")) == []


def test_help_constants_match_what_they_describe():
    from kera_core.cli.opt import PASS_NAMES
    from kera_core.cli.run import _DEFAULT_DIM_HELP
    from kera_core.interp.gen import DEFAULT_DIM
    from kera_core.opt import PASSES

    assert PASS_NAMES == tuple(PASSES)
    assert _DEFAULT_DIM_HELP == DEFAULT_DIM


def test_declared_targets_match_the_loaded_ones():
    from kera_core import targets

    for d in targets.BUILTIN:
        t = targets.get(d.name)
        assert t is not None and t.name == d.name
        assert t.suffix == d.suffix
        assert hasattr(t, "run") == d.runs
    assert targets.names() == [t.name for t in targets.available()]
