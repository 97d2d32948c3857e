// An ACP client that no one here wrote drives the real `reins acp`: the official TypeScript SDK
// @agentclientprotocol/sdk (client role) as a small scripted editor. It serves its own buffers
// through fs/read_text_file (they differ from the disk, as unsaved buffers do) and takes writes
// through fs/write_text_file, answers permission requests as a user would, and checks what reins
// streams. The model is scripted-llm behind a proxy that records each chat request, so "the
// model saw it" is checked on what reins really sent.
//
// The scenario, one session across two reins processes:
//   1. initialize: protocol 1, loadSession, embedded context, MCP over stdio and http
//   2. session/new with the reference MCP server (server-everything) over stdio and over HTTP:
//      the tools of both reach the model
//   3. a prompt whose `read` goes through fs/read_text_file and sees the unsaved buffer
//   4. an edit: session/request_permission, allowed; written through fs/write_text_file, with
//      its diff block (whole old and new text) in tool_call_update; the disk is left to the editor
//   5. an edit rejected: nothing is written, and the model is told the user rejected it
//   6. a command allowed, run in the client's terminal (terminal/create, wait_for_exit, output,
//      release): the tool call shows the terminal and the model gets its output
//   7. session/cancel while the model streams: the prompt answers `cancelled` promptly
//   8. stdin closed: reins exits cleanly; a new process's session/load replays the conversation
//      (user and agent chunks, tool calls with their final status and diff) before answering, and
//      a prompt there continues it with the whole history; session/list shows it
// Run by run.sh, which sets REINS_BIN, SCRIPTED_LLM_BIN, ACP_NODE_MODULES, MCP_NODE_MODULES, WORK_DIR.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { Readable, Transform, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const { REINS_BIN, SCRIPTED_LLM_BIN, ACP_NODE_MODULES, MCP_NODE_MODULES, WORK_DIR } = process.env;
for (const [name, value] of Object.entries({ REINS_BIN, SCRIPTED_LLM_BIN, ACP_NODE_MODULES, MCP_NODE_MODULES, WORK_DIR })) {
  if (!value) throw new Error(`set ${name} (run tests/acp/run.sh)`);
}
const require = createRequire(path.join(ACP_NODE_MODULES, "package.json"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
const everythingJs = path.join(MCP_NODE_MODULES, "@modelcontextprotocol/server-everything/dist/index.js");

/** Whether reins's stdout must show the whole replay before the answer to session/load (see there). */
const REPLAY_BEFORE_LOAD_ANSWER = true;
/** A step that takes longer than this is stuck. */
const STEP_TIMEOUT_MS = 20_000;
/** The bound for a cancelled prompt to answer, with a scripted model: well under 1 s. */
const CANCEL_BOUND_MS = 1_000;

const workspace = path.join(WORK_DIR, "workspace");
const reinsHome = path.join(WORK_DIR, "reins-home");
const NOTES_ON_DISK = "The word on disk is apple.\n";
const NOTES_IN_BUFFER = "The word in the buffer is banana.\n";
const LIB_BEFORE = "fn answer() -> u32 {\n    41\n}\n";
const LIB_AFTER = "fn answer() -> u32 {\n    42\n}\n";

const PROMPTS = {
  read: "what does notes.txt say?",
  edit: "fix the answer in src/lib.rs",
  rejected: "rename answer to solution",
  terminal: "say hello in the terminal",
  cancelled: "count to a million, slowly",
  afterLoad: "what did we do so far?",
};
/** The model's side, in the order the prompts below ask for it. */
const REPLIES = [
  { toolCalls: [{ id: "call_read", name: "read", arguments: { path: "notes.txt" } }] },
  { text: "The buffer says banana." },
  { toolCalls: [{ id: "call_edit", name: "edit", arguments: { path: "src/lib.rs", edits: [{ oldText: "41", newText: "42" }] } }] },
  { text: "Fixed: it returns 42." },
  { toolCalls: [{ id: "call_rename", name: "edit", arguments: { path: "src/lib.rs", edits: [{ oldText: "fn answer", newText: "fn solution" }] } }] },
  { text: "Understood, I left the name alone." },
  { toolCalls: [{ id: "call_bash", name: "bash", arguments: { command: "echo hello from the terminal; exit 3" } }] },
  { text: "The terminal said hello and exited with 3." },
  // Streams text without end until the client hangs up: only a cancel ends this turn.
  { fault: { kind: "endless", everyMs: 20 } },
  { text: "We read notes.txt and fixed the answer." },
];

/** Every process started here, killed when this script ends however it ends. */
const children = [];
process.on("exit", () => children.forEach((child) => child.kill("SIGKILL")));
/** The agents started, whose stderr is shown when a check fails. */
const agents = [];

// ---- the model server behind a recording proxy ----

async function startModel() {
  const script = path.join(WORK_DIR, "script.json");
  fs.writeFileSync(script, JSON.stringify(REPLIES));
  const child = spawn(SCRIPTED_LLM_BIN, ["--script", script], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  const upstream = new URL(
    await new Promise((resolve, reject) => {
      readline.createInterface({ input: child.stdout }).once("line", resolve);
      child.once("exit", (code) => reject(new Error(`scripted-llm exited (${code}) before printing its URL`)));
    }),
  );
  const requests = [];
  const proxy = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.url.endsWith("/chat/completions")) requests.push(JSON.parse(body.toString("utf8")));
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } },
        (up) => {
          res.writeHead(up.statusCode, up.headers);
          up.pipe(res);
        },
      );
      forward.on("error", (err) => res.destroy(err));
      res.on("close", () => forward.destroy());
      forward.end(body);
    });
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${proxy.address().port}${upstream.pathname.replace(/\/$/, "")}`,
    requests,
    stop: () => {
      proxy.closeAllConnections();
      proxy.close();
      child.kill();
    },
  };
}

/** server-everything over streamable HTTP on a free port; resolves with its MCP URL once it listens. */
async function startHttpEverything() {
  const port = await new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const child = spawn("node", [everythingJs, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "ignore"] });
  children.push(child);
  for (let tries = 0; tries < 400; tries++) {
    const up = await new Promise((resolve) => {
      const socket = net.connect(port, "127.0.0.1", () => resolve(socket.end() && true));
      socket.on("error", () => resolve(false));
    });
    if (up) return `http://127.0.0.1:${port}/mcp`;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`server-everything did not listen on ${port}`);
}

// ---- the editor: buffers, files, permission answers ----

/** What the editor holds: open buffers (unsaved text) and what each request to it asked. */
const editor = {
  buffers: new Map(),
  reads: [],
  writes: [],
  permissions: [],
  /** The terminals the agent created, by id: the request, the process, its output, its exit. */
  terminals: new Map(),
  /** How the user answers the next permission request: an option kind, or "cancelled". */
  answer: "allow_once",
  /** Every session/update, in arrival order, with the time it came. */
  updates: [],
};

function inWorkspace(file) {
  assert.ok(path.isAbsolute(file), `the agent sent a relative path: ${file}`);
  assert.ok(file.startsWith(workspace + path.sep), `the agent sent a path outside the workspace: ${file}`);
  return file;
}

function newClient() {
  return acp
    .client({ name: "reins-acp-test" })
    .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
      editor.reads.push(params);
      const file = inWorkspace(params.path);
      const content = editor.buffers.get(file) ?? fs.readFileSync(file, "utf8");
      return { content };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
      editor.writes.push(params);
      // An editor writes into its buffer; saving is the user's business.
      editor.buffers.set(inWorkspace(params.path), params.content);
      return {};
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      editor.permissions.push(params);
      if (editor.answer === "cancelled") return { outcome: { outcome: "cancelled" } };
      const option = params.options.find((o) => o.kind === editor.answer);
      assert.ok(option, `no ${editor.answer} option among ${JSON.stringify(params.options)}`);
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    })
    .onRequest(acp.methods.client.terminal.create, ({ params }) => {
      const terminalId = `term-${editor.terminals.size + 1}`;
      const env = Object.fromEntries((params.env ?? []).map(({ name, value }) => [name, value]));
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? workspace, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
      children.push(child);
      const terminal = { params, output: "", exit: null, released: false, killed: false };
      terminal.exited = new Promise((resolve) =>
        child.once("exit", (code, signal) => resolve((terminal.exit = { exitCode: code, signal: signal ?? null }))),
      );
      terminal.child = child;
      child.stdout.on("data", (data) => (terminal.output += data));
      child.stderr.on("data", (data) => (terminal.output += data));
      editor.terminals.set(terminalId, terminal);
      return { terminalId };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => editor.terminals.get(params.terminalId).exited)
    .onRequest(acp.methods.client.terminal.output, ({ params }) => {
      const terminal = editor.terminals.get(params.terminalId);
      return { output: terminal.output, truncated: false, exitStatus: terminal.exit };
    })
    .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
      const terminal = editor.terminals.get(params.terminalId);
      terminal.killed = true;
      terminal.child.kill();
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, ({ params }) => {
      const terminal = editor.terminals.get(params.terminalId);
      terminal.released = true;
      if (terminal.exit === null) terminal.child.kill();
      return {};
    })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      editor.updates.push({ at: performance.now(), ...params });
    });
}

/** `reins acp` with its stdout checked line by line (only JSON-RPC frames may appear there). */
function startReins(model) {
  const env = { ...process.env, REINS_HOME: reinsHome, OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-acp-test", REINS_MODEL: "scripted-model" };
  delete env.REINS_LOG;
  const child = spawn(REINS_BIN, ["acp"], { cwd: workspace, env, stdio: ["pipe", "pipe", "pipe"] });
  children.push(child);
  const agent = { child, order: [], updatesSeen: 0, answers: [], stderr: "", badLines: [], exited: new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal }))) };
  child.stderr.on("data", (data) => (agent.stderr += data));
  let pending = "";
  const checked = new Transform({
    transform(chunk, _encoding, done) {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const line of lines) {
        try {
          const message = JSON.parse(line);
          if (message.jsonrpc !== "2.0") agent.badLines.push(line);
          agent.order.push(message.method ? `${message.method}:${message.params?.update?.sessionUpdate ?? ""}` : `answer ${message.id}`);
          if (message.method === "session/update") agent.updatesSeen += 1;
          if (!message.method) agent.answers.push({ id: message.id, updatesBefore: agent.updatesSeen });
        } catch {
          agent.badLines.push(line);
        }
      }
      done(null, chunk);
    },
  });
  child.stdout.pipe(checked);
  agents.push(agent);
  agent.stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(checked));
  return agent;
}

/**
 * A request to the agent, answered within STEP_TIMEOUT_MS. The SDK resolves an answer as soon as
 * it reads it, while the notifications read before it still go through its async handler chain:
 * waiting one turn of the event loop lets those land in `editor.updates` first.
 */
async function call(ctx, method, params, what) {
  const result = await within(STEP_TIMEOUT_MS, ctx.request(method, params), what);
  await new Promise((resolve) => setImmediate(resolve));
  return result;
}

function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// ---- small readers of what reins streamed ----

const updatesOf = (sessionId, from = 0) => editor.updates.slice(from).filter((u) => u.sessionId === sessionId).map((u) => u.update);
const textOf = (updates, kind) => updates.filter((u) => u.sessionUpdate === kind && u.content?.type === "text").map((u) => u.content.text).join("");
/** Each tool call's first notification merged with its updates, in first-seen order. */
function toolCalls(updates) {
  const calls = new Map();
  for (const u of updates) {
    if (u.sessionUpdate === "tool_call") calls.set(u.toolCallId, { ...u, updates: [] });
    if (u.sessionUpdate === "tool_call_update") {
      const call = calls.get(u.toolCallId);
      assert.ok(call, `tool_call_update before its tool_call: ${JSON.stringify(u)}`);
      call.updates.push(u);
      for (const [key, value] of Object.entries(u)) if (value !== undefined && value !== null && key !== "sessionUpdate") call[key] = value;
    }
  }
  return [...calls.values()];
}
const requestText = (request) => JSON.stringify(request.messages);
/** The tool results a chat request carries, last one last. */
const toolResults = (request) => request.messages.filter((m) => m.role === "tool").map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

// ---- the scenario ----

fs.mkdirSync(path.join(workspace, "src"), { recursive: true });
fs.mkdirSync(reinsHome, { recursive: true });
fs.writeFileSync(path.join(workspace, "notes.txt"), NOTES_ON_DISK);
fs.writeFileSync(path.join(workspace, "src/lib.rs"), LIB_BEFORE);
editor.buffers.set(path.join(workspace, "notes.txt"), NOTES_IN_BUFFER);

try {
  const model = await startModel();
  const step = (name) => console.log(`acp: ${name}`);
  let sessionId;
  const first = startReins(model);
  try {
    await newClient().connectWith(first.stream, async (ctx) => {
      step("initialize");
      const init = await call(ctx, acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
        clientInfo: { name: "reins-acp-test", version: "1.0.0" },
      }, "initialize");
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentCapabilities.loadSession, true, "loadSession is advertised");
      assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true, "embedded context is advertised");
      assert.equal(init.agentCapabilities.mcpCapabilities.http, true, "MCP over http is advertised");
      assert.equal(init.agentInfo?.name, "reins");
      assert.deepEqual(init.authMethods ?? [], [], "no authentication is required");

      step("session/new with server-everything over stdio and HTTP");
      const httpUrl = await startHttpEverything();
      const created = await call(ctx, acp.methods.agent.session.new, {
        cwd: workspace,
        mcpServers: [
          { name: "everything", command: "node", args: [everythingJs, "stdio"], env: [] },
          { type: "http", name: "web", url: httpUrl, headers: [] },
        ],
      }, "session/new");
      sessionId = created.sessionId;
      assert.match(sessionId, /\S/);

      step("a prompt that reads an unsaved buffer");
      let mark = editor.updates.length;
      const read = await call(ctx, acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: PROMPTS.read }] }, "prompt (read)");
      assert.equal(read.stopReason, "end_turn");
      assert.ok(editor.reads.some((r) => r.path === path.join(workspace, "notes.txt") && r.sessionId === sessionId), "notes.txt was read through fs/read_text_file");
      assert.equal(model.requests.length, 2, "one model call for the read, one for the answer");
      const tools = model.requests[0].tools.map((t) => t.function.name);
      assert.ok(tools.includes("mcp__everything__echo"), `the stdio MCP server's tools reach the model: ${tools}`);
      assert.ok(tools.includes("mcp__web__echo"), `the HTTP MCP server's tools reach the model: ${tools}`);
      const [readResult] = toolResults(model.requests[1]);
      assert.ok(readResult.includes("banana") && !readResult.includes("apple"), `the model saw the buffer, not the disk: ${readResult}`);
      let updates = updatesOf(sessionId, mark);
      assert.equal(textOf(updates, "agent_message_chunk"), "The buffer says banana.");
      const [readCall] = toolCalls(updates);
      assert.equal(readCall.kind, "read");
      assert.equal(readCall.status, "completed");
      assert.ok(readCall.locations?.some((l) => l.path === path.join(workspace, "notes.txt")), `the read names its file: ${JSON.stringify(readCall.locations)}`);
      assert.deepEqual(readCall.rawInput, { path: "notes.txt" });

      step("an edit allowed, written through fs/write_text_file");
      mark = editor.updates.length;
      editor.answer = "allow_once";
      const edit = await call(ctx, acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: PROMPTS.edit }] }, "prompt (edit)");
      assert.equal(edit.stopReason, "end_turn");
      const libPath = path.join(workspace, "src/lib.rs");
      assert.equal(editor.permissions.length, 1, "the edit asked for permission");
      const asked = editor.permissions[0];
      assert.equal(asked.sessionId, sessionId);
      assert.deepEqual(asked.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
      assert.equal(asked.toolCall.toolCallId, "call_edit");
      assert.deepEqual(editor.writes.map((w) => [w.path, w.content]), [[libPath, LIB_AFTER]], "the edit was written through fs/write_text_file");
      assert.equal(fs.readFileSync(libPath, "utf8"), LIB_BEFORE, "reins left the disk to the editor");
      updates = updatesOf(sessionId, mark);
      const [editCall] = toolCalls(updates);
      assert.equal(editCall.kind, "edit");
      assert.equal(editCall.status, "completed");
      const diff = editCall.updates.flatMap((u) => u.content ?? []).find((c) => c.type === "diff");
      assert.ok(diff, `tool_call_update carries a diff block: ${JSON.stringify(editCall.updates)}`);
      assert.deepEqual([diff.path, diff.oldText, diff.newText], [libPath, LIB_BEFORE, LIB_AFTER], "the diff has the whole old and new text");
      assert.equal(textOf(updates, "agent_message_chunk"), "Fixed: it returns 42.");

      step("an edit rejected");
      mark = editor.updates.length;
      editor.answer = "reject_once";
      const rejected = await call(ctx, acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: PROMPTS.rejected }] }, "prompt (rejected)");
      assert.equal(rejected.stopReason, "end_turn");
      assert.equal(editor.permissions.length, 2, "the second edit asked too");
      assert.equal(editor.writes.length, 1, "nothing was written for the rejected edit");
      assert.equal(editor.buffers.get(libPath), LIB_AFTER);
      const afterReject = model.requests.at(-1);
      const rejection = toolResults(afterReject).at(-1);
      assert.match(rejection, /rejected/i, `the model is told the user rejected it: ${rejection}`);
      const [rejectedCall] = toolCalls(updatesOf(sessionId, mark));
      assert.equal(rejectedCall.status, "failed", "a rejected call ends failed");
      assert.equal(textOf(updatesOf(sessionId, mark), "agent_message_chunk"), "Understood, I left the name alone.");

      step("a command run in the client's terminal");
      mark = editor.updates.length;
      editor.answer = "allow_once";
      const ran = await call(ctx, acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: PROMPTS.terminal }] }, "prompt (terminal)");
      assert.equal(ran.stopReason, "end_turn");
      assert.equal(editor.permissions.at(-1).toolCall.toolCallId, "call_bash", "the command asked first");
      assert.equal(editor.terminals.size, 1, `the command ran in one client terminal: ${JSON.stringify(toolCalls(updatesOf(sessionId, mark)))}`);
      const [[terminalId, terminal]] = editor.terminals;
      assert.equal(terminal.params.sessionId, sessionId);
      assert.equal(terminal.exit?.exitCode, 3);
      assert.ok(terminal.output.includes("hello from the terminal"), `the terminal's output: ${terminal.output}`);
      assert.ok(terminal.released, "the terminal was released");
      assert.ok(!JSON.stringify(terminal.params).includes("sk-acp-test"), "no key travels to the terminal");
      const [bashCall] = toolCalls(updatesOf(sessionId, mark));
      assert.equal(bashCall.kind, "execute");
      assert.equal(bashCall.status, "failed", "exit 3 fails the call");
      const shown = [...(bashCall.content ?? []), ...bashCall.updates.flatMap((u) => u.content ?? [])];
      assert.ok(shown.some((c) => c.type === "terminal" && c.terminalId === terminalId), `the tool call shows the terminal: ${JSON.stringify(shown)}`);
      const bashResult = toolResults(model.requests.at(-1)).at(-1);
      assert.ok(bashResult.includes("hello from the terminal") && bashResult.includes("3"), `the model got the output and the exit status: ${bashResult}`);

      step("session/cancel while the model streams");
      mark = editor.updates.length;
      const streaming = ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: PROMPTS.cancelled }] });
      await within(STEP_TIMEOUT_MS, (async () => {
        while (!updatesOf(sessionId, mark).some((u) => u.sessionUpdate === "agent_message_chunk")) await new Promise((r) => setTimeout(r, 5));
      })(), "the first chunk of the endless answer");
      const cancelledAt = performance.now();
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      const cancelled = await within(STEP_TIMEOUT_MS, streaming, "prompt (cancelled)");
      const took = performance.now() - cancelledAt;
      assert.equal(cancelled.stopReason, "cancelled");
      assert.ok(took < CANCEL_BOUND_MS, `the cancelled prompt answered after ${took.toFixed(0)} ms`);
      step(`  cancelled prompt answered ${took.toFixed(0)} ms after session/cancel`);
    });
  } finally {
    first.child.stdin.end();
  }

  step("stdin closed: reins exits cleanly");
  const exit = await within(STEP_TIMEOUT_MS, first.exited, "reins exit after stdin closed");
  assert.deepEqual(exit, { code: 0, signal: null }, `reins exited with ${JSON.stringify(exit)}; stderr:\n${first.stderr}`);
  assert.deepEqual(first.badLines, [], "stdout carries only JSON-RPC frames");
  assert.equal(first.stderr, "", "a default setup prints nothing on stderr");

  step("session/load in a new process");
  const before = editor.updates.length;
  const second = startReins(model);
  try {
    await newClient().connectWith(second.stream, async (ctx) => {
      await call(ctx, acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
      }, "initialize (2)");
      const loaded = await call(ctx, acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] }, "session/load");
      assert.ok(loaded !== undefined);
      // ACP: the agent streams the whole conversation, then answers session/load (checked on
      // reins's stdout as written, not on the SDK's dispatch, which may hand notifications on
      // later: the client then waits for them).
      const loadAnswer = second.answers.at(-1);
      if (REPLAY_BEFORE_LOAD_ANSWER) {
        assert.ok(loadAnswer.updatesBefore > 0 && loadAnswer.updatesBefore === second.updatesSeen, `session/load was answered before its replay: ${second.order.join(", ")}`);
      }
      await within(STEP_TIMEOUT_MS, (async () => {
        while (!updatesOf(sessionId, before).some((u) => u.sessionUpdate === "user_message_chunk" && u.content.text.includes(PROMPTS.cancelled))) await new Promise((r) => setTimeout(r, 5));
      })(), "the replay of the last prompt");
      const replay = updatesOf(sessionId, before);
      const users = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text).join("\n");
      for (const prompt of [PROMPTS.read, PROMPTS.edit, PROMPTS.rejected, PROMPTS.cancelled]) {
        assert.ok(users.includes(prompt), `the replay has the user's ${JSON.stringify(prompt)}: ${users}`);
      }
      const order = [PROMPTS.read, PROMPTS.edit, PROMPTS.rejected, PROMPTS.cancelled].map((p) => users.indexOf(p));
      assert.deepEqual(order, [...order].sort((a, b) => a - b), "in order");
      const agentText = textOf(replay, "agent_message_chunk");
      for (const answer of ["The buffer says banana.", "Fixed: it returns 42.", "Understood, I left the name alone."]) {
        assert.ok(agentText.includes(answer), `the replay has the answer ${JSON.stringify(answer)}: ${agentText}`);
      }
      const calls = toolCalls(replay);
      const byId = Object.fromEntries(calls.map((c) => [c.toolCallId, c]));
      assert.equal(byId.call_read?.status, "completed", `the read replays completed: ${JSON.stringify(byId.call_read)}`);
      assert.equal(byId.call_edit?.status, "completed");
      assert.equal(byId.call_rename?.status, "failed");
      assert.equal(byId.call_bash?.status, "failed");
      // What the edit did comes back with it: the live run's diff block (whole old and new text,
      // from the session's record) and its text result.
      const replayedContent = [...(byId.call_edit.content ?? []), ...byId.call_edit.updates.flatMap((u) => u.content ?? [])];
      const replayedDiff = replayedContent.find((c) => c.type === "diff");
      assert.ok(replayedDiff, `the replayed edit carries its diff block: ${JSON.stringify(replayedContent)}`);
      const libPath = path.join(workspace, "src/lib.rs");
      assert.deepEqual([replayedDiff.path, replayedDiff.oldText, replayedDiff.newText], [libPath, LIB_BEFORE, LIB_AFTER], "the replayed diff is the live one");
      assert.ok(JSON.stringify(replayedContent).includes("+    42"), `the replayed edit says what it changed: ${JSON.stringify(replayedContent)}`);

      const listed = await call(ctx, acp.methods.agent.session.list, { cwd: workspace }, "session/list");
      const mine = listed.sessions.find((s) => s.sessionId === sessionId);
      assert.ok(mine, `session/list shows the session: ${JSON.stringify(listed)}`);
      assert.equal(mine.cwd, workspace);
      assert.equal(mine.title, PROMPTS.read, "titled by its first message");

      step("a prompt continues the loaded session");
      const calls_before = model.requests.length;
      const next = await call(ctx, acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: PROMPTS.afterLoad }] }, "prompt after load");
      assert.equal(next.stopReason, "end_turn");
      assert.equal(model.requests.length, calls_before + 1);
      const history = requestText(model.requests.at(-1));
      for (const prompt of [PROMPTS.read, PROMPTS.edit, PROMPTS.afterLoad]) assert.ok(history.includes(prompt), `the model sees ${prompt}`);
      assert.ok(history.includes("call_edit"), "and the tool calls");
    });
  } finally {
    second.child.stdin.end();
  }
  const exit2 = await within(STEP_TIMEOUT_MS, second.exited, "reins exit after stdin closed (2)");
  assert.deepEqual(exit2, { code: 0, signal: null }, `reins exited with ${JSON.stringify(exit2)}; stderr:\n${second.stderr}`);
  assert.deepEqual(second.badLines, [], "stdout carries only JSON-RPC frames");
  model.stop();
} catch (error) {
  console.error(error);
  agents.forEach((agent, n) => console.error(`reins acp (process ${n + 1}) stderr:\n${agent.stderr}\nstdout, in order: ${agent.order.join(", ")}`));
  process.exit(1);
}
console.log("acp: all checks passed");
// The HTTP MCP server would keep the event loop alive: end here (the exit hook kills it).
process.exit(0);
