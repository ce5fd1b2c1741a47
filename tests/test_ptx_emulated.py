"""The ptx target's kernels run here, on the PTX emulator (kera_core/backends/ptx/emulate.py),
bit for bit against the reference interpreter: every example, generated programs, several
launch shapes. The emulator's own reading of the ISA is held to numpy and to exact
arithmetic, and it is shown to catch what a GPU would get wrong: a missing barrier, an
ordered compare where Kera needs an unordered one, an integer rounded twice to f32, a fault,
a deadlock."""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.backends.ptx import compile as P
from kera_core.backends.ptx import emulate as E
from kera_core.backends.ptx import runtime as R
from kera_core.backends.ptx import select as S
from kera_core.backends.ptx.check import Case, inputs_of, outcome
from kera_core.interp.api import run_function as reference

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))
STEPS = 20_000
DEFAULT = E.Shape()


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def _both(m, fn: str, inputs: dict, dims: dict, shape=DEFAULT) -> tuple[str, str]:
    """(the emulated run's outcome, the interpreter's): result digest or error code.
    ``m``: a module, or a graph (the optimizer's)."""
    want = outcome(lambda: reference(m, fn, inputs, dims, max_steps=STEPS))
    g = getattr(m, "graph", m)
    art = P.artifact_text(g, fn)
    _, threads, _ = P.read(art.encode(), g)
    got = outcome(lambda: R.run(art, threads, m, fn, inputs, dims, max_steps=STEPS, emulate=shape))
    return got, want


def _cases(m, path: Path, sizes=(0, 1, 3, 17)):
    for f in m.graph.exported():
        if P.unsupported(m.graph, f.name):
            continue
        for size in sizes:
            for adv in (False, True):
                yield Case(f"{path.name}:{f.name}", m, m.graph, f.name, size, 1, adv)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_function_agrees_with_the_interpreter(path: Path) -> None:
    m = _module(path.read_text())
    differ, n = [], 0
    for c in _cases(m, path):
        inputs, named = inputs_of(c)
        got, want = _both(m, c.fn, inputs, named)
        n += 1
        if got != want:
            differ.append(f"{c.label} size={c.size} adversarial={c.adversarial}: {got} / {want}")
    if path.stem not in ("recursion",):
        assert n, f"{path.name}: no function the ptx target compiles"
    assert not differ, "\n".join(differ)


def test_generated_programs_agree_with_the_interpreter() -> None:
    """The gpu-check's own cases (examples aside), on the emulator."""
    from kera_core.backends.ptx import check

    cases, _ = check.cases(40, lambda msg: None)
    ran = differ = 0
    out = []
    for c in cases:
        if c.label.startswith(tuple(p.name for p in EXAMPLES)) or P.unsupported(c.graph, c.fn):
            continue
        inputs, named = inputs_of(c)
        got, want = _both(c.src, c.fn, inputs, named)
        ran += 1
        if got != want:
            differ += 1
            out.append(f"{c.label} size={c.size} seed={c.seed}: {got} / {want}")
    assert ran >= 100, ran
    assert not differ, "\n".join(out[:20])


SHAPED = """
pub fn total[N](x: &f32[N]) -> f32 { sum(x) }
pub fn mm[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
pub fn scan[N](x: &mut f32[N]) -> f32[N] { for i in 1..N { x[i] = x[i] + x[i - 1]; } x * 2.0 }
pub fn soft[N](x: &f32[N]) -> f32[N] { softmax(x) }
pub fn top[N](x: &f64[N]) -> f64 { max(x) }
"""


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (2, 32), (5, 3)], ids=str)
def test_the_launch_shape_never_changes_the_bits(shape) -> None:
    """A grid kernel reads its shape from %ntid/%nctaid: one thread, a CTA of 7, 2 CTAs of
    32, 5 CTAs of 3 give the interpreter's bits, sizes past and short of the thread count."""
    m = _module(SHAPED)
    from kera_core.interp.api import entry_signature
    from kera_core.interp.gen import InputGenerator

    for fn in ("total", "mm", "scan", "soft", "top"):
        sig = entry_signature(m, fn)
        for size in (0, 1, 6, 40):
            dims = {i: size for i in range(len(sig.dim_names))}
            gen = InputGenerator(size + 7, adversarial=size % 2 == 1)
            inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
            named = {sig.dim_names[i]: n for i, n in dims.items()}
            got, want = _both(m, fn, inputs, named, E.Shape(*shape))
            assert got == want, (fn, size, got, want)


# --- the emulator's reading of the ISA -------------------------------------------------------


def _bits32(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    special = np.array(
        [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 1, 0x807FFFFF, 0x7F7FFFFF, 0x3F800000],
        dtype=np.uint32,
    )
    return np.concatenate([raw, special])


def _gpu32(x: np.ndarray) -> np.ndarray:
    b = x.astype(np.float32).view(np.uint32).copy()
    b[np.isnan(x)] = E.NAN32
    return b


def test_f32_arithmetic_rounds_as_ieee_and_nan_is_the_gpus() -> None:
    a = _bits32(3000, 1)
    b = np.roll(_bits32(3000, 2), 5)
    fa, fb = a.view(np.float32), b.view(np.float32)
    with np.errstate(all="ignore"):
        want = {
            "add": _gpu32(fa + fb),
            "sub": _gpu32(fa - fb),
            "mul": _gpu32(fa * fb),
            "div": _gpu32(fa / fb),
            "sqrt": _gpu32(np.sqrt(fa)),
        }
    for k in range(len(a)):
        x, y = E.f32v(int(a[k])), E.f32v(int(b[k]))
        got = {
            "add": E.f32b(x + y),
            "sub": E.f32b(x - y),
            "mul": E.f32b(x * y),
            "div": E.f32b(E.fdiv(x, y)),
            "sqrt": E.f32b(E.fsqrt(x)),
        }
        for op, g in got.items():
            assert g == int(want[op][k]), (op, hex(int(a[k])), hex(int(b[k])), hex(g))


def test_fma_and_integer_to_f32_round_once() -> None:
    rng = np.random.default_rng(3)
    for _ in range(2000):
        a, b, c = (int(v) for v in rng.integers(0, 2**32, 3, dtype=np.uint64))
        fa, fb, fc = E.f32v(a), E.f32v(b), E.f32v(c)
        got = E.fma32(a, b, c)
        if any(math.isnan(v) or math.isinf(v) for v in (fa, fb, fc)):
            continue
        exact = Fraction(fa) * Fraction(fb) + Fraction(fc)
        g = E.f32v(got)
        if math.isinf(g) or exact == 0:
            continue
        # the result is the f32 nearest the exact value: no f32 neighbour is nearer
        lo = E.f32v(got - 1 if got & 0x7FFFFFFF else got)
        hi = E.f32v(got + 1)
        err = abs(Fraction(g) - exact)
        for nb in (lo, hi):
            if not math.isinf(nb):
                assert err <= abs(Fraction(nb) - exact), (hex(a), hex(b), hex(c))
    # 2^60 + 2^36 + 1 through double is a tie (to 2^60); once, it rounds up
    n = 2**60 + 2**36 + 1
    assert E.f32v(E.i2f32(n)) == 2.0**60 + 2.0**37
    assert E.f32v(E.i2f32(-n)) == -(2.0**60 + 2.0**37)
    assert struct.pack("<f", float(n)) == struct.pack("<f", 2.0**60)  # what rounding twice gives


def test_float_to_integer_saturates_and_nan_is_zero() -> None:
    assert E.f2i(float("nan"), True, 32) == 0
    assert E.f2i(3e9, True, 32) == 0x7FFFFFFF
    assert E.f2i(-3e9, True, 32) == 0x80000000
    assert E.f2i(-1.5, False, 32) == 0
    assert E.f2i(-1.5, True, 64) == (-1) & E.M64
    assert E.f2i(float("inf"), False, 64) == E.M64


# --- what the emulator catches ---------------------------------------------------------------


def test_a_missing_barrier_is_caught(monkeypatch) -> None:
    """Thread 0's stores made without the barriers around them: another thread reads the
    location before the store lands (or after the next one), and the bits differ."""
    src = (ROOT / "examples" / "nbody.kera").read_text()
    path = ROOT / "examples" / "nbody.kera"

    def differ() -> int:
        P._CACHE.clear()
        m = _module(src)
        bad = 0
        for c in _cases(m, path, sizes=(17,)):
            inputs, named = inputs_of(c)
            got, want = _both(m, c.fn, inputs, named)
            bad += got != want
        return bad

    assert differ() == 0
    monkeypatch.setattr(S.Fn, "barrier", lambda self: None)
    try:
        assert differ() > 0
    finally:
        P._CACHE.clear()


EDGES = """
pub fn ne(x: f32, y: f32) -> bool { x != y }
pub fn wide(a: i64) -> f32 { a as f32 }
"""


def test_an_ordered_compare_or_a_double_rounding_is_caught(monkeypatch) -> None:
    m = _module(EDGES)
    nan = np.float32("nan")
    cases = [("ne", {"x": nan, "y": np.float32(1.0)}), ("wide", {"a": np.int64(2**60 + 2**36 + 1)})]
    for fn, inputs in cases:
        got, want = _both(m, fn, inputs, {})
        assert got == want, fn

    def ordered(self, d, name, args):  # `setp.ne` is false when either side is NaN
        a, b = self.val(args[0]), self.val(args[1])
        p = self.reg("pred")
        op = "ne" if name == "ne" else {"ne": "neu"}.get(name, name)
        self.e(
            f"setp.{op}.{args[0].type if S.is_float(args[0].type) else S._ityp(args[0].type)} {p}, {a}, {b};"
        )
        self.e(f"selp.u32 {d}, 1, 0, {p};")

    convert = S.Fn.convert

    def twice(self, d, t, x):  # i64 -> f64 -> f32: two roundings
        if t == "f32" and x.type == "i64":
            r = self.reg("f64")
            self.e(f"cvt.rn.f64.s64 {r}, {self.val(x)};")
            self.e(f"cvt.rn.f32.f64 {d}, {r};")
            return
        convert(self, d, t, x)

    monkeypatch.setattr(S.Fn, "compare", ordered)
    monkeypatch.setattr(S.Fn, "convert", twice)
    P._CACHE.clear()
    try:
        m = _module(EDGES)
        for fn, inputs in cases:
            got, want = _both(m, fn, inputs, {})
            assert got != want, fn
    finally:
        P._CACHE.clear()


KERNEL = """
.version 8.0
.target sm_80
.address_size 64
.shared .align 8 .b64 k_x;
.visible .entry kera_main (
\t.param .u64 kio,
\t.param .u64 kctx
)
{
\t.reg .b64 %rd<4>;
\t.reg .b32 %r<2>;
\t.reg .pred %p<2>;
\tld.param.u64 %rd0, [kio];
\tmov.u32 %r0, %tid.x;
\tsetp.eq.u32 %p0, %r0, 0;
BODY
\tret;
}
"""


def _run_kernel(body: str, threads: int = 4) -> None:
    mod = E.Module(KERNEL.replace("BODY", body))
    mem = E.Memory()
    io = mem.map(64)
    E.launch(mod, mem, {"kio": io, "kctx": 0}, 1, threads, block_limit=100_000)


def test_a_fault_a_deadlock_a_runaway_and_unknown_ptx_are_errors_not_crashes() -> None:
    _run_kernel("\tst.u64 [%rd0+8], 7;")  # inside the io cells: fine
    cases = {
        "outside every allocation": "\tst.u64 [%rd0+4096], 7;",
        "deadlock": "\t@%p0 bra $L_skip;\n\tbar.sync 0;\n$L_skip:",
        "ran past": "$L_spin:\n\tbra $L_spin;",
        "not emulated": "\tmin.f32 %rd1, %rd1, %rd1;",
        "not understood": "\tmov.u64 %rd1, what;",
        "not declared": "\tmov.u64 %rd9, 1;",
    }
    for what, body in cases.items():
        with pytest.raises(E.EmulationError) as e:
            _run_kernel(body)
        assert e.value.code == "R0008" and what in str(e.value), (what, str(e.value))


def test_undefined_division_gives_junk_not_a_plausible_answer() -> None:
    assert E.idiv(0x80000000, 0xFFFFFFFF, 32, True, False) == 0x5A5A5A5A
    assert E.idiv(5, 0, 64, False, True) == 0x5A5A5A5A5A5A5A5A
    assert E.idiv((-7) & E.M32, 2, 32, True, False) == (-3) & E.M32  # toward zero
    assert E.idiv((-7) & E.M32, 2, 32, True, True) == (-1) & E.M32  # the dividend's sign


def test_the_demo_runs_the_ptx_column_on_the_emulator_where_no_gpu_is(tmp_path, capsys) -> None:
    from kera_core.cli import main
    from kera_core.targets import get

    (tmp_path / "k.kera").write_text(
        "pub fn total[N](x: &f32[N]) -> f32 { sum(x) }\n"
        "pub fn scale[N](x: &f32[N], a: f32) -> f32[N] { x * a }\n"
    )
    assert main(["demo", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("k.kera"))
    names = out.splitlines()[0].split("(seed 1)")[1].split()
    cells = row.split()[8:]
    per_target = dict(zip(names, zip(cells[::2], cells[1::2], strict=True), strict=True))
    want = ("2/2", "same") if R.why_no_gpu() is None else ("2/2", "emul.")
    assert per_target["ptx"] == want, per_target
    assert get("ptx").emulate is None  # the demo leaves the target as it found it
    if R.why_no_gpu() is not None:
        assert "ptx: " in out and "its column ran on the emulator" in out


def test_float_remainder_is_c_fmod_bit_for_bit() -> None:
    """Float `%` on the ptx target (an integer helper, no PTX instruction) against the
    interpreter's C fmod: random bit patterns of every class, close exponents, subnormals,
    ±0, ±inf, NaN in both places."""
    m = _module(
        "pub fn f[N](x: &f32[N], y: &f32[N]) -> f32[N] { x % y }\n"
        "pub fn g[N](x: &f64[N], y: &f64[N]) -> f64[N] { x % y }\n"
    )
    rng = np.random.default_rng(11)
    n = 1500
    for fn, ut, ft in (("f", np.uint32, np.float32), ("g", np.uint64, np.float64)):
        bits = np.iinfo(ut).max
        x = rng.integers(0, bits, n, dtype=ut, endpoint=True).view(ft).copy()
        y = rng.integers(0, bits, n, dtype=ut, endpoint=True).view(ft).copy()
        x[:300] = (rng.standard_normal(300) * 100).astype(ft)
        y[:300] = rng.standard_normal(300).astype(ft)
        info = np.finfo(ft)
        special = np.array(
            [
                0.0,
                -0.0,
                np.inf,
                -np.inf,
                np.nan,
                1.0,
                -3.0,
                info.tiny,
                info.max,
                info.smallest_subnormal,
            ],
            dtype=ft,
        )
        k = len(special)
        x[300 : 300 + k * k] = np.repeat(special, k)
        y[300 : 300 + k * k] = np.tile(special, k)
        want = reference(m, fn, {"x": x, "y": y}, {"N": n})
        art = P.artifact_text(m.graph, fn)
        _, threads, _ = P.read(art.encode(), m.graph)
        got = R.run(art, threads, m, fn, {"x": x, "y": y}, {"N": n}, emulate=E.Shape(2, 16))
        a = np.asarray(want.outputs[0].value).view(ut)
        b = np.asarray(got.outputs[0].value).view(ut)
        assert a.tobytes() == b.tobytes(), [
            (x[i], y[i], hex(int(a[i])), hex(int(b[i]))) for i in np.nonzero(a != b)[0][:5]
        ]


def test_past_the_emulated_arena_is_a_machine_limit_not_a_disagreement() -> None:
    """The emulator's device arena is 16 MiB (a GPU's, 1 GiB): running out is R0009, marked
    as the machine's limit, which `kera run --target all` reports as the target stopping."""
    from kera_core.interp.errors import InterpError

    m = _module("pub fn big[N](x: &f32[N]) -> f32 { let y = x * 2.0; sum(y) + y[0] }")
    n = (E.ARENA // 4) + 1024
    x = np.ones(n, np.float32)
    art = P.artifact_text(m.graph, "big")
    _, threads, _ = P.read(art.encode(), m.graph)
    with pytest.raises(InterpError) as e:
        R.run(art, threads, m, "big", {"x": x}, {"N": n}, emulate=DEFAULT)
    assert e.value.code == "R0009" and getattr(e.value, "machine_limit", False)


def test_constant_tables_agree_on_the_emulator() -> None:
    """The tables of tests/test_const_tensors.py (built once per call, before the body, on
    the GPU by thread 0 between barriers) give the interpreter's bytes."""
    from tests import test_const_tensors as T
    from tests.outcomes import analyzed

    m = T._module()
    ran = 0
    for name, inputs in T.INPUTS.items():
        if P.unsupported(m.graph, name):
            continue
        got, want = _both(m, name, inputs, {})
        assert got == want and want.startswith("ok "), (name, got, want)
        ran += 1
    assert ran == len(T.INPUTS)
    looped = analyzed(T.LOOPED)
    x = np.arange(9, dtype=np.float32) - 4
    for fn in ("rows", "edited"):
        got, want = _both(looped, fn, {"x": x}, {})
        assert got == want, fn


def test_kera_run_emulate_gives_the_interpreters_digest(tmp_path) -> None:
    import subprocess
    import sys

    src = tmp_path / "f.kera"
    src.write_text("pub fn f[N](x: &f32[N]) -> f32 { sum(x * x) }\n")
    base = [sys.executable, "-m", "kera_core", "run", str(src), "--entry", "f", "--dims", "N=70"]

    def run(*extra):
        return subprocess.run([*base, *extra], capture_output=True, text=True)

    want = run().stdout.splitlines()[-1]
    assert want.startswith("result sha3-256:")
    one = run("--target", "ptx", "--emulate")
    assert one.returncode == 0 and one.stdout.splitlines()[-1] == want, one.stderr
    every = run("--target", "all", "--emulate")
    assert every.returncode == 0, every.stderr
    digest = want.split()[-1]
    assert f"target ptx {digest}" in every.stderr
    other = run("--target", "x86_64", "--emulate")
    assert other.returncode == 2 and "--emulate applies to the ptx target" in other.stderr
    assert "Traceback" not in one.stderr + every.stderr + other.stderr
