-- End to end: `:ReinsAgents` lists an agent that `reins run --worktree` started in this
-- repository, while it runs, with the file it changed in its worktree; `:ReinsAgent` starts one
-- from the editor, whose change comes back as a proposal reviewed in the buffer.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

-- The run's agent edits a.txt, then its answer takes a while: it is still running when listed.
local url = H.start_llm({
  {
    toolCalls = { { id = "c1", name = "edit", arguments = { path = "a.txt", edits = { { oldText = "one", newText = "ONE" } } } } },
  },
  { text = "done", delayMs = 4000 },
  -- The agent `:ReinsAgent` starts.
  {
    toolCalls = { { id = "c2", name = "edit", arguments = { path = "b.txt", edits = { { oldText = "bee", newText = "BEE" } } } } },
  },
  { text = "b is loud now" },
})
local dir = H.workspace({ ["a.txt"] = "one\n", ["b.txt"] = "bee\n" })
vim.fn.system({ "sh", "-c", "git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init" })
assert(vim.v.shell_error == 0, "git init failed")
H.setup(url)

T.test(":ReinsAgents lists a running worktree agent and what it changed", function()
  local run = vim.fn.jobstart({ H.reins_bin, "run", "--worktree", "--yes", "change a" }, {
    env = { OPENAI_BASE_URL = url, OPENAI_API_KEY = "test-key", REINS_MODEL = "scripted" },
  })
  vim.cmd("edit a.txt")
  T.wait_for(function()
    local c = require("reins.client").get()
    return c ~= nil and c.root_dir == dir
  end, "the server to start")
  local shown
  T.wait_for(function()
    require("reins.agents").show(function(lines)
      shown = lines
    end)
    vim.wait(300)
    return shown ~= nil and shown[1]:find("running", 1, true) ~= nil and shown[1]:find("a.txt", 1, true) ~= nil
  end, "the running agent with a.txt changed")
  T.contains(table.concat(shown, "\n"), "/worktrees/")
  vim.fn.jobwait({ run }, 10000)
end)

T.test(":ReinsAgent works on a worktree and its change is reviewed in the buffer", function()
  local notices = H.capture_notices()
  vim.cmd("edit b.txt")
  vim.cmd("ReinsAgent change b")
  local review = require("reins.review")
  T.wait_for(function()
    return #review.order > 0
  end, "the agent's change proposed", 20000)
  T.eq(H.buf_text(), "bee", "nothing lands before it is accepted")
  T.wait_for(function()
    return table.concat(notices, "\n"):find("b is loud now", 1, true) ~= nil
  end, "the agent's answer told")
  review.accept(review.order[#review.order])
  T.wait_for(function()
    return H.buf_text() == "BEE"
  end, "the accepted change in the buffer")
  T.wait_for(function()
    return table.concat(notices, "\n"):find("its worktree is removed", 1, true) ~= nil
  end, "the worktree removed once its change landed")
end)
