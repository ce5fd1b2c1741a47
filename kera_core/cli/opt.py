"""The optimizer on the command line: `kera build --opt/--opt-report`, and `kera opt FILE`.

`kera build` (in :mod:`kera_core.cli.keg`) calls :func:`add_build_flags` and
:func:`optimize_for_build`; `kera opt FILE` prints the optimized graph (like `kera
graph`) on standard output and the pass table on standard error.

Fingerprints: `kera fingerprint` always reports the *unoptimized* graph — the program's
identity, independent of optimizer version and flags. An optimized graph has its own
fingerprint, which `kera build --opt` prints and writes into the artifact.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from kera_core.cli.inputs import UsageError
from kera_core.ir.graph import Graph
from kera_core.ir.provenance import Provenance

# The optimizer (and, through constant folding, the interpreter and numpy) is imported
# when a command optimizes, not when the command line is built. The pass names, for the
# help text only: tests/test_cli_startup.py keeps them equal to kera_core.opt.PASSES.
PASS_NAMES = ("inline", "fold", "cse", "dce", "fuse", "vectorize")


def add_build_flags(parser) -> None:
    parser.add_argument(
        "--opt", action="store_true", help="build the optimized graph (docs/optimizer.md)"
    )
    parser.add_argument(
        "--opt-report",
        action="store_true",
        help="print the optimizer's pass table to stderr (implies --opt)",
    )


def carry_provenance(prov: Provenance | None, graph: Graph) -> Provenance | None:
    """Provenance for an optimized graph: the functions that remain. Spans of nodes the
    optimizer kept (same hash) stay; new nodes have none."""
    if prov is None:
        return None
    return Provenance(
        {name: replace(fp) for name, fp in prov.functions.items() if name in graph.functions}
    )


def run_optimizer(graph: Graph, path: str, report: bool, passes=None, max_iterations: int = 8):
    """The optimized graph, the table printed to stderr if ``report``; None after an error."""
    from kera_core.opt import OptimizerError, format_report, optimize

    try:
        result = optimize(graph, passes=passes, max_iterations=max_iterations)
    except OptimizerError as e:
        print(f"{path}: internal optimizer error: {e}", file=sys.stderr)
        return None
    if report:
        print(format_report(result.report), file=sys.stderr)
    return result.graph


def optimize_for_build(graph: Graph, prov: Provenance | None, args, path: str):
    """(graph, provenance) to build: optimized if `--opt`/`--opt-report`; None on error."""
    if not (getattr(args, "opt", False) or getattr(args, "opt_report", False)):
        return graph, prov
    out = run_optimizer(graph, path, getattr(args, "opt_report", False))
    if out is None:
        return None
    return out, carry_provenance(prov, out)


def register(sub) -> None:
    o = sub.add_parser("opt", help="optimize a program and show the optimized graph")
    o.add_argument("file", help="a .kera or .keg file, or - for stdin")
    o.add_argument("--fn", metavar="NAME", help="only show this function")
    o.add_argument(
        "--passes",
        metavar="P,Q",
        help=f"passes to run, in order (default: {','.join(PASS_NAMES)})",
    )
    o.add_argument("--max-iterations", type=int, default=8, metavar="N")
    o.add_argument("--quiet", action="store_true", help="do not print the pass table")
    fmt = o.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="JSON for tools")
    fmt.add_argument("--dot", action="store_true", help="Graphviz DOT")
    o.set_defaults(func=cmd_opt)


def parse_passes(text: str | None):
    from kera_core.opt import PASSES

    if text is None:
        return None
    out = []
    for name in filter(None, (p.strip() for p in text.split(","))):
        if name not in PASSES:
            raise UsageError(f"--passes: unknown pass `{name}` (passes: {', '.join(PASSES)})")
        out.append(name)
    return out


def cmd_opt(args) -> int:
    from kera_core.cli.keg import load_module_or_keg
    from kera_core.ir.view import graph_dot, graph_json, graph_text

    passes = parse_passes(args.passes)
    if args.max_iterations < 1:
        raise UsageError("--max-iterations must be at least 1")
    loaded = load_module_or_keg(args.file)
    if loaded is None:
        return 1
    graph, prov = loaded
    out = run_optimizer(graph, args.file, not args.quiet, passes, args.max_iterations)
    if out is None:
        return 1
    if args.fn is not None and args.fn not in out.functions:
        names = ", ".join(sorted(out.functions)) or "none"
        raise UsageError(f"no function `{args.fn}` in the optimized graph (functions: {names})")
    view = graph_json if args.json else graph_dot if args.dot else graph_text
    sys.stdout.write(view(out, carry_provenance(prov, out), args.fn))
    return 0
