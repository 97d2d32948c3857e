#!/usr/bin/env bash
# Runs every spec of the Neovim plugin, each in its own headless Neovim.
# Needs NVIM (a Neovim 0.11+ binary), REINS_BIN and SCRIPTED_LLM_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${NVIM:=nvim}"
status=0
for spec in tests/*_spec.lua; do
  echo "== $spec"
  if ! timeout 300 "$NVIM" --headless -u NONE -i NONE -n -l tests/runner.lua "$spec" </dev/null; then
    status=1
  fi
done
exit "$status"
