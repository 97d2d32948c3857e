-- Reviewing proposed edits. On `edit_proposed` the affected buffer shows the change (inline: the
-- lines to be replaced highlighted, the proposed lines as virtual lines below them; or a
-- side-by-side diff tab). Hunks are accepted or rejected one by one; once every hunk is decided
-- the decision goes to the server (`reins.edit.accept` with the accepted hunks and the reason
-- for the rest, or `reins.edit.reject`), which then sends `workspace/applyEdit`. The buffer is never changed here:
-- approval happens before the edit is applied, so one `u` undoes an accepted edit.
-- A hunk can carry a comment for the agent (`reins.edit.comment`), shown as a virtual line above
-- it and anchored to its text; the server sends every comment with the decision, and the
-- agent's next proposal for those lines marks them resolved (its `resolves`).
local client = require("reins.client")
local config = require("reins.config")
local hunks_mod = require("reins.hunks")

local M = {}

local ns = vim.api.nvim_create_namespace("reins.review")

--- Pending proposals by id: {edit, decisions = {[hunk index] = true|false}, view}.
M.pending = {}
--- Ids in arrival order.
M.order = {}
--- The comments on hunks by "edit id#hunk index": {text, buf, mark, state} where state is
--- "pending" (the edit waits), "sent" (the agent has it) or "resolved" (a proposal answered it).
M.comments = {}

-- Comment marks live in their own namespace: they outlive the review's marks, until answered.
local comment_ns = vim.api.nvim_create_namespace("reins.review.comments")

local function notify(msg, level)
  vim.notify("reins: " .. msg, level or vim.log.levels.INFO)
end

local function encoding()
  local c = client.get()
  return c and c.offset_encoding or "utf-16"
end

--- The loaded buffer of a proposal's file, if any.
local function buffer_of(edit)
  if not edit.uri then
    return nil
  end
  local buf = vim.fn.bufnr(vim.uri_to_fname(edit.uri))
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return buf
  end
  return nil
end

local shown_key = require("reins.render").key

--- What a file proposal does, in a word or two: "new file", "deletion", "move to PATH", "change".
function M.kind(edit)
  if edit.create then
    return "new file"
  elseif edit.delete then
    return "deletion"
  elseif edit.newUri and edit.newUri ~= vim.NIL then
    return "move to " .. vim.fn.fnamemodify(vim.uri_to_fname(edit.newUri), ":~:.")
  end
  return "change"
end

local function hunk_label(p, hunk)
  local total = #p.edit.hunks
  local decided = p.decisions[hunk.index]
  local k = config.options.keymaps
  if decided == true then
    return ("✓ hunk %d/%d accepted (applied once every hunk is decided)"):format(hunk.index + 1, total)
  elseif decided == false then
    return ("✗ hunk %d/%d rejected"):format(hunk.index + 1, total)
  end
  local keys = {}
  local pairs_ = { { k.accept_hunk, "accept" }, { k.reject_hunk, "reject" }, { k.comment_hunk, "comment" }, { k.next_hunk, "next" } }
  for _, pair in ipairs(pairs_) do
    if pair[1] then
      table.insert(keys, shown_key(pair[1]) .. " " .. pair[2])
    end
  end
  return ("reins hunk %d/%d · %s"):format(hunk.index + 1, total, table.concat(keys, " · "))
end

-- Inline layout ---------------------------------------------------------------------------

-- Each hunk's place is kept by an extmark on its first row, so it moves with the text the user
-- types above it until the proposal is decided.
local anchors = vim.api.nvim_create_namespace("reins.review.anchors")

--- Where `hunk` is in the inline view's buffer now: {first, last, new} as hunks.geometry gives.
local function inline_rows(p, hunk)
  local v = p.view
  local g = v.geos[hunk.index]
  local mark = vim.api.nvim_buf_get_extmark_by_id(v.buf, anchors, v.anchors[hunk.index], {})
  local shift = mark[1] and (mark[1] + v.anchor_offset[hunk.index] - g.first) or 0
  return { first = g.first + shift, last = g.last + shift, new = g.new }
end

--- The columns left of the text in the window showing `buf` (signs, numbers, folds), as they are
--- once the review's signs show: proposed lines start at the window's edge with their `+` there,
--- so their text lines up with the lines they replace.
local function gutter(buf, line_count)
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    return 2
  end
  local wo = vim.wo[win]
  local signs = (wo.signcolumn == "no" or wo.signcolumn == "number") and 0 or tonumber(wo.signcolumn:match(":(%d)")) or 1
  local numbers = (wo.number or wo.relativenumber) and math.max(wo.numberwidth, #tostring(line_count) + 1) or 0
  return 2 * signs + numbers + (tonumber(wo.foldcolumn) or 0)
end

local function draw_inline(p)
  local buf = p.view.buf
  vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
  local line_count = vim.api.nvim_buf_line_count(buf)
  if not p.view.geos then
    -- The first drawing: where each hunk is, from the buffer as the proposal found it.
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    p.view.geos, p.view.anchors, p.view.anchor_offset = {}, {}, {}
    for _, hunk in ipairs(p.edit.hunks) do
      local g = hunks_mod.geometry(lines, hunk, encoding())
      local row = math.max(math.min(g.first, line_count - 1), 0)
      p.view.geos[hunk.index] = g
      p.view.anchor_offset[hunk.index] = g.first - row
      p.view.anchors[hunk.index] = vim.api.nvim_buf_set_extmark(buf, anchors, row, 0, {})
    end
  end
  local width = math.max(vim.o.columns, 80)
  local left = gutter(buf, line_count)
  -- With no gutter at all the `+` takes two columns of its own, as before.
  local plus = left > 0 and ("+" .. string.rep(" ", left - 1)) or "+ "
  p.view.rows = {}
  for _, hunk in ipairs(p.edit.hunks) do
    local g = inline_rows(p, hunk)
    local decided = p.decisions[hunk.index]
    local add_group = decided == nil and "ReinsAdd" or "ReinsHunkDecided"
    p.view.rows[hunk.index] = { first = g.first, last = math.max(g.last, g.first) }
    if decided ~= false then
      for row = g.first, math.min(g.last, line_count - 1) do
        vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {
          line_hl_group = decided == nil and "ReinsDelete" or "ReinsHunkDecided",
          sign_text = "-",
          sign_hl_group = "ReinsDelete",
          priority = 200,
        })
      end
    end
    local virt = {}
    if decided ~= false then
      for _, l in ipairs(g.new) do
        local text = plus .. l
        table.insert(virt, { { text .. string.rep(" ", width - vim.fn.strdisplaywidth(text)), add_group } })
      end
    end
    local label_text = " " .. hunk_label(p, hunk) .. " "
    local label = { { label_text, decided == nil and "ReinsHunkHeader" or "ReinsHunkDecided" } }
    local label_row = math.max(math.min(g.first, line_count - 1), 0)
    local row_text = vim.api.nvim_buf_get_lines(buf, label_row, label_row + 1, false)[1] or ""
    local win = vim.fn.bufwinid(buf)
    local win_width = win ~= -1 and vim.api.nvim_win_get_width(win) or vim.o.columns
    if left + vim.fn.strdisplaywidth(row_text) + 1 + vim.fn.strdisplaywidth(label_text) > win_width then
      -- Past the window's edge a label is cut: it goes on a line of its own above the hunk.
      vim.api.nvim_buf_set_extmark(buf, ns, label_row, 0, {
        virt_lines = { label },
        virt_lines_above = true,
        virt_lines_leftcol = left > 0,
        priority = 200,
      })
      label = nil
    end
    if g.last < g.first then
      -- A pure insertion: the label and the new lines sit on the line it goes before.
      local row = math.max(math.min(g.first, line_count - 1), 0)
      vim.api.nvim_buf_set_extmark(buf, ns, row, 0, {
        virt_text = label,
        virt_text_pos = label and "eol" or nil,
        virt_lines = #virt > 0 and virt or nil,
        virt_lines_above = g.first < line_count,
        virt_lines_leftcol = left > 0,
        priority = 200,
      })
    else
      -- The label goes on the first replaced line, the proposed lines below the last one.
      local first, last = math.min(g.first, line_count - 1), math.min(g.last, line_count - 1)
      if label then
        vim.api.nvim_buf_set_extmark(buf, ns, first, 0, { virt_text = label, virt_text_pos = "eol", priority = 200 })
      end
      if #virt > 0 then
        vim.api.nvim_buf_set_extmark(buf, ns, last, 0, { virt_lines = virt, virt_lines_leftcol = left > 0, priority = 200 })
      end
    end
  end
end

-- Diff layout -----------------------------------------------------------------------------

local function scratch(name, lines, ft)
  local buf = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, buf, name)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].bufhidden = "wipe"
  if ft and ft ~= "" then
    vim.bo[buf].filetype = ft
  end
  return buf
end

local function draw_diff(p)
  local v = p.view
  for _, b in ipairs({ v.left, v.right }) do
    if vim.api.nvim_buf_is_valid(b) then
      vim.api.nvim_buf_clear_namespace(b, ns, 0, -1)
    end
  end
  for _, hunk in ipairs(p.edit.hunks) do
    local placed = v.placed[hunk.index + 1]
    local row = math.max(0, math.min(placed.first, vim.api.nvim_buf_line_count(v.right) - 1))
    vim.api.nvim_buf_set_extmark(v.right, ns, row, 0, {
      virt_text = { { " " .. hunk_label(p, hunk) .. " ", p.decisions[hunk.index] == nil and "ReinsHunkHeader" or "ReinsHunkDecided" } },
      virt_text_pos = "eol",
    })
  end
end

local function open_diff(p, buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local new, placed, geos = hunks_mod.apply(lines, p.edit.hunks, encoding())
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":~:.")
  local ft = vim.bo[buf].filetype
  local here = vim.api.nvim_get_current_tabpage()
  vim.cmd("tabnew")
  -- Named for people: a tab's label shortens every directory of a name to one letter, which
  -- turned `reins://review/e1/proposed/calc.py` into `r//r/e/p/calc.py`.
  local left = scratch(("%s (now, %s)"):format(name, p.edit.id), lines, ft)
  vim.api.nvim_win_set_buf(0, left)
  vim.cmd("diffthis")
  vim.wo.winbar = "%#ReinsWinbarDim# now: " .. name
  vim.cmd("rightbelow vsplit")
  local right = scratch(("%s (proposed, %s)"):format(name, p.edit.id), new, ft)
  vim.api.nvim_win_set_buf(0, right)
  vim.cmd("diffthis")
  vim.wo.winbar = "%#ReinsWinbar# proposed: " .. name
  p.view = {
    layout = "diff",
    buf = buf,
    left = left,
    right = right,
    tab = vim.api.nvim_get_current_tabpage(),
    from_tab = here,
    placed = placed,
    rows = {},
  }
  for i, g in ipairs(geos) do
    p.view.rows[p.edit.hunks[i].index] = { first = g.first, last = math.max(g.last, g.first), new = placed[i] }
  end
  p.view.unmap = {
    require("reins.keymaps").review(left),
    require("reins.keymaps").review(right),
  }
  draw_diff(p)
end

-- Views -----------------------------------------------------------------------------------

local function saved_maps(buf)
  local saved = {}
  local k = config.options.keymaps
  for _, name in ipairs({ "accept_hunk", "reject_hunk", "next_hunk", "prev_hunk" }) do
    if k[name] then
      local m = vim.api.nvim_buf_call(buf, function()
        return vim.fn.maparg(k[name], "n", false, true)
      end)
      if m and m.buffer == 1 then
        table.insert(saved, m)
      end
    end
  end
  return saved
end

--- Opens `path` in a split of a file window, leaving the cursor where it is, so its hunks can be
--- reviewed one by one. Returns the buffer, or nil.
local function open_beside(path)
  local here = vim.api.nvim_get_current_win()
  local chat_buf, prompt_buf = require("reins.chat").buffers()
  local target = here
  local function is_file_window(win)
    local b = vim.api.nvim_win_get_buf(win)
    return vim.api.nvim_win_get_config(win).relative == "" and b ~= chat_buf and b ~= prompt_buf and vim.bo[b].buftype == ""
  end
  if not is_file_window(target) then
    target = nil
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if is_file_window(win) then
        target = win
        break
      end
    end
  end
  local ok = pcall(function()
    if target then
      vim.api.nvim_set_current_win(target)
      vim.cmd("belowright split " .. vim.fn.fnameescape(path))
    else
      vim.cmd("topleft split " .. vim.fn.fnameescape(path))
    end
  end)
  local buf = ok and vim.api.nvim_get_current_buf() or nil
  if vim.api.nvim_win_is_valid(here) then
    vim.api.nvim_set_current_win(here)
  end
  if buf and vim.api.nvim_buf_get_name(buf) == vim.fn.fnamemodify(path, ":p") then
    return buf
  end
  return nil
end

local function show(p)
  local edit = p.edit
  if edit.tool == "bash" then
    local how = vim.trim(require("reins.render").review_hint())
    notify(("the agent wants to run `%s` in %s — %s"):format(edit.command, edit.cwd or ".", how), vim.log.levels.WARN)
    p.view = { layout = "none" }
    return
  end
  if edit.call then
    local args = vim.json.encode(edit.call.arguments or vim.empty_dict())
    notify(("the agent wants to call `%s` of MCP server %s with %s — :ReinsAccept or :ReinsReject [reason]"):format(edit.call.tool, edit.call.server, args), vim.log.levels.WARN)
    p.view = { layout = "none" }
    return
  end
  local buf = buffer_of(edit)
  if not buf and not edit.create and #(edit.hunks or {}) > 0 then
    buf = open_beside(vim.uri_to_fname(edit.uri))
  end
  if not buf then
    -- A new file (or one that cannot be opened): show its diff; it is decided whole.
    local lines = vim.split(edit.diff or "", "\n", { plain = true })
    vim.cmd("botright split")
    local sbuf = scratch("reins://review/" .. edit.id, lines, "diff")
    vim.api.nvim_win_set_buf(0, sbuf)
    vim.wo.winbar = "%#ReinsWinbar# proposed " .. M.kind(edit) .. " %#ReinsWinbarDim#· whole edit only"
    p.view = { layout = "scratch", buf = sbuf, rows = {}, win = vim.api.nvim_get_current_win() }
    p.view.unmap = { require("reins.keymaps").review(sbuf) }
    return
  end
  if config.options.review.layout == "diff" then
    open_diff(p, buf)
    return
  end
  p.view = { layout = "inline", buf = buf, rows = {} }
  p.view.saved = saved_maps(buf)
  p.view.unmap = { require("reins.keymaps").review(buf) }
  draw_inline(p)
end

local function redraw(p)
  if p.view.layout == "inline" then
    draw_inline(p)
  elseif p.view.layout == "diff" then
    draw_diff(p)
  end
end

local function close_view(p)
  local v = p.view or {}
  for _, unmap in ipairs(v.unmap or {}) do
    unmap()
  end
  if v.layout == "inline" and vim.api.nvim_buf_is_valid(v.buf) then
    vim.api.nvim_buf_clear_namespace(v.buf, ns, 0, -1)
    for _, id in pairs(v.anchors or {}) do
      pcall(vim.api.nvim_buf_del_extmark, v.buf, anchors, id)
    end
    for _, m in ipairs(v.saved or {}) do
      vim.api.nvim_buf_call(v.buf, function()
        vim.fn.mapset("n", false, m)
      end)
    end
  elseif v.layout == "diff" then
    if vim.api.nvim_tabpage_is_valid(v.tab) and #vim.api.nvim_list_tabpages() > 1 then
      local nr = vim.api.nvim_tabpage_get_number(v.tab)
      pcall(vim.cmd, "tabclose " .. nr)
    end
    if v.from_tab and vim.api.nvim_tabpage_is_valid(v.from_tab) then
      vim.api.nvim_set_current_tabpage(v.from_tab)
    end
  elseif v.layout == "scratch" and v.win and vim.api.nvim_win_is_valid(v.win) then
    pcall(vim.api.nvim_win_close, v.win, true)
  end
  p.view = { layout = "none" }
end

local function forget(id)
  local p = M.pending[id]
  if p then
    close_view(p)
    M.pending[id] = nil
  end
  for i, other in ipairs(M.order) do
    if other == id then
      table.remove(M.order, i)
      break
    end
  end
  if #M.order == 0 then
    require("reins.keymaps").clear_global_review_keys()
  end
end

-- Deciding --------------------------------------------------------------------------------

--- The proposal and hunk the cursor is on (or nearest after it) in the current buffer; else the
--- latest proposal.
local function at_cursor()
  local buf = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for i = #M.order, 1, -1 do
    local p = M.pending[M.order[i]]
    local v = p.view or {}
    local side = (v.layout == "diff" and buf == v.right) and "new" or "old"
    if v.buf == buf or v.left == buf or v.right == buf then
      local best, best_row
      for _, hunk in ipairs(p.edit.hunks or {}) do
        local r = v.rows[hunk.index]
        if r and v.layout == "inline" then
          local g = inline_rows(p, hunk)
          r = { first = g.first, last = math.max(g.last, g.first) }
        end
        if r then
          local first, last = r.first, r.last
          if side == "new" and r.new then
            first, last = r.new.first, math.max(r.new.last, r.new.first)
          end
          if row >= first and row <= last then
            return p, hunk
          end
          if p.decisions[hunk.index] == nil and first >= row and (not best_row or first < best_row) then
            best, best_row = hunk, first
          end
        end
      end
      if not best then
        for _, hunk in ipairs(p.edit.hunks or {}) do
          if p.decisions[hunk.index] == nil then
            best = hunk
            break
          end
        end
      end
      return p, best
    end
  end
  local id = M.order[#M.order]
  return id and M.pending[id] or nil, nil
end

local function send_decision(p, reason)
  local accepted, all = {}, true
  for _, hunk in ipairs(p.edit.hunks or {}) do
    if p.decisions[hunk.index] then
      table.insert(accepted, hunk.index)
    else
      all = false
    end
  end
  local id = p.edit.id
  p.sent = true
  local function done(err, result)
    if err then
      p.sent = false
      notify(client.error_text(err), vim.log.levels.ERROR)
      return
    end
    M.last_result = result
    -- Decided: the marks go now, though the change may wait for the other files of its patch.
    close_view(p)
  end
  if p.edit.tool ~= "bash" and #accepted == 0 and #(p.edit.hunks or {}) > 0 or p.rejected then
    client.exec("reins.edit.reject", { id = id, reason = reason }, done)
  elseif all then
    client.exec("reins.edit.accept", { id = id, allowForSession = p.for_session or nil }, done)
  else
    -- The reason given when rejecting the rest is about the hunks left out.
    client.exec("reins.edit.accept", { id = id, hunks = accepted, reason = reason }, done)
  end
end

--- Sends the decision once every hunk is decided.
local function maybe_finish(p)
  for _, hunk in ipairs(p.edit.hunks or {}) do
    if p.decisions[hunk.index] == nil then
      redraw(p)
      return
    end
  end
  send_decision(p)
end

local function undecided(p)
  local n = 0
  for _, hunk in ipairs(p.edit.hunks or {}) do
    if p.decisions[hunk.index] == nil then
      n = n + 1
    end
  end
  return n
end

local function decide_hunk(value)
  local p, hunk = at_cursor()
  if not p then
    return notify("no proposal is pending")
  end
  if not hunk then
    return notify("no undecided hunk here; " .. (config.options.keymaps.accept_all or ":ReinsAccept") .. " decides the whole edit")
  end
  p.decisions[hunk.index] = value
  if value == false and undecided(p) == 0 then
    -- The last decision rejects something: the agent may hear why (Esc takes the reject back).
    vim.ui.input({ prompt = "Reject — reason for the agent (optional): ", default = "" }, function(reason)
      if reason == nil then
        p.decisions[hunk.index] = nil
        redraw(p)
        return
      end
      send_decision(p, reason ~= "" and reason or nil)
    end)
    return
  end
  maybe_finish(p)
  if not p.sent then
    M.next_hunk()
  end
end

function M.accept_hunk()
  decide_hunk(true)
end

function M.reject_hunk()
  decide_hunk(false)
end

-- Comments ----------------------------------------------------------------------------------

local function comment_key(id, index)
  return id .. "#" .. index
end

--- Where `hunk` of `p` starts in the buffer its view shows (0-based).
local function hunk_row(p, hunk)
  local v = p.view
  if v.layout == "inline" then
    return inline_rows(p, hunk).first
  end
  local r = v.rows and v.rows[hunk.index]
  return r and r.first or 0
end

--- Shows comment `c` as a virtual line above the line it is anchored to.
local function draw_comment(c)
  if not (c.buf and vim.api.nvim_buf_is_valid(c.buf)) then
    return
  end
  local text, group = "💬 " .. c.text, "ReinsComment"
  if c.state == "resolved" then
    text, group = "✓ resolved: " .. c.text, "ReinsCommentResolved"
  elseif c.state == "sent" then
    text = text .. "  (sent to the agent)"
  end
  local row = c.row
  if c.mark then
    row = vim.api.nvim_buf_get_extmark_by_id(c.buf, comment_ns, c.mark, {})[1] or row
  end
  row = math.max(math.min(row, vim.api.nvim_buf_line_count(c.buf) - 1), 0)
  c.mark = vim.api.nvim_buf_set_extmark(c.buf, comment_ns, row, 0, {
    id = c.mark,
    virt_lines = { { { text, group } } },
    virt_lines_above = true,
    priority = 210,
  })
end

local function drop_comment(key)
  local c = M.comments[key]
  if c and c.mark and vim.api.nvim_buf_is_valid(c.buf) then
    pcall(vim.api.nvim_buf_del_extmark, c.buf, comment_ns, c.mark)
  end
  M.comments[key] = nil
end

--- Comments on hunk `index` of pending edit `id` (a blank `text` takes the comment back); the
--- comment goes to the agent with the decision on the edit. `done` runs once the server has it.
function M.comment(id, index, text, done)
  local p = M.pending[id]
  if not p then
    return notify("no proposal " .. tostring(id) .. " is pending")
  end
  client.exec("reins.edit.comment", { id = id, hunk = index, comment = text }, function(err)
    if err then
      return notify(client.error_text(err), vim.log.levels.ERROR)
    end
    local key = comment_key(id, index)
    if vim.trim(text) == "" then
      drop_comment(key)
    else
      local c = M.comments[key]
      if not c then
        local row = 0
        for _, hunk in ipairs(p.edit.hunks or {}) do
          if hunk.index == index then
            row = hunk_row(p, hunk)
          end
        end
        c = { buf = p.view.buf, row = row }
        M.comments[key] = c
      end
      c.text, c.state = vim.trim(text), "pending"
      draw_comment(c)
    end
    if done then
      done()
    end
  end)
end

--- Asks for a comment on the hunk under the cursor (its current one to edit), then sends it.
function M.comment_hunk()
  local p, hunk = at_cursor()
  if not p then
    return notify("no proposal is pending")
  end
  if not hunk then
    return notify("no hunk here to comment on")
  end
  local current = M.comments[comment_key(p.edit.id, hunk.index)]
  local prompt = ("Comment on hunk %d/%d for the agent: "):format(hunk.index + 1, #p.edit.hunks)
  vim.ui.input({ prompt = prompt, default = current and current.text or "" }, function(text)
    if text ~= nil then
      M.comment(p.edit.id, hunk.index, text)
    end
  end)
end

local function resolve(id)
  if id then
    return M.pending[id]
  end
  return (at_cursor())
end

--- Accepts every undecided hunk of a proposal (the one under the cursor, else the latest);
--- with `for_session`, the tool runs without asking for the rest of the session.
function M.accept(id, for_session)
  local p = resolve(id)
  if not p then
    return notify("no proposal is pending")
  end
  for _, hunk in ipairs(p.edit.hunks or {}) do
    if p.decisions[hunk.index] == nil then
      p.decisions[hunk.index] = true
    end
  end
  p.for_session = for_session
  send_decision(p)
end

--- Accepts the proposal (as `accept`) and lets its tool run unasked for the rest of the session.
function M.accept_for_session(id)
  M.accept(id, true)
end

--- Rejects a proposal's undecided hunks with `reason` (which the model reads): with no hunk
--- accepted the whole edit is rejected, else the accepted hunks are applied and the reason is
--- about the others.
function M.reject(id, reason)
  local p = resolve(id)
  if not p then
    return notify("no proposal is pending")
  end
  local any_accepted = false
  for _, hunk in ipairs(p.edit.hunks or {}) do
    if p.decisions[hunk.index] == nil then
      p.decisions[hunk.index] = false
    end
    any_accepted = any_accepted or p.decisions[hunk.index] == true
  end
  p.rejected = not any_accepted
  send_decision(p, reason)
end

--- Asks for an optional reason, then rejects.
function M.reject_prompt()
  local p = resolve(nil)
  if not p then
    return notify("no proposal is pending")
  end
  vim.ui.input({ prompt = "Reject — reason for the agent (optional): " }, function(reason)
    if reason == nil then
      return
    end
    M.reject(p.edit.id, reason ~= "" and reason or nil)
  end)
end

local function jump(dir)
  local p = at_cursor()
  if not p or not p.view or not p.view.rows then
    return
  end
  local buf = vim.api.nvim_get_current_buf()
  local use_new = p.view.layout == "diff" and buf == p.view.right
  local rows = {}
  for _, hunk in ipairs(p.edit.hunks or {}) do
    local r = p.view.rows[hunk.index]
    if r and p.view.layout == "inline" then
      r = inline_rows(p, hunk)
    end
    if r and p.decisions[hunk.index] == nil then
      table.insert(rows, use_new and r.new and r.new.first or r.first)
    end
  end
  if #rows == 0 then
    return
  end
  table.sort(rows)
  local cur = vim.api.nvim_win_get_cursor(0)[1] - 1
  local target
  if dir > 0 then
    for _, r in ipairs(rows) do
      if r > cur then
        target = r
        break
      end
    end
    target = target or rows[1]
  else
    for i = #rows, 1, -1 do
      if rows[i] < cur then
        target = rows[i]
        break
      end
    end
    target = target or rows[#rows]
  end
  local count = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_win_set_cursor(0, { math.min(target + 1, count), 0 })
end

function M.next_hunk()
  jump(1)
end

function M.prev_hunk()
  jump(-1)
end

--- `:ReinsPending`: the pending proposals in the quickfix list.
function M.quickfix()
  local items = {}
  for _, id in ipairs(M.order) do
    local edit = M.pending[id].edit
    if edit.tool == "bash" then
      table.insert(items, { text = ("[%s] bash: %s (in %s)"):format(id, edit.command or "", edit.cwd or ".") })
    elseif edit.call then
      table.insert(items, { text = ("[%s] MCP %s/%s: %s"):format(id, edit.call.server, edit.call.tool, vim.json.encode(edit.call.arguments or vim.empty_dict())) })
    else
      local fname = edit.uri and vim.uri_to_fname(edit.uri) or ""
      if #(edit.hunks or {}) == 0 then
        table.insert(items, { filename = fname, lnum = 1, text = ("[%s] %s"):format(id, M.kind(edit)) })
      end
      for _, hunk in ipairs(edit.hunks or {}) do
        local first = vim.split(hunk.newText or "", "\n", { plain = true })[1]
        table.insert(items, {
          filename = fname,
          lnum = hunk.range.start.line + 1,
          col = hunk.range.start.character + 1,
          text = ("[%s] %s hunk %d/%d: %s"):format(id, edit.tool, hunk.index + 1, #edit.hunks, first),
        })
      end
    end
  end
  vim.fn.setqflist({}, " ", { title = "reins: pending proposals", items = items })
  if #items == 0 then
    notify("no proposal is pending")
  else
    vim.cmd("copen")
  end
end

-- Events ----------------------------------------------------------------------------------

local function on_proposed(edit, session_id)
  -- The comments this proposal answers are marked resolved until it is decided.
  for _, answered in ipairs(type(edit.resolves) == "table" and edit.resolves or {}) do
    local c = M.comments[comment_key(answered.id, answered.hunk)]
    if c then
      c.state, c.resolved_by = "resolved", edit.id
      draw_comment(c)
    end
  end
  local p = { edit = edit, decisions = {}, session_id = session_id, view = { layout = "none" } }
  M.pending[edit.id] = p
  table.insert(M.order, edit.id)
  require("reins.keymaps").set_global_review_keys()
  local ok, err = pcall(show, p)
  if not ok then
    notify("could not show the proposal: " .. tostring(err), vim.log.levels.ERROR)
  end
end

--- After an applied deletion or move that the server made on disk (Neovim does not offer
--- `documentChanges`, so its `DeleteFile` and `RenameFile` are not used), the buffer of the old
--- path would still hold the file: unless it has unsaved changes, it goes, and a moved file
--- opens at its new path in the windows that showed it.
local function drop_stale_buffer(edit)
  local moved_to = edit.newUri and edit.newUri ~= vim.NIL and vim.uri_to_fname(edit.newUri) or nil
  if not (edit.uri and (edit.delete or moved_to)) then
    return
  end
  local fname = vim.uri_to_fname(edit.uri)
  local buf = vim.fn.bufnr(fname)
  if buf == -1 or vim.fn.filereadable(fname) == 1 or vim.bo[buf].modified then
    return
  end
  if moved_to then
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      vim.api.nvim_win_call(win, function()
        vim.cmd("edit " .. vim.fn.fnameescape(moved_to))
      end)
    end
  end
  pcall(vim.api.nvim_buf_delete, buf, {})
end

local function on_resolved(event)
  local p = M.pending[event.id]
  forget(event.id)
  for key, c in pairs(M.comments) do
    if c.resolved_by == event.id then
      drop_comment(key)
    elseif key:sub(1, #event.id + 1) == event.id .. "#" and c.state == "pending" then
      -- A cancelled edit never reached the agent: its comments go with it.
      if event.outcome == "cancelled" then
        drop_comment(key)
      else
        c.state = "sent"
        draw_comment(c)
      end
    end
  end
  if p and (event.outcome == "failed" or event.outcome == "stale") then
    notify(("edit %s: %s"):format(event.outcome, event.reason or ""), vim.log.levels.WARN)
  end
  if p and event.outcome == "applied" then
    drop_stale_buffer(p.edit)
  end
end

client.on_event(function(params)
  local event = params.event
  if event.type == "edit_proposed" then
    vim.schedule(function()
      on_proposed(event.edit, params.sessionId)
    end)
  elseif event.type == "edit_resolved" then
    vim.schedule(function()
      on_resolved(event)
    end)
  end
end)

return M
