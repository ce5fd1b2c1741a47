"""Range formatting is idempotent: formatting a range, then the same range of the result,
changes nothing the second time — for random ranges over badly spaced examples (items
with doc comments and blank lines between them included)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from kera_core.fmt import format_range
from kera_core.source import Span

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.kera"))


def uglify(src: str, rng: random.Random) -> str:
    src = re.sub(r" ", lambda m: rng.choice([" ", "  ", "\t "]), src)
    return re.sub(r";", lambda m: rng.choice([";", " ;", ";  "]), src)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_formatting_a_range_twice_changes_nothing_the_second_time(path: Path) -> None:
    rng = random.Random(path.stem)
    ugly = uglify(path.read_text(), rng)
    n = len(ugly.encode())
    checked = 0
    for _ in range(12):
        a = rng.randrange(n)
        b = min(n, a + rng.randrange(400))
        first = format_range(ugly, Span(a, b))
        if not first.ok:
            continue
        delta = len(first.text.encode()) - n
        second = format_range(first.text, Span(a, max(a, b + delta)))
        assert second.ok and not second.changed, (a, b, second.edits)
        checked += 1
    assert checked > 0
