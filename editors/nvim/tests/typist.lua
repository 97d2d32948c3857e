-- A scripted typist in the buffer the agent edits, for the live-buffer specs: it inserts unique
-- tokens at the ends of lines (by turns next to the agent's lines and far from them) at a fixed
-- rate for the whole run, while the agent's edits arrive (reviewed and accepted, or applied
-- without asking). Each run then counts what the issue "edits into a live buffer" counts: typed
-- characters lost, agent hunks lost silently, hunks on the wrong line, refused hunks reported.
--
-- The number of runs comes from REINS_TYPIST_RUNS (CI runs 2; `scripts/typist` runs 20 per cell)
-- and the rates from REINS_TYPIST_RATES (insertions a second, comma-separated; 0 is nobody typing:
-- then what is left is the two edit calls of one answer, the second below lines the first adds).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local M = {}

local LINES = 40
--- The lines each run's two edit calls change: the first call's first edit also inserts three
--- lines below its line, above every line of the second call.
local FIRST = { 5, 12, 19 }
local SECOND = { 26, 31, 36 }
--- Where the typist types: next to an agent line, and far from all of them.
local NEAR = { 4, 13, 20, 25, 32, 37 }
local FAR = { 1, 2, 9, 16, 22, 29, 34, 40 }

local function line(i)
  return ("v%d = %d  # line %d"):format(i, i, i)
end

local function marker(run, k)
  return ("<A%d.%d>"):format(run, k)
end

function M.content()
  local lines = {}
  for i = 1, LINES do
    lines[i] = line(i)
  end
  return lines
end

--- The model's replies for `runs` runs: each one answer with two edit calls, then a final text.
function M.replies(runs)
  local replies = {}
  for run = 1, runs do
    local function edits(targets, first_k)
      local list = {}
      for n, i in ipairs(targets) do
        local k = first_k + n - 1
        local new = line(i) .. "  " .. marker(run, k)
        if k == 1 then
          new = new .. "\n# inserted a\n# inserted b\n# inserted c"
        end
        table.insert(list, { oldText = line(i), newText = new })
      end
      return list
    end
    table.insert(replies, {
      delayMs = 300,
      toolCalls = {
        { id = ("r%d_c1"):format(run), name = "edit", arguments = { path = "live.py", edits = edits(FIRST, 1) } },
        { id = ("r%d_c2"):format(run), name = "edit", arguments = { path = "live.py", edits = edits(SECOND, 4) } },
      },
    })
    table.insert(replies, { text = ("Run %d done."):format(run) })
  end
  return replies
end

--- The row (0-based) of the line of the original `i`, wherever it is now.
local function row_of(buf, i)
  local prefix = line(i)
  for row, text in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if text:sub(1, #prefix) == prefix and (text:len() == #prefix or text:sub(#prefix + 1, #prefix + 1) ~= "0") then
      return row - 1
    end
  end
end

--- Starts typing into `buf` at `rate` insertions a second; returns a function that stops it and
--- answers the tokens typed.
local function start_typing(buf, rate)
  local typed, n = {}, 0
  if rate == 0 then
    return function()
      return typed
    end
  end
  local timer = assert(vim.uv.new_timer())
  local interval = math.floor(1000 / rate)
  timer:start(interval, interval, vim.schedule_wrap(function()
    if not vim.api.nvim_buf_is_valid(buf) then
      return
    end
    n = n + 1
    local targets = n % 2 == 0 and NEAR or FAR
    local i = targets[math.floor(n / 2) % #targets + 1]
    local row = row_of(buf, i)
    if not row then
      return
    end
    local token = ("[t%d]"):format(n)
    local text = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
    vim.api.nvim_buf_set_text(buf, row, #text, row, #text, { token })
    table.insert(typed, token)
  end))
  return function()
    timer:stop()
    timer:close()
    return typed
  end
end

--- The tool blocks of the current conversation, by tool call id.
local function tool_blocks()
  local blocks = {}
  for _, block in ipairs(require("reins.chat").current().blocks) do
    if block.kind == "tool" and block.id then
      blocks[block.id] = block
    end
  end
  return blocks
end

--- One run: the buffer reset, a prompt, typing until the run ends, then the counts.
function M.run(buf, run, rate, review_mode)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.content())
  local review = require("reins.review")
  local accepting
  if review_mode then
    -- The user looks at each proposal for a moment (typing on), then accepts it.
    accepting = assert(vim.uv.new_timer())
    local seen = {}
    accepting:start(50, 50, vim.schedule_wrap(function()
      for _, id in ipairs(vim.deepcopy(review.order)) do
        seen[id] = seen[id] or vim.uv.now()
        if seen[id] ~= true and vim.uv.now() - seen[id] > 250 then
          seen[id] = true
          review.accept(id)
        end
      end
    end))
  end
  local stop = start_typing(buf, rate)
  require("reins.chat").send(("Mark the lines (run %d)."):format(run))
  T.wait_for(function()
    local conv = require("reins.chat").current()
    return conv and conv.running
  end, "the run to start")
  H.wait_idle()
  local typed = stop()
  if accepting then
    accepting:stop()
    accepting:close()
  end
  local text = H.buf_text(buf)
  local counts = { typed = #typed, chars_lost = 0, lost = 0, misplaced = 0, refused = 0, unexplained = 0, waiting = 0 }
  for _, token in ipairs(typed) do
    if not text:find(token, 1, true) then
      counts.chars_lost = counts.chars_lost + #token
    end
  end
  local blocks = tool_blocks()
  local targets = vim.list_extend(vim.deepcopy(FIRST), SECOND)
  for k, i in ipairs(targets) do
    local mark = marker(run, k)
    local row = row_of(buf, i)
    local on_row = row and vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]:find(mark, 1, true)
    if on_row then
      -- Applied, where it belongs.
    elseif text:find(mark, 1, true) then
      counts.misplaced = counts.misplaced + 1
    else
      local block = blocks[("r%d_c%d"):format(run, k <= 3 and 1 or 2)]
      local proposal = block and block.proposal
      local told = block and (block.status == "error" or (proposal and proposal.status ~= "applied"))
      if told then
        counts.refused = counts.refused + 1
        local reason = (proposal and proposal.reason) or block.result or ""
        if reason == "" then
          counts.unexplained = counts.unexplained + 1
        end
      else
        counts.lost = counts.lost + 1
      end
    end
  end
  for _, block in pairs(blocks) do
    if block.proposal and block.proposal.status == "waiting" then
      counts.waiting = counts.waiting + 1
    end
  end
  return counts
end

--- The spec: `runs` runs at each rate in one approval mode, every count but `refused` zero.
function M.spec(review_mode)
  local runs = tonumber(vim.env.REINS_TYPIST_RUNS or "") or 2
  local rates = vim.tbl_map(tonumber, vim.split(vim.env.REINS_TYPIST_RATES or "0,20", ",", { trimempty = true }))
  local url = H.start_llm(M.replies(runs * #rates))
  H.workspace({ ["live.py"] = table.concat(M.content(), "\n") .. "\n" })
  local options = review_mode and {} or { approval = { edit = "auto" } }
  H.setup(url, { init_options = options })
  local errors = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    if level == vim.log.levels.ERROR then
      table.insert(errors, msg)
    end
    notify(msg, level)
  end
  -- How often the plugin refused an edit made for another version (the server re-based it).
  local apply = require("reins.apply")
  local stale = apply.stale
  local refusals = 0
  apply.stale = function(...)
    local why = stale(...)
    refusals = refusals + (why and 1 or 0)
    return why
  end
  local mode = review_mode and "review" or "auto"
  for _, rate in ipairs(rates) do
    T.test(("%s mode, typing %d/s: nothing typed or proposed is lost or misplaced (%d runs)"):format(mode, rate, runs), function()
      local buf = vim.fn.bufnr("live.py")
      if buf == -1 then
        vim.cmd("edit live.py")
        buf = vim.api.nvim_get_current_buf()
      end
      require("reins.chat").open(false)
      errors, refusals = {}, 0
      local total = { typed = 0, chars_lost = 0, lost = 0, misplaced = 0, refused = 0, unexplained = 0, waiting = 0 }
      for _ = 1, runs do
        M.runs_done = (M.runs_done or 0) + 1
        local run = M.runs_done
        local counts = M.run(buf, run, rate, review_mode)
        for key, value in pairs(counts) do
          total[key] = total[key] + value
        end
      end
      io.stdout:write(("     figures: mode=%s rate=%d runs=%d typed=%d chars_lost=%d hunks_lost_silently=%d misplaced=%d refused_reported=%d unexplained=%d waiting=%d errors=%d stale_versions_refused=%d\n"):format(
        mode, rate, runs, total.typed, total.chars_lost, total.lost, total.misplaced, total.refused, total.unexplained, total.waiting, #errors, refusals))
      T.eq(total.chars_lost, 0, "typed characters lost")
      T.eq(total.lost, 0, "hunks lost silently")
      T.eq(total.misplaced, 0, "hunks misplaced")
      T.eq(total.unexplained, 0, "refused hunks without a reason")
      T.eq(total.waiting, 0, "proposals still waiting after the run")
      T.eq(errors, {}, "errors shown")
    end)
  end
end

return M
