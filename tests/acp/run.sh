#!/usr/bin/env bash
# `reins acp` driven by the official ACP TypeScript SDK (client.mjs), against scripted-llm and
# the reference MCP server. Installs the SDK (install.sh) and server-everything
# (tests/mcp/install.sh) with npm when they are missing, then runs client.mjs in a throwaway
# directory (kept when ACP_KEEP_WORK_DIR is set, to look at the session files). Needs REINS_BIN,
# SCRIPTED_LLM_BIN, node and npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${REINS_BIN:?set REINS_BIN to the reins binary}"
: "${SCRIPTED_LLM_BIN:?set SCRIPTED_LLM_BIN to the scripted-llm binary}"
acp_prefix="$(bash "$here/install.sh")"
mcp_prefix="$(bash "$here/../mcp/install.sh")"
work_dir="$(mktemp -d "${TMPDIR:-/tmp}/reins-acp.XXXXXX")"
trap '[ -n "${ACP_KEEP_WORK_DIR:-}" ] || rm -rf "$work_dir"' EXIT
REINS_BIN="$(realpath "$REINS_BIN")" SCRIPTED_LLM_BIN="$(realpath "$SCRIPTED_LLM_BIN")" \
  ACP_NODE_MODULES="$acp_prefix/node_modules" MCP_NODE_MODULES="$mcp_prefix/node_modules" WORK_DIR="$work_dir" \
  timeout 120 node "$here/client.mjs"
