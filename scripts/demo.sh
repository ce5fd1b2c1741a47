#!/usr/bin/env bash
# Install Kera on a fresh machine and run the demo over examples/.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e . ./grammar
.venv/bin/kera demo examples
