"""The Verilog backend's driver: a graph function → its loop program → the controller
schedule (:mod:`schedule`) → one synthesizable Verilog-2005 module, ``kera_main``, and the
artifact (that module, Kera's float units it instantiates, and a comment header carrying
the graph fingerprint):

```
// kera-verilog v1
// fingerprint sha3-256:<hex>
// entry <name>
// semantics <the semantics version it was built under>
// dims D0 = <name>, ...
```

The module (docs/targets/verilog.md has the whole interface):

* ``parameter signed [63:0] D<i>``: the dimension sizes. The hardware is built for one set
  of sizes, fixed when the module is elaborated: every memory's depth is a constant
  expression of them;
* ``clk``, ``rst`` (synchronous), ``start`` (a pulse in the idle state), ``done`` (high
  from the end of a run to the next start), ``err`` (0, or the number of the checked error
  that ended the run: a table in the header), ``cycles`` (the run's cycle count);
* ``limit_en``, ``max_steps``: the step budget (R0007) of counted loops;
* a host port for loading and unloading while idle: ``host_we``, ``host_sel`` (a memory or
  a scalar register: the selector table is in the header), ``host_addr``, ``host_wdata``,
  and ``host_rdata`` (one cycle after ``host_sel``/``host_addr``: memories read
  synchronously).
"""

from __future__ import annotations

import re
import sys
from collections import OrderedDict
from dataclasses import dataclass

from kera_core.ir.graph import Graph
from kera_core.ir.semantics import SEMANTICS_VERSION
from kera_core.loops import NotLowered
from kera_core.loops.ir import Buf, LFunction, Var
from kera_core.loops.lower import program_of
from kera_core.loops.target import FIXED_MEMORIES
from kera_core.opt.inline import Inline
from kera_core.opt.manager import optimize

from . import datapath as D
from .float_units import SOURCES, UNITS
from .schedule import FINISH, IDLE, Schedule

MAGIC = "// kera-verilog v1\n"
ONE = "1'b1"
MAX_SELECTORS = 256


class ArtifactError(ValueError):
    """Bytes that are not a verilog artifact, or not built from this graph."""


@dataclass
class Port:
    """One host-port selector: a memory (``buf``) or a scalar register (``var``)."""

    sel: int
    name: str
    width: int
    buf: Buf | None = None
    var: Var | None = None
    expr: str = ""


@dataclass
class Design:
    fn: LFunction
    schedule: Schedule
    selectors: list[Port]
    module: str  # the kera_main text
    sources: str  # the float units it needs

    def selector_of(self, x) -> Port:
        for p in self.selectors:
            if (p.buf is not None and p.buf is x) or (p.var is not None and p.var is x):
                return p
        raise KeyError(repr(x))


_CACHE: OrderedDict[tuple[str, bytes], Design] = OrderedDict()
CACHE_SIZE = 32


def compiled(graph: Graph, fn: str) -> Design:
    key = (fn, graph.functions[fn].hash)
    got = _CACHE.get(key)
    if got is not None:
        _CACHE.move_to_end(key)
        return got
    # a circuit's RAMs cannot trade places; it has no call stack: its callees inlined
    prog = program_of(_inlined(graph, fn), fn, FIXED_MEMORIES)
    design = build(prog.functions[fn])
    _CACHE[key] = design
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return design


def _inlined(graph: Graph, fn: str) -> Graph:
    """``graph`` with every call ``fn`` reaches inlined where the optimizer's inliner may
    (any size, exported callees too; a call whose callee could fail at it keeps its checked
    error where it is, and stays: refused below). The same bits by the optimizer's contract."""
    if not any(n.op == "call" for n in graph.nodes.values()):
        return graph
    return optimize(graph, [Inline(max_nodes=sys.maxsize, exported=True)]).graph


def unsupported(graph: Graph, fn: str) -> list[str]:
    if fn not in graph.functions:
        return [f"no function `{fn}`"]
    try:
        compiled(graph, fn)
    except (NotLowered, D.NotSupported) as e:
        return [str(e)]
    return []


# --- the module -----------------------------------------------------------------------------


def build(fn: LFunction) -> Design:
    sch = Schedule(fn)
    sels: list[Port] = []
    for m in sch.memories.values():
        sels.append(Port(len(sels), m.name, m.width, buf=m.buf))
    scalars: list[Var] = [x for g in fn.params for x in g if isinstance(x, Var)]
    scalars += [x for g in fn.results for x in g if isinstance(x, Var) and x not in scalars]
    for v in scalars:
        sels.append(Port(len(sels), repr(v), D.width(v.type), var=v, expr=sch.reg(v)))
    if len(sels) > MAX_SELECTORS:
        raise D.NotSupported(f"more than {MAX_SELECTORS} buffers and scalars at the host port")
    text = module_text(sch, sels)
    return Design(fn, sch, sels, text, unit_sources(sorted({u.unit for u in sch.units.values()})))


def _case_arms(items: list[tuple[int, list[str]]], pad: str) -> list[str]:
    out = []
    for st, lines in items:
        out.append(f"{pad}{st}: begin")
        out += [f"{pad}  {ln}" for ln in lines]
        out.append(f"{pad}end")
    return out


def module_text(sch: Schedule, sels: list[Port]) -> str:
    fn = sch.fn
    nstates = len(sch.states)
    sw = max(1, (nstates - 1).bit_length())
    L: list[str] = []
    n_dims = len(fn.dims)
    params = "\n".join(
        f"    parameter signed [63:0] D{i} = 64'sd16{',' if i + 1 < n_dims else ''}  // {d!r}"
        for i, d in enumerate(fn.dims)
    )
    L.append("module kera_main" + (f" #(\n{params}\n)" if fn.dims else "") + " (")
    L.append(
        "    input clk,\n    input rst,\n    input start,\n    output reg done,\n"
        "    output reg [15:0] err,\n    output reg [63:0] cycles,\n    input limit_en,\n"
        "    input [63:0] max_steps,\n    input host_we,\n    input [7:0] host_sel,\n"
        "    input [31:0] host_addr,\n    input [63:0] host_wdata,\n"
        "    output reg [63:0] host_rdata\n);"
    )
    L.append(f"  reg [{sw - 1}:0] state;")
    L.append("  reg [63:0] steps;")
    for _vid, (name, w, what) in sorted(sch.regs.items()):
        L.append(f"  reg [{w - 1}:0] {name};  // {what}")
    for name, w in sch.extra_regs:
        L.append(f"  reg [{w - 1}:0] {name};")
    # memories: one synchronous read port, one write port (the host's while idle)
    for p in sels:
        if p.buf is None:
            continue
        m = sch.memories[p.buf.id]
        n, w = m.name, m.width
        L.append(f"  // {p.buf!r}: {p.buf.elem}[{m.depth_expr}] ({p.buf.role})")
        L.append(f"  localparam signed [63:0] N_{n} = {m.depth_expr};")
        L.append(f"  localparam DEPTH_{n} = (N_{n} > 0) ? N_{n} : 1;")
        L.append(f"  localparam AW_{n} = (DEPTH_{n} > 1) ? $clog2(DEPTH_{n}) : 1;")
        L.append(f"  reg [{w - 1}:0] {n} [0:DEPTH_{n}-1];")
        L.append(f"  reg [{w - 1}:0] {n}_q, {n}_wd;")
        L.append(f"  reg [AW_{n}-1:0] {n}_ra, {n}_wa;")
        L.append(f"  reg {n}_we;")
        L.append("  always @(posedge clk) begin")
        L.append(f"    if ({n}_we) {n}[{n}_wa] <= {n}_wd;")
        L.append(f"    {n}_q <= {n}[{n}_ra];")
        L.append("  end")
        L.append("  always @* begin")
        L.append(f"    {n}_ra = host_addr;")
        L.append(f"    {n}_wa = host_addr;")
        L.append(f"    {n}_wd = host_wdata;")
        L.append(f"    {n}_we = (state == {IDLE}) && host_we && (host_sel == 8'd{p.sel});")
        arms: dict[int, list[str]] = {}
        for st, a in m.reads:
            arms.setdefault(st, []).append(f"{n}_ra = {a};")
        for st, a, d, c in m.writes:
            arms.setdefault(st, []).extend([f"{n}_we = {c};", f"{n}_wa = {a};", f"{n}_wd = {d};"])
        if arms:
            L.append("    case (state)")
            L += _case_arms(sorted(arms.items()), "      ")
            L.append("      default: ;")
            L.append("    endcase")
        L.append("  end")
    # float units: one instance per kind, operands multiplexed by the state
    for u in sch.units.values():
        spec = UNITS[u.unit]
        n = u.name
        L.append(f"  // {u.unit}: latency {spec.latency}")
        L.append(f"  reg {n}_vi;")
        for port, w in spec.inputs:
            L.append(f"  reg [{w - 1}:0] {n}_{port};")
        L.append(f"  wire {n}_vo;")
        for port, w in spec.outputs:
            L.append(f"  wire [{w - 1}:0] {n}_{port};")
        ps = ", ".join(f".{k}({v})" for k, v in spec.params.items())
        conns = [".clk(clk)", ".rst(rst)", f".valid_in({n}_vi)", f".valid_out({n}_vo)"]
        conns += [f".{port}({n}_{port})" for port, _ in spec.inputs + spec.outputs]
        L.append(f"  {spec.module} #({ps}) {n} ({', '.join(conns)});")
        L.append("  always @* begin")
        L.append(f"    {n}_vi = 1'b0;")
        for port, w in spec.inputs:
            L.append(f"    {n}_{port} = {w}'h0;")
        L.append("    case (state)")
        # a pipelined loop's state issues with the issuing stage's valid bit ("valid")
        arms = [
            (
                st,
                [f"{n}_vi = {ports.get('valid', ONE)};"]
                + [f"{n}_{k} = {v};" for k, v in ports.items() if k != "valid"],
            )
            for st, ports in u.issues
        ]
        L += _case_arms(arms, "      ")
        L.append("      default: ;")
        L.append("    endcase")
        L.append("  end")
    L.append(sch.helpers.text().rstrip("\n"))
    # host reads
    L.append("  always @* begin")
    L.append("    case (host_sel)")
    for p in sels:
        src = f"{p.name}_q" if p.buf is not None else p.expr
        L.append(f"      8'd{p.sel}: host_rdata = {src};")
    L.append("      default: host_rdata = 64'h0;")
    L.append("    endcase")
    L.append("  end")
    # the controller
    L.append("  always @(posedge clk) begin")
    L.append("    if (rst) begin")
    L.append(f"      state <= {IDLE};\n      done <= 1'b0;\n      err <= 16'h0;")
    L.append("      cycles <= 64'h0;\n      steps <= 64'h0;")
    L.append("    end else begin")
    L.append(f"      if (state != {IDLE}) cycles <= cycles + 1;")
    L.append("      case (state)")
    idle = []
    loads = [p for p in sels if p.var is not None and any(p.var in g for g in fn.params)]
    if loads:
        idle.append("if (host_we) case (host_sel)")
        for p in loads:
            if p.expr.startswith("r"):
                idle.append(f"  8'd{p.sel}: {p.expr} <= host_wdata;")
        idle.append("  default: ;")
        idle.append("endcase")
    idle.append("if (start) begin")
    idle.append("  done <= 1'b0;\n  err <= 16'h0;\n  cycles <= 64'h0;\n  steps <= 64'h0;")
    idle.append(f"  state <= {sch.entry};")
    idle.append("end")
    fin = ["done <= 1'b1;", f"state <= {IDLE};"]
    arms = [(IDLE, idle), (FINISH, fin)]
    for st in sch.states[2:]:
        arms.append((st.id, [f"// {st.comment}"] + st.body))
    L += _case_arms(arms, "        ")
    L.append(f"        default: state <= {IDLE};")
    L.append("      endcase")
    L.append("    end")
    L.append("  end")
    L.append("endmodule")
    return "\n".join(x for x in L if x) + "\n"


def unit_sources(units: list[str]) -> str:
    """The unit source files that ``units`` (registry names) need, common pieces first."""
    wanted = {UNITS[u].module for u in units}
    out = []
    for path in SOURCES:
        text = path.read_text()
        mods = set(re.findall(r"^module\s+(\w+)", text, re.M))
        if path.name == "kera_fp_common.v" and wanted:
            out.insert(0, text)
        elif mods & wanted:
            out.append(text)
    return "".join(out)


# --- the artifact ---------------------------------------------------------------------------


def header(graph: Graph, fn: str, design: Design) -> str:
    lf = design.fn
    lines = [
        MAGIC.rstrip("\n"),
        f"// fingerprint sha3-256:{graph.fingerprint().hex()}",
        f"// entry {fn}",
        f"// semantics {SEMANTICS_VERSION}",
        "// dims " + (", ".join(f"D{i} = {d!r}" for i, d in enumerate(lf.dims)) or "none"),
        f"// controller: {design.schedule.summary()}",
    ]
    for u in design.schedule.units.values():
        lines.append(f"// unit {u.name}: {UNITS[u.unit].module}, latency {UNITS[u.unit].latency}")
    for p in design.selectors:
        what = f"memory {p.buf!r}" if p.buf is not None else f"scalar {p.name}"
        lines.append(f"// host_sel {p.sel}: {what}")
    for i, s in enumerate(design.schedule.sites, 1):
        lines.append(f"// err {i}: {s.code}" + (f" {s.message}" if s.message else ""))
    for ln in design.schedule.loop_report():
        lines.append(f"// {ln}")
    return "\n".join(lines) + "\n"


def artifact_text(graph: Graph, fn: str, stream: bool = False) -> str:
    """The artifact; ``stream``: with the valid/ready wrapper ``kera_stream`` too
    (stream.py; its streams listed in the header)."""
    d = compiled(graph, fn)
    head, wrap = header(graph, fn, d), ""
    if stream:
        from .stream import header_lines, wrapper

        head += "".join(f"// {ln}\n" for ln in header_lines(d))
        wrap = "\n" + wrapper(d)
    return head + d.module + wrap + "\n// --- Kera float units ---\n" + d.sources


_HEAD = re.compile(
    r"// kera-verilog v1\n// fingerprint sha3-256:([0-9a-f]{64})\n// entry (\S+)\n"
    r"(?:// semantics (\d+)\n)?"
)


def read(data: bytes, graph: Graph | None = None) -> tuple[str, str]:
    """(entry, Verilog text) of an artifact, checked against ``graph``."""
    text = data.decode("utf-8", "replace")
    m = _HEAD.match(text)
    if m is None:
        raise ArtifactError("not a verilog artifact")
    if graph is not None and bytes.fromhex(m.group(1)) != graph.fingerprint():
        raise ArtifactError("the artifact was not built from this graph (fingerprint differs)")
    # an older version is fine: an operation whose bits changed since changed the fingerprint
    if int(m.group(3) or 1) > SEMANTICS_VERSION:
        raise ArtifactError(f"the artifact was built under semantics version {m.group(3)}")
    return m.group(2), text
