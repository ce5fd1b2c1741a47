"""What a test does when an external tool (node, nvim, Chromium, a C compiler) is missing.

Locally the test is skipped with the install hint, so a contributor without the tool can
run the rest; under `CI=true` a missing tool is a failure: `.ci/run` (scripts/test.sh)
installs every tool, so a skip there would hide a broken install step.
"""

from __future__ import annotations

import os
import platform
import sys

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def tool_missing(reason: str) -> None:
    """Fail (CI) or skip (locally) the calling test because of ``reason``."""
    if IN_CI:
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


X86_LINUX = sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")
LINUX = sys.platform == "linux"


def native_only(needs_x86: bool = True):
    """A mark for tests that run code natively: skipped elsewhere locally, never under CI
    (where the machine is x86-64 Linux and a skip would hide a broken JIT)."""
    ok = X86_LINUX if needs_x86 else LINUX
    what = "x86-64 Linux" if needs_x86 else "Linux"
    return pytest.mark.skipif(not ok and not IN_CI, reason=f"runs native code: needs {what}")
