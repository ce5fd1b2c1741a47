"""Refactorings asked for anywhere in files with parse errors are planned, checked or
refused (RefactorError) — never an internal error. (Found by fuzzing: in `fn f() { let x
= 1;` cut short by the next item, inlining `x` made an edit past the function's end and
its re-check raised ValueError, which the server answered as an internal error.)"""

from __future__ import annotations

import random

import pytest

from kera_core.ide import refactor
from kera_core.source import Span
from kera_core.workspace import Workspace

BROKEN = [
    "fn f()\n{\n\tlet x\t=\t1;\nfn",
    "fn f() -> i32 {\n    let x = 1;\n    let y = x + 2;\n    y\nfn g() {}\n",
    "pub fn f(a: i32) -> i32 {\n    let t = a * 2;\n    if t > 3 { t } else { a\n}\n",
    "fn f() { let x = 1; let y = (x + ; y }\nfn g(q: i32) -> i32 { let r = q; r }\n",
]


@pytest.mark.parametrize("text", BROKEN, ids=range(len(BROKEN)))
def test_refactorings_in_broken_files_are_checked_or_refused(text: str) -> None:
    a = Workspace().open("file:///b.kera", text, 1).analysis()
    if a.module is None:
        return
    size = len(text.encode())
    for off in range(size + 1):
        try:
            plan = refactor.plan_inline(a, off)
            edits = refactor.inline_edits(a, plan)
            refactor.new_errors(a, edits, plan.sig.name, [])
        except refactor.RefactorError:
            pass
    rng = random.Random(size)
    for _ in range(200):
        s = rng.randrange(size)
        e = rng.randrange(s + 1, size + 1)
        try:
            plan = refactor.plan_extract(a, Span(s, e))
            edits, name = refactor.extract_edits(a, plan)
            refactor.new_errors(a, edits, plan.sig.name, [name])
        except refactor.RefactorError:
            pass
