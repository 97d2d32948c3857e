-- End to end: context words in the prompt (`@file`, `#buffer`, `#selection`, `#diagnostics`,
-- `#diff`) complete as they are typed and reach the model quoted; each reply below is played only
-- when the request holds what it names (`when`), so an answer in the chat shows the server got it.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({
  { when = "Selection: calc.py lines 2-3", text = "Seen the selection." },
  { when = "Selection: notes.md lines 1-2", text = "Seen the notes." },
  { when = "line 2: error: undefined name 'b' (pyflakes)", text = "Seen the diagnostics." },
  { when = "Working-tree changes (git diff)", text = "Seen the diff." },
})
local dir = H.workspace({
  ["calc.py"] = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
  ["notes.md"] = "# Notes\nAdd a multiply function.\n",
})
for _, cmd in ipairs({
  { "git", "init", "-q" },
  { "git", "add", "." },
  { "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start" },
}) do
  vim.fn.system(cmd)
  assert(vim.v.shell_error == 0, table.concat(cmd, " "))
end
-- An uncommitted change for #diff.
vim.fn.writefile({ "def add(a, b):", "    return a + b", "", "", "def sub(a, b):", "    return b - a" }, dir .. "/calc.py")
H.setup(url)

local chat = require("reins.chat")

--- Types `text` into the prompt and sends it as the send key would; waits for `answer`.
local function send(text, answer)
  local _, pbuf = chat.buffers()
  vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, { text })
  chat.send()
  T.wait_for(function()
    return H.chat_text():find(answer, 1, true)
  end, answer)
  H.wait_idle()
end

T.test("#selection and @file go to the model quoted, the words left in the text", function()
  vim.cmd("edit calc.py")
  vim.cmd("normal! 2GVj\27")
  vim.cmd("ReinsChat")
  send("Explain #selection.", "Seen the selection.")
  local text = H.chat_text()
  T.contains(text, "Explain #selection.\n\nSelection: calc.py lines 2-3\n")
  T.contains(text, "    return a + b\n\n")
  send("What does @notes.md ask?", "Seen the notes.")
  T.contains(H.chat_text(), "Selection: notes.md lines 1-2\n")
end)

T.test("#diagnostics quotes the buffer's diagnostics, #diff the working tree's changes", function()
  local buf = vim.fn.bufnr("calc.py")
  local ns = vim.api.nvim_create_namespace("context-spec")
  vim.diagnostic.set(ns, buf, {
    { lnum = 1, col = 4, message = "undefined name 'b'", severity = vim.diagnostic.severity.ERROR, source = "pyflakes" },
    -- reins's own (a pending edit's): not one of the buffer's problems.
    { lnum = 4, col = 0, message = "agent edit waiting", severity = vim.diagnostic.severity.HINT, source = "reins" },
  })
  send("Fix #diagnostics", "Seen the diagnostics.")
  T.contains(H.chat_text(), "- line 2: error: undefined name 'b' (pyflakes)")
  T.ok(not H.chat_text():find("agent edit waiting", 1, true), "reins's own diagnostic is not quoted")
  send("Review #diff", "Seen the diff.")
  local text = H.chat_text()
  T.contains(text, "Working-tree changes (git diff):\n")
  T.contains(text, "-    return a - b\n+    return b - a")
end)

T.test("a context word that attaches nothing says why and keeps the prompt", function()
  local notices = H.capture_notices()
  vim.cmd("wincmd t")
  vim.fn.writefile({ "x = 1" }, "other.py")
  vim.cmd("edit other.py")
  local _, pbuf = chat.buffers()
  vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, { "Explain #selection" })
  chat.send()
  T.eq(notices, { "reins: #selection: nothing was selected in other.py" })
  T.eq(H.buf_text(pbuf), "Explain #selection", "the prompt is kept")
  -- `@` of something that is no file (a decorator), or of a file out of the workspace, is text.
  local outside = vim.fn.tempname()
  vim.fn.writefile({ "secret" }, outside)
  T.eq(require("reins.context").resolve("use @dataclass here").context, {})
  T.eq(require("reins.context").resolve("see @../" .. vim.fs.basename(outside)).context, {})
  T.eq(require("reins.context").resolve("see @" .. outside).context, {})
end)

T.test("a message the server refuses goes back to the prompt", function()
  -- A link inside the workspace to a file outside it: the server reads through canonical paths.
  local outside = vim.fn.tempname()
  vim.fn.writefile({ "secret" }, outside)
  vim.uv.fs_symlink(outside, dir .. "/link.txt")
  local notices = H.capture_notices()
  local _, pbuf = chat.buffers()
  vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, { "Read @link.txt" })
  chat.send()
  T.wait_for(function()
    return #notices > 0
  end, "the refusal")
  T.ok(notices[1]:find("outside", 1, true), notices[1])
  T.eq(H.buf_text(pbuf), "Read @link.txt", "the text is back in the prompt")
  T.ok(not H.chat_text():find("secret", 1, true), "nothing of the file reached the chat")
end)

T.test("@ and # complete in the prompt: as typed, and with <C-x><C-o>", function()
  local context = require("reins.context")
  local words = function(items)
    return vim.tbl_map(function(item)
      return item.word
    end, items)
  end
  T.eq(words(context.items("#d", dir)), { "#diagnostics", "#diff" })
  T.eq(words(context.items("@nts", dir)), { "@notes.md" }, "files match fuzzily")
  T.eq(context.word_before("see @no", 7), 4)
  T.eq(context.word_before("mail a@b", 8), nil, "an @ inside a word is not context")

  local _, pbuf = chat.buffers()
  vim.cmd("stopinsert")
  vim.api.nvim_set_current_win(select(2, chat.windows()))
  vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, {})
  -- Typed as a user would; the menu opens by itself.
  _G.reins_menu = nil
  -- Typed keys run as one batch here, and TextChangedI waits for the keys to stop: it is fired
  -- where a pause would fire it.
  vim.api.nvim_feedkeys(
    vim.keycode("isee #sel<Cmd>doautocmd TextChangedI<CR><Cmd>lua _G.reins_menu = vim.fn.complete_info({ 'items' })<CR><Esc>"),
    "tx",
    false
  )
  T.eq(words(_G.reins_menu.items), { "#selection" }, "the menu as typed")
  T.eq(H.buf_text(pbuf), "see #sel", "the menu shows the first item without inserting it")
  T.eq(vim.bo[pbuf].omnifunc, "v:lua.require'reins.context'.omnifunc")
  vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, { "read @calc" })
  vim.api.nvim_win_set_cursor(0, { 1, 10 })
  T.eq(context.omnifunc(1, ""), 5)
  T.eq(words(context.omnifunc(0, "@calc")), { "@calc.py" })
end)
