"""Front-end commands: `kera parse`, `kera fmt`, `kera check`."""

from __future__ import annotations

import argparse
import json
import sys

from kera_core.cli.inputs import UsageError, read_input
from kera_core.diagnostics import render, render_json
from kera_core.source import LineIndex, encode
from kera_core.syntax.parse import parse
from kera_core.syntax.tree import debug_tree


def register(sub) -> None:
    p = sub.add_parser("parse", help="parse files; print diagnostics (and the trees with --tree)")
    p.add_argument(
        "file", help="a .kera file, a package (a directory or a kera.toml), or - for stdin"
    )
    p.add_argument("--tree", action="store_true", help="print the lossless syntax tree")
    p.set_defaults(func=cmd_parse, fast_exit=True)

    f = sub.add_parser("fmt", help="format files (print, --check or --write)")
    f.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help=".kera files, packages (every file of a directory or a kera.toml), or - for stdin",
    )
    g = f.add_mutually_exclusive_group()
    g.add_argument("--check", action="store_true", help="exit 1 if a file is not formatted")
    g.add_argument("--write", action="store_true", help="rewrite files in place")
    f.set_defaults(func=cmd_fmt, fast_exit=True)

    c = sub.add_parser("check", help="report diagnostics of every stage")
    c.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help=".kera files, packages (a directory or a kera.toml), or - for stdin",
    )
    c.add_argument("--format", choices=["text", "json"], default="text")
    c.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="check in N processes (default: the processors this process may use; 1: in "
        "this process only). The output is the same for every N",
    )
    c.set_defaults(func=cmd_check, fast_exit=True)


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _print_diags(diags, text: str, path: str) -> None:
    index = LineIndex(text)
    for d in diags:
        print(render(d, text, path, index), file=sys.stderr)
        print(file=sys.stderr)


def cmd_parse(args) -> int:
    from kera_core.cli.package import files_of

    paths = files_of([args.file])
    status = 0
    for path in paths:
        inp = read_input(path)
        result = parse(inp.text)
        if args.tree:
            if len(paths) > 1:  # each package file's tree under its path
                print(f"{inp.path}:")
            sys.stdout.write(debug_tree(result.tree))
        _print_diags(result.diagnostics, inp.text, inp.path)
        n_err = sum(d.is_error for d in result.diagnostics)
        if not args.tree:
            print(f"{inp.path}: {len(inp.raw)} bytes, {n_err} syntax error(s)")
        status = max(status, 1 if n_err else 0)
    return status


def cmd_fmt(args) -> int:
    from kera_core.cli.package import files_of
    from kera_core.fmt import format_text

    if args.write and "-" in args.files:
        raise UsageError("--write cannot be used with stdin")
    inputs = [read_input(p) for p in files_of(args.files)]
    status = 0
    for inp in inputs:
        res = format_text(inp.text)
        if res.diagnostics:
            _print_diags(res.diagnostics, inp.text, inp.path)
            status = max(status, 1)
            continue
        if args.check:
            if res.changed:
                print(f"{inp.path}: would reformat", file=sys.stderr)
                status = 1
        elif args.write:
            if res.changed:
                with open(inp.path, "wb") as fh:
                    fh.write(encode(res.text))
                print(f"{inp.path}: reformatted", file=sys.stderr)
        else:
            sys.stdout.write(res.text)
    return status


def cmd_check(args) -> int:
    from kera_core import jobs
    from kera_core.cli import package
    from kera_core.manifest import is_package_path

    # (path, text, diagnostics) of every file: a package's files each under their path; a
    # file's diagnostics (None here) come from `jobs` once every input is read
    checked: list[tuple[str, str, list | None]] = []
    for path in args.files:
        if path != "-" and is_package_path(path):
            pkg = package.load(path)
            checked += [(m.unit.path, m.unit.text, m.diagnostics) for m in pkg.modules.values()]
        else:
            inp = read_input(path)
            checked.append((inp.path, inp.text, None))
    files = [i for i, (_, _, diags) in enumerate(checked) if diags is None]
    n_jobs = args.jobs if args.jobs is not None else jobs.usable_cores()
    found = jobs.check_texts([checked[i][1] for i in files], n_jobs)
    for i, diags in zip(files, found, strict=True):
        checked[i] = (checked[i][0], checked[i][1], diags)
    any_err = any(d.is_error for _, _, diags in checked for d in diags)
    rows = []
    if args.format == "json":
        for path, text, diags in checked:
            rows.extend(json.loads(render_json(diags, text, path)))
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        sources = {path: text for path, text, _ in checked}
        for path, text, diags in checked:
            index = LineIndex(text)
            for d in diags:
                print(render(d, text, path, index, sources), file=sys.stderr)
                print(file=sys.stderr)
        n = len(checked)
        print(f"checked {n} file{'s' if n != 1 else ''}: {'errors found' if any_err else 'ok'}")
    return 1 if any_err else 0
