"""Text -> lossless tree + diagnostics: the front end's public entry point."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kera_core.diagnostics import Diagnostic, sort_key
from kera_core.source import decode
from kera_core.stack import deep_recursion
from kera_core.syntax.builder import TreeBuilder, significant
from kera_core.syntax.kinds import SyntaxKind
from kera_core.syntax.lexer import LexedText, lex
from kera_core.syntax.parser import grammar
from kera_core.syntax.parser.events import FINISH, TOKEN
from kera_core.syntax.parser.parser import Parser, Stuck
from kera_core.syntax.tree import GreenNode, NodeCache, SyntaxNode

K = SyntaxKind

_DEFAULT_CACHE = NodeCache()


@dataclass
class Parse:
    """The result of parsing one text: the green root, its text and every front-end diagnostic."""

    text: str
    green: GreenNode
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def tree(self) -> SyntaxNode:
        return SyntaxNode(self.green)

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.diagnostics)

    def __str__(self) -> str:
        return str(self.green)


def run_rule(
    lexed: LexedText,
    rule: Callable[[Parser], None],
    root: SyntaxKind | None,
    cache: NodeCache,
    base: int = 0,
) -> tuple[GreenNode, list[Diagnostic], bool]:
    """Run one grammar rule over ``lexed``; returns (green, parse diagnostics, consumed all).

    With ``root`` set, the rule's output is wrapped in a ``root`` node (a file). With
    ``root`` None the rule itself must produce exactly one node (a block reparse).
    """
    sig = significant(lexed.kinds)
    kinds = list(map(lexed.kinds.__getitem__, sig))
    p = Parser(kinds)
    stopped = None
    try:
        # MAX_DEPTH levels of nesting, several frames each; no cyclic GC passes over the
        # hundreds of thousands of short-lived events and nodes (none of them in a cycle).
        with deep_recursion(quiet_gc=True):
            rule(p)
    except Stuck:
        stopped = ("K0109", "parser stopped: could not make progress here")
    except RecursionError:  # only when the caller itself left almost no room
        stopped = ("K0108", "nested too deeply to parse")
    if stopped is not None:
        # A grammar rule made no progress: keep what was parsed, the rest is one ERROR.
        # (Markers still open are tombstones: the builder skips them.)
        p.events.insert(0, root or K.ERROR)
        p.errors.append(stopped)
        p.events.append(-len(p.errors))
        p.events.append(K.ERROR)
        p.events.extend([TOKEN] * (len(kinds) - p.pos))
        p.events.append(FINISH)
        p.events.append(FINISH)
        p.pos = len(kinds)
    consumed = p.pos == len(kinds)
    if root is None and not consumed:
        return GreenNode(K.ERROR, ()), [], False
    builder = TreeBuilder(lexed, cache, base, sig)
    with deep_recursion(quiet_gc=True):
        green = builder.run(p.events, p.errors)
    return green, builder.diagnostics, consumed


def parse(source: str | bytes, cache: NodeCache | None = None) -> Parse:
    """Parse a whole file. Never raises; ``str(result.tree) == source`` always."""
    text = decode(source)
    lexed = lex(text)
    green, diags, _ = run_rule(lexed, grammar.source_file, K.SOURCE_FILE, cache or _DEFAULT_CACHE)
    all_diags = sorted(lexed.diagnostics + diags, key=sort_key)
    return Parse(text, green, all_diags)
