-- End to end: with `ask.tools`, :ReinsAsk starts a session of its own offering only those tools
-- (recorded in its session file); the model's call to another tool is refused.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local source = "local M = {}\nfunction M.add(a, b)\n  return a + b\nend\nreturn M\n"
local url = H.start_llm({
  { toolCalls = { { id = "c1", name = "write", arguments = { path = "math.lua", content = "gone\n" } } } },
  { text = "I can only read here: it adds two numbers." },
})
local dir = H.workspace({ ["math.lua"] = source })
H.setup(url, { ask = { tools = { "read-only" } } })

T.test("an ask offers only the ask.tools set, recorded in its own session", function()
  vim.cmd("edit math.lua")
  vim.cmd("2,4ReinsAsk What does this do?")
  T.wait_for(function()
    return H.chat_text():find("it adds two numbers.", 1, true)
  end, "the answer in the panel")
  H.wait_idle()
  T.eq(table.concat(vim.fn.readfile(dir .. "/math.lua"), "\n") .. "\n", source, "math.lua is unchanged")
  local files = vim.fn.globpath(vim.env.REINS_HOME, "sessions/**/*.jsonl", false, true)
  T.eq(#files, 1, "one session file")
  local text = table.concat(vim.fn.readfile(files[1]), "\n")
  T.contains(text, '"type":"active_tools_change"')
  T.contains(text, '"tools":["read","ls","grep","find","todo","diagnostics","lsp"]')
  T.contains(text, "unknown tool `write`; the available tools are: read, ls, grep, find")
end)
