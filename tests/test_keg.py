"""The `.keg` file: round trips, canonical bytes, provenance, and the command line."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pytest

from kera_core.analysis import analyze
from kera_core.cli import keg as cli_keg
from kera_core.cli.inputs import UsageError
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import FnProvenance, Provenance
from kera_core.keg import MAGIC, fingerprint_lines_of, is_keg, read_keg, write_keg
from kera_core.keg.writer import canonical_order

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))


def lowered(path: Path):
    a = analyze(path.read_text(encoding="utf-8"))
    assert not a.has_errors
    return a.module.graph, a.module.provenance


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_round_trip(path: Path) -> None:
    g, prov = lowered(path)
    data = write_keg(g, prov)
    assert data.startswith(MAGIC) and is_keg(data)
    k = read_keg(data)
    assert k.graph.fingerprint() == g.fingerprint() == k.fingerprint
    assert set(k.graph.functions) == set(g.functions)
    for name, f in g.functions.items():
        assert k.graph.functions[name].hash == f.hash
        assert k.graph.functions[name].outputs == f.outputs
        assert k.graph.functions[name].exported == f.exported
    # the written node set is exactly what the functions reach (examples have no dead nodes)
    assert set(k.graph.nodes) == set(g.nodes)
    assert set(k.graph.regions) == set(g.regions)
    assert write_keg(k.graph, k.provenance) == data
    assert write_keg(g, prov) == data  # deterministic


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_read_graphs_pass_the_invariant_validator(path: Path) -> None:
    verify = pytest.importorskip("kera_core.ir.verify").verify
    g, _ = lowered(path)
    assert verify(read_keg(write_keg(g)).graph) == []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_provenance_round_trips(path: Path) -> None:
    g, prov = lowered(path)
    k = read_keg(write_keg(g, prov))
    assert k.provenance is not None
    assert set(k.provenance.functions) == set(prov.functions)
    for name, fp in prov.functions.items():
        got = k.provenance.functions[name]
        kept = {h: s for h, s in fp.node_spans.items() if h in k.graph.nodes}
        assert got.node_spans == kept
        assert got.node_names == {h: n for h, n in fp.node_names.items() if h in k.graph.nodes}
        assert (got.span, got.name_span, got.dim_names, got.param_names, got.doc) == (
            fp.span,
            fp.name_span,
            fp.dim_names,
            fp.param_names,
            fp.doc,
        )
    assert read_keg(write_keg(g)).provenance is None


def test_provenance_does_not_change_identity() -> None:
    g, prov = lowered(ROOT / "examples" / "pid.kera")
    with_prov, bare = write_keg(g, prov), write_keg(g)
    assert len(with_prov) > len(bare)
    assert read_keg(with_prov).fingerprint == read_keg(bare).fingerprint
    assert write_keg(read_keg(with_prov).graph) == bare


def test_provenance_text_with_undecodable_bytes_round_trips() -> None:
    g, _ = lowered(ROOT / "examples" / "saxpy.kera")
    from kera_core.source import Span, decode

    weird = decode(b"doc \xff\xfe caf\xc3\xa9")
    prov = Provenance(
        {"saxpy": FnProvenance("saxpy", Span(0, 10), Span(3, 8), ("N",), ("a",), doc=weird)}
    )
    k = read_keg(write_keg(g, prov))
    assert k.provenance.functions["saxpy"].doc == weird


def _shuffled(g: Graph, seed: int) -> Graph:
    rnd = random.Random(seed)
    out = Graph()
    for attr in ("nodes", "regions", "functions"):
        items = list(getattr(g, attr).items())
        rnd.shuffle(items)
        getattr(out, attr).update(items)
    return out


@pytest.mark.parametrize("path", EXAMPLES[:4], ids=lambda p: p.name)
def test_bytes_do_not_depend_on_insertion_order(path: Path) -> None:
    g, prov = lowered(path)
    shuffled_prov = Provenance(dict(reversed(list(prov.functions.items()))))
    for fp in shuffled_prov.functions.values():
        fp.node_spans = dict(reversed(list(fp.node_spans.items())))
    want = write_keg(g, prov)
    for seed in range(3):
        assert write_keg(_shuffled(g, seed), shuffled_prov) == want


def test_equivalent_sources_give_identical_files() -> None:
    a = "pub fn f(a: f32, b: f32) -> f32 { let s = a + b; s * s }\nfn g() -> i64 { 1 }\n"
    b = "fn g() -> i64 {\n    1\n}\n\n// comment\npub fn f(x: f32, y: f32) -> f32 {\n    let t = x + y;\n    t * t\n}\n"
    ga, gb = analyze(a).module.graph, analyze(b).module.graph
    assert write_keg(ga) == write_keg(gb)


def test_dead_nodes_are_not_written() -> None:
    g, prov = lowered(ROOT / "examples" / "dot.kera")
    from kera_core.ir.node import Node
    from kera_core.ir.types import I64

    dead = g.add(Node("const", (), (I64,), {"type": I64, "value": 12345}))
    data = write_keg(g, prov)
    k = read_keg(data)
    assert dead.hash not in k.graph.nodes
    assert k.graph.fingerprint() == g.fingerprint()


def test_canonical_order_puts_uses_after_definitions() -> None:
    g, _ = lowered(ROOT / "examples" / "particles.kera")
    nodes, regions = canonical_order(g)
    pos = {n.hash: i for i, n in enumerate(nodes)}
    yields = {r.hash: [pos[v.node] for v in r.yields] for r in regions}
    for i, n in enumerate(nodes):
        assert all(pos[v.node] < i for v in n.inputs)
        assert all(max(yields[r], default=-1) < i for r in n.regions)


def test_deep_chain_does_not_recurse() -> None:
    """A 3000-deep chain of additions is written and read without RecursionError."""
    body = "\n".join(f"    let v{i} = v{i - 1} + 1.0;" for i in range(1, 3000))
    src = f"pub fn f(a: f32) -> f32 {{\n    let v0 = a;\n{body}\n    v2999\n}}\n"
    g = analyze(src).module.graph
    assert read_keg(write_keg(g)).fingerprint == g.fingerprint()


def test_writer_rejects_an_incomplete_graph() -> None:
    g, _ = lowered(ROOT / "examples" / "saxpy.kera")
    g.nodes.pop(next(iter(g.nodes)))
    with pytest.raises(ValueError, match="incomplete"):
        write_keg(g)


# --- command line ------------------------------------------------------------------------
def run(argv: list[str]) -> int:
    """What `kera` does with these arguments once `build` is registered (as cli.main does)."""
    ap = argparse.ArgumentParser(prog="kera")
    sub = ap.add_subparsers(dest="command")
    cli_keg.register(sub)
    args = ap.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError:
        return 2


def test_build_writes_a_keg(tmp_path: Path, capsys) -> None:
    out = tmp_path / "saxpy.keg"
    assert run(["build", str(ROOT / "examples" / "saxpy.kera"), "-o", str(out)]) == 0
    g, prov = lowered(ROOT / "examples" / "saxpy.kera")
    assert out.read_bytes() == write_keg(g, prov)
    assert g.fingerprint().hex() in capsys.readouterr().err
    bare = tmp_path / "bare.keg"
    assert run(["build", str(out), "--no-provenance", "-o", str(bare)]) == 0
    assert bare.read_bytes() == write_keg(g)


def test_build_default_output_name(tmp_path: Path) -> None:
    src = tmp_path / "p.kera"
    src.write_text("pub fn f(a: f32) -> f32 { a }\n")
    assert run(["build", str(src), "--target", "keg"]) == 0
    assert is_keg((tmp_path / "p.keg").read_bytes())


def test_build_exit_codes(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.kera"
    bad.write_text("pub fn f(a: f32) -> f32 { a + true }\n")
    assert run(["build", str(bad), "-o", str(tmp_path / "x.keg")]) == 1
    assert "error" in capsys.readouterr().err
    assert not (tmp_path / "x.keg").exists()
    ok = str(ROOT / "examples" / "saxpy.kera")
    assert run(["build", ok, "--target", "wasm", "-o", str(tmp_path / "y")]) == 2
    assert run(["build", str(tmp_path / "missing.kera")]) == 2
    assert run(["build", "-"]) == 2  # stdin needs -o
    assert run(["build", ok, "-o", str(tmp_path / "no" / "such" / "dir.keg")]) == 2
    with pytest.raises(SystemExit) as e:
        run(["build"])
    assert e.value.code == 2


def test_check_target() -> None:
    assert cli_keg.check_target("keg") == "keg"
    with pytest.raises(UsageError, match="known: .*keg"):
        cli_keg.check_target("no-such-target")


def test_load_module_or_keg_and_fingerprint_lines(tmp_path: Path, capsys) -> None:
    src = ROOT / "examples" / "pid.kera"
    out = tmp_path / "pid.keg"
    assert run(["build", str(src), "-o", str(out)]) == 0
    g1, p1 = cli_keg.load_module_or_keg(str(src))
    g2, p2 = cli_keg.load_module_or_keg(str(out))
    assert g1.fingerprint() == g2.fingerprint()
    assert p2 is not None and set(p2.functions) == set(p1.functions)
    lines = cli_keg.fingerprint_lines(str(out))
    assert lines == fingerprint_lines_of(g1)
    assert lines[0] == f"sha3-256:{g1.fingerprint().hex()}"
    assert cli_keg.fingerprint_lines(str(src)) is None
    # the same lines as `kera fingerprint pid.kera`
    from kera_core.cli import main

    capsys.readouterr()
    assert main(["fingerprint", str(src)]) == 0
    assert capsys.readouterr().out.splitlines() == lines


def test_corrupt_keg_is_reported_not_raised(tmp_path: Path, capsys) -> None:
    g, _ = lowered(ROOT / "examples" / "saxpy.kera")
    data = bytearray(write_keg(g))
    data[-3] ^= 0x40
    bad = tmp_path / "bad.keg"
    bad.write_bytes(bytes(data))
    assert cli_keg.load_module_or_keg(str(bad)) is None
    err = capsys.readouterr().err
    assert "invalid .keg file: checksum" in err and "byte" in err
    assert run(["build", str(bad), "-o", str(tmp_path / "out.keg")]) == 1
    # a file named .keg without the magic is still judged as a .keg
    fake = tmp_path / "fake.keg"
    fake.write_text("pub fn f() {}\n")
    assert cli_keg.load_module_or_keg(str(fake)) is None
    assert "magic" in capsys.readouterr().err
