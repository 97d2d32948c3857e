-- A small test runner for headless Neovim:
--   nvim --headless -u NONE -i NONE -n -l tests/runner.lua tests/x_spec.lua …
-- Each spec file returns nothing and registers tests with `T.test(name, fn)`; tests run in order
-- (later tests may build on earlier ones), a failure is reported with its traceback, and the
-- process exits non-zero when any test failed.
local T = {}
_G.T = T

local tests = {}
local current_file

function T.test(name, fn)
  table.insert(tests, { name = name, fn = fn, file = current_file })
end

local function fmt(v)
  return type(v) == "string" and string.format("%q", v) or vim.inspect(v)
end

function T.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(("%s\n  expected: %s\n  actual:   %s"):format(what or "values differ", fmt(expected), fmt(actual)), 2)
  end
end

function T.ok(cond, what)
  if not cond then
    error(what or "expected a true value", 2)
  end
end

function T.contains(haystack, needle, what)
  if not haystack:find(needle, 1, true) then
    error(("%s\n  expected to find: %s\n  in:\n%s"):format(what or "text not found", fmt(needle), haystack), 2)
  end
end

--- Runs the event loop until `cond()` holds; fails after `ms`, describing what it waited for.
function T.wait_for(cond, what, ms)
  local ok = vim.wait(ms or 20000, function()
    local good, value = pcall(cond)
    return good and value
  end, 5)
  if not ok then
    error("timed out waiting for " .. (what or "a condition"), 2)
  end
end

-- Headless notifications would run into the test output; print them on lines of their own.
vim.notify = function(msg, level)
  io.stdout:write(("     notify[%s]: %s\n"):format(level or vim.log.levels.INFO, msg))
end

local files = _G.arg or {}
for _, file in ipairs(files) do
  current_file = file
  dofile(file)
end

local failed = 0
for _, t in ipairs(tests) do
  local ok, err = xpcall(t.fn, debug.traceback)
  if ok then
    io.stdout:write(("ok   %s\n"):format(t.name))
  else
    failed = failed + 1
    io.stdout:write(("FAIL %s (%s)\n%s\n"):format(t.name, t.file, err))
  end
end
io.stdout:write(("%d passed, %d failed\n"):format(#tests - failed, failed))
if T.cleanup then
  pcall(T.cleanup)
end
io.stdout:flush()
os.exit(failed == 0 and 0 or 1)
