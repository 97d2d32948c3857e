-- End to end: three comments on the three hunks of a proposal, made with the comment key; they
-- stay on their hunks while a line is typed above them, go to the agent with the decisions in
-- one batch, and the agent's revision marks each resolved.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local original = table.concat({
  "local M = {}",
  "function M.add(a, b)",
  "  return a + b",
  "end",
  "function M.sub(a, b)",
  "  return a - b",
  "end",
  "function M.mul(a, b)",
  "  return a * b",
  "end",
  "return M",
}, "\n") .. "\n"

local function edit_call(id, edits)
  return { toolCalls = { { id = id, name = "edit", arguments = { path = "calc.lua", edits = edits } } } }
end

local url = H.start_llm({
  edit_call("c1", {
    { oldText = "function M.add(a, b)", newText = "function M.plus(a, b)" },
    { oldText = "function M.sub(a, b)", newText = "function M.minus(a, b)" },
    { oldText = "function M.mul(a, b)", newText = "function M.times(a, b)" },
  }),
  edit_call("c2", {
    { oldText = "function M.add(a, b)", newText = "function M.total(a, b)" },
    { oldText = "function M.sub(a, b)", newText = "function M.difference(a, b)" },
    { oldText = "function M.times(a, b)\n", newText = "function M.times(a, b)\n  -- a times b\n" },
  }),
  { text = "Renamed as you asked." },
})
H.workspace({ ["calc.lua"] = original })
H.setup(url)

local review = require("reins.review")
local keys = require("reins.config").options.keymaps

local function press(lhs)
  vim.api.nvim_feedkeys(vim.keycode(lhs), "mx", false)
end

--- The comment marks of `buf`: "row text" for each, top to bottom.
local function comment_marks(buf)
  local ns = vim.api.nvim_create_namespace("reins.review.comments")
  local shown = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    table.insert(shown, ("%d %s"):format(m[2], m[4].virt_lines[1][1][1]))
  end
  return shown
end

T.test("three comments resolve in one round", function()
  vim.cmd("edit calc.lua")
  local buf = vim.api.nvim_get_current_buf()
  vim.cmd("2,3ReinsAsk Better names?")
  T.wait_for(function()
    return #review.order == 1 and review.pending[review.order[1]].view.layout == "inline"
  end, "the proposal shown inline")
  local p = review.pending[review.order[1]]
  T.eq(#p.edit.hunks, 3, "three hunks")
  -- The comment key is among the hints on each hunk; at 80 columns the label is too long for the
  -- end of the line, so it has a line of its own above the hunk, uncut.
  local labels = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      table.insert(labels, chunk[1])
    end
    for _, line in ipairs(m[4].virt_lines or {}) do
      if line[1] and line[1][1]:find("reins hunk", 1, true) then
        table.insert(labels, line[1][1])
      end
    end
  end
  local label = table.concat(labels, "\n")
  T.contains(label, "reins hunk 1/3 · ")
  T.contains(label, require("reins.render").key(keys.comment_hunk) .. " comment")
  for _, text in ipairs(labels) do
    T.eq(vim.fn.strdisplaywidth(text) <= vim.o.columns, true, "a label fits the window: " .. text)
  end

  vim.api.nvim_set_current_buf(buf)
  local comments = { "call it total", "call it difference", "times is good; add a docstring" }
  for i, row in ipairs({ 2, 5, 8 }) do
    vim.api.nvim_win_set_cursor(0, { row, 0 })
    local asked = H.with_ui({ comments[i] }, function()
      press(keys.comment_hunk)
      T.wait_for(function()
        return review.comments[p.edit.id .. "#" .. (i - 1)] ~= nil
      end, "comment " .. i)
    end)
    T.eq(#asked, 1, "asked once for comment " .. i)
  end
  T.eq(comment_marks(buf), {
    "1 💬 call it total",
    "4 💬 call it difference",
    "7 💬 times is good; add a docstring",
  }, "each comment above its hunk")

  -- A line typed above: the comments move with their hunks.
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "-- calc" })
  T.eq(comment_marks(buf), {
    "2 💬 call it total",
    "5 💬 call it difference",
    "8 💬 times is good; add a docstring",
  }, "the comments moved down a line")

  -- Reject the first two, accept the third: one decision carries all three comments.
  for _, step in ipairs({ { 3, keys.reject_hunk }, { 6, keys.reject_hunk }, { 9, keys.accept_hunk } }) do
    vim.api.nvim_win_set_cursor(0, { step[1], 0 })
    press(step[2])
  end
  T.wait_for(function()
    return #review.order == 1 and review.order[1] ~= p.edit.id
  end, "the revision")
  local revision = review.pending[review.order[1]]
  T.eq(#revision.edit.resolves, 3, "the revision answers the three comments")
  T.eq(comment_marks(buf), {
    "2 ✓ resolved: call it total",
    "5 ✓ resolved: call it difference",
    "8 ✓ resolved: times is good; add a docstring",
  }, "each marked resolved where it was")

  local told
  for _, block in ipairs(require("reins.chat").current().blocks) do
    if block.kind == "tool" and block.result and block.result:find("The user's comments", 1, true) then
      told = block.result
    end
  end
  T.contains(told or "", "hunk 1 (line 3): rejected — comment: call it total\n"
    .. "hunk 2 (line 6): rejected — comment: call it difference\n"
    .. "hunk 3 (line 9): applied — comment: times is good; add a docstring")

  press(keys.accept_all)
  H.wait_idle()
  T.contains(H.buf_text(buf), "function M.total(a, b)\n")
  T.contains(H.buf_text(buf), "function M.times(a, b)\n  -- a times b\n")
  T.eq(comment_marks(buf), {}, "answered comments go once the revision is decided")
end)
