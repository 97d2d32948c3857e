#!/usr/bin/env bash
# Installs what the ACP tests and the bench drive reins with, from package.json and its lockfile:
# the official ACP TypeScript SDK @agentclientprotocol/sdk (client role) and pi's ACP adapter
# pi-acp (the bench's peer). `npm ci` puts them into ACP_PREFIX when they are not there yet, then
# the script prints ACP_PREFIX; the scripts find the packages in $ACP_PREFIX/node_modules.
# ACP_PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/reins-bench/acp-HASH, HASH naming the
# lockfile, so a changed lockfile installs afresh. Needs node and npm.
# The pi that pi-acp runs comes from tests/pi-interop/install.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for tool in node npm sha256sum; do
  command -v "$tool" >/dev/null || { echo "acp: $tool is not installed" >&2; exit 1; }
done
cache="${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench"
lock_hash="$(sha256sum "$here/package-lock.json" | cut -c1-12)"
: "${ACP_PREFIX:=$cache/acp-$lock_hash}"
mkdir -p "$ACP_PREFIX"

installed() { [ "$(cat "$ACP_PREFIX/.installed" 2>/dev/null)" = "$lock_hash" ]; }
if ! installed; then
  # Several scripts may ask at the same time: one installs, the others wait for it.
  exec 9>"$ACP_PREFIX/.install-lock"
  flock 9
  if ! installed; then
    echo "installing the ACP SDK and pi-acp into $ACP_PREFIX" >&2
    cp "$here/package.json" "$here/package-lock.json" "$ACP_PREFIX/"
    npm ci --prefix "$ACP_PREFIX" --no-audit --no-fund --loglevel=error >&2
    [ -f "$ACP_PREFIX/node_modules/@agentclientprotocol/sdk/package.json" ] ||
      { echo "acp: npm ci left no @agentclientprotocol/sdk in $ACP_PREFIX" >&2; exit 1; }
    echo "$lock_hash" >"$ACP_PREFIX/.installed"
  fi
  exec 9>&-
fi
echo "$ACP_PREFIX"

