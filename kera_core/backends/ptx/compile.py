"""The PTX backend's driver: a graph function → its loop program → PTX text, the artifact,
``ptxas`` (assembling checks and the resource report).

The artifact is the PTX module itself, readable and loadable by the CUDA driver, with a
comment header that carries the graph fingerprint:

```
// kera-ptx v1
// fingerprint sha3-256:<hex>
// entry <name> threads <CTA size>
.version 8.0
...
```
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections import OrderedDict
from dataclasses import dataclass

from kera_core.backends.ptx.select import (
    NotSelected,
    Selected,
    select_program,
    sequential_effects,
)
from kera_core.ir.graph import Graph
from kera_core.ir.semantics import SEMANTICS_VERSION
from kera_core.loops import NotLowered
from kera_core.loops.ir import Program
from kera_core.loops.lower import program_of
from kera_core.loops.target import GRID

MAGIC = "// kera-ptx v1\n"
ARCHS = ("sm_80", "sm_90")


class ArtifactError(ValueError):
    """Bytes that are not a ptx artifact, or not built from this graph."""


@dataclass
class Compiled:
    program: Program
    selected: Selected


_CACHE: OrderedDict[tuple[str, bytes], Compiled] = OrderedDict()
CACHE_SIZE = 64


def compiled(graph: Graph, fn: str) -> Compiled:
    """The selected PTX of ``fn``, cached by its name and hash (covering its callees)."""
    key = (fn, graph.functions[fn].hash)
    got = _CACHE.get(key)
    if got is not None:
        _CACHE.move_to_end(key)
        return got
    prog = program_of(graph, fn, GRID)
    comp = Compiled(prog, select_program(prog, fn))
    _CACHE[key] = comp
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return comp


def unsupported(graph: Graph, fn: str) -> list[str]:
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    try:
        compiled(graph, fn)
    except (NotLowered, NotSelected) as e:
        return [str(e)]
    return []


def artifact_text(graph: Graph, fn: str) -> str:
    sel = compiled(graph, fn).selected
    names = ", ".join(f"{p} = {k}" for k, p in sel.names.items())
    return (
        MAGIC
        + f"// fingerprint sha3-256:{graph.fingerprint().hex()}\n"
        + f"// entry {fn} threads {sel.threads}{' grid' if sel.grid else ''}\n"
        + f"// semantics {SEMANTICS_VERSION}\n"
        + f"// functions: {names}\n"
        + sel.text
    )


_HEAD = re.compile(
    r"// kera-ptx v1\n// fingerprint sha3-256:([0-9a-f]{64})\n// entry (\S+) threads (\d+)( grid)?\n"
    r"(?:// semantics (\d+)\n)?"
)


def read(data: bytes, graph: Graph | None = None) -> tuple[str, int, str]:
    """(entry, threads, PTX text) of an artifact, checked against ``graph``."""
    text = data.decode("utf-8", "replace")
    m = _HEAD.match(text)
    if m is None:
        raise ArtifactError("not a ptx artifact")
    if graph is not None and bytes.fromhex(m.group(1)) != graph.fingerprint():
        raise ArtifactError("the artifact was not built from this graph (fingerprint differs)")
    # an older version is fine: an operation whose bits changed since changed the fingerprint
    if int(m.group(5) or 1) > SEMANTICS_VERSION:
        raise ArtifactError(f"the artifact was built under semantics version {m.group(5)}")
    return m.group(2), int(m.group(3)), text


# --- ptxas -------------------------------------------------------------------------------


def find_ptxas() -> str | None:
    """``$KERA_PTXAS``, the `nvidia-cuda-nvcc-cu12` wheel's ptxas, or one on PATH."""
    env = os.environ.get("KERA_PTXAS")
    if env:
        return env if os.path.exists(env) else None
    try:
        spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        for loc in spec.submodule_search_locations or []:
            p = os.path.join(loc, "bin", "ptxas")
            if os.path.exists(p):
                return p
    return shutil.which("ptxas")


class PtxasError(RuntimeError):
    pass


def ptxas(text: str, arch: str, verbose: bool = False) -> str:
    """Assemble ``text`` for ``arch``; the tool's messages (``-v``: resource usage)."""
    return assemble(text, arch, verbose)[0]


def assemble(text: str, arch: str, verbose: bool = False) -> tuple[str, bytes]:
    """(ptxas's messages, the cubin) of ``text`` for ``arch``."""
    exe = find_ptxas()
    if exe is None:
        raise PtxasError("ptxas not found (pip install nvidia-cuda-nvcc-cu12, or set KERA_PTXAS)")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as fh:
            fh.write(text)
        cmd = [exe, "--gpu-name", arch, "-o", os.path.join(tmp, "k.cubin"), src]
        if verbose:
            cmd.insert(1, "-v")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise PtxasError(f"ptxas --gpu-name {arch} failed:\n{r.stderr}{r.stdout}")
        with open(os.path.join(tmp, "k.cubin"), "rb") as fh:
            cubin = fh.read()
    return r.stderr + r.stdout, cubin


_SHARED_NAMES = re.compile(
    r"\b(k_steps|k_errmin|k_bcast|k_ctx|k_gsync|k_fmod_f32|k_fmod_f64|kfn_\d+|kera_main)\b"
)


def batch(texts: list[str]) -> str:
    """Many selected modules as one PTX module (names prefixed per module), so one ptxas
    call checks them all."""
    out = [".version 8.0", ".target sm_80", ".address_size 64", ""]
    for i, t in enumerate(texts):
        body = "\n".join(
            ln
            for ln in t.splitlines()
            if not ln.startswith((".version", ".target", ".address_size"))
        )
        out.append(_SHARED_NAMES.sub(lambda m, i=i: f"m{i}_{m.group(1)}", body))
    return "\n".join(out) + "\n"


# --- the report (kera build --target ptx --report) -----------------------------------------

TENSOR_CORES = (
    "tensor cores: not used. semantics.md §8.1 fixes matmul's order: one accumulator per "
    "output from +0, every product rounded, k increasing; mma/wgmma accumulate blocks of k "
    "in their own order (and round inputs to TF32/BF16/FP16), so they cannot keep the clause"
)


def _matmul_like(graph: Graph, fn: str) -> list[str]:
    """The matmul-like operations ``fn`` and its callees contain."""
    seen_fn, seen_reg, ops = set(), set(), set()
    todo = [graph.functions[fn].region]
    seen_fn.add(fn)
    while todo:
        reg = todo.pop()
        key = reg if isinstance(reg, bytes) else reg.hash
        if key in seen_reg:
            continue
        seen_reg.add(key)
        for n in graph.region_nodes(reg):
            if n.op in ("matmul", "dot", "conv1d"):
                ops.add(n.op)
            todo += list(n.regions)
            for _, v in dict(n.attrs).items() if not isinstance(n.attrs, dict) else n.attrs.items():
                if isinstance(v, str) and v in graph.functions and v not in seen_fn:
                    seen_fn.add(v)
                    todo.append(graph.functions[v].region)
    return sorted(ops)


def report(graph: Graph, fn: str) -> str:
    sel = compiled(graph, fn).selected
    lines = [f"ptx kernel `kera_main` for `{fn}`"]
    if sel.grid:
        lines.append(
            f"  grid: as many CTAs of {sel.threads} threads as the GPU holds at once (a"
            " cooperative launch); parallel/lanes loops strided over every thread of the"
            " grid, grid barriers between them"
        )
    else:
        why = sequential_effects(compiled(graph, fn).program)
        lines.append(
            f"  grid: 1 CTA x {sel.threads} thread(s)"
            + (
                " (parallel/lanes loops strided over the CTA's threads"
                + (f"; one CTA because {why})" if why else ")")
                if sel.threads > 1
                else " (no loop can be mapped: the code is sequential)"
            )
        )
    for li in sel.loops:
        how = "mapped to threads" if li.mapped else f"sequential: {li.why}"
        lines.append(f"  loop {li.var} in `{li.function}` ({li.mark}): {how}")
    for arch in ARCHS:
        try:
            msgs = ptxas(sel.text, arch, verbose=True)
        except PtxasError as e:
            lines.append(f"  {arch}: {str(e).splitlines()[0]}")
            continue
        who = "?"
        kera = {p: k for k, p in sel.names.items()}
        for ln in msgs.splitlines():
            ln = ln.strip()
            m = re.search(r"Function properties for (\S+)", ln)
            if m:
                who = m.group(1)
                who = f"{who} (`{kera[who]}`)" if who in kera else who
            m = re.search(r"Used (\d+) registers, (.*)", ln)
            if m:
                lines.append(f"  {arch} {who}: {m.group(1)} registers per thread, {m.group(2)}")
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", ln)
            if m:
                lines.append(
                    f"  {arch} {who}: {m.group(1)} bytes stack frame, {m.group(2)} bytes spilled"
                )
    ops = _matmul_like(graph, fn)
    lines.append(
        "  "
        + TENSOR_CORES
        + (f" (this kernel has {', '.join(ops)})" if ops else " (this kernel has no matmul)")
    )
    return "\n".join(lines) + "\n"
