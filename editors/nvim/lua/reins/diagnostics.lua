-- Answers the server's `reins/diagnostics` request from vim.diagnostic: the problems Neovim knows
-- of (other language servers, linters, anything that calls vim.diagnostic.set) in the buffers
-- asked about, or in every loaded file buffer, as LSP diagnostics in the client's position
-- encoding. reins's own diagnostics (its pending edits') are left out, and so are buffers nothing
-- else checks (no other language server attached, no diagnostics from anything else): their
-- problems are unknown rather than absent, and the server then does not wait for them to change
-- after an edit. The server uses them for
-- the agent's `diagnostics` tool, to tell the agent what its edits broke, and for asks about a
-- selection; see protocol-docs/diagnostics.md.
local client = require("reins.client")

local M = {}

--- The namespaces of a client's LSP diagnostics (pushed and pulled).
local function namespaces_of(client_id)
  local own = {}
  for _, pull in ipairs({ false, true }) do
    local ok, ns = pcall(vim.lsp.diagnostic.get_namespace, client_id, pull)
    if ok and ns then
      own[ns] = true
    end
  end
  return own
end

--- The loaded file buffer `uri` names, if there is one (none is created).
local function buffer_of(uri)
  local ok, name = pcall(vim.uri_to_fname, uri)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      local buf_name = vim.api.nvim_buf_get_name(bufnr)
      if buf_name ~= "" and (vim.uri_from_bufnr(bufnr) == uri or (ok and buf_name == name)) then
        return bufnr
      end
    end
  end
end

--- Every loaded buffer of a file, with its URI.
local function file_buffers()
  local out = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].buftype == "" and vim.api.nvim_buf_get_name(bufnr) ~= "" then
      table.insert(out, { bufnr = bufnr, uri = vim.uri_from_bufnr(bufnr) })
    end
  end
  return out
end

--- Whether anything besides reins reports problems in `bufnr`: another language server attached
--- to it, or another source's diagnostics in it now.
local function checked(bufnr, client_id, own)
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if c.id ~= client_id then
      return true
    end
  end
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if not own[d.namespace] and d.source ~= "reins" then
      return true
    end
  end
  return false
end

--- A vim.diagnostic item as an LSP Diagnostic.
local function to_lsp(bufnr, d, encoding)
  local diagnostic = {
    range = {
      start = client.position(bufnr, d.lnum, d.col or 0, encoding),
      ["end"] = client.position(bufnr, d.end_lnum or d.lnum, d.end_col or d.col or 0, encoding),
    },
    severity = d.severity,
    message = d.message,
  }
  if d.source and d.source ~= "" then
    diagnostic.source = d.source
  end
  if type(d.code) == "string" or type(d.code) == "number" then
    diagnostic.code = d.code
  end
  return diagnostic
end

--- The diagnostics of `bufnr` besides reins's own, as LSP Diagnostics in `encoding` (of the reins
--- client `client_id`, nil when none runs): what the server is told, and what `#diagnostics` quotes.
function M.of(bufnr, client_id, encoding)
  local own = client_id and namespaces_of(client_id) or {}
  local diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if not own[d.namespace] and d.source ~= "reins" then
      table.insert(diagnostics, to_lsp(bufnr, d, encoding))
    end
  end
  return diagnostics
end

--- The answer to `reins/diagnostics {uris?}` for the reins client `client_id`.
function M.answer(params, client_id, encoding)
  local buffers = {}
  if type(params) == "table" and type(params.uris) == "table" then
    for _, uri in ipairs(params.uris) do
      local bufnr = type(uri) == "string" and buffer_of(uri)
      if bufnr then
        table.insert(buffers, { bufnr = bufnr, uri = uri })
      end
    end
  else
    buffers = file_buffers()
  end
  local own = namespaces_of(client_id)
  local items = {}
  for _, buffer in ipairs(buffers) do
    if checked(buffer.bufnr, client_id, own) then
      table.insert(items, { uri = buffer.uri, diagnostics = M.of(buffer.bufnr, client_id, encoding) })
    end
  end
  return { items = items }
end

--- The handler of the `reins/diagnostics` request.
function M.handler(_, params, ctx)
  local c = vim.lsp.get_client_by_id(ctx.client_id)
  return M.answer(params, ctx.client_id, c and c.offset_encoding or "utf-16")
end

return M
