"""The VS Code extension builds, passes its unit tests and packages into a .vsix.

Runs ``scripts/build-vscode.sh`` (npm ci from the committed lock file, tsc, esbuild,
``node --test``, vsce) once, then looks inside the .vsix (a zip). The client's logic is tested
by the script's unit tests; this module checks that the pieces VS Code needs are packaged.
Needs node and npm; without them the tests are skipped, or fail when ``CI=true``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.tools import tool_missing

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "vscode-extension"
VSIX = EXT / "kera.vsix"


@pytest.fixture(scope="module")
def build() -> subprocess.CompletedProcess:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not installed (apt-get install -y nodejs npm)"
        tool_missing(reason)
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-vscode.sh")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, (
        f"scripts/build-vscode.sh failed ({proc.returncode}):\n"
        f"{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    )
    return proc


def test_unit_tests_ran_and_passed(build):
    out = build.stdout
    assert "# pass " in out and "# fail 0" in out, out[-3000:]
    passed = int(out.split("# pass ", 1)[1].split()[0])
    assert passed >= 20, out[-3000:]


def test_vsix_contents(build):
    assert VSIX.exists(), build.stdout[-2000:]
    with zipfile.ZipFile(VSIX) as z:
        names = set(z.namelist())
        for required in (
            "extension/package.json",
            "extension/dist/extension.js",
            "extension/syntaxes/kera.tmLanguage.json",
            "extension/language-configuration.json",
            "extension.vsixmanifest",
        ):
            assert required in names, sorted(names)
        # Bundled: no sources, tests or node_modules in the package.
        assert not any(n.startswith(("extension/node_modules/", "extension/src/")) for n in names)
        manifest = json.loads(z.read("extension/package.json"))
        grammar = json.loads(z.read("extension/syntaxes/kera.tmLanguage.json"))
        langconf = json.loads(z.read("extension/language-configuration.json"))
        bundle = z.read("extension/dist/extension.js").decode()
    assert manifest["main"] == "./dist/extension.js"
    assert manifest["contributes"]["languages"][0]["extensions"] == [".kera"]
    assert manifest["contributes"]["grammars"][0]["scopeName"] == grammar["scopeName"]
    assert langconf["comments"]["lineComment"] == "//"
    settings = manifest["contributes"]["configuration"]["properties"]
    for key in (
        "kera.server.command",
        "kera.server.args",
        "kera.server.pythonPath",
        "kera.outputDir",
        "kera.sameBits.enabled",
        "kera.sameBits.onOpen",
        "kera.sameBits.targets",
        "kera.trace.server",
    ):
        assert key in settings
    # The bundle carries the language client and talks the Kera protocol.
    for needle in (
        "kera/lowering",
        "kera/fingerprint",
        "kera-lowering",
        "kera.compileToTarget",
        "kera/sameBits",
        "kera-same-bits",
        "kera.showSameBits",
    ):
        assert needle in bundle, needle
    assert 'require("vscode")' in bundle  # external, provided by VS Code
