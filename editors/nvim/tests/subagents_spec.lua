-- End to end: a subagent's tools show in the chat nested under the parent's `task` call, each
-- with its status, while the child's own session keeps its whole conversation.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({
  { toolCalls = { { id = "t1", name = "task", arguments = { prompt = "list the files", description = "list" } } } },
  { toolCalls = { { id = "c1", name = "ls", arguments = { path = "." } } } },
  { text = "a.txt" },
  { text = "The workspace holds a.txt." },
})
H.workspace({ ["a.txt"] = "one\n" })
H.setup(url)

T.test("a subagent's tools are nested under the task call", function()
  vim.cmd("edit a.txt")
  local chat = require("reins.chat")
  chat.open(false)
  chat.send("what is here?")
  T.wait_for(function()
    return H.chat_text():find("The workspace holds a.txt.", 1, true) ~= nil
  end, "the parent's answer", 20000)
  H.wait_idle()
  local text = H.chat_text()
  local task_line = text:find("task list", 1, true)
  local child_line = text:find("    ↳ ✓ ls .", 1, true)
  T.ok(task_line ~= nil, "the task call is shown:\n" .. text)
  T.ok(child_line ~= nil and child_line > task_line, "the child's ls is nested under it:\n" .. text)
end)
