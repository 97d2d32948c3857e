-- Asking the agent about a selection: `:'<,'>ReinsAsk [question]` and the "Ask agent about
-- selection" code action, whose `reins.ask` command carries no question; the plugin intercepts it
-- (vim.lsp.commands) to ask for one, then runs it on the server.
local client = require("reins.client")

local M = {}

--- The LSP diagnostics of `bufnr` that touch rows [first_row, last_row] (0-based).
local function diagnostics_in(bufnr, first_row, last_row)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.lnum <= last_row and (d.end_lnum or d.lnum) >= first_row then
      table.insert(out, d)
    end
  end
  if #out == 0 or not vim.lsp.diagnostic.from then
    return {}
  end
  return vim.lsp.diagnostic.from(out)
end

local function failed(err)
  vim.notify("reins: ask: " .. client.error_text(err), vim.log.levels.ERROR)
end

--- Sends `reins.ask` with a complete argument; opens the chat on the session it answers with.
--- With the `ask.tools` option, the ask goes to a new session offering only those tools.
function M.send(arg)
  local chat = require("reins.chat")
  local tools = require("reins.config").options.ask.tools
  local conv = chat.current()
  if arg.sessionId == nil and tools == nil and conv and not conv.running then
    arg.sessionId = chat.session_id
  end
  chat.open(false)
  chat.follow()
  local function ask()
    client.exec("reins.ask", arg, function(err, result)
      if err then
        return failed(err)
      end
      chat.running_started(result)
    end)
  end
  if tools == nil or arg.sessionId ~= nil then
    return ask()
  end
  client.exec("reins.session.new", {}, function(err, result)
    if err then
      return failed(err)
    end
    client.exec("reins.session.setTools", { sessionId = result.sessionId, tools = tools }, function(set_err)
      if set_err then
        return failed(set_err)
      end
      arg.sessionId = result.sessionId
      ask()
    end)
  end)
end

--- Calls `fn(question)` with the question, asking for it when `question` is empty; nothing
--- happens when the user cancels.
local function with_question(question, fn)
  if question and vim.trim(question) ~= "" then
    fn(question)
    return
  end
  vim.ui.input({ prompt = "Ask reins about the selection: " }, function(input)
    if input and vim.trim(input) ~= "" then
      fn(input)
    end
  end)
end

--- Asks about rows `line1`..`line2` (1-based, inclusive) of `bufnr`. With a charwise visual
--- selection on those lines, the selection's columns are used.
function M.range(bufnr, line1, line2, question)
  bufnr = bufnr == 0 and vim.api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    vim.notify("reins: ask works on a file buffer", vim.log.levels.WARN)
    return
  end
  local c = client.attach(bufnr)
  if not c then
    return
  end
  local encoding = c.offset_encoding or "utf-16"
  local start_row, start_col, end_row, end_col = line1 - 1, 0, line2, 0
  local vs, ve = vim.api.nvim_buf_get_mark(bufnr, "<"), vim.api.nvim_buf_get_mark(bufnr, ">")
  if vim.fn.visualmode() == "v" and vs[1] == line1 and ve[1] == line2 then
    start_col = vs[2]
    end_row = line2 - 1
    local last = vim.api.nvim_buf_get_lines(bufnr, end_row, end_row + 1, false)[1] or ""
    -- The mark is on the last selected character; the range ends after it.
    end_col = math.min(#last, ve[2] + #(vim.fn.strcharpart(last:sub(ve[2] + 1), 0, 1)))
  end
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  if end_row >= line_count then
    end_row = line_count - 1
    end_col = #(vim.api.nvim_buf_get_lines(bufnr, end_row, end_row + 1, false)[1] or "")
  end
  local range = {
    start = client.position(bufnr, start_row, start_col, encoding),
    ["end"] = client.position(bufnr, end_row, end_col, encoding),
  }
  local uri = vim.uri_from_bufnr(bufnr)
  local diagnostics = diagnostics_in(bufnr, line1 - 1, line2 - 1)
  with_question(question, function(q)
    M.send({ uri = uri, range = range, question = q, diagnostics = diagnostics })
  end)
end

--- The client-side handler of `reins.ask` (code actions): asks for a missing question.
function M.command(command, _ctx)
  local arg = vim.deepcopy((command.arguments or {})[1] or {})
  with_question(arg.question, function(q)
    arg.question = q
    M.send(arg)
  end)
end

return M
