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


def python_source(size: int) -> str:
    """Python source of about ``size`` bytes, for the parso anchor."""
    import inspect
    import json.decoder

    base = inspect.getsource(json.decoder) + "\n"
    reps = size // len(base) + 1
    return (base * reps)[:size].rsplit("\n", 1)[0] + "\n"
