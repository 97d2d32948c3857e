-- `:ReinsAgents`: the worktree agents of this repository (`reins run --worktree`), running or
-- finished, with what each cost and the files it changed, in a scratch buffer.
local client = require("reins.client")

local M = {}

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
      end
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

return M
