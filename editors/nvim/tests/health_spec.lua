-- End to end: `:checkhealth reins` shows each MCP server of the client's settings with its state
-- and tools (the reference server @modelcontextprotocol/server-everything, from npm) and names a
-- server that cannot start with the reason.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local repo = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h:h")
local prefix = vim.trim(vim.fn.system({ "bash", repo .. "/tests/mcp/install.sh" }))
assert(vim.v.shell_error == 0, "tests/mcp/install.sh failed: " .. prefix)
local everything = prefix .. "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

local url = H.start_llm({ { text = "unused" } })
local dir = H.workspace({ ["a.lua"] = "return 1\n" })
H.setup(url, {
  init_options = {
    mcpServers = {
      everything = { command = "node", args = { everything, "stdio" }, enabledTools = { "echo", "get-sum" } },
      ghost = { command = "reins-no-such-server" },
    },
  },
})

T.test(":checkhealth reins shows each MCP server's state and tools", function()
  vim.cmd("edit a.lua")
  -- The server of this workspace (a default setup may have started one elsewhere first).
  T.wait_for(function()
    local client = require("reins.client").get()
    return client ~= nil and client.root_dir == dir
  end, "the server to start")
  vim.cmd("checkhealth reins")
  local text = H.buf_text(0)
  T.contains(text, "reins: MCP servers")
  T.contains(text, "everything — node " .. everything .. " stdio (from editor settings): ready, 2 tools: mcp__everything__echo, mcp__everything__get-sum")
  T.contains(text, "ghost — reins-no-such-server (from editor settings): failed: cannot start `reins-no-such-server`: it was not found; is it installed and on PATH?")
end)
