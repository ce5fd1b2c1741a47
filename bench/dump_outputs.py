"""Dump every observable output of the checker over a fixed set of texts, to compare checkouts.

    PYTHONPATH=<checkout> python bench/dump_outputs.py OUT [--quick]

Run it once with the old checkout and once with the new one first on ``PYTHONPATH`` (the
texts come from the folder this file lives in, so both runs see the same inputs) and
``cmp`` the two files:
a performance change must leave every byte alone. Per text it writes

* the diagnostics of ``analyze`` (what ``kera check`` reports), as JSON;
* per function, its diagnostics, expression types and name uses (what the IDE reads);
* ``graph_json`` of the whole graph (what ``kera graph --json`` prints) and the
  fingerprint lines (what ``kera fingerprint`` prints);

and for some texts a sequence of random edits through a workspace :class:`Document` (the
language server's incremental path: reparse, cached lowering, deferred callers, cached
ownership), with the diagnostics and fingerprint after each edit.

The texts: the examples, ``tests/corpus``, ``tests/ownership_corpus``, ``tests/fmt_cases``,
every string in ``tests/*.py`` that looks like a Kera program, ``bench/shapes.py`` forms at
several sizes, the 5k- and 20k-line benchmark files, one 1,500-line function (with edits in
it), and seeded random mutations of the examples (deleted, duplicated and inserted tokens)
for programs with errors.
"""

from __future__ import annotations

import argparse
import ast as pyast
import dataclasses
import hashlib
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after PYTHONPATH: the checkout under test comes first

from bench import shapes  # noqa: E402
from bench.corpus import generate, long_function  # noqa: E402
from kera_core.analysis import analyze  # noqa: E402
from kera_core.diagnostics import render_json  # noqa: E402
from kera_core.ir.view import graph_json  # noqa: E402
from kera_core.keg import fingerprint_lines_of  # noqa: E402
from kera_core.source import Span  # noqa: E402
from kera_core.stack import deep_recursion  # noqa: E402
from kera_core.workspace import Document  # noqa: E402

_SNIPPETS = ["x", "1", "1.5", ";", "{", "}", "(", ")", "+", "let y = 2;", "return", "&mut ",
             "f32", "[", "]", ",", "for i in 0..4 { }", "if x { 1 } else { 2 }", "fn", " "]  # fmt: skip


def texts(quick: bool) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    examples = sorted((ROOT / "examples").glob("*.kera"))
    out += [(f"examples/{p.name}", p.read_text()) for p in examples]
    for folder in ("tests/corpus", "tests/ownership_corpus", "tests/fmt_cases"):
        for p in sorted((ROOT / folder).rglob("*")):
            if p.is_file() and p.suffix in (".kera", ".in", ""):
                out.append((str(p.relative_to(ROOT)), p.read_text(errors="surrogateescape")))
    for p in sorted((ROOT / "tests").glob("*.py")):
        for node in pyast.walk(pyast.parse(p.read_text())):
            if isinstance(node, pyast.Constant) and isinstance(node.value, str):
                s = node.value
                if "fn " in s and "{" in s and len(s) < 20_000:
                    out.append((f"{p.name}:{node.lineno}", s))
    sizes = (1, 3, 40) if quick else (1, 3, 40, 400)
    for group in (shapes.NESTED, shapes.CHAINS):
        for name, make in sorted(group.items()):
            for n in sizes:
                out.append((f"shape {name} {n}", make(n)))
    out.append(("generate(5000)", generate(5000)))
    out.append(("long_function(1500)", long_function(1500)))  # one body, thousands of locals
    if not quick:
        out.append(("generate(20000)", generate(20000)))
    rng = random.Random(17)
    sources = [p.read_text() for p in examples]
    for i in range(300 if quick else 3000):
        text = rng.choice(sources)
        for _ in range(rng.randint(1, 4)):
            text = _mutate(rng, text)
        out.append((f"mutant {i}", text))
    return out


def _mutate(rng: random.Random, text: str) -> str:
    if not text:
        return rng.choice(_SNIPPETS)
    i = rng.randrange(len(text))
    j = min(len(text), i + rng.randint(1, 12))
    r = rng.random()
    if r < 0.35:
        return text[:i] + text[j:]
    if r < 0.6:
        return text[:i] + text[i:j] + text[i:]
    return text[:i] + rng.choice(_SNIPPETS) + text[i:]


def _type(t) -> str:
    """A type's dataclass repr (the error and never types, not dataclasses, by class name)."""
    return repr(t) if dataclasses.is_dataclass(t) else type(t).__name__


def dump_text(name: str, text: str, w) -> None:
    w(f"=== {name}\n")
    a = analyze(text)
    w(render_json(a.diagnostics, text, name) + "\n")
    m = a.module
    for fname, lf in m.functions.items():
        w(f"-- fn {fname}\n")
        w(repr(lf.diagnostics) + "\n")
        types = sorted(lf.expr_types.items(), key=lambda kv: (kv[0][0], kv[0][1], int(kv[0][2])))
        w(repr([(k, _type(t)) for k, t in types]) + "\n")
        w(repr(list(lf.uses)) + "\n")
    w(graph_json(m.graph, m.provenance) + "\n")
    w("\n".join(fingerprint_lines_of(m.graph)) + "\n")


def dump_edits(name: str, text: str, w, rng: random.Random, n: int) -> None:
    w(f"=== edits {name}\n")
    doc = Document("file:///dump.kera", text)
    for v in range(1, n + 1):
        t = doc.text
        i = rng.randrange(len(t) + 1)
        r = rng.random()
        if r < 0.4 and i < len(t):
            doc.edit(Span(i, i + 1), "")  # ASCII texts: byte offsets are string offsets
        elif r < 0.8:
            doc.edit(Span(i, i), rng.choice("x1;{} +(),"))
        else:
            doc.edit(Span(i, i), rng.choice(_SNIPPETS))
        doc.version = v
        a = doc.analysis()
        w(f"-- {v} {i}\n")
        w(render_json(a.diagnostics, doc.text, name) + "\n")
        if a.module is not None:
            w(a.module.graph.fingerprint().hex() + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true", help="fewer and smaller texts")
    args = ap.parse_args()
    items = texts(args.quick)
    digest = hashlib.sha256()
    with open(args.out, "w", encoding="utf-8", errors="surrogateescape") as fh, deep_recursion():

        def w(s: str) -> None:
            fh.write(s)
            digest.update(s.encode("utf-8", "surrogateescape"))

        for name, text in items:
            dump_text(name, text, w)
        rng = random.Random(18)
        for name, text in items:
            if name.startswith("examples/") and text.isascii():
                dump_edits(name, text, w, rng, 40)
        dump_edits("generate(5000)", generate(5000), w, rng, 10 if args.quick else 60)
        dump_edits("long_function(600)", long_function(600), w, rng, 6 if args.quick else 30)
    import kera_core

    print(
        f"{len(items)} texts through {Path(kera_core.__file__).parent}, sha256 {digest.hexdigest()}"
    )


if __name__ == "__main__":
    main()
