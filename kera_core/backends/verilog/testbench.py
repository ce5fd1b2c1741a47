"""Simulating a kernel: a generated test bench drives ``kera_main`` through its host port
in iverilog, and the outputs come back as the interpreter's :class:`RunResult`.

The test bench (memory preload through the module's own host port, the load list read
from a file; ``run(..., stream=True)`` drives the valid/ready wrapper of stream.py
instead): it resets the
module, writes every input element and scalar through the host port (one write a cycle:
``{host_sel, host_addr, host_wdata}`` read from ``in.hex`` with ``$fscanf``), pulses
``start``, clocks until ``done`` (or a cycle cap), then reads every result element and
scalar back (one read a cycle, ``{host_sel, host_addr}`` from the same file) and writes
``done``, ``err``, ``cycles`` and the data to a text file. The counts and the step budget
are read from the file too, so one build (per design and dimension sizes) serves every
run.

Floats go in canonicalised and come out canonicalised (semantics.md §3, as every target's
runner does); a nonzero ``err`` is the checked error of that number (the header's table):
the same code, message and graph node as the interpreter's.

Two simulators run the same test bench (:data:`SIMULATORS`): iverilog (the default:
compiles in a fraction of a second) and verilator (the second opinion: ``--binary
--timing``, version 5 or later; a C++ build of several seconds, after which it simulates
many times faster). The choice is the ``sim`` argument, else ``KERA_VERILOG_SIM``
(`kera run --target verilog --sim verilator` sets it). Verilator builds are kept on disk
(:func:`cache_dir`), keyed by the verilator version, its flags and the Verilog text.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TextIO

import numpy as np

from kera_core.interp.api import Output, RunResult, _Tee
from kera_core.interp.errors import InputError, InterpError
from kera_core.interp.fp import canon
from kera_core.interp.values import DTYPES, concrete_type, value_out
from kera_core.ir.types import Struct, strip_ref
from kera_core.loops import ir
from kera_core.loops.interp import imm_value
from kera_core.loops.run import flatten_value, prepare

from .compile import Design

MAX_CYCLES = 200_000_000
TIMEOUT_S = 600


SIMULATORS = ("iverilog", "verilator")
VERILATOR_MIN = (5, 2)  # --binary and --timing
# verilator's flags: warnings are not errors and the lint and style classes are quiet
# (tests/test_verilog_kernels.py lints the modules themselves); the C++ build runs one job
# (-j 1) at verilator's default optimisation for the model (-Os)
VERILATOR_FLAGS = (
    "--binary",
    "--timing",
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "-Wno-UNOPTFLAT",
    "-Wno-TIMESCALEMOD",
    "-j",
    "1",
)


def default_sim() -> str:
    """The simulator when none is named: ``KERA_VERILOG_SIM``, else iverilog."""
    sim = os.environ.get("KERA_VERILOG_SIM", "") or "iverilog"
    if sim not in SIMULATORS:
        raise InputError(
            "R0005", f"KERA_VERILOG_SIM={sim}: expected one of {', '.join(SIMULATORS)}"
        )
    return sim


def verilator_version() -> tuple[int, int] | None:
    """(major, minor) of the verilator on PATH, or None if there is none."""
    if shutil.which("verilator") is None:
        return None
    try:
        r = subprocess.run(["verilator", "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Verilator (\d+)\.(\d+)", r.stdout)
    return (int(m.group(1)), int(m.group(2))) if m else None


_VERSION: list[tuple[int, int] | None] = []


def tools_missing(sim: str | None = None) -> str | None:
    """Why ``sim`` (default :func:`default_sim`) cannot run here, or None."""
    sim = sim or default_sim()
    if sim == "verilator":
        if not _VERSION:
            _VERSION.append(verilator_version())
        v = _VERSION[0]
        if v is None:
            return "verilator not found (apt-get install verilator)"
        if v < VERILATOR_MIN:
            return f"verilator {v[0]}.{v[1]:03d} is older than 5.002 (no --binary/--timing)"
        for tool in ("make", "g++"):
            if shutil.which(tool) is None:
                return f"{tool} not found (verilator builds C++)"
        return None
    for tool in ("iverilog", "vvp"):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install iverilog)"
    return None


def testbench(design: Design, dims: list[int]) -> str:
    """The test bench of ``design`` at dimension sizes ``dims``. Everything else a run needs
    comes from ``in.hex`` at run time, so one build serves every run at these sizes: a
    first line ``nld nrd limit_en max_steps``, then ``nld`` load words ``{host_sel,
    host_addr, host_wdata}`` and ``nrd`` read words ``{host_sel, host_addr}`` (hex)."""
    ps = ", ".join(f".D{i}({n})" for i, n in enumerate(dims))
    inst = f"kera_main #({ps}) dut" if dims else "kera_main dut"
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1, start = 0, host_we = 0;
  reg limit_en = 0;
  reg [63:0] max_steps = 0;
  reg [7:0] host_sel = 0;
  reg [31:0] host_addr = 0;
  reg [63:0] host_wdata = 0;
  wire done;
  wire [15:0] err;
  wire [63:0] cycles, host_rdata;
  reg [103:0] w;
  reg [63:0] nld, nrd, i, t;
  integer fi, fo, code;
  {inst} (.clk(clk), .rst(rst), .start(start), .done(done), .err(err), .cycles(cycles),
    .limit_en(limit_en), .max_steps(max_steps), .host_we(host_we), .host_sel(host_sel),
    .host_addr(host_addr), .host_wdata(host_wdata), .host_rdata(host_rdata));
  task tick;
    begin
      #1 clk = 1;
      #1 clk = 0;
    end
  endtask
  initial begin
    fi = $fopen("in.hex", "r");
    fo = $fopen("out.txt", "w");
    code = $fscanf(fi, "%h %h %h %h\\n", nld, nrd, w, max_steps);
    limit_en = w[0];
    tick;
    rst = 0;
    tick;
    for (i = 0; i < nld; i = i + 1) begin
      code = $fscanf(fi, "%h\\n", w);
      host_we = 1;
      {{host_sel, host_addr, host_wdata}} = w;
      tick;
    end
    host_we = 0;
    start = 1;
    tick;
    start = 0;
    t = 0;
    while (!done && t < {MAX_CYCLES}) begin
      tick;
      t = t + 1;
    end
    $fwrite(fo, "DONE %0d %0d %0d\\n", done, err, cycles);
    for (i = 0; i < nrd; i = i + 1) begin
      code = $fscanf(fi, "%h\\n", w);
      {{host_sel, host_addr}} = w[39:0];
      tick;
      $fwrite(fo, "%h\\n", host_rdata);
    end
    $fclose(fo);
    $fclose(fi);
    $finish;
  end
endmodule
"""


_WORK: list[str] = []
_BUILT: dict[str, list[str]] = {}  # hash of the simulator and sources -> the command to run


def _workdir() -> str:
    if not _WORK:
        d = tempfile.mkdtemp(prefix="kera_verilog_")
        atexit.register(shutil.rmtree, d, True)
        _WORK.append(d)
    return _WORK[0]


class SimError(RuntimeError):
    pass


def cache_dir() -> str | None:
    """Where verilator builds are kept between processes: ``KERA_VERILATOR_CACHE`` (``off``:
    nowhere), else ``$XDG_CACHE_HOME/kera/verilator`` (``~/.cache/kera/verilator``)."""
    d = os.environ.get("KERA_VERILATOR_CACHE", "")
    if d == "off":
        return None
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "kera", "verilator")
    return d


CACHE_KEEP = 200  # verilator builds kept on disk (the least recently used go first)


def _prune(root: str) -> None:
    try:
        entries = [os.path.join(root, e) for e in os.listdir(root) if not e.startswith(".")]
        if len(entries) <= CACHE_KEEP:
            return
        entries.sort(key=os.path.getmtime)
        for e in entries[: len(entries) - CACHE_KEEP]:
            shutil.rmtree(e, ignore_errors=True)
    except OSError:
        pass


def _build_verilator(d: str, key: str) -> str:
    """Build the test bench in ``d`` with verilator; the executable's path (cached)."""
    root = cache_dir()
    if root is not None:
        exe = os.path.join(root, key, "sim")
        if os.path.exists(exe):
            os.utime(os.path.dirname(exe))
            return exe
    r = subprocess.run(
        ["verilator", *VERILATOR_FLAGS, "--top-module", "tb", "-o", "sim", "tb.v", "design.v"],
        capture_output=True,
        text=True,
        cwd=d,
        timeout=TIMEOUT_S,
    )
    built = os.path.join(d, "obj_dir", "sim")
    if r.returncode != 0 or not os.path.exists(built):
        raise SimError(f"verilator failed:\n{r.stderr[-4000:]}\n{r.stdout[-2000:]}")
    return publish_build(key, built)


def publish_build(key: str, built: str) -> str:
    """Keep the executable ``built`` in the build cache under ``key`` (atomically: a
    concurrent build of the same key is as good); the path to run."""
    root = cache_dir()
    if root is None:
        return built
    try:
        os.makedirs(root, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=root, prefix=".tmp")
        shutil.copy2(built, os.path.join(tmp, "sim"))
        try:
            os.rename(tmp, os.path.join(root, key))
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
        _prune(root)
        exe = os.path.join(root, key, "sim")
        return exe if os.path.exists(exe) else built
    except OSError:
        return built


def compile_sim(sources: str, tb: str, sim: str | None = None) -> list[str]:
    """Compile the design and test bench for ``sim``; the command that runs it (in a
    directory holding ``in.hex``). Cached per process, and verilator's
    builds also on disk."""
    sim = sim or default_sim()
    salt = sim
    if sim == "verilator":
        tools_missing(sim)
        salt = f"verilator {_VERSION[0]} {' '.join(VERILATOR_FLAGS)}"
    key = hashlib.sha3_256((salt + "\0" + sources + tb).encode()).hexdigest()[:24]
    got = _BUILT.get(key)
    if got is not None:
        return got
    d = os.path.join(_workdir(), key)
    os.makedirs(d, exist_ok=True)
    Path(d, "design.v").write_text(sources)
    Path(d, "tb.v").write_text(tb)
    if sim == "verilator":
        cmd = [_build_verilator(d, key)]
    else:
        exe = os.path.join(d, "sim.vvp")
        r = subprocess.run(
            ["iverilog", "-g2005", "-s", "tb", "-o", exe, "tb.v", "design.v"],
            capture_output=True,
            text=True,
            cwd=d,
        )
        if r.returncode != 0:
            raise SimError(f"iverilog failed:\n{r.stderr}")
        cmd = ["vvp", "-n", exe]
    _BUILT[key] = cmd
    return cmd


def simulate(
    design: Design,
    text: str,
    dims: list[int],
    loads: list[tuple[int, int, int]],
    reads: list[tuple[int, int]],
    limit: int | None,
    sim: str | None = None,
    stats: dict | None = None,
) -> tuple[int, int, list[int]]:
    """(err, cycles, read values) of one run in ``sim``. ``stats``, if given, receives
    ``build_s`` (compiling, 0 when cached), ``run_s`` (the simulation process) and
    ``ticks`` (the clock cycles the test bench simulated: loading, running, reading)."""
    tb = testbench(design, dims)
    t0 = time.perf_counter()
    cmd = compile_sim(text, tb, sim)
    t1 = time.perf_counter()
    run = tempfile.mkdtemp(dir=_workdir())
    try:
        head = f"{len(loads):x} {len(reads):x} {int(limit is not None)} {limit or 0:x}\n"
        Path(run, "in.hex").write_text(
            head
            + "".join(f"{s:02x}{a:08x}{v & (2**64 - 1):016x}\n" for s, a, v in loads)
            + "".join(f"{s:02x}{a:08x}\n" for s, a in reads)
        )
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=run, timeout=TIMEOUT_S)
        t2 = time.perf_counter()
        if r.returncode != 0:
            raise SimError(f"{os.path.basename(cmd[0])} failed:\n{r.stdout}\n{r.stderr}")
        lines = Path(run, "out.txt").read_text().split("\n")
    finally:
        shutil.rmtree(run, ignore_errors=True)
    head = lines[0].split()
    if len(head) != 4 or head[0] != "DONE":
        raise SimError("truncated simulation output")
    if head[1] != "1":
        raise SimError(f"the simulation did not finish within {MAX_CYCLES} cycles")
    if stats is not None:
        stats["build_s"] = t1 - t0
        stats["run_s"] = t2 - t1
        stats["ticks"] = 3 + len(loads) + int(head[3]) + len(reads)
    vals: list[int] = []
    if int(head[2]):  # a checked error: the results were never computed
        return int(head[2]), int(head[3]), vals
    for ln in lines[1 : 1 + len(reads)]:
        try:
            vals.append(int(ln, 16))
        except ValueError:
            raise SimError(f"an undefined value (x/z) was read back: {ln}") from None
    return int(head[2]), int(head[3]), vals


# --- the runner -------------------------------------------------------------------------------


def _bits(t: str, v) -> int:
    a = np.asarray(v, dtype=DTYPES[t])
    if t in ("f32", "f64"):
        a = canon(a)
    if t == "bool":
        return int(bool(a))
    return int(a.reshape(1).view(f"u{a.dtype.itemsize}")[0])


def _elements(buf: ir.Buf, arr: np.ndarray) -> list[int]:
    arr = np.ascontiguousarray(arr.reshape(-1))
    if buf.elem == "bool":
        return [int(x) for x in arr.astype(np.uint8)]
    if arr.dtype.kind == "f":
        arr = canon(arr)
    return [int(x) for x in arr.view(f"u{arr.dtype.itemsize}")]


def _value(t: str, bits: int):
    w = 8 if t == "bool" else ir.BITS[t]
    return imm_value(ir.Imm(t, int(bits) & ((1 << w) - 1)))


def _array(elem: str, bits: list[int], shape: tuple[int, ...]) -> np.ndarray:
    dt = np.dtype(DTYPES[elem])
    if elem == "bool":
        return np.array([b & 1 for b in bits], dtype=np.uint8).astype(np.bool_).reshape(shape)
    u = np.array(bits, dtype=f"u{dt.itemsize}").reshape(shape)
    arr = u.view(dt).copy()
    return canon(arr) if dt.kind == "f" else arr


def run(
    design: Design,
    text: str,
    source,
    fn_name: str,
    inputs: dict,
    dims: dict | None = None,
    *,
    stdout: TextIO | None = None,
    max_steps: int | None = None,
    sim: str | None = None,
    stats: dict | None = None,
    stream: bool = False,
    stream_seed: int = 0,
) -> RunResult:
    """Run ``fn`` in ``sim`` (default :func:`default_sim`); ``stats`` as :func:`simulate`.
    ``stream``: through the valid/ready wrapper ``kera_stream`` (stream.py) instead of
    the host port, with bubbles and back-pressure from ``stream_seed`` (0: none)."""
    sim = sim or default_sim()
    why = tools_missing(sim)
    if why:
        raise InputError("R0005", f"the verilog target cannot run here ({sim}): {why}")
    sig, args, bound, prog = prepare(source, fn_name, inputs, dims)
    fn = sig.function
    lf = design.fn
    dimv = [int(bound[i]) for i in range(fn.type.n_dims)]
    loads: list[tuple[int, int, int]] = []
    for group, (t, v) in zip(lf.params, zip(fn.type.params, args, strict=True), strict=True):
        flat: list = []
        flatten_value(t, v, flat)
        for x, val in zip(group, flat, strict=True):
            p = design.selector_of(x)
            if isinstance(x, ir.Buf):
                loads += [(p.sel, i, b) for i, b in enumerate(_elements(x, val))]
            else:
                loads.append((p.sel, 0, _bits(x.type, val)))
    reads: list[tuple[int, int]] = []
    plan: list[tuple[object, tuple[int, ...]]] = []
    for group, shapes in zip(lf.results, lf.result_shapes, strict=True):
        for x, shape in zip(group, shapes, strict=True):
            p = design.selector_of(x)
            if isinstance(x, ir.Buf):
                sh = lf.sizes(shape, bound)
                count = int(np.prod(sh)) if sh else 1
                reads += [(p.sel, i) for i in range(count)]
                plan.append((x, sh))
            else:
                reads.append((p.sel, 0))
                plan.append((x, ()))
    if stream:
        from .stream import simulate as stream_simulate

        err, cycles, vals = stream_simulate(
            design, text, dimv, loads, reads, max_steps, sim, stats, stream_seed
        )
    else:
        err, cycles, vals = simulate(design, text, dimv, loads, reads, max_steps, sim, stats)
    if err:
        site = design.schedule.sites[err - 1]
        msg = site.message
        if site.code == "R0007":
            msg = f"more than {max_steps} loop iterations"
        e = InterpError(site.code, msg, site.node)
        e.cycles = cycles  # type: ignore[attr-defined]
        raise e
    it = iter(vals)
    got = []
    for x, sh in plan:
        if isinstance(x, ir.Buf):
            n = int(np.prod(sh)) if sh else 1
            got.append(_array(x.elem, [next(it) for _ in range(n)], sh))
        else:
            got.append(_value(x.type, next(it)))
    tee = _Tee(stdout)
    outs: list[Output] = []
    gi = iter(got)
    for (kind, i), group in zip(fn.outputs, lf.results, strict=True):
        vs = [next(gi) for _ in group]
        if kind == "result":
            name, key, t = "result", "result", fn.type.result
        else:
            name, key, t = sig.param_names[i], f"param{i}", strip_ref(fn.type.params[i])
        ct = concrete_type(t, bound)
        value = _rebuild(strip_ref(t), iter(vs))
        outs.append(Output(name, ct, value_out(ct, value), key))
    res = RunResult(
        fn.name,
        outs,
        {sig.dim_names[i]: n for i, n in sorted(bound.items())},
        tee.buf.getvalue(),
        "io" in fn.type.effects,
    )
    res.cycles = cycles  # type: ignore[attr-defined]
    res.simulator = f"{sim}, stream" if stream else sim  # type: ignore[attr-defined]
    return res


def _rebuild(t, it):
    if isinstance(t, Struct):
        return tuple(_rebuild(strip_ref(ft), it) for _, ft in t.fields)
    return next(it)
