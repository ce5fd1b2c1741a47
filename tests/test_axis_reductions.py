"""Reductions and composites along one axis (issue 16 item 2; docs/semantics.md §7.6):
`sum mean max min argmax argmin softmax layernorm` with a constant axis.

* the type checker: result types (symbolic dimensions kept), negative axes, the vector form
  is the whole form, K0316/K0303 with their spans, existing graphs unchanged;
* the interpreter: every line of the result has the bits of the rank-1 operation on that
  line of the input (the definition), and is within the documented bound of NumPy;
* the loop program (CPU and GRID shapes) and every native target that runs here (x86-64,
  arm64 under unicorn, verilog under iverilog for small cases) give the interpreter's bits or
  its checked error, and so does wasm; the ptx text assembles with ptxas.

Axis lengths 0, 1, odd, 1023/1024/1025 (the tile boundary) and a larger one, over rank 2
and rank 3 (every axis), f32 and f64 (and i32 where the type rules allow), ordinary and
adversarial inputs (NaN, ±0, ±inf).
"""

from __future__ import annotations

import math
import platform

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import InterpError
from kera_core.interp import reduce as R
from kera_core.interp.api import run_function as reference
from kera_core.loops import lower_program, run_function
from kera_core.loops.target import CPU, GRID
from kera_core.targets import get, run_module
from tests.outcomes import analyzed, outcome, runnable_target, same_as_reference
from tests.tools import tool_missing

FLOAT_OPS = ("sum", "mean", "max", "min", "argmax", "argmin", "softmax", "layernorm")
INT_OPS = ("sum", "mean", "max", "min", "argmax", "argmin")
DIMS = ("A", "B", "C")


def _call(op: str, axis: int) -> str:
    if op == "layernorm":
        return f"layernorm(x, 0.001, {axis})"
    return f"{op}(x, {axis})"


def _result(op: str, elem: str, rank: int, axis: int) -> str:
    dims = DIMS[:rank]
    if op in ("softmax", "layernorm"):
        return f"{elem}[{', '.join(dims)}]"
    kept = [d for i, d in enumerate(dims) if i != axis]
    return f"{'i64' if op.startswith('arg') else elem}[{', '.join(kept)}]"


def fn_name(op: str, elem: str, rank: int, axis: int) -> str:
    return f"{op}_{elem}_r{rank}_a{axis}"


def _cases():
    for elem, ops in (("f32", FLOAT_OPS), ("f64", FLOAT_OPS), ("i32", INT_OPS)):
        for op in ops:
            for rank in (2, 3):
                for axis in range(rank):
                    yield op, elem, rank, axis


CASES = list(_cases())


def _source(cases) -> str:
    lines = []
    for op, elem, rank, axis in cases:
        dims = ", ".join(DIMS[:rank])
        lines.append(
            f"pub fn {fn_name(op, elem, rank, axis)}[{dims}](x: &{elem}[{dims}])"
            f" -> {_result(op, elem, rank, axis)} {{ {_call(op, axis)} }}"
        )
    return "\n".join(lines) + "\n"


_MODULE = []


def module():
    if not _MODULE:
        _MODULE.append(analyzed(_source(CASES)))
    return _MODULE[0]


def shape_with(rank: int, axis: int, n: int, others=(3, 2)) -> tuple[int, ...]:
    rest = list(others)
    return tuple(n if i == axis else rest.pop(0) for i in range(rank))


def data(elem: str, shape, seed: int, adversarial: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    size = math.prod(shape)
    if elem == "i32":
        return rng.integers(-(2**31), 2**31, size, dtype=np.int64).astype(np.int32).reshape(shape)
    dt = np.float32 if elem == "f32" else np.float64
    x = rng.standard_normal(size) * np.exp2(rng.integers(-8, 8, size))
    if adversarial and size:
        specials = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, -0.0, 0.0])
        k = max(1, size // 7)
        at = rng.choice(size, k, replace=False)
        x[at] = rng.choice(specials, k)
    return x.astype(dt).reshape(shape)


def _bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


# --- the type checker ------------------------------------------------------------------------


def test_result_types_keep_symbolic_dimensions_and_axes_count_from_the_end() -> None:
    m = analyzed(
        """
const AX: i64 = 3 - 2;
pub fn a[M, N](x: &f32[M, N]) -> f32[N] { sum(x, 0) }
pub fn b[M, N](x: &f32[M, N]) -> f32[M] { sum(x, -1) }
pub fn c[M, N](x: &f32[M, N]) -> f32[M] { sum(x, AX) }
pub fn d[B, T, C](x: &f64[B, T, C]) -> i64[B, C] { argmin(x, 1) }
pub fn e[B, T, C](x: &f64[B, T, C]) -> f64[B, T, C] { softmax(x, -1) + layernorm(x, 1e-5, 0) }
pub fn f[N](x: &f32[N]) -> f32 { sum(x, 0) }
pub fn g[N](x: &f32[N]) -> f32 { sum(x) }
pub fn h[N](x: &f32[N]) -> i64 { argmin(x, -1) }
pub fn i[M](x: &f32[M, 4]) -> f32[4] { mean(x, 0) }
"""
    )
    g = m.graph
    fns = {f.name: f for f in g.functions.values()}
    assert fns["b"].hash == fns["c"].hash  # -1 and the constant 1 are the same axis
    assert fns["f"].hash == fns["g"].hash  # along a vector's only axis: the whole form
    nodes = [n for n in g.nodes.values() if n.op == "sum"]
    assert {n.attr("axis") for n in nodes} == {0, 1, None}
    whole = next(n for n in nodes if n.attr("axis") is None)
    assert whole.attrs == ()  # no attribute: the encoding (and every old hash) is unchanged


@pytest.mark.parametrize(
    ("call", "code", "needle", "message"),
    [
        ("sum(x, k)", "K0316", "k", "must be an integer constant"),
        ("sum(x, 2)", "K0316", "2", "axis 2 is out of range"),
        ("sum(x, -3)", "K0316", "-3", "axis -3 is out of range"),
        ("sum(x, 1.0)", "K0316", "1.0", "must be an integer constant"),
        ("sum(x, 0, 1)", "K0303", "sum(x, 0, 1)", "takes 1 or 2 argument(s)"),
        ("dot(x, 1)", "K0308", "dot(x, 1)", "dot expects a tensor"),
        ("layernorm(x, 1.0, 5)", "K0316", "5", "out of range"),
    ],
)
def test_a_bad_axis_is_reported_at_the_axis(
    call: str, code: str, needle: str, message: str
) -> None:
    src = f"pub fn f[M, N](x: &f32[M, N], k: i64) -> f32[N] {{ {call} }}\n"
    diags = [d for d in analyze(src).diagnostics if d.is_error]
    assert diags, call
    d = diags[0]
    assert d.code == code and message in d.message, (call, d.code, d.message)
    assert src[d.span.start : d.span.end] == needle, (call, src[d.span.start : d.span.end])


def test_wasm_gives_the_interpreters_bits() -> None:
    try:
        get("wasm")
    except ImportError:
        tool_missing("the wasm target needs wasmtime")
    _native("wasm", CASES, LENGTHS)


# --- the interpreter: the definition and NumPy -----------------------------------------------

RANK1 = {
    "sum": R.total,
    "mean": R.mean,
    "max": R.reduce_max,
    "min": R.reduce_min,
    "argmax": R.argmax,
    "argmin": R.argmin,
    "softmax": R.softmax,
}
LENGTHS = (0, 1, 5, 1023, 1024, 1025, 2 * 1024 + 900)
CHECKED = {"max", "min", "argmax", "argmin", "softmax"}


def _rank1(op: str, v: np.ndarray, eps):
    if op == "layernorm":
        return R.layernorm(v, eps)
    return RANK1[op](v)


def _lines(x: np.ndarray, axis: int):
    """Every line along ``axis``: (index of the other axes, the line)."""
    other = [d for i, d in enumerate(x.shape) if i != axis]
    for idx in np.ndindex(*other):
        sl = list(idx)
        sl.insert(axis, slice(None))
        yield tuple(sl), x[tuple(sl)]


@pytest.mark.parametrize("elem", ["f32", "f64", "i32"])
@pytest.mark.parametrize("rank", [2, 3])
def test_every_line_has_the_bits_of_the_rank1_operation(elem: str, rank: int) -> None:
    m = module()
    for op, el, rk, axis in CASES:
        if el != elem or rk != rank:
            continue
        for n in LENGTHS:
            shape = shape_with(rank, axis, n)
            for adversarial in (False, True):
                x = data(elem, shape, n + axis, adversarial)
                name = fn_name(op, elem, rank, axis)
                empty_fails = n == 0 and (op in CHECKED or (op == "mean" and elem == "i32"))
                if empty_fails:
                    with pytest.raises(InterpError) as err:
                        reference(m, name, {"x": x})
                    assert err.value.code == "R0004"
                    continue
                got = reference(m, name, {"x": x}).outputs[0].value
                eps = x.dtype.type(0.001) if elem != "i32" else None
                for at, line in _lines(x, axis):
                    want = np.asarray(_rank1(op, line, eps))
                    if op in ("softmax", "layernorm"):
                        have = got[at]
                    else:
                        have = got[tuple(i for i in at if not isinstance(i, slice))]
                    assert _bits(np.asarray(have, dtype=want.dtype)) == _bits(want), (name, n, at)


def test_against_numpy_within_the_documented_bounds() -> None:
    """sum: |error| ≤ (64 + 4 + ⌈log2 m⌉)·u·Σ|v| per line (§7.6); mean one rounding more;
    max/min/argmax/argmin exact (NaN first, as NumPy); softmax and layernorm close to a
    float64/longdouble evaluation."""
    m = module()
    for elem, dt, u in (("f32", np.float32, 2.0**-24), ("f64", np.float64, 2.0**-53)):
        for rank in (2, 3):
            for axis in range(rank):
                for n in (1, 5, 1025, 3000):
                    x = data(elem, shape_with(rank, axis, n), n * 7 + axis, False)
                    ref = x.astype(np.longdouble)
                    exact = np.sum(ref, axis=axis)
                    absum = np.sum(np.abs(ref), axis=axis)
                    tiles = -(-n // 1024)
                    bound = (64 + 4 + math.ceil(math.log2(tiles)) + 1) * u * absum

                    def run(op: str, x=x, rank=rank, axis=axis, elem=elem):
                        return (
                            reference(m, fn_name(op, elem, rank, axis), {"x": x}).outputs[0].value
                        )

                    s = run("sum").astype(np.longdouble)
                    assert np.all(np.abs(s - exact) <= bound), (elem, rank, axis, n)
                    mu = run("mean").astype(np.longdouble)
                    assert np.all(np.abs(mu - exact / n) <= bound / n + 2 * u * np.abs(exact / n))
                    assert _bits(run("max")) == _bits(np.max(x, axis=axis))
                    assert _bits(run("min")) == _bits(np.min(x, axis=axis))
                    assert np.array_equal(run("argmax"), np.argmax(x, axis=axis))
                    assert np.array_equal(run("argmin"), np.argmin(x, axis=axis))
                    e = np.exp(ref - np.max(ref, axis=axis, keepdims=True))
                    sm = e / np.sum(e, axis=axis, keepdims=True)
                    tol = 64 * u
                    assert np.allclose(run("softmax"), sm, rtol=tol, atol=tol), (elem, n)
                    d = ref - np.mean(ref, axis=axis, keepdims=True)
                    ln = d / np.sqrt(np.mean(d * d, axis=axis, keepdims=True) + dt(0.001))
                    assert np.allclose(run("layernorm"), ln, rtol=256 * u, atol=256 * u)


def test_argmin_and_argmax_orders_with_nan_and_signed_zeros() -> None:
    m = module()
    nan, inf = np.nan, np.inf
    x = np.array(
        [
            [0.0, -0.0, 1.0, -0.0],
            [2.0, nan, -inf, nan],
            [-inf, -inf, inf, inf],
            [nan, nan, nan, nan],
        ],
        np.float32,
    )
    amax = reference(m, "argmax_f32_r2_a1", {"x": x}).outputs[0].value
    amin = reference(m, "argmin_f32_r2_a1", {"x": x}).outputs[0].value
    assert amax.tolist() == [2, 1, 2, 0]  # NaN is the largest; +0 beats -0
    assert amin.tolist() == [1, 1, 0, 0]  # NaN is the smallest (x[argmin] is min); -0 < +0
    mn = reference(m, "min_f32_r2_a1", {"x": x}).outputs[0].value
    assert mn[0] == 0 and np.signbit(mn[0]) and np.isnan(mn[1]) and mn[2] == -inf


# --- the loop program (both composite shapes) and the native targets ---------------------------


def _inputs(elem, rank, axis, n, adversarial, others=(3, 2)):
    return {"x": data(elem, shape_with(rank, axis, n, others), 31 * n + axis, adversarial)}


def test_the_loop_program_in_both_shapes_gives_the_interpreters_bits() -> None:
    m = module()
    progs = {}
    seen = set()
    for op, elem, rank, axis in CASES:
        name = fn_name(op, elem, rank, axis)
        for target in (CPU, GRID):
            progs[name, target] = lower_program(m.graph, name, target)
        lengths = (0, 1, 5, 17)
        if rank == 2 and elem == "f32" and axis == 1:
            lengths += (1025,)  # a partial second tile (the loop interpreter is slow)
        for n in lengths:
            for adversarial in (False, True):
                inputs = _inputs(elem, rank, axis, n, adversarial, (2, 2))
                want = outcome(lambda: reference(m, name, inputs))  # noqa: B023
                seen.add(want.split()[0] + op)
                for target in (CPU, GRID):
                    prog = progs[name, target]
                    got = outcome(lambda: run_function(m, name, inputs, program=prog))  # noqa: B023
                    assert got == want, (name, n, adversarial, target)
    assert "errorargmin" in seen and "okargmin" in seen


def _lines_loop_is_parallel(prog, name: str) -> bool:
    from kera_core.loops.ir import Loop

    return any(isinstance(s, Loop) and s.mark == "parallel" for s in prog.functions[name].body)


def test_the_lines_loop_is_parallel() -> None:
    m = module()
    for op in FLOAT_OPS:
        name = fn_name(op, "f32", 3, 1)
        assert _lines_loop_is_parallel(lower_program(m.graph, name, CPU), name), op


def _native(tname: str, cases, lengths, others=(3, 2)) -> None:
    t = runnable_target(tname)
    m = module()
    for op, elem, rank, axis in cases:
        name = fn_name(op, elem, rank, axis)
        assert not t.unsupported(m.graph, name), (tname, name, t.unsupported(m.graph, name))
        for n in lengths:
            for adversarial in (False, True):
                inputs = _inputs(elem, rank, axis, n, adversarial, others)
                run_it = lambda: run_module(t, m, name, inputs)  # noqa: B023, E731
                same_as_reference(m, name, inputs, run_it, tname, n, adversarial)


def test_x86_64_gives_the_interpreters_bits() -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    _native("x86_64", CASES, LENGTHS)


def test_arm64_gives_the_interpreters_bits() -> None:
    try:
        get("arm64")
    except ImportError as e:
        tool_missing(f"the arm64 target cannot load here: {e}")
    cases = [c for c in CASES if c[2] == 2 or c[3] == 1]
    _native("arm64", cases, (0, 1, 5, 1025))


def test_verilog_gives_the_interpreters_bits_on_small_cases() -> None:
    cases = [
        ("sum", "f32", 2, 0),
        ("argmin", "f32", 3, 1),
        ("softmax", "f32", 2, 1),
        ("max", "i32", 2, 1),
    ]
    _native("verilog", cases, (0, 3), others=(2, 2))


def test_ptx_assembles_with_ptxas() -> None:
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    m = module()
    texts = []
    for op, elem, rank, axis in CASES:
        name = fn_name(op, elem, rank, axis)
        if elem == "i32" and rank == 3 and axis != 1:
            continue  # enough integer kernels
        assert not P.unsupported(m.graph, name), name
        texts.append(P.compiled(m.graph, name).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)


FUSED = """
pub fn s[M, N](x: &f32[M, N], y: &f32[M, N]) -> f32[M] { sum(x * y + 1.0, 1) }
pub fn e[M, N](x: &f64[M, N]) -> f64[N] { max(exp(x), 0) + mean(x - 1.0, 0) }
pub fn a[M, N](x: &f32[M, N]) -> i64[N] { argmin(abs(x), 0) }
"""


def test_fused_operands_are_read_along_the_axis() -> None:
    """An elementwise operand fused into the reduction (no buffer) is read at the strided
    indices: the same bits on the loop program's shapes and on x86-64."""
    m = analyzed(FUSED)
    x86 = get("x86_64") if platform.machine() in ("x86_64", "AMD64") else None
    for name in ("s", "e", "a"):
        for shape in ((0, 3), (3, 0), (4, 1025), (5, 17)):
            elem = "f64" if name == "e" else "f32"
            inputs = {"x": data(elem, shape, 1, True), "y": data(elem, shape, 2, False)}
            if name != "s":
                del inputs["y"]
            want = outcome(lambda: reference(m, name, inputs))  # noqa: B023
            for target in (CPU, GRID):
                prog = lower_program(m.graph, name, target)
                got = outcome(lambda: run_function(m, name, inputs, program=prog))  # noqa: B023
                assert got == want, (name, shape, target)
            if x86 is not None:
                got = outcome(lambda: run_module(x86, m, name, inputs))  # noqa: B023
                assert got == want, (name, shape, "x86_64")
