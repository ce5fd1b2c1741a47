"""`kera opt`, and the helpers `kera build --opt/--opt-report` uses (kera_core/cli/opt.py)."""

from __future__ import annotations

import argparse
import os
from types import SimpleNamespace

import pytest

from kera_core.analysis import analyze
from kera_core.cli import opt as opt_cli
from kera_core.cli.inputs import UsageError
from kera_core.keg import read_keg, write_keg
from kera_core.opt import optimize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAXPY = os.path.join(ROOT, "examples", "saxpy.kera")
LAYERNORM = os.path.join(ROOT, "examples", "layernorm.kera")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kera")
    sub = ap.add_subparsers(dest="command")
    opt_cli.register(sub)
    b = sub.add_parser("build")
    b.add_argument("file")
    opt_cli.add_build_flags(b)
    return ap


def test_kera_opt_prints_graph_and_table(capsys):
    args = parser().parse_args(["opt", SAXPY, "--fn", "saxpy"])
    assert args.func(args) == 0
    out, err = capsys.readouterr()
    assert "lanes=4" in out and "pub fn saxpy" in out and "saxpy_pure" not in out
    assert "fixpoint" in err and "vectorize" in err


def test_kera_opt_passes_and_errors(capsys):
    args = parser().parse_args(["opt", SAXPY, "--passes", "fold,dce", "--quiet", "--json"])
    assert args.func(args) == 0
    out, err = capsys.readouterr()
    assert out.lstrip().startswith("{") and err == ""
    with pytest.raises(UsageError):
        args = parser().parse_args(["opt", SAXPY, "--passes", "fold,nope"])
        args.func(args)
    with pytest.raises(UsageError):
        args = parser().parse_args(["opt", LAYERNORM, "--fn", "mean_loop"])  # inlined away
        args.func(args)


def test_build_flags():
    a = analyze(open(LAYERNORM, encoding="utf-8").read())
    g, prov = a.module.graph, a.module.provenance
    plain = parser().parse_args(["build", LAYERNORM])
    assert opt_cli.optimize_for_build(g, prov, plain, LAYERNORM) == (g, prov)
    for flags in (["--opt"], ["--opt-report"]):
        args = parser().parse_args(["build", LAYERNORM, *flags])
        og, oprov = opt_cli.optimize_for_build(g, prov, args, LAYERNORM)
        assert og.fingerprint() == optimize(g).graph.fingerprint() != g.fingerprint()
        assert set(oprov.functions) == set(og.functions)  # `mean_loop` was inlined away


def test_optimized_graph_and_provenance_round_trip_through_keg():
    a = analyze(open(LAYERNORM, encoding="utf-8").read())
    og = optimize(a.module.graph).graph
    prov = opt_cli.carry_provenance(a.module.provenance, og)
    k = read_keg(write_keg(og, prov))
    assert k.graph.fingerprint() == og.fingerprint()
    assert set(k.provenance.functions) == set(og.functions)


def test_report_goes_to_stderr(capsys):
    a = analyze(open(SAXPY, encoding="utf-8").read())
    args = SimpleNamespace(opt=False, opt_report=True)
    opt_cli.optimize_for_build(a.module.graph, None, args, SAXPY)
    out, err = capsys.readouterr()
    assert out == "" and "iteration(s)" in err
