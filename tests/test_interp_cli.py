"""`kera run`: output format, exit codes and messages."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from kera_core.cli import run as run_cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAXPY = os.path.join(ROOT, "examples", "saxpy.kera")
PARTICLES = os.path.join(ROOT, "examples", "particles.kera")


def kera_run(capsys, *argv):
    rc = run_cli.main([*argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_output_lines(capsys):
    rc, out, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--seed", "1", "--dims", "N=8")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("entry saxpy fn:")
    assert lines[1] == "dims N=8"
    assert re.fullmatch(r"input a f32 sha3-256:[0-9a-f]{64}", lines[2])
    assert re.fullmatch(r"input x f32\[8\] sha3-256:[0-9a-f]{64}", lines[3])
    assert re.fullmatch(r"output y f32\[8\] sha3-256:[0-9a-f]{64}", lines[5])
    assert re.fullmatch(r"result sha3-256:[0-9a-f]{64}", lines[-1])
    assert err == ""


def test_default_dims_are_announced(capsys):
    rc, out, err = kera_run(capsys, SAXPY, "--entry", "saxpy")
    assert rc == 0
    assert "dims N=16 (default)" in out
    assert "dimension N not given; using 16" in err


def test_seed_is_deterministic_and_matters(capsys):
    _, a, _ = kera_run(capsys, SAXPY, "--entry", "saxpy_pure", "--seed", "3")
    _, b, _ = kera_run(capsys, SAXPY, "--entry", "saxpy_pure", "--seed", "3")
    _, c, _ = kera_run(capsys, SAXPY, "--entry", "saxpy_pure", "--seed", "4")
    assert a == b and a != c


def test_inputs_and_out(capsys, tmp_path):
    inp = tmp_path / "in.npz"
    np.savez(inp, a=np.float32(2), x=np.arange(3, dtype=np.float32), y=np.ones(3, np.float32))
    outp = tmp_path / "out.npz"
    rc, out, err = kera_run(
        capsys, SAXPY, "--entry", "saxpy", "--inputs", str(inp), "--out", str(outp)
    )
    assert rc == 0, err
    assert "dims N=3\n" in out
    with np.load(outp) as z:
        assert z["y"].tolist() == [1, 3, 5]


def test_partial_inputs_are_generated(capsys, tmp_path):
    inp = tmp_path / "in.npz"
    np.savez(inp, x=np.arange(5, dtype=np.float32))
    rc, out, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--inputs", str(inp))
    assert rc == 0, err
    assert "dims N=5\n" in out


def test_struct_inputs_and_outputs(capsys, tmp_path):
    inp = tmp_path / "in.npz"
    fields = {"p.pos.x": 0.0, "p.pos.y": 1.0, "p.vel.x": 1.0, "p.vel.y": 0.0}
    np.savez(
        inp,
        **{k: np.float32(v) for k, v in fields.items()},
        **{"p.restitution": np.float32(0.5), "dt": np.float32(0.1)},
    )
    outp = tmp_path / "out.npz"
    rc, out, err = kera_run(
        capsys, PARTICLES, "--entry", "step", "--inputs", str(inp), "--out", str(outp)
    )
    assert rc == 0, err
    with np.load(outp) as z:
        assert z["result.pos.x"] == np.float32(0.1)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--entry", "nope"], "exported functions: saxpy, saxpy_fused, saxpy_pure"),
        (["--entry", "saxpy", "--target", "nosuch"], "unknown target `nosuch`"),
        (["--entry", "saxpy", "--dims", "N"], "expected NAME=SIZE"),
        (["--entry", "saxpy", "--dims", "N=-3"], "expected NAME=SIZE"),
        (["--entry", "saxpy", "--dims", "M=3"], "has no dimension `M`"),
    ],
)
def test_usage_errors_exit_2(capsys, argv, message):
    rc, out, err = kera_run(capsys, SAXPY, *argv)
    assert rc == 2
    assert message in err


def test_npz_shape_mismatch_exits_2(capsys, tmp_path):
    inp = tmp_path / "in.npz"
    np.savez(inp, x=np.zeros(3, np.float32), y=np.zeros(4, np.float32))
    rc, _, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--inputs", str(inp))
    assert rc == 2 and "has shape (4,)" in err
    np.savez(inp, x=np.zeros((3, 2), np.float32))
    rc, _, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--inputs", str(inp))
    assert rc == 2 and "rank 1" in err
    np.savez(inp, z=np.zeros(3, np.float32))
    rc, _, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--inputs", str(inp))
    assert rc == 2 and "unknown name(s) z" in err
    np.savez(inp, x=np.zeros(3, np.float64))
    rc, _, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--inputs", str(inp))
    assert rc == 2 and "f32" in err


def test_missing_files_and_bad_sources_exit_2(capsys, tmp_path):
    rc, _, err = kera_run(capsys, str(tmp_path / "none.kera"), "--entry", "f")
    assert rc == 2 and "no such file" in err
    bad = tmp_path / "bad.kera"
    bad.write_text("pub fn f() -> i32 { 1.0 }\n")
    rc, _, err = kera_run(capsys, str(bad), "--entry", "f")
    assert rc == 2 and "nothing to run" in err
    rc, _, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--inputs", str(tmp_path / "x.npz"))
    assert rc == 2


def test_unreadable_npz_files_exit_2(capsys, tmp_path):
    """An empty file, a bare .npy array, a broken zip: usage errors, never a traceback."""
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    bare = tmp_path / "bare.npy"
    np.save(bare, np.zeros(3, np.float32))
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    for path, message in (
        (empty, "not a readable .npz file"),
        (bare, "not a .npz archive of named arrays"),
        (broken, "not a readable .npz file"),
    ):
        rc, _, err = kera_run(capsys, SAXPY, "--entry", "saxpy", "--inputs", str(path))
        assert rc == 2 and message in err, (path, err)


SPIN = "pub fn spin(n: i64) -> i64 {\n    let mut s: i64 = 0;\n    for i in 0..n { s = s + i; }\n    s\n}\n"


def test_fuel_bounds_a_wasm_run_and_can_be_raised(capsys, tmp_path):
    src = tmp_path / "spin.kera"
    src.write_text(SPIN)
    inp = tmp_path / "n.npz"
    np.savez(inp, n=np.int64(20_000))
    args = (str(src), "--entry", "spin", "--inputs", str(inp))
    rc, out, err = kera_run(capsys, *args, "--target", "wasm", "--fuel", "5000")
    assert rc == 1 and "result error R0007" in out and "--fuel N" in err
    rc, out, _ = kera_run(capsys, *args, "--target", "all", "--fuel", "10000000")
    assert rc == 0 and "result sha3-256:" in out
    # under `all`, a target stopped by its own budget says so; it is not a disagreement
    rc, out, err = kera_run(capsys, *args, "--target", "all", "--fuel", "5000")
    assert rc == 0 and "result sha3-256:" in out
    assert "target wasm stopped: out of fuel" in err and "--fuel N" in err
    rc, _, err = kera_run(capsys, *args, "--fuel", "100")
    assert rc == 2 and "not interp" in err
    rc, _, err = kera_run(capsys, *args, "--target", "wasm", "--fuel", "0")
    assert rc == 2 and "positive" in err


def test_run_time_error_exits_1_with_location(capsys, tmp_path):
    src = tmp_path / "e.kera"
    src.write_text("pub fn f(a: i32, b: i32) -> i32 {\n    a / (b - b)\n}\n")
    rc, out, err = kera_run(capsys, str(src), "--entry", "f")
    assert rc == 1
    assert out.splitlines()[-1] == "result error R0002"
    assert "R0002 (integer division by zero)" in err and "e.kera:2:5" in err


def test_io_output_is_part_of_the_digest(capsys):
    path = os.path.join(ROOT, "examples", "transfer.kera")
    rc, out, _ = kera_run(capsys, path, "--entry", "report", "--dims", "N=2", "--seed", "2")
    assert rc == 0
    assert "output stdout text sha3-256:" in out


def test_select_target():
    assert run_cli.select_target("interp") is not None
    with pytest.raises(run_cli.UsageError):
        run_cli.select_target("x86")


def test_runs_a_keg_file_like_its_source(capsys, tmp_path):
    from kera_core.analysis import analyze
    from kera_core.keg import write_keg

    with open(SAXPY, encoding="utf-8") as f:
        m = analyze(f.read()).module
    for prov in (m.provenance, None):
        keg = tmp_path / "saxpy.keg"
        keg.write_bytes(write_keg(m.graph, prov))
        rc, out, err = kera_run(capsys, str(keg), "--entry", "saxpy", "--seed", "5")
        assert rc == 0, err
        _, src_out, _ = kera_run(capsys, SAXPY, "--entry", "saxpy", "--seed", "5")
        assert out.splitlines()[-1] == src_out.splitlines()[-1]
    bad = tmp_path / "bad.keg"
    bad.write_bytes(b"KEG\0junk")
    rc, _, err = kera_run(capsys, str(bad), "--entry", "saxpy")
    assert rc == 2 and "invalid .keg" in err


@pytest.mark.parametrize("seed", ["-1", "-9223372036854775808", "18446744073709551616", "1.5", "x"])
def test_seeds_outside_the_range_are_usage_errors(capsys, seed):
    from kera_core.cli import main

    with pytest.raises(SystemExit) as info:
        main(["run", SAXPY, "--entry", "saxpy_pure", f"--seed={seed}"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "a seed is an integer from 0 to 2**64-1" in err and "Traceback" not in err


def test_seed_edges_run(capsys):
    from kera_core.cli import main

    outs = []
    for seed in ("0", "18446744073709551615", "0xffffffffffffffff"):
        assert main(["run", SAXPY, "--entry", "saxpy_pure", "--seed", seed]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[1] == outs[2] != outs[0]
