"""Modules (language.md, "Modules"): `use` and `pub` across the files of a package.

Hashes follow calls, not files or import names (moving a function to another file, or
importing it under another name, changes no hash and not the fingerprint); resolution
errors (K0209–K0213), cycles of constants across files (K0315) and clashing exports
(K0202) are diagnostics with a span and, where the cause is in another file, a note there;
recursion across files hashes, runs and stops at the depth limit as within one file; a
package runs bit-identically on every runnable target; the CLI takes a directory or a
manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.cli import main
from kera_core.interp.api import run_function
from kera_core.ir.cycles import RECURSION_LIMIT
from kera_core.ir.verify import verify
from kera_core.manifest import ManifestError, load_package, module_name
from kera_core.sema import package as package_module
from kera_core.sema.package import SourceUnit, analyze_package
from kera_core.targets import run_module
from tests.outcomes import outcome, runnable_target

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pkg"

LINALG = """\
pub fn axpy[N](a: f32, x: &f32[N], y: &mut f32[N]) {
    for i in 0..N {
        y[i] = y[i] + scale(a, x[i]);
    }
}

fn scale(a: f32, v: f32) -> f32 {
    a * v
}

pub struct Point {
    pub x: f32,
    pub y: f32,
}

pub fn norm2<T: Float>[N](x: &T[N]) -> T {
    dot(x, x)
}
"""
MAIN = """\
use linalg::{axpy, Point, norm2};

pub fn run[N](x: &f32[N], y: &mut f32[N]) -> f32 {
    axpy(2.0, x, y);
    norm2(y)
}

pub fn len2(p: Point) -> f32 {
    p.x * p.x + p.y * p.y
}
"""
# the same program in one file: `run` calls the same `axpy`, `scale` and `norm2`
ONE_FILE = LINALG + "\n" + MAIN.split("\n", 2)[2]


def package(files: dict[str, str], name: str = "test"):
    units = [SourceUnit(module_name(p), p, t) for p, t in sorted(files.items())]
    return analyze_package(name, units)


def clean(files: dict[str, str]):
    pkg = package(files)
    errors = [(m, d.code, d.message) for m, r in pkg.modules.items() for d in r.diagnostics]
    assert not errors, errors
    return pkg


def hashes(graph) -> dict[str, bytes]:
    """Function hashes by name, a private function's module prefix left out."""
    return {n.rsplit("::", 1)[-1]: f.hash for n, f in graph.functions.items()}


def codes(pkg, module: str) -> list[str]:
    return [d.code for d in pkg.modules[module].diagnostics]


# --- hashing ------------------------------------------------------------------------


def test_moving_functions_to_another_file_keeps_every_hash():
    one = analyze(ONE_FILE)
    assert not one.has_errors, one.diagnostics
    pkg = clean({"linalg.kera": LINALG, "main.kera": MAIN})
    assert hashes(pkg.graph) == hashes(one.module.graph)
    assert pkg.graph.fingerprint() == one.module.fingerprint
    # the package's interface is its `pub` functions; a private one is `module::name`
    assert sorted(f.name for f in pkg.graph.exported()) == sorted(
        f.name for f in one.module.graph.exported()
    )
    assert "linalg::scale" in pkg.graph.functions


def test_the_import_alias_and_the_file_layout_change_no_hash():
    base = clean({"linalg.kera": LINALG, "main.kera": MAIN})
    aliased = MAIN.replace(
        "use linalg::{axpy, Point, norm2};", "use linalg::{axpy as ax, Point as P, norm2 as n2};"
    )
    aliased = aliased.replace("axpy(", "ax(").replace("norm2(", "n2(").replace("p: Point", "p: P")
    # and `linalg` moved to a nested module, `scale` to a third file
    helper = "pub fn scale(a: f32, v: f32) -> f32 {\n    a * v\n}\n"
    linalg = "use util::scale;\n\n" + LINALG.replace(helper.replace("pub ", ""), "")
    moved = clean(
        {
            "math/linalg.kera": linalg,
            "util.kera": helper,
            "main.kera": aliased.replace("use linalg::", "use math::linalg::"),
        }
    )
    assert hashes(moved.graph) == hashes(base.graph)
    # `scale` is `pub` now, so the interface (and the fingerprint) has one more function
    assert moved.graph.functions["scale"].hash == base.graph.functions["linalg::scale"].hash


def test_a_callee_change_in_another_file_changes_its_callers():
    base = clean({"linalg.kera": LINALG, "main.kera": MAIN})
    edited = clean({"linalg.kera": LINALG.replace("a * v", "v * a"), "main.kera": MAIN})
    assert edited.graph.functions["axpy"].hash != base.graph.functions["axpy"].hash
    assert edited.graph.functions["run"].hash != base.graph.functions["run"].hash
    assert edited.graph.functions["len2"].hash == base.graph.functions["len2"].hash


def test_modules_that_import_each_other_without_recursion():
    a = "use b::twice;\n\npub fn quad(x: f32) -> f32 {\n    twice(twice(x))\n}\n\npub fn one() -> f32 {\n    1.0\n}\n"
    b = "use a::one;\n\npub fn twice(x: f32) -> f32 {\n    x * 2.0 * one()\n}\n"
    pkg = clean({"a.kera": a, "b.kera": b})
    single = analyze(
        "pub fn one() -> f32 {\n    1.0\n}\n\npub fn twice(x: f32) -> f32 {\n    x * 2.0 * one()\n}\n\n"
        "pub fn quad(x: f32) -> f32 {\n    twice(twice(x))\n}\n"
    )
    assert hashes(pkg.graph) == hashes(single.module.graph)


# --- diagnostics --------------------------------------------------------------------


def test_resolution_errors_have_codes_spans_and_notes():
    main = (
        "use linalg::{scale, nothing, axpy};\n"
        "use linalgg::axpy;\n"
        "use linalg::Point as axpy;\n"
        "use linalg::norm2 as run;\n"
        "use main::run;\n\n"
        "pub fn run(x: f32) -> f32 {\n    scale(x, x)\n}\n"
    )
    pkg = package({"linalg.kera": LINALG, "main.kera": main})
    diags = {(d.code, main[d.span.start : d.span.end]): d for d in pkg.modules["main"].diagnostics}
    assert set(diags) == {
        ("K0211", "scale"),  # private: still resolved, so `scale(x, x)` gets nothing more
        ("K0210", "nothing"),
        ("K0209", "linalgg"),
        ("K0212", "axpy"),
        ("K0213", "run"),
        ("K0209", "main"),
    }
    private = diags[("K0211", "scale")]
    (note,) = private.related
    assert note.path == "linalg.kera"
    assert LINALG[note.span.start : note.span.end] == "scale"
    assert "did you mean `linalg`" in diags[("K0209", "linalgg")].message
    assert diags[("K0212", "axpy")].related[0].span.start == main.index("axpy")
    assert pkg.has_errors and codes(pkg, "linalg") == []


# --- constants ----------------------------------------------------------------------

LIMITS = "pub const BASE: i32 = 3;\npub const LIMIT: i32 = BASE * 2 + 1;\nconst HALF: f32 = 0.5;\npub const SCALE: f32 = HALF * 4.0;\n"
USER = """\
const TOP: i32 = LIMIT + 1;

pub fn f(x: f32) -> f32 {
    let BASE = 100;
    x * SCALE + (LIMIT as f32) + (TOP as f32) + (BASE as f32)
}

pub fn g(x: &f32[LIMIT]) -> f32 {
    sum(x)
}
"""


def test_an_imported_constant_hashes_as_one_of_the_same_file():
    one = analyze(LIMITS + "\n" + USER)
    assert not one.has_errors, one.diagnostics
    pkg = clean({"limits.kera": LIMITS, "main.kera": "use limits::{LIMIT, SCALE};\n\n" + USER})
    assert hashes(pkg.graph) == hashes(one.module.graph)
    # under another name, from a nested module: the same hashes again
    aliased = USER.replace("SCALE", "S").replace("LIMIT", "L")
    moved = clean(
        {"a/k.kera": LIMITS, "main.kera": "use a::k::{LIMIT as L, SCALE as S};\n\n" + aliased}
    )
    assert hashes(moved.graph) == hashes(one.module.graph)
    # the value: its initializer's `BASE` is the constant, never the caller's `let BASE`
    inputs = {"x": np.float32(2.0)}
    got = run_function(pkg, "f", inputs)
    assert got.digest_entries() == run_function(one.module, "f", inputs).digest_entries()
    assert float(got.outputs[0].value) == 2.0 * 2.0 + 7 + 8 + 100
    # a dimension constant from another file
    assert "f32[7]" in str(pkg.modules["main"].module.env.fns["g"].type)


def test_a_constant_change_in_another_file_changes_its_users():
    base = clean({"limits.kera": LIMITS, "main.kera": "use limits::{LIMIT, SCALE};\n\n" + USER})
    edited = clean(
        {
            "limits.kera": LIMITS.replace("BASE: i32 = 3", "BASE: i32 = 4"),
            "main.kera": "use limits::{LIMIT, SCALE};\n\n" + USER,
        }
    )
    assert edited.graph.functions["f"].hash != base.graph.functions["f"].hash


def test_constant_import_errors():
    lib = "const P: i32 = 1;\npub const BAD: i32 = 1 / 0;\npub const F: f32 = 1.5;\n"
    main = "use c::{P, BAD, F};\n\npub fn f() -> i32 {\n    P + BAD + BAD\n}\n\npub fn g() -> i32 {\n    F\n}\n"
    pkg = package({"c.kera": lib, "main.kera": main})
    assert codes(pkg, "c") == ["K0317"]  # reported once, on the constant, not at its uses
    got = [(d.code, main[d.span.start : d.span.end]) for d in pkg.modules["main"].diagnostics]
    assert got == [("K0211", "P"), ("K0309", "F")]


def test_a_cycle_of_constants_across_files_is_k0315_with_a_note():
    a = "use b::Y;\n\npub const X: i32 = Y + 1;\n"
    b = "use a::X;\n\npub const Y: i32 = X * 2;\npub const Z: i32 = 4;\n"
    pkg = package({"a.kera": a, "b.kera": b})
    for m, text, ref in (("a", a, "Y"), ("b", b, "X")):
        (d,) = pkg.modules[m].diagnostics
        assert d.code == "K0315" and text[d.span.start : d.span.end] == ref
        assert "refers to itself" in d.message and d.related[0].path == f"{'ab'.strip(m)}.kera"


def test_a_failed_import_is_reported_once_not_at_each_use():
    main = (
        "use linalg::{nothing, Pointt, LIM};\n"
        "use nomod::{a, b as bee};\n\n"
        "pub fn f(x: f32) -> f32 {\n"
        "    let p = Pointt { x: 1.0, y: 2.0 };\n"
        "    nothing(x) + nothing(x) + LIM + a(x) + bee\n"
        "}\n\n"
        "pub fn g(p: Pointt) -> f32 {\n    1.0\n}\n\n"
        "pub fn h() -> f32 {\n    unknown(1.0)\n}\n"
    )
    pkg = package({"linalg.kera": LINALG, "main.kera": main})
    got = [(d.code, main[d.span.start : d.span.end]) for d in pkg.modules["main"].diagnostics]
    assert got == [
        ("K0210", "nothing"),
        ("K0210", "Pointt"),
        ("K0210", "LIM"),
        ("K0209", "nomod"),
        ("K0205", "unknown"),  # a name no `use` declares is still reported
    ]


# a mutual recursion, one file: `is_even` and `is_odd` call each other and `step` (outside
# the component); `parity` calls into it
EVEN = """\
pub fn is_even(n: i64) -> bool {
    if n == 0 {
        return true;
    }
    is_odd(step(n))
}
"""
ODD = """\
pub fn is_odd(n: i64) -> bool {
    if n == 0 {
        return false;
    }
    is_even(step(n))
}
"""
STEP = "pub fn step(n: i64) -> i64 {\n    n - 1\n}\n"
PARITY = "pub fn parity(n: i64) -> bool {\n    is_even(n)\n}\n"
RECURSIVE = "\n".join([EVEN, ODD, STEP, PARITY])
# the same program in three files: the component crosses two of them
SPLIT = {
    "a.kera": "use b::is_odd;\nuse util::step;\n\n" + EVEN + "\n" + PARITY,
    "b.kera": "use a::is_even as even;\nuse util::step;\n\n" + ODD.replace("is_even(", "even("),
    "util.kera": STEP,
}


def test_recursion_across_files_hashes_as_in_one_file():
    one = analyzed_one(RECURSIVE)
    pkg = clean(SPLIT)
    assert hashes(pkg.graph) == hashes(one.graph)
    assert pkg.graph.fingerprint() == one.fingerprint
    assert verify(pkg.graph) == []
    even, odd = pkg.graph.functions["is_even"], pkg.graph.functions["is_odd"]
    assert even.component == odd.component is not None and {even.index, odd.index} == {0, 1}
    assert pkg.modules["a"].module.recursive == {"is_even"}
    assert pkg.modules["b"].module.recursive == {"is_odd"}
    # the other member moved instead, and the file order reversed: still the same hashes
    moved = clean(
        {
            "z.kera": "use y::is_even;\nuse util::step;\n\n" + ODD,
            "y.kera": "use z::is_odd;\nuse util::step;\n\n" + EVEN + "\n" + PARITY,
            "util.kera": STEP,
        }
    )
    assert hashes(moved.graph) == hashes(one.graph)
    # a member's body changed in its file: both members' hashes move, `step`'s does not
    edited = clean({**SPLIT, "b.kera": SPLIT["b.kera"].replace("return false", "return n > 1")})
    assert edited.graph.functions["is_even"].hash != pkg.graph.functions["is_even"].hash
    assert edited.graph.functions["is_odd"].hash != pkg.graph.functions["is_odd"].hash
    assert edited.graph.functions["step"].hash == pkg.graph.functions["step"].hash


def analyzed_one(src: str):
    a = analyze(src)
    assert not a.has_errors, a.diagnostics
    return a.module


@pytest.mark.parametrize("tname", ["interp", "wasm", "x86_64", "arm64"])
def test_recursion_across_files_runs_with_the_same_bits_and_depth_limit(tname):
    one = analyzed_one(RECURSIVE)
    pkg = clean(SPLIT)
    for n in (0, 7, 10, RECURSION_LIMIT - 1, RECURSION_LIMIT):
        inputs = {"n": n}
        want = outcome(lambda: run_function(one, "parity", inputs))  # noqa: B023
        assert want == ("error R0012" if n == RECURSION_LIMIT else want)
        if tname == "interp":
            got = outcome(lambda: run_function(pkg, "parity", inputs))  # noqa: B023
        else:
            t = runnable_target(tname)
            got = outcome(lambda: run_module(t, pkg, "parity", inputs))  # noqa: B023
        assert got == want, (tname, n)


def test_a_generic_function_recursive_across_files_is_k0322():
    a = "use b::g;\n\npub fn f<T: Float>(x: T) -> T {\n    g(1.0) as T + x\n}\n"
    b = "use a::f;\n\npub fn g(x: f32) -> f32 {\n    f(x)\n}\n"
    pkg = package({"a.kera": a, "b.kera": b})
    assert "K0322" in codes(pkg, "a"), pkg.modules["a"].diagnostics
    (d,) = [d for d in pkg.modules["a"].diagnostics if d.code == "K0322"]
    assert a[d.span.start : d.span.end] == "g"


def test_a_component_across_files_is_not_lowered_again_by_an_unrelated_edit(monkeypatch):
    caches: dict = {}
    made = []
    real = package_module.lower_component
    monkeypatch.setattr(package_module, "lower_component", lambda ms: made.append(1) or real(ms))

    def lowerings(files):
        units = [SourceUnit(module_name(p), p, t) for p, t in sorted(files.items())]
        made.clear()
        pkg = analyze_package("t", units, caches)
        n = len(made)
        assert not pkg.has_errors
        assert hashes(pkg.graph) == hashes(clean(files).graph)  # as a cold analysis
        return pkg, n

    base, n = lowerings(SPLIT)
    assert n == 1
    again, n = lowerings(SPLIT)
    assert n == 0 and hashes(again.graph) == hashes(base.graph)
    # `parity` edited (in the file of a member): the component's lowering is reused
    edited = {**SPLIT, "a.kera": SPLIT["a.kera"].replace("is_even(n)", "is_even(n + 0)")}
    pkg, n = lowerings(edited)
    assert n == 0 and hashes(pkg.graph)["is_even"] == hashes(base.graph)["is_even"]
    # a member edited, or the function outside it that it calls: lowered again
    edited = {**SPLIT, "b.kera": SPLIT["b.kera"].replace("return false", "return n > 1")}
    pkg, n = lowerings(edited)
    assert n == 1 and hashes(pkg.graph)["is_even"] != hashes(base.graph)["is_even"]
    pkg, n = lowerings({**SPLIT, "util.kera": STEP.replace("n - 1", "n - 2")})
    assert n == 1 and hashes(pkg.graph)["is_even"] != hashes(base.graph)["is_even"]


def test_recursion_across_files_in_the_editor(tmp_path):
    from kera_core.ide import hover
    from kera_core.source import Span
    from kera_core.workspace import Workspace

    for name, text in SPLIT.items():
        (tmp_path / name).write_text(text)
    ws = Workspace()
    text = SPLIT["a.kera"]
    doc = ws.open((tmp_path / "a.kera").as_uri(), text, 1)
    a = doc.analysis()
    assert a.diagnostics == []
    assert "recursive" in hover.hover(a, text.index("is_even"), doc).markdown
    one = analyzed_one(RECURSIVE)
    assert a.module.graph.functions["is_even"].hash == one.graph.functions["is_even"].hash
    # an edit of another function of the file keeps the member's lowering and hash
    at = len(text[: text.index("is_even(n)")].encode())
    doc.edit(Span(at, at + len("is_even(n)")), "is_even(n + 0)")
    doc.version = 2
    a = doc.analysis()
    assert a.diagnostics == []
    assert a.module.graph.functions["is_even"].hash == one.graph.functions["is_even"].hash
    # a member's call made wrong in the editor: the error is reported where it is
    at = len(doc.text[: doc.text.index("is_odd(step(n))")].encode())
    doc.edit(Span(at, at + len("is_odd(step(n))")), "is_odd(true)")
    doc.version = 3
    (d,) = doc.analysis().diagnostics
    assert d.code.startswith("K") and doc.text[d.span.start : d.span.end] == "true", d


def test_two_files_exporting_one_name_is_k0202():
    pkg = package(
        {
            "a.kera": "pub fn f() {}\n",
            "b.kera": "pub fn f() {}\n\nfn g() {}\n",
            "c.kera": "fn g() {}\n",
        }
    )
    assert codes(pkg, "a") == [] and codes(pkg, "b") == ["K0202"] and codes(pkg, "c") == []


def test_a_file_with_use_on_its_own():
    a = analyze("use linalg::axpy;\n\npub fn f() {}\n")
    assert [d.code for d in a.diagnostics] == ["K0209"]
    assert "on its own" in a.diagnostics[0].message


# --- running ------------------------------------------------------------------------


@pytest.mark.parametrize("tname", ["wasm", "x86_64", "arm64"])
def test_a_package_runs_with_the_interpreters_bits(tname):
    t = runnable_target(tname)
    src = load_package(str(EXAMPLE))
    pkg = analyze_package(src.name, src.units)
    assert not pkg.has_errors
    for n in (1, 3, 16):
        x = [((i * 37) % 11 - 5) / 4 for i in range(n)]
        import numpy as np

        inputs = {"x": np.array(x, dtype=np.float32)}
        want = outcome(lambda: run_function(pkg, "analyse", inputs))  # noqa: B023
        assert want.startswith("ok ")
        assert outcome(lambda: run_module(t, pkg, "analyse", inputs)) == want, (tname, n)  # noqa: B023


# --- the manifest and the CLI -------------------------------------------------------


def test_module_names_and_the_manifest(tmp_path):
    assert module_name("a/b.kera") == "a::b"
    src = load_package(str(EXAMPLE))
    assert src.name == "signal"
    assert sorted(u.module for u in src.units) == ["dsp::filters", "main", "stats"]
    (tmp_path / "kera.toml").write_text('[package]\nname = "x"\nentry = "main"\n')
    with pytest.raises(ManifestError, match="unknown key"):
        load_package(str(tmp_path))
    (tmp_path / "kera.toml").write_text("[package\n")
    with pytest.raises(ManifestError, match="invalid TOML"):
        load_package(str(tmp_path))


def test_cli_on_a_directory_and_a_manifest(capsys, tmp_path):
    assert main(["check", str(EXAMPLE)]) == 0
    assert "checked 3 files: ok" in capsys.readouterr().out
    assert main(["fingerprint", str(EXAMPLE / "kera.toml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sha3-256:")
    assert [ln.split()[1] for ln in lines[1:]] == [
        "analyse", "average", "centered", "peak_per_tap", "smooth", "summarize",
    ]  # fmt: skip
    assert main(["graph", str(EXAMPLE), "--fn", "stats::total"]) == 0
    assert "fn stats::total" in capsys.readouterr().out
    assert main(["run", str(EXAMPLE), "--entry", "analyse", "--dims", "N=8"]) == 0
    assert "output result Summary" in capsys.readouterr().out
    # errors: printed under each file's own path, with the note in the other file
    (tmp_path / "lib.kera").write_text("fn hidden() {}\n")
    (tmp_path / "main.kera").write_text("use lib::hidden;\n\npub fn f() {\n    hidden();\n}\n")
    assert main(["check", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"--> {tmp_path / 'main.kera'}:1:10" in err
    assert f"--> {tmp_path / 'lib.kera'}:1:4" in err
    assert main(["check", str(tmp_path), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [(r["code"], Path(r["path"]).name) for r in rows] == [("K0211", "main.kera")]
    assert rows[0]["related"][0]["path"] == str(tmp_path / "lib.kera")
    assert main(["fingerprint", str(tmp_path)]) == 1
    assert main(["check", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_fmt_and_parse_take_a_package(capsys, tmp_path):
    import shutil

    pkg = tmp_path / "pkg"
    shutil.copytree(EXAMPLE, pkg)
    assert main(["fmt", "--check", str(pkg)]) == 0  # every file of the example is formatted
    ugly = pkg / "src" / "ugly.kera"
    ugly.write_text("pub fn   bad( x:f32)->f32{x}\n")
    capsys.readouterr()
    assert main(["fmt", "--check", str(pkg / "kera.toml")]) == 1
    assert capsys.readouterr().err.splitlines() == [f"{ugly}: would reformat"]
    before = (pkg / "src" / "main.kera").read_bytes()
    assert main(["fmt", "--write", str(pkg)]) == 0
    assert capsys.readouterr().err.splitlines() == [f"{ugly}: reformatted"]
    assert ugly.read_text() == "pub fn bad(x: f32) -> f32 {\n    x\n}\n"
    assert (pkg / "src" / "main.kera").read_bytes() == before  # a formatted file is not touched
    assert main(["fmt", "--check", str(pkg)]) == 0
    # parse: every file, in module order; a syntax error in one fails the command
    assert main(["parse", str(pkg)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == [
        str(pkg / "src" / f) for f in ("dsp/filters.kera", "main.kera", "stats.kera", "ugly.kera")
    ]
    assert all(line.endswith(" 0 syntax error(s)") for line in out)
    ugly.write_text("pub fn bad( {\n")
    assert main(["parse", str(pkg)]) == 1
    assert f"--> {ugly}:1:" in capsys.readouterr().err
    assert main(["fmt", "--check", str(pkg)]) == 1  # refused: it does not parse
    assert main(["parse", str(tmp_path / "none")]) == 2
    assert "no such file" in capsys.readouterr().err


# --- the workspace (what the language server asks) --------------------------------


def test_workspace_analyses_a_document_with_its_package(tmp_path):
    from kera_core.ide import completion, hover, navigation
    from kera_core.workspace import Workspace

    (tmp_path / "linalg.kera").write_text(LINALG)
    (tmp_path / "main.kera").write_text(MAIN)
    ws = Workspace()
    main_uri = (tmp_path / "main.kera").as_uri()
    doc = ws.open(main_uri, MAIN, 1)
    a = doc.analysis()
    assert a.diagnostics == []
    call = MAIN.index("axpy(")
    assert navigation.definition_location(a, call) == (
        str(tmp_path / "linalg.kera"),
        navigation.definition_location(a, MAIN.index("axpy"))[1],
    )
    # within the file, the `use` tree is the imported name's definition
    assert navigation.references(a, call) == [
        navigation.definition(a, call),
        navigation.definition(a, call).__class__(call, call + 4),
    ]
    assert "imported from module `linalg`" in hover.hover(a, call, doc).markdown
    # an open document of the package takes precedence over its file, and a change in it
    # is a new analysis of its dependants
    lib_uri = (tmp_path / "linalg.kera").as_uri()
    ws.open(lib_uri, LINALG.replace("pub fn axpy", "fn axpy"), 1)
    assert [d.uri for d in ws.dependants(lib_uri)] == [main_uri]
    assert [d.code for d in doc.analysis().diagnostics] == ["K0211"]
    ws.close(lib_uri)
    assert doc.analysis().diagnostics == []
    # completion in a `use`
    doc2 = ws.open((tmp_path / "third.kera").as_uri(), "use linalg::\n", 1)
    labels = {c.label for c in completion.complete(doc2.analysis(), len("use linalg::"))}
    assert labels == {"axpy", "Point", "norm2"}


def test_an_imported_constant_in_the_editor(tmp_path):
    from kera_core.ide import completion, hover, navigation, package_refs
    from kera_core.workspace import Workspace

    lib = "/// How many.\npub const LIMIT: i32 = 3 * 2;\n"
    main = "use k::LIMIT;\n\npub fn f() -> i32 {\n    LIMIT + LIMIT\n}\n"
    (tmp_path / "k.kera").write_text(lib)
    (tmp_path / "main.kera").write_text(main)
    ws = Workspace()
    doc = ws.open((tmp_path / "main.kera").as_uri(), main, 1)
    a = doc.analysis()
    assert a.diagnostics == []
    at = main.index("LIMIT +")
    path, span = navigation.definition_location(a, at)  # type: ignore[misc]
    assert (path, lib[span.start : span.end]) == (str(tmp_path / "k.kera"), "LIMIT")
    text = hover.hover(a, at, doc).markdown
    assert "const LIMIT: i32 = 3 * 2" in text and "from module `k`" in text
    assert ("LIMIT", "const") in {(c.label, c.kind) for c in completion.complete(a, at)}
    # references and rename reach the defining file and every use here
    occ = package_refs.occurrences(ws, doc, at)
    assert occ is not None and occ.target.kind == "const"
    assert {p: len(s) for p, s in occ.by_path.items()} == {
        str(tmp_path / "k.kera"): 1,
        str(tmp_path / "main.kera"): 3,
    }
    renamed = package_refs.rename(ws, doc, at, "CAP")
    assert {p: len(s) for p, s in renamed.items()} == {  # type: ignore[union-attr]
        str(tmp_path / "k.kera"): 1,
        str(tmp_path / "main.kera"): 3,
    }


def test_a_run_time_error_names_the_file_it_is_in(capsys, tmp_path):
    (tmp_path / "lib.kera").write_text("pub fn at[N](x: &f32[N], i: i64) -> f32 {\n    x[i]\n}\n")
    (tmp_path / "main.kera").write_text(
        "use lib::at;\n\npub fn first[N](x: &f32[N]) -> f32 {\n    at(x, 100)\n}\n"
    )
    assert main(["run", str(tmp_path), "--entry", "first", "--dims", "N=4"]) == 1
    assert f"at {tmp_path / 'lib.kera'}:2:5" in capsys.readouterr().err


def test_semantic_tokens_of_a_use_declaration():
    from kera_core.ide import tokens
    from kera_core.ide.package_calls import analysis_of

    lib = "pub const K: f32 = 2.0;\npub fn h() {}\n"
    main = "use a::c::{K, h as g, zz};\n\npub fn f() -> f32 {\n    g();\n    K\n}\n"
    pkg = package({"a/c.kera": lib, "main.kera": main})
    got = [
        (main[s : s + n], tokens.TOKEN_TYPES[t], m)
        for s, n, t, m in tokens.classify(analysis_of(pkg, "main.kera"))  # type: ignore[arg-type]
        if s < main.index(";")
    ]
    assert got == [
        ("use", "keyword", 0),
        ("a", "namespace", 0),
        ("c", "namespace", 0),
        ("K", "variable", tokens.READONLY),  # a constant, as where it is used
        ("h", "function", 0),
        ("as", "keyword", 0),
        ("g", "function", tokens.DECL),  # the alias declares the local name
    ]  # `zz` (an unknown item) is left unclassified


def test_demo_runs_packages_on_every_target(capsys, tmp_path):
    (tmp_path / "one.kera").write_text("pub fn twice(x: f32) -> f32 {\n    x * 2.0\n}\n")
    lib = tmp_path / "pair"
    (lib / "src").mkdir(parents=True)
    (lib / "kera.toml").write_text('[package]\nname = "pair"\nsrc = "src"\n')
    (lib / "src" / "k.kera").write_text("pub const GAIN: f32 = 1.5;\n")
    (lib / "src" / "main.kera").write_text(
        "use k::GAIN;\n\npub fn gain[N](x: &f32[N]) -> f32[N] {\n    x * GAIN\n}\n"
    )
    (tmp_path / "notes").mkdir()  # a directory without .kera files is not an example
    assert main(["demo", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line[:1].isalpha()}
    assert "pair/" in rows and "one.kera" in rows and "notes/" not in rows
    cells = rows["pair/"].split()
    assert cells[1:4] == ["1", cells[2], "0"] and cells[4] == "clean"
    assert cells[6].startswith("sha3-256:") and cells[7].startswith("sha3-256:")
    names = out.splitlines()[0].split("(seed 1)")[1].split()  # the target columns
    per_target = dict(zip(names, zip(cells[8::2], cells[9::2], strict=True), strict=True))
    for t in ("wasm", "x86_64", "arm64"):  # bit-identical to the interpreter where it runs
        assert per_target[t] in (("1/1", "same"), ("not", "here")), per_target
    assert "2 examples, 0 problem(s)" in out
    # a package with an error is a problem
    (lib / "src" / "main.kera").write_text("use k::GAINS;\n\npub fn f() {}\n")
    assert main(["demo", str(tmp_path)]) == 1
    assert "(errors)" in capsys.readouterr().out
