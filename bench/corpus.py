"""Large generated Kera sources for the benchmarks: the examples, repeated with fresh names."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ITEM = re.compile(r"\b(?:fn|struct|const)\s+([A-Za-z_][A-Za-z0-9_]*)")


def _renamed(text: str, suffix: str) -> str:
    for name in sorted(set(_ITEM.findall(text)), key=len, reverse=True):
        text = re.sub(rf"\b{name}\b", f"{name}{suffix}", text)
    return text


def generate(lines: int) -> str:
    """A valid Kera file of about ``lines`` lines: every example, renamed per copy."""
    sources = [p.read_text() for p in sorted((ROOT / "examples").glob("*.kera"))]
    out: list[str] = []
    count = 0
    k = 0
    while count < lines:
        for src in sources:
            chunk = _renamed(src, f"_{k}")
            out.append(chunk)
            count += chunk.count("\n")
            if count >= lines:
                break
        k += 1
    return "\n".join(out)


def long_function(lines: int) -> str:
    """A valid Kera file that is one function of about ``lines`` lines (straight-line code
    with loops and branches), to measure an edit in a long body."""
    out = [
        "/// One long function: each edit in it lowers all of it.",
        "pub fn long_body[N](x: &f32[N], y: &mut f32[N]) -> f32 {",
        "    let mut acc: f32 = 0.0;",
    ]
    k = 0
    while len(out) < lines - 2:
        out += [
            f"    let a{k} = acc * 0.5 + {k % 97}.25;",
            f"    for i in 0..N {{ y[i] = y[i] + x[i] * a{k}; }}",
            f"    if a{k} > 1.5 {{ acc = acc + a{k}; }} else {{ acc = acc - 0.75; }}",
        ]
        k += 1
    out += ["    acc", "}", ""]
    return "\n".join(out)


def python_source(size: int) -> str:
    """Python source of about ``size`` bytes, for the parso anchor."""
    import inspect
    import json.decoder

    base = inspect.getsource(json.decoder) + "\n"
    reps = size // len(base) + 1
    return (base * reps)[:size].rsplit("\n", 1)[0] + "\n"
