-- End to end: asking about a selection streams the answer into the panel; the code action asks
-- for its question; sessions are listed and resumed.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local answer = "This function adds two numbers and returns their sum. Nothing looks wrong."

local url = H.start_llm({
  { thinking = "Looking at the selection.", text = answer, chunkChars = 4, chunkDelayMs = 15 },
  { toolCalls = { { id = "c1", name = "read", arguments = { path = "math.lua" } } } },
  { text = "It returns `a + b`." },
})
H.workspace({ ["math.lua"] = "local M = {}\nfunction M.add(a, b)\n  return a + b\nend\nreturn M\n" })
H.setup(url)

T.test("ask about a selection streams the answer into the panel", function()
  vim.cmd("edit math.lua")
  local chat = require("reins.chat")
  vim.cmd("2,4ReinsAsk What does this do?")
  local partial_seen = false
  T.wait_for(function()
    local text = H.chat_text()
    if text:find("This function", 1, true) and not text:find("Nothing looks wrong.", 1, true) then
      partial_seen = true
    end
    return text:find(answer, 1, true)
  end, "the whole answer in the panel")
  H.wait_idle()
  T.ok(partial_seen, "the panel showed the answer before it was complete")
  T.ok(chat.redraws >= 2, "the panel was redrawn while streaming")
  local text = H.chat_text()
  T.contains(text, "## You\nWhat does this do?")
  T.contains(text, "Selection: math.lua lines 2-4")
  T.contains(text, "function M.add(a, b)")
  T.contains(text, "## reins\n▸ Thinking · 1 line\n\n" .. answer)
  local bar = vim.wo[select(1, chat.windows())].winbar
  T.ok(bar:find("tokens", 1, true) and bar:find("$0.0000", 1, true), "winbar shows tokens and cost: " .. bar)
end)

T.test("thinking and tool calls expand and collapse", function()
  local chat = require("reins.chat")
  local win = chat.windows()
  vim.api.nvim_set_current_win(win)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local row
  for i, l in ipairs(lines) do
    if l:find("Thinking", 1, true) then
      row = i
    end
  end
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  chat.toggle_block()
  T.contains(H.chat_text(), "▾ Thinking\n  Looking at the selection.")
  chat.toggle_block()
  T.contains(H.chat_text(), "▸ Thinking · 1 line")
end)

T.test("the code action asks for the question, then asks the server", function()
  vim.cmd("wincmd t")
  local buf = vim.fn.bufnr("math.lua")
  vim.api.nvim_set_current_buf(buf)
  local client = require("reins.client").get()
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = { line = 1, character = 0 }, ["end"] = { line = 3, character = 0 } },
    context = { diagnostics = {} },
  }
  local result = client:request_sync("textDocument/codeAction", params, 5000, buf)
  local action
  for _, a in ipairs(result.result or {}) do
    if a.title == "Ask agent about selection" then
      action = a
    end
  end
  T.ok(action, "the server offers 'Ask agent about selection'")
  T.eq(action.command.arguments[1].question, nil, "the action carries no question")
  local asked = H.with_ui({ "What does it return?" }, function()
    client:exec_cmd(action.command, { bufnr = buf })
    T.wait_for(function()
      return H.chat_text():find("It returns `a + b`.", 1, true)
    end, "the answer to the code action's question")
  end)
  T.eq(asked, { "Ask reins about the selection: " }, "the plugin asked for the question")
  H.wait_idle()
  local text = H.chat_text()
  T.contains(text, "What does it return?")
  T.contains(text, "▸ ✓ read math.lua")
end)

T.test("the session list shows the session and resuming re-renders it", function()
  local chat = require("reins.chat")
  local sid = chat.session_id
  local before = H.chat_text()
  -- Forget what the panel shows, so the resumed text can only come from the server.
  require("reins.conversation").reset(sid)
  chat.set_session(nil)
  T.contains(H.chat_text(), "Write in the prompt below")
  local listed
  H.with_ui({
    function(items, opts)
      listed = vim.tbl_map(opts.format_item, items)
      return items[1]
    end,
    function(items)
      return items[1] -- resume
    end,
  }, function()
    vim.cmd("ReinsSessions")
    T.wait_for(function()
      return chat.session_id == sid and H.chat_text():find("It returns", 1, true)
    end, "the resumed conversation")
  end)
  T.eq(#listed, 1, "one session in the list")
  T.contains(listed[1], "What does this do?")
  T.eq(H.chat_text(), before, "the resumed conversation renders as it did live")
end)

T.test(":ReinsTree shows the entries with the leaf marked", function()
  vim.cmd("ReinsTree")
  T.wait_for(function()
    return H.buf_text(vim.fn.bufnr("reins://tree")):find("●", 1, true)
  end, "the tree")
  local text = H.buf_text(vim.fn.bufnr("reins://tree"))
  T.contains(text, "you    What does this do?")
  T.contains(text, "● reins  It returns `a + b`.")
  vim.cmd("close")
end)

T.test(":checkhealth reins reports the binary, the server and the endpoint", function()
  vim.cmd("checkhealth reins")
  local text = H.buf_text(0)
  T.contains(text, "OK found " .. H.reins_bin)
  T.contains(text, "OK version: reins ")
  T.contains(text, "OK answers commands (reins.session.list: 1 sessions in this workspace)")
  T.contains(text, "endpoint: " .. url .. " (from init_options.baseUrl)")
  vim.cmd("bwipeout!")
end)
