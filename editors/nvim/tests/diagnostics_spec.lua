-- End to end with a real diagnostic source: a small linter in a test namespace (an error per
-- `TODO`, a warning per `print(`) runs on every change of math.lua, as another language server
-- would. The plugin answers the server's `reins/diagnostics` from vim.diagnostic: the agent's
-- edit adds a TODO, and the tool result the model reads names that new error and nothing else; an
-- ask about a line carries the diagnostics of the lines around it; the agent's `diagnostics` tool
-- lists them; reins's own pending-edit diagnostics never go back to it.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local original = table.concat({
  "local M = {}",
  "function M.add(a, b)",
  "  print(a) -- TODO remove",
  "  return a + b",
  "end",
  "return M",
}, "\n") .. "\n"

local url = H.start_llm({
  { toolCalls = { { id = "e1", name = "edit", arguments = { path = "math.lua", edits = {
    { oldText = "  return a + b", newText = "  return a + b -- TODO overflow" },
  } } } } },
  { text = "Noted the overflow." },
  { text = "It adds two numbers." },
  { toolCalls = { { id = "d1", name = "diagnostics", arguments = vim.empty_dict() } } },
  { text = "Two TODOs and a print." },
  { toolCalls = { { id = "w1", name = "write", arguments = { path = "math.lua", content = "return {}\n" } } } },
  { text = "Left it as it was." },
})
H.workspace({ ["math.lua"] = original })
H.setup(url, { init_options = { approval = { edit = "auto" } } })

local ns = vim.api.nvim_create_namespace("reins-test-lint")

--- The linter: what a language server would publish for `buf`.
local function lint(buf)
  local found = {}
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local todo = line:find("TODO", 1, true)
    if todo then
      table.insert(found, { lnum = i - 1, col = todo - 1, end_col = todo + 3, message = "TODO left here",
        severity = vim.diagnostic.severity.ERROR, source = "testlint", code = "T1" })
    end
    local print_at = line:find("print(", 1, true)
    if print_at then
      table.insert(found, { lnum = i - 1, col = print_at - 1, message = "print in library code",
        severity = vim.diagnostic.severity.WARN, source = "testlint" })
    end
  end
  vim.diagnostic.set(ns, buf, found)
end

local function tool_result(id)
  for _, block in ipairs(require("reins.chat").current().blocks) do
    if block.kind == "tool" and block.id == id then
      return block.result or ""
    end
  end
  return ""
end

--- Runs `command` and waits until the run's final answer, `answer`, is in the chat.
local function run(command, answer)
  vim.cmd(command)
  T.wait_for(function()
    return H.chat_text():find(answer, 1, true) and not require("reins.chat").current().running
  end, "the answer " .. answer)
end

local buf

T.test("the model is told exactly the error its edit added", function()
  vim.cmd("edit math.lua")
  buf = vim.api.nvim_get_current_buf()
  lint(buf)
  -- Like a language server: the diagnostics follow each change, a moment later.
  vim.api.nvim_buf_attach(buf, false, {
    on_lines = function()
      vim.defer_fn(function()
        lint(buf)
      end, 50)
    end,
  })
  run("ReinsSend Note the overflow.", "Noted the overflow.")
  T.contains(H.buf_text(buf), "  return a + b -- TODO overflow")
  local line = "  return a + b -- TODO overflow"
  local column = line:find("TODO", 1, true)
  T.eq(
    tool_result("e1"):match("The edit resulted.*$"),
    ("The edit resulted in these new problems:\nmath.lua:4:%d: error[T1]: TODO left here (testlint)"):format(column),
    "only the new error, not the old TODO or the warning"
  )
end)

T.test("an ask about a line carries the diagnostics of the lines around it", function()
  run("4ReinsAsk What does it do?", "It adds two numbers.")
  local asked
  for _, block in ipairs(require("reins.chat").current().blocks) do
    if block.kind == "user" then
      asked = block.text
    end
  end
  T.contains(asked or "", "Diagnostics in the selection and the 5 lines before and after it:")
  T.contains(asked, "- line 3: error: [T1] TODO left here (testlint)")
  T.contains(asked, "- line 3: warning: print in library code (testlint)")
  T.contains(asked, "- line 4: error: [T1] TODO left here (testlint)")
end)

T.test("the diagnostics tool lists the open files' problems", function()
  run("ReinsSend What is wrong?", "Two TODOs and a print.")
  local result = tool_result("d1")
  T.contains(result, "math.lua:3:3: warning: print in library code (testlint)")
  T.contains(result, "math.lua:3:15: error[T1]: TODO left here (testlint)")
  T.contains(result, "math.lua:4:19: error[T1]: TODO left here (testlint)")
end)

T.test("reins's own pending-edit diagnostics are not answered back", function()
  local review = require("reins.review")
  vim.cmd("ReinsSend Empty it.")
  T.wait_for(function()
    return #review.order == 1
  end, "the write held for review")
  T.wait_for(function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.source == "reins" then
        return true
      end
    end
  end, "reins's diagnostics on the proposal")
  local c = require("reins.client").get()
  local answer = require("reins.diagnostics").answer({ uris = { vim.uri_from_bufnr(buf) } }, c.id, "utf-16")
  T.eq(#answer.items, 1, "one item for the buffer asked about")
  local sources = {}
  for _, d in ipairs(answer.items[1].diagnostics) do
    sources[d.source] = true
  end
  T.eq(sources, { testlint = true }, "only the linter's")
  local none = require("reins.diagnostics").answer({ uris = { "file:///nowhere/x.lua" } }, c.id, "utf-16")
  T.eq(#none.items, 0, "no buffer is made for a file that is not loaded")
  H.with_ui({ "not now" }, function()
    vim.api.nvim_feedkeys(vim.keycode(require("reins.config").options.keymaps.reject_all), "mx", false)
    T.wait_for(function()
      return #review.order == 0
    end, "the rejection")
  end)
  T.wait_for(function()
    return H.chat_text():find("Left it as it was.", 1, true)
  end, "the answer after the rejection")
end)

T.test("a buffer nothing else checks is left out, so no edit of it waits for its diagnostics", function()
  vim.cmd("edit notes.txt")
  local plain = vim.api.nvim_get_current_buf()
  local c = require("reins.client").get()
  local diagnostics = require("reins.diagnostics")
  T.eq(diagnostics.answer({ uris = { vim.uri_from_bufnr(plain) } }, c.id, "utf-16").items, {}, "asked about it")
  local all = diagnostics.answer(vim.empty_dict(), c.id, "utf-16").items
  T.eq(#all, 1, "every open file: only math.lua, which the linter checks")
  T.eq(all[1].uri, vim.uri_from_bufnr(buf))
  lint(plain)
  vim.api.nvim_buf_set_lines(plain, 0, -1, false, { "TODO" })
  lint(plain)
  T.eq(#diagnostics.answer({ uris = { vim.uri_from_bufnr(plain) } }, c.id, "utf-16").items, 1, "once it has problems")
end)
