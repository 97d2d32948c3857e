-- Worktree agents: `:ReinsAgent {prompt}` starts one on a git worktree of its own
-- (`reins.session.new {worktree = true}`), and when its run ends its change comes back as
-- proposals reviewed like any other (`:ReinsPending`). `:ReinsAgents` lists this repository's
-- agents (theirs and `reins run --worktree`'s), running or finished, with what each cost and the
-- files it changed; in that list `r` reviews the agent under the cursor again, `D` discards it.
local client = require("reins.client")

local M = {}

local function notify(msg, level)
  vim.notify("reins: " .. msg, level or vim.log.levels.INFO)
end

--- One line per agent: id, status, cost, changed files, and where its worktree is.
function M.lines(result)
  local agents = (result or {}).agents or {}
  if #agents == 0 then
    return { "No worktree agents in this repository." }
  end
  local lines = {}
  for _, agent in ipairs(agents) do
    local changed = #agent.changed > 0 and table.concat(agent.changed, ", ") or "nothing changed yet"
    table.insert(lines, string.format("%s  %-8s $%.4f  %s", agent.id, agent.status, agent.cost or 0, changed))
    table.insert(lines, "    " .. agent.dir)
  end
  return lines
end

--- Starts an agent on a worktree of its own with `prompt`; `done(session_id, worktree_id)`
--- once it runs (tests).
function M.start(prompt, done)
  if not prompt or vim.trim(prompt) == "" then
    return notify("say what the agent should do: :ReinsAgent {prompt}", vim.log.levels.WARN)
  end
  client.exec("reins.session.new", { worktree = true }, function(err, new)
    if err then
      return vim.schedule(function()
        notify("could not start a worktree agent: " .. client.error_text(err), vim.log.levels.ERROR)
      end)
    end
    client.exec("reins.chat.send", { sessionId = new.sessionId, text = prompt }, function(send_err)
      vim.schedule(function()
        if send_err then
          return notify("the worktree agent did not start: " .. client.error_text(send_err), vim.log.levels.ERROR)
        end
        notify(("agent %s works on %s; its change comes back for review"):format(new.worktree.id, new.worktree.dir))
        if done then
          done(new.sessionId, new.worktree.id)
        end
      end)
    end)
  end)
end

--- The agent of the list line under the cursor.
local function agent_at_cursor(buf)
  local agents = vim.b[buf].reins_agents or {}
  local row = vim.api.nvim_win_get_cursor(0)[1]
  return agents[math.floor((row + 1) / 2)]
end

--- Proposes the change of worktree agent `id` again (`reins.worktree.review`).
function M.review(id)
  client.exec("reins.worktree.review", { id = id }, function(err)
    if err then
      vim.schedule(function()
        notify("reins.worktree.review: " .. client.error_text(err), vim.log.levels.ERROR)
      end)
    end
  end)
end

--- Removes worktree agent `id` and what it did (`reins.worktree.discard`).
function M.discard(id, done)
  client.exec("reins.worktree.discard", { id = id }, function(err)
    vim.schedule(function()
      if err then
        return notify("reins.worktree.discard: " .. client.error_text(err), vim.log.levels.ERROR)
      end
      notify("agent " .. id .. " and its worktree are gone")
      if done then
        done()
      end
    end)
  end)
end

--- Asks the server for the list and shows it; `done(lines)` when given (tests).
function M.show(done)
  client.exec("reins.worktree.list", {}, function(err, result)
    vim.schedule(function()
      if err then
        vim.notify("reins: reins.worktree.list: " .. client.error_text(err), vim.log.levels.ERROR)
        return
      end
      local lines = M.lines(result)
      -- One list buffer: shown again (and refreshed) rather than opened twice.
      local buf = vim.fn.bufnr("reins://agents")
      if buf == -1 or not vim.api.nvim_buf_is_valid(buf) then
        buf = vim.api.nvim_create_buf(false, true)
        vim.bo[buf].bufhidden = "wipe"
        vim.api.nvim_buf_set_name(buf, "reins://agents")
        vim.keymap.set("n", "r", function()
          local agent = agent_at_cursor(buf)
          if agent then
            M.review(agent.id)
          end
        end, { buffer = buf, desc = "reins: review this agent's change again" })
        vim.keymap.set("n", "D", function()
          local agent = agent_at_cursor(buf)
          if agent then
            M.discard(agent.id, function()
              M.show()
            end)
          end
        end, { buffer = buf, desc = "reins: discard this agent and its worktree" })
      end
      vim.b[buf].reins_agents = (result or {}).agents or {}
      vim.bo[buf].modifiable = true
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
      vim.bo[buf].modifiable = false
      if vim.fn.bufwinid(buf) == -1 then
        vim.cmd("botright split")
        vim.api.nvim_win_set_buf(0, buf)
      end
      if done then
        done(lines)
      end
    end)
  end)
end

--- What a finished agent's review holds, said once: its answer, the files proposed, the
--- conflicts (also in the quickfix list, at the agent's version of each file).
local function on_review(event)
  local parts = { ("agent %s is done"):format(event.id) }
  if event.summary and event.summary ~= "" then
    table.insert(parts, (event.summary:gsub("%s+", " ")))
  end
  table.insert(parts, ("%d file(s) to review (:ReinsPending)"):format(#(event.edits or {})))
  if #(event.conflicts or {}) > 0 then
    local items = {}
    for _, conflict in ipairs(event.conflicts) do
      table.insert(items, { filename = conflict.agentFile, lnum = 1, text = conflict.reason })
    end
    vim.fn.setqflist({}, " ", { title = "reins: agent " .. event.id .. " conflicts", items = items })
    table.insert(parts, ("%d conflict(s) left as you have them (quickfix list)"):format(#event.conflicts))
  end
  notify(table.concat(parts, "; "))
end

client.on_event(function(params)
  local event = params.event
  if event.type == "worktree_review" then
    vim.schedule(function()
      on_review(event)
    end)
  elseif event.type == "worktree_removed" then
    vim.schedule(function()
      notify(("agent %s's change landed; its worktree is removed"):format(event.id))
    end)
  end
end)

return M
