#!/usr/bin/env bash
# Installs the language servers the end-to-end tests of the `lsp` and `rename` tools drive —
# pyright and typescript-language-server (with typescript) from npm into LANGSERVERS_PREFIX, and
# clangd from Debian — when they are not there yet; then prints LANGSERVERS_PREFIX. Tests find
#   $LANGSERVERS_PREFIX/node_modules/.bin/pyright-langserver
#   $LANGSERVERS_PREFIX/node_modules/.bin/typescript-language-server
# LANGSERVERS_PREFIX defaults to ${XDG_CACHE_HOME:-~/.cache}/reins-bench/langservers-VERSIONS.
set -euo pipefail
pyright_version=1.1.414
tsls_version=5.1.3
typescript_version=5.9.3
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "langservers: $tool is not installed" >&2; exit 1; }
done
: "${LANGSERVERS_PREFIX:=${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench/langservers-$pyright_version-$tsls_version}"
mkdir -p "$LANGSERVERS_PREFIX"

version_of() {
  node -e 'try { console.log(require(process.argv[1]).version) } catch { }' \
    "$LANGSERVERS_PREFIX/node_modules/$1/package.json"
}
installed() {
  [ "$(version_of pyright)" = "$pyright_version" ] &&
    [ "$(version_of typescript-language-server)" = "$tsls_version" ] &&
    [ "$(version_of typescript)" = "$typescript_version" ]
}
if ! installed; then
  # Test binaries may ask at the same time: one installs, the others wait for it.
  exec 9>"$LANGSERVERS_PREFIX/.install-lock"
  flock 9
  if ! installed; then
    echo "installing pyright@$pyright_version, typescript-language-server@$tsls_version into $LANGSERVERS_PREFIX" >&2
    npm install --prefix "$LANGSERVERS_PREFIX" --no-audit --no-fund --loglevel=error \
      "pyright@$pyright_version" "typescript-language-server@$tsls_version" "typescript@$typescript_version" >&2
  fi
  installed || { echo "langservers: npm left no pyright $pyright_version in $LANGSERVERS_PREFIX" >&2; exit 1; }
fi
if ! command -v clangd >/dev/null; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get install -y clangd >&2 || { $sudo apt-get update >&2 && $sudo apt-get install -y clangd >&2; }
fi
echo "$LANGSERVERS_PREFIX"
