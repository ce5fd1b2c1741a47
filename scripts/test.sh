#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, then run it.
#   bash scripts/test.sh            # the whole suite
#   bash scripts/test.sh -k graph   # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

# System tools: node runs the tree-sitter CLI (tools/tree-sitter fetches the CLI itself) and
# builds the VS Code extension; Neovim drives the editor end-to-end test; Chromium runs the
# same .wasm in a browser; iverilog simulates the Verilog designs, verilator lints them and
# is the second simulator (it compiles C++: g++ and make);
# GNU as for AArch64 checks the arm64 encoder; with ld and qemu-aarch64 it runs the arm64
# artifact as a static ELF (the ABI end to end).
need_apt=()
command -v node >/dev/null || need_apt+=(nodejs)
command -v npm >/dev/null || need_apt+=(npm)
command -v gcc >/dev/null || need_apt+=(gcc)
command -v nvim >/dev/null || need_apt+=(neovim)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v iverilog >/dev/null || need_apt+=(iverilog)
command -v verilator >/dev/null || need_apt+=(verilator)
command -v g++ >/dev/null || need_apt+=(g++)    # verilator --binary compiles C++ with make
command -v make >/dev/null || need_apt+=(make)
command -v aarch64-linux-gnu-as >/dev/null || need_apt+=(binutils-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || need_apt+=(qemu-user)
if ((${#need_apt[@]})); then
  if [[ $(id -u) == 0 ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    echo "missing system packages: ${need_apt[*]} (install them, or run as root)" >&2
    exit 1
  fi
fi

python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]' ./grammar

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/pytest "$@"
