"""The `kera` command line and the rendering of diagnostics."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kera_core import __version__
from kera_core.cli import main
from kera_core.diagnostics import Edit, Fix, Related, error, render, render_json
from kera_core.source import Span

ROOT = Path(__file__).resolve().parent.parent
SAXPY = ROOT / "examples" / "saxpy.kera"


def run(argv, capsys, stdin: bytes | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"kera {__version__}"


def test_parse_ok_and_tree(capsys):
    code, out, _ = run(["parse", str(SAXPY)], capsys)
    assert code == 0 and "0 syntax error(s)" in out
    code, out, _ = run(["parse", str(SAXPY), "--tree"], capsys)
    assert code == 0 and out.startswith("SOURCE_FILE@0..")


def test_parse_errors_exit_1_with_rendered_diagnostic(capsys, monkeypatch):
    code, out, err = run(["parse", "-"], capsys, b"fn f( {\n", monkeypatch)
    assert code == 1
    assert "error[K0100]: expected `)`, found `{`" in err
    assert "--> <stdin>:1:7" in err and "^" in err


@pytest.mark.parametrize("cmd", ["parse", "check", "fmt", "fingerprint", "graph"])
def test_missing_file_and_directory_exit_2(cmd, capsys, tmp_path):
    code, _, err = run([cmd, str(tmp_path / "nope.kera")], capsys)
    assert code == 2 and "no such file" in err and "Traceback" not in err
    code, _, err = run([cmd, str(tmp_path)], capsys)
    # a directory is a package for every one of them (language.md, "Modules")
    assert code == 2 and "no .kera files in the package" in err and "Traceback" not in err


def test_fmt_check_and_write(capsys, tmp_path):
    f = tmp_path / "a.kera"
    f.write_text("fn f(a:f32)->f32{a+1.0}\n")
    code, _, err = run(["fmt", "--check", str(f)], capsys)
    assert code == 1 and "would reformat" in err
    code, _, _ = run(["fmt", "--write", str(f)], capsys)
    assert code == 0
    assert f.read_text() == "fn f(a: f32) -> f32 {\n    a + 1.0\n}\n"
    code, _, _ = run(["fmt", "--check", str(f)], capsys)
    assert code == 0


def test_fmt_refuses_syntax_errors(capsys, tmp_path):
    f = tmp_path / "bad.kera"
    f.write_text("fn f( {\n")
    code, _, err = run(["fmt", "--write", str(f)], capsys)
    assert code == 1 and "K0602" in err
    assert f.read_text() == "fn f( {\n"


def test_check_json(capsys, tmp_path):
    f = tmp_path / "t.kera"
    f.write_text("fn f(value: f32) -> f32 {\n    valeu\n}\n")
    code, out, _ = run(["check", "--format", "json", str(f)], capsys)
    assert code == 1
    rows = json.loads(out)
    assert rows[0]["code"] == "K0201" and "did you mean `value`" in rows[0]["message"]
    assert rows[0]["span"]["line"] == 2 and rows[0]["span"]["column"] == 5
    code, out, _ = run(["check", str(SAXPY)], capsys)
    assert code == 0 and "ok" in out


def test_fingerprint_and_graph(capsys):
    code, out, _ = run(["fingerprint", str(SAXPY)], capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("sha3-256:") and len(lines[0]) == 9 + 64
    assert any(line.startswith("fn saxpy sha3-256:") for line in lines)
    code, out, _ = run(["graph", str(SAXPY), "--fn", "saxpy", "--json"], capsys)
    assert code == 0 and json.loads(out)["functions"][0]["name"] == "saxpy"
    code, _, err = run(["graph", str(SAXPY), "--fn", "nope"], capsys)
    assert code == 2 and "no function `nope`" in err


def test_console_script_runs():
    exe = Path(sys.executable).parent / "kera"
    r = subprocess.run([str(exe), "check", str(SAXPY)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# --- rendering -----------------------------------------------------------------------------


def test_render_snapshot_with_related_and_fix():
    text = "fn f() {\n    let x = 漢字 + y;\n}\n"
    start = len("fn f() {\n    let x = 漢字 + ".encode())
    d = error(
        "K0201",
        Span(start, start + 1),
        "cannot find `y` in this scope",
        related=(Related(Span(3, 4), "in this function"),),
        fix=Fix("declare it", (Edit(Span(0, 0), "let y = 1;\n"),)),
    )
    assert (
        render(d, text, "t.kera")
        == (
            "error[K0201]: cannot find `y` in this scope\n"
            "  --> t.kera:2:18\n"
            "    |\n"
            "  2 |     let x = 漢字 + y;\n"
            "    | " + " " * 19 + "^\n"  # 漢字 are two cells wide each
            "  note: in this function\n"
            "    --> t.kera:1:4\n"
            "      |\n"
            "    1 | fn f() {\n"
            "      |    -\n"
            "  help: declare it"
        )
    )
    j = json.loads(render_json([d], text, "t.kera"))[0]
    assert j["span"] == {
        "start": start,
        "end": start + 1,
        "line": 2,
        "column": 18,
        "end_line": 2,
        "end_column": 19,
    }
    assert j["fix"]["edits"][0]["new_text"] == "let y = 1;\n"


def test_render_never_fails_on_odd_input():
    text = "\t\xff\udcfe\n"
    d = error("K0001", Span(1, 3), "invalid UTF-8 in source")
    assert "K0001" in render(d, text)
    d = error("K0106", Span(len(text.encode("utf-8", "surrogateescape")), 9999), "at end")
    assert "K0106" in render(d, text)


def test_python_m_kera_core_flushes_output_and_exit_code_before_its_fast_exit(tmp_path):
    """`kera check` ends the process right after flushing (no interpreter teardown): its
    report and status are still all there, through a pipe too."""
    bad = tmp_path / "bad.kera"
    bad.write_text("fn f() -> i64 { y }\n")
    cmd = [sys.executable, "-m", "kera_core", "check", str(SAXPY), str(bad)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1
    assert "K0201" in r.stderr and r.stdout == "checked 2 files: errors found\n"
    json_cmd = [*cmd[:4], "--format", "json", *cmd[4:]]
    r = subprocess.run(json_cmd, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and json.loads(r.stdout)[0]["code"] == "K0201"
