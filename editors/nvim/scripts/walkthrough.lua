-- The driver of walkthrough.sh, loaded as Neovim's init file: sets up reins against the scripted
-- model server, then plays the tour step by step, saying on the file window's top line what
-- happens and which key does it. With REINS_WALK_CAPTURE set, each step's screen is saved there.
vim.opt.runtimepath:prepend(vim.env.REINS_PLUGIN)
vim.cmd("runtime plugin/reins.lua")
vim.o.termguicolors = true
vim.o.number = true
vim.o.signcolumn = "yes"
vim.o.laststatus = 3
vim.o.showmode = false
vim.g.mapleader = "\\"
vim.cmd("filetype plugin indent on")
vim.cmd("syntax on")

require("reins").setup({
  cmd = { vim.env.REINS_BIN, "lsp" },
  init_options = { baseUrl = vim.env.REINS_WALK_URL, apiKey = "walkthrough", model = "scripted" },
})

local capture_dir = vim.env.REINS_WALK_CAPTURE ~= "" and vim.env.REINS_WALK_CAPTURE or nil
local review = require("reins.review")
local chat = require("reins.chat")
local file_win

local co
local function resume()
  local ok, err = coroutine.resume(co)
  if not ok then
    vim.notify("walkthrough: " .. tostring(err), vim.log.levels.ERROR)
  end
end

local function sleep(ms)
  vim.defer_fn(resume, ms)
  coroutine.yield()
end

local function wait_until(cond)
  while not cond() do
    sleep(50)
  end
end

local step_no, steps_total = 0, 12
local function step(text)
  step_no = step_no + 1
  if file_win and vim.api.nvim_win_is_valid(file_win) then
    vim.wo[file_win].winbar = ("%%#IncSearch# Step %d/%d %%#Title# %s"):format(step_no, steps_total, text:gsub("%%", "%%%%"))
  end
  vim.cmd("redraw")
end

local function snapshot(name)
  if not capture_dir then
    return
  end
  sleep(300)
  vim.cmd("redraw")
  local text = vim.fn.system({ "tmux", "capture-pane", "-p", "-t", vim.env.TMUX_PANE or "" })
  vim.fn.writefile(vim.split(text, "\n"), ("%s/%02d-%s.txt"):format(capture_dir, step_no, name))
end

local function keys(lhs)
  vim.api.nvim_feedkeys(vim.keycode(lhs), "m", false)
end

local function pending()
  return review.order[1] and review.pending[review.order[1]]
end

local function idle()
  local conv = chat.current()
  return conv and not conv.running and chat.settled()
end

local function tour()
  file_win = vim.api.nvim_get_current_win()
  step("A Lua file. We select M.add and M.sub and ask reins about them.")
  sleep(2500)
  keys("3GV7j")
  sleep(800)
  keys(":ReinsAsk What do these do? Anything to improve?")
  sleep(1500)
  keys("<CR>")
  step("The chat opens on the right and the answer streams in.")
  wait_until(function()
    return pending() ~= nil
  end)
  sleep(600)
  vim.api.nvim_set_current_win(file_win)
  keys("<Esc>")
  step("An edit is proposed: red lines would become the green ones. Nothing changed yet.")
  snapshot("answer-and-proposal")
  sleep(3500)
  keys("gg")
  keys("]h")
  step("]h jumps to the next hunk; \\ra accepts it …")
  sleep(2000)
  keys("\\ra")
  sleep(1500)
  step("… \\rr rejects the other. When all are decided, the accepted ones apply.")
  snapshot("hunk-accepted")
  sleep(2000)
  keys("\\rr")
  sleep(1200)
  step("Rejecting asks why (optional; Esc takes the reject back): the agent reads the reason.")
  snapshot("reason")
  sleep(1500)
  keys("sub is fine as it is")
  sleep(1200)
  keys("<CR>")
  wait_until(function()
    return pending() == nil and idle()
  end)
  step("Only the first hunk is in the buffer (u undoes it); the agent was told.")
  snapshot("applied")
  sleep(3500)
  step("We write in the prompt (bottom right) and send it with <C-s>.")
  local _, pwin = chat.windows()
  vim.api.nvim_set_current_win(pwin)
  sleep(800)
  keys("iCould you also freeze the module?")
  sleep(1500)
  keys("<C-s>")
  wait_until(function()
    return pending() ~= nil
  end)
  vim.api.nvim_set_current_win(file_win)
  keys("<Esc>G")
  step("Another proposal. \\rR rejects it, with a reason for the agent.")
  snapshot("second-proposal")
  sleep(3000)
  keys("\\rR")
  sleep(1200)
  keys("keep it a plain table")
  sleep(1200)
  keys("<CR>")
  wait_until(function()
    return pending() == nil and idle()
  end)
  sleep(500)
  step("In the chat, <CR> on a tool call or on Thinking expands it.")
  local win = chat.windows()
  vim.api.nvim_set_current_win(win)
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  for i, l in ipairs(lines) do
    if l:find("edit math.lua", 1, true) and l:find("▸", 1, true) then
      vim.api.nvim_win_set_cursor(win, { i, 0 })
      break
    end
  end
  sleep(1500)
  keys("<CR>")
  snapshot("expanded")
  sleep(3500)
  keys("<CR>G")
  step(":ReinsTree shows the session tree; :ReinsSessions resumes or forks one.")
  vim.api.nvim_set_current_win(file_win)
  vim.cmd("ReinsTree")
  sleep(1000)
  snapshot("tree")
  sleep(3500)
  vim.cmd("close")
  vim.api.nvim_set_current_win(file_win)
  step("That is the tour. :ReinsChat toggles the panel; :qa! quits.")
  snapshot("end")
  if capture_dir then
    vim.fn.writefile({}, capture_dir .. "/done")
  end
end

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = function()
    co = coroutine.create(tour)
    vim.defer_fn(resume, 500)
  end,
})
