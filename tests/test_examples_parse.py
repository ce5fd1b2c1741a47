"""Every program in examples/ parses cleanly, round-trips, and follows the house style."""

from __future__ import annotations

from pathlib import Path

import pytest

from kera_core import parse
from kera_core.source import encode
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.tree import SyntaxNode

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROGRAMS = sorted(EXAMPLES.rglob("*.kera"))  # the files of packages (examples/pkg) too

K = SyntaxKind


def test_there_are_examples() -> None:
    assert len(PROGRAMS) >= 10


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_parses(path: Path) -> None:
    data = path.read_bytes()
    result = parse(data)
    assert encode(str(result.tree)) == data
    messages = [f"{d.code} {d.span.start}..{d.span.end} {d.message}" for d in result.diagnostics]
    assert not messages, "\n".join(messages)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_example_style(path: Path) -> None:
    """A header comment, documented public functions, spaces only, lines <= 100 columns."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("// "), "an example starts with a `//` comment explaining it"
    assert text.endswith("\n") and not text.endswith("\n\n")
    for number, line in enumerate(text.split("\n"), 1):
        assert len(line) <= 100, f"line {number} is longer than 100 columns"
        assert "\t" not in line and line == line.rstrip(), f"line {number}: tab or trailing space"
    for fn in parse(text).tree.children():
        if fn.kind == K.FN and fn.child_of_kind(K.VISIBILITY) is not None:
            assert _has_doc(fn), f"pub fn `{_name(fn)}` has no `///` doc comment"


_BLOCK_LIKE = frozenset({K.BLOCK_EXPR, K.IF_EXPR, K.FOR_EXPR, K.WHILE_EXPR})


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_no_block_like_callee(path: Path) -> None:
    """Guard against a silent misparse (docs/language.md §16).

    The parser lets a statement-level `if`/`for`/`while`/block continue into a postfix
    operator, so an `if … {}` followed by a line starting with `(` parses as a call of
    the `if`. No example may contain such a call or index.
    """
    tree = parse(path.read_bytes()).tree
    for node in tree.descendants():
        if node.kind in (K.CALL_EXPR, K.INDEX_EXPR):
            callee = next(node.children(), None)
            assert callee is None or callee.kind not in _BLOCK_LIKE, (
                f"{node.kind.name} at byte {node.span.start} applies to a {callee.kind.name}: "
                "end the statement before it with `;` or restructure"
            )


def _has_doc(node: SyntaxNode) -> bool:
    return any(t.kind == K.DOC_COMMENT for t in node.child_tokens())


def _name(node: SyntaxNode) -> str:
    name = node.child_of_kind(K.NAME)
    return name.text if name is not None else "?"
