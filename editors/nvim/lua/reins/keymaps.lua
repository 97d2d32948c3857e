-- Buffer-local keymaps of the plugin's buffers, all taken from the `keymaps` option (a key set
-- to false is not mapped).
local config = require("reins.config")

local M = {}

local function map(buf, modes, key_name, fn, desc)
  local key = config.options.keymaps[key_name]
  if key then
    vim.keymap.set(modes, key, fn, { buffer = buf, desc = "reins: " .. desc, nowait = true })
  end
end

function M.prompt(buf)
  local chat = require("reins.chat")
  -- Sending and steering keep the mode: text typed right after goes into the prompt.
  map(buf, { "n", "i" }, "send", function()
    chat.send()
  end, "send the prompt")
  map(buf, "n", "send_normal", function()
    chat.send()
  end, "send the prompt")
  map(buf, { "n", "i" }, "cancel", chat.cancel, "cancel the run")
  map(buf, { "n", "i" }, "steer", function()
    chat.steer()
  end, "steer the run with the prompt")
  map(buf, { "n", "i" }, "new", chat.new_session, "start a new session")
  map(buf, { "n", "i" }, "resume", chat.resume_last, "resume the last session")
  map(buf, "n", "close", chat.close, "close the chat")
end

function M.chat(buf)
  local chat = require("reins.chat")
  map(buf, "n", "toggle", chat.toggle_block, "expand or collapse")
  map(buf, "n", "close", chat.close, "close the chat")
  map(buf, "n", "focus_prompt", chat.focus_prompt, "write in the prompt")
  map(buf, "n", "cancel", chat.cancel, "cancel the run")
  map(buf, "n", "new", chat.new_session, "start a new session")
  map(buf, "n", "resume", chat.resume_last, "resume the last session")
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
