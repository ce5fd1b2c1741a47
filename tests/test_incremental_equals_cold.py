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
import re
from pathlib import Path

import pytest

from kera_core.analysis import analyze
from kera_core.ide import highlight, hover, navigation, tokens, tokens_range
from kera_core.ir.view import graph_json
from kera_core.sema import LoweringCache, lower_module
from kera_core.source import Span
from kera_core.syntax.parse import parse
from kera_core.workspace import Document

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.kera"))
PIECES = ["x", "1", "2.5", ";", "{", "}", "(", ")", " + ", "\n", "let q = 2.0;", "&mut ",
          "return ", "f32", "[", "]", ",", "// c", "é"]  # fmt: skip


def _own_types(lf) -> list:
    """A function's expression types, in source order; all of them lie in its own text."""
    span = lf.sig.span
    own = sorted(lf.expr_types.items(), key=lambda kv: (kv[0][0], kv[0][1], int(kv[0][2])))
    assert all(span.start <= s <= e <= span.end for (s, e, _k), _t in own), lf.sig.name
    assert all(span.covers(u.span) for u in lf.uses), lf.sig.name
    return own


def _observed(module) -> tuple:
    fns = {name: (_own_types(lf), list(lf.uses)) for name, lf in module.functions.items()}
    return fns, graph_json(module.graph, module.provenance), module.graph.fingerprint()


def _same_as_cold(doc: Document) -> None:
    a = doc.analysis()
    ref = analyze(doc.text)
    assert a.diagnostics == ref.diagnostics
    assert a.module is not None
    assert _observed(a.module) == _observed(ref.module)


def _replaced(doc: Document, needle: str, new: str) -> None:
    """The first ``needle`` replaced by ``new`` in a new version, analysed as a cold open
    would be."""
    start = doc.text.index(needle)
    doc.edit(Span(start, start + len(needle)), new)
    doc.version += 1
    _same_as_cold(doc)


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


def _observed_env(module) -> tuple:
    """Everything position-dependent the environment holds (sema/incremental.py makes its
    per-item entries where their item now is, when read)."""
    env = module.env

    def sig(s):
        return (s.name, s.span, s.name_span, list(s.uses), s.type_param_spans, s.type_args,
                s.ast.syntax.offset, s.ast.syntax.index, str(s.ast.syntax), s.doc)  # fmt: skip

    return (
        [(n, sig(s)) for n, s in env.fns.items()],
        [(n, sig(s)) for n, s in env.instances.items()],
        [
            (n, c.span, c.name_span, c.value.span if c.value else None)
            for n, c in env.consts.items()
        ],
        dict(env.struct_spans),
        dict(env.field_spans),
        list(env.uses),
        [
            (n, lf.sig.span, lf.base, lf.diagnostics, lf.provenance.span if lf.provenance else None)
            for n, lf in module.lowered.items()
        ],  # fmt: skip
    )


def _body_keystroke(rng: random.Random, doc: Document, version: int) -> None:
    """One character typed or deleted inside a function body, as when editing code."""
    a = doc.analysis()
    fns = [s for s in a.module.env.fns.values() if s.ast.body is not None]
    body = rng.choice(fns).ast.body.span
    at = rng.randrange(body.start + 1, body.end)
    if rng.random() < 0.3:
        doc.edit(Span(at, at + 1), "")
    else:
        doc.edit(Span(at, at), rng.choice(["1", "x", " ", "/", ".", "é", "\n", "+"]))
    doc.version = version


@pytest.mark.parametrize("lines", [900])
def test_keystrokes_in_bodies_redo_one_function_and_match_a_cold_analysis(lines):
    """The usual keystroke (inside a body) takes the path that redoes one function and
    patches the module (sema/incremental.py): its diagnostics, types, uses, environment and
    — when read — graph equal a cold analysis', also after many such edits in a row (the
    graph is read every 8th, which rebuilds the state from a full lowering), undos, and a
    generated file with generic functions, a duplicate and diagnostics pointing into
    other functions."""
    from bench.corpus import generate

    rng = random.Random(lines)
    text = generate(lines)
    doc = Document("file:///gen.kera", text, 1)
    doc.analysis()
    history = [text]
    for version in range(2, 42):
        if rng.random() < 0.08:
            doc.replace_text(rng.choice(history))
            doc.version = version
        else:
            _body_keystroke(rng, doc, version)
        history.append(doc.text)
        a = doc.analysis()
        ref = analyze(doc.text)
        assert a.diagnostics == ref.diagnostics
        fns = {n: (_own_types(lf), list(lf.uses)) for n, lf in a.module.functions.items()}
        ref_fns = {n: (_own_types(lf), list(lf.uses)) for n, lf in ref.module.functions.items()}
        assert fns == ref_fns
        assert _observed_env(a.module) == _observed_env(ref.module)
        if version % 4 == 0:  # the function at an offset, from the item table (before the
            # graph is read, which replaces the module's tables by a whole lowering's)
            cold = Document("file:///cold.kera", doc.text, 1).analysis()
            size = len(doc.text.encode("utf-8", "surrogatepass"))
            edges = [x for sig in cold.module.env.fns.values() for x in (sig.span.start - 1,
                     sig.span.start, sig.span.end, sig.span.end + 1)]  # fmt: skip
            for off in [*range(0, size + 1, 97), size, *edges]:
                mine, theirs = a.sig_at(off), cold.sig_at(off)
                assert (mine and mine.name) == (theirs and theirs.name), off
        if version % 8 == 0:
            assert _observed(a.module) == _observed(ref.module)
    assert doc.lowerings["function"] > 20  # the path under test was taken


def test_keystrokes_next_to_a_call_cycle_and_a_failing_callee_match_a_cold_analysis():
    """Edits in a function that calls into a call cycle (whose functions are not lowered),
    and edits that make a callee fail to lower and lower again (its callers' shapes change,
    so they are lowered again too), redo only those functions and equal a cold analysis."""
    text = (
        "fn a() -> f32 { b() }\nfn b() -> f32 { a() }\n"
        "fn leaf(x: f32) -> f32 { x * 2.0 }\n"
        "fn mid(x: f32) -> f32 { leaf(x) + 1.0 }\n"
        "fn top() -> f32 { a() + mid(3.0) }\n"
    )
    doc = Document("file:///cycle.kera", text, 1)
    _same_as_cold(doc)
    for needle, new in [
        ("+ mid(3.0)", "+ mid(4.0)"),  # next to a call into the cycle
        ("x * 2.0", "y * 2.0"),  # `leaf` stops lowering: `mid` is lowered again
        ("y * 2.0", "x * 3.0"),  # and starts again
        ("leaf(x) + 1.0", "leaf(x) + 1.5"),
    ]:
        _replaced(doc, needle, new)
    assert doc.lowerings["function"] == 4


def test_a_call_typed_renamed_or_deleted_redoes_the_function_and_matches_a_cold_analysis():
    """A call renamed to an unknown name, to a function lowered before the caller, deleted,
    and typed again changes the caller's calls: it alone is lowered again (the call tables
    patched, sema/incremental.py ``_with_calls``); a call of a function lowered after it, of
    itself, or of a generic function changes the order or the instances, and the module is
    lowered. Each version equals a cold analysis, graph and fingerprint included."""
    text = (
        "fn leaf(x: f32) -> f32 { x * 2.0 }\n"
        "fn other(x: f32) -> f32 { x + 1.0 }\n"
        "fn pick<T>(x: T) -> T { x }\n"
        "fn mid(x: f32) -> f32 { leaf(x) + 1.0 }\n"
        "fn top() -> f32 { mid(3.0) }\n"
        "fn late(x: f32) -> f32 { x * 4.0 }\n"
    )
    doc = Document("file:///calls.kera", text, 1)
    _same_as_cold(doc)
    for needle, new, alone in [
        ("leaf(x) + 1.0", "leafq(x) + 1.0", True),  # an unknown name: a call lost
        ("leafq(x) + 1.0", "other(x) + 1.0", True),  # a function lowered before it: gained
        ("other(x) + 1.0", "1.0", True),  # deleted
        ("{ 1.0 }", "{ leaf(x) + other(x) }", True),  # two typed
        ("leaf(x) + other(x)", "late(x)", False),  # lowered after it: the order changes
        ("late(x)", "leaf(x)", False),  # (the module path, once more)
        ("leaf(x)", "mid(x)", False),  # itself: a cycle
        ("mid(x)", "pick(x)", False),  # a generic function: its instances change
        ("pick(x)", "leaf(x) * 2.0", False),
        ("mid(3.0)", "leaf(3.0)", True),  # `top` loses `mid` and gains `leaf`
    ]:
        before = dict(doc.lowerings)
        _replaced(doc, needle, new)
        if alone:
            assert doc.lowerings["function"] == before["function"] + 1, needle


def test_keystrokes_in_a_generic_body_redo_its_instances_and_match_a_cold_analysis():
    """An edit in a generic function's body lowers each of its instances again and merges
    their diagnostics (an error only some instances have says for which type), without
    lowering the module; the result equals a cold analysis."""
    path = next(p for p in EXAMPLES if p.stem == "generic")
    doc = Document("file:///generic.kera", path.read_text(), 1)
    _same_as_cold(doc)
    for needle, new in [
        ("let mut s = 0.0;", "let mut s = 0.00;"),
        ("s += x[i] * x[i];", "s += x[i] * x[i] * 2.0;"),
        ("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + 1;"),  # an error for every instance
        ("y[i] = a * x[i] + 1;", "y[i] = a * x[i] + y[i] + a;"),
    ]:
        _replaced(doc, needle, new)
    assert doc.lowerings == {"function": 4, "module": 1}


def test_keystrokes_in_a_duplicate_definition_move_its_diagnostic_and_match_a_cold_analysis():
    """A later definition of a name is not lowered, only reported (K0202, pointing at the
    first): an edit in its body moves that diagnostic and everything after it, without
    lowering the module; so does an edit in the first definition that leaves its name where
    it was in it or moves it with the text before it (a doc comment); edits around it stay
    equal to a cold analysis."""
    text = (
        "fn f() -> f32 { 1.0 }\nfn g() -> f32 { f() }\n"
        "fn f() -> f32 { 2.0 }\nfn h(x: f32) -> f32 { x + 1.0 }\n"
    )
    doc = Document("file:///twice.kera", text, 1)
    _same_as_cold(doc)
    for needle, new in [
        ("{ 2.0 }", "{ 2.50 }"),  # the duplicate's body
        ("{ 2.50 }", "{ 2.0 + 1.0 }"),
        ("x + 1.0", "x + 1.25"),  # after it
        ("{ 1.0 }", "{ 1.5 }"),  # the first definition: its name is pointed at, and moves
        ("fn f() -> f32 { 1.5 }", "/// doc\nfn f() -> f32 { 1.5 }"),  # with its header
        ("fn f() -> f32 { 1.5 }", "fn f()  -> f32 { 1.5 }"),  # after the name pointed at
        ("fn f()  -> f32", "fn ff()  -> f32"),  # the name: the module is lowered again
    ]:
        _replaced(doc, needle, new)
    assert doc.lowerings == {"function": 6, "module": 2}


_ITEM_SPOTS = [
    # (a pattern whose group 1 is the text replaced, the replacements); a signature's
    # parameter type and name, its result type, a struct's field type and name, a
    # constant's value and type — some replacements make the item invalid
    (r"\((x): &f32", ["y", "xs", "z"]),
    (r"\(x: &(f32)\[", ["f64", "i32", "f3"]),
    (r"\) -> (f32) \{", ["f64", "i64", "bool"]),
    (r"\nstruct \w+ \{\s*\w+: (f32)", ["f64", "i32", "f6"]),
    (r"\nstruct \w+ \{\s*(\w+):", ["q", "pos"]),
    (r"\nconst \w+: i64 = (\d+)", ["7", "3 * 4", "0", "x"]),
    (r"\nconst \w+: (f32) = ", ["f64", "i64"]),
]


def _item_edit(rng: random.Random, doc: Document, version: int) -> str:
    """One edit inside a signature, a struct or a constant, as an editor sends it (the
    differing characters only)."""
    import re

    text = doc.text
    spots = []
    for pattern, news in _ITEM_SPOTS:
        spots += [(m.start(1), m.end(1), news) for m in re.finditer(pattern, text)]
    i, j, news = rng.choice(spots)
    old, new = text[i:j], rng.choice(news)
    pre = 0
    while pre < min(len(old), len(new)) and old[pre] == new[pre]:
        pre += 1
    suf = 0
    while suf < min(len(old), len(new)) - pre and old[-1 - suf] == new[-1 - suf]:
        suf += 1
    a, b = i + pre, j - suf
    start = len(text[:a].encode("utf-8"))
    end = start + len(text[a:b].encode("utf-8"))
    doc.edit(Span(start, end), new[pre : len(new) - suf])
    doc.version = version
    return f"{old!r} -> {new!r}"


@pytest.mark.parametrize("seed", [1, 2])
def test_signature_struct_and_constant_edits_redo_dependants_and_match_a_cold_analysis(seed):
    """An edit to a signature, a struct or a constant reparses that item alone (the other
    items keep their green nodes and every memo), and each function's cache key names only
    the items its text names (sema/deps.py): the functions that name the edited item are
    lowered again, the module is patched around them (sema/incremental.py), and when it is
    lowered as a whole the rest are found in the cache. Diagnostics, every function's types and
    uses, the environment and the graph equal a cold analysis' after each such edit, body
    keystrokes and undos in between."""
    from bench.corpus import generate

    rng = random.Random(seed)
    text = generate(900)
    doc = Document("file:///items.kera", text, 1)
    doc.analysis()
    total = len(doc.analysis().module.env.fns)
    history = [text]
    small = fast = 0
    for version in range(2, 34):
        before, ways = doc.cache.lowered, dict(doc.lowerings)
        r = rng.random()
        if r < 0.08:
            doc.replace_text(rng.choice(history))
            doc.version = version
            what = "undo"
        elif r < 0.25:
            _body_keystroke(rng, doc, version)
            what = "body"
        else:
            what = _item_edit(rng, doc, version)
        history.append(doc.text)
        a = doc.analysis()
        ref = analyze(doc.text)
        assert a.diagnostics == ref.diagnostics, what
        fns = {n: (_own_types(lf), list(lf.uses)) for n, lf in a.module.functions.items()}
        ref_fns = {n: (_own_types(lf), list(lf.uses)) for n, lf in ref.module.functions.items()}
        assert fns == ref_fns, what
        assert _observed_env(a.module) == _observed_env(ref.module), what
        if version % 4 == 0:
            assert _observed(a.module) == _observed(ref.module), what
        if what not in ("undo", "body"):
            small += doc.cache.lowered - before <= 8
            fast += doc.lowerings["function"] > ways["function"]
    # the items were reparsed alone (or one token of them relexed)
    assert doc.reparses["item"] + doc.reparses["token"] > 10, doc.reparses
    assert doc.reparses["item"] > 0
    assert small > 10, (small, total)  # most item edits lowered a few functions only
    assert fast > 10, fast  # and patched the module (sema/incremental.py) without lowering it


def test_a_signature_edit_redoes_the_function_and_what_names_it_only():
    """A callee's signature changes (a parameter's type and name, its result type, back and
    forth): the callee and the functions whose text names it are lowered again — their
    diagnostics follow (a call's mismatch appears and goes) — without lowering the module,
    and the result equals a cold analysis."""
    text = (
        "fn leaf(x: f32) -> f32 { x * 2.0 }\n"
        "fn mid(x: f32) -> f32 { leaf(x) + 1.0 }\n"
        "fn other(y: i32) -> i32 { y + 1 }\n"
        "fn top() -> f32 { mid(3.0) + leaf(1.0) }\n"
        "fn g() -> i32 { other(2) }\n"
    )
    doc = Document("file:///sig.kera", text, 1)
    _same_as_cold(doc)
    for needle, new in [
        ("leaf(x: f32)", "leaf(x: f64)"),  # mid's and top's calls no longer match
        ("leaf(x: f64)", "leaf(x: f32)"),
        ("leaf(x: f32)", "leaf(z: f32)"),  # its own body no longer finds `x`
        ("leaf(z: f32) -> f32", "leaf(z: f32) -> i32"),
        ("leaf(z: f32) -> i32", "leaf(x: f32) -> f32"),
        ("other(y: i32)", "other(y: i64)"),
    ]:
        before = doc.cache.lowered
        _replaced(doc, needle, new)
        redone = doc.cache.lowered - before
        # leaf, mid and top at most; mid and top twice (by shape, then final) while their
        # call's mismatch points into leaf: such a lowering is never reused (module._reusable)
        assert redone <= (2 if needle.startswith("other") else 5), (needle, redone)
    assert doc.lowerings["module"] == 1  # only the open lowered the module


def test_struct_and_constant_edits_redo_what_names_them_transitively():
    """A constant read through another constant, a struct used in a signature and a
    struct field: each edit lowers the functions that (through constants, or through a
    signature that changes with the struct) read it, without lowering the module, and
    the result equals a cold analysis."""
    text = (
        "const BASE: i64 = 4;\n"
        "const TWICE: i64 = BASE * 2;\n"
        "struct P { x: f32, y: f32 }\n"
        "struct Q { n: i64 }\n"
        "const ORIGIN: Q = Q { n: BASE };\n"  # a constant whose type is a struct
        "fn reads() -> i64 { TWICE + 1 }\n"
        "fn make(a: f32) -> P { P { x: a, y: a } }\n"
        "fn use_make() -> f32 { make(1.0).x }\n"
        "fn alone(v: f32) -> f32 { v * 3.0 }\n"
    )
    doc = Document("file:///decl.kera", text, 1)
    _same_as_cold(doc)
    for needle, new, most in [
        ("BASE: i64 = 4", "BASE: i64 = 5", 1),  # `reads` reads it through TWICE
        ("BASE: i64 = 5", "BASE: i64 = 1 / 0", 1),  # a failing constant
        ("BASE: i64 = 1 / 0", "BASE: i64 = 4", 1),
        ("{ x: f32, y: f32 }", "{ x: f64, y: f32 }", 2),  # make's body; use_make's type
        ("{ x: f64, y: f32 }", "{ z: f64, y: f32 }", 2),  # `.x` and `x:` no longer exist
        ("{ z: f64, y: f32 }", "{ x: f32, y: f32 }", 2),
        ("TWICE: i64 = BASE * 2", "TWICE: i64 = BASE * 3", 1),
        ("struct Q { n: i64 }", "struct Q { n: i32 }", 1),  # ORIGIN's type changes
        ("struct Q { n: i32 }", "struct Q { n: i64 }", 1),
    ]:
        before = doc.cache.lowered
        _replaced(doc, needle, new)
        assert doc.cache.lowered - before <= most, needle
    assert doc.lowerings["module"] == 1  # only the open lowered the module


RECURSIVE = """\
pub fn twice(x: f32) -> f32 {
    x * 2.0
}

fn is_even(n: i64) -> bool {
    if n == 0 {
        return true;
    }
    is_odd(n - 1)
}

fn is_odd(n: i64) -> bool {
    if n == 0 {
        return false;
    }
    is_even(n - 1)
}

pub fn parity(n: i64) -> bool {
    is_even(n)
}
"""


def test_a_recursive_component_is_lowered_again_only_when_it_changes():
    """A recursive component's lowering is cached as one unit (its members' texts and keys,
    the hashes of what it calls outside): an edit outside it reuses it, one inside a member
    lowers it again; each analysis equals a cold one."""
    doc = Document("file:///rec.kera", RECURSIVE, 1)
    _same_as_cold(doc)
    edits = [
        ("x * 2.0", "x * 3.0", False),  # an unrelated body
        ("x * 3.0", "let y = x;\n    y * 3.0", False),  # and the component moves down
        ("return false;", "return n == 1;", True),  # inside a member
        ("is_even(n)\n}", "is_even(n + 0)\n}", False),  # a caller of the component
        ("fn is_odd(n: i64)", "fn is_odd(n: i32)", True),  # a member's signature
    ]
    for version, (old, new, inside) in enumerate(edits, start=2):
        before = doc.cache.lowered
        at = doc.text.encode("utf-8").index(old.encode("utf-8"))
        doc.edit(Span(at, at + len(old.encode("utf-8"))), new)
        doc.version = version
        _same_as_cold(doc)
        members = doc.analysis().module.recursive
        assert members == {"is_even", "is_odd"}
        if inside:
            assert doc.cache.lowered - before >= 2, old
        else:  # at most the edited function is lowered: never the component's two members
            assert doc.cache.lowered - before <= 1, (old, doc.cache.lowered - before)


def test_a_recursive_component_follows_an_edit_of_a_generic_callee():
    """The component's key holds the hashes of every instance of a generic function its
    members call: an edit of that function's body lowers the component again."""
    text = RECURSIVE.replace(
        "pub fn twice(x: f32) -> f32 {\n    x * 2.0\n}",
        "fn dec<T: Int>(n: T) -> T {\n    n - 1\n}",
    ).replace("is_odd(n - 1)", "is_odd(dec(n))")
    doc = Document("file:///rec.kera", text, 1)
    _same_as_cold(doc)
    assert doc.analysis().diagnostics == []
    before = doc.analysis().module.graph.functions["is_even"].hash
    at = text.encode("utf-8").index(b"n - 1\n}")
    doc.edit(Span(at, at + len(b"n - 1")), "n - 2")
    doc.version = 2
    _same_as_cold(doc)
    assert doc.analysis().module.graph.functions["is_even"].hash != before


# edits around what used to send an edit down the whole-module path (issue 17): a function
# defined twice whose first definition another diagnostic names, a caller whose mismatch
# names its callee's parameter while the callee moves, constants that size a struct's
# fields, a struct's field renamed under its uses, comments between items
_CROSS_SITES = [
    # (a pattern whose group 1 is the text replaced, the replacements)
    (r"(sqrt\(dot\(x, x\)\))", ["sqrt(dot(x, x) + 1.0)", "sqrt(dot(x, x)) * 2.0", "dot(x, x)"]),
    (r"/// (The Euclidean) norm", ["The", "A Euclidean", "The  Euclidean"]),
    (r"pub fn norm\[N\]\((x): &f32", ["x ", "v", "xx"]),  # its header: the K0301 names `x`
    (r"pub fn dot\[N\][^{]*\{\n(\s+)", ["", "\n    ", "        "]),  # the callee moves
    (r"axpy\(0\.5, x, &mut y\);\n    (norm)\(&y\)", ["norm", "nor"]),  # the mismatching call
    (r"\nconst (?:HIDDEN|INPUTS): i64 = (\d+)", ["7", "16", "0", "x", "8 * 2"]),
    (r"\npub struct Hidden \{\s*pub (w):", ["q", "ww"]),
    (r"\n// (A two-layer) perceptron", ["A 2-layer", "Some", ""]),
    (r"\n\n(\n)", ["\n\n", ""]),
]


def _site_edits(doc: Document, sites, rng: random.Random, versions, undo: float):
    """One edit per version of ``versions``, each yielded as (version, what it was): with
    probability ``undo`` the text goes back to an earlier one, else group 1 of a match of a
    pattern of ``sites`` ((pattern, replacements) pairs) is replaced by one of its
    replacements, all chosen by ``rng``."""
    history = [doc.text]
    for version in versions:
        if rng.random() < undo:
            doc.replace_text(rng.choice(history))
            what = "undo"
        else:
            spots = [
                (m.start(1), m.end(1), news)
                for pattern, news in sites
                for m in re.finditer(pattern, doc.text)
            ]
            i, j, news = rng.choice(spots)
            new = rng.choice(news)
            what = f"{doc.text[i:j]!r} -> {new!r}"
            start = len(doc.text[:i].encode("utf-8"))
            doc.edit(Span(start, start + len(doc.text[i:j].encode("utf-8"))), new)
        doc.version = version
        history.append(doc.text)
        yield version, what


def test_edits_in_a_duplicate_a_moved_callee_struct_sizes_and_comments_match_a_cold_analysis():
    """Edits that another item's diagnostic reaches into (the first of two definitions, the
    callee a mismatch names), constants a struct's fields are sized by, a struct field
    renamed under its uses and comments between items: each takes the path that redoes
    only what depends on it (sema/incremental.py) — or, where a span reaches into the
    changed text, lowers the module reusing every lowering whose foreign spans can be placed
    (sema/module.py ``_reusable``) — and equals a cold analysis, with undos in between."""

    names = ["dot", "generic", "mlp", "layernorm"]
    text = "\n".join((EXAMPLES[0].parent / f"{n}.kera").read_text() for n in names)
    assert {d.code for d in analyze(text).diagnostics} >= {"K0202", "K0301"}
    rng = random.Random(32)
    doc = Document("file:///cross.kera", text, 1)
    _same_as_cold(doc)
    for version, what in _site_edits(doc, _CROSS_SITES, rng, range(2, 48), undo=0.12):
        a = doc.analysis()
        ref = analyze(doc.text)
        assert a.diagnostics == ref.diagnostics, what
        assert _observed_env(a.module) == _observed_env(ref.module), what
        fns = {n: (_own_types(lf), list(lf.uses)) for n, lf in a.module.functions.items()}
        ref_fns = {n: (_own_types(lf), list(lf.uses)) for n, lf in ref.module.functions.items()}
        assert fns == ref_fns, what
        if version % 3 == 0:
            assert _observed(a.module) == _observed(ref.module), what
    # most edits redid what depends on them (an undo, a call renamed, a constant that stops
    # resolving lower the module)
    assert doc.lowerings["function"] > 20, doc.lowerings


def test_a_caller_whose_mismatch_names_its_callee_is_reused_where_the_callee_moved():
    """A lowering whose diagnostic names another function's parameter is cached with that
    function's header: when the callee moves (an edit before it, its doc comment grown)
    the caller is not lowered again, its span is placed where the header now is; when the
    header's text changes, the caller is lowered again. Each equals a cold analysis."""
    text = (
        "fn pad() -> f32 { 1.0 }\n"
        "/// The callee.\nfn callee(x: &f32[4]) -> f32 { x[0] }\n"
        "fn caller(y: &f64[4]) -> f32 { callee(y) }\n"
    )
    doc = Document("file:///moved.kera", text, 1)
    _same_as_cold(doc)
    for version, (old, new, most) in enumerate(
        [
            ("{ 1.0 }", "{ 1.0 + 2.0 }", 1),  # pad's body: the callee and caller move
            ("/// The callee.", "/// The callee, moved.", 1),  # the header moves in its item
            ("{ x[0] }", "{ x[1] }", 2),  # its body: the caller only for its graph (read)
            ("callee(x: &f32[4])", "callee(x:  &f32[4])", 2),  # the header's text changes
            ("{ 1.0 + 2.0 }", "{ 3.0 }", 1),  # both move back, the header changed
        ],
        start=2,
    ):
        before = doc.cache.lowered
        at = doc.text.index(old)
        doc.edit(Span(at, at + len(old)), new)
        doc.version = version
        _same_as_cold(doc)
        assert doc.cache.lowered - before <= most, (old, doc.cache.lowered - before)


def test_a_constant_no_declaration_names_is_checked_alone_and_matches_a_cold_analysis():
    """A constant's value edited, when no other constant names it, is checked alone
    (consts.check_one_constant): its entry, its failure, its digest, the structs it sizes
    (and those holding them) and the functions that read any of them are made again, the
    other declarations stay. Values that fail (a cycle through itself, a division by zero,
    an unknown name, a type mismatch, a dimension out of range), one that reads a failed
    constant (the whole check decides), one read by another constant (the declarations are
    collected again), undos: each equals a cold analysis."""
    text = (
        "const A: i64 = 4;\n"
        "const B: i64 = A * 2;\n"
        "const C: i64 = 7;\n"
        "const D: f32 = 1.5;\n"
        "const BAD: i64 = 1 / 0;\n"
        "const W: i64 = 3;\n"
        "struct S { v: f32[W] }\n"
        "struct T { s: S, k: f32[2, W] }\n"
        "fn uses_c() -> i64 { C + 1 }\n"
        "fn uses_t(t: &T) -> f32 { t.s.v[0] + t.k[1, 0] }\n"
        "fn uses_d(x: f32) -> f32 { x * D }\n"
        "fn uses_b() -> i64 { B }\n"
        "fn uses_s(s: &S) -> f32 { s.v[0] }\n"
    )
    doc = Document("file:///consts.kera", text, 1)
    _same_as_cold(doc)
    history = [text]
    steps = [
        ("C: i64 = 7", "C: i64 = 8", True),
        ("C: i64 = 8", "C: i64 = C + 1", True),  # refers to itself
        ("C: i64 = C + 1", "C: i64 = 1 / 0", True),  # cannot be evaluated
        ("C: i64 = 1 / 0", "C: i64 = x", True),  # not a constant
        ("C: i64 = x", "C: i64 = 2.5", True),  # mismatched types
        ("C: i64 = 2.5", "C: i64 = BAD + 1", False),  # reads a failed constant
        ("C: i64 = BAD + 1", "C: i64 = A + 1", True),  # reads another constant
        ("D: f32 = 1.5", "D: f32 = 2.5", True),
        ("A: i64 = 4", "A: i64 = 5", False),  # B reads it
        ("W: i64 = 3", "W: i64 = 4", True),  # S's field is sized by it, T holds an S
        ("W: i64 = 4", "W: i64 = 0", True),
        ("W: i64 = 0", "W: i64 = 0 - 1", False),  # not a dimension: S stops resolving
        ("W: i64 = 0 - 1", "W: i64 = 2", False),
        (None, None, False),  # back to an earlier text
        ("C: i64 = 7", "C: i64 = 70", True),
        ("W: i64 = 3", "W: i64 = 5", True),
    ]
    alone = 0
    for version, (old, new, fast) in enumerate(steps, start=2):
        ways = dict(doc.lowerings)
        if old is None:
            doc.replace_text(history[0])
        else:
            at = doc.text.index(old)
            doc.edit(Span(at, at + len(old)), new)
        doc.version = version
        history.append(doc.text)
        _same_as_cold(doc)
        a = doc.analysis()
        ref = analyze(doc.text)
        assert _observed_env(a.module) == _observed_env(ref.module), old
        assert a.module.env.bad_consts == ref.module.env.bad_consts, old
        if fast:  # the module was not lowered
            assert doc.lowerings["module"] == ways["module"], old
            alone += 1
    assert alone == 11


def _at_each_a(text: str) -> list[int]:
    """The offsets of each word `A` in ``text`` (UTF-8; the test's texts are ASCII)."""
    return [m.start() for m in re.finditer(r"\bA\b", text)]


def test_uses_inside_a_constant_move_with_the_constant_and_match_a_cold_analysis():
    """A function that reads constant `B` whose value names `A` does not keep the use of
    `A` inside `B` (nor the types of `B`'s expressions): the constants' check records it,
    once, in the module's uses, which move with `B`. `B` before the function, edits between
    and in them that move them by different amounts, a constant no other one names edited
    alone, `A` renamed and deleted under its uses, undos: after each, the analysis, the
    environment, the references, highlights and semantic tokens equal a cold analysis'."""
    text = (
        "const A: i64 = 4;\n"
        "const B: i64 = A * 2;\n"
        "fn uses_b() -> i64 { B }\n"
        "fn plus_a(x: i64) -> i64 { x + A }\n"
        "const E: i64 = A + B;\n"
        "fn uses_e() -> i64 { E }\n"
        "const F: i64 = A + 1;\n"
    )
    doc = Document("file:///uses.kera", text, 1)
    doc.analysis()
    history = [text]
    steps = [
        ("fn uses_b", "// between\nfn uses_b"),  # the functions move, `B` stays
        ("const B: i64 = A * 2", "const B: i64 = (A) * 2"),  # `B` grows under its use
        ("x + A", "x + A + A"),  # a body
        ("const A: i64 = 4;\n", "const A: i64 = 4;\n\n"),  # everything after `A` moves
        ("A + 1", "1 + A"),  # `F`, named by no other constant: checked alone
        ("1 + A", "B - A"),
        ("const A: i64", "const AA: i64"),  # `A` renamed under its uses
        (None, 2),  # back to an earlier text
        ("const A: i64 = 4;\n", ""),  # `A` deleted
        (None, 0),
        ("A * 2;", "A * 2 + A;"),  # `B` grows, the function after it moves
    ]
    patched = 0
    for version, (old, new) in enumerate(steps, start=2):
        modules = doc.lowerings["module"]
        if old is None:
            doc.replace_text(history[new])
        else:
            at = doc.text.index(old)
            doc.edit(Span(at, at + len(old)), new)
        doc.version = version
        history.append(doc.text)
        a = doc.analysis()
        patched += doc.lowerings["module"] == modules  # not lowered again: patched
        assert list(a.module.env.uses) == list(analyze(doc.text).module.env.uses), old
        _same_as_cold(doc)
        ref = Document(doc.uri, doc.text, 1).analysis()  # cold: a fresh document's cache
        assert _observed_env(a.module) == _observed_env(ref.module), old
        assert tokens.semantic_tokens(a) == tokens.semantic_tokens(ref), old
        whole = Span(0, len(doc.text))
        assert tokens_range.semantic_tokens_in(a, whole) == tokens.semantic_tokens(ref), old
        for off in _at_each_a(doc.text):
            assert navigation.references(a, off) == navigation.references(ref, off), (old, off)
            assert highlight.document_highlights(a, off) == highlight.document_highlights(
                ref, off
            ), (old, off)
        if "const A: i64" in doc.text:  # every `A` is a reference of `A`, the one in `B` too
            refs = navigation.references(a, doc.text.index("A"))
            assert [s.start for s in refs] == _at_each_a(doc.text), old
    assert patched >= 7


def test_a_use_inside_a_constant_no_function_reads_is_found():
    """The use of `A` inside `B` is a reference of `A` (and renamed with it, and hovered)
    though no function reads `B`; no function keeps uses outside its own text."""
    text = "const A: i64 = 4;\nfn f() -> i64 { 1 }\nconst B: i64 = A * 2;\n"
    a = Document("file:///a.kera", text, 1).analysis()
    in_b = text.rindex("A")
    assert [s.start for s in navigation.references(a, 6)] == [6, in_b]
    assert [s.start for s in navigation.references(a, in_b)] == [6, in_b]
    edits = navigation.rename(a, in_b, "N")
    assert sorted(e.span.start for e in edits) == [6, in_b]
    shown = hover.hover(a, in_b)
    assert shown is not None and "i64" in shown.markdown
    read = Document("file:///a.kera", text + "fn g() -> i64 { B }\n", 1).analysis()
    assert [s.start for s in navigation.references(read, 6)] == [6, in_b]
    g = read.module.functions["g"]
    assert [u.name for u in g.uses] == ["B"]
    assert all(g.sig.span.start <= k[0] for k in g.expr_types)


def test_a_struct_no_declaration_names_is_collected_alone_and_matches_a_cold_analysis():
    """A struct edited under its name, when no other struct and no constant names it, is
    collected alone: its type, field spans, uses and diagnostics are made again and the
    functions that name it lowered again; the other declarations stay. Fields renamed under
    their uses, retyped, sized by a constant, declared twice; a struct another one contains
    or that stops resolving (the declarations are collected again, or the module lowered):
    each equals a cold analysis, undos too."""
    text = (
        "const N: i64 = 3;\n"
        "struct Inner { a: f32 }\n"
        "struct Outer { i: Inner, k: i64 }\n"
        "/// A plant.\nstruct Plant {\n    gain: f32,\n    tau: f32[N],\n}\n"
        "struct Flat { x: f32, y: f32 }\n"
        "fn step(p: &Plant, y: f32) -> f32 { y * p.gain + p.tau[0] }\n"
        "fn flat(f: Flat) -> f32 { f.x + f.y }\n"
        "fn inner(o: &Outer) -> f32 { o.i.a }\n"
        "fn alone(v: f32) -> f32 { v * 3.0 }\n"
    )
    doc = Document("file:///structs.kera", text, 1)
    _same_as_cold(doc)
    steps = [
        ("gain: f32,", "gainq: f32,", True),  # `p.gain` no longer exists
        ("gainq: f32,", "gain: f64,", True),  # retyped: `y * p.gain` mismatches
        ("gain: f64,", "gain: f32,", True),
        ("tau: f32[N]", "tau: f32[N + 1]", True),  # its uses change
        ("tau: f32[N + 1]", "tau: f32[2]", True),
        ("struct Flat { x: f32, y: f32 }", "struct Flat { x: f32, x: f32 }", True),
        ("struct Flat { x: f32, x: f32 }", "struct Flat { x: i32, y: f32 }", True),
        ("struct Inner { a: f32 }", "struct Inner { a: f64 }", False),  # Outer contains it
        ("struct Flat { x: i32, y: f32 }", "struct Flat { x: i32, y: Inner }", False),
        ("struct Flat { x: i32, y: Inner }", "struct Flat { x: i32, y: Nope }", False),
        (None, None, False),  # back to the first text
        ("tau: f32[N]", "tau: f32[N, N]", True),
    ]
    alone = 0
    for version, (old, new, fast) in enumerate(steps, start=2):
        ways = dict(doc.lowerings)
        if old is None:
            doc.replace_text(text)
        else:
            at = doc.text.index(old)
            doc.edit(Span(at, at + len(old)), new)
        doc.version = version
        _same_as_cold(doc)
        a = doc.analysis()
        assert _observed_env(a.module) == _observed_env(analyze(doc.text).module), old
        if fast:  # the module was not lowered
            assert doc.lowerings["module"] == ways["module"], old
            alone += 1
    assert alone == 8


_CYCLE = """\
fn step(n: i64) -> i64 {
    n - 1
}

fn is_even(n: i64) -> bool {
    if n == 0 {
        return true;
    }
    is_odd(step(n))
}

/// The other half.
fn is_odd(n: i64) -> bool {
    if n == 0 {
        return false;
    }
    is_even(step(n))
}

pub fn parity(n: i64) -> bool {
    is_even(n)
}

fn after(x: f32) -> f32 { x * 2.0 }
"""
_CYCLE_SITES = [
    (r"return ([^;]*);\n    \}\n    is_even", ["true", "n == 1", "n", "1.5"]),  # a body
    (r"fn is_odd\((\w+ ?):", ["m", "n ", "n"]),  # its header: the other member names it
    (r"fn is_odd\(\w+ ?: (\w+)\)", ["i32", "i64"]),
    (r"/// ([\w ]+) half\.", ["Another", "The other"]),  # its doc comment
    (r"fn step\(n: i64\) -> i64 \{\n    ([^\n]*)\n", ["n - 2", "n + 0", "n * 1.0"]),  # outside
    (r"pub fn parity\(n: i64\) -> bool \{\n    is_even\(([^)]*)\)", ["n + 1", "2", "n"]),
    (r"fn after\(x: f32\) -> f32 \{ ([^}]*) \}", ["x * 3.0", "x"]),  # after it: it moves
]


def test_edits_in_and_around_a_recursive_component_lower_it_alone_and_match_a_cold_analysis():
    """An edit inside a member of a recursive component (its body, its header, its doc
    comment) lowers the component again as one unit — keyed and hashed as the whole-module
    lowering does, with the hashes of what it calls outside — and the functions outside
    that name the member; an edit in a callee outside it, a caller of it or after it, and
    undos: each equals a cold analysis, graph and hashes included."""

    rng = random.Random(7)
    doc = Document("file:///cycle.kera", _CYCLE, 1)
    _same_as_cold(doc)
    for version, what in _site_edits(doc, _CYCLE_SITES, rng, range(2, 40), undo=0.1):
        a, ref = doc.analysis(), analyze(doc.text)
        assert a.diagnostics == ref.diagnostics, what
        assert _observed_env(a.module) == _observed_env(ref.module), what
        if version % 2:
            assert _observed(a.module) == _observed(ref.module), what
            hashes = {n: f.hash for n, f in a.module.graph.functions.items()}
            assert hashes == {n: f.hash for n, f in ref.module.graph.functions.items()}, what
    # (texts seen before are answered from the document's per-content cache)
    assert doc.lowerings["function"] > 12 and doc.lowerings["module"] <= 4, doc.lowerings
