"""Depth: every form, nested past the parser's limit or chained far past Python's default
stack, gets an answer or K0108 from every stage — never a RecursionError, a K0901 or a
traceback (parse, check, format, the workspace, every IDE query, the CLI)."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import pytest

from bench.shapes import CHAINS, DEEP_CHAINS, NESTED
from kera_core.analysis import analyze
from kera_core.cli import main
from kera_core.fmt import format_text
from kera_core.ide import completion, hover, inlay, navigation, outline, signature, tokens
from kera_core.ide.outline import MAX_SELECTION_LEVELS
from kera_core.source import Span
from kera_core.syntax.parse import parse
from kera_core.syntax.parser.parser import MAX_DEPTH
from kera_core.workspace import Workspace

NESTED_N = 3 * MAX_DEPTH
CHAIN_N = 1500  # several frames per level: far past CPython's default limit of 1000
LONG_N = 300  # shapes that are long but not deep


def codes(diags) -> set[str]:
    return {d.code for d in diags}


def every_stage(src: str, tmp_path, run: bool = False) -> set[str]:
    """Run src through every entry point; return the analysis' diagnostic codes."""
    assert sys.getrecursionlimit() <= 1000 + 100  # the stages bring their own room
    a = analyze(src)
    assert "K0901" not in codes(a.diagnostics)
    f = format_text(src)
    assert "K0901" not in codes(f.diagnostics), f.diagnostics
    doc = Workspace().open("file:///deep.kera", src)
    wa = doc.analysis()
    assert codes(wa.diagnostics) == codes(a.diagnostics)
    size = len(src.encode())
    offsets = sorted({0, size // 3, size // 2, (3 * size) // 4, max(size - 3, 0)})
    outline.document_symbols(wa)
    outline.folding_ranges(wa)
    tokens.semantic_tokens(wa)
    inlay.inlay_hints(wa, Span(0, size))
    for off in offsets:
        chain = outline.selection_chain(wa, off)
        assert 1 <= len(chain) <= MAX_SELECTION_LEVELS
        assert chain[-1].covers(chain[0])
        nested = None
        for s in reversed(chain):  # the shape the server serialises
            nested = {"range": [s.start, s.end], "parent": nested}
        json.dumps(nested)
        hover.hover(wa, off, doc)
        navigation.references(wa, off)
        completion.complete(wa, off)
        signature.signature_help(wa, off)
    path = tmp_path / "deep.kera"
    path.write_text(src)
    commands = [["check", path], ["fingerprint", path], ["graph", path, "--json"]]
    # the graph is as deep as the tree: the interpreter, optimizer and wasm walk it
    if run and not any(d.is_error for d in a.diagnostics):
        commands += [["run", path, "--entry", "f", "--target", "all"], ["opt", path]]
    for args in commands:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = main([str(x) for x in args])
        assert rc in (0, 1), out.getvalue()[-500:]
        assert "Traceback" not in out.getvalue() and "K0901" not in out.getvalue()
    return codes(a.diagnostics)


@pytest.mark.parametrize("form", sorted(NESTED))
def test_nesting_past_the_limit(form: str, tmp_path) -> None:
    src = NESTED[form](NESTED_N)
    every_stage(src, tmp_path)
    found = codes(parse(src).diagnostics)
    assert "K0108" in found, form
    assert "K0109" not in found, form  # unwinding the levels is progress, not a stuck rule


@pytest.mark.parametrize("form", sorted(NESTED))
def test_nesting_within_the_limit_is_accepted_by_the_parser(form: str) -> None:
    src = NESTED[form](MAX_DEPTH // 3)
    assert "K0108" not in codes(parse(src).diagnostics)


@pytest.mark.parametrize("form", sorted(CHAINS))
def test_long_chains_are_analysed(form: str, tmp_path) -> None:
    """Chains are not nesting: they are accepted at any length the passes have room for."""
    deep = form in DEEP_CHAINS
    src = CHAINS[form](CHAIN_N if deep else LONG_N)
    found = every_stage(src, tmp_path, run=deep and "pub fn f(a: i64)" in src)
    assert "K0108" not in found, form
