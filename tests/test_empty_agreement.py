"""Agreement at the edges: with zero-size dimensions every operation, and every exported
function of the examples, has the same outcome on the interpreter and on every target
that runs here — the same result bits, or the same run-time error code (`--target all`
raises R0010 otherwise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kera_core.analysis import analyze
from kera_core.cli.run import run_all
from kera_core.interp import InterpError
from kera_core.interp.api import entry_signature
from kera_core.interp.gen import InputGenerator

ROOT = Path(__file__).resolve().parent.parent

OPS = {
    "exp": "pub fn f[N](x: &f32[N]) -> f32[N] { exp(x) }",
    "sqrt": "pub fn f[N](x: &f64[N]) -> f64[N] { sqrt(x) }",
    "abs": "pub fn f[N](x: &i32[N]) -> i32[N] { abs(x) }",
    "add": "pub fn f[N](x: &f32[N], y: &f32[N]) -> f32[N] { x + y }",
    "scale": "pub fn f[N](x: &f64[N]) -> f64[N] { 2.0 * x }",
    "sum": "pub fn f[N](x: &f32[N]) -> f32 { sum(x) }",
    "sum_i": "pub fn f[N](x: &i64[N]) -> i64 { sum(x) }",
    "max": "pub fn f[N](x: &f32[N]) -> f32 { max(x) }",
    "min": "pub fn f[N](x: &i32[N]) -> i32 { min(x) }",
    "mean": "pub fn f[N](x: &f64[N]) -> f64 { mean(x) }",
    "argmax": "pub fn f[N](x: &f32[N]) -> i64 { argmax(x) }",
    "dot": "pub fn f[N](x: &f32[N], y: &f32[N]) -> f32 { dot(x, y) }",
    "matmul": "pub fn f[M, K, N](a: &f32[M, K], b: &f32[K, N]) -> f32[M, N] { matmul(a, b) }",
    "softmax": "pub fn f[N](x: &f32[N]) -> f32[N] { softmax(x) }",
    "conv1d": "pub fn f[N, K](x: &f32[N], k: &f32[K]) -> f32[N] { conv1d(x, k) }",
    "zeros": "pub fn f[N](x: &f32[N]) -> f32[N] { let z: f32[N] = zeros(); z + x }",
    "loop": "pub fn f[N](x: &mut f32[N]) { for i in 0..N { x[i] = x[i] + 1.0; } }",
    "index": "pub fn f[N](x: &f32[N]) -> f32 { x[0] }",
    "range": "pub fn f[N](x: &f32[N]) -> i64 { let mut s = 0; for i in 0..N { s = s + i; } s }",
}


def outcome(src: str, name: str, sizes: dict[str, int]) -> str:
    a = analyze(src)
    assert not a.has_errors, [d.message for d in a.diagnostics]
    sig = entry_signature(a.module, name)
    dims = {i: sizes.get(d, 0) for i, d in enumerate(sig.dim_names)}
    gen = InputGenerator(0)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    named = {sig.dim_names[i]: n for i, n in dims.items()}
    try:
        return "ok " + run_all(a.module, name, inputs, named).digest()
    except InterpError as e:
        assert e.code != "R0010", e  # a target disagreed with the interpreter
        return "error " + e.code


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("size", [0, 1])
def test_every_operation_at_zero_and_one(op: str, size: int) -> None:
    for other in (0, size, 3):  # every combination of the other dimensions too
        outcome(OPS[op], "f", {"N": size, "M": other, "K": other})


def exported(path: Path) -> list[str]:
    a = analyze(path.read_text())
    return [f.name for f in a.module.graph.exported()]  # a generic function's instances


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.kera")), ids=lambda p: p.stem)
def test_every_example_function_with_empty_dimensions(path: Path) -> None:
    src = path.read_text()
    for name in exported(path):
        outcome(src, name, {})
