#!/usr/bin/env bash
# Prints the path of an Emacs 30, so that tests/emacs runs on Emacs 30 as well as on the
# machine's default Emacs: `emacs` on PATH when it is 30 or newer, else Debian
# bookworm-backports' Emacs 30, unpacked (not installed: it would replace the default Emacs) into
# ${XDG_CACHE_HOME:-~/.cache}/reins/emacs-30 with a launcher that points it at its own files.
# The first time, it adds bookworm-backports beside the machine's bookworm source (same mirror)
# and installs the libraries Emacs 30 needs with apt.
set -euo pipefail

major() {
  "$1" -Q --batch --eval '(princ emacs-major-version)' 2>/dev/null || echo 0
}

if command -v emacs >/dev/null 2>&1 && [ "$(major emacs)" -ge 30 ]; then
  command -v emacs
  exit 0
fi

prefix="${XDG_CACHE_HOME:-$HOME/.cache}/reins/emacs-30"
launcher="$prefix/bin/emacs"
if [ -x "$launcher" ] && [ "$(major "$launcher")" = 30 ]; then
  echo "$launcher"
  exit 0
fi

sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi

policy="$(apt-cache policy 2>/dev/null || true)"
if ! grep -q 'bookworm-backports' <<<"$policy"; then
  # The mirror of the bookworm suite, in the deb822 or the one-line format.
  uri="$(awk '/^URIs:/ { u = $2 } /^Suites:/ && / bookworm( |$)/ { print u; exit }' \
    /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
  if [ -z "$uri" ]; then
    uri="$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)"
  fi
  printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "${uri:-http://deb.debian.org/debian}" | $sudo tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
  $sudo apt-get update >&2
fi

# Emacs 30's shared libraries, which sit beside Emacs 28's without replacing anything.
libraries="$(apt-cache depends emacs-nox/bookworm-backports | awk '$1 == "Depends:" && $2 !~ /^emacs/ && $2 !~ /^</ { print $2 }')"
# shellcheck disable=SC2086
$sudo apt-get install -y --no-install-recommends $libraries >&2

downloads="$(mktemp -d)"
trap 'rm -rf "$downloads"' EXIT
(cd "$downloads" && apt-get download emacs-nox/bookworm-backports emacs-common/bookworm-backports \
  emacs-bin-common/bookworm-backports >&2)
rm -rf "$prefix"
mkdir -p "$prefix/bin"
for deb in "$downloads"/*.deb; do
  dpkg -x "$deb" "$prefix/root"
done

root="$prefix/root"
version="$(ls "$root/usr/share/emacs" | grep -E '^[0-9]+\.[0-9]+$' | head -1)"
dump="$(ls "$root"/usr/libexec/emacs/"$version"/*/*.pdmp | head -1)"
share="$root/usr/share/emacs/$version"
cat >"$launcher" <<EOF
#!/bin/sh
# Emacs $version unpacked from bookworm-backports by tests/emacs/find-emacs30.sh.
EMACSDATA="$share/etc" EMACSDOC="$share/etc" EMACSLOADPATH="$share/lisp" \\
  EMACSPATH="$(dirname "$dump")" exec "$root/usr/bin/emacs-nox" --dump-file="$dump" "\$@"
EOF
chmod +x "$launcher"
if [ "$(major "$launcher")" != 30 ]; then
  echo "find-emacs30.sh: the unpacked Emacs does not run: $launcher" >&2
  exit 1
fi
echo "$launcher"
