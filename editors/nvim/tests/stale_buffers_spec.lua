-- A reviewed patch deletes one open file and moves another: once applied, the deleted file's
-- buffer goes (it would otherwise hold the file, and a checkout would take it for the file), and
-- the moved one's windows show it at its new path.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local patch = table.concat({
  "*** Begin Patch",
  "*** Delete File: old.txt",
  "*** Update File: a.lua",
  "*** Move to: b.lua",
  "@@",
  "-return 1",
  "+return 2",
  "*** End Patch",
}, "\n")

local url = H.start_llm({
  { toolCalls = { { id = "p1", name = "apply_patch", arguments = { input = patch } } } },
  { text = "Patched." },
})
H.workspace({ ["old.txt"] = "bye\n", ["a.lua"] = "return 1\n" })
H.setup(url, { init_options = { tools = { editFormat = "apply_patch" } } })

local review = require("reins.review")

T.test("a reviewed deletion and move leave no buffer holding the old files", function()
  vim.cmd("edit old.txt")
  vim.cmd("split a.lua")
  local moved_win = vim.api.nvim_get_current_win()
  require("reins.chat").open(false)
  require("reins.chat").send("Patch it.")
  T.wait_for(function()
    return #review.order > 0
  end, "the patch proposed")
  -- One proposal per file; the patch lands once both are accepted.
  T.wait_for(function()
    return #review.order == 2
  end, "both files proposed")
  for _, id in ipairs(vim.deepcopy(review.order)) do
    review.accept(id)
  end
  H.wait_idle()
  T.eq(vim.fn.filereadable("old.txt"), 0)
  T.eq(vim.fn.readfile("b.lua"), { "return 2" })
  T.wait_for(function()
    return vim.fn.bufnr("old.txt") == -1 and vim.fn.bufnr("a.lua") == -1
  end, "the old paths' buffers gone")
  T.eq(vim.fn.fnamemodify(vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(moved_win)), ":t"), "b.lua")
end)
