"""`kera lsp`: run the language server (stdio by default, `--tcp PORT` for debugging)."""

from __future__ import annotations


def register(sub) -> None:
    from kera_lsp import add_arguments

    p = sub.add_parser("lsp", help="run the language server (stdio; --tcp PORT for debugging)")
    add_arguments(p)
    p.set_defaults(func=cmd_lsp)


def cmd_lsp(args) -> int:
    from kera_lsp import run

    return run(args)
