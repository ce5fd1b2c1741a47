"""What a test does when an external tool (node, nvim, Chromium, a C compiler) is missing.

Locally the test is skipped with the install hint, so a contributor without the tool can
run the rest; under `CI=true` a missing tool is a failure: `.ci/run` (scripts/test.sh)
installs every tool, so a skip there would hide a broken install step.
"""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def tool_missing(reason: str) -> None:
    """Fail (CI) or skip (locally) the calling test because of ``reason``."""
    if IN_CI:
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)
