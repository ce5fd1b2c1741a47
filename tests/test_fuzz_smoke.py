"""Fuzzing as a habit: every harness of fuzz/ runs briefly here (coverage-guided, with a
corpus seeded from the examples and the test corpora), and the seed corpus itself is
replayed through every target. `bash scripts/fuzz.sh SECONDS` runs them for longer."""

from __future__ import annotations

import importlib.util
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.seed import seed
from fuzz.targets import TARGETS
from tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("corpus")
    counts = seed(base)
    assert all(n > 0 for n in counts.values()), counts
    return base


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_seed_corpus_replays_clean(target: str, corpus: Path) -> None:
    for p in sorted((corpus / target).iterdir())[:60]:
        TARGETS[target](p.read_bytes())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_brief_coverage_guided_run(target: str, corpus: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("atheris") is None:
        tool_missing("atheris is not installed (pip install -e '.[test]')")
    work = tmp_path / target
    work.mkdir()
    for p in sorted((corpus / target).iterdir())[:40]:
        (work / p.name).write_bytes(p.read_bytes())
    # libFuzzer's RSS is getrusage's peak, which a child inherits from this process across
    # fork and exec (Linux keeps the old mm's high-water mark): give the harness its own 2 GB
    # on top of what the test process has already peaked at, so a memory-hungry test earlier
    # in the session does not make every harness "out of memory" at its first input
    inherited = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "fuzz" / "run.py"),
            target,
            "-max_total_time=3",
            "-timeout=20",
            f"-rss_limit_mb={inherited + 2048}",
            f"-artifact_prefix={tmp_path}/",
            str(work),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "DONE" in r.stderr
