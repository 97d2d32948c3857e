// Checks that a session file written by `reins run` opens in the pi coding agent (0.73.1 or 1.6): pi's own
// SessionManager rebuilds the conversation reins would send, and `pi -p --session FILE` continues
// it with the same history (tool call and result, same ids) that reins itself sends — also for a
// session holding recorded file changes (custom entries) and a checkout's move of the leaf.
//
// Every model request (reins's and pi's) goes through a small proxy that records it and forwards
// it to scripted-llm, so "what reins would send" is the request reins did send, not a guess.
// Run by run.sh, which sets REINS_BIN, SCRIPTED_LLM_BIN, PI_BIN, PI_PACKAGE_DIR and WORK_DIR.
import { spawn } from "node:child_process";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import readline from "node:readline";

const { REINS_BIN, SCRIPTED_LLM_BIN, PI_BIN, PI_PACKAGE_DIR, WORK_DIR } = process.env;
for (const [name, value] of Object.entries({ REINS_BIN, SCRIPTED_LLM_BIN, PI_BIN, PI_PACKAGE_DIR, WORK_DIR })) {
  if (!value) throw new Error(`set ${name} (run tests/pi-interop/run.sh)`);
}
/** The pi under test's version, from its package. */
const PI_VERSION = JSON.parse(fs.readFileSync(path.join(PI_PACKAGE_DIR, "package.json"), "utf8")).version;
/** pi's name for the scripted server in its models.json, and the model both agents ask for. */
const PI_PROVIDER = "scripted";
const MODEL = "scripted-model";
/** A run that takes longer than this is stuck, not slow. */
const RUN_TIMEOUT_MS = 60_000;

const workspace = path.join(WORK_DIR, "workspace");
const reinsHome = path.join(WORK_DIR, "reins-home");
const piHome = path.join(WORK_DIR, "pi-home");
const piAgentDir = path.join(piHome, "agent");

/** The model's side of the story, in the order the runs below ask for it. */
const REPLIES = [
  // reins run 1: a read, then the answer.
  { toolCalls: [{ id: "call_read_1", name: "read", arguments: { path: "notes.txt" } }] },
  { text: "The notes say the secret word is tangerine." },
  // reins run 2 (--continue).
  { text: "You asked me what notes.txt says." },
  // run 3, asked of both agents from the same two-run file: reins, then pi.
  { text: "reins: it was tangerine." },
  { text: "pi: it was tangerine." },
  // reins --fork at run 1's answer.
  { text: "The file is named notes.txt." },
  // pi starts a session, reins continues it (a read and an answer), pi continues after reins.
  { text: "pi: hello from pi." },
  { toolCalls: [{ id: "call_read_2", name: "read", arguments: { path: "notes.txt" } }] },
  { text: "reins: the word is tangerine." },
  { text: "pi: you asked about the word." },
  // Checkpoints: two reins runs that change files (custom entries on the path), a checkout back
  // to the end of the first (a leaf entry), then the same continuation by reins and by pi.
  {
    toolCalls: [
      { id: "call_edit_1", name: "edit", arguments: { path: "notes.txt", edits: [{ oldText: "tangerine", newText: "clementine" }] } },
      { id: "call_write_1", name: "write", arguments: { path: "plan.md", content: "1. peel\n" } },
    ],
  },
  { text: "reins: renamed the fruit and wrote a plan." },
  { toolCalls: [{ id: "call_write_2", name: "write", arguments: { path: "plan.md", content: "1. peel\n2. eat\n" } }] },
  { text: "reins: added a step." },
  { text: "reins: the plan has one step." },
  { text: "pi: the plan has one step." },
  // One skill folder in ~/.agents/skills, as either agent's user writes it: pi, then reins.
  { text: "pi: no PDF here." },
  { text: "reins: no PDF here." },
];
const PROMPTS = {
  first: "what does notes.txt say?",
  second: "what did I just ask you?",
  third: "which word was it again?",
  fork: "what is the file called?",
  piFirst: "hello, pi",
  reinsOnPi: "read notes.txt for me",
  piAfterReins: "what did I ask you to read?",
  files: "rename the fruit and write a plan",
  moreFiles: "add a step to the plan",
  afterCheckout: "how many steps has the plan?",
  skill: "is there a PDF here?",
};

/** A skill in the Agent Skills format, in the folder both agents read (`~/.agents/skills`). */
const SKILL = {
  name: "pdf-tools",
  description: "Extract text and tables from PDF files. Use when the user asks about a PDF.",
};

// ---- the model server behind a recording proxy ----

/** scripted-llm playing REPLIES, behind a proxy that files each chat request under `phase`. */
async function startModel() {
  const script = path.join(WORK_DIR, "script.json");
  fs.writeFileSync(script, JSON.stringify(REPLIES));
  const child = spawn(SCRIPTED_LLM_BIN, ["--script", script], { stdio: ["ignore", "pipe", "inherit"] });
  const firstLine = new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`scripted-llm exited (${code}) before printing its URL`)));
  });
  const upstream = new URL(await firstLine);
  const recorded = {};
  let phase = "none";
  const proxy = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.url.endsWith("/chat/completions")) (recorded[phase] ??= []).push(JSON.parse(body.toString("utf8")));
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } },
        (up) => {
          res.writeHead(up.statusCode, up.headers);
          up.pipe(res);
        },
      );
      forward.on("error", (err) => res.destroy(err));
      forward.end(body);
    });
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${proxy.address().port}${upstream.pathname.replace(/\/$/, "")}`;
  return {
    url,
    /** Files the requests of the next run under `name`. */
    phase: (name) => (phase = name),
    /** The chat requests made during phase `name`. */
    requests: (name) => recorded[name] ?? [],
    stop: () => {
      proxy.close();
      child.kill();
    },
  };
}

// ---- running the two agents ----

/** Runs a program to completion; rejects with its stderr when it fails or hangs. */
function run(program, args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd: workspace, env, stdio: ["ignore", "pipe", "pipe"], timeout: RUN_TIMEOUT_MS });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (data) => (stdout += data));
    child.stderr.on("data", (data) => (stderr += data));
    child.on("error", reject);
    child.on("exit", (code, signal) =>
      code === 0 ? resolve(stdout) : reject(new Error(`${path.basename(program)} ${args.join(" ")} failed (${code ?? signal}):\n${stderr}`)),
    );
  });
}

function reins(model, args, extraEnv = {}) {
  const env = { ...process.env, REINS_HOME: reinsHome, OPENAI_BASE_URL: model.url, OPENAI_API_KEY: "sk-pi-interop", REINS_LOG: "warn", ...extraEnv };
  return run(REINS_BIN, args, env);
}

async function reinsJson(model, args) {
  return JSON.parse(await reins(model, [...args, "--json"]));
}

/** pi in print mode, sandboxed: its HOME and agent dir are throwaway, and it stays offline. */
function pi(args) {
  const env = { ...process.env, HOME: piHome, PI_CODING_AGENT_DIR: piAgentDir, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" };
  return run(PI_BIN, ["--provider", PI_PROVIDER, "--model", MODEL, ...args], env);
}

function configurePi(model) {
  fs.mkdirSync(piAgentDir, { recursive: true });
  const provider = { baseUrl: model.url, api: "openai-completions", apiKey: "pi-interop-key", models: [{ id: MODEL }] };
  fs.writeFileSync(path.join(piAgentDir, "models.json"), JSON.stringify({ providers: { [PI_PROVIDER]: provider } }));
}

// ---- one shape for both sides: what a model is told ----

/** Joins the text of a message's content, whether a string or a list of parts. */
function textOf(content) {
  if (typeof content === "string") return content;
  return (content ?? []).filter((part) => part.type === "text").map((part) => part.text).join("");
}

/** A chat-completions message (reins's or pi's request) as {role, text, toolCalls | toolCallId}. */
function fromRequest(message) {
  const out = { role: message.role === "tool" ? "toolResult" : message.role, text: textOf(message.content) };
  if (message.role === "assistant") {
    out.toolCalls = (message.tool_calls ?? []).map((call) => ({ id: call.id, name: call.function.name, arguments: JSON.parse(call.function.arguments) }));
  }
  if (message.role === "tool") out.toolCallId = message.tool_call_id;
  return out;
}

/** The messages of a request, system prompt left out (each agent has its own). */
function conversationOf(request) {
  return request.messages.filter((m) => m.role !== "system" && m.role !== "developer").map(fromRequest);
}

/** A message of pi's SessionManager context in the same shape. */
function fromPiContext(message) {
  const out = { role: message.role, text: textOf(message.content) };
  if (message.role === "assistant") {
    out.toolCalls = message.content.filter((part) => part.type === "toolCall").map((call) => ({ id: call.id, name: call.name, arguments: call.arguments }));
  }
  if (message.role === "toolResult") out.toolCallId = message.toolCallId;
  return out;
}

/** pi's SessionManager (from the installed package) on `file`: its leaf and its context at `leaf`. */
async function piContext(file, leafOf = (manager) => manager.getLeafId()) {
  const { SessionManager, buildSessionContext } = await import(path.join(PI_PACKAGE_DIR, "dist", "core", "session-manager.js"));
  const manager = SessionManager.open(file);
  const leaf = leafOf(manager);
  // pi 1.6 puts its own system prompt into the context as system messages; reins has its own.
  const messages = buildSessionContext(manager.getEntries(), leaf).messages.filter((m) => m.role !== "system");
  return { manager, leaf, messages: messages.map(fromPiContext) };
}

function onlyRequest(model, phase) {
  const requests = model.requests(phase);
  assert.equal(requests.length, 1, `${phase}: expected one model request, got ${requests.length}`);
  return requests[0];
}

function sessionFiles() {
  const root = path.join(reinsHome, "sessions");
  return fs.readdirSync(root).flatMap((dir) => fs.readdirSync(path.join(root, dir)).map((f) => path.join(root, dir, f)));
}

function entriesOf(file) {
  return fs.readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line));
}

// ---- the scenario ----

function check(what, actual, expected) {
  try {
    assert.deepStrictEqual(actual, expected);
  } catch {
    throw new Error(`${what}: differs\n--- got\n${JSON.stringify(actual, null, 2)}\n--- expected\n${JSON.stringify(expected, null, 2)}`);
  }
  console.log(`ok - ${what}`);
}

async function main() {
  fs.mkdirSync(workspace, { recursive: true });
  fs.writeFileSync(path.join(workspace, "notes.txt"), "The secret word is tangerine.\n");
  const model = await startModel();
  try {
    configurePi(model);

    // reins writes a session: a read with its result and an answer, then a second run.
    model.phase("reins-1");
    await reins(model, ["run", "--json", "--yes", "--model", MODEL, PROMPTS.first]);
    model.phase("reins-2");
    await reins(model, ["run", "--json", "--yes", "--continue", "--model", MODEL, PROMPTS.second]);
    const [file] = sessionFiles();
    const userPrompts = entriesOf(file).filter((e) => e.type === "message" && e.message.role === "user").map((e) => textOf(e.message.content));
    check("reins wrote one session file with two runs", { files: sessionFiles().length, userPrompts }, { files: 1, userPrompts: [PROMPTS.first, PROMPTS.second] });
    const tree = await reinsJson(model, ["sessions", "tree", file]);

    // Two copies of the two-run file: one pi reads in-process, one `pi -p` continues.
    const forSessionManager = path.join(WORK_DIR, "two-runs.jsonl");
    const forPiPrint = path.join(WORK_DIR, "two-runs-pi.jsonl");
    fs.copyFileSync(file, forSessionManager);
    fs.copyFileSync(file, forPiPrint);

    // What reins sends for a third turn on that file.
    model.phase("reins-3");
    await reins(model, ["run", "--json", "--yes", "--continue", "--model", MODEL, PROMPTS.third]);
    const reinsThird = conversationOf(onlyRequest(model, "reins-3"));
    const history = reinsThird.slice(0, -1);
    check("reins's third request is its history plus the new prompt", reinsThird.at(-1), { role: "user", text: PROMPTS.third });
    check(
      "that history holds the read call and its result with the same id",
      history.filter((m) => m.role !== "user").map((m) => [m.role, m.toolCalls?.map((c) => c.id) ?? m.toolCallId ?? null]),
      [["assistant", ["call_read_1"]], ["toolResult", "call_read_1"], ["assistant", []], ["assistant", []]],
    );

    // (a) pi's SessionManager on the two-run file: same leaf, same conversation.
    const opened = await piContext(forSessionManager);
    check("pi's SessionManager lands on the leaf reins reports", opened.leaf, tree.leaf);
    check("pi's SessionManager context equals the history reins sends", opened.messages, history);

    // The same comparison must fail on a file pi cannot read.
    const broken = path.join(WORK_DIR, "broken.jsonl");
    fs.writeFileSync(broken, fs.readFileSync(file, "utf8").split("\n").slice(1).join("\n"));
    // (pi 0.73.1 starts an empty session there, pi 1.6 refuses the file.)
    const brokenContext = await piContext(broken).catch(() => ({ messages: null }));
    assert.notDeepStrictEqual(brokenContext.messages, history, "the check cannot tell a file pi fails to read from a good one");
    console.log("ok - the comparison fails on a copy without its session header");

    // (b) `pi -p --session FILE` continues the conversation: its request is reins's, prompt and all.
    model.phase("pi");
    const printed = await pi(["--session", forPiPrint, "-p", PROMPTS.third]);
    check("pi printed the scripted answer", printed.trim(), "pi: it was tangerine.");
    check("pi's request to the model equals reins's for the same turn", conversationOf(onlyRequest(model, "pi")), reinsThird);

    // reins reads the file back after pi appended to it.
    const afterPi = await reinsJson(model, ["sessions", "tree", forPiPrint]);
    const piAnswer = afterPi.nodes.find((node) => node.id === afterPi.leaf);
    check("reins reads the file pi continued, leaf at pi's answer", [piAnswer?.role, piAnswer?.preview], ["assistant", "pi: it was tangerine."]);

    // A fork at run 1's answer: a new file (parentSession set) whose context pi rebuilds too.
    const firstAnswer = tree.nodes.find((node) => node.role === "assistant" && node.preview === REPLIES[1].text);
    model.phase("reins-fork");
    await reins(model, ["run", "--json", "--yes", "--session", file, "--fork", firstAnswer.id, "--model", MODEL, PROMPTS.fork]);
    const forkFile = sessionFiles().find((f) => f !== file);
    const reinsFork = conversationOf(onlyRequest(model, "reins-fork"));
    const lastAssistantParent = (manager) => manager.getEntries().filter((e) => e.type === "message" && e.message.role === "assistant").at(-1).parentId;
    const forked = await piContext(forkFile, lastAssistantParent);
    check("pi sees the fork's parent session", forked.manager.getHeader().parentSession, file);
    check("pi's context of the fork equals reins's request in it", forked.messages, reinsFork);
    check("the fork kept run 1 and left run 2 out", reinsFork.filter((m) => m.role === "user").map((m) => m.text), [PROMPTS.first, PROMPTS.fork]);

    // A session pi wrote, continued by reins: pi then sees its own context plus reins's turn.
    model.phase("pi-first");
    await pi(["-p", PROMPTS.piFirst]);
    const piSessions = path.join(piAgentDir, "sessions");
    const piFile = fs.readdirSync(piSessions).flatMap((dir) => fs.readdirSync(path.join(piSessions, dir)).map((f) => path.join(piSessions, dir, f)))
      .filter((f) => f !== forPiPrint).sort().at(-1);
    model.phase("reins-on-pi");
    await reins(model, ["run", "--json", "--yes", "--session", piFile, "--model", MODEL, PROMPTS.reinsOnPi]);
    const reinsOnPi = model.requests("reins-on-pi").map(conversationOf);
    check("reins continued pi's session from pi's first exchange", reinsOnPi[0].map((m) => m.text), [PROMPTS.piFirst, "pi: hello from pi.", PROMPTS.reinsOnPi]);
    const reinsTurn = [...reinsOnPi.at(-1), { role: "assistant", text: "reins: the word is tangerine.", toolCalls: [] }];
    check("pi's SessionManager context of its session after reins's turn", (await piContext(piFile)).messages, reinsTurn);
    model.phase("pi-after-reins");
    await pi(["--session", piFile, "-p", PROMPTS.piAfterReins]);
    check(
      "pi continues after reins's turn with pi's context plus reins's turn",
      conversationOf(onlyRequest(model, "pi-after-reins")),
      [...reinsTurn, { role: "user", text: PROMPTS.piAfterReins }],
    );

    // Checkpoints: a session whose path holds the file changes reins recorded (pi custom
    // entries) and a checkout's leaf entry continues in pi as it does in reins.
    const before = new Set(sessionFiles());
    model.phase("reins-files");
    await reins(model, ["run", "--json", "--yes", "--model", MODEL, PROMPTS.files]);
    const filesSession = sessionFiles().find((f) => !before.has(f));
    model.phase("reins-more-files");
    await reins(model, ["run", "--json", "--yes", "--session", filesSession, "--model", MODEL, PROMPTS.moreFiles]);
    const recorded = entriesOf(filesSession).filter((e) => e.type === "custom" && e.customType === "reins.file_change");
    check("reins recorded each file change as a custom entry", recorded.map((e) => e.data.files.map((f) => f.path)), [["notes.txt"], ["plan.md"], ["plan.md"]]);
    const filesTree = await reinsJson(model, ["sessions", "tree", filesSession]);
    const firstRunEnd = filesTree.nodes.find((node) => node.preview === "reins: renamed the fruit and wrote a plan.");
    const checkedOut = await reinsJson(model, ["sessions", "checkout", firstRunEnd.id, "--session", filesSession, "--yes"]);
    check("the checkout brought plan.md back to the first run's", [checkedOut.leftBehind, fs.readFileSync(path.join(workspace, "plan.md"), "utf8")], [0, "1. peel\n"]);
    const filesForPi = path.join(WORK_DIR, "files-pi.jsonl");
    fs.copyFileSync(filesSession, filesForPi);
    // pi takes the last line as its leaf: the checkout's `leaf` entry, a child of the entry.
    const piLanded = await piContext(filesForPi);
    const piLeaf = piLanded.manager.getEntries().find((e) => e.id === piLanded.leaf);
    check("pi's SessionManager lands where the checkout left the leaf", [piLeaf.type, piLeaf.parentId], ["leaf", firstRunEnd.id]);
    model.phase("reins-after-checkout");
    await reins(model, ["run", "--json", "--yes", "--session", filesSession, "--model", MODEL, PROMPTS.afterCheckout]);
    const reinsAfter = conversationOf(onlyRequest(model, "reins-after-checkout"));
    check(
      "reins continues from the checked-out entry: the second run is not in its request",
      reinsAfter.filter((m) => m.role === "user").map((m) => m.text),
      [PROMPTS.files, PROMPTS.afterCheckout],
    );
    check("pi's SessionManager context of that file equals reins's history", (await piContext(filesForPi)).messages, reinsAfter.slice(0, -1));
    model.phase("pi-after-checkout");
    const piAfter = await pi(["--session", filesForPi, "-p", PROMPTS.afterCheckout]);
    check("pi printed the scripted answer", piAfter.trim(), "pi: the plan has one step.");
    check("pi's request on a session with file entries equals reins's", conversationOf(onlyRequest(model, "pi-after-checkout")), reinsAfter);

    // Skills: one folder, written once, is offered by both agents in the same words (pi reads
    // ~/.agents/skills since 1.x).
    if (PI_VERSION.startsWith("0.")) return;
    const skillDir = path.join(piHome, ".agents", "skills", SKILL.name);
    fs.mkdirSync(skillDir, { recursive: true });
    const skillFile = path.join(skillDir, "SKILL.md");
    fs.writeFileSync(skillFile, `---\nname: ${SKILL.name}\ndescription: ${SKILL.description}\n---\n# PDF tools\nRun \`pdftotext FILE -\`.\n`);
    const listed = (request) => {
      const content = request.messages[0].content;
      const system = typeof content === "string" ? content : content.map((part) => part.text ?? "").join("");
      const at = system.indexOf("<available_skills>");
      return at < 0 ? null : system.slice(at, system.indexOf("</available_skills>", at) + "</available_skills>".length);
    };
    model.phase("pi-skill");
    await pi(["--no-session", "-p", PROMPTS.skill]);
    model.phase("reins-skill");
    await reins(model, ["run", "--json", "--yes", "--model", MODEL, PROMPTS.skill], { HOME: piHome });
    const expected = `<available_skills>\n  <skill>\n    <name>${SKILL.name}</name>\n    <description>${SKILL.description}</description>\n    <location>${skillFile}</location>\n  </skill>\n</available_skills>`;
    check("pi offers the skill from ~/.agents/skills", listed(onlyRequest(model, "pi-skill")), expected);
    check("reins offers the same skill in the same words", listed(onlyRequest(model, "reins-skill")), expected);
  } finally {
    model.stop();
  }
}

await main();
