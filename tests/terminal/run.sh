#!/usr/bin/env bash
# Terminal spoofing, rendered through a terminal emulator: the PyPI package pyte (installed here
# when missing, into a virtualenv of our own where the system Python refuses global installs).
# Needs REINS_BIN and SCRIPTED_LLM_BIN.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${REINS_BIN:?set REINS_BIN to the reins binary}"
: "${SCRIPTED_LLM_BIN:?set SCRIPTED_LLM_BIN to the scripted-llm binary}"

python=python3
venv="${XDG_CACHE_HOME:-$HOME/.cache}/reins/pyte-venv"
if ! "$python" -c 'import pyte' >/dev/null 2>&1 && [ -x "$venv/bin/python" ]; then
  python="$venv/bin/python"
fi
if ! "$python" -c 'import pyte' >/dev/null 2>&1; then
  if ! "$python" -m pip install --quiet pyte==0.8.2 >&2; then
    "$python" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet pyte==0.8.2 >&2
    python="$venv/bin/python"
  fi
fi
REINS_BIN="$(realpath "$REINS_BIN")" SCRIPTED_LLM_BIN="$(realpath "$SCRIPTED_LLM_BIN")" \
  timeout 300 "$python" -B "$here/spoofing.py"
