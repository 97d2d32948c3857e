#!/usr/bin/env bash
# Installs the MCP reference servers @modelcontextprotocol/server-everything, server-filesystem
# and server-memory, and the SDK that they and tests/mcp/test-server.mjs are built on, with npm
# into MCP_PREFIX, and the Python reference servers mcp-server-git and mcp-server-time (on the
# Python SDK, which speaks protocol 2026-07-28) with pip into a virtual environment there, when
# they are not there yet; then prints MCP_PREFIX. Tests and the bench find the servers at
#   $MCP_PREFIX/node_modules/@modelcontextprotocol/server-everything/dist/index.js
#   $MCP_PREFIX/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
#   $MCP_PREFIX/node_modules/@modelcontextprotocol/server-memory/dist/index.js
#   $MCP_PREFIX/python/bin/mcp-server-git, $MCP_PREFIX/python/bin/mcp-server-time
# MCP_PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/reins-bench/mcp-everything-VERSION (the way
# tests/pi-interop installs pi). Needs node, npm and python3 (with venv).
set -euo pipefail
everything_version=2026.8.31
filesystem_version=2026.8.31
memory_version=2026.8.31
python_servers_version=2026.10.19
sdk_version=1.32.2
for tool in node npm python3; do
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
    [ "$(version_of @modelcontextprotocol/server-memory)" = "$memory_version" ] &&
    [ "$(version_of @modelcontextprotocol/sdk)" = "$sdk_version" ] &&
    [ -f "$MCP_PREFIX/python/.installed-$python_servers_version" ]
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
      "@modelcontextprotocol/server-memory@$memory_version" \
      "@modelcontextprotocol/sdk@$sdk_version" >&2
    echo "installing mcp-server-git and mcp-server-time $python_servers_version into $MCP_PREFIX/python" >&2
    python3 -m venv "$MCP_PREFIX/python" >&2
    "$MCP_PREFIX/python/bin/pip" install --quiet --disable-pip-version-check \
      "mcp-server-git==$python_servers_version" "mcp-server-time==$python_servers_version" >&2
    touch "$MCP_PREFIX/python/.installed-$python_servers_version"
  fi
  if ! installed; then
    echo "mcp: npm and pip left no server-everything $everything_version, server-filesystem" \
      "$filesystem_version, server-memory $memory_version with sdk $sdk_version, or Python servers" \
      "$python_servers_version in $MCP_PREFIX" >&2
    exit 1
  fi
fi
echo "$MCP_PREFIX"
