"""Issue 17's latency mechanisms for long bodies and the open: a scope keeps its hidden `$`
names apart (a region's carried names are read without walking every local in scope), the
green tree gives its token kinds without positioned nodes (the block reparse's check), the
language server's warm-up and its worker's `busy` (the workspace scan waits for it)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from bench.corpus import long_function
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
