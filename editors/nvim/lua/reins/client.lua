-- The connection to `reins lsp`: registers the server with vim.lsp.config/enable, starts it on
-- demand (the chat panel needs it before any file is open), runs commands, and fans out
-- `reins/event` notifications to the modules that listen.
local config = require("reins.config")

local M = {}

M.name = "reins"

local listeners = {}

--- Calls `fn(params)` for every `reins/event` notification ({sessionId, runId, seq, event}).
function M.on_event(fn)
  table.insert(listeners, fn)
end

--- JSON nulls arrive as vim.NIL; the plugin treats them as absent fields.
function M.denull(value)
  if value == vim.NIL then
    return nil
  end
  if type(value) == "table" then
    for k, v in pairs(value) do
      value[k] = M.denull(v)
    end
  end
  return value
end

local function dispatch_event(_, params)
  params = M.denull(params)
  for _, fn in ipairs(listeners) do
    local ok, err = pcall(fn, params)
    if not ok then
      vim.notify("reins: handling " .. tostring(params.event and params.event.type) .. ": " .. err, vim.log.levels.ERROR)
    end
  end
end

--- The workspace root for a buffer: the nearest root marker, else the current directory.
function M.root(bufnr)
  local root = vim.fs.root(bufnr or 0, config.options.root_markers)
  return root or vim.fn.getcwd()
end

--- `value` for a JSON object: an empty Lua table goes out as `[]` otherwise. Only the top level:
--- an empty table inside may be a list (the server takes an empty list for an empty table in
--- settings).
function M.object(value)
  if type(value) == "table" and next(value) == nil then
    return vim.empty_dict()
  end
  return value
end

-- This file is editors/nvim/lua/reins/client.lua: the checkout is three directories up from
-- lua/reins.
local plugin_dir = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
M.checkout = vim.fn.fnamemodify(plugin_dir, ":h:h")

--- The `reins` binary built in the checkout the plugin comes from (the newer of target/release
--- and target/debug), if there is one.
function M.built_binary()
  local best, newest
  for _, profile in ipairs({ "release", "debug" }) do
    local path = M.checkout .. "/target/" .. profile .. "/reins"
    local stat = vim.uv.fs_stat(path)
    if stat and vim.fn.executable(path) == 1 and (not newest or stat.mtime.sec > newest) then
      best, newest = path, stat.mtime.sec
    end
  end
  return best
end

--- The token of a `reins lsp --listen` on TCP: `connect.token`, else the first line of
--- `connect.token_file`, else $REINS_LISTEN_TOKEN. Nil (and why) when there is none.
function M.listen_token()
  local c = config.options.connect or {}
  if c.token then
    return c.token
  end
  if c.token_file then
    local ok, lines = pcall(vim.fn.readfile, vim.fn.expand(c.token_file), "", 1)
    if ok and lines[1] and vim.trim(lines[1]) ~= "" then
      return vim.trim(lines[1])
    end
    return nil, "cannot read the token from connect.token_file " .. c.token_file
  end
  if vim.env.REINS_LISTEN_TOKEN and vim.env.REINS_LISTEN_TOKEN ~= "" then
    return vim.env.REINS_LISTEN_TOKEN
  end
  return nil, "connect needs the token of `reins lsp --listen`: set connect.token or connect.token_file, or $REINS_LISTEN_TOKEN"
end

--- How the server is reached, and where that came from: a connection to a listening server when
--- `connect` is set, else `cmd`, else the checkout's build, else `reins` on PATH. Nil (and why)
--- when there is no binary (or no token to connect with).
function M.command()
  local o = config.options
  if o.connect then
    local c = o.connect
    if c.path then
      return vim.lsp.rpc.connect(vim.fn.expand(c.path)), "connect in setup() (unix:" .. c.path .. ")"
    end
    local _, why = M.listen_token()
    if why then
      return nil, why
    end
    local host = c.host or "127.0.0.1"
    return vim.lsp.rpc.connect(host, c.port), ("connect in setup() (%s:%s)"):format(host, tostring(c.port))
  end
  if o.cmd then
    return o.cmd, "cmd in setup()"
  end
  local built = M.built_binary()
  if built then
    return { built, "lsp" }, "built in " .. M.checkout
  end
  local on_path = vim.fn.exepath("reins")
  if on_path ~= "" then
    return { on_path, "lsp" }, "reins on PATH"
  end
  return nil,
    ("no reins binary: build it (cargo build --release -p reins in %s), install it (cargo install --path server/cli), or set cmd in setup()"):format(
      M.checkout
    )
end

--- The initializationOptions: the user's settings, and what the plugin can do besides LSP
--- (it answers `reins/diagnostics` from vim.diagnostic and `reins/languageServer` from the
--- language servers vim.lsp runs, and shows a failed run in the chat, so the server sends no
--- `window/showMessage` saying it again).
local function init_options()
  local options = vim.deepcopy(config.options.init_options or {})
  options.capabilities = vim.tbl_extend("force", options.capabilities or {}, { diagnostics = true, languageServers = true, chat = true })
  local connect = config.options.connect
  if connect and not connect.path then
    options.token = M.listen_token()
  end
  return options
end

--- The root of every buffer when `connect` is set: the server serves one connection, so all
--- buffers share the one client (its workspace is the server's, not a root found here).
local connect_root

local function lsp_config()
  local o = config.options
  return {
    cmd = M.command() or { "reins", "lsp" },
    init_options = init_options(),
    -- Every change goes to reins as it happens: the agent's edits are made from the server's
    -- copy of the buffer, which a debounce would hold back while the user types.
    flags = { debounce_text_changes = 0 },
    filetypes = o.filetypes,
    root_dir = function(bufnr, on_dir)
      on_dir(connect_root or M.root(bufnr))
    end,
    handlers = {
      ["reins/event"] = dispatch_event,
      ["workspace/applyEdit"] = function(err, params, ctx)
        return require("reins.apply").handler(err, params, ctx)
      end,
      ["reins/diagnostics"] = function(err, params, ctx)
        return require("reins.diagnostics").handler(err, params, ctx)
      end,
      ["reins/languageServer"] = function(err, params, ctx)
        return require("reins.language_servers").handler(err, params, ctx)
      end,
    },
  }
end

local building = false

--- Builds the checkout's binary in the background, once, when there is none and cargo is at
--- hand: a lazy.nvim spec with `dir = …` never runs its `build`. Cargo's progress shows in the
--- message area; when the build is done the server is registered. False when it cannot build.
local function build_first()
  if building then
    return true
  end
  if config.options.cmd or config.options.connect or vim.fn.executable("cargo") == 0 then
    return false
  end
  if not vim.uv.fs_stat(M.checkout .. "/Cargo.toml") then
    return false
  end
  building = true
  vim.notify(
    ("reins: no reins binary yet: building it once (cargo build --release in %s), a few minutes"):format(M.checkout),
    vim.log.levels.INFO
  )
  local tail = {}
  local function progress(_, data)
    if not data then
      return
    end
    for line in data:gmatch("[^\n]+") do
      table.insert(tail, line)
      if #tail > 15 then
        table.remove(tail, 1)
      end
    end
    local last = tail[#tail]
    if last then
      vim.schedule(function()
        vim.api.nvim_echo({ { "reins: building: " .. vim.trim(last) } }, false, {})
      end)
    end
  end
  local target = M.checkout .. "/target"
  vim.system(
    { "cargo", "build", "--release", "--locked", "-p", "reins", "--target-dir", target },
    { cwd = M.checkout, text = true, stderr = progress },
    function(out)
      vim.schedule(function()
        building = false
        local built = M.built_binary()
        if out.code ~= 0 or not built then
          local why = ("reins: `cargo build --release -p reins` failed in %s (exit %d):\n%s"):format(
            M.checkout,
            out.code,
            table.concat(tail, "\n")
          )
          return vim.notify(why, vim.log.levels.ERROR)
        end
        vim.notify("reins: built " .. built .. "; starting the server", vim.log.levels.INFO)
        M.register()
      end)
    end
  )
  return true
end

--- Registers and enables the server (Neovim 0.11+). Without a binary it is not enabled (every
--- file would fail to start it): it is built first when it can be, else the user is told once
--- what to do.
function M.register()
  connect_root = config.options.connect and vim.fn.getcwd() or nil
  vim.lsp.config(M.name, lsp_config())
  local cmd, why = M.command()
  if not cmd then
    if not build_first() then
      vim.notify("reins: " .. why, vim.log.levels.ERROR)
    end
    return
  end
  vim.lsp.enable(M.name)
end

--- The running client for the current workspace, if any.
function M.get()
  local root = M.root(0)
  local clients = vim.lsp.get_clients({ name = M.name })
  if config.options.connect then
    -- The one that connected (a function for `cmd`), not one a setup before started.
    for _, client in ipairs(clients) do
      if type(client.config.cmd) == "function" then
        return client
      end
    end
    return nil
  end
  for _, client in ipairs(clients) do
    if client.root_dir == root then
      return client
    end
  end
  return clients[1]
end

--- The client, started now (without attaching a buffer) when none runs.
function M.ensure()
  local client = M.get()
  if client then
    return client
  end
  local cmd, why = M.command()
  if not cmd then
    if building then
      why = "the server is still being built (cargo build --release); it starts when the build is done"
    end
    vim.notify("reins: " .. why, building and vim.log.levels.WARN or vim.log.levels.ERROR)
    return nil
  end
  local cfg = vim.tbl_extend("force", lsp_config(), { name = M.name, root_dir = connect_root or M.root(0) })
  local ok, id = pcall(vim.lsp.start, cfg, { attach = false })
  if not ok or not id then
    local what = type(cmd) == "table" and "start `" .. table.concat(cmd, " ") .. "`" or "connect (" .. why .. ")"
    vim.notify("reins: could not " .. what .. ": " .. tostring(id), vim.log.levels.ERROR)
    return nil
  end
  return vim.lsp.get_client_by_id(id)
end

--- Attaches the client to a file buffer so the server sees its (unsaved) text.
function M.attach(bufnr)
  local client = M.ensure()
  if client and vim.bo[bufnr].buftype == "" and not vim.lsp.buf_is_attached(bufnr, client.id) then
    vim.lsp.buf_attach_client(bufnr, client.id)
  end
  return client
end

--- Calls `fn(client)` once the client has answered `initialize`.
function M.with_client(fn)
  local client = M.ensure()
  if not client then
    return
  end
  local waited = 0
  local function try()
    if client:is_stopped() then
      vim.notify("reins: the server stopped; see :checkhealth reins and :LspLog", vim.log.levels.ERROR)
    elseif client.initialized then
      fn(client)
    elseif waited > 15000 then
      vim.notify("reins: the server did not answer `initialize` within 15 s", vim.log.levels.ERROR)
    else
      waited = waited + 20
      vim.defer_fn(try, 20)
    end
  end
  try()
end

--- The message of an LSP error answer, for a person.
function M.error_text(err)
  if type(err) == "table" then
    return err.message or vim.inspect(err)
  end
  return tostring(err)
end

--- Runs a reins command with one object argument. `cb(err, result)`; without `cb`, errors are
--- shown with vim.notify.
function M.exec(command, arg, cb)
  M.with_client(function(client)
    -- Commands take an object; an empty Lua table would go out as `[]`.
    arg = M.object(arg)
    local params = { command = command, arguments = arg ~= nil and { arg } or {} }
    client:request("workspace/executeCommand", params, function(err, result)
      result = M.denull(result)
      if cb then
        cb(err, result)
      elseif err then
        vim.notify("reins: " .. command .. ": " .. M.error_text(err), vim.log.levels.ERROR)
      end
    end)
  end)
end

--- Converts a (0-based row, byte col) position of a buffer to an LSP position in the client's
--- encoding.
function M.position(bufnr, row, col, encoding)
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
  col = math.min(col, #line)
  return { line = row, character = vim.str_utfindex(line, encoding, col, false) }
end

--- Converts an LSP position to a byte column of that line.
function M.byte_col(line, character, encoding)
  if character == 0 then
    return 0
  end
  local ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  if not ok then
    return #line
  end
  return math.min(col, #line)
end

return M
