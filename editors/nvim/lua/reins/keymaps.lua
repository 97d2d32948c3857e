-- Buffer-local keymaps of the plugin's buffers, all taken from the `keymaps` option (a key set
-- to false is not mapped).
local config = require("reins.config")

local M = {}

--- What each window's keys do, in the order they were mapped: what `?` lists.
M.described = { prompt = {}, chat = {} }

local function map(buf, modes, key_name, fn, desc, window)
  local key = config.options.keymaps[key_name]
  if key then
    vim.keymap.set(modes, key, fn, { buffer = buf, desc = "reins: " .. desc, nowait = true })
    local list = window and M.described[window]
    if list and not vim.iter(list):any(function(d)
      return d.key == key and d.desc == desc
    end) then
      table.insert(list, { key = key, desc = desc, modes = type(modes) == "table" and table.concat(modes) or modes })
    end
  end
end

function M.prompt(buf)
  local chat = require("reins.chat")
  local w = "prompt"
  -- Sending and steering keep the mode: text typed right after goes into the prompt.
  map(buf, { "n", "i" }, "send", function()
    chat.send()
  end, "send the prompt", w)
  map(buf, "n", "send_normal", function()
    chat.send()
  end, "send the prompt", w)
  map(buf, { "n", "i" }, "cancel", chat.cancel, "cancel the run", w)
  map(buf, { "n", "i" }, "steer", function()
    chat.steer()
  end, "steer the run with the prompt", w)
  map(buf, { "n", "i" }, "new", chat.new_session, "start a new session", w)
  map(buf, { "n", "i" }, "resume", chat.resume_last, "resume the last session", w)
  map(buf, "n", "close", chat.close, "close the chat", w)
  map(buf, "n", "help", M.help, "list these keys", w)
end

function M.chat(buf)
  local chat = require("reins.chat")
  local w = "chat"
  map(buf, "n", "toggle", chat.toggle_block, "expand or collapse the thinking or tool call", w)
  map(buf, "n", "close", chat.close, "close the chat", w)
  map(buf, "n", "focus_prompt", chat.focus_prompt, "write in the prompt", w)
  map(buf, "n", "cancel", chat.cancel, "cancel the run", w)
  map(buf, "n", "new", chat.new_session, "start a new session", w)
  map(buf, "n", "resume", chat.resume_last, "resume the last session", w)
  map(buf, "n", "regenerate", chat.regenerate, "answer the last message again", w)
  map(buf, "n", "yank_code", chat.yank_code, "yank the code block under the cursor", w)
  map(buf, "n", "pick_model", function()
    require("reins.model").pick(chat.session_id)
  end, "pick the model", w)
  map(buf, "n", "show_request", function()
    require("reins.request").show()
  end, "show the request last sent to the model", w)
  map(buf, "n", "help", M.help, "list these keys", w)
end

--- The lines `?` shows: every key of the chat window and of the prompt, then what the prompt
--- understands besides.
function M.help_lines()
  local lines = {}
  local function section(title, list)
    table.insert(lines, title)
    local width = 0
    for _, d in ipairs(list) do
      width = math.max(width, vim.fn.strdisplaywidth(d.key))
    end
    for _, d in ipairs(list) do
      local mode = d.modes:find("i", 1, true) and "  (also in insert mode)" or ""
      table.insert(lines, ("  %s%s  %s%s"):format(d.key, (" "):rep(width - vim.fn.strdisplaywidth(d.key)), d.desc, mode))
    end
    table.insert(lines, "")
  end
  section("Chat window", M.described.chat)
  section("Prompt", M.described.prompt)
  vim.list_extend(lines, {
    "In the prompt",
    "  /name         a command: /model /thinking /tools /compact /new /fork /tree /export",
    "                /regenerate /request, and your prompt templates and skills",
    "  @file         attach a workspace file",
    "  #buffer       attach the file buffer you came from",
    "  #selection    attach its last visual selection",
    "  #diagnostics  attach its diagnostics",
    "  #diff         attach the working tree's changes",
    "  (the menu opens as you type; <C-x><C-o> opens it too)",
  })
  return lines
end

--- `?`: every key of the chat in a float; q, <Esc> or ? closes it.
function M.help()
  local lines = M.help_lines()
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  local width = 0
  for _, l in ipairs(lines) do
    width = math.max(width, vim.fn.strdisplaywidth(l))
  end
  width = math.min(width + 2, vim.o.columns - 4)
  local height = math.min(#lines, vim.o.lines - 4)
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2),
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = " reins: keys ",
    title_pos = "center",
    style = "minimal",
  })
  vim.wo[win].wrap = false
  for _, key in ipairs({ "q", "<Esc>", "?" }) do
    vim.keymap.set("n", key, function()
      pcall(vim.api.nvim_win_close, win, true)
    end, { buffer = buf, nowait = true })
  end
end

-- Deciding a whole proposal works in every window while one waits, as the chat's hint says:
-- global normal-mode keys, set when the first proposal comes and removed (the user's own
-- mappings of those keys restored) when none is left.
local global_keys = { saved = nil }

function M.set_global_review_keys()
  if global_keys.saved then
    return
  end
  local review = require("reins.review")
  global_keys.saved = {}
  for _, n in ipairs({
    { "accept_all", review.accept, "accept the pending proposal" },
    { "reject_all", review.reject_prompt, "reject the pending proposal (asks for a reason)" },
    { "accept_session", review.accept_for_session, "accept, and allow this tool for the session" },
  }) do
    local key = config.options.keymaps[n[1]]
    if key then
      local before = vim.fn.maparg(key, "n", false, true)
      table.insert(global_keys.saved, { key = key, before = (before.lhs and before.buffer == 0) and before or nil })
      vim.keymap.set("n", key, function()
        n[2]()
      end, { desc = "reins: " .. n[3], nowait = true })
    end
  end
end

function M.clear_global_review_keys()
  for _, k in ipairs(global_keys.saved or {}) do
    pcall(vim.keymap.del, "n", k.key)
    if k.before then
      vim.fn.mapset("n", false, k.before)
    end
  end
  global_keys.saved = nil
end

--- The review keys of a buffer showing a proposal; returns a function that removes them.
function M.review(buf)
  local review = require("reins.review")
  local names = {
    { "accept_hunk", review.accept_hunk, "accept the hunk under the cursor" },
    { "reject_hunk", review.reject_hunk, "reject the hunk under the cursor" },
    { "comment_hunk", review.comment_hunk, "comment on the hunk under the cursor, for the agent" },
    { "next_hunk", review.next_hunk, "next proposed hunk" },
    { "prev_hunk", review.prev_hunk, "previous proposed hunk" },
  }
  local set = {}
  for _, n in ipairs(names) do
    local key = config.options.keymaps[n[1]]
    if key then
      vim.keymap.set("n", key, n[2], { buffer = buf, desc = "reins: " .. n[3], nowait = true })
      table.insert(set, key)
    end
  end
  return function()
    if vim.api.nvim_buf_is_valid(buf) then
      for _, key in ipairs(set) do
        pcall(vim.keymap.del, "n", key, { buffer = buf })
      end
    end
  end
end

function M.tree(buf, actions)
  map(buf, "n", "tree_navigate", actions.navigate, "continue from this entry")
  map(buf, "n", "tree_restore", actions.restore, "continue from this entry, files restored too")
  map(buf, "n", "tree_fork", actions.fork, "fork a new session from this entry")
  map(buf, "n", "tree_label", actions.label, "label this entry")
  map(buf, "n", "close", actions.close, "close the tree")
end

return M
