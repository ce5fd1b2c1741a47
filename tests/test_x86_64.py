"""The x86_64 target: native code, bit for bit (raw bytes, through the digest) against the
interpreter, and the same checked errors, at each instruction-set level this CPU runs.

Every example function; generated expression-style and imperative programs (plain and
optimized) with adversarial inputs; every scalar primitive on every type at the edges;
reductions at tile and lane boundaries; hostile runs (a runaway loop, an out-of-bounds
index, integer division by zero, `i32::MIN / -1`, a 10^8-element request) end in the
interpreter's error code, or R0009 past the memory limit, with the process alive.
``KERA_FUZZ_EXAMPLES=2000`` fuzzes longer.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kera_core.analysis import analyze
from kera_core.backends.x86_64 import compile as X
from kera_core.backends.x86_64.runtime import Loaded, run
from kera_core.interp import InterpError
from kera_core.interp.api import entry_signature
from kera_core.interp.api import run_function as reference
from kera_core.interp.gen import InputGenerator
from kera_core.opt import optimize
from kera_core.targets import get
from tests import imperative_programs, programs
from tests.outcomes import example_program, examples, x86_levels
from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = examples()  # the files and the package directories
FUZZ = int(os.environ.get("KERA_FUZZ_EXAMPLES", "25"))
STEPS = 20_000


def levels() -> list[str]:
    # a level this CPU lacks is not generated: that is the hardware, not a missing tool
    return x86_levels() or ["none"]


LEVELS = levels()
VECTOR_LEVELS = [n for n in LEVELS if n in ("avx2", "avx512")]
REGISTER = {"avx2": "ymm", "avx512": "zmm"}


def _vector_level(level: str) -> None:
    if level == "none":
        tool_missing("no AVX2+FMA on this CPU: the vector path is not selected")


def _isa(level: str):
    if level == "none":
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    return X.isa_for(level)


def outcome(run_it) -> str:
    try:
        return "ok " + run_it().digest()
    except InterpError as e:
        return "error " + e.code


def check(
    module, graph, name: str, level: str, sizes=(0, 1, 3, 17), seeds=(1,), shapes=None
) -> set[str]:
    """Raw result bytes (or the error) equal to the interpreter's; every dimension = each of
    `sizes`, or each tuple in `shapes` gives the dimensions in order."""
    data, _ = X.build(graph, name, _isa(level))
    _, codes = X.read(data, graph)
    loaded = Loaded(codes)
    src = module if graph is module.graph else graph
    sig = entry_signature(src, name)
    seen = set()
    try:
        cases = [(sum(d), d) for d in shapes] if shapes else []
        for size, shape in cases or [(n, (n,) * len(sig.dim_names)) for n in sizes]:
            for seed in seeds:
                for adversarial in (False, True):
                    dims = dict(enumerate(shape))
                    gen = InputGenerator(seed + size, adversarial=adversarial)
                    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
                    named = {sig.dim_names[i]: n for i, n in dims.items()}
                    want = outcome(lambda: reference(src, name, inputs, named, max_steps=STEPS))  # noqa: B023
                    got = outcome(
                        lambda: run(loaded, src, name, inputs, named, max_steps=STEPS)  # noqa: B023
                    )
                    assert got == want, (name, level, size, seed, adversarial)
                    seen.add(want)
    finally:
        loaded.close()
    return seen


def runnable(graph, name: str) -> bool:
    return not X.unsupported(graph, name)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_function(path: Path, level: str) -> None:
    m = example_program(path)
    for f in m.graph.exported():
        assert runnable(m.graph, f.name), X.unsupported(m.graph, f.name)
        check(m, m.graph, f.name, level)


def _module(src: str):
    a = analyze(src)
    assert not a.has_errors, [str(d) for d in a.diagnostics if d.is_error]
    return a.module


def check_source(src: str, level: str, seed: int, size: int) -> None:
    m = _module(src)
    g = optimize(m.graph).graph
    for f in m.graph.exported():
        check(m, m.graph, f.name, level, sizes=(size,), seeds=(seed,))
        if f.name in g.functions:
            check(m, g, f.name, level, sizes=(size,), seeds=(seed,))


_SETTINGS = settings(
    max_examples=FUZZ,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.mark.parametrize("level", LEVELS)
@_SETTINGS
@given(prog=programs.program(), seed=st.integers(0, 2**32 - 1), size=st.sampled_from([0, 1, 3, 17]))
def test_generated_programs(level: str, prog, seed: int, size: int) -> None:
    check_source(programs.render(prog), level, seed, size)


@pytest.mark.parametrize("level", LEVELS)
@_SETTINGS
@given(
    prog=imperative_programs.imperative_program(),
    seed=st.integers(0, 2**32 - 1),
    size=st.sampled_from([0, 1, 2, 5, 17]),
)
def test_generated_imperative_programs(level: str, prog, seed: int, size: int) -> None:
    check_source(imperative_programs.render(prog), level, seed, size)


INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


def scalar_ops_source() -> str:
    fns = []
    for t in INTS:
        fns.append(
            f"pub fn ops_{t}(a: {t}, b: {t}) -> {t} {{ let d = if b == 0 {{ 1 as {t} }} else {{ b }}; "
            f"(a + b) ^ (a - b) ^ (a * b) ^ (a / d) ^ (a % d) ^ (a & b) ^ (a | b) ^ (a << b) "
            f"^ (a >> b) ^ !a ^ minimum(a, b) ^ maximum(a, b) }}"
        )
        for to in [*INTS, "f32", "f64"]:
            fns.append(f"pub fn cast_{t}_{to}(a: {t}) -> {to} {{ a as {to} }}")
    for t in ("f32", "f64"):
        fns.append(
            f"pub fn ops_{t}(a: {t}, b: {t}, c: {t}) -> {t}[12] {{ [a + b, a - b, a * b, a / b, a % b, "
            f"sqrt(a), fma(a, b, c), minimum(a, b), maximum(a, b), -a, abs(a), exp(a)] }}"
        )
        fns.append(
            f"pub fn cmp_{t}(a: {t}, b: {t}) -> bool[6] {{ [a == b, a != b, a < b, a <= b, a > b, a >= b] }}"
        )
        for to in [*INTS, "f32", "f64"]:
            fns.append(f"pub fn cast_{t}_{to}(a: {t}) -> {to} {{ a as {to} }}")
    return "\n".join(fns) + "\n"


@pytest.mark.parametrize("level", LEVELS)
def test_every_scalar_primitive_at_the_edges(level: str) -> None:
    m = _module(scalar_ops_source())
    for f in m.graph.exported():
        check(m, m.graph, f.name, level, sizes=(0,), seeds=tuple(range(12)))


REDUCTIONS = """
pub fn s32[N](x: &f32[N]) -> f32 { sum(x) }
pub fn d64[N](x: &f64[N], y: &f64[N]) -> f64 { dot(x, y) }
pub fn am[N](x: &f32[N]) -> i64 { argmax(x) }
pub fn mx[N](x: &f64[N]) -> f64 { max(x) + min(x) }
"""


@pytest.mark.parametrize("level", LEVELS)
def test_reductions_at_tile_and_lane_boundaries(level: str) -> None:
    m = _module(REDUCTIONS)
    for f in m.graph.exported():
        check(m, m.graph, f.name, level, sizes=(0, 1, 15, 16, 17, 1023, 1024, 1025, 3073))


HOSTILE = """
pub fn spin(n: i64) -> i64 { let mut i = 0; while i >= 0 { i = i + n * 0; } i }
pub fn oob[N](x: &f32[N], i: i64) -> f32 { x[i] }
pub fn divz(a: i32, b: i32) -> i32 { a / b }
pub fn big[N](x: &f32[N]) -> f32 { let z: f32[N] = zeros(); sum(z + x) }
"""


@pytest.mark.parametrize("level", LEVELS)
def test_hostile_runs_end_in_the_interpreters_error(level: str) -> None:
    m = _module(HOSTILE)
    g = m.graph

    def native(name, inputs, dims=None, **kw):
        data, _ = X.build(g, name, _isa(level))
        loaded = Loaded(X.read(data, g)[1])
        try:
            return outcome(lambda: run(loaded, m, name, inputs, dims, **kw))
        finally:
            loaded.close()

    assert native("spin", {"n": 3}, max_steps=10_000) == "error R0007"
    x = np.arange(4, dtype=np.float32)
    for i in (-1, 4, 1 << 40, -(1 << 63)):
        assert native("oob", {"x": x, "i": i}) == "error R0001"
    assert native("oob", {"x": x, "i": 3}) == outcome(lambda: reference(m, "oob", {"x": x, "i": 3}))
    assert native("divz", {"a": 7, "b": 0}) == "error R0002"
    imin = np.int32(-(2**31))
    assert native("divz", {"a": imin, "b": -1}) == outcome(
        lambda: reference(m, "divz", {"a": imin, "b": -1})
    )
    # 10^8 elements past a 64 MiB limit: refused, the process carries on
    huge = np.zeros(10**8, dtype=np.float32)
    assert native("big", {"x": huge}, memory_limit=64 << 20) == "error R0009"
    assert native("big", {"x": x}) == outcome(lambda: reference(m, "big", {"x": x}))


def test_the_artifact_carries_the_fingerprint_and_refuses_another_graph() -> None:
    if LEVELS == ["none"]:
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    m = _module("pub fn f[N](x: &f32[N]) -> f32 { sum(x) }")
    other = _module("pub fn f[N](x: &f32[N]) -> f32 { max(x) }")
    t = get("x86_64")
    art = t.lower(m.graph, m.provenance, "f")
    assert X.fingerprint_of(art.data) == m.graph.fingerprint()
    # the assembly listing: one block per function, the source node named per block
    assert "f:" in art.text and "ret" in art.text and "`sum`" in art.text
    with pytest.raises(X.ArtifactError):
        t.run(art, other.graph, "f", {"x": np.ones(3, np.float32)})
    with pytest.raises(X.ArtifactError):
        X.read(b"not an artifact" * 4)
    r = t.run(art, m.graph, "f", {"x": np.ones(3, np.float32)}, provenance=m.provenance)
    assert r.digest() == reference(m, "f", {"x": np.ones(3, np.float32)}).digest()


VECTOR_OPS = """
pub fn v32[N](a: f32, x: &f32[N], y: &f32[N], z: &f32[N]) -> f32[N] {
    let m = maximum(x, y) - minimum(y, z);
    let s = if a > 0.0 { fma(x, y, z) } else { -x };
    m * s + sqrt(abs(z)) / (x - a)
}
pub fn v64[N](a: f64, x: &f64[N], y: &f64[N], z: &f64[N]) -> f64[N] {
    let m = maximum(x, y) - minimum(y, z);
    m * fma(x, y, z) + sqrt(abs(z)) / (x - a) - -y
}
pub fn c32[N](x: &f32[N], y: &f32[N]) -> f32[N] {
    select_all(x, y)
}
fn select_all[N](x: &f32[N], y: &f32[N]) -> f32[N] {
    let mut out: f32[N] = zeros();
    for i in 0..N { out[i] = if x[i] < y[i] { x[i] } else { y[i] * 2.0 }; }
    out
}
"""


@pytest.mark.parametrize("level", VECTOR_LEVELS or ["none"])
def test_lanes_loops_are_vector_loops_bit_for_bit(level: str) -> None:
    _vector_level(level)
    m = _module(VECTOR_OPS)
    _, comp = X.build(m.graph, "v32", X.isa_for(level))
    reg = REGISTER[level]
    assert any(reg in ln for ln in comp.listings["v32"]), "no vector instructions selected"
    for name in ("v32", "v64", "c32"):
        check(
            m,
            m.graph,
            name,
            level,
            sizes=tuple(range(0, 20)) + (31, 32, 33, 63, 64, 65, 1000),
            seeds=(1, 2),
        )


def test_a_second_build_of_the_same_function_compiles_nothing(monkeypatch) -> None:
    if LEVELS == ["none"]:
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    src = "pub fn f[N](x: &f32[N]) -> f32 { sum(x * 3.0) }\npub fn g(a: i64) -> i64 { a + 1 }\n"
    first = X.read(X.build(_module(src).graph, "f", X.isa_for("sse2"))[0])[1]
    calls = []
    real = X.compile_program
    monkeypatch.setattr(X, "compile_program", lambda *a: calls.append(a) or real(*a))
    # a fresh analysis of an edited file: `f` is unchanged, so its code comes from the cache
    edited = _module(src.replace("a + 1", "a + 2"))
    again = X.build(edited.graph, "f", X.isa_for("sse2"))[0]
    assert X.read(again)[1] == first and calls == []  # same code; the new graph's fingerprint
    X.build(edited.graph, "g", X.isa_for("sse2"))
    assert len(calls) == 1


def test_functions_with_one_body_keep_their_own_names() -> None:
    if LEVELS == ["none"]:
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    m = _module("pub fn f0(a: i64) -> i64 { a }\npub fn f1(a: i64) -> i64 { a }\n")
    assert m.graph.functions["f0"].hash == m.graph.functions["f1"].hash
    for name in ("f0", "f1", "f0"):
        check(m, m.graph, name, LEVELS[0], sizes=(0,))


JAMMED = """
pub fn mm32[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }
pub fn mm64[M, K, N](a: &f64[M, K], b: &f64[K, N]) -> f64[M, N] { matmul(a, b) }
pub fn cv[N, K](x: &f32[N], k: &f32[K]) -> f32[N] { conv1d(x, k) }
pub fn s64[N](x: &f64[N]) -> f64 { sum(x * x) }
pub fn sm[N](x: &f32[N]) -> f32[N] { softmax(x) }
"""


@pytest.mark.parametrize("level", VECTOR_LEVELS or ["none"])
def test_jammed_vector_loops_with_inner_chains_bit_for_bit(level: str) -> None:
    """Matmul's columns, conv1d's outputs and the canonical sum's lanes run as jammed vector
    loops whose accumulators stay in registers across the inner loop: every size around
    the vector width and the jam (W, 2W, 4W ± 1, for ymm and zmm) gives the interpreter's
    bits."""
    _vector_level(level)
    m = _module(JAMMED)
    for name in ("mm32", "s64"):
        _, comp = X.build(m.graph, name, X.isa_for(level))
        assert any(REGISTER[level] in ln for ln in comp.listings[name]), name
    sizes = (0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 63, 64, 65)
    for name in ("mm32", "mm64", "cv"):
        check(m, m.graph, name, level, sizes=sizes)
    for name in ("s64", "sm"):
        check(m, m.graph, name, level, sizes=(0, 1, 15, 16, 17, 1023, 1024, 1025, 2049))
    # matmul's column panels (64 wide) and row blocks (4): widths around one and two panels
    panels = [(m_, 3, n) for n in (63, 64, 65, 127, 128, 129) for m_ in (4, 6)]
    for name in ("mm32", "mm64"):
        check(m, m.graph, name, level, shapes=panels)
    if level == VECTOR_LEVELS[0]:
        check(m, m.graph, "mm32", "sse2", shapes=panels[:4])


def test_the_assembly_names_the_source_function_and_node_of_each_block() -> None:
    if LEVELS == ["none"]:
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    src = """
pub fn f[N](x: &f32[N], t: f32) -> f32 {
    let mut s: f32 = 0.0;
    for i in 0..N { if x[i] > t { s = s + x[i]; } }
    s + sum(x)
}
"""
    m = _module(src)
    text = get("x86_64").lower(m.graph, m.provenance, "f").text
    notes = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("; f · node")]
    hashes = {h.hex() for h in m.graph.nodes}
    ops = set()
    for note in notes:
        h, op = note.split("node ")[1].split(" ", 1)
        assert any(x.startswith(h) for x in hashes), note
        ops.add(op.strip("`"))
    assert {"for", "sum"} <= ops or {"loop", "sum"} <= ops, ops


@pytest.mark.parametrize("level", VECTOR_LEVELS or ["none"])
def test_vector_loops_under_float_pressure_allocate_and_agree(level: str) -> None:
    """More loop invariants broadcast than there are vector registers: compares, blends and
    min/max whose operands and result are all spilled (64-byte slots for zmm) still allocate
    (a result may share the scratch register of an operand read by the same instruction)
    and agree."""
    _vector_level(level)
    params = ", ".join(f"a{i}: f64" for i in range(18))
    terms = " + ".join(f"minimum(x, a{i}) - maximum(x, a{17 - i})" for i in range(18))
    src = f"pub fn p[N](x: &f64[N], {params}) -> f64[N] {{ {terms} }}\n"
    src += (
        "pub fn q[N](x: &f64[N], a: f64) -> f64[N] { let t = minimum(x, a); x * 1.0 + sum(&t) }\n"
    )
    m = _module(src)
    for name in ("p", "q"):
        check(m, m.graph, name, level, sizes=(0, 1, 4, 5, 9, 17, 33), seeds=(1, 2))


BOUNDARIES = (0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129)
BOUNDARIES += (1023, 1024, 1025, 2047, 2048, 2049, 3073)
EDGES = """
pub fn ew32[N](x: &f32[N], y: &f32[N]) -> f32[N] {
    maximum(x, y) * fma(x, y, x) - minimum(-x, abs(y)) / sqrt(abs(x))
}
pub fn ew64[N](x: &f64[N], y: &f64[N]) -> f64[N] {
    maximum(x, y) * fma(x, y, x) - minimum(-x, abs(y)) / sqrt(abs(x))
}
pub fn mx32[N](x: &f32[N], y: &f32[N]) -> f32[N] { maximum(x, y) }
pub fn mn32[N](x: &f32[N], y: &f32[N]) -> f32[N] { minimum(x, y) }
pub fn mx64[N](x: &f64[N], y: &f64[N]) -> f64[N] { maximum(x, y) }
pub fn mn64[N](x: &f64[N], y: &f64[N]) -> f64[N] { minimum(x, y) }
pub fn ng64[N](x: &f64[N]) -> f64[N] { -abs(x) }
pub fn s32[N](x: &f32[N]) -> f32 { sum(x) }
pub fn s64[N](x: &f64[N]) -> f64 { sum(x) }
pub fn d32[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }
pub fn m64[N](x: &f64[N]) -> f64 { max(x) + min(x) }
"""


def _edge_values(t: str, n: int, shift: int, specials: bool) -> np.ndarray:
    """`specials`: NaN payloads (quiet, signalling, negative), ±0, subnormals, ±inf, cycling
    with a period of 13 — prime to every lane count, so each lane of a 4/8/16-lane vector
    meets each of them; else values over a wide range of magnitudes (any reordering of a
    sum would show) with zeros and subnormals among them."""
    ft, it = (np.float32, np.uint32) if t == "f32" else (np.float64, np.uint64)
    if specials:
        if t == "f32":
            nans = [0x7FC00001, 0xFFC01234, 0x7F800001, 0x7FBFFFFF, 0xFFFFFFFF]
        else:
            nans = [0x7FF8000000000001, 0xFFF8000000001234, 0x7FF0000000000001, (1 << 64) - 1]
        pool = np.concatenate(
            [
                np.array(nans, dtype=it).view(ft),
                np.array([0.0, -0.0, np.inf, -np.inf, 1.5, -2.25], dtype=ft),
                np.array([1, (1 << 63 if t == "f64" else 1 << 31) | 3], dtype=it).view(ft),
            ]
        )[:13]
        return pool[(np.arange(n) + shift) % len(pool)].astype(ft)
    rng = np.random.default_rng(n * 7 + shift)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(ft)
    x[rng.integers(0, max(n, 1), n // 9)] = 0.0 if shift % 2 else -0.0
    tiny = np.finfo(ft).smallest_subnormal
    x[rng.integers(0, max(n, 1), n // 11)] = tiny * (3 - 2 * shift)
    return x


def test_every_level_gives_the_interpreters_bytes_at_every_vector_boundary() -> None:
    """Elementwise kernels and reductions at every length around a tile, a vector (4, 8, 16
    lanes) and a jammed step, on adversarial floats: every level (sse2, avx2, avx512 where
    the CPU has them) gives the interpreter's bytes, so the levels agree with each other."""
    if LEVELS == ["none"]:
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    m = _module(EDGES)
    g = m.graph
    loaded = {
        (f.name, lv): Loaded(X.read(X.build(g, f.name, X.isa_for(lv))[0], g)[1])
        for f in g.exported()
        for lv in LEVELS
    }
    try:
        for f in g.exported():
            sig = entry_signature(m, f.name)
            t = "f32" if "32" in f.name else "f64"
            for n in BOUNDARIES:
                for specials in (True, False):
                    inputs = {
                        p: _edge_values(t, n, k, specials)
                        for k, (p, _) in enumerate(sig.value_params)
                    }
                    want = outcome(lambda: reference(m, f.name, inputs, {"N": n}))  # noqa: B023
                    for lv in LEVELS:
                        code = loaded[(f.name, lv)]
                        got = outcome(lambda: run(code, m, f.name, inputs, {"N": n}))  # noqa: B023
                        assert got == want, (f.name, lv, n, specials)
    finally:
        for code in loaded.values():
            code.close()


def _maximum_as_select(prog, cmp: str):
    """The program with every `maximum(a, b)` of a `lanes` loop rewritten as
    `select(cmp(a, b), a, b)`: a comparison's mask read by a varying select (no source
    spelling makes one today)."""
    from kera_core.loops import ir

    fresh = [1 << 40]

    def walk(stmts: list, lanes: bool) -> list:
        out = []
        for s in stmts:
            if isinstance(s, ir.Loop):
                s.body = walk(s.body, lanes or s.mark == "lanes")
            elif lanes and isinstance(s, ir.Op) and s.op == "maximum":
                fresh[0] += 1
                c = ir.Var(fresh[0], "bool", "c")
                out.append(ir.Op(c, cmp, s.args))
                s = ir.Op(s.dst, "select", (c, *s.args))
            out.append(s)
        return out

    for fn in prog.functions.values():
        fn.body = walk(fn.body, False)
    return prog


@pytest.mark.parametrize("level", VECTOR_LEVELS or ["none"])
def test_a_varying_select_on_every_comparison_agrees_with_the_scalar_code(level: str) -> None:
    """`select` on a vector comparison's mask (vblendv for ymm; vpmovm2d, vpmovd2m and
    vblendm for zmm) gives the scalar SSE2 code's bytes for every comparison, on NaN, ±0
    and infinities in every lane."""
    from kera_core.loops.lower import lower_program

    _vector_level(level)
    m = _module(
        "pub fn a[N](x: &f32[N], y: &f32[N]) -> f32[N] { maximum(x, y) }\n"
        "pub fn b[N](x: &f64[N], y: &f64[N]) -> f64[N] { maximum(x, y) }\n"
    )
    for name, t in (("a", "f32"), ("b", "f64")):
        for cmp in ("eq", "ne", "lt", "le", "gt", "ge"):
            runs = []
            for lv in ("sse2", level):
                comp = X.compile_program(
                    _maximum_as_select(lower_program(m.graph, name), cmp), X.isa_for(lv)
                )
                if lv == level:
                    text = "\n".join(comp.listings[name])
                    assert ("vblendv" if level == "avx2" else "vblendm") in text
                runs.append(Loaded(comp.codes))
            try:
                for n in (0, 1, 5, 8, 16, 17, 33, 64, 100):
                    for specials in (True, False):
                        inputs = {
                            "x": _edge_values(t, n, 0, specials),
                            "y": _edge_values(t, n, 5, specials),
                        }
                        got = [
                            outcome(lambda: run(c, m, name, inputs, {"N": n}))  # noqa: B023
                            for c in runs
                        ]
                        assert got[0] == got[1], (name, cmp, n, specials)
            finally:
                for c in runs:
                    c.close()


def test_avx512_is_chosen_when_the_cpu_has_it_and_refused_when_not(monkeypatch) -> None:
    """Auto-detection picks the best level; asking for a level the CPU lacks, or running an
    artifact built for one, is a clear error (never an illegal instruction)."""
    from kera_core.native import cpu

    if LEVELS == ["none"]:
        tool_missing("the x86_64 target runs only on an x86-64 machine")
    assert X.isa_for().name == LEVELS[-1]
    m = _module("pub fn f[N](x: &f32[N]) -> f32 { sum(x) }")
    t = get("x86_64")
    x = {"x": np.ones(40, np.float32)}
    arts = {}
    for lv in LEVELS:
        monkeypatch.setattr(t, "isa", lv)
        arts[lv] = t.lower(m.graph, m.provenance, "f")
        assert f"({lv})" in arts[lv].text
    monkeypatch.setattr(t, "isa", None)
    weak = cpu.CpuFeatures(source="test", sse2=True, avx=True, avx2=True, fma=True)
    monkeypatch.setattr(cpu, "detect", lambda: weak)
    assert X.isa_for().name == "avx2"
    with pytest.raises(ValueError, match="no AVX-512"):
        X.isa_for("avx512")
    if "avx512" in arts:
        with pytest.raises(X.ArtifactError, match="avx512 code and this CPU has no AVX-512"):
            t.run(arts["avx512"], m.graph, "f", x, provenance=m.provenance)
    want = reference(m, "f", x).digest()
    runnable_here = arts["avx2" if "avx2" in arts else "sse2"]
    assert t.run(runnable_here, m.graph, "f", x, provenance=m.provenance).digest() == want
