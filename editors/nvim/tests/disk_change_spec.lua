-- A formatter rewrites a file on disk while its buffer is open and the agent edits the buffer:
-- the buffer gets both the formatter's changes and the agent's (a three-way merge whose base is
-- what the buffer loaded), the user is told, and writing the buffer keeps both. Where the two
-- touch the same lines, nothing is applied and the reason reaches the chat.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local runs = tonumber(vim.env.REINS_TYPIST_RUNS or "") or 2

local function original(run)
  local lines = {}
  for i = 1, 20 do
    lines[i] = ("x%d=%d # run %d"):format(i, i, run)
  end
  return lines
end

--- The formatter: spaces around `=` on every line but the agent's (line 5) or, with `clash`, on
--- every line.
local function formatted(lines, clash)
  return vim.tbl_map(function(l)
    if not clash and l:find("^x5=") then
      return l
    end
    return (l:gsub("^(x%d+)=(%d+)", "%1 = %2"))
  end, lines)
end

local replies = {}
for run = 1, runs do
  table.insert(replies, {
    delayMs = 300,
    toolCalls = {
      { id = ("d%d"):format(run), name = "edit", arguments = {
        path = "fmt.py",
        edits = { { oldText = ("x5=5 # run %d"):format(run), newText = ("x5=5 # run %d <AGENT>"):format(run) } },
      } },
    },
  })
  table.insert(replies, { text = "Edited." })
end
table.insert(replies, {
  delayMs = 300,
  toolCalls = { { id = "clash", name = "edit", arguments = {
    path = "fmt.py",
    edits = { { oldText = "x5=5 # run 0", newText = "x5=5 # run 0 <AGENT>" } },
  } } },
})
table.insert(replies, { text = "Tried." })

local url = H.start_llm(replies)
H.workspace({ ["fmt.py"] = table.concat(original(1), "\n") .. "\n" })
H.setup(url, { init_options = { approval = { edit = "auto" } } })
local notices = H.capture_notices()

--- Sets the buffer and the file to `lines`, as if just loaded; starts a run whose edit arrives
--- after the formatter wrote `disk` to the file.
local function run_with_formatter(buf, lines, disk, prompt)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.cmd("silent write!")
  require("reins.chat").send(prompt)
  -- The model takes 300 ms to answer: the formatter writes meanwhile.
  vim.wait(50)
  vim.fn.writefile(disk, "fmt.py")
  H.wait_idle()
end

T.test(("a formatter's change on disk and the agent's edit both reach the buffer, and the user is told (%d runs)"):format(runs), function()
  vim.cmd("edit fmt.py")
  local buf = vim.api.nvim_get_current_buf()
  require("reins.chat").open(false)
  local lost, told_runs, reloaded_runs = 0, 0, 0
  -- Neovim may reload the unmodified buffer from disk itself ('autoread') before the edit comes:
  -- then the buffer already has the formatter's text, and there is nothing to merge or tell.
  local reloaded = false
  vim.api.nvim_create_autocmd({ "FileChangedShellPost", "BufReadPost" }, {
    buffer = buf,
    callback = function()
      reloaded = true
    end,
  })
  for run = 1, runs do
    reloaded = false
    local lines = original(run)
    local disk = formatted(lines, false)
    local before = #notices
    run_with_formatter(buf, lines, disk, ("Mark x5 (run %d)."):format(run))
    local expected = vim.deepcopy(disk)
    expected[5] = expected[5] .. " <AGENT>"
    if not vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), expected) then
      lost = lost + 1
      io.stdout:write(("     run %d: %s\n"):format(run, vim.inspect(vim.api.nvim_buf_get_lines(buf, 0, -1, false))))
    end
    local told = false
    for i = before + 1, #notices do
      told = told or notices[i]:find("changed on disk", 1, true) ~= nil
    end
    T.ok(told or reloaded, "the user is told the file changed on disk")
    told_runs = told_runs + (told and 1 or 0)
    reloaded_runs = reloaded_runs + (reloaded and 1 or 0)
    vim.cmd("silent write!")
    T.eq(vim.fn.readfile("fmt.py"), expected, "writing the buffer keeps both")
  end
  io.stdout:write(("     figures: case=formatter runs=%d runs_losing_a_change=%d merged_and_told=%d reloaded_by_neovim=%d\n"):format(
    runs, lost, told_runs, reloaded_runs))
  T.eq(lost, 0, "runs where the buffer lost the formatter's or the agent's change")
end)

T.test("where the formatter and the agent change the same line, nothing is applied and the chat says why", function()
  local buf = vim.fn.bufnr("fmt.py")
  local lines = original(0)
  local disk = formatted(lines, true)
  run_with_formatter(buf, lines, disk, "Mark x5 again.")
  T.eq(vim.api.nvim_buf_get_lines(buf, 0, -1, false), lines, "the buffer is as the user left it")
  T.eq(vim.fn.readfile("fmt.py"), disk, "the disk keeps the formatter's text")
  -- The call shows as failed, and its result (what expanding it in the chat shows, and what the
  -- model read) says why.
  local block = require("reins.chat").current().tools.clash
  T.eq(block.status, "error")
  T.contains(require("reins.render").block(block)[1], "✗ edit fmt.py")
  T.contains(block.result, "the file changed on disk while its buffer was open")
end)
