"""Names and builtins (language.md §5, §6.13): a local shadows a builtin or function of its
name, so calling it is K0205; a function named like a builtin replaces it in its file and
says so (warning K0207) — never silently."""

from __future__ import annotations

import pytest

from kera_core.analysis import analyze
from kera_core.interp.api import run_function
from kera_core.sema.lower_calls import BUILTINS


def diags(src: str) -> list[tuple[str, str]]:
    return [(d.code, d.severity.value) for d in analyze(src).diagnostics]


@pytest.mark.parametrize("name", ["min", "max", "sum", "exp", "sqrt", "abs"])
def test_a_local_shadows_the_builtin(name: str) -> None:
    src = f"pub fn f(x: f32, y: f32) -> f32 {{ let {name} = 3.0; {name}(x) + {name} }}\n"
    a = analyze(src)
    (d,) = [d for d in a.diagnostics if d.is_error]
    assert d.code == "K0205" and "shadows the builtin" in d.message
    assert src[d.span.start : d.span.end] == name


def test_a_parameter_shadows_a_function() -> None:
    src = "fn g(a: f32) -> f32 { a }\npub fn f(g: f32) -> f32 { g(g) }\n"
    (d,) = [d for d in analyze(src).diagnostics if d.is_error]
    assert d.code == "K0205" and "shadows the function" in d.message


@pytest.mark.parametrize(
    "name", sorted(n for n in ("min", "max", "dot", "sum", "exp") if n in BUILTINS)
)
def test_a_function_named_like_a_builtin_replaces_it_with_a_warning(name: str) -> None:
    src = (
        f"fn {name}(a: f32, b: f32) -> f32 {{ a - b }}\n"
        f"pub fn f(x: f32, y: f32) -> f32 {{ {name}(x, y) }}\n"
    )
    assert diags(src) == [("K0207", "warning")]
    a = analyze(src)
    r = run_function(a.module, "f", {"x": 5.0, "y": 3.0}, {})
    assert float(r.outputs[0].value) == 2.0  # the user's function, not the builtin


def test_other_functions_get_no_warning() -> None:
    assert diags("fn mine(a: f32) -> f32 { a }\npub fn f(x: f32) -> f32 { mine(x) }\n") == []
