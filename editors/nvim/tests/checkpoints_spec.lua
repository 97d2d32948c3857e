-- Files follow the tree: in :ReinsTree, `R` continues from an earlier entry and proposes each file
-- the agent changed since back to how it was there, as a proposal reviewed like any other; the
-- user's own edits stay, and a file where they overlap the agent's change is listed instead.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local original = "local M = {}\nfunction M.add(a, b)\n  return a + b\nend\nreturn M\n"

local url = H.start_llm({
  { toolCalls = { { id = "c1", name = "edit", arguments = { path = "math.lua", edits = {
    { oldText = "  return a + b", newText = "  return b + a" },
  } } } } },
  { text = "Swapped them." },
  { toolCalls = { { id = "c2", name = "write", arguments = { path = "notes.md", content = "why: order\n" } } } },
  { text = "Wrote a note." },
})
H.workspace({ ["math.lua"] = original })
H.setup(url, { init_options = { approval = { edit = "auto", write = "auto" } } })

local review = require("reins.review")
local keys = require("reins.config").options.keymaps

-- What the plugin notified, to check its wording (the runner prints them too).
local notices = H.capture_notices()

local function press(lhs)
  vim.api.nvim_feedkeys(vim.keycode(lhs), "mx", false)
end

--- Puts the cursor of the tree window on the line showing `text`.
local function tree_cursor_on(text)
  local tree = vim.fn.bufnr("reins://tree")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(tree))
  for i, line in ipairs(vim.api.nvim_buf_get_lines(tree, 0, -1, false)) do
    if line:find(text, 1, true) then
      return vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  error("no tree line shows " .. text)
end

T.test("two runs change files; the tree shows what each entry changed", function()
  vim.cmd("edit math.lua")
  require("reins.chat").open(false)
  require("reins.chat").send("Swap the operands.")
  H.wait_idle()
  require("reins.chat").send("Write down why.")
  T.wait_for(function()
    return H.chat_text():find("Wrote a note.", 1, true)
  end, "the second answer")
  H.wait_idle()
  vim.cmd("ReinsTree")
  T.wait_for(function()
    return H.buf_text(vim.fn.bufnr("reins://tree")):find("create notes.md", 1, true)
  end, "the file change entries in the tree")
  T.contains(H.buf_text(vim.fn.bufnr("reins://tree")), "custom edit math.lua")
  T.contains(vim.wo[vim.fn.bufwinid(vim.fn.bufnr("reins://tree"))].winbar, "R files too")
  -- The cursor starts on the leaf (the last line), so a tree longer than its window shows it.
  local tree_win = vim.fn.bufwinid(vim.fn.bufnr("reins://tree"))
  T.wait_for(function()
    local row = vim.api.nvim_win_get_cursor(tree_win)[1]
    return vim.api.nvim_buf_get_lines(vim.fn.bufnr("reins://tree"), row - 1, row, false)[1]:find("● reins  Wrote a note.", 1, true)
  end, "the cursor on the leaf")
end)

T.test("R on the first prompt proposes both files back; accepting restores them, the user's line kept", function()
  local math_buf = vim.fn.bufnr("math.lua")
  T.wait_for(function()
    return H.buf_text(math_buf):find("return b + a", 1, true)
  end, "the agent's edit in the buffer")
  -- The user adds a line of their own at the top (unsaved).
  vim.api.nvim_buf_set_lines(math_buf, 0, 0, false, { "-- mine" })
  tree_cursor_on("you    Swap the operands.")
  press(keys.tree_restore)
  T.wait_for(function()
    return #review.order == 2
  end, "one proposal per file")
  -- At the user's own message the leaf lands just before it, the message back in the prompt.
  T.wait_for(function()
    local text = H.buf_text(vim.fn.bufnr("reins://tree"))
    local leaf, asked = text:find("●", 1, true), text:find("you    Swap the operands.", 1, true)
    return leaf and asked and leaf < asked
  end, "the leaf moved to just before the first prompt")
  T.wait_for(function()
    return H.buf_text(select(2, require("reins.chat").buffers())) == "Swap the operands."
  end, "the first prompt back in the prompt")
  local tools = {}
  for _, id in ipairs(vim.deepcopy(review.order)) do
    table.insert(tools, review.pending[id].edit.tool)
    review.accept(id)
  end
  T.eq(tools, { "checkout", "checkout" })
  T.wait_for(function()
    return H.buf_text(math_buf) == "-- mine\n" .. original:gsub("\n$", "")
  end, "math.lua restored with the user's line")
  T.wait_for(function()
    return vim.fn.filereadable("notes.md") == 0
  end, "the note the agent wrote is gone")
  -- Its buffer, opened to review the deletion, goes with it rather than hold the file.
  T.wait_for(function()
    return vim.fn.bufnr("notes.md") == -1
  end, "the deleted file's buffer gone")
  T.eq(notices[#notices], "reins: 2 file(s) proposed back (review each; \\rA accepts one)")
  T.wait_for(function()
    return #review.order == 0
  end, "nothing pending")
  -- The editor's undo takes the restore back.
  vim.api.nvim_buf_call(math_buf, function()
    vim.cmd("silent undo")
  end)
  T.contains(H.buf_text(math_buf), "return b + a")
end)

T.test("a file whose lines the user changed too is left as it is and listed", function()
  local math_buf = vim.fn.bufnr("math.lua")
  vim.api.nvim_buf_set_lines(math_buf, 0, -1, false, { "local M = {}", "function M.add(a, b)", "  return a + b + 0", "end", "return M" })
  tree_cursor_on("reins  Swapped them.")
  press(keys.tree_restore)
  T.wait_for(function()
    local qf = vim.fn.getqflist({ title = 1, items = 1 })
    return qf.title == "reins: what the restore left alone" and #qf.items > 0
  end, "the conflict in the quickfix list")
  local item = vim.fn.getqflist()[1]
  T.eq(item.lnum, 3, "at the line where the edits meet")
  -- Then the agent's change there, to make by hand.
  local lines = vim.tbl_map(function(i)
    return i.text
  end, vim.list_slice(vim.fn.getqflist(), 2))
  T.eq(lines, { "  @@ -1,5 +1,5 @@", "   local M = {}", "   function M.add(a, b)", "  -  return a + b", "  +  return b + a", "   end", "   return M" })
  T.eq(H.buf_text(math_buf), "local M = {}\nfunction M.add(a, b)\n  return a + b + 0\nend\nreturn M", "untouched")
  T.eq(#review.order, 0, "nothing proposed for it")
  T.eq(notices[#notices], "reins: 1 left as they are — :copen")
end)

T.test("R on the last answer proposes the deleted note again; the notice fits one line", function()
  -- Had the deleted note's buffer stayed, it would stand for the file and nothing would come back.
  local seen = #notices
  tree_cursor_on("reins  Wrote a note.")
  press(keys.tree_restore)
  T.wait_for(function()
    return #notices > seen and #review.order == 1
  end, "the note proposed back")
  T.eq(review.pending[review.order[1]].edit.create, true, "a new file again")
  T.eq(notices[#notices], "reins: 1 file(s) proposed back (review each; \\rA accepts one)")
  -- In a narrow editor the key hint gives way rather than wrap into a hit-enter prompt.
  local report = { edits = { {} }, conflicts = { { path = "a", reason = "r" } } }
  vim.o.columns = 90
  require("reins.sessions").report_restore(report)
  T.eq(notices[#notices], "reins: 1 file(s) proposed back · 1 left as they are — :copen")
  T.ok(vim.fn.strdisplaywidth(notices[#notices]) < vim.v.echospace)
  vim.o.columns = 50
  require("reins.sessions").report_restore(report)
  T.eq(vim.fn.strdisplaywidth(notices[#notices]), vim.v.echospace - 1, "cut to the room there is")
  vim.o.columns = 80
  review.accept(review.order[1])
  T.wait_for(function()
    return vim.fn.filereadable("notes.md") == 1
  end, "the note back")
end)
