"""`run_function`: call one function of a graph with host values, get named outputs back."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TextIO

import numpy as np

from kera_core.interp.digest import result_digest, sha3
from kera_core.interp.errors import InputError, InterpError
from kera_core.interp.fp import check_host_fp
from kera_core.interp.machine import Ctx, Machine
from kera_core.interp.values import (
    TOKEN,
    bind_all,
    concrete_type,
    raw_bytes,
    value_in,
    value_out,
)
from kera_core.ir.graph import Graph
from kera_core.ir.node import Function
from kera_core.ir.types import Ref, Type, dim_names_for_display, strip_ref
from kera_core.source import encode
from kera_core.stack import deep_recursion


@dataclass
class Output:
    name: str  # for display: `result` or the `&mut` parameter's name
    type: Type  # with every dimension resolved
    value: object  # numpy array, numpy scalar, or dict for a struct
    key: str = ""  # for the digest: `result` or `param<i>` (names are provenance, not identity)

    @property
    def raw(self) -> bytes:
        return raw_bytes(self.type, self.value)

    @property
    def digest(self) -> str:
        return sha3(self.raw)


@dataclass
class RunResult:
    function: str
    outputs: list[Output]
    dims: dict[str, int]
    printed: str = ""
    has_io: bool = False

    def __getitem__(self, name: str):
        for o in self.outputs:
            if o.name == name:
                return o.value
        raise KeyError(name)

    def digest_entries(self) -> list[tuple[str, str, bytes]]:
        entries = [(o.key or o.name, str(o.type), o.raw) for o in self.outputs]
        if self.has_io:
            entries.append(("stdout", "text", encode(self.printed)))
        return entries

    def digest(self) -> str:
        return result_digest(self.digest_entries())


@dataclass
class Signature:
    function: Function
    param_names: tuple[str, ...]
    dim_names: tuple[str, ...]

    @property
    def value_params(self) -> list[tuple[str, Type]]:
        return list(zip(self.param_names, self.function.type.params, strict=True))


def _graph_of(source) -> Graph:
    return source.graph if hasattr(source, "graph") else source


def entry_signature(source, fn_name: str) -> Signature:
    """The function and its parameter and dimension names (from provenance when present)."""
    g = _graph_of(source)
    fn = g.functions.get(fn_name)
    if fn is None:
        names = ", ".join(f.name for f in g.exported()) or "none"
        raise InputError("R0005", f"no function `{fn_name}` (exported functions: {names})")
    prov = getattr(getattr(source, "provenance", None), "functions", {}).get(fn_name)
    if prov is not None:
        return Signature(fn, tuple(prov.param_names), tuple(prov.dim_names))
    n = len(fn.type.params)
    return Signature(
        fn, tuple(f"arg{i}" for i in range(n)), tuple(f"${i}" for i in range(fn.type.n_dims))
    )


class _Tee(io.TextIOBase):
    def __init__(self, echo: TextIO | None) -> None:
        self.buf = io.StringIO()
        self.echo = echo

    def write(self, s: str) -> int:
        self.buf.write(s)
        if self.echo is not None:
            self.echo.write(s)
        return len(s)


def bind_inputs(sig, inputs: dict[str, object], dims, convert=value_in) -> tuple[list, dict]:
    """Check host ``inputs`` against the entry signature ``sig``: the converted value
    parameters in order (``convert``: ``value_in`` or a target's variant of it) and the
    bound dimensions. Every runner checks its arguments here, so bad arguments fail
    alike on every target (InputError R0005/R0006, or the conversion's own error)."""
    fn = sig.function
    bound = _user_dims(sig, dims or {})
    unknown = sorted(set(inputs) - set(sig.param_names))
    if unknown:
        raise InputError(
            "R0005",
            f"`{fn.name}` has no parameter(s) {', '.join(unknown)} "
            f"(parameters: {', '.join(sig.param_names) or 'none'})",
        )
    args: list = []
    for name, t in sig.value_params:
        if name not in inputs:
            raise InputError("R0005", f"missing input `{name}: {t}`")
        args.append(convert(t, inputs[name], f"input `{name}`"))
    try:
        with dim_names_for_display(sig.dim_names):
            bind_all(fn.type.params, args, bound, [f"input `{name}`" for name in sig.param_names])
    except InterpError as e:
        raise InputError(e.code, e.message) from None
    missing = [sig.dim_names[i] for i in range(fn.type.n_dims) if i not in bound]
    if missing:
        raise InputError(
            "R0006", f"no size for dimension(s) {', '.join(missing)}: pass them in `dims`"
        )
    return args, bound


def run_function(
    source,
    fn_name: str,
    inputs: dict[str, object],
    dims: dict[str, int] | None = None,
    *,
    stdout: TextIO | None = None,
    max_steps: int | None = None,
) -> RunResult:
    """Run ``fn_name`` of a graph (or of an analysed module) on host ``inputs``.

    ``inputs`` maps parameter names to numpy arrays/scalars (Python numbers and lists
    are converted; a struct is a dict of its fields); ``dims`` gives dimension sizes that
    no input shape determines. Checked run-time errors raise :class:`InterpError`; bad
    arguments raise its subclass :class:`InputError`. What the program prints is
    returned in ``printed`` and also written to ``stdout`` if given.
    """
    check_host_fp()
    g = _graph_of(source)
    sig = entry_signature(source, fn_name)
    fn = sig.function
    args, bound = bind_inputs(sig, inputs, dims)
    if fn.type.effects:
        args.insert(0, TOKEN)
    tee = _Tee(stdout)
    m = Machine(g, stdout=tee, max_steps=max_steps)
    m.check_dims(fn, bound)
    # the entry call is depth 1 of a recursive component; each nested Kera call costs a
    # few Python frames (docs/semantics.md §9: RECURSION_LIMIT calls fit in deep_recursion)
    with np.errstate(all="ignore"), deep_recursion():
        ys = m.run_region(fn.region, args, Ctx(bound, fn, 1 if fn.component else 0))
    if fn.type.effects:
        ys = ys[1:]
    outs: list[Output] = []
    for (kind, i), v in zip(fn.outputs, ys, strict=True):
        if kind == "result":
            name, key, t = "result", "result", fn.type.result
        else:
            name, key, t = sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i])
        ct = concrete_type(t, bound)
        outs.append(Output(name, ct, value_out(ct, v), key))
    return RunResult(
        fn.name,
        outs,
        {sig.dim_names[i]: n for i, n in sorted(bound.items())},
        tee.buf.getvalue(),
        "io" in fn.type.effects,
    )


def _user_dims(sig: Signature, dims: dict) -> dict[int, int]:
    out: dict[int, int] = {}
    for key, n in dims.items():
        if isinstance(key, int):
            idx = key
        elif key in sig.dim_names:
            idx = sig.dim_names.index(key)
        else:
            continue  # a size for another function's dimension: not ours to check
        if idx >= len(sig.dim_names):
            continue
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise InputError("R0005", f"dimension `{key}` must be a size >= 0, got {n!r}")
        out[idx] = int(n)
    return out


__all__ = ["Output", "RunResult", "Signature", "entry_signature", "run_function", "Ref"]
