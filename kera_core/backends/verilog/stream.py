"""A valid/ready stream interface around ``kera_main`` (issue 21: "a simple valid/ready
stream interface for inputs and outputs, and a generated test bench").

:func:`wrapper` writes ``kera_stream``: the kernel behind AXI-Stream-like ports, one per
parameter and per result (a tensor: its elements in row-major order; a scalar: one beat;
a struct: one stream per field), ``s<k>_tvalid``/``s<k>_tready``/``s<k>_tdata`` in,
``m<k>_tvalid``/``m<k>_tready``/``m<k>_tdata``/``m<k>_tlast`` out (the table is in the
artifact header). It loads the input streams one after another in order through the host
port (one element a cycle while both sides are ready), pulses ``start``, and when the run
is done streams the results one after another (one element a cycle while the consumer is
ready: a two-entry buffer in front of the memories' synchronous read). ``done`` is high
from the last result beat (or the end of a run with a checked error, which sends no
results: ``err`` says which) until the next run starts; then the next run's inputs are
accepted. ``err`` and ``cycles`` are ``kera_main``'s: the kernel's cycles are the same as
through the host port.

:func:`testbench` drives the wrapper from ``in.hex``: random bubbles on the inputs'
``tvalid`` and random back-pressure on the results' ``tready`` (an xorshift generator
seeded from the file; 0 means always valid and ready), ``tvalid`` held until accepted,
``tlast`` checked, every accepted result written out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kera_core.loops import ir

from .compile import Design, Port
from .testbench import MAX_CYCLES, TIMEOUT_S, SimError, _workdir, compile_sim


def simulate(
    design: Design,
    text: str,
    dims: list[int],
    loads: list[tuple[int, int, int]],
    reads: list[tuple[int, int]],
    limit: int | None,
    sim: str | None = None,
    stats: dict | None = None,
    seed: int = 0,
    threshold: int = 6,
) -> tuple[int, int, list[int]]:
    """(err, cycles, read values in ``reads``' order) of one run through ``kera_stream``
    (added to ``text`` unless the artifact has it): ``seed`` (0: none) and ``threshold``
    set the bubbles and back-pressure (a beat offered/accepted with probability
    (16 - threshold)/16)."""
    ins, outs = streams(design)
    in_counts = [sum(1 for s, _, _ in loads if s == st.port.sel) for st in ins]
    out_counts = [sum(1 for s, _ in reads if s == st.port.sel) for st in outs]
    if "module kera_stream" not in text:
        text = text + wrapper(design)
    tb = testbench(design, dims, in_counts, out_counts)
    t0 = time.perf_counter()
    cmd = compile_sim(text, tb, sim)
    t1 = time.perf_counter()
    run = tempfile.mkdtemp(dir=_workdir())
    try:
        beats = [v for st in ins for s, _, v in loads if s == st.port.sel]
        head = f"{int(limit is not None)} {limit or 0:x} {seed & (2**64 - 1):x} {threshold:x}\n"
        Path(run, "in.hex").write_text(head + "".join(f"{v & (2**64 - 1):x}\n" for v in beats))
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=run, timeout=TIMEOUT_S)
        t2 = time.perf_counter()
        if r.returncode != 0:
            raise SimError(f"{os.path.basename(cmd[0])} failed:\n{r.stdout}\n{r.stderr}")
        lines = Path(run, "out.txt").read_text().split("\n")
    finally:
        shutil.rmtree(run, ignore_errors=True)
    while lines and not lines[-1]:
        lines.pop()
    end = lines[-1].split() if lines else []
    if len(end) != 7 or end[0] != "END":
        raise SimError("truncated simulation output")
    done, err, cycles, badlast, nbeats, ticks = (int(x) for x in end[1:])
    if done != 1:
        raise SimError(f"the stream run did not finish within {MAX_CYCLES} cycles")
    if badlast:
        raise SimError(f"tlast wrong on {badlast} result beats")
    if stats is not None:
        stats["build_s"] = t1 - t0
        stats["run_s"] = t2 - t1
        stats["ticks"] = ticks
    if err:
        if nbeats:
            raise SimError(f"{nbeats} result beats after a checked error")
        return err, cycles, []
    per: list[list[int]] = [[] for _ in outs]
    for ln in lines[:-1]:
        k, _, v = ln.partition(" ")
        try:
            per[int(k)].append(int(v, 16))
        except ValueError:
            raise SimError(f"an undefined value (x/z) was streamed out: {ln}") from None
    if [len(p) for p in per] != out_counts:
        raise SimError(f"result beats {[len(p) for p in per]}, expected {out_counts}")
    return err, cycles, [v for p in per for v in p]


@dataclass
class Stream:
    index: int
    port: Port  # the host-port selector it loads or reads
    what: str  # the parameter or result it carries
    width: int
    count: str  # a Verilog constant expression of the dimension parameters


def streams(design: Design) -> tuple[list[Stream], list[Stream]]:
    """(input streams, output streams) of ``design``, in the order of the function's
    parameters and results (each flattened as the host runner loads and reads them)."""
    ins: list[Stream] = []
    outs: list[Stream] = []
    for lst, groups in ((ins, design.fn.params), (outs, design.fn.results)):
        for group in groups:
            for x in group:
                p = design.selector_of(x)
                if isinstance(x, ir.Buf):
                    count = design.schedule.memory(x).depth_expr
                    what = f"memory {x!r}"
                else:
                    count = "1"
                    what = f"scalar {p.name}"
                lst.append(Stream(len(lst), p, what, p.width, count))
    return ins, outs


def header_lines(design: Design) -> list[str]:
    ins, outs = streams(design)
    lines = [f"stream s{s.index} (in): {s.what}, {s.width} bits, beats {s.count}" for s in ins]
    lines += [f"stream m{s.index} (out): {s.what}, {s.width} bits, beats {s.count}" for s in outs]
    return lines


def _w(w: int) -> str:
    return f"[{w - 1}:0] "


def wrapper(design: Design) -> str:
    """The ``kera_stream`` module of ``design`` (instantiates ``kera_main``)."""
    ins, outs = streams(design)
    dims = [f"D{i}" for i in range(len(design.fn.dims))]
    params = ", ".join(f"parameter signed [63:0] {d} = 64'sd16" for d in dims)
    ports = [
        "input clk",
        "input rst",
        "input limit_en",
        "input [63:0] max_steps",
        "output reg done",
        "output [15:0] err",
        "output [63:0] cycles",
    ]
    for s in ins:
        k = s.index
        ports += [f"input s{k}_tvalid", f"output s{k}_tready", f"input {_w(s.width)}s{k}_tdata"]
    for s in outs:
        k = s.index
        ports += [
            f"output m{k}_tvalid",
            f"input m{k}_tready",
            f"output {_w(s.width)}m{k}_tdata",
            f"output m{k}_tlast",
        ]
    L = ["module kera_stream" + (f" #({params})" if params else "") + " ("]
    L.append(",\n".join(f"    {p}" for p in ports))
    L.append(");")
    for s in ins:
        L.append(f"  localparam signed [63:0] NS{s.index} = {s.count};")
    for s in outs:
        L.append(f"  localparam signed [63:0] NM{s.index} = {s.count};")
    L.append("  localparam LOAD = 2'd0, START = 2'd1, RUN = 2'd2, OUT = 2'd3;")
    L.append("  reg [1:0] ph;")
    L.append("  reg [15:0] cur;  // the stream being loaded or sent")
    L.append("  reg [31:0] idx;  // load: the next element; out: the next read address")
    L.append("  reg [31:0] sent;  // out: the elements sent of the current stream")
    L.append("  reg pend;  // out: a read issued last cycle (its data in host_rdata now)")
    L.append("  reg [1:0] cnt;  // out: elements in the buffer q0, q1")
    L.append("  reg [63:0] q0, q1;")
    L.append("  reg start, host_we;")
    L.append("  reg [7:0] host_sel;")
    L.append("  reg [63:0] host_wdata, nout;")
    L.append("  wire [31:0] host_addr = idx;")
    L.append("  wire [63:0] host_rdata;")
    L.append("  wire k_done;")
    inst = ", ".join(f".{d}({d})" for d in dims)
    L.append(f"  kera_main {'#(' + inst + ') ' if dims else ''}core (")
    L.append("      .clk(clk), .rst(rst), .start(start), .done(k_done), .err(err),")
    L.append("      .cycles(cycles), .limit_en(limit_en), .max_steps(max_steps),")
    L.append("      .host_we(host_we), .host_sel(host_sel), .host_addr(host_addr),")
    L.append("      .host_wdata(host_wdata), .host_rdata(host_rdata));")
    # load side: the current input stream writes through the host port
    L.append("  reg [63:0] nin;")
    L.append("  reg in_v;")
    L.append("  always @* begin")
    L.append("    nin = 64'd0; in_v = 1'b0; host_wdata = 64'd0; host_sel = 8'd0;")
    L.append("    case (cur)")
    for s in ins:
        k = s.index
        L.append(
            f"      16'd{k}: begin nin = NS{k}; in_v = s{k}_tvalid; "
            f"host_wdata = {{{{{64 - s.width}{{1'b0}}}}, s{k}_tdata}}; "
            f"host_sel = (ph == LOAD) ? 8'd{s.port.sel} : 8'd0; end"
            if s.width < 64
            else f"      16'd{k}: begin nin = NS{k}; in_v = s{k}_tvalid; "
            f"host_wdata = s{k}_tdata; host_sel = (ph == LOAD) ? 8'd{s.port.sel} : 8'd0; end"
        )
    L.append("      default: ;")
    L.append("    endcase")
    L.append("    nout = 64'd0;")
    L.append("    if (ph == OUT) case (cur)")
    for s in outs:
        k = s.index
        L.append(f"      16'd{k}: begin nout = NM{k}; host_sel = 8'd{s.port.sel}; end")
    L.append("      default: ;")
    L.append("    endcase")
    L.append("  end")
    L.append("  wire in_more = ph == LOAD && {32'd0, idx} < nin;")
    for s in ins:
        L.append(f"  assign s{s.index}_tready = in_more && cur == 16'd{s.index};")
    L.append("  always @* host_we = in_more && in_v;")
    # out side: reads issued ahead into a two-entry buffer
    L.append("  wire o_valid = ph == OUT && cnt != 2'd0;")
    L.append("  reg o_ready;")
    L.append("  always @* begin")
    L.append("    o_ready = 1'b0;")
    L.append("    case (cur)")
    for s in outs:
        L.append(f"      16'd{s.index}: o_ready = m{s.index}_tready;")
    L.append("      default: ;")
    L.append("    endcase")
    L.append("  end")
    L.append("  wire pop = o_valid && o_ready;")
    L.append("  wire [2:0] after = {1'b0, cnt} + {2'd0, pend} - {2'd0, pop};")
    L.append("  wire issue = ph == OUT && {32'd0, idx} < nout && after <= 3'd1;")
    L.append("  wire last = {32'd0, sent} + 64'd1 == nout;")
    for s in outs:
        k = s.index
        L.append(f"  assign m{k}_tvalid = o_valid && cur == 16'd{k};")
        L.append(f"  assign m{k}_tdata = q0[{s.width - 1}:0];")
        L.append(f"  assign m{k}_tlast = last;")
    L.append("  always @(posedge clk) begin")
    L.append("    start <= 1'b0;")
    L.append("    if (rst) begin")
    L.append("      ph <= LOAD; cur <= 16'd0; idx <= 32'd0; sent <= 32'd0; done <= 1'b0;")
    L.append("      pend <= 1'b0; cnt <= 2'd0;")
    L.append("    end else case (ph)")
    L.append("      LOAD: begin")
    L.append(f"        if (cur >= 16'd{len(ins)}) begin")
    L.append("          ph <= START; start <= 1'b1; cur <= 16'd0; idx <= 32'd0;")
    L.append("        end else if (!in_more) begin")
    L.append("          cur <= cur + 16'd1; idx <= 32'd0;")
    L.append("        end else if (in_v) idx <= idx + 32'd1;")
    L.append("      end")
    L.append("      START: begin ph <= RUN; done <= 1'b0; end")
    L.append("      RUN: if (k_done) begin")
    L.append("        cur <= 16'd0; idx <= 32'd0; sent <= 32'd0; pend <= 1'b0; cnt <= 2'd0;")
    L.append("        if (err != 16'd0) begin ph <= LOAD; done <= 1'b1; end")
    L.append("        else ph <= OUT;")
    L.append("      end")
    L.append("      OUT: begin")
    L.append(f"        if (cur >= 16'd{len(outs)}) begin")
    L.append("          ph <= LOAD; cur <= 16'd0; idx <= 32'd0; done <= 1'b1;")
    L.append("        end else if ({32'd0, sent} == nout) begin")
    L.append("          cur <= cur + 16'd1; idx <= 32'd0; sent <= 32'd0;")
    L.append("        end else begin")
    L.append("          pend <= issue;")
    L.append("          if (issue) idx <= idx + 32'd1;")
    L.append("          if (pop) sent <= sent + 32'd1;")
    L.append("          cnt <= after[1:0];")
    L.append("          if (pop) q0 <= (cnt == 2'd2) ? q1 : host_rdata;")
    L.append("          else if (pend && cnt == 2'd0) q0 <= host_rdata;")
    L.append("          if (pend && cnt - {1'b0, pop} == 2'd1) q1 <= host_rdata;")
    L.append("        end")
    L.append("      end")
    L.append("    endcase")
    L.append("  end")
    L.append("endmodule")
    return "\n".join(L) + "\n"


def testbench(design: Design, dims: list[int], in_counts: list[int], out_counts: list[int]) -> str:
    """The stream test bench at dimension sizes ``dims`` (the streams' beat counts there).
    ``in.hex``: ``limit_en max_steps seed threshold`` (hex; the generator is off at seed
    0, else a beat is offered / accepted when its 4 random bits are >= threshold), then
    every input beat in stream order. ``out.txt``: one line ``<stream> <hex>`` per result
    beat, then ``END <done> <err> <cycles> <tlast errors> <beats> <clock cycles>``."""
    ins, outs = streams(design)
    ps = ", ".join(f".D{i}({n})" for i, n in enumerate(dims))
    inst = f"kera_stream #({ps}) dut" if dims else "kera_stream dut"
    total = sum(in_counts)
    offs = [sum(in_counts[:k]) for k in range(len(in_counts))]
    decl, conns, drive, sample, after = [], [], [], [], []
    for s, n, off in zip(ins, in_counts, offs, strict=True):
        k = s.index
        decl.append(
            f"  reg s{k}_tvalid = 0; wire s{k}_tready; reg {_w(s.width)}s{k}_tdata = 0;"
            f" reg [63:0] i{k} = 0; reg h{k};"
        )
        conns.append(
            f".s{k}_tvalid(s{k}_tvalid), .s{k}_tready(s{k}_tready), .s{k}_tdata(s{k}_tdata)"
        )
        drive.append(
            f"      if (!s{k}_tvalid && i{k} < {n}) begin\n"
            f"        roll;\n"
            f"        if (go) begin s{k}_tvalid = 1; s{k}_tdata = din[{off} + i{k}]; end\n"
            f"      end"
        )
        sample.append(f"      h{k} = s{k}_tvalid && s{k}_tready;")
        after.append(f"      if (h{k}) begin s{k}_tvalid = 0; i{k} = i{k} + 1; end")
    for s, n in zip(outs, out_counts, strict=True):
        k = s.index
        decl.append(
            f"  wire m{k}_tvalid, m{k}_tlast; reg m{k}_tready = 0; wire {_w(s.width)}m{k}_tdata;"
            f" reg [63:0] o{k} = 0;"
        )
        conns.append(
            f".m{k}_tvalid(m{k}_tvalid), .m{k}_tready(m{k}_tready), .m{k}_tdata(m{k}_tdata),"
            f" .m{k}_tlast(m{k}_tlast)"
        )
        drive.append(f"      roll; m{k}_tready = go;")
        sample.append(
            f"      if (m{k}_tvalid && m{k}_tready) begin\n"
            f'        $fwrite(fo, "{k} %h\\n", m{k}_tdata);\n'
            f"        if (m{k}_tlast !== (o{k} + 1 == {n})) badlast = badlast + 1;\n"
            f"        o{k} = o{k} + 1; beats = beats + 1;\n"
            f"      end"
        )
    nl = "\n"
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1, limit_en = 0, go = 1;
  reg [63:0] max_steps = 0, w = 0, rng = 0, thr = 0, t = 0, i = 0, badlast = 0, beats = 0;
  reg [63:0] din [0:{max(total, 1) - 1}];
  wire done;
  wire [15:0] err;
  wire [63:0] cycles;
  integer fi, fo, code;
{nl.join(decl)}
  {inst} (.clk(clk), .rst(rst), .limit_en(limit_en), .max_steps(max_steps), .done(done),
    .err(err), .cycles(cycles){"".join(", " + c for c in conns)});
  task roll;
    begin
      if (rng == 0) go = 1;
      else begin
        rng = rng ^ (rng << 13);
        rng = rng ^ (rng >> 7);
        rng = rng ^ (rng << 17);
        go = rng[3:0] >= thr[3:0];
      end
    end
  endtask
  initial begin
    fi = $fopen("in.hex", "r");
    fo = $fopen("out.txt", "w");
    code = $fscanf(fi, "%h %h %h %h\\n", w, max_steps, rng, thr);
    limit_en = w[0];
    for (i = 0; i < {total}; i = i + 1) begin
      code = $fscanf(fi, "%h\\n", w);
      din[i] = w;
    end
    #1 clk = 1; #1 clk = 0;
    rst = 0;
    while (!done && t < {MAX_CYCLES}) begin
{nl.join(drive)}
      #1;
{nl.join(sample)}
      clk = 1;
      #1 clk = 0;
{nl.join(after)}
      t = t + 1;
    end
    $fwrite(fo, "END %0d %0d %0d %0d %0d %0d\\n", done, err, cycles, badlast, beats, t);
    $fclose(fo);
    $fclose(fi);
    $finish;
  end
endmodule
"""
