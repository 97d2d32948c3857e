-- `connect = { path = … }`: the plugin reaches a `reins lsp --listen unix:PATH` over its Unix
-- socket, with no token, and the chat works over it.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({ { text = "Over the socket." } })
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

T.test("a Unix socket needs no token", function()
  local path = vim.fn.tempname() .. "/run/lsp.sock"
  listen({ "--listen", "unix:" .. path })
  require("reins").setup({ connect = { path = path },
                            init_options = { baseUrl = url, apiKey = "test-key", model = "scripted" } })
  chat_answers("Hello over the socket", "Over the socket.")
end)
