-- Unit tests of the conversation model: what the chat shows is built from `reins/event`s.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
local conversation = require("reins.conversation")

T.test("a tool call that ends leaves no proposal of it waiting, even without its edit_resolved", function()
  local session = "s1"
  conversation.apply(session, { type = "agent_start" })
  conversation.apply(session, { type = "tool_execution_start", toolCallId = "c1", toolName = "edit", args = {} })
  local edit = { id = "e1", tool = "edit", toolCallId = "c1", uri = "file:///w/a.py", hunks = { {} } }
  conversation.apply(session, { type = "edit_proposed", edit = edit })
  local conv = conversation.get(session)
  T.eq(conv.waiting, 1, "one proposal waits")
  local result = { content = { { type = "text", text = "the change to a.py was not applied:\nthe buffer moved" } } }
  conversation.apply(session, { type = "tool_execution_end", toolCallId = "c1", toolName = "edit", isError = true, result = result })
  local block = conv.tools.c1
  T.eq(block.proposal.status, "failed", "the proposal ended with its call")
  T.eq(block.proposal.reason, "the change to a.py was not applied:\nthe buffer moved", "with the call's reason")
  T.eq(conv.waiting, 0, "nothing waits")
end)
