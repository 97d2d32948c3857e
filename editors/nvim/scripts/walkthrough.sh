#!/usr/bin/env bash
# A guided tour of the Neovim plugin that needs no API key: Neovim runs under tmux against
# `reins lsp` and the scripted model server, and a driver types the commands while the top line of
# the file window says what happens. Attach to watch; the tour ends in a normal Neovim session.
#
#   editors/nvim/scripts/walkthrough.sh              # build, start, attach (Ctrl-b d detaches)
#   editors/nvim/scripts/walkthrough.sh --capture D  # no attach: save the screen of each step in D
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
capture=""
if [ "${1:-}" = "--capture" ]; then
  capture="$(mkdir -p "$2" && cd "$2" && pwd)"
fi

cd "$repo"
cargo build -q -p reins -p scripted-llm
target_dir="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)"
if ! command -v tmux >/dev/null 2>&1; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get install -y tmux
fi
nvim="$(bash "$here/find-nvim.sh")"

work="$(mktemp -d)"
mkdir -p "$work/project" "$work/home"
cat >"$work/project/math.lua" <<'LUA'
local M = {}

function M.add(a, b)
  return a + b
end

function M.sub(a, b)
  return a - b
end

return M
LUA
# What the model "answers", in order: an answer with a two-hunk edit, a remark, a second edit
# (rejected in the tour), and an acknowledgement.
cat >"$work/replies.json" <<'JSON'
[
  {"thinking": "The user asks about add and sub. Both are one-liners; I can make the argument order explicit.",
   "text": "`M.add` returns the sum of its arguments and `M.sub` their difference. Nothing is wrong, but the\norder of the operands can be made explicit. I will propose that.",
   "toolCalls": [{"id": "c1", "name": "edit", "arguments": {"path": "math.lua", "edits": [
     {"oldText": "  return a + b", "newText": "  -- addition commutes: b + a == a + b\n  return b + a"},
     {"oldText": "  return a - b", "newText": "  return -(b - a)"}]}}],
   "chunkChars": 3, "chunkDelayMs": 25},
  {"text": "Done: the first change is in, the second was rejected, so `M.sub` stays as it was.", "chunkChars": 3, "chunkDelayMs": 25},
  {"text": "I will also freeze the module.", "chunkChars": 3, "chunkDelayMs": 25,
   "toolCalls": [{"id": "c2", "name": "edit", "arguments": {"path": "math.lua", "edits": [
     {"oldText": "return M", "newText": "return setmetatable(M, { __newindex = error })"}]}}]},
  {"text": "Understood: the module stays a plain table.", "chunkChars": 3, "chunkDelayMs": 25}
]
JSON

"$target_dir/debug/scripted-llm" --script "$work/replies.json" >"$work/llm.out" 2>"$work/llm.err" &
llm_pid=$!
session="reins-walkthrough-$$"
cleanup() {
  kill "$llm_pid" 2>/dev/null || true
  if [ -n "$capture" ]; then tmux kill-session -t "$session" 2>/dev/null || true; fi
}
trap cleanup EXIT
for _ in $(seq 100); do
  [ -s "$work/llm.out" ] && break
  sleep 0.05
done
url="$(head -n 1 "$work/llm.out")"

tmux new-session -d -s "$session" -x 150 -y 42 -c "$work/project" \
  env REINS_HOME="$work/home" REINS_BIN="$target_dir/debug/reins" REINS_WALK_URL="$url" \
  REINS_WALK_CAPTURE="$capture" REINS_PLUGIN="$repo/editors/nvim" TERM=xterm-256color \
  "$nvim" -u "$here/walkthrough.lua" -i NONE -n math.lua

if [ -n "$capture" ]; then
  # The driver writes `done` into the capture directory at the end of the tour.
  for _ in $(seq 600); do
    [ -e "$capture/done" ] && break
    sleep 0.2
  done
  ls "$capture"
elif [ -t 1 ]; then
  tmux attach -t "$session"
else
  trap - EXIT
  echo "walkthrough running in tmux session $session: tmux attach -t $session"
  echo "(the scripted model server is process $llm_pid; stop it when done)"
fi
