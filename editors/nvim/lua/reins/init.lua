-- reins for Neovim: `require("reins").setup{…}` registers the `reins lsp` server and wires the
-- chat panel, asking about selections, the review of proposed edits and sessions.
local M = {}

local highlights = {
  ReinsUser = { link = "Title" },
  ReinsAssistant = { link = "Function" },
  ReinsThinking = { link = "Comment" },
  ReinsToolName = { link = "Identifier" },
  ReinsToolRunning = { link = "DiagnosticInfo" },
  ReinsToolOk = { link = "DiagnosticOk" },
  ReinsToolError = { link = "DiagnosticError" },
  ReinsProposal = { link = "DiagnosticWarn" },
  ReinsNotice = { link = "DiagnosticWarn" },
  ReinsHint = { link = "Comment" },
  ReinsWinbar = { link = "Title" },
  ReinsWinbarDim = { link = "Comment" },
  ReinsAdd = { link = "DiffAdd" },
  ReinsAdded = { link = "Added" },
  ReinsRemoved = { link = "Removed" },
  ReinsDelete = { link = "DiffDelete" },
  ReinsHunkHeader = { link = "DiagnosticVirtualTextInfo" },
  ReinsHunkDecided = { link = "Comment" },
  ReinsComment = { link = "DiagnosticVirtualTextHint" },
  ReinsCommentResolved = { link = "DiagnosticVirtualTextOk" },
  ReinsTreeLeaf = { link = "CursorLine" },
  ReinsMore = { link = "PmenuSel" },
}

local function define_highlights()
  for name, spec in pairs(highlights) do
    spec = vim.tbl_extend("force", { default = true }, spec)
    vim.api.nvim_set_hl(0, name, spec)
  end
end

M.did_setup = false

-- editors/nvim, the plugin's directory (this file is lua/reins/init.lua in it).
local plugin_dir = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h")

--- Configures the plugin and enables the server. See :help reins-options.
function M.setup(opts)
  if vim.fn.has("nvim-0.11") == 0 then
    vim.notify("reins needs Neovim 0.11 or newer", vim.log.levels.ERROR)
    return
  end
  if not vim.g.loaded_reins then
    -- Put on the runtimepath after startup (a plugin manager's `init`), the user commands were
    -- never sourced.
    vim.cmd.source(vim.fn.fnameescape(plugin_dir .. "/plugin/reins.lua"))
  end
  require("reins.config").set(opts)
  define_highlights()
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("reins.highlights", { clear = true }),
    callback = define_highlights,
  })
  require("reins.client").register()
  if require("reins.config").options.filetypes == nil then
    -- vim.lsp.enable attaches on FileType; a file without a filetype never has one.
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
      group = vim.api.nvim_create_augroup("reins.attach", { clear = true }),
      callback = function(args)
        vim.schedule(function()
          local buf = args.buf
          if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].filetype == "" and vim.bo[buf].buftype == "" then
            require("reins.client").attach(buf)
          end
        end)
      end,
    })
  end
  -- The code action "Ask agent about selection" carries no question: ask for it here.
  vim.lsp.commands["reins.ask"] = function(command, ctx)
    require("reins.ask").command(command, ctx)
  end
  require("reins.chat")
  require("reins.review")
  require("reins.agents")
  M.did_setup = true
end

-- The API, for mappings of one's own.
function M.chat()
  require("reins.chat").toggle()
end

function M.ask(line1, line2, question)
  require("reins.ask").range(0, line1, line2, question)
end

function M.send(text)
  require("reins.chat").send(text)
end

return M
