"""Kera grammar for tree-sitter.

``language()`` returns the language as a capsule for ``tree_sitter.Language``::

    import tree_sitter, tree_sitter_kera
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_kera.language()))

``HIGHLIGHTS_QUERY``, ``LOCALS_QUERY`` and ``FOLDS_QUERY`` hold the text of the query files.
"""

from pathlib import Path

from ._binding import language


def _query(name: str) -> str:
    here = Path(__file__).resolve().parent
    # installed: copied next to the package; editable install: the grammar's own queries/
    for folder in (here / "queries", here.parents[2] / "queries"):
        if (folder / name).is_file():
            return (folder / name).read_text(encoding="utf-8")
    return ""


HIGHLIGHTS_QUERY = _query("highlights.scm")
LOCALS_QUERY = _query("locals.scm")
FOLDS_QUERY = _query("folds.scm")

__all__ = ["FOLDS_QUERY", "HIGHLIGHTS_QUERY", "LOCALS_QUERY", "language"]
