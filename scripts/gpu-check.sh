#!/usr/bin/env bash
# The ptx target on a real GPU, in one command (docs/targets/ptx.md): every example and
# 1,000 generated programs run through the CUDA driver, raw result bytes compared with the
# reference interpreter. On a fresh machine with an NVIDIA GPU and its driver:
#   bash scripts/gpu-check.sh                # every example + 1000 generated programs
#   bash scripts/gpu-check.sh --programs 50  # a shorter run
#   bash scripts/gpu-check.sh --dry-run      # everything but the launch (no GPU needed)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
.venv/bin/pip install -q -e . nvidia-cuda-nvcc-cu12 cuda-bindings numpy
exec .venv/bin/python -m kera_core.backends.ptx.check "$@"
