-- End to end: the model's todo list shows in the chat as one checklist that changes in place.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local function todo(id, statuses)
  local steps = { "Read the parser", "Fix the off-by-one", "Run the tests" }
  local todos = {}
  for i, status in ipairs(statuses) do
    table.insert(todos, { content = steps[i], status = status })
  end
  return { toolCalls = { { id = id, name = "todo", arguments = { todos = todos } } } }
end

local url = H.start_llm({
  todo("t1", { "in_progress", "pending", "pending" }),
  todo("t2", { "completed", "completed", "in_progress" }),
  { text = "Fixed, and the tests pass." },
})
H.workspace({ ["a.txt"] = "a\n" })
H.setup(url)

T.test("the todo list is one checklist, updated where it first showed", function()
  local chat = require("reins.chat")
  chat.open(false)
  chat.send("Fix the parser.")
  H.wait_idle()
  local text = H.chat_text()
  T.contains(text, "☰ todo 2/3\n  ✓ Read the parser\n  ✓ Fix the off-by-one\n  ▶ Run the tests")
  local _, count = text:gsub("☰ todo", "")
  T.eq(count, 1, "one checklist: " .. text)
  T.ok(not text:find("○", 1, true), "the first list was replaced: " .. text)
  T.contains(text, "Fixed, and the tests pass.")
end)

T.test("a resumed session shows the todo list it was left with", function()
  local chat = require("reins.chat")
  local conversation = require("reins.conversation")
  local sid = chat.current().id
  conversation.reset(sid)
  local resumed
  require("reins.sessions").resume(sid, nil, function(id)
    resumed = id
  end)
  T.wait_for(function()
    return resumed ~= nil and H.chat_text():find("Fixed, and the tests pass.", 1, true)
  end, "the resumed conversation")
  T.wait_for(function()
    return H.chat_text():find("☰ todo 2/3\n  ✓ Read the parser\n  ✓ Fix the off-by-one\n  ▶ Run the tests", 1, true)
  end, "the checklist after the conversation")
end)
