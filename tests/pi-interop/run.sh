#!/usr/bin/env bash
# A session written by `reins run` opens in the pi coding agent (issue 3): installs pi 0.73.1 with
# npm into PI_PREFIX when it is not there yet, then runs check.mjs in a throwaway directory.
# Needs REINS_BIN, SCRIPTED_LLM_BIN, node and npm. PI_PREFIX defaults to
# ${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench/pi-0.73.1, the cache the benchmark uses too.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pi_version=0.73.1
pi_package="@mariozechner/pi-coding-agent"
: "${REINS_BIN:?set REINS_BIN to the reins binary}"
: "${SCRIPTED_LLM_BIN:?set SCRIPTED_LLM_BIN to the scripted-llm binary}"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "pi-interop: $tool is not installed" >&2; exit 1; }
done
: "${PI_PREFIX:=${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench/pi-$pi_version}"

package_dir="$PI_PREFIX/node_modules/$pi_package"
installed_version() {
  node -e 'try { console.log(require(process.argv[1]).version) } catch { }' "$package_dir/package.json"
}
if [ "$(installed_version)" != "$pi_version" ] || [ ! -x "$PI_PREFIX/node_modules/.bin/pi" ]; then
  echo "installing $pi_package@$pi_version into $PI_PREFIX"
  mkdir -p "$PI_PREFIX"
  npm install --prefix "$PI_PREFIX" --no-audit --no-fund --loglevel=error "$pi_package@$pi_version"
fi
if [ "$(installed_version)" != "$pi_version" ]; then
  echo "pi-interop: npm left no $pi_package@$pi_version in $PI_PREFIX" >&2
  exit 1
fi

work_dir="$(mktemp -d "${TMPDIR:-/tmp}/reins-pi-interop.XXXXXX")"
trap 'rm -rf "$work_dir"' EXIT
REINS_BIN="$(realpath "$REINS_BIN")" SCRIPTED_LLM_BIN="$(realpath "$SCRIPTED_LLM_BIN")" \
  PI_BIN="$PI_PREFIX/node_modules/.bin/pi" PI_PACKAGE_DIR="$package_dir" WORK_DIR="$work_dir" \
  timeout 300 node "$here/check.mjs"
