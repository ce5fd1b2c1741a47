"""Running a graph function through its loop program: the same inputs, outputs and digests
as the graph interpreter's ``run_function`` (kera_core/interp/api.py)."""

from __future__ import annotations

from typing import TextIO

import numpy as np

from kera_core.interp.api import Output, RunResult, _Tee, bind_inputs, entry_signature
from kera_core.interp.fp import check_host_fp
from kera_core.interp.values import concrete_type, value_out
from kera_core.ir.types import Struct, Tensor, strip_ref
from kera_core.loops.interp import Interpreter
from kera_core.loops.ir import Program
from kera_core.loops.lower import program_of
from kera_core.stack import deep_recursion


def flatten_value(t, v, out: list) -> None:
    """Append the leaves of a host value of type `t` in the loop program's parameter order
    (struct fields in declaration order). Tensors are appended as they are: `value_in` gave
    the run its own copy, which the program may write."""
    t = strip_ref(t)
    if isinstance(t, Struct):
        for (_, ft), x in zip(t.fields, v, strict=True):
            flatten_value(ft, x, out)
    else:
        out.append(v)


def _rebuild(t, it):
    t = strip_ref(t)
    if isinstance(t, Struct):
        return tuple(_rebuild(ft, it) for _, ft in t.fields)
    v = next(it)
    if isinstance(t, Tensor):
        return v.reshape(tuple(int(d) for d in t.shape))
    return v


def prepare(source, fn_name: str, inputs: dict, dims: dict | None, program: Program | None = None):
    """What every runner of a loop program starts with: the entry's signature, its checked
    arguments and dimensions (`interp.api.bind_inputs`, so bad arguments fail alike on every
    target) and its (cached) loop program."""
    check_host_fp()
    g = source.graph if hasattr(source, "graph") else source
    sig = entry_signature(source, fn_name)
    args, bound = bind_inputs(sig, inputs, dims)
    return sig, args, bound, program if program is not None else program_of(g, fn_name)


def run_function(
    source,
    fn_name: str,
    inputs: dict,
    dims: dict | None = None,
    *,
    program: Program | None = None,
    stdout: TextIO | None = None,
    max_steps: int | None = None,
) -> RunResult:
    """``interp.run_function``, computed by the loop program's interpreter."""
    sig, args, bound, prog = prepare(source, fn_name, inputs, dims, program)
    fn = sig.function
    flat: list = [bound[i] for i in range(fn.type.n_dims)]
    for t, v in zip(fn.type.params, args, strict=True):
        leaves: list = []
        flatten_value(t, v, leaves)
        flat += [x.reshape(-1) if isinstance(x, np.ndarray) else x for x in leaves]
    tee = _Tee(stdout)
    machine = Interpreter(prog, stdout=tee, max_steps=max_steps)
    with np.errstate(all="ignore"), deep_recursion():  # nested calls of recursive functions
        outs = machine.call(prog.functions[fn_name], flat)
    it = iter(outs)
    results: list[Output] = []
    for kind, i in fn.outputs:
        if kind == "result":
            name, key, t = "result", "result", fn.type.result
        else:
            name, key, t = sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i])
        ct = concrete_type(t, bound)
        value = _rebuild(ct, it)
        results.append(Output(name, ct, value_out(ct, value), key))
    res = RunResult(
        fn.name,
        results,
        {sig.dim_names[i]: n for i, n in sorted(bound.items())},
        tee.buf.getvalue(),
        "io" in fn.type.effects,
    )
    res.peak_bytes = machine.peak_bytes  # type: ignore[attr-defined]
    return res
