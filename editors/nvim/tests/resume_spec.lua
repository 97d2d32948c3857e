-- After a restart the workspace's last conversation is one key away (`resume`, <C-o>), or shown
-- at once with `chat.resume_last`.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({ { text = "Remembered: the answer is 42." } })
H.workspace({ ["notes.md"] = "# notes\n" })

--- Neovim "restarted": the server stopped, the plugin's buffers and modules gone, set up again.
local function restart(extra)
  for _, c in ipairs(vim.lsp.get_clients({ name = "reins" })) do
    c:stop(true)
  end
  T.wait_for(function()
    return #vim.lsp.get_clients({ name = "reins" }) == 0
  end, "the server to stop")
  vim.cmd("silent! only")
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):match("^reins://") then
      vim.api.nvim_buf_delete(b, { force = true })
    end
  end
  for name in pairs(package.loaded) do
    if name == "reins" or name:match("^reins%.") then
      package.loaded[name] = nil
    end
  end
  H.setup(url, extra)
end

T.test("a conversation to come back to", function()
  H.setup(url)
  require("reins.chat").open(false)
  require("reins.chat").send("What is the answer?")
  T.wait_for(function()
    return H.chat_text():find("Remembered: the answer is 42.", 1, true)
  end, "the answer")
  H.wait_idle()
end)

T.test("after a restart the welcome names the last session and <C-o> resumes it", function()
  restart()
  vim.api.nvim_feedkeys(vim.keycode(":ReinsChat<CR>"), "tx", false)
  T.wait_for(function()
    return H.chat_text():find("Last session: What is the answer?", 1, true)
  end, "the last session in the welcome")
  T.contains(H.chat_text(), "<C-o> resumes it.")
  vim.api.nvim_feedkeys(vim.keycode("<C-o>"), "tx", false)
  T.wait_for(function()
    return H.chat_text():find("Remembered: the answer is 42.", 1, true)
  end, "the resumed conversation")
  T.eq(vim.api.nvim_get_current_buf(), select(2, require("reins.chat").buffers()), "still in the prompt")
end)

T.test("with chat.resume_last the panel opens on the last conversation", function()
  restart({ chat = { resume_last = true } })
  vim.cmd("ReinsChat")
  T.wait_for(function()
    return H.chat_text():find("Remembered: the answer is 42.", 1, true)
  end, "the last conversation")
  T.contains(H.chat_text(), "## You\nWhat is the answer?")
end)
