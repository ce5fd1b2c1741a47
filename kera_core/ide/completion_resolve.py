"""What ``completionItem/resolve`` adds to a completion item, looked up by its kind and label
(so the list itself can leave documentation and long signatures out), and the snippets of
item and control-flow keywords."""

from __future__ import annotations

from kera_core.ide import builtins as B
from kera_core.ide.completion import _struct_detail
from kera_core.ide.hover import signature_text
from kera_core.workspace import Analysis

#: Keyword -> LSP snippet (tab stops `$1…`, final cursor `$0`); bodies use 4 spaces.
SNIPPETS = {
    "fn": "fn ${1:name}(${2}) {\n    $0\n}",
    "struct": "struct ${1:Name} { ${2:field}: ${3:f32} }",
    "for": "for ${1:i} in ${2:0}..${3:n} {\n    $0\n}",
    "if": "if ${1:condition} {\n    $0\n}",
    "while": "while ${1:condition} {\n    $0\n}",
    "loop": "loop {\n    $0\n}",
    "match": "match ${1:value} {\n    ${2:0} => ${3:value},\n    _ => $0,\n}",
}

#: Kinds whose detail (a signature) is long enough to leave to resolve.
LAZY_DETAIL_KINDS = frozenset({"function", "builtin", "struct"})


def documentation(a: Analysis, kind: str, label: str) -> str:
    env = a.module.env if a.module is not None else None
    if kind == "function" and env is not None and label in env.fns:
        return env.fns[label].doc
    if kind == "builtin" and label in B.INFO:
        return B.INFO[label].doc
    if kind == "type":
        return B.PRIMITIVE_DOCS.get(label, "")
    if kind == "space":
        return B.SPACE_DOCS.get(label, "")
    if kind == "effect":
        return B.EFFECT_DOCS.get(label, "")
    return ""


def detail(a: Analysis, kind: str, label: str) -> str:
    env = a.module.env if a.module is not None else None
    if kind == "function" and env is not None and label in env.fns:
        return signature_text(env.fns[label])
    if kind == "builtin" and label in B.INFO:
        return B.INFO[label].label
    if kind == "struct" and env is not None and label in env.structs:
        return _struct_detail(env.structs[label])
    return ""
