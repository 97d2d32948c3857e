-- `connect`: the plugin reaches a running `reins lsp --listen` over TCP with the token the server
-- wrote to its file (as through an SSH tunnel), and the chat works over it. (Refusals of a wrong
-- token are tested against the server: tests/e2e/lsp/listen.rs.)
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({ { text = "Over the wire." } })
H.workspace({ ["a.lua"] = "return 1\n" })

--- Starts `reins lsp ARGS` (with the workspace's REINS_HOME) and returns what it said on stderr
--- up to its `listening on` line: { address = …, token_file = … }.
local function listen(args)
  local said, partial = {}, ""
  local job = vim.fn.jobstart(vim.list_extend({ H.reins_bin, "lsp" }, args), {
    -- A chunk may end inside a line: its last item is the start of the next one.
    on_stderr = function(_, data)
      data[1] = partial .. data[1]
      partial = table.remove(data)
      for _, line in ipairs(data) do
        said.token_file = said.token_file or line:match("^reins: the token is in (.-) %(send it")
        said.address = said.address or line:match("^reins: listening on (.+)$")
      end
    end,
  })
  T.ok(job > 0, "reins did not start")
  T.wait_for(function()
    return said.address ~= nil
  end, "reins to say where it listens")
  return said
end

local function chat_answers(text, answer)
  local chat = require("reins.chat")
  chat.open(false)
  chat.send(text)
  T.wait_for(function()
    return H.chat_text():find(answer, 1, true)
  end, "the answer in the chat")
  H.wait_idle()
end

T.test("the chat works over TCP with the token from the server's file", function()
  local said = listen({ "--listen", "127.0.0.1:0", "--stdio" })
  local port = tonumber(said.address:match(":(%d+)$"))
  H.setup(url, { connect = { host = "127.0.0.1", port = port, token_file = said.token_file } })
  chat_answers("Hello over TCP", "Over the wire.")
  local client = require("reins.client").get()
  T.ok(client and not client:is_stopped(), "the client with the token is connected")
  T.eq(vim.uv.fs_stat(said.token_file), nil, "the token file is removed once the client is in")
end)
