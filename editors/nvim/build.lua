-- Builds the `reins` binary of a checkout for the plugin: `cargo build --release --locked -p reins`
-- into <checkout>/target, where the plugin looks first (see `cmd` in :help reins-options).
-- Plugin managers call it after installing or updating (lazy.nvim's `build`, packer's `run`, a
-- vim.pack PackChanged autocmd):
--
--   dofile(checkout .. "/editors/nvim/build.lua")(checkout)
--
-- Inside a coroutine (lazy.nvim runs builds in one) it yields while cargo runs, so Neovim stays
-- responsive and lazy.nvim shows the status; elsewhere it waits. Returns the binary's path; fails
-- with cargo's last lines when the build fails.
return function(checkout)
  checkout = checkout or vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")
  if vim.fn.executable("cargo") == 0 then
    error("reins: building needs cargo (https://rustup.rs); or install reins another way and set `cmd`", 0)
  end
  local target = checkout .. "/target"
  local result
  vim.system(
    { "cargo", "build", "--release", "--locked", "-p", "reins", "--target-dir", target },
    { cwd = checkout, text = true },
    function(out)
      result = out
    end
  )
  local co, main = coroutine.running()
  while not result do
    if co and not main and coroutine.isyieldable() then
      coroutine.yield({ msg = "building reins (cargo build --release)…", level = vim.log.levels.TRACE })
    else
      vim.wait(100, function()
        return result ~= nil
      end)
    end
  end
  if result.code ~= 0 then
    local lines = vim.split(vim.trim(result.stderr or ""), "\n")
    local tail = table.concat(vim.list_slice(lines, math.max(1, #lines - 15)), "\n")
    error(("reins: `cargo build --release -p reins` failed in %s (exit %d):\n%s"):format(checkout, result.code, tail), 0)
  end
  return target .. "/release/reins"
end
