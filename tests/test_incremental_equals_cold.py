"""Every cache the checker keeps gives what a cold run gives (issue 17).

A document is edited at random (characters and snippets inserted and deleted anywhere,
undos to earlier texts) through the language server's path — incremental reparse, the
per-document lowering cache with deferred callers, cached ownership results, the
per-green-node memos (signatures, call lists, text digests, the kinds below a node) — and
after each edit its analysis must equal ``analyze`` of the same text in a fresh cache:
diagnostics, every function's expression types and uses, the whole graph as
``kera graph --json`` prints it, and the fingerprint.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kera_core.analysis import analyze
from kera_core.ir.view import graph_json
from kera_core.sema import LoweringCache, lower_module
from kera_core.source import Span
from kera_core.syntax.parse import parse
from kera_core.workspace import Document

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.kera"))
PIECES = ["x", "1", "2.5", ";", "{", "}", "(", ")", " + ", "\n", "let q = 2.0;", "&mut ",
          "return ", "f32", "[", "]", ",", "// c", "é"]  # fmt: skip


def _own_types(lf) -> list:
    """A function's expression types, those of its own text only: the types of a constant's
    expression it lowered (elsewhere in the file) are keyed where the constant was when the
    function was lowered, and a reused lowering does not follow the constant when it moves
    (no reader looks them up: ownership and hover ask for expressions of the function)."""
    span = lf.sig.span
    own = [kv for kv in lf.expr_types.items() if span.start <= kv[0][0] <= kv[0][1] <= span.end]
    return sorted(own, key=lambda kv: (kv[0][0], kv[0][1], int(kv[0][2])))


def _observed(module) -> tuple:
    fns = {name: (_own_types(lf), list(lf.uses)) for name, lf in module.functions.items()}
    return fns, graph_json(module.graph, module.provenance), module.graph.fingerprint()


def _same_as_cold(doc: Document) -> None:
    a = doc.analysis()
    ref = analyze(doc.text)
    assert a.diagnostics == ref.diagnostics
    assert a.module is not None
    assert _observed(a.module) == _observed(ref.module)


def _edit(rng: random.Random, doc: Document, version: int) -> None:
    text = doc.text
    i = rng.randrange(len(text) + 1)
    j = min(len(text), i + rng.choice([0, 0, 1, 1, 2, 5]))
    new = rng.choice(PIECES) if rng.random() < 0.7 else ""
    start = len(text[:i].encode("utf-8"))
    end = start + len(text[i:j].encode("utf-8"))
    doc.edit(Span(start, end), new)
    doc.version = version


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_random_edits_match_a_cold_analysis(path):
    rng = random.Random(path.stem)
    text = path.read_text()
    doc = Document(f"file:///{path.name}", text, 1)
    history = [text]
    for version in range(2, 26):
        if rng.random() < 0.1 and len(history) > 2:  # back to an earlier text (an undo)
            doc.replace_text(rng.choice(history))
            doc.version = version
        else:
            _edit(rng, doc, version)
        history.append(doc.text)
        _same_as_cold(doc)


def test_a_shared_lowering_cache_across_texts_matches_fresh_ones():
    """One ``LoweringCache`` fed unrelated texts in turn (its memos see many trees that
    share interned green nodes) answers each exactly as a fresh cache does."""
    rng = random.Random(17)
    cache = LoweringCache()
    texts = [p.read_text() for p in EXAMPLES]
    for _ in range(30):
        text = rng.choice(texts)
        for _ in range(rng.randrange(3)):
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(PIECES) + text[i:]
        p = parse(text)
        shared = lower_module(p, cache)
        fresh = lower_module(parse(text), LoweringCache())
        assert shared.diagnostics == fresh.diagnostics
        assert _observed(shared) == _observed(fresh)


def test_kinds_below_is_the_set_of_kinds_in_the_subtree():
    """``GreenNode.kinds_below`` (computed once per interned node, then read by the passes
    that skip subtrees) names exactly the kinds a full walk finds."""
    rng = random.Random(3)
    texts = [p.read_text() for p in EXAMPLES]
    for _ in range(20):
        text = rng.choice(texts)
        i = rng.randrange(len(text) + 1)
        text = text[:i] + rng.choice(PIECES) + text[i:]
        stack = [parse(text).green]
        while stack:
            g = stack.pop()
            found, walk = 0, [g]
            while walk:
                x = walk.pop()
                found |= 1 << x.kind
                if not x.is_token:
                    walk.extend(x.children)
            assert g.kinds_below() == found
            stack.extend(c for c in g.children if not c.is_token)
