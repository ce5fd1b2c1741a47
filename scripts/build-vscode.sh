#!/usr/bin/env bash
# Build, test and package the VS Code extension into vscode-extension/kera.vsix.
#   bash scripts/build-vscode.sh
# Needs node (>= 20) and npm; everything else comes from the npm registry through
# vscode-extension/package-lock.json. Install scripts of dependencies never run
# (vscode-extension/.npmrc sets ignore-scripts), so nothing is downloaded but packages.
set -euo pipefail
cd "$(dirname "$0")/../vscode-extension"

for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "build-vscode: $tool is not installed" >&2; exit 1; }
done

echo "== npm ci"
npm ci --no-audit --no-fund
echo "== typecheck and compile (tsc)"
npm run --silent compile
echo "== bundle (esbuild)"
npm run --silent bundle
echo "== unit tests (node --test)"
npm test
echo "== package (vsce)"
rm -f kera.vsix
npm run --silent package
test -s kera.vsix
echo "build-vscode: $(pwd)/kera.vsix"
