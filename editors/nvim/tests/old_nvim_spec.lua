-- A Neovim older than 0.11 (0.7 has user commands, not the LSP client reins needs): the commands
-- say what is needed instead of failing inside the plugin. Played here by answering 0 to
-- has("nvim-0.11").
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)

T.test("on a Neovim older than 0.11 a command says which version it needs", function()
  local has = vim.fn.has
  vim.fn.has = function(feature)
    if feature == "nvim-0.11" then
      return 0
    end
    return has(feature)
  end
  local told = {}
  vim.notify = function(message, level)
    table.insert(told, { message, level })
  end
  vim.cmd.source(root .. "/plugin/reins.lua")
  for _, command in ipairs({ "ReinsChat", "ReinsSessions", "ReinsTree" }) do
    local ok, err = pcall(vim.cmd, command)
    T.ok(ok, tostring(err))
  end
  local v = vim.version()
  T.eq(told[1], {
    ("reins: :ReinsChat needs Neovim 0.11 or newer; this is %d.%d.%d"):format(v.major, v.minor, v.patch),
    vim.log.levels.ERROR,
  })
  T.eq(#told, 3, "one line per command, nothing thrown")
end)
