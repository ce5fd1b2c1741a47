"""Issue 17's latency mechanisms for long bodies and the open: a scope keeps its hidden `$`
names apart (a region's carried names are read without walking every local in scope), the
green tree gives its token kinds without positioned nodes (the block reparse's check), the
language server's warm-up and its worker's `busy` (the workspace scan waits for it); an
edit in one long body lowered statement by statement (sema/body_reuse.py) against a cold
analysis."""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import time

import pytest

from bench.corpus import long_function
from kera_core.analysis import analyze
from kera_core.cancel import Abandoned, watching
from kera_core.sema.body_reuse import PendingGraph
from kera_core.sema.frames import ERR_VAL, Binding, Scope
from kera_core.source import Span
from kera_core.syntax.parse import parse
from kera_core.workspace import _WARM_UP, Document
from kera_lsp.server import Worker


def _b(name: str) -> Binding:
    return Binding(name, ERR_VAL, True, Span(0, 0))


def test_a_scope_keeps_its_hidden_names_in_binding_order():
    s = Scope({"#i": _b("#i"), "$token": _b("$token")})
    for name in ("a", "$ret", "b", "$brk0", "c", "$cont0"):
        s[name] = _b(name)
    assert list(s.flags) == [n for n in s if n.startswith("$")]
    del s["$brk0"]  # an exit flag dropped and bound again goes to the end, as in the dict
    s["$brk0"] = _b("$brk0")
    s["$ret"] = _b("$ret")  # rebinding keeps the place
    s.setdefault("$retval", _b("$retval"))
    s.setdefault("$token", _b("other"))  # present: nothing changes
    assert list(s.flags) == [n for n in s if n.startswith("$")]
    assert list(s.flags) == ["$token", "$ret", "$cont0", "$brk0", "$retval"]
    with pytest.raises(TypeError):
        s.pop("$ret")
    with pytest.raises(TypeError):
        s.update({"$x": _b("$x")})
    with pytest.raises(TypeError):
        s.clear()


def test_green_token_kinds_are_the_tokens_kinds():
    text = long_function(60) + "\nfn g(x: f32) -> f32 { /* c */ x * 2.0 } // end\n"
    root = parse(text).tree
    assert root.green.token_kinds() == [t.kind for t in root.tokens()]
    for node in root.descendants():
        assert node.green.token_kinds() == [t.kind for t in node.tokens()]


def test_a_long_body_edited_is_analysed_as_a_cold_open_would():
    """Edits in one long function (thousands of locals in one scope) give the diagnostics and
    the graph a cold analysis of the same text gives."""
    text = long_function(900)
    doc = Document("file:///long.kera", text)
    assert doc.analysis().diagnostics == []
    for k, (find, new) in enumerate(((".25;", "5"), ("acc + a", "q"), ("0.75", "1"))):
        at = doc.text.index(find, len(doc.text) // (k + 2)) + 1
        doc.edit(Span(at, at), new)
        doc.version = k + 1
        a = doc.analysis()
        cold = Document("file:///cold.kera", doc.text).analysis()
        assert [(d.code, d.span, d.message) for d in a.diagnostics] == [
            (d.code, d.span, d.message) for d in cold.diagnostics
        ]
        if cold.module is not None:
            assert a.module.graph.fingerprint() == cold.module.graph.fingerprint()
    assert doc.lowerings["function"] >= 2  # the incremental path, not the whole module


def test_the_warm_up_program_reaches_every_stage():
    a = Document("kera:warm-up", _WARM_UP).analysis()
    assert a.diagnostics == [] and a.module is not None
    assert {"spread", "warm"} <= set(a.module.functions)


def test_warm_up_loads_what_the_first_analysis_would():
    probe = (
        "import sys; from kera_core.workspace import warm_up; warm_up();"
        "print('numpy' in sys.modules, 'kera_core.interp.ops_impl' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["True", "True"]


def test_the_worker_is_busy_while_a_job_runs_or_waits():
    worker = Worker()
    try:
        assert not worker.busy
        gate = threading.Event()
        first = worker.submit(gate.wait, 10.0)
        second = worker.submit(lambda: 7)
        assert worker.busy
        gate.set()
        assert first.result(10) is True and second.result(10) == 7
        failed = worker.submit(lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            failed.result(10)
        assert worker.submit(lambda: None).result(10) is None
        deadline = time.monotonic() + 5.0  # (counted off just after the result is set)
        while worker.busy and time.monotonic() < deadline:
            time.sleep(0.001)
        assert not worker.busy  # finished jobs, failed ones included, are counted off
    finally:
        worker.stop()


# --- one long body, statement by statement (sema/body_reuse.py) -----------------------------


def _mixed_body(statements: int, seed: int) -> str:
    """A long function with loops, branches, shadowing, an untyped float `let` typed by a
    later statement, a tensor moved and borrowed, and a short second function."""
    rng = random.Random(seed)
    out = [
        "fn helper(a: f32) -> f32 { a * 2.0 }",
        "",
        "pub fn long_mix[N](x: &f32[N], y: &mut f32[N], v: f32[N]) -> f32 {",
        "    let mut acc: f32 = 0.0;",
        "    let mut t = 1.5;",
        "    let mut n: i64 = 0;",
        "    let r = &x;",
    ]
    k = 0
    while len(out) < statements + 5:
        form = rng.randrange(8)
        if form == 0 or k == 0:
            out.append(f"    let a{k} = acc * 0.5 + {k % 97}.25;")
            k += 1
        elif form == 1:
            out.append(f"    for i in 0..N {{ y[i] = y[i] + r[i] * a{k - 1}; }}")
        elif form == 2:
            out.append(
                f"    if a{k - 1} > 1.5 {{ acc = acc + a{k - 1}; }} else {{ acc = acc - 0.75; }}"
            )
        elif form == 3:
            out.append(f"    let a{k - 1} = a{k - 1} * 2.0;")
        elif form == 4:
            out.append(f"    n += {k};")
        elif form == 5:
            out.append("    while n > 100 { n = n - 7; }")
        elif form == 6:
            out.append(f"    t += helper(a{k - 1});")
        else:
            out.append(f"    acc = acc + v[{k % 3}];")
    out += ["    let w = v;", "    acc + t + w[0]", "}", ""]
    return "\n".join(out)


_BODY_EDITS = [
    ("digit", None),  # a digit typed into a float literal
    ("text", "q"),  # an identifier made unknown (an error), or a new name
    ("text", " let z = v;"),  # a move of `v` (ownership error further on)
    ("text", "; let b = 2.0"),  # a statement split in two
    ("delete", ";"),  # two statements merged (a syntax error)
    ("text", " true"),  # a statement of another type
    ("retype", None),  # a `let`'s value made an integer (its type changed, errors after)
    ("text", " let acc = 1;"),  # `acc` shadowed by an integer
    ("text", " let b = 0.5;"),  # a new name (the statements after it do not name it)...
    ("text", " acc = acc * b;"),  # ... or do (an unknown name where it is not bound)
    ("text", " let r = &mut n;"),  # a reference variable
    ("text", " let s = x[0..2];"),  # a slice (its length reads graph nodes: lowered whole)
    ("text", " if n > 3 { return acc; }"),  # an early return (lowered whole)
]


_UNTRACED = (" let s = x[0..2];", " if n > 3 { return acc; }")


def _body_edit(rng: random.Random, doc: Document) -> str | None:
    """One edit in ``long_mix``; the piece typed (None for a digit or a deletion)."""
    text = doc.text
    body = text.index("pub fn long_mix")
    kind, piece = rng.choice(_BODY_EDITS)
    where = rng.choice(["first", "last", "any", "any", "any"])
    lines = [m.start() for m in re.finditer(r"\n    \S", text[body:])]
    line = body + {"first": lines[0], "last": lines[-1]}.get(where, rng.choice(lines)) + 5
    if kind == "digit":
        m = re.compile(r"\d\.\d").search(text, line)
        if m is None:
            return None
        at = m.start() + 1
        doc.edit(Span(at, at), str(rng.randrange(10)))
    elif kind == "retype":
        m = re.compile(r"let a\d+ = ([^;]*);").search(text, line)
        if m is None:
            return None
        doc.edit(Span(m.start(1), m.end(1)), "1")
    elif kind == "delete":
        at = text.find(";", line)
        if at < 0:
            return None
        doc.edit(Span(at, at + 1), "")
    else:
        at = text.find(";", line) + 1 if piece.startswith(" ") else text.find(" ", line + 4)
        if at <= 0:
            return None
        doc.edit(Span(at, at), piece)
    return piece


def _matches_cold(doc: Document, graph: bool) -> None:
    """The document's diagnostics, and each function's types and uses, are a cold
    analysis's; with ``graph``, its graph and fingerprint too."""
    from tests.test_incremental_equals_cold import _own_types, _same_as_cold

    a = doc.analysis()
    ref = analyze(doc.text)
    assert a.diagnostics == ref.diagnostics
    if ref.module is not None:
        mine = {n: (_own_types(lf), list(lf.uses)) for n, lf in a.module.functions.items()}
        cold = {n: (_own_types(lf), list(lf.uses)) for n, lf in ref.module.functions.items()}
        assert mine == cold
        if graph:
            _same_as_cold(doc)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_edits_in_a_long_body_resume_from_statements_and_match_a_cold_analysis(seed):
    _edits_match_cold(seed)


@pytest.mark.parametrize("seed", [1, 2])
def test_checkpoints_spaced_for_large_scopes_resume_as_well(seed, monkeypatch):
    """Where the scopes hold many names the checkpoints are further apart than EVERY
    statements (their copies would be quadratic); resuming from one of them is as exact.
    SCOPE_RATIO made 1 spaces them by the scopes' size here."""
    from kera_core.sema import body_reuse

    monkeypatch.setattr(body_reuse, "SCOPE_RATIO", 1)
    doc = Document("file:///mix.kera", _mixed_body(120, seed))
    doc.analysis()
    trace = doc.cache.bodies["long_mix"][0]
    at = sorted(trace.checkpoints)
    gaps = [b - a for a, b in zip(at, at[1:], strict=False)]
    assert max(gaps) > body_reuse.EVERY, gaps
    _edits_match_cold(seed)


def _edits_match_cold(seed: int) -> None:
    """Random edits in one long body (first and last statement included; errors put in and
    taken out by undo; statements split and merged; a type changed; a move added) give the
    diagnostics, types and uses of a cold analysis after each edit, and its graph and
    fingerprint every few edits; most edits lower only a few statements again."""
    rng = random.Random(seed)
    text = _mixed_body(120, seed)
    doc = Document("file:///mix.kera", text)
    assert doc.analysis().diagnostics == analyze(text).diagnostics
    history = [text]
    piece = None
    for v in range(1, 25):
        # undo (back to an earlier text) at random, and always after a slice or a `return`
        # (a body with one is lowered whole until it goes)
        if len(history) > 1 and (rng.random() < 0.3 or piece in _UNTRACED):
            history.pop()
            doc.replace_text(history[-1])
            piece = None
        else:
            piece = _body_edit(rng, doc)
            history.append(doc.text)
        doc.version = v
        # (reading the graph lowers the body whole: not after every edit)
        _matches_cold(doc, graph=v % 4 == 0)
    assert doc.cache.resumed >= 5  # the statement path, not the whole body


def test_a_literal_typed_in_a_long_body_relowers_a_few_statements_and_keeps_ownership():
    """A digit typed into the 5,000-line corpus body: a few statements lowered again (the
    rest taken from the trace), the ownership result moved, the graph built when read and
    equal to a cold one's."""
    text = long_function(600)
    doc = Document("file:///long.kera", text)
    doc.analysis()
    for k, frac in enumerate((2, 3, 5)):
        at = doc.text.index(".25;", len(doc.text) // frac)
        doc.edit(Span(at, at), str(k + 3))
        doc.version = k + 1
        before = doc.cache.resumed
        a = doc.analysis()
        assert doc.cache.resumed == before + 1
        lf = a.module.functions["long_body"]
        assert isinstance(lf, PendingGraph)
        assert lf.ownership_from is not None  # the ownership result moved, not checked again
        cold = analyze(doc.text)
        assert a.diagnostics == cold.diagnostics == []
        assert a.module.graph.fingerprint() == cold.module.graph.fingerprint()


def test_keystrokes_in_one_place_and_in_many_keep_the_moved_uses_and_types_exact():
    """The statements taken over keep their uses and types as views of older lowerings
    (sema/spliced.py): digits typed on and deleted in one place (the edits merge), then at
    more places than MAX_CUTS, first to last (each view then has an edit per place before
    it, until it is moved into a new list): each version's uses and types, in order, are a
    cold analysis's."""
    from kera_core.sema.spliced import MAX_CUTS

    doc = Document("file:///long.kera", long_function(300))
    doc.analysis()
    at = doc.text.index(".25;", len(doc.text) // 2)
    for k in range(6):
        doc.edit(Span(at + k, at + k), str(k + 1))
        doc.version += 1
        _matches_cold(doc, graph=False)
    for k in range(5, -1, -2):
        doc.edit(Span(at + k - 1, at + k + 1), "")
        doc.version += 1
        _matches_cold(doc, graph=False)
    resumed = doc.cache.resumed
    sites = [m.start() for m in re.finditer(r"\.25;", doc.text)]
    for k, site in enumerate(sites[:: max(1, len(sites) // (MAX_CUTS + 4))]):
        at = site + k  # (each digit before it moved it one byte on)
        assert doc.text[at : at + 4] == ".25;"
        doc.edit(Span(at, at), "9")
        doc.version += 1
        _matches_cold(doc, graph=False)
    assert doc.cache.resumed - resumed >= MAX_CUTS + 2


def _scalar_body(statements: int, borrow_at: int | None, use_at: int) -> str:
    """A long body of scalar statements and tensor loops; with ``borrow_at``, a reference
    variable `m = &mut n` made there and read at ``use_at``."""
    out = [
        "pub fn scalars[N](x: &f32[N], y: &mut f32[N], v: f32[N]) -> i64 {",
        "    let mut acc: f32 = 0.0;",
        "    let mut n: i64 = 0;",
    ]
    for k in range(statements):
        if k == borrow_at:
            out.append("    let m = &mut n;")
        elif k == use_at and borrow_at is not None:
            out.append("    let q = m + 1;")
        elif k % 3 == 0:
            out.append(f"    let a{k} = acc * 0.5 + {k}.25;")
        elif k % 3 == 1:
            out.append(f"    for i in 0..N {{ y[i] = y[i] + x[i] * a{k - 1}; }}")
        else:
            out.append(
                f"    if a{k - 2} > 1.5 {{ acc = acc + a{k - 2}; }} else {{ acc = acc - 0.75; }}"
            )
    out += ["    let w = v;", "    n", "}", ""]
    return "\n".join(out)


@pytest.mark.parametrize(
    "borrow_at, edit_at",
    [
        (None, 60),
        (20, 60),
        (58, 60),
        (30, 20),
    ],  # no borrow; live from afar; from just before; later
)
def test_a_scalar_statement_typed_keeps_the_ownership_result_only_where_no_loan_is_live(
    borrow_at, edit_at
):
    """A statement of scalars only (`n += 1;`, `let c = 2.5;`) typed into a long body cannot
    change what the ownership checker finds, unless a borrow held by a variable is live
    there (`let m = &mut n;` ... `m + 1`: the write is K0403): its result is the old one
    moved (``ownership_from``) only when none is; each version's diagnostics are a cold
    analysis's either way."""
    doc = Document("file:///s.kera", _scalar_body(120, borrow_at, 100))
    assert doc.analysis().diagnostics == analyze(doc.text).diagnostics
    lines = [m.start() for m in re.finditer(r"\n    \S", doc.text)]
    for v, piece in enumerate([" n += 1;", " let c = 2.5;", " acc = acc * 2.0;"], 1):
        at = doc.text.index("\n", lines[edit_at + 2 * v] + 1)  # after the statement
        doc.edit(Span(at, at), piece)
        doc.version = v
        a = doc.analysis()
        assert a.diagnostics == analyze(doc.text).diagnostics
        lf = a.module.functions["scalars"]
        assert isinstance(lf, PendingGraph)
        live = borrow_at is not None and borrow_at < edit_at < 100
        assert (lf.ownership_from is None) == live
        if live and piece == " n += 1;":
            assert {"K0402", "K0403"} <= {d.code for d in a.diagnostics}


def test_keystrokes_in_a_long_functions_doc_comment_move_its_lowering():
    """Typing and deleting in the doc comment above a long function: its lowering is the
    trace's moved (no statement lowered, no whole lowering), as are its ownership result and
    the trace itself, so body edits after it still resume; each version, and the graph at
    the end, equal a cold analysis."""
    text = long_function(300).replace("let a7 = acc", "let a7 = accx")  # (an error)
    doc = Document("file:///long.kera", text)
    doc.analysis()
    for v, (needle, end, new) in enumerate(
        [("One long", 0, "A "), ("A One", 1, "B"), ("function:", 0, "long "), ("B One", 2, "")],
        1,
    ):
        at = doc.text.index(needle)
        before = (doc.cache.resumed, doc.cache.lowered)
        doc.edit(Span(at, at + end), new)
        doc.version = v
        _matches_cold(doc, graph=False)
        assert doc.cache.resumed == before[0] + 1 and doc.cache.lowered == before[1]
        lf = doc.analysis().module.functions["long_body"]
        assert isinstance(lf, PendingGraph)
    at = doc.text.index(".25;", len(doc.text) // 2)
    before = (doc.cache.resumed, doc.cache.lowered)
    doc.edit(Span(at, at), "3")
    doc.version = 9
    _matches_cold(doc, graph=True)
    assert doc.cache.resumed == before[0] + 1 and doc.cache.lowered == before[1] + 1


def test_a_body_that_reads_values_or_returns_early_has_no_trace():
    from kera_core.sema.body_reuse import reads_values

    assert reads_values(parse("fn f(x: &f32[8]) { let y = x[1..3]; }").tree.green)
    assert reads_values(parse("fn f(x: f32[4, 4]) { let y = sum(x, 0); }").tree.green)
    assert not reads_values(parse("fn f(x: &f32[8]) { let y = x[1] + 2.0; }").tree.green)
    body = "\n".join(f"    let a{k} = {k}.0;" for k in range(80))
    for extra in ("    let s = x[0..2];", "    if a1 > 0.0 { return 1.0; }"):
        text = f"fn f(x: &f32[8]) -> f32 {{\n{body}\n{extra}\n    a0\n}}\n"
        doc = Document("file:///v.kera", text)
        doc.analysis()
        assert "f" not in doc.cache.bodies


def test_a_name_bound_in_one_version_only_is_patched_into_the_checkpoints_after_it():
    """A `let` typed where no later statement names it converges at once (the name is patched
    into the checkpoints taken over); a later edit reading it resumes from such a checkpoint
    and finds it; deleting the `let` makes that read an unknown name — each as a cold
    analysis has it."""
    doc = Document("file:///long.kera", long_function(900))
    doc.analysis()

    def edit(at: int, end: int, new: str) -> None:
        before = (doc.cache.resumed, doc.cache.lowered)
        doc.edit(Span(at, end), new)
        doc.version += 1
        a = doc.analysis()
        assert doc.cache.resumed == before[0] + 1 and doc.cache.lowered == before[1]
        assert a.diagnostics == analyze(doc.text).diagnostics

    let = "let fresh = 2.5; "
    at = doc.text.index("    let a", len(doc.text) // 3) + 4
    edit(at, at, let)
    use = doc.text.index("    let a", 2 * len(doc.text) // 3) + 4
    edit(use, use, "acc = acc * fresh; ")
    assert doc.analysis().diagnostics == []
    edit(at, at + len(let), "")
    assert [d.code for d in doc.analysis().diagnostics] == ["K0201"]
    cold = analyze(doc.text)
    assert doc.analysis().module.graph.fingerprint() == cold.module.graph.fingerprint()


def test_a_name_bound_again_further_on_converges_at_once_and_stays_right_after_it():
    """A `let` typed whose name a later `let` binds again (without reading it) converges at
    once: the statements between do not name it, and from the later `let` on both versions
    bind it alike (so the checkpoints after it are not patched). Edits after the later
    `let`, between the two, and deleting either `let` then match a cold analysis."""
    text = long_function(900)
    later = text.index("    let a", 2 * len(text) // 3) + 4
    # (every statement after the later `let` reads it)
    rest = (
        text[later:].replace("acc * 0.5", "acc * fresh").replace("    acc\n}", "    acc + fresh\n}")
    )
    text = text[:later] + "let fresh: f32 = 1.5; acc = acc + fresh; " + rest
    doc = Document("file:///long.kera", text)
    doc.analysis()

    def edit(at: int, end: int, new: str) -> None:
        before = (doc.cache.resumed, doc.cache.lowered)
        doc.edit(Span(at, end), new)
        doc.version += 1
        _matches_cold(doc, graph=False)
        assert doc.cache.resumed == before[0] + 1 and doc.cache.lowered == before[1]

    first = "let fresh = 2; "  # an integer: a read of it as a float would be an error
    at = doc.text.index("    let a", len(doc.text) // 3) + 4
    edit(at, at, first)
    after = doc.text.index(".25;", doc.text.index("let fresh: f32") + 3000)
    edit(after, after, "7")  # resumed from a checkpoint after the second `let`
    mid = doc.text.index("    let a", len(doc.text) // 2) + 4
    edit(mid, mid, "acc = acc + fresh; ")  # reads the integer: an error
    assert doc.analysis().diagnostics
    second = doc.text.index("let fresh: f32 = 1.5; ")
    edit(second, second + len("let fresh: f32 = 1.5; "), "")  # the later reads now the integer
    edit(at, at + len(first), "")  # and now nothing
    cold = analyze(doc.text)
    assert doc.analysis().module.graph.fingerprint() == cold.module.graph.fingerprint()


@pytest.mark.parametrize("seed", [0, 4, 7])
def test_random_keystrokes_in_a_long_body_match_a_cold_analysis(seed):
    """Characters typed and deleted anywhere in a file with one long body (the pieces of
    test_incremental_equals_cold: braces, `return`, `&mut`, a non-ASCII letter, …): the
    diagnostics, types and uses of a cold analysis after each, the graph every 10th."""
    from tests.test_incremental_equals_cold import _edit

    rng = random.Random(seed)
    doc = Document("file:///mix.kera", _mixed_body(100, seed))
    doc.analysis()
    for v in range(1, 30):
        _edit(rng, doc, v)
        _matches_cold(doc, graph=v % 10 == 0)
    assert doc.cache.resumed >= 5


def test_a_graph_built_on_demand_is_abandoned_when_its_watch_says_stop():
    """A query's graph read (a fingerprint lens after a keystroke) lowers the long body
    whole; under a watch that says stop (the server's: a newer version arrived) it raises
    Abandoned part-way, leaving the lowering pending, and a later read builds the graph a
    cold analysis gives."""
    doc = Document("file:///long.kera", long_function(600))
    doc.analysis()
    at = doc.text.index(".25;", len(doc.text) // 2)
    doc.edit(Span(at, at), "7")
    doc.version = 1
    a = doc.analysis()
    lf = a.module.functions["long_body"]
    assert isinstance(lf, PendingGraph)
    asked: list[tuple[str, int, int]] = []

    def stop(stage: str, done: int, total: int) -> bool:
        asked.append((stage, done, total))
        return len(asked) >= 2

    with watching(stop), pytest.raises(Abandoned):
        a.module.graph.fingerprint()
    assert [s for s, _, _ in asked] == ["lowering", "lowering"] and asked[1][1] > asked[0][1]
    assert a.module.graph.fingerprint() == analyze(doc.text).module.graph.fingerprint()
