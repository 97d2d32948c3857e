-- The lazy.nvim spec of doc/reins.txt (|reins-lazy|), run as lazy.nvim runs it: `build` in a
-- coroutine resumed until it ends, then `init` and `config`, with a plugin object whose `dir` is
-- a checkout. lazy.nvim itself is on no package registry; cargo is replaced by a stand-in that
-- records how it was called and "builds" by copying REINS_BIN (a release build takes minutes).
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") -- editors/nvim
local reins_bin = assert(vim.env.REINS_BIN, "set REINS_BIN to the reins binary")

-- A checkout of its own (the plugin's files, linked), so the binary "built" here is not the
-- real checkout's.
local checkout = vim.fn.tempname()
vim.fn.mkdir(checkout .. "/bin", "p")
vim.uv.fs_symlink(vim.fn.fnamemodify(root, ":h"), checkout .. "/editors")
local cargo_log = checkout .. "/cargo.log"
vim.fn.writefile({
  "#!/bin/sh",
  'echo "$PWD $*" >> ' .. vim.fn.shellescape(cargo_log),
  'if [ -n "$FAKE_CARGO_FAIL" ]; then echo "   Compiling reins" >&2; echo "error[E0425]: cannot find value" >&2; exit 101; fi',
  'while [ $# -gt 0 ]; do [ "$1" = --target-dir ] && target="$2"; shift; done',
  'echo "   Compiling reins v0.1.0" >&2',
  'mkdir -p "$target/release" && cp ' .. vim.fn.shellescape(reins_bin) .. ' "$target/release/reins"',
}, checkout .. "/bin/cargo")
vim.fn.setfperm(checkout .. "/bin/cargo", "rwxr-xr-x")
local path = vim.env.PATH

--- The spec as the documentation shows it.
local function documented_spec()
  local lines = vim.fn.readfile(root .. "/doc/reins.txt")
  local code, inside, after_tag = {}, false, false
  for _, line in ipairs(lines) do
    if line:find("*reins-lazy*", 1, true) then
      after_tag = true
    elseif after_tag and not inside and line:match(">lua$") then
      inside = true
    elseif inside and line:match("^<") then
      break
    elseif inside then
      table.insert(code, (line:gsub("^    ", "")))
    end
  end
  T.ok(#code > 0, "the spec in doc/reins.txt")
  return assert(load("return " .. table.concat(code, "\n"), "the spec of doc/reins.txt"))()
end

--- Runs `spec.build(plugin)` as lazy.nvim does; returns what it yielded, or fails with its error.
local function lazy_build(spec, plugin)
  local co = coroutine.create(function()
    spec.build(plugin)
  end)
  local yielded = {}
  while true do
    local ok, msg = coroutine.resume(co)
    if not ok then
      error(msg, 0)
    end
    if coroutine.status(co) == "dead" then
      return yielded
    end
    table.insert(yielded, msg)
    vim.wait(5)
  end
end

local spec = documented_spec()
local plugin = { name = "reins", dir = checkout }

T.test("without cargo the build says what to do", function()
  vim.env.PATH = checkout .. "/nowhere"
  local ok, err = pcall(lazy_build, spec, plugin)
  vim.env.PATH = path
  T.ok(not ok, "the build failed")
  T.contains(err, "building needs cargo (https://rustup.rs)")
end)

T.test("a failed build shows cargo's error", function()
  vim.env.PATH = checkout .. "/bin:" .. path
  vim.env.FAKE_CARGO_FAIL = "1"
  local ok, err = pcall(lazy_build, spec, plugin)
  vim.env.FAKE_CARGO_FAIL = nil
  T.ok(not ok, "the build failed")
  T.contains(err, "`cargo build --release -p reins` failed in " .. checkout .. " (exit 101)")
  T.contains(err, "error[E0425]: cannot find value")
end)

T.test("build runs cargo in the checkout without blocking, as lazy.nvim runs it", function()
  vim.fn.delete(cargo_log)
  local yielded = lazy_build(spec, plugin)
  T.eq(vim.fn.readfile(cargo_log), { checkout .. " build --release --locked -p reins --target-dir " .. checkout .. "/target" })
  T.ok(#yielded > 0, "it yielded while cargo ran")
  T.eq(yielded[1].level, vim.log.levels.TRACE, "a status for lazy.nvim's view, not a log line")
  T.eq(vim.fn.executable(checkout .. "/target/release/reins"), 1, "the binary is in the checkout's target")
end)

T.test("init puts the plugin on the runtimepath; config sets it up with the binary it built", function()
  spec.init(plugin)
  T.ok(vim.tbl_contains(vim.opt.runtimepath:get(), checkout .. "/editors/nvim"), "on the runtimepath")
  spec.config(plugin, spec.opts)
  T.eq(vim.fn.exists(":ReinsChat"), 2, "the commands exist")
  local built = checkout .. "/target/release/reins"
  T.eq({ require("reins.client").command() }, { { built, "lsp" }, "built in " .. checkout })
  vim.fn.writefile({ "print(1)" }, vim.fn.tempname() .. ".lua")
  vim.cmd("edit " .. vim.fn.tempname() .. ".lua")
  local client
  T.wait_for(function()
    client = vim.lsp.get_clients({ name = "reins", bufnr = 0 })[1]
    return client and client.initialized
  end, "the server started for a file")
  T.eq(client.config.cmd[1], built, "the server is the binary built")
  vim.cmd("checkhealth reins")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  T.contains(text, ("OK using %s (built in %s)"):format(built, checkout))
  T.contains(text, "OK version: reins ")
  vim.cmd("bwipeout!")
  client:stop(true)
end)

T.test("without a build, reins on PATH; an explicit cmd wins over both", function()
  local client = require("reins.client")
  local config = require("reins.config")
  config.options.cmd = { "/opt/reins/bin/reins", "lsp" }
  T.eq({ client.command() }, { { "/opt/reins/bin/reins", "lsp" }, "cmd in setup()" })
  config.options.cmd = nil
  vim.fn.delete(checkout .. "/target", "rf")
  vim.env.PATH = vim.fn.fnamemodify(reins_bin, ":h") .. ":" .. path
  T.eq({ client.command() }, { { reins_bin, "lsp" }, "reins on PATH" })
  vim.env.PATH = checkout .. "/nowhere"
  local cmd, why = client.command()
  vim.env.PATH = path
  T.eq(cmd, nil, "no binary")
  T.contains(why, "no reins binary: build it (cargo build --release -p reins in " .. checkout .. ")")
end)

T.test("a spec with dir = … (lazy.nvim runs no build) builds on first use, with progress, then starts", function()
  local client = require("reins.client")
  vim.fn.delete(checkout .. "/target", "rf")
  vim.fn.delete(cargo_log)
  vim.fn.writefile({ "[workspace]" }, checkout .. "/Cargo.toml")
  vim.env.PATH = checkout .. "/bin:" .. path
  local told, echoed = {}, {}
  local notify, echo = vim.notify, vim.api.nvim_echo
  vim.notify = function(msg)
    table.insert(told, msg)
  end
  vim.api.nvim_echo = function(chunks)
    table.insert(echoed, chunks[1][1])
  end
  client.register()
  T.wait_for(function()
    return told[2] ~= nil
  end, "the build to end")
  vim.notify, vim.api.nvim_echo = notify, echo
  vim.env.PATH = path
  local built = checkout .. "/target/release/reins"
  T.eq(told, {
    ("reins: no reins binary yet: building it once (cargo build --release in %s), a few minutes"):format(checkout),
    "reins: built " .. built .. "; starting the server",
  })
  T.eq(echoed, { "reins: building: Compiling reins v0.1.0" }, "cargo's progress in the message area")
  T.eq(vim.fn.readfile(cargo_log), { checkout .. " build --release --locked -p reins --target-dir " .. checkout .. "/target" })
  T.eq({ client.command() }, { { built, "lsp" }, "built in " .. checkout })
end)

T.cleanup = function()
  for _, c in ipairs(vim.lsp.get_clients({ name = "reins" })) do
    c:stop(true)
  end
end
