#!/usr/bin/env bash
# Installs the MCP reference servers @modelcontextprotocol/server-everything and
# server-filesystem, and the SDK that they and tests/mcp/test-server.mjs are built on, with npm
# into MCP_PREFIX when they are not there yet; then prints MCP_PREFIX. Tests and the bench find
# the servers at
#   $MCP_PREFIX/node_modules/@modelcontextprotocol/server-everything/dist/index.js
#   $MCP_PREFIX/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
# MCP_PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/reins-bench/mcp-everything-VERSION (the way
# tests/pi-interop installs pi). Needs node and npm.
set -euo pipefail
everything_version=2026.8.31
filesystem_version=2026.8.31
sdk_version=1.32.2
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "mcp: $tool is not installed" >&2; exit 1; }
done
: "${MCP_PREFIX:=${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench/mcp-everything-$everything_version}"
mkdir -p "$MCP_PREFIX"

version_of() {
  node -e 'try { console.log(require(process.argv[1]).version) } catch { }' \
    "$MCP_PREFIX/node_modules/$1/package.json"
}
installed() {
  [ "$(version_of @modelcontextprotocol/server-everything)" = "$everything_version" ] &&
    [ "$(version_of @modelcontextprotocol/server-filesystem)" = "$filesystem_version" ] &&
    [ "$(version_of @modelcontextprotocol/sdk)" = "$sdk_version" ]
}
if ! installed; then
  # Test binaries may ask at the same time: one installs, the others wait for it.
  exec 9>"$MCP_PREFIX/.install-lock"
  flock 9
  if ! installed; then
    echo "installing @modelcontextprotocol/server-everything@$everything_version into $MCP_PREFIX" >&2
    npm install --prefix "$MCP_PREFIX" --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/server-everything@$everything_version" \
      "@modelcontextprotocol/server-filesystem@$filesystem_version" \
      "@modelcontextprotocol/sdk@$sdk_version" >&2
  fi
  if ! installed; then
    echo "mcp: npm left no server-everything $everything_version, server-filesystem $filesystem_version" \
      "with sdk $sdk_version in $MCP_PREFIX" >&2
    exit 1
  fi
fi
echo "$MCP_PREFIX"
