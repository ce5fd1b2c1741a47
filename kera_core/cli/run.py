"""`kera run`: run an exported function on given or generated inputs and print result digests.

    kera run examples/saxpy.kera --entry saxpy --seed 1 --dims N=1000

Prints, on standard output: the entry and its dimensions, one line per input and per
output (name, type, SHA3-256 of the raw little-endian bytes), what the program printed,
and last `result sha3-256:<hex>` — the digest every target must reproduce
(docs/semantics.md §10). Bad arguments exit 2; a checked run-time error exits 1 with
`result error <code>` as the last line.
"""

from __future__ import annotations

import argparse
import functools
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING

from kera_core import targets
from kera_core.cli.front import _print_diags
from kera_core.cli.inputs import (
    UsageError,
    add_emulate_flag,
    add_isa_flag,
    add_sim_flag,
    apply_emulate,
    apply_isa,
    apply_sim,
    read_input,
)
from kera_core.ir.provenance import Provenance
from kera_core.ir.types import Struct, Tensor, dim_names_for_display, strip_ref
from kera_core.source import LineIndex, encode

if TYPE_CHECKING:
    import numpy as np

# numpy and the interpreter are imported by the functions that run something, so that
# building the command line (`kera --help`, `kera check`) does not load them.

# The default dimension size, for the help text only (the value used is
# kera_core.interp.gen.DEFAULT_DIM; tests/test_cli_startup.py keeps the two equal).
_DEFAULT_DIM_HELP = 16


def target_names() -> list[str]:
    """What `--target` accepts: the interpreter, every registered target that can run a
    program (from the registry, without importing it), and `all`."""
    return ["interp", *targets.runnable_names(), "all"]


def register(sub) -> None:
    r = sub.add_parser("run", help="run a function and print the digests of its results")
    r.add_argument("file", help="a .kera file, a package (directory or kera.toml), or -")
    r.add_argument("--entry", required=True, metavar="NAME", help="the exported function to run")
    r.add_argument(
        "--target",
        default="interp",
        help=f"where to run it: {', '.join(target_names())} (default: interp, the reference)",
    )
    r.add_argument(
        "--seed",
        type=seed_arg,
        default=0,
        help="seed of the generated inputs, 0 to 2**64-1 (default 0)",
    )
    r.add_argument(
        "--dims",
        default="",
        metavar="N=1000,…",
        help=f"dimension sizes (default {_DEFAULT_DIM_HELP})",
    )
    r.add_argument("--inputs", metavar="IN.npz", help="input values by parameter name")
    r.add_argument("--out", metavar="OUT.npz", help="write the outputs here")
    r.add_argument(
        "--adversarial",
        action="store_true",
        help="generate subnormals, ±0, ±inf, NaN, huge and tiny values, integer extremes",
    )
    r.add_argument(
        "--max-steps", type=int, default=None, help="stop after this many loop iterations"
    )
    r.add_argument(
        "--fuel",
        type=int,
        default=None,
        help="instruction budget of fuel-metered targets such as wasm (default 20000000000)",
    )
    add_isa_flag(r)
    add_sim_flag(r)
    add_emulate_flag(r)
    r.set_defaults(func=cmd_run)


def select_target(name: str):
    """The runner for ``--target``: the interpreter, `all`, or a registered target that
    can run (:func:`kera_core.targets.run_module`); no target is named here."""
    if name == "interp":
        from kera_core.interp import run_function

        return run_function
    if name == "all":
        return run_all
    if name in targets.runnable_names():
        try:
            t = targets.get(name)
        except ImportError as e:
            raise UsageError(f"target `{name}` cannot be loaded here: {e}") from None
        if t is not None and hasattr(t, "run"):
            why = cannot_run_here(t)
            if why:
                raise UsageError(f"target `{name}` cannot run here: {why}")
            return functools.partial(targets.run_module, t)
    raise UsageError(f"unknown target `{name}` (targets: {', '.join(target_names())})")


def cannot_run_here(target) -> str | None:
    """Why ``target`` cannot run on this machine (its optional ``cannot_run_here``)."""
    check = getattr(target, "cannot_run_here", None)
    return check() if check is not None else None


def run_all(module, name, inputs, dims, *, stdout=None, max_steps=None, fuel=None):
    """`--target all`: the interpreter, then every registered target that can run ``name``
    here; one `target NAME …` line each on stderr. The outcomes must agree: the same
    digest, or the same run-time error code (semantics.md says which error wins); R0010
    if any differs. An error all agree on is raised as the interpreter's."""
    from kera_core.interp import InputError, InterpError, run_function

    def outcome(run):
        try:
            return run(), None
        except InputError:
            raise
        except InterpError as e:
            return None, e

    def shown(r, err) -> str:
        return f"error {err.code}" if err is not None else f"sha3-256:{r.digest()}"

    ref, ref_err = outcome(
        lambda: run_function(module, name, inputs, dims, stdout=stdout, max_steps=max_steps)
    )
    print(f"target interp {shown(ref, ref_err)}", file=sys.stderr)
    for tname in targets.runnable_names():
        try:
            t = targets.get(tname)
        except ImportError as e:  # the target needs a package this machine lacks
            print(f"target {tname} skipped: cannot load it here: {e}", file=sys.stderr)
            continue
        if t is None or not hasattr(t, "run"):
            continue
        why = cannot_run_here(t)
        if why:  # e.g. a GPU target on a machine without one
            print(f"target {tname} skipped: cannot run here: {why}", file=sys.stderr)
            continue
        if max_steps is not None and not getattr(t, "supports_max_steps", False):
            # its run would not stop where the interpreter's did: nothing to compare
            note = getattr(t, "bounds_note", "")
            print(f"target {tname} skipped: --max-steps does not apply ({note})", file=sys.stderr)
            continue
        try:
            r, err = outcome(
                lambda t=t: targets.run_module(
                    t, module, name, inputs, dims, fuel=fuel, max_steps=max_steps
                )
            )
        except InputError as e:  # the target cannot compile this function
            print(f"target {tname} skipped: {e.message}", file=sys.stderr)
            continue
        if getattr(err, "machine_limit", False) and shown(r, err) != shown(ref, ref_err):
            # the target's own budget (fuel, memory), not the program: nothing to compare
            print(f"target {tname} stopped: {err.message}", file=sys.stderr)
            continue
        print(f"target {tname} {shown(r, err)}", file=sys.stderr)
        if shown(r, err) != shown(ref, ref_err):
            raise InterpError(
                "R0010",
                f"target `{tname}` disagrees with the interpreter: "
                f"{shown(r, err)} against {shown(ref, ref_err)}",
            )
    if ref_err is not None:
        raise ref_err
    return ref


def parse_dims(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        name = name.strip()
        try:
            n = int(value.strip(), 0)
        except ValueError:
            n = -1
        if not eq or not name or n < 0:
            raise UsageError(f"--dims: expected NAME=SIZE with SIZE >= 0, got `{part}`")
        out[name] = n
    return out


def _load_npz(path: str) -> dict[str, np.ndarray]:
    import zipfile

    import numpy as np

    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise UsageError(f"{path}: not a readable .npz file: {e or 'empty'}") from None
    if not isinstance(z, np.lib.npyio.NpzFile):  # a bare .npy array has no names
        raise UsageError(f"{path}: not a .npz archive of named arrays (a single .npy array)")
    try:
        with z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        raise UsageError(f"{path}: not a readable .npz file: {e}") from None


def _unflatten(sig, data: dict[str, np.ndarray]) -> dict[str, object]:
    """npz keys are parameter names; struct fields are `p.field.sub`."""
    from kera_core.interp.values import flat_items

    given: dict[str, object] = {}
    used: set[str] = set()
    for name, t in sig.value_params:
        leaves = [(n, lt) for n, lt, _ in flat_items(name, t, _placeholder(strip_ref(t)))]
        present = [n for n, _ in leaves if n in data]
        if not present:
            continue
        if len(present) != len(leaves):
            missing = sorted(set(n for n, _ in leaves) - set(present))
            raise UsageError(f"--inputs: `{name}` is partly given; missing {', '.join(missing)}")
        used.update(present)
        given[name] = _build(name, strip_ref(t), data)
    unknown = sorted(set(data) - used)
    if unknown:
        names = ", ".join(sig.param_names) or "none"
        raise UsageError(f"--inputs: unknown name(s) {', '.join(unknown)} (parameters: {names})")
    return given


def _placeholder(t):
    if isinstance(t, Struct):
        return {f: _placeholder(ft) for f, ft in t.fields}
    return None


def _build(name: str, t, data):
    if isinstance(t, Struct):
        return {f: _build(f"{name}.{f}", strip_ref(ft), data) for f, ft in t.fields}
    v = data[name]
    return v if isinstance(t, Tensor) else v[()] if v.shape == () else v


def _resolve_dims(sig, user: dict[str, int], given: dict[str, object]):
    """--dims first, then the shapes of --inputs arrays, then the default; notes defaults."""
    import numpy as np

    from kera_core.interp.errors import InterpError
    from kera_core.interp.gen import DEFAULT_DIM
    from kera_core.interp.values import bind_all
    from kera_core.ir.dims import tensor_leaves

    names = sig.dim_names
    for n in user:
        if n not in names:
            have = ", ".join(names) or "none"
            raise UsageError(f"`{sig.function.name}` has no dimension `{n}` (dimensions: {have})")
    dims = {names.index(n): v for n, v in user.items()}
    arrays = []
    for pname, t in sig.value_params:
        if pname not in given:
            continue
        for path, leaf in tensor_leaves(t):  # a struct's or a tuple's tensors too
            v, name = _leaf_input(t, given[pname], pname, path)
            shape = np.shape(v)
            if len(shape) != leaf.rank:
                raise UsageError(
                    f"--inputs: `{name}` should have rank {leaf.rank}, but its shape is {shape}"
                )
            arrays.append((name, leaf, v))
    try:  # the interpreter's binding: `N`, `N + 1`, `2 * N` … solved and checked
        with dim_names_for_display(names):
            bind_all(
                [t for _, t, _ in arrays],
                [v for _, _, v in arrays],
                dims,
                [f"--inputs: `{p}` has shape {np.shape(v)}" for p, _, v in arrays],
            )
    except InterpError as e:
        raise UsageError(e.message) from None
    defaulted = [i for i in range(len(names)) if i not in dims]
    for i in defaulted:
        dims[i] = DEFAULT_DIM
    return dims, defaulted


def _leaf_input(t, value, name: str, path: tuple[int, ...]):
    """The array at ``path`` in the input ``value`` of a struct or tuple type ``t`` (a dict
    by field name, as :func:`_build` makes it) and its `--inputs` name (`l.w`)."""
    for k in path:
        t = strip_ref(t)
        fname, t = t.fields[k]
        value, name = value[fname], f"{name}.{fname}"
    return value, name


def _dims_text(sig, dims: dict[int, int]) -> str:
    return ", ".join(f"{n}={dims[i]}" for i, n in enumerate(sig.dim_names) if i in dims)


def seed_arg(text: str) -> int:
    """argparse type of --seed: refuses (exit 2, one line) what InputGenerator refuses."""
    from kera_core.interp.gen import check_seed

    try:
        return check_seed(int(text, 0))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid seed {text!r}: a seed is an integer from 0 to 2**64-1"
        ) from None


def run_seeded(module, name: str, seed: int, adversarial: bool = False, target="interp"):
    """Run ``name`` on the documented generated inputs (default dimensions): what
    `kera run FILE --entry NAME --seed S --target T` computes, for `kera demo` and tests."""
    from kera_core.interp.api import entry_signature
    from kera_core.interp.gen import InputGenerator

    sig = entry_signature(module, name)
    dims, _ = _resolve_dims(sig, {}, {})
    gen = InputGenerator(seed, adversarial)
    inputs = {pname: gen.value(t, dims) for pname, t in sig.value_params}
    named = {sig.dim_names[i]: n for i, n in dims.items()}
    return select_target(target)(module, name, inputs, named, stdout=None)


def _location(module, text: str | None, path: str, node: bytes | None) -> str:
    package = getattr(module, "package", None)
    if node is not None and package is not None:
        from kera_core.cli.package import locate

        return locate(package, node)
    if node is None or text is None:
        return ""
    spans = module.provenance.spans_of(node)
    if not spans:
        return ""
    line, col = LineIndex(text).to_chars(spans[0].start)
    return f" at {path}:{line + 1}:{col + 1}"


def _read_program(path: str):
    """The input of `kera run`: a file (read) or a package (analysed, in ``package``)."""
    from kera_core.manifest import is_package_path

    if path != "-" and is_package_path(path):
        from kera_core.cli import package

        return SimpleNamespace(path=path, package=package.load(path), raw=b"", text=None)
    inp = read_input(path)
    return SimpleNamespace(path=inp.path, package=None, raw=inp.raw, text=inp.text)


def _load(inp):
    """The program to run: a `.keg` graph file as it is, or source, analysed."""
    from kera_core.analysis import analyze
    from kera_core.keg import KegError, is_keg, read_keg

    if inp.package is not None:
        pkg = inp.package
        if pkg.has_errors:
            from kera_core.cli.package import error_count, print_diagnostics

            print_diagnostics(pkg)
            raise UsageError(f"{inp.path}: {error_count(pkg)} error(s); nothing to run")
        return SimpleNamespace(graph=pkg.graph, provenance=pkg.provenance, text=None, package=pkg)
    if is_keg(inp.raw) or inp.path.endswith(".keg"):
        try:
            k = read_keg(inp.raw)
        except KegError as e:
            raise UsageError(f"{inp.path}: invalid .keg file: {e}") from None
        return SimpleNamespace(graph=k.graph, provenance=k.provenance or Provenance(), text=None)
    a = analyze(inp.text)
    if a.has_errors:
        _print_diags(a.diagnostics, inp.text, inp.path)
        n = sum(d.is_error for d in a.diagnostics)
        raise UsageError(f"{inp.path}: {n} error(s); nothing to run")
    return SimpleNamespace(graph=a.module.graph, provenance=a.module.provenance, text=inp.text)


def cmd_run(args) -> int:
    import numpy as np

    from kera_core.interp import InputError, InterpError
    from kera_core.interp.api import entry_signature
    from kera_core.interp.digest import sha3
    from kera_core.interp.gen import DEFAULT_DIM, InputGenerator
    from kera_core.interp.values import concrete_type, flat_items, raw_bytes

    apply_isa(args)
    apply_sim(args)
    if getattr(args, "emulate", False) and args.target not in ("ptx", "all"):
        raise UsageError("--emulate applies to the ptx target (and all): the PTX emulator")
    apply_emulate(args)
    runner = select_target(args.target)
    budget = {}
    if args.fuel is not None:
        if args.target == "interp":
            raise UsageError("--fuel applies to fuel-metered targets (wasm, all), not interp")
        if args.fuel <= 0:
            raise UsageError("--fuel: expected a positive number of instructions")
        budget["fuel"] = args.fuel
    user_dims = parse_dims(args.dims)
    inp = _read_program(args.file)
    m = _load(inp)
    fn = m.graph.functions.get(args.entry)
    if fn is None or not fn.exported:
        names = ", ".join(f.name for f in m.graph.exported()) or "none"
        insts = [f.name for f in m.graph.exported() if f.name.startswith(args.entry + "<")]
        if fn is None and insts:  # a generic function: its instances are the entries
            raise UsageError(
                f"`{args.entry}` in {inp.path} is generic: run one of its instances, "
                + ", ".join(f"--entry '{n}'" for n in insts)
            )
        what = "is not exported" if fn is not None else "does not exist"
        raise UsageError(f"`{args.entry}` {what} in {inp.path} (exported functions: {names})")
    sig = entry_signature(m, args.entry)
    given = _unflatten(sig, _load_npz(args.inputs)) if args.inputs else {}
    dims, defaulted = _resolve_dims(sig, user_dims, given)
    for i in defaulted:
        print(
            f"kera run: dimension {sig.dim_names[i]} not given; using {DEFAULT_DIM}",
            file=sys.stderr,
        )
    gen = InputGenerator(args.seed, args.adversarial)
    inputs = {}
    for name, t in sig.value_params:
        try:
            inputs[name] = given[name] if name in given else gen.value(t, dims)
        except InterpError as e:  # `f32[N / 2]` with an odd N
            with dim_names_for_display(sig.dim_names):
                raise UsageError(
                    f"cannot make input `{name}: {t}` with {_dims_text(sig, dims)}: {e.message}"
                ) from None

    out = sys.stdout
    out.write(f"entry {fn.name} fn:{fn.hash.hex()}\n")
    dim_text = " ".join(
        f"{n}={dims[i]}" + (" (default)" if i in defaulted else "")
        for i, n in enumerate(sig.dim_names)
    )
    out.write(f"dims {dim_text or '-'}\n")
    for name, t in sig.value_params:
        ct = concrete_type(t, dims)
        try:
            digest = sha3(raw_bytes(ct, _as_type(ct, inputs[name])))
        except (TypeError, ValueError, OverflowError) as e:
            raise UsageError(f"--inputs: `{name}` is not a `{ct}`: {e}") from None
        out.write(f"input {name} {ct} sha3-256:{digest}\n")
    out.flush()
    try:
        r = runner(
            m,
            fn.name,
            inputs,
            {sig.dim_names[i]: n for i, n in dims.items()},
            stdout=out,
            max_steps=args.max_steps,
            **budget,
        )
    except InputError as e:
        raise UsageError(f"{e.message}") from None
    except InterpError as e:
        if not out.closed:
            out.write("\nresult error " + e.code + "\n")
        where = _location(m, m.text, inp.path, e.node)
        print(f"kera run: run-time error {e.code} ({e.kind}): {e.message}{where}", file=sys.stderr)
        return 1
    if r.printed and not r.printed.endswith("\n"):
        out.write("\n")
    for o in r.outputs:
        out.write(f"output {o.name} {o.type} sha3-256:{o.digest}\n")
    if r.has_io:
        out.write(f"output stdout text sha3-256:{sha3(encode(r.printed))}\n")
    out.write(f"result sha3-256:{r.digest()}\n")
    cycles = getattr(r, "cycles", None)  # a hardware target's simulated clock cycles
    if cycles is not None:
        sim = getattr(r, "simulator", None)  # which simulator counted them
        print(f"{args.target}: {cycles} cycles" + (f" ({sim})" if sim else ""), file=sys.stderr)
    if args.out:
        arrays = {}
        for o in r.outputs:
            for name, _, v in flat_items(o.name, o.type, o.value):
                arrays[name] = np.asarray(v)
        try:
            np.savez(args.out, **arrays)
        except OSError as e:
            raise UsageError(f"{args.out}: cannot write: {e.strerror}") from None
    return 0


def _as_type(t, v):
    """Host values in the exact dtype of ``t``, for hashing what the run will see."""
    from kera_core.interp import InputError
    from kera_core.interp.values import value_in

    try:
        return value_in(t, v, "input")
    except InputError as e:
        raise ValueError(e.message) from None


def main(argv: list[str] | None = None) -> int:
    """`kera run` on its own (what `kera_core.cli.main(["run", …])` does once wired)."""
    import argparse

    ap = argparse.ArgumentParser(prog="kera")
    register(ap.add_subparsers(dest="command"))
    args = ap.parse_args(["run", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args) or 0)
    except UsageError as e:
        print(f"kera: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
