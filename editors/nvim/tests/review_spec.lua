-- End to end: the agent proposes a two-hunk edit after answering a question about a selection;
-- one hunk is accepted from the inline review, the other rejected; `u` undoes the change. A
-- second proposal is reviewed in the diff layout and rejected with a reason. A third has one
-- hunk accepted and the other rejected with a reason, which reaches the model.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local original = table.concat({
  "local M = {}",
  "function M.add(a, b)",
  "  return a + b",
  "end",
  "function M.sub(a, b)",
  "  return a - b",
  "end",
  "return M",
}, "\n")

local function edit_call(id, edits)
  return { toolCalls = { { id = id, name = "edit", arguments = { path = "math.lua", edits = edits } } } }
end

local url = H.start_llm({
  vim.tbl_extend("force", edit_call("c1", {
    { oldText = "  return a + b", newText = "  return b + a -- commutative" },
    { oldText = "  return a - b", newText = "  return -(b - a)" },
  }), { text = "Both functions are fine; I will make the order explicit.", chunkChars = 6, chunkDelayMs = 10 }),
  { text = "Kept the first change only." },
  edit_call("c2", { { oldText = "return M", newText = "return setmetatable(M, {})" } }),
  { text = "Understood, leaving it as it is." },
  edit_call("c3", {
    { oldText = "  return b + a -- commutative", newText = "  return b + a" },
    { oldText = "  return a - b", newText = "  return a - b -- plain" },
  }),
  { text = "Dropped the comment; sub keeps no comment." },
  { toolCalls = { { id = "b1", name = "bash", arguments = { command = "echo one" } } } },
  { toolCalls = { { id = "b2", name = "bash", arguments = { command = "echo two" } } } },
  { text = "Both commands ran." },
  { toolCalls = { { id = "u1", name = "edit", arguments = { path = "util.lua", edits = {
    { oldText = "  return 1", newText = "  return 100" },
    { oldText = "  return 2", newText = "  return 200" },
  } } } } },
  { text = "Util updated." },
})
local util = "local U = {}\nfunction U.one()\n  return 1\nend\nfunction U.two()\n  return 2\nend\nreturn U\n"
H.workspace({ ["math.lua"] = original .. "\n", ["util.lua"] = util })
H.setup(url)

local review = require("reins.review")
local keys = require("reins.config").options.keymaps

local function press(lhs)
  vim.api.nvim_feedkeys(vim.keycode(lhs), "mx", false)
end

local function wait_proposal(what)
  T.wait_for(function()
    return #review.order == 1 and review.pending[review.order[1]].view.layout ~= "none"
  end, what or "a proposal shown for review")
  return review.pending[review.order[1]]
end

T.test("a two-hunk edit proposed after an answer is shown inline", function()
  vim.cmd("edit math.lua")
  local buf = vim.api.nvim_get_current_buf()
  vim.cmd("2,3ReinsAsk Can this be clearer?")
  local p = wait_proposal()
  T.contains(H.chat_text(), "Both functions are fine; I will make the order explicit.")
  T.eq(#p.edit.hunks, 2, "two hunks")
  T.eq(p.view.buf, buf, "shown in the file's buffer")
  T.eq(vim.api.nvim_get_current_buf(), buf, "the cursor stayed in the file")
  T.eq(H.buf_text(buf), original, "the buffer is unchanged while the edit waits")
  -- Lines to be replaced are highlighted; the proposed ones are virtual lines.
  local marks = vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })
  local virt, deleted = {}, {}
  for _, m in ipairs(marks) do
    local d = m[4]
    if d.line_hl_group == "ReinsDelete" then
      table.insert(deleted, m[2])
    end
    for _, vl in ipairs(d.virt_lines or {}) do
      -- A hunk's label too long for the end of its line (at 80 columns) has a line of its own.
      if not vim.trim(vl[1][1]):find("^reins hunk") then
        table.insert(virt, vim.trim(vl[1][1]))
      end
    end
  end
  table.sort(deleted)
  T.eq(deleted, { 2, 5 }, "rows highlighted as replaced")
  T.eq(virt, { "+   return b + a -- commutative", "+   return -(b - a)" }, "proposed lines")
  -- The proposed lines start at the window's edge, their `+` in the sign column, so their text
  -- lines up with the text of the lines they replace.
  vim.cmd("redraw")
  local textoff = vim.fn.getwininfo(vim.fn.bufwinid(buf))[1].textoff
  for _, m in ipairs(marks) do
    local d = m[4]
    if d.virt_lines and d.virt_lines[1][1][1]:find("^%+") then
      T.eq(d.virt_lines_leftcol, true, "from the window's edge")
      -- The `+` and the gutter's width, then the line's own two-space indent.
      T.eq(vim.fn.strdisplaywidth(d.virt_lines[1][1][1]:match("^%+%s*")), textoff + 2, "the text under the text")
    end
  end
  T.wait_for(function()
    return H.chat_text():find("▸ ⏸ edit math.lua — 2 hunks · waiting for your review", 1, true)
  end, "the proposal in the panel")
end)

T.test("accepting one hunk and rejecting the other applies exactly that hunk; u undoes it", function()
  local p = review.pending[review.order[1]]
  local buf = p.view.buf
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  press(keys.next_hunk)
  T.eq(vim.api.nvim_win_get_cursor(0)[1], 3, "next hunk goes to the first proposed change")
  press(keys.accept_hunk)
  T.eq(p.decisions[0], true, "first hunk accepted")
  T.eq(vim.api.nvim_win_get_cursor(0)[1], 6, "the cursor moved on to the next hunk")
  -- The last decision rejects a hunk: a reason is asked for; Esc takes the reject back.
  local asked = H.with_ui({ vim.NIL }, function()
    press(keys.reject_hunk)
  end)
  T.eq(asked, { "Reject — reason for the agent (optional): " }, "asked for a reason")
  T.eq(p.decisions[1], nil, "Esc took the reject back")
  T.eq(#review.order, 1, "still pending")
  H.with_ui({ "sub stays as it is" }, function()
    press(keys.reject_hunk)
    T.wait_for(function()
      return #review.order == 0
    end, "the proposal to be resolved")
  end)
  local expected = original:gsub("  return a %+ b", "  return b + a -- commutative")
  T.wait_for(function()
    return H.buf_text(buf) == expected
  end, "the accepted hunk in the buffer")
  T.eq(#vim.api.nvim_buf_get_extmarks(buf, vim.api.nvim_get_namespaces()["reins.review"], 0, -1, {}), 0, "review marks cleared")
  H.wait_idle()
  T.contains(H.chat_text(), "▸ ✓ edit math.lua — partly accepted (hunk 1)\n  reason: sub stays as it is")
  T.contains(H.chat_text(), "Kept the first change only.")
  vim.cmd("silent normal! u")
  T.eq(H.buf_text(buf), original, "one undo restores the buffer")
  vim.cmd("silent normal! \18") -- <C-r>: keep the change for what follows
  T.eq(H.buf_text(buf), expected, "redo")
end)

T.test("a proposal in the diff layout, rejected with a reason", function()
  require("reins.config").options.review.layout = "diff"
  local buf = vim.fn.bufnr("math.lua")
  local before = H.buf_text(buf)
  local tabs = #vim.api.nvim_list_tabpages()
  vim.cmd("ReinsSend Please also wrap the module.")
  local p = wait_proposal()
  T.eq(p.view.layout, "diff", "diff layout")
  T.eq(#vim.api.nvim_list_tabpages(), tabs + 1, "a diff tab")
  T.eq(vim.api.nvim_get_current_buf(), p.view.right, "the cursor is on the proposed side")
  T.contains(H.buf_text(p.view.right), "return setmetatable(M, {})")
  T.ok(vim.wo.diff, "diff mode")
  -- The tab is labelled with the file's name, not a shortened `r//r/e/p/math.lua`.
  local label = vim.fn.pathshorten(vim.fn.fnamemodify(vim.api.nvim_buf_get_name(p.view.right), ":~:."))
  T.contains(label, "math.lua (proposed, " .. p.edit.id .. ")")
  H.with_ui({ "keep the module plain" }, function()
    press(keys.reject_all)
    T.wait_for(function()
      return #review.order == 0
    end, "the rejection")
  end)
  T.eq(#vim.api.nvim_list_tabpages(), tabs, "the diff tab closed")
  H.wait_idle()
  T.eq(H.buf_text(buf), before, "nothing applied")
  local text = H.chat_text()
  T.contains(text, "▸ ✗ edit math.lua — rejected\n  reason: keep the module plain")
  T.contains(text, "Understood, leaving it as it is.")
end)

T.test("the reason for rejecting hunk 2 after accepting hunk 1 reaches the model", function()
  require("reins.config").options.review.layout = "inline"
  vim.cmd("ReinsSend Tidy the comments.")
  local p = wait_proposal()
  T.eq(#p.edit.hunks, 2, "two hunks")
  vim.api.nvim_set_current_buf(p.view.buf)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  press(keys.next_hunk)
  press(keys.accept_hunk)
  T.eq(p.decisions[0], true, "first hunk accepted")
  local asked = H.with_ui({ "sub needs no comment" }, function()
    press(keys.reject_all)
    T.wait_for(function()
      return #review.order == 0
    end, "the decision")
  end)
  T.eq(#asked, 1, "asked for a reason once")
  H.wait_idle()
  T.contains(H.buf_text(p.view.buf), "  return b + a\n")
  T.contains(H.buf_text(p.view.buf), "  return a - b\n")
  local text = H.chat_text()
  T.contains(text, "▸ ✓ edit math.lua — partly accepted (hunk 1)\n  reason: sub needs no comment")
  T.contains(text, "Dropped the comment; sub keeps no comment.")
  -- The tool result is what the model read in its next request.
  local told
  for _, block in ipairs(require("reins.chat").current().blocks) do
    if block.kind == "tool" and block.result and block.result:find("did not apply", 1, true) then
      told = block.result
    end
  end
  T.contains(told or "", "The user's reason for not applying hunk 2: sub needs no comment")
end)

T.test(":ReinsPending lists nothing once every proposal is decided", function()
  review.quickfix()
  T.eq(#vim.fn.getqflist(), 0, "empty quickfix list")
end)

T.test("a held command: the chat's keys work in the file window and edit nothing; allow for the session", function()
  local buf = vim.fn.bufnr("math.lua")
  local before = H.buf_text(buf)
  vim.cmd("ReinsSend Run the commands.")
  T.wait_for(function()
    return #review.order == 1 and review.pending[review.order[1]].edit.tool == "bash"
  end, "the command held for review")
  T.wait_for(function()
    return H.chat_text():find("⏸ bash echo one", 1, true)
  end, "the command in the chat")
  local hint = "  \\rA accept · \\rS allow for the session · \\rR reject"
  T.contains(H.chat_text(), hint)
  -- In the file's window, where the hint's keys would otherwise replace a character.
  vim.cmd("wincmd t")
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  press(keys.accept_session)
  H.wait_idle()
  T.eq(H.buf_text(buf), before, "the file is unchanged")
  T.eq(#review.order, 0, "nothing pending")
  local text = H.chat_text()
  T.contains(text, "▸ ✓ bash echo one")
  T.contains(text, "▸ ✓ bash echo two")
  T.contains(text, "Both commands ran.")
  T.eq(vim.fn.maparg(keys.accept_all, "n"), "", "the keys are unmapped once nothing waits")
  T.eq(vim.fn.maparg(keys.accept_session, "n"), "", "the keys are unmapped once nothing waits")
end)

T.test("a proposal for a file that is not open opens it beside, and its hunks follow typing", function()
  local math_buf = vim.fn.bufnr("math.lua")
  vim.api.nvim_set_current_buf(math_buf)
  vim.cmd("ReinsSend Update util.")
  local p = wait_proposal()
  local ubuf = p.view.buf
  T.eq(p.view.layout, "inline", "reviewed hunk by hunk")
  T.eq(vim.fn.fnamemodify(vim.api.nvim_buf_get_name(ubuf), ":t"), "util.lua", "in util.lua's buffer")
  T.ok(vim.fn.bufwinid(ubuf) ~= -1, "util.lua is shown in a window")
  T.eq(vim.api.nvim_get_current_buf(), math_buf, "the cursor stayed in math.lua")
  T.wait_for(function()
    return #vim.diagnostic.get(ubuf, { namespace = vim.lsp.diagnostic.get_namespace(require("reins.client").get().id) }) == 2
  end, "the server's diagnostics on the two hunks")

  -- Two lines typed at the top: the hunks move down with the text, in the view and on the server.
  vim.api.nvim_buf_set_lines(ubuf, 0, 0, false, { "-- a", "-- b" })
  local ns_diag = vim.lsp.diagnostic.get_namespace(require("reins.client").get().id)
  T.wait_for(function()
    local rows = vim.tbl_map(function(d)
      return d.lnum
    end, vim.diagnostic.get(ubuf, { namespace = ns_diag }))
    table.sort(rows)
    return vim.deep_equal(rows, { 4, 7 })
  end, "the diagnostics to move down two lines")
  T.contains(vim.diagnostic.get(ubuf, { namespace = ns_diag })[1].message, "(hunk 1 of 2)")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(ubuf))
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  press(keys.next_hunk)
  T.eq(vim.api.nvim_win_get_cursor(0)[1], 5, "]h goes to the first hunk where it is now")
  press(keys.accept_hunk)
  T.eq(vim.api.nvim_win_get_cursor(0)[1], 8, "and on to the second")
  press(keys.accept_hunk)
  T.wait_for(function()
    return #review.order == 0
  end, "the decision")
  H.wait_idle()
  T.eq(H.buf_text(ubuf), "-- a\n-- b\n" .. util:gsub("return 1\n", "return 100\n"):gsub("return 2\n", "return 200\n"):gsub("\n$", ""))
  T.contains(H.chat_text(), "Util updated.")
end)
