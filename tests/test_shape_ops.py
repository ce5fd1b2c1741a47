"""Shape operations (issue 16 item 3; docs/semantics.md §7.7): `transpose`, `reshape`,
`broadcast_to`, `outer`, `concat`, `stack`, `where`, `clone`, `arange`, `linspace`.

* the type checker: result types, axes and permutations, shapes from the expected type,
  the compile-time element count of a static `reshape`, diagnostics with codes and spans;
* the interpreter against NumPy: the data-movement operations bit for bit, `outer`,
  `arange` and `linspace` against the formulas of §7.7 bit for bit (and close to NumPy's own);
* the loop program (CPU and GRID shapes), x86-64, arm64 under unicorn and verilog under
  iverilog (small cases) give the interpreter's bits or its checked error (R0003 for a
  symbolic `reshape`/`concat` whose sizes do not fit); the ptx text assembles with ptxas;
  wasm gives them too.

Sizes 0, 1, odd, 1023/1024/1025 and a larger one; f32, f64 and i32; adversarial floats
(NaN, ±0, ±inf).
"""

from __future__ import annotations

import platform

import numpy as np
import pytest

from kera_core.analysis import analyze
from kera_core.interp import InterpError
from kera_core.interp.api import run_function as reference
from kera_core.loops import lower_program, run_function
from kera_core.loops.target import CPU, GRID
from kera_core.targets import get, run_module
from tests.outcomes import analyzed, outcome, runnable_target, same_as_reference
from tests.tools import tool_missing

ELEMS = ("f32", "f64", "i32")
DT = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "bool": np.bool_}

# name -> (source with E for the element type, floats only?)
FNS = {
    "tr": ("[M, N](x: &E[M, N]) -> E[N, M] { transpose(x) }", False),
    "tr3": ("[A, B, C](x: &E[A, B, C]) -> E[C, A, B] { transpose(x, 2, 0, -2) }", False),
    "rs": ("[M, N, K](x: &E[M, N], like: &E[K]) -> E[K] { reshape(x) }", False),
    "rsT": ("[M, N](x: &E[M, N]) -> E[N, M] { reshape(x) }", False),
    "ou": ("[M, N](u: &E[M], v: &E[N]) -> E[M, N] { outer(u, v) }", False),
    "ct0": (
        "[M, N, K, C](a: &E[M, C], b: &E[N, C], like: &E[K]) -> E[K, C] { concat(a, b, 0) }",
        False,
    ),
    "ct1": ("[M](a: &E[M, 3], b: &E[M, 2], c: &E[M, 1]) -> E[M, 6] { concat(a, b, c, -1) }", False),
    "st": (
        "[M, N](a: &E[M, N], b: &E[M, N], c: &E[M, N]) -> E[M, 3, N] { stack(a, b, c, 1) }",
        False,
    ),
    "bt": ("[M, N](x: &E[N], like: &E[M]) -> E[M, N] { broadcast_to(x) }", False),
    "bc": ("[M, N](x: &E[M, 1], like: &E[N]) -> E[M, N] { broadcast_to(x) }", False),
    "wh": ("[M, N](c: &bool[M, N], a: &E[M, N], b: &E[N]) -> E[M, N] { where(c, a, b) }", False),
    "cl": ("[M, N](x: &E[M, N]) -> E[M, N] { clone(x) }", False),
    "ar": ("[N](like: &E[N]) -> E[N] { arange() }", False),
    "ars": ("[N](s: E, d: E, like: &E[N]) -> E[N] { arange(s, d) }", False),
    "ls": ("[N](lo: E, hi: E, like: &E[N]) -> E[N] { linspace(lo, hi) }", True),
}


def _cases():
    for elem in ELEMS:
        for name, (_, floats) in FNS.items():
            if floats and elem == "i32":
                continue
            yield name, elem


CASES = list(_cases())


def fn_name(name: str, elem: str) -> str:
    return f"{name}_{elem}"


def _source() -> str:
    lines = []
    for name, elem in CASES:
        sig = FNS[name][0].replace("E[", f"{elem}[").replace(": E", f": {elem}")
        lines.append(f"pub fn {fn_name(name, elem)}{sig}")
    return "\n".join(lines) + "\n"


_MODULE: list = []


def module():
    if not _MODULE:
        _MODULE.append(analyzed(_source()))
    return _MODULE[0]


def data(elem: str, shape, seed: int, adversarial: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape, dtype=np.int64))
    if elem == "bool":
        return rng.integers(0, 2, size).astype(bool).reshape(shape)
    if elem == "i32":
        return rng.integers(-(2**31), 2**31, size, dtype=np.int64).astype(np.int32).reshape(shape)
    x = rng.standard_normal(size) * np.exp2(rng.integers(-8, 8, size))
    if adversarial and size:
        specials = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf])
        k = max(1, size // 7)
        at = rng.choice(size, k, replace=False)
        x[at] = rng.choice(specials, k)
    return x.astype(DT[elem]).reshape(shape)


def scalar(elem: str, v):
    return DT[elem](v)


def inputs(name: str, elem: str, n: int, seed: int = 0, mismatch: bool = False) -> dict:
    """Arguments of ``name`` at size ``n`` (``mismatch``: sizes the checks refuse)."""
    d = lambda shape, k=0: data(elem, shape, seed * 101 + k + n)  # noqa: E731
    if name == "tr":
        return {"x": d((n, 3))}
    if name == "tr3":
        return {"x": d((2, n, 3))}
    if name == "rs":
        return {"x": d((n, 3)), "like": d((3 * n + (1 if mismatch else 0),), 1)}
    if name == "rsT":
        return {"x": d((3, n))}
    if name == "ou":
        return {"u": d((n,)), "v": d((3,), 1)}
    if name == "ct0":
        return {"a": d((n, 2)), "b": d((3, 2), 1), "like": d((n + 3 + (2 if mismatch else 0),), 2)}
    if name == "ct1":
        return {"a": d((n, 3)), "b": d((n, 2), 1), "c": d((n, 1), 2)}
    if name == "st":
        return {"a": d((2, n)), "b": d((2, n), 1), "c": d((2, n), 2)}
    if name == "bt":
        return {"x": d((n,)), "like": d((3,), 1)}
    if name == "bc":
        return {"x": d((n, 1)), "like": d((3,), 1)}
    if name == "wh":
        return {"c": data("bool", (3, n), seed + n), "a": d((3, n)), "b": d((n,), 1)}
    if name == "cl":
        return {"x": d((n, 2))}
    if name == "ar":
        return {"like": d((n,))}
    if name == "ars":
        s, step = (7, -3) if elem == "i32" else (0.1, 0.3)
        return {"s": scalar(elem, s), "d": scalar(elem, step), "like": d((n,))}
    assert name == "ls"
    return {"lo": scalar(elem, -1.5), "hi": scalar(elem, 2.25), "like": d((n,))}


def _bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _canon(a: np.ndarray) -> np.ndarray:
    a = np.array(a)
    if a.dtype.kind == "f":
        a[np.isnan(a)] = np.nan  # numpy's nan is the canonical one (positive, quiet)
    return a


# --- the type checker ------------------------------------------------------------------------


def test_types_and_one_graph_for_one_meaning() -> None:
    m = analyzed(
        """
pub fn a[M, N](x: &f32[M, N]) -> f32[N, M] { transpose(x) }
pub fn b[M, N](x: &f32[M, N]) -> f32[N, M] { transpose(x, 1, 0) }
pub fn c[M, N](x: &f32[M, N]) -> f32[N, M] { transpose(x, -1, -2) }
pub fn d(x: &f32[2, 6]) -> f32[3, 4] { reshape(x) }
pub fn e[N](x: &f32[N], y: &f32[N]) -> f32[N] { where(x > y, x, 0.0) }
pub fn f[N](x: &f32[N]) -> f32[N] { let y: f32[N] = clone(x); y }
pub fn g[N](x: &f32[N]) -> f64[N, 2] { let y: f64[N] = linspace(0.0, 1.0); stack(y, y, -1) }
pub fn h(x: &f32[4]) -> f32[3, 4] { let y: f32[3, 4] = broadcast_to(x); y }
pub fn i(x: &i32[2, 3], y: &i32[2, 5]) -> i32[2, 8] { concat(x, y, 1) }
"""
    )
    fns = {f.name: f for f in m.graph.functions.values()}
    assert fns["a"].hash == fns["b"].hash == fns["c"].hash
    perms = {n.attr("perm") for n in m.graph.nodes.values() if n.op == "transpose"}
    assert perms == {(1, 0)}
    # a reshape whose counts are known to agree needs no run-time check (and moves nothing)
    from kera_core.loops.ir import Check

    body = lower_program(m.graph, "d", CPU).functions["d"].body
    assert not [s for s in body if isinstance(s, Check)]


@pytest.mark.parametrize(
    ("body", "code", "needle", "message"),
    [
        ("reshape(x)", "K0302", "reshape(x)", "cannot reshape"),
        ("transpose(x, 0, 0)", "K0316", "0, 0", "a permutation"),
        ("transpose(x, 0)", "K0316", "0", "needs 2 axes"),
        ("transpose(x, k, 0)", "K0316", "k", "must be an integer constant"),
        ("concat(x, x, 2)", "K0316", "2", "axis 2 is out of range"),
        ("stack(x, x, 3)", "K0316", "3", "axis 3 is out of range"),
        ("concat(x, y, 0)", "K0302", "concat(x, y, 0)", "differ on axis 1"),
        ("stack(x, y, 0)", "K0302", "stack(x, y, 0)", "stack operands differ"),
        ("stack(x, 1.0, 0)", "K0308", "1.0", "expects tensors"),
        ("concat(x)", "K0303", "concat(x)", "takes 2 or more"),
        ("broadcast_to(y)", "K0305", "broadcast_to(y)", "cannot broadcast"),
        ("where(x, x, x)", "K0308", "where(x, x, x)", "bool condition"),
        ("where(x > 0.0, x, 1i32)", "K0301", "where(x > 0.0, x, 1i32)", "element types"),
        ("outer(x, x)", "K0302", "outer(x, x)", "two vectors"),
        ("arange(1.0)", "K0303", "arange(1.0)", "takes 0 or 2"),
        ("clone(1.0)", "K0308", "clone(1.0)", "expects a tensor"),
    ],
)
def test_misuse_is_reported_with_a_code_and_a_span(
    body: str, code: str, needle: str, message: str
) -> None:
    src = (
        f"pub fn f(x: &f32[2, 3], y: &f32[2, 4], k: i64) -> f32[5, 2] {{ let r: f32[5, 2] = "
        f"{body}; r }}\n"
    )
    diags = [d for d in analyze(src).diagnostics if d.is_error]
    assert diags, body
    d = diags[0]
    assert d.code == code and message in d.message, (body, d.code, d.message)
    assert src[d.span.start : d.span.end] == needle, (body, src[d.span.start : d.span.end])


def test_a_shape_from_the_expected_type_needs_one() -> None:
    src = "pub fn f(x: &f32[2, 3]) -> f32 { let y = reshape(x); sum(y) }\n"
    (d,) = [d for d in analyze(src).diagnostics if d.is_error]
    assert d.code == "K0301" and "annotate it" in d.message
    assert src[d.span.start : d.span.end] == "reshape(x)"


def test_wasm_gives_the_interpreters_bits() -> None:
    try:
        get("wasm")
    except ImportError:
        tool_missing("the wasm target needs wasmtime")
    _native("wasm", CASES, [(n, False) for n in SIZES] + [(4, True)])


# --- the interpreter against NumPy -----------------------------------------------------------

SIZES = (0, 1, 5, 1023, 1024, 1025, 3000)


def _numpy(name: str, elem: str, a: dict) -> np.ndarray:
    dt = DT[elem]
    with np.errstate(all="ignore"):
        if name == "tr":
            return np.transpose(a["x"])
        if name == "tr3":
            return np.transpose(a["x"], (2, 0, 1))
        if name == "rs":
            return a["x"].reshape(-1)
        if name == "rsT":
            return a["x"].reshape(a["x"].shape[::-1])
        if name == "ou":
            return np.multiply.outer(a["u"], a["v"])  # one rounding (or wrap) per product
        if name == "ct0":
            return np.concatenate([a["a"], a["b"]], axis=0)
        if name == "ct1":
            return np.concatenate([a["a"], a["b"], a["c"]], axis=-1)
        if name == "st":
            return np.stack([a["a"], a["b"], a["c"]], axis=1)
        if name in ("bt", "bc"):
            return np.broadcast_to(
                a["x"], (3, a["x"].shape[0]) if name == "bt" else (len(a["x"]), 3)
            )
        if name == "wh":
            return np.where(a["c"], a["a"], a["b"])
        if name == "cl":
            return a["x"].copy()
        n = len(a["like"])
        i = np.arange(n).astype(dt)  # exact: n < 2^24
        if name == "ar":
            return i
        if name == "ars":
            return a["s"] + i * a["d"]  # §7.7: product rounded, then the sum
        step = (a["hi"] - a["lo"]) / dt(max(n - 1, 1))
        r = a["lo"] + i * step
        if n >= 2:
            r[-1] = a["hi"]
        return r


@pytest.mark.parametrize("elem", ELEMS)
def test_against_numpy_bit_for_bit(elem: str) -> None:
    m = module()
    for name, el in CASES:
        if el != elem:
            continue
        for n in SIZES:
            a = inputs(name, elem, n)
            got = reference(m, fn_name(name, elem), a).outputs[0].value
            want = _canon(_numpy(name, elem, a))
            assert got.shape == want.shape and got.dtype == want.dtype, (name, n)
            assert _bits(got) == _bits(want), (name, elem, n)


def test_linspace_and_arange_against_numpys_own() -> None:
    """`linspace` is NumPy's for ordinary ends (its step·i + lo form, the last point hi);
    `arange(s, d)` is close to NumPy's (which computes its step differently)."""
    m = module()
    for n in (0, 1, 2, 5, 1025):
        for lo, hi in ((-1.5, 2.25), (0.0, 1.0), (3.0, -7.0)):
            like = np.zeros(n)
            got = reference(m, "ls_f64", {"lo": lo, "hi": hi, "like": like}).outputs[0].value
            assert _bits(got) == _bits(np.linspace(lo, hi, n)), (n, lo, hi)
            f = np.float32
            got = (
                reference(m, "ls_f32", {"lo": f(lo), "hi": f(hi), "like": like.astype(f)})
                .outputs[0]
                .value
            )
            assert np.allclose(got, np.linspace(lo, hi, n), rtol=1e-6, atol=1e-6)
            if n >= 2:
                assert got[0] == f(lo) and got[-1] == f(hi)
        got = reference(m, "ars_f64", {"s": 0.1, "d": 0.3, "like": np.zeros(n)}).outputs[0].value
        assert np.allclose(got, np.arange(n) * 0.3 + 0.1, rtol=1e-15)
        got = reference(m, "ar_i32", {"like": np.zeros(n, np.int32)}).outputs[0].value
        assert np.array_equal(got, np.arange(n, dtype=np.int32))


def test_a_symbolic_reshape_or_concat_that_does_not_fit_is_r0003() -> None:
    m = module()
    for name in ("rs", "ct0"):
        with pytest.raises(InterpError) as err:
            reference(m, fn_name(name, "f32"), inputs(name, "f32", 4, mismatch=True))
        assert err.value.code == "R0003"


def test_where_passes_bits_through_and_clone_is_a_copy() -> None:
    m = analyzed(
        "pub fn w[N](c: &bool[N], a: &f32[N]) -> f32[N] { where(c, a, -a) }\n"
        "pub fn k[N](x: &f32[N]) -> f32[N] { let mut y = clone(x); y[0] = 1.0; y + x }\n"
    )
    a = np.array([-0.0, np.inf, np.nan, 1.0], np.float32)
    c = np.array([True, False, True, False])
    got = reference(m, "w", {"c": c, "a": a}).outputs[0].value
    assert _bits(got) == _bits(np.array([-0.0, -np.inf, np.nan, -1.0], np.float32))
    x = np.float32([2.0, 3.0])
    assert reference(m, "k", {"x": x}).outputs[0].value.tolist() == [3.0, 6.0]


# --- the loop program and the native targets ---------------------------------------------------


def test_the_loop_program_in_both_shapes_gives_the_interpreters_bits() -> None:
    m = module()
    for name, elem in CASES:
        fn = fn_name(name, elem)
        progs = {t: lower_program(m.graph, fn, t) for t in (CPU, GRID)}
        sizes = [(0, False), (1, False), (5, False), (17, False), (4, True)]
        if elem == "f32":
            sizes.append((1025, False))
        for n, mismatch in sizes:
            a = inputs(name, elem, n, mismatch=mismatch)
            want = outcome(lambda: reference(m, fn, a))  # noqa: B023
            if mismatch and name in ("rs", "ct0"):
                assert want == "error R0003"
            for t, prog in progs.items():
                got = outcome(lambda: run_function(m, fn, a, program=prog))  # noqa: B023
                assert got == want, (fn, n, t)


def test_data_movement_loops_are_marked_independent() -> None:
    from kera_core.loops.ir import Loop

    m = module()
    for name in ("tr", "tr3", "ou", "ct1", "st", "bt", "ar", "ls"):
        fn = fn_name(name, "f32")
        body = lower_program(m.graph, fn, CPU).functions[fn].body
        loops = [s for s in body if isinstance(s, Loop)]
        assert loops and all(lp.mark in ("lanes", "parallel") for lp in loops), name


def _native(tname: str, cases, sizes) -> None:
    t = runnable_target(tname)
    m = module()
    for name, elem in cases:
        fn = fn_name(name, elem)
        assert not t.unsupported(m.graph, fn), (tname, fn, t.unsupported(m.graph, fn))
        for n, mismatch in sizes:
            if mismatch and name not in ("rs", "ct0"):
                continue
            a = inputs(name, elem, n, seed=1, mismatch=mismatch)
            same_as_reference(m, fn, a, lambda: run_module(t, m, fn, a), tname, n, mismatch)  # noqa: B023


def test_x86_64_gives_the_interpreters_bits() -> None:
    if platform.machine() not in ("x86_64", "AMD64"):
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    _native("x86_64", CASES, [(n, False) for n in SIZES] + [(4, True)])


def test_arm64_gives_the_interpreters_bits() -> None:
    try:
        get("arm64")
    except ImportError as e:
        tool_missing(f"the arm64 target cannot load here: {e}")
    _native("arm64", CASES, [(0, False), (1, False), (5, False), (1025, False), (4, True)])


def test_verilog_gives_the_interpreters_bits_on_small_cases() -> None:
    cases = [("tr", "f32"), ("ct0", "i32"), ("wh", "f32"), ("ou", "i32"), ("ls", "f32")]
    _native("verilog", cases, [(0, False), (3, False), (2, True)])


def test_ptx_assembles_with_ptxas() -> None:
    from kera_core.backends.ptx import compile as P

    if P.find_ptxas() is None:
        tool_missing("ptxas not found (pip install nvidia-cuda-nvcc-cu12)")
    m = module()
    texts = []
    for name, elem in CASES:
        fn = fn_name(name, elem)
        assert not P.unsupported(m.graph, fn), fn
        texts.append(P.compiled(m.graph, fn).selected.text)
    for arch in ("sm_80", "sm_90"):
        P.ptxas(P.batch(texts), arch)
