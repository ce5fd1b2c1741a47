"""Graph commands: `kera fingerprint` and `kera graph`, for .kera sources and .keg files."""

from __future__ import annotations

import sys

from kera_core.cli.inputs import UsageError
from kera_core.cli.keg import load_module_or_keg

# The views and the .keg reader are imported by the commands that use them, not when the
# command line is built: `kera check` never loads them (start-up, tests/test_cli_startup.py).


def register(sub) -> None:
    f = sub.add_parser(
        "fingerprint", help="print the graph hash and one hash per exported function"
    )
    f.add_argument("file", help="a .kera file, a package (directory or kera.toml), or -")
    f.set_defaults(func=cmd_fingerprint, fast_exit=True)

    g = sub.add_parser("graph", help="show the graph: nodes, types, inputs, attributes")
    g.add_argument("file", help="a .kera file, a package (directory or kera.toml), or -")
    g.add_argument("--fn", metavar="NAME", help="only this function")
    fmt = g.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="JSON for tools")
    fmt.add_argument("--dot", action="store_true", help="Graphviz DOT")
    g.set_defaults(func=cmd_graph, fast_exit=True)


def cmd_fingerprint(args) -> int:
    if args.file.endswith(".wasm"):
        from kera_core.backends.wasm import read_fingerprint
        from kera_core.cli.inputs import read_input

        fp = read_fingerprint(read_input(args.file).raw)
        if fp is None:
            print(f"{args.file}: no kera.fingerprint section", file=sys.stderr)
            return 1
        print(f"sha3-256:{fp.hex()}")
        return 0
    from kera_core.keg import fingerprint_lines_of

    loaded = load_module_or_keg(args.file)
    if loaded is None:
        return 1
    print("\n".join(fingerprint_lines_of(loaded[0])))
    return 0


def cmd_graph(args) -> int:
    from kera_core.ir.view import graph_dot, graph_json, graph_text

    loaded = load_module_or_keg(args.file)
    if loaded is None:
        return 1
    graph, prov = loaded
    if args.fn is not None and args.fn not in graph.functions:
        names = ", ".join(sorted(graph.functions)) or "none"
        raise UsageError(f"no function `{args.fn}` in {args.file} (functions: {names})")
    view = graph_json if args.json else graph_dot if args.dot else graph_text
    sys.stdout.write(view(graph, prov, args.fn))
    return 0
