-- User commands of reins. Without a `require("reins").setup{}` call by the time Neovim has
-- started, reins sets itself up with the defaults (so the server attaches to file buffers);
-- a command run before that does it too.
if vim.g.loaded_reins then
  return
end
vim.g.loaded_reins = true

local function default_setup()
  local reins = require("reins")
  if not reins.did_setup then
    reins.setup({})
  end
end
if vim.v.vim_did_enter == 1 then
  -- Loaded late (by a plugin manager): give a setup call that follows the chance to come first.
  vim.schedule(default_setup)
else
  vim.api.nvim_create_autocmd("VimEnter", { once = true, callback = default_setup })
end

local function ready()
  local reins = require("reins")
  if not reins.did_setup then
    reins.setup({})
  end
  return reins
end

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, function(args)
    -- On an older Neovim the commands exist (0.7 has user commands) but the LSP client they
    -- need does not: say what is needed instead of failing inside the plugin.
    if vim.fn.has("nvim-0.11") == 0 then
      local v = vim.version()
      local message = ("reins: :%s needs Neovim 0.11 or newer; this is %d.%d.%d"):format(name, v.major, v.minor, v.patch)
      return vim.notify(message, vim.log.levels.ERROR)
    end
    ready()
    fn(args)
  end, opts or {})
end

cmd("ReinsChat", function()
  require("reins.chat").toggle()
end, { desc = "reins: toggle the chat panel" })

cmd("ReinsSend", function(args)
  local chat = require("reins.chat")
  chat.open(false)
  chat.send(args.args ~= "" and args.args or nil)
end, { nargs = "*", desc = "reins: send a message (or the prompt's text)" })

cmd("ReinsAsk", function(args)
  require("reins.ask").range(0, args.line1, args.line2, args.args)
end, { range = true, nargs = "*", desc = "reins: ask about the selected lines" })

cmd("ReinsCancel", function()
  require("reins.chat").cancel()
end, { desc = "reins: cancel the run in progress" })

cmd("ReinsNew", function()
  local chat = require("reins.chat")
  chat.open(false)
  chat.new_session()
end, { desc = "reins: start a new session" })

cmd("ReinsSessions", function()
  require("reins.sessions").pick()
end, { desc = "reins: resume, rename or fork a session" })

cmd("ReinsTree", function()
  require("reins.sessions").tree()
end, { desc = "reins: the current session's tree" })

cmd("ReinsAccept", function()
  require("reins.review").accept()
end, { desc = "reins: accept the proposal under the cursor, or the latest one" })

cmd("ReinsReject", function(args)
  require("reins.review").reject(nil, args.args ~= "" and args.args or nil)
end, { nargs = "*", desc = "reins: reject the proposal (optional reason)" })

cmd("ReinsPending", function()
  require("reins.review").quickfix()
end, { desc = "reins: pending proposals in the quickfix list" })

cmd("ReinsAgent", function(args)
  require("reins.agents").start(args.args)
end, { nargs = "+", desc = "reins: start an agent on a worktree of its own; its change comes back for review" })

cmd("ReinsAgents", function()
  require("reins.agents").show()
end, { desc = "reins: worktree agents, running and finished, with cost and changed files" })
