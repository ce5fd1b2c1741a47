"""`kera build FILE --target keg -o OUT`, and loading a program from `.kera` or `.keg`.

`load_module_or_keg` is the one place that decides whether an input is source or a
graph file, so `fingerprint`, `graph` and `run` treat both alike.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from kera_core import targets
from kera_core.cli.front import _print_diags
from kera_core.cli.inputs import (
    UsageError,
    add_isa_flag,
    add_stream_flag,
    apply_isa,
    apply_sim,
    read_input,
)
from kera_core.cli.opt import add_build_flags, optimize_for_build

if TYPE_CHECKING:
    from kera_core.ir.graph import Graph
    from kera_core.ir.provenance import Provenance

# The .keg reader and writer are imported where a file is read, not when the command line
# is built: `kera check` never loads them (start-up, tests/test_cli_startup.py).


def register(sub) -> None:
    b = sub.add_parser("build", help="compile a program to an artifact (today: a .keg graph file)")
    b.add_argument(
        "file",
        help="a .kera file, a package (a directory or a kera.toml), a .keg file to "
        "re-encode, or - for stdin",
    )
    names = ", ".join(targets.names())
    b.add_argument("--target", default="keg", help=f"what to build: {names}")
    b.add_argument(
        "--entry", metavar="NAME", help="the function to compile (targets that take one: wasm)"
    )
    b.add_argument("-o", "--output", metavar="OUT", help="output path (- for stdout)")
    b.add_argument(
        "--no-provenance",
        action="store_true",
        help="leave out spans and names (smaller; the fingerprint is the same)",
    )
    b.add_argument(
        "--emit",
        choices=("artifact", "asm"),
        default="artifact",
        help="asm: the readable form (x86_64 assembly, wasm text) instead of the artifact",
    )
    b.add_argument(
        "--report",
        action="store_true",
        help="also print the target's report on stderr (targets that have one: ptx)",
    )
    add_isa_flag(b)
    add_stream_flag(b)
    add_build_flags(b)
    b.set_defaults(func=cmd_build)


def check_target(name: str) -> str:
    """The target ``name`` if the registry knows it; a usage error (exit 2) otherwise."""
    if targets.get(name) is None:
        known = ", ".join(targets.names())
        raise UsageError(f"unknown build target `{name}` (known: {known})")
    return name


def _looks_like_keg(path: str, raw: bytes) -> bool:
    from kera_core.keg import is_keg

    return is_keg(raw) or path.endswith(".keg")


def load_module_or_keg(path: str) -> tuple[Graph, Provenance | None] | None:
    """(graph, provenance) of a `.kera` or `.keg` file; ``None`` after printing why not.

    A file is read as `.keg` if it starts with ``KEG\\0`` or its name ends in `.keg`;
    otherwise it is source and is analysed. Errors (diagnostics, a corrupt `.keg`) go
    to stderr and give ``None``, which a command turns into exit status 1; an
    unreadable path raises :class:`UsageError` (exit 2).
    """
    from kera_core.analysis import analyze
    from kera_core.keg import KegError, read_keg
    from kera_core.manifest import is_package_path

    if path != "-" and is_package_path(path):
        from kera_core.cli import package

        pkg = package.load(path)
        if pkg.has_errors:
            package.print_diagnostics(pkg)
            print(f"{path}: {package.error_count(pkg)} error(s); no graph", file=sys.stderr)
            return None
        return pkg.graph, pkg.provenance
    inp = read_input(path)
    if _looks_like_keg(path, inp.raw):
        try:
            k = read_keg(inp.raw)
        except KegError as e:
            print(f"{inp.path}: invalid .keg file: {e}", file=sys.stderr)
            return None
        return k.graph, k.provenance
    a = analyze(inp.text)
    if a.has_errors:
        _print_diags(a.diagnostics, inp.text, inp.path)
        n = sum(d.is_error for d in a.diagnostics)
        print(f"{inp.path}: {n} error(s); no graph", file=sys.stderr)
        return None
    return a.module.graph, a.module.provenance


def fingerprint_lines(path: str) -> list[str] | None:
    """`kera fingerprint`'s lines for a `.keg` file; ``None`` if ``path`` is not one.

    Raises :class:`KegError` for a corrupt `.keg`. For stdin (``-``) use
    :func:`load_module_or_keg` instead: stdin cannot be read twice.
    """
    from kera_core.keg import fingerprint_lines_of, read_keg

    inp = read_input(path)
    if not _looks_like_keg(path, inp.raw):
        return None
    return fingerprint_lines_of(read_keg(inp.raw).graph)


def _default_output(path: str, suffix: str) -> str:
    if path == "-":
        raise UsageError("reading stdin: give the output path with -o")
    stem, ext = os.path.splitext(path)
    out = (stem if ext in (".kera", ".keg") else path) + suffix
    if os.path.abspath(out) == os.path.abspath(path):
        raise UsageError(f"{path}: give a different output path with -o")
    return out


def cmd_build(args) -> int:
    apply_isa(args)
    apply_sim(args)
    target = targets.get(check_target(args.target))
    assert target is not None
    out = args.output if args.output is not None else _default_output(args.file, target.suffix)
    loaded = load_module_or_keg(args.file)
    if loaded is None:
        return 1
    built = optimize_for_build(*loaded, args, args.file)
    if built is None:
        return 1
    graph, prov = built
    if getattr(target, "per_function", False):
        names = ", ".join(f.name for f in graph.exported()) or "none"
        if args.entry is None:
            raise UsageError(
                f"target {target.name} compiles one function: give --entry NAME ({names})"
            )
        if args.entry not in graph.functions:
            raise UsageError(f"no function `{args.entry}` in {args.file} (exported: {names})")
    reasons = target.unsupported(graph, args.entry)
    if reasons:
        for r in reasons:
            print(f"{args.file}: target {target.name}: {r}", file=sys.stderr)
        return 1
    if getattr(args, "report", False) and not hasattr(target, "report"):
        raise UsageError(f"target {target.name} has no report (--report)")
    art = target.lower(graph, None if args.no_provenance else prov, args.entry)
    if getattr(args, "report", False):
        sys.stderr.write(target.report(graph, args.entry))
    data = art.data
    if args.emit == "asm":
        if art.text is None:
            raise UsageError(f"target {target.name} has no readable form (--emit asm)")
        data = art.text.encode()
        if args.output is None:
            out = "-"
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        try:
            with open(out, "wb") as fh:
                fh.write(data)
        except OSError as e:
            raise UsageError(f"{out}: cannot write: {e.strerror}") from None
    where = "<stdout>" if out == "-" else out
    print(
        f"{where}: {len(data)} bytes, sha3-256:{graph.fingerprint().hex()}",
        file=sys.stderr,
    )
    return 0
