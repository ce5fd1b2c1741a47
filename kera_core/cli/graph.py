"""Graph commands: `kera fingerprint` and `kera graph`."""

from __future__ import annotations

import sys

from kera_core.analysis import analyze
from kera_core.cli.front import _print_diags
from kera_core.cli.inputs import UsageError, read_input
from kera_core.ir.view import graph_dot, graph_json, graph_text


def register(sub) -> None:
    f = sub.add_parser(
        "fingerprint", help="print the graph hash and one hash per exported function"
    )
    f.add_argument("file", help="a .kera file, or - for stdin")
    f.set_defaults(func=cmd_fingerprint)

    g = sub.add_parser("graph", help="show the graph: nodes, types, inputs, attributes")
    g.add_argument("file", help="a .kera file, or - for stdin")
    g.add_argument("--fn", metavar="NAME", help="only this function")
    fmt = g.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="JSON for tools")
    fmt.add_argument("--dot", action="store_true", help="Graphviz DOT")
    g.set_defaults(func=cmd_graph)


def _module(path: str):
    inp = read_input(path)
    a = analyze(inp.text)
    if a.has_errors:
        _print_diags(a.diagnostics, inp.text, inp.path)
        n = sum(d.is_error for d in a.diagnostics)
        print(f"{inp.path}: {n} error(s); no graph", file=sys.stderr)
        return None
    return a.module


def cmd_fingerprint(args) -> int:
    m = _module(args.file)
    if m is None:
        return 1
    print(f"sha3-256:{m.graph.fingerprint().hex()}")
    for f in m.graph.exported():
        print(f"fn {f.name} sha3-256:{f.hash.hex()}")
    return 0


def cmd_graph(args) -> int:
    m = _module(args.file)
    if m is None:
        return 1
    if args.fn is not None and args.fn not in m.graph.functions:
        names = ", ".join(sorted(m.graph.functions)) or "none"
        raise UsageError(f"no function `{args.fn}` in {args.file} (functions: {names})")
    view = graph_json if args.json else graph_dot if args.dot else graph_text
    sys.stdout.write(view(m.graph, m.provenance, args.fn))
    return 0
