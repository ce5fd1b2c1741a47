"""Kera's own IEEE 754 float units in Verilog-2005: the registry and the simulation harness.

``UNITS`` lists every unit instance (a module of ``units/`` with its parameters): its ports,
its fixed latency in cycles and its exact reference (``float_ref``). ``simulate`` runs one
batch of operand vectors through one unit in a single iverilog simulation: the vectors go
to a hex file read with ``$readmemh``, a generated test bench drives one vector per cycle
(with a bubble every fifth cycle to exercise ``valid_in``), checks that ``valid_out`` rises
exactly ``latency`` cycles after each ``valid_in``, and writes one hex line per result.

Every unit has the ports ``clk``, ``rst`` (synchronous, clears the valid pipeline),
``valid_in``, its operands, ``valid_out`` and its results.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import float_ref as R
from .float_ref import F32, F64, Fmt

UNITS_DIR = Path(__file__).with_name("units")
SOURCES = sorted(UNITS_DIR.glob("*.v"))


@dataclass(frozen=True)
class Unit:
    name: str  # e.g. "f32_add"
    module: str
    params: dict[str, int]
    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, int], ...]
    latency: int
    kind: str  # add, mul, div, sqrt, fma, cmp, minmax, f2i, i2f, cvt
    fmt: Fmt  # the operand format (cvt: the input format)
    ref: Callable[..., tuple[int, ...]] = field(compare=False)
    out_fmt: Fmt | None = None
    int_width: int = 0
    int_signed: bool = False

    @property
    def in_width(self) -> int:
        return sum(w for _, w in self.inputs)

    @property
    def out_width(self) -> int:
        return sum(w for _, w in self.outputs)


# Default latencies (cycles from valid_in to valid_out); every unit takes a LATENCY
# parameter >= 1 and these are the values the registry (and the tests) instantiate.
LATENCY = {
    "add": 2,
    "mul": 2,
    "div": 3,
    "sqrt": 3,
    "fma": 3,
    "cmp": 1,
    "minmax": 1,
    "f2i": 2,
    "i2f": 2,
    "cvt": 2,
}


# The register stages cut into a pipelined unit's datapath besides its input registers,
# in the order a growing LATENCY fills them (a cut after the named step); latency beyond
# them adds output registers. LATENCY = 1 + the cuts used + the output registers. The
# other units compute combinationally between their input registers and LATENCY - 1
# output registers.
CUTS = {
    "add": ("add", "normalise"),
    "mul": ("multiply", "normalise"),
    "fma": ("multiply", "add", "normalise"),
}


def at_latency(unit: Unit, latency: int) -> Unit:
    """``unit`` instantiated with another ``LATENCY`` (>= 1)."""
    return dataclasses.replace(unit, params={**unit.params, "LATENCY": latency}, latency=latency)


def _fp(f: Fmt) -> dict[str, int]:
    return {"EW": f.ew, "MW": f.mw}


def _build() -> dict[str, Unit]:
    units: dict[str, Unit] = {}

    def put(u: Unit) -> None:
        units[u.name] = u

    for f in (F32, F64):
        n = f.bits
        p = _fp(f)
        put(
            Unit(
                f"{f.name}_add",
                "kera_fp_add",
                {**p, "LATENCY": LATENCY["add"]},
                (("a", n), ("b", n), ("sub", 1)),
                (("y", n),),
                LATENCY["add"],
                "add",
                f,
                lambda a, b, s, f=f: (R.add(f, a, b, bool(s)),),
            )
        )
        put(
            Unit(
                f"{f.name}_mul",
                "kera_fp_mul",
                {**p, "LATENCY": LATENCY["mul"]},
                (("a", n), ("b", n)),
                (("y", n),),
                LATENCY["mul"],
                "mul",
                f,
                lambda a, b, f=f: (R.mul(f, a, b),),
            )
        )
        put(
            Unit(
                f"{f.name}_div",
                "kera_fp_div",
                {**p, "LATENCY": LATENCY["div"]},
                (("a", n), ("b", n)),
                (("y", n),),
                LATENCY["div"],
                "div",
                f,
                lambda a, b, f=f: (R.div(f, a, b),),
            )
        )
        put(
            Unit(
                f"{f.name}_sqrt",
                "kera_fp_sqrt",
                {**p, "LATENCY": LATENCY["sqrt"]},
                (("a", n),),
                (("y", n),),
                LATENCY["sqrt"],
                "sqrt",
                f,
                lambda a, f=f: (R.sqrt(f, a),),
            )
        )
        put(
            Unit(
                f"{f.name}_fma",
                "kera_fp_fma",
                {**p, "LATENCY": LATENCY["fma"]},
                (("a", n), ("b", n), ("c", n)),
                (("y", n),),
                LATENCY["fma"],
                "fma",
                f,
                lambda a, b, c, f=f: (R.fma(f, a, b, c),),
            )
        )
        put(
            Unit(
                f"{f.name}_cmp",
                "kera_fp_cmp",
                {**p, "LATENCY": LATENCY["cmp"]},
                (("a", n), ("b", n)),
                (("eq", 1), ("lt", 1), ("le", 1), ("un", 1)),
                LATENCY["cmp"],
                "cmp",
                f,
                lambda a, b, f=f: R.compare(f, a, b),
            )
        )
        put(
            Unit(
                f"{f.name}_minmax",
                "kera_fp_minmax",
                {**p, "LATENCY": LATENCY["minmax"]},
                (("a", n), ("b", n), ("is_max", 1)),
                (("y", n),),
                LATENCY["minmax"],
                "minmax",
                f,
                lambda a, b, m, f=f: (R.minmax(f, a, b, bool(m)),),
            )
        )
        for iw in (32, 64):
            for signed in (True, False):
                it = f"{'i' if signed else 'u'}{iw}"
                ip = {**p, "IW": iw, "SIGNED": int(signed)}
                put(
                    Unit(
                        f"{f.name}_to_{it}",
                        "kera_fp_to_int",
                        {**ip, "LATENCY": LATENCY["f2i"]},
                        (("a", n),),
                        (("y", iw),),
                        LATENCY["f2i"],
                        "f2i",
                        f,
                        lambda a, f=f, iw=iw, s=signed: (R.to_int(f, a, iw, s),),
                        int_width=iw,
                        int_signed=signed,
                    )
                )
                put(
                    Unit(
                        f"{it}_to_{f.name}",
                        "kera_int_to_fp",
                        {**ip, "LATENCY": LATENCY["i2f"]},
                        (("a", iw),),
                        (("y", n),),
                        LATENCY["i2f"],
                        "i2f",
                        f,
                        lambda a, f=f, iw=iw, s=signed: (R.from_int(f, a, iw, s),),
                        int_width=iw,
                        int_signed=signed,
                    )
                )
    for fi, fo in ((F32, F64), (F64, F32)):
        put(
            Unit(
                f"{fi.name}_to_{fo.name}",
                "kera_fp_convert",
                {"EWI": fi.ew, "MWI": fi.mw, "EWO": fo.ew, "MWO": fo.mw, "LATENCY": LATENCY["cvt"]},
                (("a", fi.bits),),
                (("y", fo.bits),),
                LATENCY["cvt"],
                "cvt",
                fi,
                lambda a, fi=fi, fo=fo: (R.convert(fi, fo, a),),
                out_fmt=fo,
            )
        )
    return units


UNITS: dict[str, Unit] = _build()


def tools_missing() -> str | None:
    """The reason the simulator cannot run, or None."""
    for tool in ("iverilog", "vvp"):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install iverilog)"
    return None


def testbench(unit: Unit, count: int, vec_path: str, out_path: str) -> str:
    """A Verilog test bench for ``unit`` driving ``count`` vectors from ``vec_path``."""
    win, lat = unit.in_width, unit.latency
    conns, hi = [], win
    for name, w in unit.inputs:
        conns.append(f".{name}(cur[{hi - 1}:{hi - w}])")
        hi -= w
    wires = "\n".join(f"  wire [{w - 1}:0] o_{name};" for name, w in unit.outputs)
    conns += [f".{name}(o_{name})" for name, _ in unit.outputs]
    params = ", ".join(f".{k}({v})" for k, v in unit.params.items())
    outcat = ", ".join(f"o_{name}" for name, _ in unit.outputs)
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1, valid_in = 0;
  reg [{win - 1}:0] mem [0:{count - 1}];
  reg [{win - 1}:0] cur = 0;
  wire valid_out;
{wires}
  reg [{lat}:0] hist = 0;
  integer i, nout, cyc, fo, bad;
  {unit.module} #({params}) dut (.clk(clk), .rst(rst), .valid_in(valid_in),
    .valid_out(valid_out), {", ".join(conns)});
  initial begin
    $readmemh("{vec_path}", mem);
    fo = $fopen("{out_path}", "w");
    #1 clk = 1; #1 clk = 0; rst = 0;
    i = 0; nout = 0; cyc = 0; bad = 0;
    while (nout < {count} && cyc < {count * 2 + lat + 16}) begin
      if (i < {count} && (cyc % 5) != 3) begin
        valid_in = 1; cur = mem[i]; i = i + 1;
      end else valid_in = 0;
      #1 clk = 1;
      #1 clk = 0;
      hist = {{hist[{lat - 1}:0], valid_in}};
      if (valid_out !== hist[{lat - 1}]) bad = bad + 1;
      if (valid_out === 1'b1) begin
        $fwrite(fo, "%h\\n", {{{outcat}}});
        nout = nout + 1;
      end
      cyc = cyc + 1;
    end
    $fwrite(fo, "END %0d %0d %0d\\n", nout, bad, cyc);
    $fclose(fo);
    $finish;
  end
endmodule
"""


class SimError(RuntimeError):
    pass


def simulate(
    unit: Unit, vectors: Sequence[Sequence[int]], workdir: str | None = None
) -> list[tuple[int, ...]]:
    """Run ``vectors`` (one tuple of operand integers per vector) through ``unit`` in one
    iverilog simulation; returns one tuple of result integers per vector, in order."""
    count = len(vectors)
    if count == 0:
        return []
    tmp = tempfile.mkdtemp(prefix=f"kera_{unit.name}_", dir=workdir)
    try:
        vec = os.path.join(tmp, "in.hex")
        out = os.path.join(tmp, "out.hex")
        tbv = os.path.join(tmp, "tb.v")
        digits = (unit.in_width + 3) // 4
        shifts = []
        acc = unit.in_width
        for _, w in unit.inputs:
            acc -= w
            shifts.append((acc, (1 << w) - 1))
        with open(vec, "w") as fh:
            for v in vectors:
                word = 0
                for x, (sh, mask) in zip(v, shifts, strict=True):
                    word |= (x & mask) << sh
                fh.write(f"{word:0{digits}x}\n")
        Path(tbv).write_text(testbench(unit, count, vec, out))
        exe = os.path.join(tmp, "sim.vvp")
        r = subprocess.run(
            ["iverilog", "-g2005", "-Wall", "-s", "tb", "-o", exe, tbv, *map(str, SOURCES)],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise SimError(f"iverilog failed for {unit.name}:\n{r.stderr}")
        r = subprocess.run(["vvp", "-n", exe], capture_output=True, text=True, cwd=tmp)
        if r.returncode != 0:
            raise SimError(f"vvp failed for {unit.name}:\n{r.stdout}\n{r.stderr}")
        lines = Path(out).read_text().split()
        if len(lines) < 4 or lines[-4] != "END":
            raise SimError(f"{unit.name}: truncated simulation output")
        nout, bad, _cyc = (int(x) for x in lines[-3:])
        if nout != count:
            raise SimError(f"{unit.name}: {nout} results for {count} vectors")
        if bad:
            raise SimError(
                f"{unit.name}: valid_out off the {unit.latency}-cycle latency {bad} times"
            )
        res = []
        oshifts = []
        acc = unit.out_width
        for _, w in unit.outputs:
            acc -= w
            oshifts.append((acc, (1 << w) - 1))
        for line in lines[:-4]:
            word = int(line, 16)  # an x or z in the result raises here
            res.append(tuple((word >> sh) & mask for sh, mask in oshifts))
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def reference(unit: Unit, vectors: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    return [unit.ref(*v) for v in vectors]
