"""Parser corpus: one small input per construct, each with its expected tree.

A case is ``tests/corpus/{ok,err}/NNN_name.kera`` plus ``NNN_name.tree``: the
``debug_tree`` dump of the parse (trivia included), a line ``---``, then one line per
diagnostic, ``CODE start..end message``. ``ok`` cases must parse without diagnostics;
``err`` cases must report at least one and still give back every byte.

After a deliberate parser change, regenerate the expectations with
``UPDATE_EXPECT=1 pytest tests/test_corpus.py`` and review the diff like code.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kera_core import Parse, parse
from kera_core.source import encode
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.tree import debug_tree

CORPUS = Path(__file__).parent / "corpus"
UPDATE = os.environ.get("UPDATE_EXPECT") == "1"

OK_CASES = sorted((CORPUS / "ok").glob("*.kera"))
ERR_CASES = sorted((CORPUS / "err").glob("*.kera"))

# Tokens the grammar never accepts: they only exist to give better errors.
_RESERVED_TOKENS = {
    SyntaxKind.POUND,
    SyntaxKind.QUESTION,
    SyntaxKind.ERROR_TOKEN,
    SyntaxKind.EOF,
}


def _case_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def render(result: Parse) -> str:
    """The expectation text for one parse: tree, separator, diagnostics."""
    lines = [debug_tree(result.tree).rstrip("\n"), "---"]
    lines += [f"{d.code} {d.span.start}..{d.span.end} {d.message}" for d in result.diagnostics]
    return "\n".join(lines) + "\n"


def _check_case(path: Path, expect_errors: bool) -> None:
    data = path.read_bytes()
    result = parse(data)

    # Lossless: every byte, valid UTF-8 or not, comes back in order.
    assert encode(str(result.tree)) == data
    assert result.green.text_len == len(data)

    if expect_errors:
        assert result.diagnostics, "an err case must report at least one diagnostic"
    else:
        assert not result.diagnostics, render(result)

    actual = render(result)
    expected_path = path.with_suffix(".tree")
    if UPDATE:
        expected_path.write_text(actual, encoding="utf-8", newline="\n")
        return
    assert expected_path.exists(), f"{expected_path.name} missing: run with UPDATE_EXPECT=1"
    expected = expected_path.read_text(encoding="utf-8")
    assert actual == expected, f"{path.name}: tree differs (UPDATE_EXPECT=1 to accept)"


@pytest.mark.parametrize("path", OK_CASES, ids=_case_id)
def test_ok(path: Path) -> None:
    _check_case(path, expect_errors=False)


@pytest.mark.parametrize("path", ERR_CASES, ids=_case_id)
def test_err(path: Path) -> None:
    _check_case(path, expect_errors=True)


def test_corpus_size() -> None:
    assert len(OK_CASES) >= 40
    assert len(ERR_CASES) >= 30


def test_every_tree_has_an_input() -> None:
    """No stale expectations left behind by a renamed or deleted case."""
    for sub in ("ok", "err"):
        for tree in (CORPUS / sub).glob("*.tree"):
            assert tree.with_suffix(".kera").exists(), f"{sub}/{tree.name} has no input"


def test_case_numbers_are_unique() -> None:
    for cases in (OK_CASES, ERR_CASES):
        numbers = [p.name.split("_", 1)[0] for p in cases]
        assert len(numbers) == len(set(numbers))


def test_ok_corpus_covers_the_grammar() -> None:
    """Every node kind but ERROR and UNSUPPORTED (the parts of a program the parser reports),
    and every token the grammar accepts, appears in ok/."""
    seen: set[SyntaxKind] = set()
    for path in OK_CASES:
        seen.update(el.kind for el in parse(path.read_bytes()).tree.preorder())
    errors = {SyntaxKind.ERROR, SyntaxKind.UNSUPPORTED}
    assert not seen & errors
    assert not seen & _RESERVED_TOKENS
    wanted = {k for k in SyntaxKind if k not in errors} - _RESERVED_TOKENS
    missing = sorted(k.name for k in wanted - seen)
    assert not missing, f"no ok case uses {missing}"
