"""Go to definition, find references and rename, from the uses sema resolved."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kera_core.ide import builtins as B
from kera_core.ide.common import (
    ITEM_KINDS,
    Symbol,
    all_uses,
    fn_uses,
    imported_origin,
    same_symbol,
    symbol_at,
    token_at,
)
from kera_core.source import Span
from kera_core.syntax.kinds import SyntaxKind as K
from kera_core.workspace import Analysis

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
RENAMEABLE = frozenset(
    {"fn", "struct", "field", "const", "local", "param", "loop", "dim", "tparam"}
)


class RenameError(Exception):
    """Why a rename is refused; the message is shown to the user."""


def definition(a: Analysis, offset: int) -> Span | None:
    sym = symbol_at(a, offset)
    return sym.def_span if sym is not None else None


def definition_location(a: Analysis, offset: int) -> tuple[str | None, Span] | None:
    """Where the name at ``offset`` is defined: (None, span) in this file, or (path, span)
    in another file of the package for an imported item (language.md, "Modules"), from a
    use of it and from its `use` declaration alike."""
    sym = symbol_at(a, offset)
    if sym is None or sym.def_span is None:
        return None
    imp = imported_origin(a, sym)
    if imp is not None:
        return imp.path, imp.def_span
    return None, sym.def_span


def references(a: Analysis, offset: int, include_declaration: bool = True) -> list[Span]:
    sym = symbol_at(a, offset)
    if sym is None or sym.def_span is None:
        return []
    return _occurrences(a, sym, include_declaration)


def _occurrences(a: Analysis, sym: Symbol, include_declaration: bool) -> list[Span]:
    if sym.kind in ITEM_KINDS:
        uses = all_uses(a)
    else:  # a local lives in one function
        sig = a.sig_at(sym.def_span.start)
        uses = fn_uses(a, sig) if sig is not None else []
    spans = {u.span for u in uses if same_symbol(a, u, sym)}
    if include_declaration:
        spans.add(sym.def_span)
    else:
        spans.discard(sym.def_span)
    return sorted(spans, key=lambda s: (s.start, s.end))


def prepare_rename(a: Analysis, offset: int) -> tuple[Span, str]:
    """The span of the name to rename and its text; raises :class:`RenameError` if refused."""
    tok = token_at(a, offset)
    if tok is None or tok.kind != K.IDENT:
        if tok is not None and tok.kind.is_keyword:
            raise RenameError(f"`{tok.text}` is a keyword and cannot be renamed")
        raise RenameError("there is no name to rename here")
    sym = symbol_at(a, offset)
    if sym is None or sym.def_span is None or sym.kind not in RENAMEABLE:
        why = B.reserved(tok.text)
        if why is None and tok.text in B.MEMORY_SPACES:
            why = f"`{tok.text}` is a memory space"
        if why is None and tok.text in B.EFFECT_NAMES:
            why = f"`{tok.text}` is an effect"
        raise RenameError(
            f"{why} and cannot be renamed" if why else f"`{tok.text}` cannot be renamed"
        )
    imp = imported_origin(a, sym)
    if imp is not None:
        raise RenameError(
            f"`{sym.name}` is imported from module `{imp.module}`: renaming it needs the "
            "files of its package (the language server's rename, ide/package_refs.py)"
        )
    return sym.span, tok.text


@dataclass(frozen=True)
class RenameEdit:
    span: Span
    new_text: str


def _type_param_clash(a: Analysis, sym: Symbol, new_name: str) -> bool:
    """Would `T` renamed to ``new_name`` meet a name its function's signature has (K0206)?"""
    sig = a.sig_at(sym.def_span.start) if sym.def_span is not None else None
    if new_name in B.PRIMITIVES:
        return True
    if sig is None:
        return False
    return new_name in sig.dim_names or new_name in [t.name for t in sig.type_params]


def check_new_name(new_name: str) -> None:
    """Refuse a new name that is not an identifier or is reserved (:class:`RenameError`)."""
    if not _IDENT.match(new_name):
        raise RenameError(f"`{new_name}` is not an identifier")
    why = B.reserved(new_name)
    if why is not None:
        raise RenameError(f"cannot rename to {why}")


def rename(a: Analysis, offset: int, new_name: str) -> list[RenameEdit]:
    prepare_rename(a, offset)
    sym = symbol_at(a, offset)
    assert sym is not None and sym.def_span is not None
    check_new_name(new_name)
    if new_name == sym.name:
        return []
    env = a.module.env if a.module else None
    if env is not None:
        clash = (
            (sym.kind == "fn" and new_name in env.fns)
            or (sym.kind == "struct" and (new_name in env.structs or new_name in B.PRIMITIVES))
            or (sym.kind == "const" and env.const_named(new_name) is not None)
            or (sym.kind == "field" and (sym.owner, new_name) in env.field_spans)
            or (sym.kind == "tparam" and _type_param_clash(a, sym, new_name))
        )
        if clash:
            raise RenameError(f"`{new_name}` is already defined")
    return [RenameEdit(s, new_name) for s in _occurrences(a, sym, True)]
