"""Coverage-guided fuzzing of one input surface with atheris (libFuzzer).

    python fuzz/run.py parser -max_total_time=60 fuzz/corpus/parser
    python fuzz/run.py keg --replay fuzz/corpus/keg      # no atheris: run a corpus once

The corpus directories are seeded by `python fuzz/seed.py` from the examples and the test
corpora; scripts/fuzz.sh SECONDS does both for every target.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in _targets():
        print(f"usage: run.py TARGET [libFuzzer args] (targets: {', '.join(_targets())})")
        return 2
    name = sys.argv[1]
    if "--replay" in sys.argv:
        from fuzz.targets import TARGETS

        corpus = Path(sys.argv[sys.argv.index("--replay") + 1])
        files = sorted(p for p in corpus.rglob("*") if p.is_file())
        for p in files:
            TARGETS[name](p.read_bytes())
        print(f"{name}: {len(files)} inputs replayed, no finding")
        return 0
    import atheris

    with atheris.instrument_imports(include=["kera_core", "fuzz"]):
        from fuzz.targets import TARGETS
    from kera_core.stack import deep_recursion

    target = TARGETS[name]

    def one(data: bytes) -> None:
        with deep_recursion():
            target(data)

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one)
    atheris.Fuzz()
    return 0


def _targets() -> list[str]:
    return ["parser", "formatter", "checker", "keg", "cli", "sync"]


if __name__ == "__main__":
    sys.exit(main())
