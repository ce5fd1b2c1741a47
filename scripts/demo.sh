#!/usr/bin/env bash
# Install Kera on a fresh machine and run the demo over examples/.
# The install's own messages (pip, setuptools) go to .venv/install.log and are shown only if
# it fails, so the output is the demo's.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
if ! { .venv/bin/pip install -q --upgrade pip && .venv/bin/pip install -q -e . ./grammar; } \
  >.venv/install.log 2>&1; then
  cat .venv/install.log >&2
  echo "demo: the install failed (log above, also in .venv/install.log)" >&2
  exit 1
fi
.venv/bin/kera demo examples
