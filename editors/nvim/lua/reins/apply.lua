-- `workspace/applyEdit` from reins: an edit made for another version of a buffer than the one
-- the buffer is at is refused with `applied = false` and the versions, so the server re-bases it
-- onto the text it has not seen yet. Neovim's own handler applies an edit for version 0 to any
-- version (old offsets into newer text) and answers `applied = true` for one it dropped as older.
local M = {}

--- Why `edit` cannot apply as it is, or nil. Only the first change of a buffer names the version
--- it was made for (the others follow from it), as Neovim checks.
function M.stale(edit, client_id)
  local seen = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    local document = change.textDocument
    if not change.kind and document and document.version ~= nil and document.version ~= vim.NIL and not seen[document.uri] then
      seen[document.uri] = true
      local bufnr = vim.uri_to_bufnr(document.uri)
      if vim.api.nvim_buf_is_loaded(bufnr) and vim.lsp.buf_is_attached(bufnr, client_id) then
        local version = vim.lsp.util.buf_versions[bufnr]
        if version ~= document.version then
          return ("%s is at version %d, the edit was made for version %d"):format(
            vim.fn.fnamemodify(vim.uri_to_fname(document.uri), ":~:."),
            version,
            document.version
          )
        end
      end
    end
  end
end

--- The handler: changes not yet sent go first, so the server's copy is never behind.
function M.handler(err, params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client and params and params.edit then
    -- Sent at once anyway (reins's client has no debounce), unless a user set one.
    local ok, changetracking = pcall(require, "vim.lsp._changetracking")
    for _, change in ipairs(params.edit.documentChanges or {}) do
      local bufnr = change.textDocument and vim.uri_to_bufnr(change.textDocument.uri)
      if ok and bufnr and vim.api.nvim_buf_is_loaded(bufnr) then
        pcall(changetracking.flush, client, bufnr)
      end
    end
    local why = M.stale(params.edit, ctx.client_id)
    if why then
      return { applied = false, failureReason = why }
    end
  end
  return vim.lsp.handlers["workspace/applyEdit"](err, params, ctx)
end

return M
