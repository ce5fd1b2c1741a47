"""Simulating a kernel: a generated test bench drives ``kera_main`` through its host port
in iverilog, and the outputs come back as the interpreter's :class:`RunResult`.

The test bench (interface choice: memory preload through the module's own host port, the
load list read with ``$readmemh``, rather than a streaming interface): it resets the
module, writes every input element and scalar through the host port (one write a cycle:
``{host_sel, host_addr, host_wdata}`` from ``load.hex``), pulses ``start``, clocks until
``done`` (or a cycle cap), then reads every result element and scalar back (one read a
cycle, ``{host_sel, host_addr}`` from ``read.hex``) and writes ``done``, ``err``,
``cycles`` and the data to a text file.

Floats go in canonicalised and come out canonicalised (semantics.md §3, as every target's
runner does); a nonzero ``err`` is the checked error of that number (the header's table):
the same code, message and graph node as the interpreter's.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import tempfile
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


def tools_missing() -> str | None:
    for tool in ("iverilog", "vvp"):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install iverilog)"
    return None


def testbench(design: Design, dims: list[int], nld: int, nrd: int, limit: int | None) -> str:
    ps = ", ".join(f".D{i}({n})" for i, n in enumerate(dims))
    inst = f"kera_main #({ps}) dut" if dims else "kera_main dut"
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1, start = 0, host_we = 0;
  reg limit_en = {0 if limit is None else 1};
  reg [63:0] max_steps = 64'd{0 if limit is None else limit};
  reg [7:0] host_sel = 0;
  reg [31:0] host_addr = 0;
  reg [63:0] host_wdata = 0;
  wire done;
  wire [15:0] err;
  wire [63:0] cycles, host_rdata;
  reg [103:0] ld [0:{max(nld, 1) - 1}];
  reg [39:0] rd [0:{max(nrd, 1) - 1}];
  integer i, fo;
  reg [63:0] t;
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
    {'$readmemh("load.hex", ld);' if nld else ""}
    {'$readmemh("read.hex", rd);' if nrd else ""}
    fo = $fopen("out.txt", "w");
    tick;
    rst = 0;
    tick;
    for (i = 0; i < {nld}; i = i + 1) begin
      host_we = 1;
      {{host_sel, host_addr, host_wdata}} = ld[i];
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
    for (i = 0; i < {nrd}; i = i + 1) begin
      {{host_sel, host_addr}} = rd[i];
      tick;
      $fwrite(fo, "%h\\n", host_rdata);
    end
    $fclose(fo);
    $finish;
  end
endmodule
"""


_WORK: list[str] = []
_BUILT: dict[str, str] = {}  # hash of the sources -> compiled vvp


def _workdir() -> str:
    if not _WORK:
        d = tempfile.mkdtemp(prefix="kera_verilog_")
        atexit.register(shutil.rmtree, d, True)
        _WORK.append(d)
    return _WORK[0]


class SimError(RuntimeError):
    pass


def compile_sim(sources: str, tb: str) -> str:
    key = hashlib.sha3_256((sources + tb).encode()).hexdigest()[:24]
    got = _BUILT.get(key)
    if got is not None:
        return got
    d = os.path.join(_workdir(), key)
    os.makedirs(d, exist_ok=True)
    Path(d, "design.v").write_text(sources)
    Path(d, "tb.v").write_text(tb)
    exe = os.path.join(d, "sim.vvp")
    r = subprocess.run(
        ["iverilog", "-g2005", "-s", "tb", "-o", exe, "tb.v", "design.v"],
        capture_output=True,
        text=True,
        cwd=d,
    )
    if r.returncode != 0:
        raise SimError(f"iverilog failed:\n{r.stderr}")
    _BUILT[key] = exe
    return exe


def simulate(
    design: Design,
    text: str,
    dims: list[int],
    loads: list[tuple[int, int, int]],
    reads: list[tuple[int, int]],
    limit: int | None,
) -> tuple[int, int, list[int]]:
    """(err, cycles, read values) of one run."""
    tb = testbench(design, dims, len(loads), len(reads), limit)
    exe = compile_sim(text, tb)
    run = tempfile.mkdtemp(dir=_workdir())
    try:
        Path(run, "load.hex").write_text(
            "".join(f"{s:02x}{a:08x}{v & (2**64 - 1):016x}\n" for s, a, v in loads)
        )
        Path(run, "read.hex").write_text("".join(f"{s:02x}{a:08x}\n" for s, a in reads))
        r = subprocess.run(
            ["vvp", "-n", exe], capture_output=True, text=True, cwd=run, timeout=TIMEOUT_S
        )
        if r.returncode != 0:
            raise SimError(f"vvp failed:\n{r.stdout}\n{r.stderr}")
        lines = Path(run, "out.txt").read_text().split("\n")
    finally:
        shutil.rmtree(run, ignore_errors=True)
    head = lines[0].split()
    if len(head) != 4 or head[0] != "DONE":
        raise SimError("truncated simulation output")
    if head[1] != "1":
        raise SimError(f"the simulation did not finish within {MAX_CYCLES} cycles")
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
) -> RunResult:
    why = tools_missing()
    if why:
        raise InputError("R0005", f"the verilog target cannot run here: {why}")
    sig, args, bound, prog = prepare(source, fn_name, inputs, dims)
    fn = sig.function
    lf = design.fn
    dimv = [int(bound[i]) for i in range(fn.type.n_dims)]
    dim_of = {d.id: dimv[i] for i, d in enumerate(lf.dims)}
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
                sh = tuple(d.bits if isinstance(d, ir.Imm) else dim_of[d.id] for d in shape)
                count = int(np.prod(sh)) if sh else 1
                reads += [(p.sel, i) for i in range(count)]
                plan.append((x, sh))
            else:
                reads.append((p.sel, 0))
                plan.append((x, ()))
    err, cycles, vals = simulate(design, text, dimv, loads, reads, max_steps)
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
    return res


def _rebuild(t, it):
    if isinstance(t, Struct):
        return tuple(_rebuild(strip_ref(ft), it) for _, ft in t.fields)
    return next(it)
