-- The plugin's answer to reins's `workspace/applyEdit`: an edit made for another version of the
-- buffer than the one it is at is refused with both versions (Neovim's own handler applies one
-- for version 0 to any text, and answers `applied = true` for one it dropped); one for the
-- buffer's version applies.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({})
H.workspace({ ["a.py"] = "x = 1\n" })
H.setup(url)

T.test("an edit for another version is refused with both versions; one for this version applies", function()
  vim.cmd("edit a.py")
  local buf = vim.api.nvim_get_current_buf()
  T.wait_for(function()
    local client = require("reins.client").get()
    return client and client.initialized and vim.lsp.buf_is_attached(buf, client.id)
  end, "reins attached to the buffer")
  local client = require("reins.client").get()
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "# typed" })
  local version = vim.lsp.util.buf_versions[buf]
  T.ok(version > 0, "the buffer moved past its didOpen version")
  local function edit(v)
    local range = { start = { line = 1, character = 4 }, ["end"] = { line = 1, character = 5 } }
    return { edit = { documentChanges = { {
      textDocument = { uri = vim.uri_from_bufnr(buf), version = v },
      edits = { { range = range, newText = "2" } },
    } } } }
  end
  local handler = require("reins.apply").handler
  for _, old in ipairs({ 0, version - 1 }) do
    local answer = handler(nil, edit(old), { client_id = client.id, method = "workspace/applyEdit" })
    T.eq(answer.applied, false, "version " .. old)
    T.contains(answer.failureReason, ("is at version %d, the edit was made for version %d"):format(version, old))
  end
  T.eq(H.buf_text(buf), "# typed\nx = 1", "nothing applied")
  local answer = handler(nil, edit(version), { client_id = client.id, method = "workspace/applyEdit" })
  T.eq(answer.applied, true)
  T.eq(H.buf_text(buf), "# typed\nx = 2", "applied")
end)
