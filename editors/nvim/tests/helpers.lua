-- Shared set-up of the end-to-end specs: a scripted model server, a temporary workspace and
-- REINS_HOME, the plugin configured against the real `reins` binary, and readers of the panel.
local H = {}

local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
vim.cmd("runtime plugin/reins.lua")

H.reins_bin = assert(vim.env.REINS_BIN, "set REINS_BIN to the reins binary")
H.llm_bin = assert(vim.env.SCRIPTED_LLM_BIN, "set SCRIPTED_LLM_BIN to the scripted-llm binary")

local jobs = {}

--- Starts the scripted model server with `replies`; returns its base URL.
function H.start_llm(replies)
  local file = vim.fn.tempname() .. ".json"
  vim.fn.writefile({ vim.json.encode(replies) }, file)
  local url
  local job = vim.fn.jobstart({ H.llm_bin, "--script", file }, {
    on_stdout = function(_, data)
      if not url and data[1] and data[1] ~= "" then
        url = data[1]
      end
    end,
  })
  table.insert(jobs, job)
  T.wait_for(function()
    return url ~= nil
  end, "the scripted model server's URL")
  return url
end

--- A temporary workspace holding `files` ({name = text}); becomes the current directory.
function H.workspace(files)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  for name, text in pairs(files) do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text)
    f:close()
  end
  vim.fn.chdir(dir)
  vim.env.REINS_HOME = vim.fn.tempname()
  vim.fn.mkdir(vim.env.REINS_HOME, "p")
  return dir
end

--- Records every notification in the list it returns (and still passes each on).
function H.capture_notices()
  local notices = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notices, msg)
    notify(msg, level)
  end
  return notices
end

--- Configures the plugin against the scripted server.
function H.setup(url, extra)
  require("reins").setup(vim.tbl_deep_extend("force", {
    cmd = { H.reins_bin, "lsp" },
    init_options = { baseUrl = url, apiKey = "test-key", model = "scripted" },
  }, extra or {}))
end

--- The chat panel's text.
function H.chat_text()
  local buf = require("reins.chat").buffers()
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

function H.buf_text(buf)
  return table.concat(vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false), "\n")
end

--- Waits until the current session's run has ended.
function H.wait_idle(what)
  T.wait_for(function()
    local conv = require("reins.chat").current()
    return conv and not conv.running and conv.tokens > 0 and require("reins.chat").settled()
  end, what or "the run to end", 15000)
end

--- Replaces vim.ui.input/select with scripted answers for the duration of `fn`.
--- `answers` is a list consumed in order: strings for inputs, functions(items, opts) for selects.
function H.with_ui(answers, fn)
  local orig_input, orig_select = vim.ui.input, vim.ui.select
  local asked = {}
  vim.ui.input = function(opts, cb)
    table.insert(asked, opts.prompt)
    local a = table.remove(answers, 1)
    assert(type(a) == "string" or a == vim.NIL, "unexpected vim.ui.input: " .. tostring(opts.prompt))
    cb(a ~= vim.NIL and a or nil)
  end
  vim.ui.select = function(items, opts, cb)
    table.insert(asked, opts.prompt)
    local a = table.remove(answers, 1)
    assert(type(a) == "function", "unexpected vim.ui.select: " .. tostring(opts.prompt))
    local choice = a(items, opts)
    cb(choice, choice and vim.tbl_contains(items, choice) and 1 or nil)
  end
  local ok, err = pcall(fn)
  vim.ui.input, vim.ui.select = orig_input, orig_select
  if not ok then
    error(err, 0)
  end
  return asked
end

T.cleanup = function()
  for _, c in ipairs(vim.lsp.get_clients({ name = "reins" })) do
    c:stop(true)
  end
  for _, job in ipairs(jobs) do
    pcall(vim.fn.jobstop, job)
  end
end

return H
