-- A default setup is silent: `setup()` with no options, a file opened, the chat opened — no
-- notification, no message, nothing new in the LSP log. The binary is found as a user's would be
-- (the checkout's build, else `reins` on PATH).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

H.workspace({ ["math.lua"] = "local M = {}\nreturn M\n" })
vim.env.PATH = vim.fn.fnamemodify(H.reins_bin, ":h") .. ":" .. vim.env.PATH

local notified = H.capture_notices()

local log_file = vim.lsp.log.get_filename()
local function log_size()
  local stat = vim.uv.fs_stat(log_file)
  return stat and stat.size or 0
end
local log_before = log_size()
local function new_log()
  local f = io.open(log_file, "rb")
  if not f then
    return ""
  end
  f:seek("set", log_before)
  local text = f:read("*a")
  f:close()
  return text
end

T.test("a default setup, a file and the chat: no message at all", function()
  vim.cmd("messages clear")
  require("reins").setup()
  vim.cmd("edit math.lua")
  local client
  T.wait_for(function()
    client = vim.lsp.get_clients({ name = "reins", bufnr = 0 })[1]
    return client and client.initialized
  end, "the server attached to the file")
  -- Typed as a user would: what follows the command goes into the prompt only in insert mode.
  vim.api.nvim_feedkeys(vim.keycode(":ReinsChat<CR>hello"), "tx", false)
  -- A command answered after `initialized`: whatever the server says at start has been sent.
  local answered
  require("reins.client").exec("reins.session.list", {}, function(err)
    answered = err == nil
  end)
  T.wait_for(function()
    return answered
  end, "an answer to reins.session.list")
  vim.wait(300)
  T.eq(notified, {}, "notifications")
  T.eq(vim.api.nvim_exec2("messages", { output = true }).output, "", ":messages")
  T.eq(new_log(), "", "new lines in " .. log_file)
  local prompt = select(2, require("reins.chat").buffers())
  T.eq(vim.api.nvim_get_current_buf(), prompt, "the cursor is in the prompt")
  T.eq(H.buf_text(prompt), "hello", "text typed after :ReinsChat went into the prompt")
end)

T.test("a file without a filetype gets the server too", function()
  vim.cmd("wincmd t")
  vim.fn.writefile({ "notes" }, "NOTES")
  vim.cmd("edit NOTES")
  T.eq(vim.bo.filetype, "", "no filetype")
  T.wait_for(function()
    return vim.lsp.get_clients({ name = "reins", bufnr = 0 })[1] ~= nil
  end, "the server attached to NOTES")
end)
