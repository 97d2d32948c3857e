-- End to end: what the chat window's keys do with an answer — `yc` yanks the code block under
-- the cursor, `gR` shows the exact request sent (keys redacted), `gr` answers the last message
-- again, and `?` lists every key the chat maps.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({
  { text = "Use this:\n\n```lua\nlocal x = 1\n  return x\n```\n\nDone." },
  { text = "A second take." },
})
H.workspace({ ["a.txt"] = "alpha\n" })
H.setup(url)

local chat = require("reins.chat")

local function press(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), "mx", false)
end

--- Puts the chat window's cursor on the first line that holds `text`.
local function cursor_on(text)
  local win = chat.windows()
  vim.api.nvim_set_current_win(win)
  for i, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
    if line:find(text, 1, true) then
      vim.api.nvim_win_set_cursor(win, { i, 0 })
      return
    end
  end
  error("no line holds " .. text)
end

T.test("yc yanks the code block under the cursor, without its fences", function()
  vim.cmd("ReinsChat")
  vim.cmd("stopinsert")
  -- The key is the provider's: a message that quotes it shows it redacted in the request.
  chat.send("Write code; my key is test-key, keep it.")
  T.wait_for(function()
    return H.chat_text():find("Done.", 1, true)
  end, "the answer")
  H.wait_idle()
  cursor_on("return x")
  press("yc")
  T.eq(vim.fn.getreg('"'), "local x = 1\n  return x\n")
  T.eq(vim.fn.getregtype('"'), "V")
  press('"ayc')
  T.eq(vim.fn.getreg("a"), "local x = 1\n  return x\n", "into the register given")
  local notices = H.capture_notices()
  cursor_on("Done.")
  press("yc")
  T.eq(notices, { "reins: no code block under the cursor" })
end)

T.test("gR shows the request last sent: URL and JSON body, the key redacted", function()
  cursor_on("Done.")
  local tabs = #vim.api.nvim_list_tabpages()
  press("gR")
  T.wait_for(function()
    return #vim.api.nvim_list_tabpages() == tabs + 1
  end, "the request's tab")
  local text = H.buf_text(0)
  T.contains(text, "// POST " .. url .. "/chat/completions")
  T.contains(text, '"model": "scripted",')
  T.contains(text, '"content": "Write code; my key is <redacted>, keep it."')
  T.contains(text, '"role": "system"')
  T.ok(not text:find("test-key", 1, true), "the key is not shown")
  T.eq(vim.bo.filetype, "jsonc")
  press("q")
  T.eq(#vim.api.nvim_list_tabpages(), tabs, "q closes it")
end)

T.test("gr answers the last message again; the first answer stays in the tree", function()
  cursor_on("Done.")
  press("gr")
  T.wait_for(function()
    return H.chat_text():find("A second take.", 1, true)
  end, "the second answer")
  H.wait_idle()
  local text = H.chat_text()
  T.ok(not text:find("Done.", 1, true), "the first answer is no longer in the chat")
  local _, count = text:gsub("Write code; my key is", "")
  T.eq(count, 1, "the message shows once")
  local tree
  require("reins.client").exec("reins.session.tree", { sessionId = chat.session_id }, function(_, result)
    tree = result
  end)
  T.wait_for(function()
    return tree ~= nil
  end, "the tree")
  local asked, answers = 0, 0
  for _, node in ipairs(tree.nodes) do
    if node.role == "user" then
      asked = asked + 1
    elseif node.role == "assistant" then
      answers = answers + 1
    end
  end
  T.eq({ asked, answers }, { 2, 2 }, "two branches, each the message and its answer")
end)

T.test("? lists every key the chat window maps, with what it does", function()
  cursor_on("A second take.")
  local chat_buf = vim.api.nvim_get_current_buf()
  press("?")
  local help = H.buf_text(0)
  T.ok(vim.api.nvim_get_current_buf() ~= chat_buf, "a float opened")
  for _, map in ipairs(vim.api.nvim_buf_get_keymap(chat_buf, "n")) do
    if map.desc and vim.startswith(map.desc, "reins: ") then
      -- The keymap spells <C-c> as <C-C>: compared without case.
      local key = map.lhs
      T.contains(help:lower(), key:lower() .. " ", "the help names " .. key)
      T.contains(help, map.desc:sub(8), "the help says what " .. key .. " does")
    end
  end
  T.contains(help, "yc")
  T.contains(help, "yank the code block under the cursor")
  press("q")
  T.eq(vim.api.nvim_get_current_buf(), chat_buf, "q closes it")
end)
