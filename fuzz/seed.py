"""Seed every target's corpus (fuzz/corpus/TARGET/) from the examples and the test
corpora: source files for the text targets, `.keg` builds of the examples for `keg`."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TEXT_TARGETS = ("parser", "formatter", "checker", "cli", "sync")


def sources() -> list[bytes]:
    paths = sorted((ROOT / "examples").glob("*.kera"))
    paths += sorted((ROOT / "tests" / "corpus").rglob("*.kera"))
    paths += sorted((ROOT / "tests" / "fmt_cases").rglob("*.kera"))
    return [p.read_bytes() for p in paths]


def kegs() -> list[bytes]:
    from kera_core.analysis import analyze
    from kera_core.keg import write_keg

    out = []
    for p in sorted((ROOT / "examples").glob("*.kera")):
        a = analyze(p.read_text())
        out.append(write_keg(a.module.graph, a.module.provenance))
        out.append(write_keg(a.module.graph))
    return out


def seed(base: Path) -> dict[str, int]:
    counts = {}
    for target, items in [(t, sources()) for t in TEXT_TARGETS] + [("keg", kegs())]:
        d = base / target
        d.mkdir(parents=True, exist_ok=True)
        for data in items:
            (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
        counts[target] = len(items)
    return counts


if __name__ == "__main__":
    base = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "fuzz" / "corpus"
    print(seed(base))
