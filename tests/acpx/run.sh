#!/usr/bin/env bash
# `reins acp` driven by acpx (npm `acpx`, the headless ACP client), against scripted-llm: a prompt,
# an edit allowed and one rejected, a command in acpx's terminal, a cancel, and a session resumed
# in a new agent process. acpx is installed with npm into ${XDG_CACHE_HOME:-~/.cache}/reins-bench
# when missing. Needs REINS_BIN, SCRIPTED_LLM_BIN, node, npm and python3.
set -euo pipefail
: "${REINS_BIN:?set REINS_BIN to the reins binary}"
: "${SCRIPTED_LLM_BIN:?set SCRIPTED_LLM_BIN to the scripted-llm binary}"
version=0.19.1
prefix="${XDG_CACHE_HOME:-$HOME/.cache}/reins-bench/acpx-$version"
if [ ! -x "$prefix/node_modules/.bin/acpx" ]; then
  echo "installing acpx $version into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" "acpx@$version" --no-audit --no-fund --loglevel=error >&2
fi
acpx_bin="$prefix/node_modules/.bin/acpx"
reins="$(realpath "$REINS_BIN")"

work="$(mktemp -d "${TMPDIR:-/tmp}/reins-acpx.XXXXXX")"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -n "${ACPX_KEEP_WORK_DIR:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/project" "$work/home"
printf 'one\n' >"$work/project/a.txt"
printf 'keep\n' >"$work/project/b.txt"
cat >"$work/script.json" <<'JSON'
[
  {"text": "Hello from reins."},
  {"toolCalls": [{"id": "c1", "name": "write", "arguments": {"path": "a.txt", "content": "two\n"}}]},
  {"text": "Wrote a.txt."},
  {"toolCalls": [{"id": "c2", "name": "write", "arguments": {"path": "b.txt", "content": "changed\n"}}]},
  {"text": "Left b.txt alone."},
  {"toolCalls": [{"id": "c3", "name": "bash", "arguments": {"command": "echo hi-from-the-terminal"}}]},
  {"text": "The terminal said hi."},
  {"text": "Once upon a time there was a story that goes on and on and on", "chunkChars": 4, "chunkDelayMs": 300},
  {"text": "Resumed after the cancel."}
]
JSON
"$(realpath "$SCRIPTED_LLM_BIN")" --script "$work/script.json" >"$work/url" 2>"$work/llm.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/url" ] && break; sleep 0.1; done
url="$(head -1 "$work/url")"

# acpx as a user runs it: the environment a client passes (no HOME of the workspace), the key and
# model in it; acpx's own state in a home of its own.
acpx() {
  (cd "$work/project" && env -i PATH="$PATH" HOME="$work/home" OPENAI_BASE_URL="$url" OPENAI_API_KEY=sk-acpx-test \
    REINS_MODEL=scripted-model timeout 60 "$acpx_bin" --agent "$reins acp" --cwd "$work/project" --ttl 1 "$@")
}
fail() { echo "acpx: $*" >&2; exit 1; }
# `check FILE PYTHON`: the JSON-RPC lines acpx printed (--format json) as `lines`, then PYTHON,
# which asserts.
check() {
  python3 - "$1" "$2" <<'PY'
import json, sys
lines = []
for line in open(sys.argv[1]):
    try:
        lines.append(json.loads(line))
    except ValueError:
        pass
updates = [m["params"]["update"] for m in lines if m.get("method") == "session/update"]
text = "".join(u["content"].get("text", "") for u in updates if u["sessionUpdate"] == "agent_message_chunk")
results = [m["result"] for m in lines if "result" in m]
exec(sys.argv[2])
PY
}

# 1. A prompt, streamed, with the context's usage.
acpx --format json exec "say hello" >"$work/1.json" 2>"$work/1.err" || fail "exec failed: $(cat "$work/1.err")"
check "$work/1.json" '
assert text == "Hello from reins.", text
assert any(u["sessionUpdate"] == "usage_update" and u["used"] > 0 for u in updates), updates
assert {"stopReason": "end_turn"} in results, results'

# 2. An edit allowed: acpx is asked (the call says pending first) and the file changes.
acpx --approve-all --format json exec "write a.txt" >"$work/2.json" 2>"$work/2.err" || fail "allowed edit: $(cat "$work/2.err")"
check "$work/2.json" '
calls = [u for u in updates if u["sessionUpdate"] == "tool_call"]
assert calls and calls[0]["status"] == "pending", calls
assert any(m.get("method") == "session/request_permission" for m in lines), "never asked"'
[ "$(cat "$work/project/a.txt")" = "two" ] || fail "a.txt was not written"

# 3. An edit rejected: nothing changes, and the call ends failed.
# (acpx exits non-zero when it denied something.)
acpx --deny-all --format json exec "write b.txt" >"$work/3.json" 2>"$work/3.err" || true
check "$work/3.json" '
assert any(u.get("toolCallId") == "c2" and u.get("status") == "failed" for u in updates), updates
assert text == "Left b.txt alone.", text'
[ "$(cat "$work/project/b.txt")" = "keep" ] || fail "b.txt was changed"

# 4. A command in acpx's terminal: the terminal runs the user's command (the sandbox in one
# variable), and its output reaches the model.
acpx --approve-all --format json exec "run it" >"$work/4.json" 2>"$work/4.err" || fail "terminal: $(cat "$work/4.err")"
check "$work/4.json" '
created = [m["params"] for m in lines if m.get("method") == "terminal/create"]
assert created and created[0]["args"] == ["sandbox-exec", "--", "bash", "-c", "echo hi-from-the-terminal"], created
assert [v["name"] for v in created[0]["env"]] == ["REINS_SANDBOX_POLICY"], created
ended = [u for u in updates if u.get("toolCallId") == "c3" and u.get("status") == "completed"]
assert ended and "hi-from-the-terminal" in json.dumps(ended[-1]), updates'

# 5. A cancel: a persistent session, a prompt cancelled while the answer streams.
acpx sessions new >"$work/5-new.out" 2>&1 || fail "sessions new: $(cat "$work/5-new.out")"
acpx --format json "tell a long story" >"$work/5.json" 2>"$work/5.err" &
prompt_pid=$!
for _ in $(seq 200); do grep -q '"agent_message_chunk"' "$work/5.json" 2>/dev/null && break; sleep 0.1; done
acpx cancel >"$work/5-cancel.out" 2>&1 || fail "cancel: $(cat "$work/5-cancel.out")"
wait "$prompt_pid" || true
check "$work/5.json" '
assert {"stopReason": "cancelled"} in results, results
assert text.startswith("Once") and text != "Once upon a time there was a story that goes on and on and on", text'

# 6. The session resumed in a new agent process (the last one left after its idle time): acpx
# loads it (and shows none of the replay), and the prompt goes on with a context that grew.
sleep 2
acpx --format json "and now?" >"$work/6.json" 2>"$work/6.err" || fail "resume: $(cat "$work/6.err")"
check "$work/6.json" '
assert any(m.get("method") == "session/load" for m in lines), "not loaded"
assert text == "Resumed after the cancel.", text
before = [json.loads(l) for l in open(sys.argv[1].replace("6.json", "5.json")) if l.startswith("{")]
used = lambda ms: [m["params"]["update"]["used"] for m in ms if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "usage_update"]
assert used(before) and used(lines)[-1] > used(before)[-1] > 0, (used(before), used(lines))'
echo "acpx: ok"
