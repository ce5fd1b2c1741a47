"""Shared by the target-agreement tests: a run's outcome as one comparable string, a
source's module (the test fails on its diagnostics), and the examples — files and
package directories — as the programs they are."""

from __future__ import annotations

from pathlib import Path

from kera_core.analysis import analyze
from kera_core.interp import InterpError

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"


def examples() -> list[Path]:
    """Every example `kera demo` runs: the `.kera` files of examples/ and its package
    directories (examples/pkg)."""
    from kera_core.cli.demo import examples_in

    return [Path(p) for p in examples_in(str(EXAMPLES_DIR))]


def example_program(path: Path):
    """The analysed example at ``path`` (a file's module, or a package), which must check
    without errors; either has ``graph`` and ``provenance`` and runs on every target."""
    if path.is_dir():
        from kera_core.manifest import load_package
        from kera_core.sema.package import analyze_package

        src = load_package(str(path))
        pkg = analyze_package(src.name, src.units)
        errors = [str(d) for m in pkg.modules.values() for d in m.diagnostics if d.is_error]
        assert not errors, errors
        return pkg
    return analyzed(path.read_text(encoding="utf-8"))


def outcome(run) -> str:
    """``ok <result digest>`` (raw bytes of every output), or ``error <code>``."""
    try:
        return "ok " + run().digest()
    except InterpError as e:
        return "error " + e.code


def analyzed(src: str):
    """The module of ``src``, which must check without errors."""
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def generated_inputs(
    m, fn: str, n: int, seed: int, adversarial: bool = False, dims: dict | None = None
) -> dict:
    """Generated arguments of ``fn`` in module ``m``: its first dimension parameter is ``n``
    (or the parameters are ``dims``, by position)."""
    from kera_core.interp.gen import InputGenerator

    f = m.graph.functions[fn]
    names = m.functions[fn].sig.param_names
    gen = InputGenerator(seed, adversarial)
    dims = {0: n} if dims is None else dims
    return {p: gen.value(t, dims) for p, t in zip(names, f.type.params, strict=True)}


def errors(src: str) -> list:
    """The error diagnostics of ``src``."""
    return [d for d in analyze(src).diagnostics if d.is_error]


def spanned(src: str, span) -> str:
    """The text of ``src`` that ``span`` (byte offsets) covers."""
    return src.encode()[span.start : span.end].decode()


def runnable_target(tname: str):
    """The registered target ``tname``, or the test stops (tool_missing: a failure under
    CI=true) saying why it cannot load or run here."""
    from kera_core.targets import get
    from tests.tools import tool_missing

    try:
        t = get(tname)
    except ImportError as e:
        tool_missing(f"the {tname} target cannot load here: {e}")
    why = getattr(t, "cannot_run_here", lambda: None)()
    if why:
        tool_missing(why)
    if tname == "x86_64" and not x86_levels():
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    return t


def same_as_reference(m, name: str, inputs: dict, run_it, *context) -> None:
    """``run_it()`` gives the reference interpreter's outcome for ``name`` on ``inputs``."""
    from kera_core.interp.api import run_function as reference

    want = outcome(lambda: reference(m, name, inputs))
    assert outcome(run_it) == want, (name, *context)


def agree_on_target(tname: str, m, names, sizes, inputs, per_scalar: int = 24) -> None:
    """Each of ``names`` (a name ending in ``_s`` takes scalars: size 1 only) on target
    ``tname`` gives the interpreter's outcome on ``inputs(name, n, 13)[:per_scalar]``."""
    from kera_core.targets import run_module

    t = runnable_target(tname)
    for name in names:
        assert not t.unsupported(m.graph, name), (tname, name, t.unsupported(m.graph, name))
        for n in sizes if not name.endswith("_s") else (1,):
            for a in inputs(name, n, 13)[:per_scalar]:
                same_as_reference(m, name, a, lambda: run_module(t, m, name, a), tname, n)  # noqa: B023


def agree_on_x86(level: str, m, names, sizes, inputs) -> None:
    """As :func:`agree_on_target`, compiled once per function at one x86-64 level
    (``"none"``: the test stops, this is no x86-64 machine), on ``inputs(name, n, 17)``."""
    if level == "none":
        from tests.tools import tool_missing

        tool_missing("the x86_64 target runs only on an x86-64 machine")
    from kera_core.backends.x86_64 import compile as X
    from kera_core.backends.x86_64.runtime import Loaded, run

    for name in names:
        data, _ = X.build(m.graph, name, X.isa_for(level))
        loaded = Loaded(X.read(data, m.graph)[1])
        try:
            for n in sizes if not name.endswith("_s") else (1,):
                for a in inputs(name, n, 17):
                    same_as_reference(m, name, a, lambda: run(loaded, m, name, a), level, n)  # noqa: B023
        finally:
            loaded.close()


def x86_levels() -> list[str]:
    """The x86-64 instruction-set levels this CPU runs (none off x86-64)."""
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    from kera_core.backends.x86_64 import compile as X
    from kera_core.native import cpu

    f = cpu.detect()
    return [lv for lv in X.ISAS if X.runs(lv, f)]
