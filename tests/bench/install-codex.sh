#!/usr/bin/env bash
# Installs OpenAI's Codex CLI VERSION (npm `@openai/codex`, which brings the native binary of this
# platform as an optional dependency) into ${XDG_CACHE_HOME:-~/.cache}/reins-bench/ unless it is
# there, and prints the path of that native binary: the bench runs it directly, as a standalone
# install would, so Node's start is not counted against Codex. Progress goes to stderr.
set -euo pipefail
version="${1:?usage: install-codex.sh VERSION}"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "install-codex: $tool is not installed" >&2; exit 1; }
done
prefix="${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench/codex-$version"
manifest="$prefix/node_modules/@openai/codex/package.json"
installed() { node -e 'try { console.log(require(process.argv[1]).version) } catch { }' "$manifest"; }
if [ "$(installed)" != "$version" ]; then
  echo "installing @openai/codex@$version into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "@openai/codex@$version" >&2
fi
binary="$(find "$prefix/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f | head -n 1)"
if [ "$(installed)" != "$version" ] || [ -z "$binary" ]; then
  echo "install-codex: npm left no @openai/codex@$version with a native binary in $prefix" >&2
  exit 1
fi
echo "$binary"
