-- `:checkhealth reins`: the binary, its version, whether the server runs and answers a command,
-- the state of each MCP server, and whether the configured model endpoint answers an HTTP request.
local M = {}

-- One line per MCP server that `reins.mcp.list` reports (it starts them first, so this waits
-- for at most their startup timeouts).
local function check_mcp(health, client)
  health.start("reins: MCP servers")
  if not client then
    health.info("the server is not running, so its MCP servers are not known")
    return
  end
  local result = client:request_sync("workspace/executeCommand", { command = "reins.mcp.list", arguments = { vim.empty_dict() } }, 30000)
  if not result then
    health.error("reins.mcp.list got no answer within 30 s")
    return
  elseif result.err then
    health.error("reins.mcp.list failed: " .. (result.err.message or vim.inspect(result.err)))
    return
  end
  local servers = (result.result or {}).servers or {}
  if #servers == 0 then
    health.info("none configured ([mcp_servers.NAME] in config.toml, a trusted workspace's .mcp.json, or mcpServers in init_options)")
    return
  end
  for _, server in ipairs(servers) do
    local where = ("%s — %s (from %s)"):format(server.name, server.transport, server.origin)
    if server.state == "ready" then
      local names = {}
      for _, tool in ipairs(server.tools or {}) do
        table.insert(names, tool.name)
      end
      health.ok(("%s: ready, %d tools: %s"):format(where, #names, table.concat(names, ", ")))
    elseif server.state == "failed" then
      health.error(("%s: failed: %s"):format(where, server.reason or "?"), { "Fix the server's entry, then restart the server (:LspRestart) or change the settings" })
    elseif server.state == "exited" then
      health.warn(("%s: exited: %s; it starts again when next needed"):format(where, server.reason or "?"))
    else
      health.info(("%s: %s"):format(where, server.state))
    end
  end
end

-- The model of new sessions (and the chat session's, when it differs), and whether its provider
-- has a key.
local function check_model(health, client)
  local result = client:request_sync("workspace/executeCommand", { command = "reins.model.list", arguments = { vim.empty_dict() } }, 5000)
  if not result or result.err then
    health.error("reins.model.list failed: " .. (result and result.err and result.err.message or "no answer within 5 s"))
    return
  end
  local current
  for _, m in ipairs((result.result or {}).models or {}) do
    if m.current then
      current = m
    end
  end
  if not current then
    health.warn("no default model (set model in init_options or config.toml)")
  elseif current.keyAvailable then
    health.ok("model of new sessions: " .. current.id .. " (pick another with /model or gm in the chat)")
  else
    health.warn(("model of new sessions: %s, whose provider has no key"):format(current.id), {
      "Set the provider's key (apiKey in init_options, its environment variable, or $REINS_HOME/auth.json), or pick another model with /model",
    })
  end
  local chat = require("reins.chat")
  local conv = chat.session_id and require("reins.conversation").sessions[chat.session_id]
  if conv and conv.model and (not current or not vim.endswith(conv.model, current.id)) then
    health.info("the chat's session talks to " .. conv.model)
  end
end

local function provider_url()
  local init = require("reins.config").options.init_options or {}
  local url = init.baseUrl or vim.env.OPENAI_BASE_URL or "http://127.0.0.1:11434/v1"
  local key = init.apiKey or vim.env.OPENAI_API_KEY
  return url, key
end

function M.check()
  local health = vim.health
  local config = require("reins.config").options
  if not require("reins").did_setup then
    health.warn("setup() has not run (it runs with the defaults once Neovim has started, or with the first :Reins command)")
  end
  health.start("reins: binary")
  local cmd, source = require("reins.client").command()
  local path = type(cmd) == "table" and vim.fn.exepath(cmd[1]) or ""
  if not cmd then
    health.error(source)
  elseif type(cmd) == "function" then
    health.ok("connecting to a running `reins lsp --listen`: " .. source)
  elseif path == "" then
    health.error(("`%s` is not executable (from %s)"):format(cmd[1], source), {
      "Build it (cargo build --release -p reins), install it (cargo install --path server/cli), or fix cmd in setup{}",
    })
  else
    health.ok(("using %s (%s)"):format(path, source))
    local out = vim.system({ path, "--version" }, { text = true }):wait(5000)
    if out.code == 0 then
      health.ok("version: " .. vim.trim(out.stdout or ""))
    else
      health.warn("`" .. path .. " --version` failed: " .. vim.trim((out.stderr or "") .. (out.stdout or "")))
    end
  end
  if vim.fn.has("nvim-0.11") == 0 then
    health.error("Neovim 0.11 or newer is needed (vim.lsp.config / vim.lsp.enable)")
  else
    health.ok("Neovim " .. tostring(vim.version()))
  end

  health.start("reins: server")
  local client = require("reins.client").get()
  if not client then
    health.warn("the server is not running in this Neovim (it starts with the first file buffer, :ReinsChat or :ReinsAsk)")
  else
    health.ok(("running (client id %d, root %s, position encoding %s)"):format(client.id, client.root_dir or "?", client.offset_encoding))
    -- A cheap command that touches no model: it shows the server handles reins commands.
    local result = client:request_sync("workspace/executeCommand", { command = "reins.session.list", arguments = { vim.empty_dict() } }, 5000)
    if not result then
      health.error("reins.session.list got no answer within 5 s")
    elseif result.err then
      health.error("reins.session.list failed: " .. (result.err.message or vim.inspect(result.err)))
    else
      health.ok(("answers commands (reins.session.list: %d sessions in this workspace)"):format(#((result.result or {}).sessions or {})))
    end
    check_model(health, client)
  end

  check_mcp(health, client)

  health.start("reins: model provider")
  local url, key = provider_url()
  health.info("endpoint: " .. url .. " (from " .. ((config.init_options or {}).baseUrl and "init_options.baseUrl" or vim.env.OPENAI_BASE_URL and "$OPENAI_BASE_URL" or "the default, a local Ollama") .. ")")
  if vim.fn.executable("curl") == 0 then
    health.warn("curl is not installed: cannot check that the endpoint answers")
    return
  end
  -- GET <baseUrl>/models: it costs no tokens. This checks that something answers at the
  -- address (and, with a 401, that the key is refused); it does not run a completion.
  local args = { "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5" }
  if key and key ~= "" then
    vim.list_extend(args, { "-H", "Authorization: Bearer " .. key })
  end
  table.insert(args, url:gsub("/$", "") .. "/models")
  local out = vim.system(args, { text = true }):wait(7000)
  local status = tonumber(vim.trim(out.stdout or "")) or 0
  if status == 0 then
    health.error("no answer from " .. url, { "Start the model server, or set baseUrl in init_options (or $OPENAI_BASE_URL)" })
  elseif status == 401 or status == 403 then
    health.error(("the endpoint refused the key (HTTP %d)"):format(status), { "Set apiKey in init_options or $OPENAI_API_KEY" })
  elseif status >= 200 and status < 300 then
    health.ok(("the endpoint answers (GET /models: HTTP %d)"):format(status))
  else
    health.warn(("the endpoint answers, but GET /models gave HTTP %d (some servers do not list models)"):format(status))
  end
end

return M
