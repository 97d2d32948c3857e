-- With the model server down, the wait shows: each retry is a line in the chat until the run
-- gives up with an error that says what to do.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

H.workspace({ ["a.lua"] = "return 1\n" })
-- Nothing listens on port 9 of 127.0.0.1: every connection is refused.
H.setup("http://127.0.0.1:9/v1")

T.test("retries show in the chat while the model server is down, then the failure", function()
  local chat = require("reins.chat")
  chat.open(false)
  chat.send("Hello?")
  T.wait_for(function()
    return H.chat_text():find("⟳ the model call failed (Connection refused (os error 111)); retrying (1/3) in", 1, true)
  end, "the first retry in the chat", 3000)
  T.wait_for(function()
    return H.chat_text():find("retrying (2/3) in", 1, true)
  end, "the second retry, on the same line", 5000)
  T.ok(not H.chat_text():find("(1/3)", 1, true), "one retry line, updated")
  T.wait_for(function()
    local conv = chat.current()
    return conv and not conv.running and chat.settled()
  end, "the run to give up", 15000)
  local text = H.chat_text()
  T.ok(not text:find("retrying", 1, true), "the retry line is gone: " .. text)
  T.contains(text, "✗ ")
  T.contains(text, "127.0.0.1:9")
  T.contains(text, "Start the model server there")
end)
