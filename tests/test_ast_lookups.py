"""The typed AST's child lookups (kera_core/syntax/ast.py over tree.py) against a plain
scan of the children: the same cursor (green element, offset, index) and the same class,
for every node of every example, the fast paths (``wrapped_child``, ``wrapped_children``,
``AstNode.span``) included."""

from __future__ import annotations

from pathlib import Path

import pytest

from kera_core import parse
from kera_core.syntax import ast
from kera_core.syntax.tree import SyntaxNode

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
PROGRAMS = sorted(EXAMPLES.rglob("*.kera"))
TABLES = {"exprs": ast.EXPRS, "types": ast._TYPES, "stmts": ast._STMTS, "items": ast._ITEMS}


def _scan(node: SyntaxNode, table: dict) -> list[tuple[type, SyntaxNode]]:
    """The oracle: every child node whose kind is in ``table``, from the positioned
    children (offsets summed by ``children_with_tokens``)."""
    return [
        (table[c.kind], c)
        for c in node.children_with_tokens()
        if not c.is_token and c.kind in table
    ]


def _same(a: ast.AstNode, cls: type, node: SyntaxNode) -> bool:
    s = a.syntax
    return (
        type(a) is cls
        and s.green is node.green
        and s.offset == node.offset
        and s.index == node.index
        and s.parent is node.parent
    )


def test_there_are_examples() -> None:
    assert PROGRAMS


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_lookups_match_a_scan(path: Path) -> None:
    tree = parse(path.read_bytes()).tree
    for node in tree.descendants():
        for table in TABLES.values():
            want = _scan(node, table)
            got = node.wrapped_children(table)
            assert len(got) == len(want)
            assert all(_same(g, cls, c) for g, (cls, c) in zip(got, want, strict=True))
            first = node.wrapped_child(table)
            assert (first is None) == (not want)
            if want:
                assert _same(first, *want[0])  # type: ignore[arg-type]
                assert first.span == want[0][1].span  # type: ignore[union-attr]
        assert [type(e) for e in ast.exprs_of(node)] == [c for c, _ in _scan(node, ast.EXPRS)]
        assert type(ast.expr_of(node)) is next((c for c, _ in _scan(node, ast.EXPRS)), type(None))
        assert type(ast.type_of(node)) is next((c for c, _ in _scan(node, ast._TYPES)), type(None))
