-- End to end with the editor's own language server: pyright from npm, started by Neovim through
-- vim.lsp.start for Python buffers, as a user's config would. The agent's `lsp` tool asks reins,
-- reins asks the plugin (`reins/languageServer`), and the plugin passes the request to pyright,
-- loading shapes.py into a hidden buffer first. The answers are reins's usual compact lines, and
-- reins starts no pyright of its own although one is on PATH (the process tree says so). A
-- rename through the same pyright is reviewed per hunk (one accepted, one rejected) and taken
-- back by a checkout from the session tree.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local repo = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h:h")
local prefix = vim.trim(vim.fn.system({ "bash", repo .. "/tests/langservers/install.sh" }))
assert(vim.v.shell_error == 0, "tests/langservers/install.sh failed: " .. prefix)
local bin = prefix .. "/node_modules/.bin"
-- On PATH, so reins would find pyright too (its ready-made entry) if it looked.
vim.env.PATH = bin .. ":" .. vim.env.PATH

local shapes = table.concat({
  "class Greeter:",
  "    def greet(self, name):",
  '        """Says hello to someone."""',
  '        return "Hello, " + name',
  "",
  "",
  "class Robot:",
  "    def greet(self, name):",
  '        return "BEEP " + name',
}, "\n") .. "\n"
local app = table.concat({
  "from shapes import Greeter, Robot",
  "",
  "",
  "def main():",
  "    g = Greeter()",
  "    r = Robot()",
  '    print(g.greet("a"))',
  '    print(r.greet("b"))',
  "    # one",
  "    # two",
  "    # three",
  "    # four",
  "    # five",
  "    # six",
  "    # seven",
  '    print(g.greet("c"))',
}, "\n") .. "\n"

local url = H.start_llm({
  { toolCalls = { { id = "d1", name = "lsp", arguments = { operation = "definition", path = "app.py", line = 7, symbol = "greet" } } } },
  { toolCalls = { { id = "r1", name = "lsp", arguments = { operation = "references", path = "shapes.py", line = 2, symbol = "greet" } } } },
  { toolCalls = { { id = "h1", name = "lsp", arguments = { operation = "hover", path = "app.py", line = 8, symbol = "greet" } } } },
  { text = "Greeter.greet is used twice." },
  { toolCalls = { { id = "n1", name = "rename", arguments = { path = "shapes.py", line = 2, symbol = "greet", newName = "welcome" } } } },
  { text = "Renamed where you said." },
})
local dir = H.workspace({ ["shapes.py"] = shapes, ["app.py"] = app })
H.setup(url, {})

vim.cmd("filetype on")
vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    vim.lsp.start({ name = "pyright", cmd = { bin .. "/pyright-langserver", "--stdio" }, root_dir = dir }, { bufnr = args.buf })
  end,
})

local function tool_result(id)
  for _, block in ipairs(require("reins.chat").current().blocks) do
    if block.kind == "tool" and block.id == id then
      return block.result or ""
    end
  end
  return ""
end

--- Every process: its parent and command line.
local function processes()
  local all = {}
  for _, name in ipairs(vim.fn.readdir("/proc")) do
    local pid = tonumber(name)
    local stat = pid and io.open("/proc/" .. name .. "/stat")
    if stat then
      local line = stat:read("*a") or ""
      stat:close()
      local ppid = tonumber(line:match("^%d+ %b() %S+ (%d+)"))
      local f = io.open("/proc/" .. name .. "/cmdline")
      local cmdline = f and (f:read("*a") or ""):gsub("%z", " ") or ""
      if f then
        f:close()
      end
      all[pid] = { ppid = ppid, cmdline = cmdline }
    end
  end
  return all
end

--- The pyright processes below `root`.
local function pyrights_below(all, root)
  local found = {}
  for pid, p in pairs(all) do
    if p.cmdline:find("pyright", 1, true) then
      local up = p.ppid
      while up and up > 1 do
        if up == root then
          table.insert(found, pid)
          break
        end
        up = all[up] and all[up].ppid
      end
    end
  end
  return found
end

T.test("the lsp tool answers from the editor's pyright, and reins starts none", function()
  vim.cmd("edit app.py")
  T.wait_for(function()
    return #vim.lsp.get_clients({ name = "pyright", bufnr = 0 }) == 1
  end, "pyright attached to app.py", 20000)
  vim.cmd("ReinsSend Where is greet used?")
  T.wait_for(function()
    return H.chat_text():find("Greeter.greet is used twice.", 1, true) and not require("reins.chat").current().running
  end, "the final answer", 90000)
  T.eq(tool_result("d1"), "shapes.py:\n  2:9: def greet(self, name):", "definition")
  T.eq(
    tool_result("r1"),
    'app.py:\n  7:13: print(g.greet("a"))\n  16:13: print(g.greet("c"))\nshapes.py:\n  2:9: def greet(self, name):',
    "references, from a file loaded into a hidden buffer"
  )
  T.contains(tool_result("h1"), "def greet(name: Unknown)", "hover")
  local hidden = vim.fn.bufnr(dir .. "/shapes.py")
  T.ok(hidden > 0 and vim.api.nvim_buf_is_loaded(hidden) and not vim.bo[hidden].buflisted, "shapes.py: a hidden buffer")

  local reins = require("reins.client").get()
  local all = processes()
  local reins_pid
  for pid, p in pairs(all) do
    if p.ppid == vim.fn.getpid() and p.cmdline:find(H.reins_bin .. " lsp", 1, true) then
      reins_pid = pid
    end
  end
  T.ok(reins and reins_pid, "the reins process under Neovim")
  T.eq(#pyrights_below(all, vim.fn.getpid()) >= 1, true, "the editor's pyright runs")
  T.eq(pyrights_below(all, reins_pid), {}, "no pyright started by reins")
end)

T.test("a rename from the editor's pyright is reviewed per hunk, and R on the prompt takes it back", function()
  local review = require("reins.review")
  local keys = require("reins.config").options.keymaps
  local function press(lhs)
    vim.api.nvim_feedkeys(vim.keycode(lhs), "mx", false)
  end
  vim.cmd("ReinsSend Rename greet to welcome.")
  T.wait_for(function()
    return #review.order == 2
  end, "one proposal per file of the rename", 60000)
  local by_file = {}
  for _, id in ipairs(review.order) do
    local p = review.pending[id]
    by_file[vim.fn.fnamemodify(vim.uri_to_fname(p.edit.uri), ":t")] = p
  end
  T.eq(#by_file["shapes.py"].edit.hunks, 1, "shapes.py: the definition")
  T.eq(#by_file["app.py"].edit.hunks, 2, "app.py: the two calls of Greeter.greet, not Robot's")
  review.accept(by_file["shapes.py"].edit.id)
  local p = by_file["app.py"]
  T.wait_for(function()
    return p.view.buf and vim.api.nvim_buf_is_valid(p.view.buf)
  end, "app.py's review shown")
  vim.api.nvim_set_current_buf(p.view.buf)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  press(keys.next_hunk)
  press(keys.accept_hunk)
  H.with_ui({ "keep the last call" }, function()
    press(keys.reject_hunk)
    T.wait_for(function()
      return #review.order == 0
    end, "the rename decided")
  end)
  local app_buf, shapes_buf = vim.fn.bufnr(dir .. "/app.py"), vim.fn.bufnr(dir .. "/shapes.py")
  local renamed_app = app:gsub('g%.greet%("a"%)', 'g.welcome("a")')
  T.wait_for(function()
    return H.buf_text(app_buf) .. "\n" == renamed_app
  end, "app.py: only the accepted hunk")
  T.wait_for(function()
    return H.buf_text(shapes_buf) .. "\n" == shapes:gsub("def greet", "def welcome", 1)
  end, "shapes.py renamed")
  T.wait_for(function()
    return H.chat_text():find("Renamed where you said.", 1, true) and not require("reins.chat").current().running
  end, "the answer after the review")
  T.contains(tool_result("n1"), "keep the last call", "the reason reached the model")

  -- R on the prompt: both files proposed back; accepting restores them.
  vim.cmd("ReinsTree")
  local tree = vim.fn.bufnr("reins://tree")
  T.wait_for(function()
    return H.buf_text(tree):find("you    Rename greet to welcome.", 1, true)
  end, "the prompt in the tree")
  vim.api.nvim_set_current_win(vim.fn.bufwinid(tree))
  for i, line in ipairs(vim.api.nvim_buf_get_lines(tree, 0, -1, false)) do
    if line:find("you    Rename greet to welcome.", 1, true) then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
    end
  end
  press(keys.tree_restore)
  T.wait_for(function()
    return #review.order == 2
  end, "both files proposed back")
  for _, id in ipairs(vim.deepcopy(review.order)) do
    review.accept(id)
  end
  T.wait_for(function()
    return H.buf_text(app_buf) .. "\n" == app and H.buf_text(shapes_buf) .. "\n" == shapes
  end, "both files as they were")
end)

T.test("a file no server of the editor's is for is answered null, without the long wait", function()
  vim.fn.writefile({ "just text" }, dir .. "/notes.txt")
  local uri = vim.uri_from_fname(dir .. "/notes.txt")
  local answer, took
  coroutine.wrap(function()
    local started = vim.uv.hrtime()
    answer = require("reins.language_servers").answer({
      uri = uri,
      method = "textDocument/hover",
      params = { textDocument = { uri = uri }, position = { line = 0, character = 1 } },
    }, require("reins.client").get())
    took = (vim.uv.hrtime() - started) / 1e6
  end)()
  T.wait_for(function()
    return answer ~= nil
  end, "the answer", 5000)
  T.eq(answer, vim.NIL, "null: reins falls back to a server of its own")
  T.ok(took < require("reins.language_servers").attach_timeout_ms / 2, ("answered in %d ms"):format(took))
end)
