#!/usr/bin/env bash
# The ptx target on a real GPU, in one command (docs/targets/ptx.md): every example and
# 1,000 generated programs run through the CUDA driver, raw result bytes compared with the
# reference interpreter. On a machine with an NVIDIA GPU and its driver:
#   bash scripts/gpu-check.sh                # every example + 1000 generated programs
#   bash scripts/gpu-check.sh --programs 50  # a shorter run
#   bash scripts/gpu-check.sh --dry-run      # everything but the launch (no GPU needed)
#   bash scripts/gpu-check.sh --emulate      # the cases on the PTX emulator (no GPU needed)
# A GPU machine whose python3 already has numpy, hypothesis and cuda-bindings, and a ptxas
# (CUDA toolkit on PATH, or $KERA_PTXAS), runs offline with that python3; otherwise the
# packages are installed into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${KERA_PTXAS:-}" ]] && ! command -v ptxas >/dev/null && [[ -x /usr/local/cuda/bin/ptxas ]]; then
  export KERA_PTXAS=/usr/local/cuda/bin/ptxas
fi
if python3 -c 'import numpy, hypothesis, cuda.bindings' 2>/dev/null &&
  { [[ -n "${KERA_PTXAS:-}" ]] || command -v ptxas >/dev/null; }; then
  PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m kera_core.backends.ptx.check "$@"
fi
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
.venv/bin/pip install -q -e . nvidia-cuda-nvcc-cu12 cuda-bindings numpy hypothesis
exec .venv/bin/python -m kera_core.backends.ptx.check "$@"
