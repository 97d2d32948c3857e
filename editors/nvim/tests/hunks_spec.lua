-- Unit tests of hunk geometry: which rows a proposed hunk replaces and the lines it puts there.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
local hunks = require("reins.hunks")

local function range(l1, c1, l2, c2)
  return { start = { line = l1, character = c1 }, ["end"] = { line = l2, character = c2 } }
end

--- Applies `hunk_list` to `text` and returns the result and each hunk's geometry, compactly.
local function check(text, hunk_list, expected_text, expected_geos)
  local lines = vim.split(text, "\n", { plain = true })
  local out, _, geos = hunks.apply(lines, hunk_list, "utf-8")
  T.eq(table.concat(out, "\n"), expected_text, "text after the hunks")
  local compact = {}
  for i, g in ipairs(geos) do
    compact[i] = ("%d-%d: %s"):format(g.first, g.last, table.concat(g.new, "|"))
  end
  T.eq(compact, expected_geos, "geometry")
end

T.test("a change inside one line replaces that line", function()
  check("a = 41\nb = 2", { { index = 0, range = range(0, 4, 0, 6), oldText = "41", newText = "42" } }, "a = 42\nb = 2", { "0-0: a = 42" })
end)

T.test("whole lines replaced, range ending at a line start", function()
  check(
    "one\ntwo\nthree\nfour",
    { { index = 0, range = range(1, 0, 3, 0), oldText = "two\nthree\n", newText = "TWO\n" } },
    "one\nTWO\nfour",
    { "1-2: TWO" }
  )
end)

T.test("a pure insertion before a line replaces nothing", function()
  check(
    "one\ntwo",
    { { index = 0, range = range(1, 0, 1, 0), oldText = "", newText = "new\n" } },
    "one\nnew\ntwo",
    { "1-0: new" }
  )
end)

T.test("lines deleted entirely", function()
  check("one\ntwo\nthree", { { index = 0, range = range(1, 0, 2, 0), oldText = "two\n", newText = "" } }, "one\nthree", { "1-1: " })
end)

T.test("two hunks apply in order of position", function()
  check(
    "a\nb\nc\nd",
    {
      { index = 0, range = range(3, 0, 3, 1), oldText = "d", newText = "D" },
      { index = 1, range = range(0, 0, 0, 1), oldText = "a", newText = "A1\nA2" },
    },
    "A1\nA2\nb\nc\nD",
    { "3-3: D", "0-0: A1|A2" }
  )
end)

T.test("utf-16 columns count code units", function()
  local lines = { "é = 1" }
  local g = hunks.geometry(lines, { index = 0, range = range(0, 4, 0, 5), oldText = "1", newText = "2" }, "utf-16")
  T.eq(g.new, { "é = 2" })
end)
