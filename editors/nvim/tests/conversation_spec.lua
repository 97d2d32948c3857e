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

T.test("a conversation rebuilt from the session keeps its edits' partly accepted and rejected labels", function()
  local text = function(t)
    return { { type = "text", text = t } }
  end
  local call = function(id)
    return { type = "toolCall", id = id, name = "edit", arguments = { path = "calc.py" } }
  end
  local conv = conversation.load("s-loaded", {
    { role = "user", content = text("tidy calc.py") },
    { role = "assistant", content = { call("c1"), call("c2") } },
    { role = "toolResult", toolCallId = "c1", toolName = "edit", isError = false, content = text(
      "Edited calc.py as changed by the reviewer\nThe user applied hunks 1, 3 and did not apply hunk 2 (of 3 hunks) of this change to calc.py."
    ) },
    { role = "toolResult", toolCallId = "c2", toolName = "edit", isError = true, content = text(
      "The user rejected this edit of calc.py, saying: keep it short"
    ) },
  })
  local render = require("reins.render")
  T.contains(render.block(conv.tools.c1)[1], "partly accepted (hunk 1, 3)")
  T.contains(render.block(conv.tools.c2)[1], "rejected")
  T.eq(conv.tools.c2.proposal.reason, "keep it short", "with the reason")
end)
