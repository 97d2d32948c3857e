#!/usr/bin/env bash
# A session written by `reins run` opens in the pi coding agent (issues 3 and 16), for both pi
# versions reins follows: 0.73.1 and 1.6.0, each installed by install.sh (into the cache the
# benchmark uses too) when missing; check.mjs then runs against it in a throwaway directory.
# Needs REINS_BIN, SCRIPTED_LLM_BIN, node and npm. PI_VERSIONS narrows the versions to run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${REINS_BIN:?set REINS_BIN to the reins binary}"
: "${SCRIPTED_LLM_BIN:?set SCRIPTED_LLM_BIN to the scripted-llm binary}"
: "${PI_VERSIONS:=0.73.1 1.6.0}"

for version in $PI_VERSIONS; do
  { read -r pi_bin; read -r node_dir; read -r package_dir; } < <(bash "$here/install.sh" "$version")
  echo "pi-interop: pi $version (node $("$node_dir/node" --version))"
  work_dir="$(mktemp -d "${TMPDIR:-/tmp}/reins-pi-interop.XXXXXX")"
  PATH="$node_dir:$PATH" REINS_BIN="$(realpath "$REINS_BIN")" SCRIPTED_LLM_BIN="$(realpath "$SCRIPTED_LLM_BIN")" \
    PI_BIN="$pi_bin" PI_PACKAGE_DIR="$package_dir" WORK_DIR="$work_dir" \
    timeout 300 node "$here/check.mjs"
  rm -rf "$work_dir"
done
