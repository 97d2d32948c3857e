-- Sessions: `:ReinsSessions` (pick one, then resume, rename or fork it), `:ReinsTree` (the
-- current session's entries as a tree: continue from an entry, with the files the agent changed
-- restored too, fork from it, label it) and
-- resuming, which re-renders the conversation from `reins.session.messages`.
local client = require("reins.client")
local conversation = require("reins.conversation")

local M = {}

local function fail(what, err)
  vim.notify("reins: " .. what .. ": " .. client.error_text(err), vim.log.levels.ERROR)
end

--- One line describing a session of `reins.session.list`.
function M.describe(s)
  local title = s.name or s.firstMessage or "(empty)"
  title = title:gsub("%s+", " ")
  if #title > 60 then
    title = title:sub(1, 59) .. "…"
  end
  local when = s.modified and os.date("%Y-%m-%d %H:%M", math.floor(s.modified / 1000)) or ""
  return ("%s  ·  %d entries  ·  %s  ·  %s"):format(title, s.entryCount or 0, when, (s.id or ""):sub(1, 8))
end

--- Makes a session live and shows its conversation in the chat; `done(session_id)` after.
function M.resume(id, title, done)
  client.exec("reins.session.open", { sessionId = id }, function(err, opened)
    if err then
      return fail("open", err)
    end
    local sid = opened.sessionId
    client.exec("reins.session.messages", { sessionId = sid }, function(err2, result)
      if err2 then
        return fail("messages", err2)
      end
      local chat = require("reins.chat")
      conversation.load(sid, result.messages, result.todos)
      chat.open(false)
      chat.set_session(sid, title)
      if done then
        done(sid)
      end
    end)
  end)
end

local function rename(s)
  vim.ui.input({ prompt = "New name: ", default = s.name or "" }, function(name)
    if not name or vim.trim(name) == "" then
      return
    end
    client.exec("reins.session.open", { sessionId = s.id }, function(err, opened)
      if err then
        return fail("open", err)
      end
      client.exec("reins.session.rename", { sessionId = opened.sessionId, name = name }, function(err2)
        if err2 then
          return fail("rename", err2)
        end
        local chat = require("reins.chat")
        if chat.session_id == opened.sessionId then
          chat.title = name
          chat.render()
        end
        vim.notify("reins: renamed to " .. name)
      end)
    end)
  end)
end

--- After a fork or a move to one of the user's messages, which lands before it, the message's
--- text comes back (`prompt`) to edit and send again: it goes in the chat's prompt.
local function give_back(result)
  if type(result) == "table" and type(result.prompt) == "string" then
    require("reins.chat").set_prompt(result.prompt)
  end
end

--- Forks `session_id` at `entry_id` (its leaf when nil) and resumes the fork.
function M.fork(session_id, entry_id, done)
  local function fork_at(entry)
    client.exec("reins.session.fork", { sessionId = session_id, entryId = entry }, function(err, forked)
      if err then
        return fail("fork", err)
      end
      M.resume(forked.sessionId, nil, function(sid)
        give_back(forked)
        if done then
          done(sid)
        end
      end)
    end)
  end
  if entry_id then
    return fork_at(entry_id)
  end
  client.exec("reins.session.tree", { sessionId = session_id }, function(err, tree)
    if err then
      return fail("tree", err)
    end
    if not tree.leaf then
      return vim.notify("reins: the session is empty; nothing to fork", vim.log.levels.WARN)
    end
    fork_at(tree.leaf)
  end)
end

--- `:ReinsSessions`: pick a session of this workspace, then what to do with it.
function M.pick()
  client.exec("reins.session.list", {}, function(err, result)
    if err then
      return fail("list", err)
    end
    local sessions = result.sessions or {}
    if #sessions == 0 then
      -- Sessions are kept per workspace: say which one was looked in.
      local root = vim.fn.fnamemodify(client.root(0), ":~")
      return vim.notify(("reins: no sessions in this workspace (%s) yet"):format(root), vim.log.levels.INFO)
    end
    vim.ui.select(sessions, { prompt = "reins sessions", format_item = M.describe }, function(s)
      if not s then
        return
      end
      vim.ui.select({ "resume", "rename", "fork" }, { prompt = M.describe(s) }, function(action)
        if action == "resume" then
          M.resume(s.id, s.name)
        elseif action == "rename" then
          rename(s)
        elseif action == "fork" then
          client.exec("reins.session.open", { sessionId = s.id }, function(err2, opened)
            if err2 then
              return fail("open", err2)
            end
            M.fork(opened.sessionId)
          end)
        end
      end)
    end)
  end)
end

--- `line` cut to `width` display cells with "…", when there is a width.
local function fit(line, width)
  if not width or width < 2 or vim.fn.strdisplaywidth(line) <= width then
    return line
  end
  local cut = vim.fn.strcharpart(line, 0, width - 1)
  while vim.fn.strdisplaywidth(cut) > width - 1 do
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  return cut .. "…"
end

--- The lines of a session tree as pi's `/tree` draws it: a chain of entries runs down at one
--- indent; where branches split, each starts with `├─` (`└─` for the last) under the entry it
--- splits from; the leaf is marked `●`. With `width`, each line is cut to fit. Returns the lines
--- and the node of each line.
function M.tree_lines(tree, width)
  local children, roots = {}, {}
  for _, node in ipairs(tree.nodes or {}) do
    if node.parentId and node.parentId ~= vim.NIL then
      children[node.parentId] = children[node.parentId] or {}
      table.insert(children[node.parentId], node)
    else
      table.insert(roots, node)
    end
  end
  local lines, nodes = {}, {}
  local function walk(node, rails, branch)
    local kids = children[node.id] or {}
    local mark = node.id == tree.leaf and "● " or "  "
    local who = ({ user = "you", assistant = "reins", toolResult = "tool" })[node.role or ""] or node.kind or "?"
    who = who:gsub("_", " ")
    local preview = (node.preview or ""):gsub("%s+", " ")
    local label = node.label and node.label ~= vim.NIL and node.label ~= "" and ("  [" .. node.label .. "]") or ""
    table.insert(lines, fit(("%s%s%s%-6s %s%s"):format(rails, branch, mark, who, preview, label), width))
    table.insert(nodes, node)
    -- Under a branch's first entry, its rail goes on while later branches follow; deep nesting
    -- stops drifting right.
    local inner = rails .. (branch == "├─ " and "│  " or branch == "└─ " and "   " or "")
    if vim.fn.strchars(inner) > 48 then
      inner = rails
    end
    for i, kid in ipairs(kids) do
      walk(kid, inner, #kids == 1 and "" or (i == #kids and "└─ " or "├─ "))
    end
  end
  for _, root in ipairs(roots) do
    walk(root, "", "")
  end
  return lines, nodes
end

--- Says what `reins.session.navigate {files = true}` brought along, in one line that fits beside
--- the ruler (no hit-enter prompt): how many files are proposed back (each shown like any
--- proposal), and how many were left as they are or changed by commands that were not tracked;
--- those are listed in the quickfix list, the conflicts at the lines where the edits meet, each
--- followed by the agent's change there.
function M.report_restore(result)
  local edits, conflicts, commands = result.edits or {}, result.conflicts or {}, result.commands or {}
  local items = {}
  for _, c in ipairs(conflicts) do
    table.insert(items, {
      filename = c.uri and c.uri ~= vim.NIL and vim.uri_to_fname(c.uri) or c.path,
      lnum = c.range and c.range ~= vim.NIL and c.range.start.line + 1 or 1,
      text = "left as it is: " .. c.reason,
    })
    -- The agent's change there, to make by hand for the file to follow (headers left out).
    if type(c.change) == "string" then
      for _, l in ipairs(vim.split(c.change, "\n", { plain = true, trimempty = true })) do
        if not (l:find("^%-%-%- ") or l:find("^%+%+%+ ")) then
          table.insert(items, { text = "  " .. l, valid = 0 })
        end
      end
    end
  end
  for _, c in ipairs(commands) do
    local what = c.command and c.command ~= vim.NIL and c.command or c.tool
    table.insert(items, { text = ("%s: %s"):format(c.warning, what) })
  end
  if #items > 0 then
    vim.fn.setqflist({}, " ", { title = "reins: what the restore left alone", items = items })
  end
  local accept = require("reins.config").options.keymaps.accept_all
  local function line(hint)
    local parts = {}
    if #edits > 0 then
      table.insert(parts, ("%d file(s) proposed back%s"):format(#edits, hint))
    elseif #conflicts == 0 then
      table.insert(parts, "no file needs to change")
    end
    if #conflicts > 0 then
      table.insert(parts, ("%d left as they are"):format(#conflicts))
    end
    if #commands > 0 then
      table.insert(parts, ("%d command(s) not tracked"):format(#commands))
    end
    return "reins: " .. table.concat(parts, " · ") .. (#items > 0 and " — :copen" or "")
  end
  local msg = line(accept and (" (review each; " .. require("reins.render").key(accept) .. " accepts one)") or "")
  -- Longer than the room beside the ruler, a message waits for Enter: the key hint gives way,
  -- then the end.
  local room = vim.v.echospace
  if vim.fn.strdisplaywidth(msg) >= room then
    msg = line("")
  end
  if vim.fn.strdisplaywidth(msg) >= room then
    msg = vim.fn.strcharpart(msg, 0, room - 2) .. "…"
  end
  local warn = #conflicts > 0 or #commands > 0
  vim.notify(msg, warn and vim.log.levels.WARN or vim.log.levels.INFO)
end

local tree_state = { buf = nil, nodes = {}, session_id = nil }

local function node_at_cursor()
  local row = vim.api.nvim_win_get_cursor(0)[1]
  return tree_state.nodes[row]
end

--- Draws the tree of the chat's session into the tree buffer.
function M.refresh_tree(done)
  local sid = tree_state.session_id
  client.exec("reins.session.tree", { sessionId = sid }, function(err, tree)
    if err then
      return fail("tree", err)
    end
    local buf = tree_state.buf
    if not (buf and vim.api.nvim_buf_is_valid(buf)) then
      return
    end
    local win = vim.fn.bufwinid(buf)
    local lines, nodes = M.tree_lines(tree, win ~= -1 and vim.api.nvim_win_get_width(win) or vim.o.columns)
    if #lines == 0 then
      lines = { "(empty session)" }
    end
    tree_state.nodes = nodes
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].modifiable = false
    local ns = vim.api.nvim_create_namespace("reins.tree")
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    for i, node in ipairs(nodes) do
      if node.id == tree.leaf then
        vim.api.nvim_buf_set_extmark(buf, ns, i - 1, 0, { line_hl_group = "ReinsTreeLeaf" })
      end
    end
    if done then
      done(tree)
    end
  end)
end

--- `:ReinsTree`: the current session's tree in a buffer.
function M.tree()
  local chat = require("reins.chat")
  if not chat.session_id then
    return vim.notify("reins: no session yet; send a message or resume one with :ReinsSessions", vim.log.levels.WARN)
  end
  tree_state.session_id = chat.session_id
  if not (tree_state.buf and vim.api.nvim_buf_is_valid(tree_state.buf)) then
    local buf = vim.api.nvim_create_buf(false, true)
    tree_state.buf = buf
    vim.api.nvim_buf_set_name(buf, "reins://tree")
    vim.bo[buf].bufhidden = "hide"
    vim.bo[buf].filetype = "reinstree"
    require("reins.keymaps").tree(buf, {
      navigate = function()
        local node = node_at_cursor()
        if not node then
          return
        end
        client.exec("reins.session.navigate", { sessionId = tree_state.session_id, entryId = node.id }, function(err, result)
          if err then
            return fail("navigate", err)
          end
          M.resume(tree_state.session_id, chat.title, function()
            M.refresh_tree()
            give_back(result)
          end)
        end)
      end,
      restore = function()
        local node = node_at_cursor()
        if not node then
          return
        end
        local args = { sessionId = tree_state.session_id, entryId = node.id, files = true }
        client.exec("reins.session.navigate", args, function(err, result)
          if err then
            return fail("restore", err)
          end
          M.resume(tree_state.session_id, chat.title, function()
            M.refresh_tree()
            M.report_restore(result)
            give_back(result)
          end)
        end)
      end,
      fork = function()
        local node = node_at_cursor()
        if node then
          M.fork(tree_state.session_id, node.id, function(sid)
            tree_state.session_id = sid
            M.refresh_tree()
          end)
        end
      end,
      label = function()
        local node = node_at_cursor()
        if not node then
          return
        end
        vim.ui.input({ prompt = "Label: ", default = node.label or "" }, function(label)
          if label == nil then
            return
          end
          client.exec("reins.session.label", { sessionId = tree_state.session_id, entryId = node.id, label = label }, function(err)
            if err then
              return fail("label", err)
            end
            M.refresh_tree()
          end)
        end)
      end,
      close = function()
        vim.cmd("close")
      end,
    })
  end
  if vim.fn.bufwinid(tree_state.buf) == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, tree_state.buf)
    vim.api.nvim_win_set_height(0, 12)
    local k = require("reins.config").options.keymaps
    local hints = {}
    for _, pair in ipairs({ { k.tree_navigate, "continue from here" }, { k.tree_restore, "files too" }, { k.tree_fork, "fork" }, { k.tree_label, "label" }, { k.close, "close" } }) do
      if pair[1] then
        table.insert(hints, pair[1] .. " " .. pair[2])
      end
    end
    vim.wo.winbar = "%#ReinsWinbar# session tree %#ReinsWinbarDim#· " .. table.concat(hints, " · "):gsub("%%", "%%%%")
  end
  M.refresh_tree(function(tree)
    -- The cursor starts on the leaf, which a long tree would otherwise leave below the window.
    local win = vim.fn.bufwinid(tree_state.buf)
    for i, node in ipairs(tree_state.nodes) do
      if node.id == tree.leaf and win ~= -1 then
        vim.api.nvim_win_set_cursor(win, { i, 0 })
      end
    end
  end)
end

return M
