-- End to end: asking about a selection streams the answer into the panel; the code action asks
-- for its question; sessions are listed and resumed.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local answer = "This function adds two numbers and returns their sum. Nothing looks wrong."

local url = H.start_llm({
  { thinking = "Looking at the selection.", text = answer, chunkChars = 4, chunkDelayMs = 15 },
  { toolCalls = { { id = "c1", name = "read", arguments = { path = "math.lua" } } } },
  { text = "It returns `a + b`." },
  { text = "You are welcome." },
  { text = "A second answer, at the end of the chat." },
  { text = string.rep("Streaming slowly, line by line.\n", 12), chunkChars = 8, chunkDelayMs = 40 },
})
H.workspace({ ["math.lua"] = "local M = {}\nfunction M.add(a, b)\n  return a + b\nend\nreturn M\n" })
H.setup(url)

local function press_keys(lhs)
  vim.api.nvim_feedkeys(vim.keycode(lhs), "mx", false)
end

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
  -- Headless Neovim is 80 columns wide: room for the whole winbar takes a wider chat.
  vim.api.nvim_win_set_width(select(1, chat.windows()), 70)
  chat.render()
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
end)

T.test("continuing from an earlier entry redraws the chat whole, its end in view, its size kept", function()
  local chat = require("reins.chat")
  local win = chat.windows()
  local height, width = vim.api.nvim_win_get_height(win), vim.api.nvim_win_get_width(win)
  local tree = vim.fn.bufnr("reins://tree")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(tree))
  local row
  for i, line in ipairs(vim.api.nvim_buf_get_lines(tree, 0, -1, false)) do
    if line:find("This function adds two numbers", 1, true) then
      row = i
    end
  end
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  press_keys("<CR>")
  T.wait_for(function()
    return H.buf_text(tree):find("● reins  This function adds two numbers", 1, true)
  end, "the leaf to move")
  T.wait_for(function()
    return not H.chat_text():find("It returns", 1, true) and chat.settled()
  end, "the chat to show the earlier branch")
  vim.cmd("redraw")
  local count = vim.api.nvim_buf_line_count((chat.buffers()))
  T.eq(vim.fn.line("w$", win), count, "the last line is in view")
  -- Filled: the lines from the top one down take the window, one more would not fit.
  local top, text_height = vim.fn.line("w0", win), vim.fn.winheight(win)
  local function rows(from)
    return vim.api.nvim_win_text_height(win, { start_row = from - 1, end_row = count - 1 }).all
  end
  T.ok(rows(top) <= text_height and (top == 1 or rows(top - 1) > text_height), ("the window is filled (top %d of %d)"):format(top, count))
  T.eq({ vim.api.nvim_win_get_height(win), vim.api.nvim_win_get_width(win) }, { height, width }, "the window keeps its size")
  T.contains(H.chat_text(), answer)
  vim.cmd("close")
end)

T.test(":checkhealth reins reports the binary, the server and the endpoint", function()
  vim.cmd("checkhealth reins")
  local text = H.buf_text(0)
  T.contains(text, "OK using " .. H.reins_bin .. " (cmd in setup())")
  T.contains(text, "OK version: reins ")
  T.contains(text, "OK answers commands (reins.session.list: 1 sessions in this workspace)")
  T.contains(text, "endpoint: " .. url .. " (from init_options.baseUrl)")
  vim.cmd("bwipeout!")
end)

T.test("the prompt stays in insert mode after sending", function()
  vim.cmd("wincmd t")
  local chat = require("reins.chat")
  -- Typed as a user would: what follows <C-s> goes into the prompt only in insert mode.
  vim.api.nvim_feedkeys(vim.keycode(":lua require('reins.chat').open(true)<CR>Thanks<C-s>and more"), "tx", false)
  local prompt = select(2, chat.buffers())
  T.eq(H.buf_text(prompt), "and more", "text typed after <C-s> went into the prompt")
  T.wait_for(function()
    return H.chat_text():find("You are welcome.", 1, true)
  end, "the answer")
  T.contains(H.chat_text(), "## You\nThanks")
end)

--- The chat window, current, with its cursor moved to `keys` as a user would.
local function chat_cursor(keys)
  local win = require("reins.chat").windows()
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_feedkeys(vim.keycode("<Esc>" .. keys), "tx", false)
  -- The main loop would fire CursorMoved before the next key; a script has none.
  vim.api.nvim_exec_autocmds("CursorMoved", { buffer = vim.api.nvim_win_get_buf(win) })
  return win
end

local function at_end(win)
  vim.cmd("redraw")
  local count = vim.api.nvim_buf_line_count(vim.api.nvim_win_get_buf(win))
  return vim.api.nvim_win_get_cursor(win)[1] == count and vim.fn.line("w$", win) == count
end

T.test("a new message shows its answer even when the chat cursor was up", function()
  local chat = require("reins.chat")
  local win = chat_cursor("gg")
  T.eq(vim.api.nvim_win_get_cursor(win)[1], 1, "cursor at the top")
  chat.send("One more thing.")
  T.wait_for(function()
    return H.chat_text():find("A second answer, at the end of the chat.", 1, true) and chat.settled()
  end, "the second answer")
  T.ok(at_end(win), "the chat window shows the end")
  T.ok(not chat.marked(win), "no mark")
end)

T.test("moving up while an answer streams stops following and marks new output below", function()
  local chat = require("reins.chat")
  local win = chat.windows()
  chat.send("Stream something long.")
  T.wait_for(function()
    return H.chat_text():find("Streaming slowly", 1, true)
  end, "the answer to start")
  chat_cursor("gg")
  H.wait_idle()
  T.ok(H.chat_text():find(string.rep("Streaming slowly, line by line.\n", 11), 1, true), "the whole answer")
  T.eq(vim.api.nvim_win_get_cursor(win)[1], 1, "the cursor stayed where the user put it")
  T.ok(chat.marked(win), "new output below is marked")
  chat_cursor("G")
  T.ok(at_end(win), "G goes to the end")
  T.ok(not chat.marked(win), "the mark is gone")
  chat.render()
  T.ok(at_end(win), "and the window follows again")
end)

T.test("a fork at one of your messages starts before it and puts the message back in the prompt", function()
  local chat = require("reins.chat")
  local tree
  require("reins.client").exec("reins.session.tree", { sessionId = chat.session_id }, function(_, result)
    tree = result
  end)
  T.wait_for(function()
    return tree ~= nil
  end, "the tree")
  local asked
  for _, node in ipairs(tree.nodes) do
    if node.role == "user" and node.preview == "Stream something long." then
      asked = node
    end
  end
  local before = chat.session_id
  require("reins.sessions").fork(before, asked.id)
  T.wait_for(function()
    return chat.session_id ~= before
  end, "the fork")
  local _, pbuf = chat.buffers()
  T.wait_for(function()
    return H.buf_text(pbuf) == "Stream something long."
  end, "the message back in the prompt")
  T.ok(not H.chat_text():find("Streaming slowly", 1, true), "the fork ends before the message")
end)

T.test("slash commands complete from the server's list, and a built-in answers in a notice", function()
  local chat = require("reins.chat")
  vim.fn.mkdir(vim.env.REINS_HOME .. "/prompts", "p")
  local f = assert(io.open(vim.env.REINS_HOME .. "/prompts/review.md", "w"))
  f:write('---\ndescription: Review staged git changes\nargument-hint: "[focus]"\n---\nReview. Focus on $1.\n')
  f:close()
  local listed
  require("reins.client").exec("reins.command.list", {}, function(_, result)
    listed = result
  end)
  T.wait_for(function()
    return listed ~= nil
  end, "the command list")
  local words = function(typed)
    return vim.tbl_map(function(item)
      return item.word
    end, chat.command_items(listed.commands, typed))
  end
  T.eq(words("/re"), { "/review" })
  T.eq(words("/")[1], "/compact")
  T.eq(chat.command_items(listed.commands, "/rev")[1].abbr, "/review [focus]")
  local notices = H.capture_notices()
  chat.send("/model scripted")
  T.wait_for(function()
    for _, notice in ipairs(notices) do
      if notice:find("reins: Model: ", 1, true) then
        return true
      end
    end
  end, "the built-in's answer")
end)
