-- Answers the server's `reins/languageServer` request from the language servers Neovim runs for
-- its buffers (vim.lsp): the agent's `lsp` and `rename` tools then use pyright or rust-analyzer
-- as the editor runs them, and reins starts no second copy. The request names a file, an LSP
-- method and its params; the answer is the raw result of a client attached to that file's buffer
-- (the file is loaded into a hidden buffer if need be, and a client given a moment to attach),
-- or null when none offers the method. See protocol-docs/language-servers.md.
local M = {}

--- How long a server that is starting is waited for.
M.attach_timeout_ms = 10000
--- How long a buffer loaded just now waits for any server to attach.
M.appear_ms = 500
--- How long a server may take to answer (reins gives up sooner or later itself).
M.answer_timeout_ms = 30000

--- Waits `ms` inside the request's coroutine (the RPC layer runs handlers in one).
local function sleep(ms)
  local co = coroutine.running()
  vim.defer_fn(function()
    coroutine.resume(co)
  end, ms)
  coroutine.yield()
end

--- The loaded buffer of `uri`'s file, else one loaded now without a window (hidden and
--- unlisted), so that its FileType autocommands start and attach its servers. Returns the buffer
--- and whether it was loaded just now.
local function buffer_for(uri)
  local ok, name = pcall(vim.uri_to_fname, uri)
  if not ok then
    return nil
  end
  local real = vim.uv.fs_realpath(name)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    local buf_name = vim.api.nvim_buf_get_name(bufnr)
    if vim.api.nvim_buf_is_loaded(bufnr) and buf_name ~= "" then
      if buf_name == name or (real and vim.uv.fs_realpath(buf_name) == real) then
        return bufnr, false
      end
    end
  end
  if not real then
    return nil
  end
  local bufnr = vim.fn.bufadd(name)
  vim.bo[bufnr].buflisted = false
  vim.fn.bufload(bufnr)
  return bufnr, true
end

--- The clients other than reins (`reins_id`) that offer `method`, for `bufnr` (every running
--- client when nil); whether some client there is still starting; and whether there is any.
local function offering(bufnr, method, reins_id)
  local found, starting, any = {}, false, false
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = bufnr, _uninitialized = true })) do
    if c.id ~= reins_id and c.name ~= "reins" then
      any = true
      if not c.initialized then
        starting = true
      elseif c:supports_method(method, bufnr) then
        table.insert(found, c)
      end
    end
  end
  return found, starting, any
end

--- The client to ask: one attached to the buffer that offers `method`, waited for (at most
--- `attach_timeout_ms`) while a client is starting; a buffer loaded just now gets
--- `appear_ms` for one to attach at all (its FileType autocommands start them at once, so a
--- file no server is for is not waited for long).
local function client_for(bufnr, method, reins_id, fresh)
  local waited = 0
  while true do
    local found, starting, any = offering(bufnr, method, reins_id)
    if #found > 0 then
      return found[1]
    end
    local may_come = starting or (fresh and not any and waited < M.appear_ms)
    if not may_come or waited >= M.attach_timeout_ms then
      return nil
    end
    sleep(50)
    waited = waited + 50
  end
end

--- Converts `position`'s column, counted in `from` units, to `to` units by the buffer's line.
local function convert(bufnr, position, from, to)
  if from == to or type(position) ~= "table" or type(position.line) ~= "number" then
    return
  end
  local line = bufnr and vim.api.nvim_buf_get_lines(bufnr, position.line, position.line + 1, false)[1] or ""
  local ok, byte = pcall(vim.str_byteindex, line, from, position.character, false)
  if ok then
    position.character = vim.str_utfindex(line, to, byte, false)
  end
end

--- Asks `c` and waits for its answer in the request's coroutine.
local function ask(c, method, params, bufnr)
  local co = coroutine.running()
  local done = false
  local function finish(err, result)
    if not done then
      done = true
      coroutine.resume(co, err, result)
    end
  end
  local sent = c:request(method, params, finish, bufnr)
  if not sent then
    return { message = c.name .. " did not take the request (it may have stopped)" }, nil
  end
  vim.defer_fn(function()
    finish({ message = ("%s did not answer within %d ms"):format(c.name, M.answer_timeout_ms) }, nil)
  end, M.answer_timeout_ms)
  return coroutine.yield()
end

--- The answer to `reins/languageServer {uri?, method, params}` for the reins client `reins`.
function M.answer(params, reins)
  if type(params) ~= "table" or type(params.method) ~= "string" then
    return nil, vim.lsp.rpc_response_error(vim.lsp.protocol.ErrorCodes.InvalidParams, "a `method` is needed")
  end
  local request = type(params.params) == "table" and params.params or {}
  local bufnr, fresh
  if type(params.uri) == "string" then
    bufnr, fresh = buffer_for(params.uri)
    if not bufnr then
      return vim.NIL
    end
  end
  local c = client_for(bufnr, params.method, reins.id, fresh)
  if not c then
    return vim.NIL
  end
  -- reins counts columns as its own connection does; the server may count otherwise.
  convert(bufnr, request.position, reins.offset_encoding or "utf-16", c.offset_encoding or "utf-16")
  local err, result = ask(c, params.method, request, bufnr)
  local answer = { server = c.name, positionEncoding = c.offset_encoding or "utf-16" }
  if err then
    answer.error = { code = err.code, message = err.message or tostring(err) }
  else
    answer.result = result == nil and vim.NIL or result
  end
  return answer
end

--- The handler of the `reins/languageServer` request.
function M.handler(_, params, ctx)
  local reins = vim.lsp.get_client_by_id(ctx.client_id) or { id = ctx.client_id }
  return M.answer(params, reins)
end

return M
