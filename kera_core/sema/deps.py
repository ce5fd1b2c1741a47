"""What one function can see of the file's other items: per-function cache keys.

A function's signature reads the structs and constants its types name; its lowering
reads, besides, the signatures of the functions it names (calls, `&mut` passing, the
"is a function" error) and the constants it reads (a constant's value is lowered where it
is read, so a constant read reads the constants *that* names too). Every such read goes
through a name written in the function's own text. So a function's key names only the
items whose names occur in its text (:func:`mentions`, a superset: comments, keywords and
field names count too), each with a digest of what can be read of it, plus the sets of
names (an unknown name's "did you mean" lists them, ``name in env.fns`` tells a function
from an unknown name). A signature, struct or constant edit then changes the keys of the
functions that name it only; the rest hit the lowering cache.

What each item contributes (:meth:`Deps.item`):

* a function: its signature type's hash, its dimension and parameter names, `pub`, its
  type parameters (a call reads all of them; positions are not keys: a diagnostic that
  points into the callee makes the caller's lowering not relocatable, see
  ``LoweredFn.relocatable``, and it is reused only where the callee's header has the same
  text, its spans moved with it: sema/module.py ``_reusable``);
* a struct: its type's hash (the fields and their types, nested structs included);
* a constant: its value's text, its type's hash and whether its check failed
  (``env.bad_consts``), and the same of every constant and struct its value and type name,
  transitively (constants may name constants).
"""

from __future__ import annotations

import re

from kera_core.ir.encoding import Writer, digest
from kera_core.sema.env import ModuleEnv

# An identifier token's text is always a maximal match here (the lexer's `ident`; an
# integer or float literal swallows the letters that follow its digits).
_IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_IDENT_STR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


#: the texts of the pieces (statements) of the last long node whose text was made: the
#: next version of an edited long function shares all but one of them
_PIECES: list[dict] = [{}]
#: the last two long nodes asked and their texts
_RECENT: list[tuple] = [()]
#: a node this long or shorter is one piece
_PIECE = 2048


def text_of(green) -> str:
    """``str(green)``; a long node's (an edited long function's, several memos of each
    version read it: its digest, its identifiers) is joined from its pieces' texts, kept
    from the last long node asked, so an edit in it makes the text of the edited piece only.
    (The table is replaced whole, never changed: another thread's read stays consistent.)"""
    if green.text_len <= _PIECE:
        return str(green)
    recent = _RECENT[0]
    for g, text in recent:
        if g is green:
            return text
    last = _PIECES[0]
    fresh: dict[int, tuple] = {}
    text = _joined(green, last, fresh)
    _PIECES[0] = fresh
    _RECENT[0] = ((green, text), *recent[:1])  # (the version before: its text is read too)
    return text


def _joined(green, last: dict, fresh: dict) -> str:
    out = []
    for c in green.children:
        if c.is_token:
            out.append(c.text)
        elif c.text_len > _PIECE:
            out.append(_joined(c, last, fresh))
        else:
            hit = last.get(id(c))
            t = hit[1] if hit is not None and hit[0] is c else str(c)
            fresh[id(c)] = (c, t)
            out.append(t)
    return "".join(out)


def mentions(green, source: bytes | None, start: int) -> frozenset[str]:
    """The identifiers in an item's text: ``source[start:start + len]`` when the file's
    UTF-8 is known (no lone surrogate), else the item's text."""
    if source is not None:
        found = set(_IDENT.findall(source, start, start + green.text_len))
        return frozenset(map(bytes.decode, found))
    return frozenset(_IDENT_STR.findall(text_of(green)))


def _names(w: Writer, names) -> None:
    names = sorted(names)
    w.uvar(len(names))
    for n in names:
        w.str(n)


class Deps:
    """The per-item digests of one module version, and the per-function keys made of them.

    ``type_items`` (structs and constants) are known after the declarations are collected,
    which is all a signature needs (:meth:`sig_key`); :meth:`add_functions` adds the
    functions' signatures and the constants' check, which a lowering reads (:meth:`key`).
    """

    __slots__ = ("type_names", "type_items", "names", "fn_items", "items", "own", "mentioned")

    def __init__(self, env: ModuleEnv, const_mentions: dict[str, frozenset[str]]) -> None:
        w = Writer()
        _names(w, env.structs)
        _names(w, env.consts)
        _names(w, env.imported_consts)
        _names(w, env.failed_imports)  # a use of one is not reported (sema/package.py)
        self.type_names = digest("fn", w.getvalue())
        own: dict[str, bytes] = {}
        for name, st in env.structs.items():
            own[name] = b"s" + st.hash
        for name, c in env.consts.items():
            w = Writer()
            w.str(str(c.value.syntax) if c.value is not None else "")
            w.raw(c.type.hash if c.type is not None else b"")
            own[name] = own.get(name, b"") + b"c" + digest("fn", w.getvalue())
        for name, ic in env.imported_consts.items():  # by its lowered value's digest
            t = ic.const.type
            own[name] = own.get(name, b"") + b"i" + ic.digest + (t.hash if t is not None else b"")
        self.type_items = self._closures(list(own), own, const_mentions, {})
        self.own = own  # each struct's and constant's own digest (not what it names)
        self.mentioned = const_mentions  # the names each one's text holds
        self.names = b""
        self.fn_items: dict[str, bytes] = {}
        self.items: dict[str, bytes] = {}

    @staticmethod
    def _closures(names: list[str], own: dict[str, bytes], mentions, known: dict) -> dict:
        """The digests of ``names`` with those of the structs and constants they name,
        transitively: each one's own digest and, in name order, the digests so made of the
        items it names directly (a Merkle tree over the mentions — linear in all, where the
        flat list of everything reachable was quadratic for a chain of 4,000 constants); an
        item not among ``names`` has its digest in ``known``. Where the mentions have a cycle
        (an error, reported elsewhere) every name gets the flat :meth:`_closure`."""
        asked = set(names)
        out: dict[str, bytes] = {}
        visiting: set[str] = set()
        for root in names:
            stack: list[tuple[str, list[str] | None]] = [(root, None)]
            while stack:
                n, kids = stack.pop()
                if kids is None:
                    if n in out:
                        continue
                    visiting.add(n)
                    kids = sorted({m for m in mentions.get(n, ()) if m in own and m != n})
                    stack.append((n, kids))
                    for m in kids:
                        if m in out or (m not in asked and m in known):
                            continue
                        if m in visiting:
                            return {n: Deps._closure(n, own, mentions) for n in names}
                        stack.append((m, None))
                    continue
                visiting.discard(n)
                if not kids:
                    out[n] = own[n]
                    continue
                w = Writer()
                w.raw(own[n])
                for m in kids:
                    w.str(m)
                    w.raw(out[m] if m in out else known[m])
                out[n] = digest("fn", w.getvalue())
        return out

    @staticmethod
    def _closure(name: str, own: dict[str, bytes], const_mentions) -> bytes:
        """An item's digest with those of the structs and constants it names, transitively."""
        seen = {name}
        todo = [name]
        while todo:
            for m in const_mentions.get(todo.pop(), ()):
                if m in own and m not in seen:
                    seen.add(m)
                    todo.append(m)
        if len(seen) == 1:
            return own[name]
        w = Writer()
        for n in sorted(seen):
            w.str(n)
            w.raw(own[n])
        return digest("fn", w.getvalue())

    def add_functions(self, env: ModuleEnv, memo: dict | None = None) -> None:
        """Add the functions' signatures and the constants' check (after both are made).
        ``memo`` (``LoweringCache.items``) keeps each function's digest per green node while
        its signature is the same memoised one (the same type object)."""
        w = Writer()
        w.raw(self.type_names)
        _names(w, env.fns)
        self.names = digest("fn", w.getvalue())
        memo = {} if memo is None else memo
        fn_items = {}
        for name, sig in env.fns.items():
            green = sig.ast.syntax.green
            hit = memo.get(id(green))
            if hit is None or hit[0] is not green or hit[1] is not sig.type:
                hit = memo[id(green)] = (green, sig.type, self.item(sig))
            fn_items[name] = hit[2]
        self._merge(fn_items, env.bad_consts)

    def adopt_functions(self, old: Deps, bad_consts) -> None:
        """Add ``old``'s functions (the same names and signatures) to these structs and
        constants (an edit to one of them), and the constants' check."""
        self.names = old.names
        self._merge(old.fn_items, bad_consts)

    def _merge(self, fn_items: dict[str, bytes], bad_consts) -> None:
        items = dict(self.type_items)
        for name in bad_consts:
            if name in items:
                items[name] = b"!" + items[name]
        for name, d in fn_items.items():  # a function may share a struct's or a constant's name
            items[name] = items[name] + d if name in items else d
        self.fn_items = fn_items
        self.items = items

    def with_declarations(self, env: ModuleEnv, mentioned: dict) -> Deps:
        """These digests after the structs and constants ``mentioned`` changed (``env``: the
        new declarations, the constants' check included; ``mentioned``: the names each one's
        text holds now), when every other struct or constant that names one of them is among
        them — so no other item's digest changes."""
        out = Deps.__new__(Deps)
        out.type_names, out.names, out.fn_items = self.type_names, self.names, self.fn_items
        own = dict(self.own)
        for name in mentioned:  # (as __init__ makes them: a struct may share a constant's name)
            part = b""
            if name in env.structs:
                part = b"s" + env.structs[name].hash
            c = env.consts.get(name)
            if c is not None:
                w = Writer()
                w.str(str(c.value.syntax) if c.value is not None else "")
                w.raw(c.type.hash if c.type is not None else b"")
                part += b"c" + digest("fn", w.getvalue())
            ic = env.imported_consts.get(name)
            if ic is not None:
                t = ic.const.type
                part += b"i" + ic.digest + (t.hash if t is not None else b"")
            own[name] = part
        out.own = own
        out.mentioned = {**self.mentioned, **mentioned}
        type_items = dict(self.type_items)
        items = dict(self.items)
        fresh = self._closures([n for n in mentioned if n in own], own, out.mentioned, type_items)
        for name in mentioned:
            d = type_items[name] = fresh[name]
            if name in env.bad_consts:
                d = b"!" + d
            if name in self.fn_items:
                d += self.fn_items[name]
            items[name] = d
        out.type_items, out.items = type_items, items
        return out

    def with_item(self, name: str, digest_: bytes) -> Deps:
        """These digests with one function's replaced (its signature changed)."""
        out = Deps.__new__(Deps)
        out.type_names, out.type_items, out.names = self.type_names, self.type_items, self.names
        out.own, out.mentioned = self.own, self.mentioned
        out.fn_items = {**self.fn_items, name: digest_}
        own = self.items[name][: -len(digest_)] if name in self.type_items else b""
        out.items = {**self.items, name: own + digest_}
        return out

    @staticmethod
    def item(sig) -> bytes:
        """What a caller can read of a function's signature."""
        w = Writer()
        w.raw(sig.type.hash)
        _names(w, ())  # a separator
        for group in (sig.dim_names, sig.param_names):
            w.uvar(len(group))
            for n in group:
                w.str(n)
        w.uvar(1 if sig.exported else 0)
        w.uvar(len(sig.type_params))
        for t in sig.type_params:
            w.str(t.name)
            w.str(t.bound)
        return b"f" + digest("fn", w.getvalue())

    def sig_key(self, seen: frozenset[str]) -> tuple:
        """What a signature whose text holds the identifiers ``seen`` reads of other items."""
        items = self.type_items
        return (self.type_names, tuple(sorted((n, items[n]) for n in seen & items.keys())))

    def key_parts(self, seen: frozenset[str]) -> tuple:
        """What a lowering whose text holds the identifiers ``seen`` reads of other items."""
        items = self.items
        return (self.names, tuple(sorted((n, items[n]) for n in seen & items.keys())))


def key_digest(parts: tuple) -> bytes:
    """:meth:`Deps.key_parts` as a digest (a lowering cache key's part)."""
    names, named = parts
    w = Writer()
    w.raw(names)
    w.uvar(len(named))
    for n, d in named:
        w.str(n)
        w.raw(d)
    return digest("fn", w.getvalue())
