"""Agreement at the edges: with zero-size dimensions every operation, and every exported
function of the examples, has the same outcome on the interpreter and on every target
that runs here — the same result bits, or the same run-time error code (`--target all`
raises R0010 otherwise)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kera_core.cli.run import run_all
from kera_core.interp import InterpError
from kera_core.interp.api import entry_signature
from kera_core.interp.gen import InputGenerator
from tests.outcomes import analyzed, example_program, examples

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


def outcome(src, name: str, sizes: dict[str, int]) -> str:
    """``src``: a program's text, or an analysed program (a module or a package)."""
    m = analyzed(src) if isinstance(src, str) else src
    sig = entry_signature(m, name)
    dims = {i: sizes.get(d, 0) for i, d in enumerate(sig.dim_names)}
    gen = InputGenerator(0)
    inputs = {p: gen.value(t, dims) for p, t in sig.value_params}
    named = {sig.dim_names[i]: n for i, n in dims.items()}
    try:
        return "ok " + run_all(m, name, inputs, named).digest()
    except InterpError as e:
        assert e.code != "R0010", e  # a target disagreed with the interpreter
        return "error " + e.code


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("size", [0, 1])
def test_every_operation_at_zero_and_one(op: str, size: int) -> None:
    for other in (0, size, 3):  # every combination of the other dimensions too
        outcome(OPS[op], "f", {"N": size, "M": other, "K": other})


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.stem)
def test_every_example_function_with_empty_dimensions(path: Path) -> None:
    m = example_program(path)  # a file or a package
    for f in m.graph.exported():  # a generic function's instances
        outcome(m, f.name, {})
