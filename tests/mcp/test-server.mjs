// A scripted MCP server for reins's tests, on the official TypeScript SDK (the one the reference
// server @modelcontextprotocol/server-everything is built on): tools that misbehave on request
// (crash mid-call, hang, print junk to stdout, answer with empty content), change the tool list,
// and report what the client sent (cancellations, environment, HTTP headers).
//
// Usage: node test-server.mjs stdio|http
//   MCP_NODE_MODULES  the node_modules that hold @modelcontextprotocol/sdk (tests/mcp/install.sh)
//   RECORD_FILE       where cancellations are appended, one line each (optional)
//   PORT              the HTTP port (http mode); the server prints "listening on PORT" to stderr
//   FAIL_INITIALIZE   (http mode) answer `initialize` with HTTP 500 and a JSON body that is not MCP
//   PROTOCOL_VERSION  answer `initialize` with this protocol version whatever the client asks, as a
//                     server that knows no newer one does (`2025-03-26`)
//   MANY_TOOLS        offer this many more tools, named VERB_NOUN (`archive_invoice`), each with a
//                     description and schema of the size real servers' tools have (about 600 bytes)
import { appendFileSync } from "node:fs";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.MCP_NODE_MODULES;
if (!modules) {
  console.error("test-server: set MCP_NODE_MODULES");
  process.exit(2);
}
const sdk = (path) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Server } = await sdk("server/index.js");
const { StdioServerTransport } = await sdk("server/stdio.js");
const { StreamableHTTPServerTransport } = await sdk("server/streamableHttp.js");
const { ListToolsRequestSchema, CallToolRequestSchema, InitializeRequestSchema } = await sdk("types.js");

const mode = process.argv[2] || "stdio";
const record = (line) => {
  if (process.env.RECORD_FILE) appendFileSync(process.env.RECORD_FILE, line + "\n");
};
const object = (properties = {}, required = []) => ({ type: "object", properties, required });

const tools = [
  {
    name: "echo",
    description: "Echoes the text back.",
    inputSchema: object({ text: { type: "string" } }, ["text"]),
    annotations: { readOnlyHint: true },
  },
  { name: "sleep", description: "Waits, then answers.", inputSchema: object({ seconds: { type: "number" } }, ["seconds"]) },
  { name: "crash", description: "Exits the server in the middle of the call.", inputSchema: object() },
  { name: "junk", description: "Prints a line that is not JSON-RPC to stdout, then answers.", inputSchema: object() },
  { name: "empty", description: "Answers with no content at all.", inputSchema: object() },
  { name: "env", description: "The server's environment.", inputSchema: object() },
  { name: "pid", description: "The server's process id.", inputSchema: object() },
  { name: "headers", description: "The HTTP headers of this request.", inputSchema: object() },
  { name: "fail", description: "Answers with isError.", inputSchema: object() },
  { name: "http500", description: "Over HTTP, the call is answered with status 500.", inputSchema: object() },
  { name: "add_tool", description: "Adds a tool and says the list changed.", inputSchema: object({ name: { type: "string" } }, ["name"]) },
];

// Tools of the size real servers have, for the bench and the tests of deferred tools.
const verbs = ["create", "list", "get", "update", "delete", "archive", "export", "import", "search", "count"];
const nouns = [
  "invoice", "customer", "ticket", "repository", "branch", "deployment", "alert", "dashboard", "user", "team",
  "project", "issue", "comment", "label", "milestone", "release", "pipeline", "secret", "webhook", "domain",
  "certificate", "bucket", "table", "query", "report", "subscription", "payment", "refund", "coupon", "order",
];
for (let n = 0; n < Number(process.env.MANY_TOOLS || 0); n++) {
  const verb = verbs[n % verbs.length];
  const noun = nouns[Math.floor(n / verbs.length) % nouns.length];
  const round = Math.floor(n / (verbs.length * nouns.length));
  tools.push({
    name: round ? `${verb}_${noun}_${round}` : `${verb}_${noun}`,
    description:
      `${verb[0].toUpperCase()}${verb.slice(1)}s ${noun} records in the workspace's ${noun} service. ` +
      `Use it when the user asks to ${verb} a ${noun}; it answers the ${noun} as JSON with its id, ` +
      `state, owner and timestamps. Fails when the ${noun} does not exist or access is denied.`,
    inputSchema: object(
      {
        id: { type: "string", description: `The ${noun}'s id, as other ${noun} tools answer it.` },
        fields: { type: "array", items: { type: "string" }, description: "Which fields to answer; all when left out." },
        limit: { type: "integer", description: "How many records at most (1 to 100)." },
        dry_run: { type: "boolean", description: "Check the request without changing anything." },
      },
      ["id"],
    ),
  });
}

function newServer() {
  const server = new Server({ name: "reins-test-server", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
  if (process.env.PROTOCOL_VERSION) {
    server.setRequestHandler(InitializeRequestSchema, async (request) => ({
      ...(await server._oninitialize(request)),
      protocolVersion: process.env.PROTOCOL_VERSION,
    }));
  }
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = request.params.arguments || {};
    const text = (text) => ({ content: [{ type: "text", text }] });
    switch (request.params.name) {
      case "echo":
        return text(`echo: ${args.text}`);
      case "sleep":
        return await new Promise((resolve) => {
          const timer = setTimeout(() => resolve(text(`slept ${args.seconds} s`)), args.seconds * 1000);
          extra.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            record(`cancelled ${extra.requestId}`);
            resolve(text("cancelled"));
          });
        });
      case "crash":
        console.error("crashing on purpose");
        setTimeout(() => process.exit(7), 50);
        return await new Promise(() => {});
      case "junk":
        process.stdout.write("this line is not JSON-RPC\n");
        return text("after the junk");
      case "empty":
        return { content: [] };
      case "env":
        return text(JSON.stringify(process.env));
      case "pid":
        return text(String(process.pid));
      case "headers":
        return text(JSON.stringify(extra.requestInfo?.headers ?? {}));
      case "fail":
        return { content: [{ type: "text", text: "it went wrong on purpose" }], isError: true };
      case "add_tool":
        tools.push({ name: args.name, description: "Added at run time.", inputSchema: object() });
        await server.sendToolListChanged();
        return text(`added ${args.name}`);
      default:
        if (tools.some((tool) => tool.name === request.params.name)) return text(`ran ${request.params.name}`);
        return { content: [{ type: "text", text: `unknown tool ${request.params.name}` }], isError: true };
    }
  });
  return server;
}

if (mode === "stdio") {
  console.error("test server on stdio");
  await newServer().connect(new StdioServerTransport());
} else {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  await newServer().connect(transport);
  const http = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const message = body ? JSON.parse(body) : undefined;
    const failing =
      (message?.method === "initialize" && process.env.FAIL_INITIALIZE) ||
      (message?.method === "tools/call" && message.params?.name === "http500");
    if (failing) {
      res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: "database is down" }));
      return;
    }
    try {
      await transport.handleRequest(req, res, message);
    } catch (err) {
      console.error("handling a request failed:", err);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  http.listen(Number(process.env.PORT || 0), "127.0.0.1", () => {
    console.error(`listening on ${http.address().port}`);
  });
}
