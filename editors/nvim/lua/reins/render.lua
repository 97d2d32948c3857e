-- Turns conversation blocks into buffer lines and highlights. Pure functions: a block in, lines
-- and {line, col_start, col_end, group} highlights (0-based, relative to the block) out.
local M = {}

local keymaps = function()
  return require("reins.config").options.keymaps
end

M.icons = {
  preparing = "…",
  pending = "·",
  running = "⟳",
  review = "⏸",
  ok = "✓",
  error = "✗",
}

local status_group = {
  preparing = "ReinsToolRunning",
  pending = "ReinsToolRunning",
  running = "ReinsToolRunning",
  review = "ReinsProposal",
  ok = "ReinsToolOk",
  error = "ReinsToolError",
}

local function split(text)
  return vim.split(text or "", "\n", { plain = true })
end

local function one_line(text, max)
  text = tostring(text or ""):gsub("%s+", " ")
  if vim.fn.strchars(text) > max then
    text = vim.fn.strcharpart(text, 0, max - 1) .. "…"
  end
  return text
end

--- What a tool call is about, in a few words: its path, command or pattern.
function M.tool_subject(block)
  local args = block.args
  if type(args) ~= "table" then
    local ok, decoded = pcall(vim.json.decode, block.args_text ~= "" and block.args_text or "{}")
    args = ok and type(decoded) == "table" and decoded or {}
  end
  local subject = args.command or args.path or args.pattern or args.query or args.url
  if not subject and type(args.input) == "string" and args.input:find("*** ", 1, true) then
    -- apply_patch: the files its patch names.
    local files = {}
    for path in args.input:gmatch("%*%*%* [%a ]+ File: ([^\n]+)") do
      table.insert(files, vim.trim(path))
    end
    subject = #files > 0 and table.concat(files, ", ") or nil
  end
  if not subject then
    for _, v in pairs(args) do
      if type(v) == "string" then
        subject = v
        break
      end
    end
  end
  return one_line(subject or "", 60), args
end

local function truncated(text, max_lines)
  local ls = split((text or ""):gsub("\n$", ""))
  if #ls > max_lines then
    local rest = #ls - max_lines
    ls = vim.list_slice(ls, 1, max_lines)
    table.insert(ls, ("… %d more lines"):format(rest))
  end
  return ls
end

--- Adds `text`'s lines to an expanded tool body, behind a gutter so markdown leaves them alone.
local function body(lines, hls, text, group)
  for _, l in ipairs(type(text) == "table" and text or split(text)) do
    table.insert(lines, "  │ " .. l)
    table.insert(hls, { #lines - 1, 0, #"  │ ", "ReinsHint" })
    if group then
      table.insert(hls, { #lines - 1, #"  │ ", -1, group })
    end
  end
end

--- The arguments of a tool call, readable: `key: value` lines; an edit's old and new text as
--- removed and added lines.
local function args_body(lines, hls, args)
  local keys = vim.tbl_keys(args)
  -- What the call is about first, then the rest by name.
  local first = { path = 1, command = 1, pattern = 1 }
  table.sort(keys, function(a, b)
    if (first[a] or 2) ~= (first[b] or 2) then
      return (first[a] or 2) < (first[b] or 2)
    end
    return a < b
  end)
  for _, key in ipairs(keys) do
    local v = args[key]
    if key == "edits" and type(v) == "table" then
      for i, e in ipairs(v) do
        body(lines, hls, ("edit %d:"):format(i))
        for _, l in ipairs(split(e.oldText)) do
          body(lines, hls, "- " .. l, "ReinsRemoved")
        end
        for _, l in ipairs(split(e.newText)) do
          body(lines, hls, "+ " .. l, "ReinsAdded")
        end
      end
    elseif type(v) == "string" and not v:find("\n") then
      body(lines, hls, key .. ": " .. v)
    elseif type(v) == "string" then
      body(lines, hls, key .. ":")
      body(lines, hls, truncated(v, 20))
    else
      body(lines, hls, key .. ": " .. vim.json.encode(v))
    end
  end
end

local renderers = {}

function renderers.header(block)
  if block.role == "user" then
    return { "## You" }, { { 0, 0, -1, "ReinsUser" } }
  end
  return { "## reins" }, { { 0, 0, -1, "ReinsAssistant" } }
end

function renderers.user(block)
  return split(block.text), {}
end

function renderers.text(block)
  return split(block.text), {}
end

function renderers.thinking(block)
  local body = split((block.text or ""):gsub("^%s+", ""):gsub("%s+$", ""))
  if not block.expanded then
    local line = ("▸ Thinking · %d line%s"):format(#body, #body == 1 and "" or "s")
    return { line }, { { 0, 0, -1, "ReinsThinking" } }
  end
  local lines, hls = { "▾ Thinking" }, { { 0, 0, -1, "ReinsThinking" } }
  for _, l in ipairs(body) do
    table.insert(lines, "  " .. l)
    table.insert(hls, { #lines - 1, 0, -1, "ReinsThinking" })
  end
  return lines, hls
end

local outcome_text -- defined with the proposal renderer below
local reason_lines -- likewise

local function proposal_status(p)
  local status = outcome_text[p.status] or p.status
  if p.status == "partially_applied" and p.applied then
    local shown = {}
    for _, i in ipairs(p.applied) do
      table.insert(shown, tostring(i + 1))
    end
    status = status .. " (hunk " .. table.concat(shown, ", ") .. ")"
  end
  if p.hunks and p.hunks > 1 and p.status == "waiting" then
    status = ("%d hunks · %s"):format(p.hunks, status)
  end
  return status
end

--- A key as the user types it: `<leader>` shown as the leader itself.
function M.key(key)
  local leader = vim.g.mapleader or "\\"
  return (key:gsub("<[lL]eader>", leader == " " and "<Space>" or leader))
end

--- The keys that decide a waiting proposal; they are mapped in every window while it waits.
function M.review_hint()
  local k = keymaps()
  local keys = {}
  for _, pair in ipairs({ { k.accept_all, "accept" }, { k.accept_session, "allow for the session" }, { k.reject_all, "reject" } }) do
    if pair[1] then
      table.insert(keys, M.key(pair[1]) .. " " .. pair[2])
    end
  end
  if #keys == 0 then
    return "  :ReinsAccept · :ReinsReject"
  end
  return "  " .. table.concat(keys, " · ")
end

function renderers.tool(block)
  local subject, args = M.tool_subject(block)
  local icon = M.icons[block.status] or "?"
  local p = block.proposal
  if p and p.status ~= "waiting" then
    icon = (p.status == "applied" or p.status == "partially_applied") and M.icons.ok or M.icons.error
  end
  local arrow = block.expanded and "▾" or "▸"
  local name = block.name or "tool"
  local head = ("%s %s %s %s"):format(arrow, icon, name, subject)
  local group = status_group[block.status] or "ReinsToolRunning"
  if p then
    group = p.status == "waiting" and "ReinsProposal"
      or (p.status == "applied" or p.status == "partially_applied") and "ReinsToolOk"
      or "ReinsToolError"
  end
  local hls = {
    { 0, 0, #arrow + 1 + #icon, group },
    { 0, #arrow + #icon + 2, #arrow + #icon + 2 + #name, "ReinsToolName" },
  }
  if p then
    local status = " — " .. proposal_status(p)
    table.insert(hls, { 0, #head, #head + #status, group })
    head = head .. status
  end
  local lines = { head }
  -- A subagent's tools (the `task` call's children), one indented line each.
  for _, child in ipairs(block.children or {}) do
    local child_subject = M.tool_subject({ args = child.args, args_text = "" })
    local child_icon = M.icons[child.status] or "?"
    local line = ("    ↳ %s %s %s"):format(child_icon, child.name or "tool", child_subject)
    table.insert(hls, { #lines, 0, -1, status_group[child.status] or "ReinsToolRunning" })
    table.insert(lines, line)
  end
  if p and p.status == "waiting" then
    table.insert(lines, M.review_hint())
    table.insert(hls, { 1, 0, -1, "ReinsHint" })
  elseif p and p.reason and p.reason ~= "" then
    for _, line in ipairs(reason_lines(p.reason)) do
      table.insert(hls, { #lines, 0, -1, "ReinsHint" })
      table.insert(lines, line)
    end
  end
  if block.expanded then
    args_body(lines, hls, args)
    local out = block.result or block.partial
    if out and out ~= "" then
      body(lines, hls, "──── " .. (block.status == "error" and "error" or "result"))
      body(lines, hls, truncated(out, 30), block.status == "error" and "ReinsToolError" or nil)
    end
  end
  return lines, hls
end

local todo_marks = { completed = "✓", in_progress = "▶", pending = "○" }
local todo_group = { completed = "ReinsHint", in_progress = "ReinsToolRunning" }

--- The model's todo list: a line saying how far along it is, then a line per step.
function renderers.todo(block)
  local items = block.items or {}
  local done = 0
  for _, item in ipairs(items) do
    if item.status == "completed" then
      done = done + 1
    end
  end
  local head = #items == 0 and "☰ todo list cleared" or ("☰ todo %d/%d"):format(done, #items)
  local lines, hls = { head }, { { 0, 0, -1, "ReinsToolName" } }
  for _, item in ipairs(items) do
    local mark = todo_marks[item.status] or "?"
    table.insert(lines, ("  %s %s"):format(mark, one_line(item.content, 100)))
    if todo_group[item.status] then
      table.insert(hls, { #lines - 1, 0, -1, todo_group[item.status] })
    end
  end
  return lines, hls
end

function renderers.notice(block)
  local icon = block.icon or (block.level == "error" and "✗" or "!")
  local group = block.level == "error" and "ReinsToolError" or "ReinsNotice"
  local lines = {}
  for i, l in ipairs(split(block.text)) do
    table.insert(lines, (i == 1 and (icon .. " ") or "  ") .. l)
  end
  local hls = {}
  for i = 1, #lines do
    table.insert(hls, { i - 1, 0, -1, group })
  end
  return lines, hls
end

--- A decision's reason, which may run over several lines (a refusal per file), as indented lines.
function reason_lines(reason)
  local lines = {}
  for i, line in ipairs(split(reason)) do
    table.insert(lines, (i == 1 and "  reason: " or "          ") .. line)
  end
  return lines
end

outcome_text = {
  waiting = "waiting for your review",
  applied = "accepted",
  partially_applied = "partly accepted",
  rejected = "rejected",
  failed = "failed",
  stale = "stale (the buffer changed)",
  cancelled = "cancelled",
}

function renderers.proposal(block)
  local status = proposal_status(block)
  local line
  if block.tool == "bash" then
    line = ("⏵ run `%s` in %s — %s"):format(one_line(block.command, 60), vim.fn.fnamemodify(block.cwd or ".", ":~"), status)
  elseif block.call then
    local args = vim.json.encode(block.call.arguments or vim.empty_dict())
    line = ("⏵ call %s/%s %s — %s"):format(block.call.server, block.call.tool, one_line(args, 60), status)
  else
    local what = block.create and "create" or block.delete and "delete" or block.moved_to and "move" or block.tool
    local path = block.moved_to and ("%s → %s"):format(block.path, block.moved_to) or block.path
    line = ("✎ %s %s — %s"):format(what, path, status)
  end
  local lines = { line }
  if block.status == "waiting" then
    table.insert(lines, M.review_hint())
  elseif block.reason and block.reason ~= "" then
    vim.list_extend(lines, reason_lines(block.reason))
  end
  local hls = { { 0, 0, -1, block.status == "waiting" and "ReinsProposal" or "ReinsNotice" } }
  for i = 2, #lines do
    table.insert(hls, { i - 1, 0, -1, "ReinsHint" })
  end
  return lines, hls
end

--- Lines and highlights of one block.
function M.block(block)
  local fn = renderers[block.kind]
  if not fn then
    return { "" }, {}
  end
  return fn(block)
end

--- Whether a blank line separates `block` from the one before it.
function M.gap_before(prev, block)
  if not prev then
    return false
  end
  if prev.kind == "header" then
    return false
  end
  -- Consecutive tool calls read as one list.
  if prev.kind == "tool" and block.kind == "tool" then
    return false
  end
  return true
end

--- The text for the panel's winbar, fitted to `width` columns (when given) by priority: what the
--- run is doing first, then the model, the tokens, the cost, and the title, shortened, in what
--- is left.
function M.winbar(conv, title, width, model)
  local status
  if conv and (conv.waiting or 0) > 0 then
    status = "⏸ review"
  elseif conv and conv.running then
    status = "⟳ running"
  end
  local tokens, cost
  if conv and conv.tokens > 0 then
    tokens = (conv.tokens >= 1000 and ("%.1fk"):format(conv.tokens / 1000) or tostring(conv.tokens)) .. " tokens"
    cost = ("$%.4f"):format(conv.cost)
  end
  local left = " reins"
  -- The parts in order of priority; `false` is a part left out (a nil would end the list).
  local function right_text(parts)
    local shown = {}
    for _, p in ipairs(parts) do
      if p then
        table.insert(shown, p)
      end
    end
    return table.concat(shown, " · ")
  end
  -- The model without its provider: the part that tells models apart.
  model = model and model:match("[^/]+$") or false
  local right = { status or false, model, tokens or false, cost or false }
  local room = (width or math.huge) - vim.fn.strdisplaywidth(left) - 2
  local function fits(title_room)
    return vim.fn.strdisplaywidth(right_text(right)) + title_room <= room
  end
  -- The cost goes first, then the tokens, rather than leave the title under 20 columns; the
  -- model only when not even a short title fits beside it.
  local has_title = title and title ~= ""
  for drop = #right, 3, -1 do
    if fits(has_title and 23 or 0) then
      break
    end
    right[drop] = false
  end
  if not fits(has_title and 11 or 0) then
    right[2] = false
  end
  local right_str = right_text(right)
  room = room - vim.fn.strdisplaywidth(right_str)
  local title_str = ""
  if title and title ~= "" and room >= 8 then
    title_str = " · " .. one_line(title, math.min(28, room - 3))
  end
  -- The title and the model are data (a session file's): a `%` in them is shown, never run as a
  -- statusline item (`%{…}` would evaluate an expression).
  return "%#ReinsWinbar#"
    .. left
    .. "%#ReinsWinbarDim#"
    .. title_str:gsub("%%", "%%%%")
    .. " %="
    .. right_str:gsub("%%", "%%%%")
    .. " "
end

return M
