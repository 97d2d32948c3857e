-- The request the chat's session last sent to the model (`reins.session.lastRequest`): its URL and
-- JSON body, keys redacted by the server, in a scratch buffer — to see the exact prompt, tools and
-- history the model got when an answer is puzzling.
local client = require("reins.client")

local M = {}

--- `value` as indented JSON lines, object keys sorted (a decoded object keeps no order).
function M.json_lines(value)
  local lines = {}
  local function emit(v, indent, prefix, suffix)
    local pad = ("  "):rep(indent)
    if type(v) == "table" and next(v) ~= nil then
      local is_list = vim.islist(v)
      table.insert(lines, pad .. prefix .. (is_list and "[" or "{"))
      local keys = {}
      if is_list then
        for i = 1, #v do
          keys[i] = i
        end
      else
        keys = vim.tbl_keys(v)
        table.sort(keys, function(a, b)
          return tostring(a) < tostring(b)
        end)
      end
      for i, k in ipairs(keys) do
        local comma = i < #keys and "," or ""
        emit(v[k], indent + 1, is_list and "" or (vim.json.encode(tostring(k)):gsub("\\/", "/") .. ": "), comma)
      end
      table.insert(lines, pad .. (is_list and "]" or "}") .. suffix)
    elseif type(v) == "table" then
      table.insert(lines, pad .. prefix .. "{}" .. suffix)
    else
      -- A string's newlines stay escaped: one JSON value per line, as sent.
      table.insert(lines, pad .. prefix .. vim.json.encode(v):gsub("\\/", "/") .. suffix)
    end
  end
  emit(value, 0, "", "")
  return lines
end

--- Shows the last request of the chat's session in a scratch buffer (in a new tab).
function M.show()
  local sid = require("reins.chat").session_id
  if not sid then
    return vim.notify("reins: no session yet: send a message first", vim.log.levels.WARN)
  end
  client.exec("reins.session.lastRequest", { sessionId = sid }, function(err, result)
    if err then
      return vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
    end
    if not result or not result.body then
      return vim.notify("reins: this session has not called the model yet", vim.log.levels.WARN)
    end
    local lines = { "// POST " .. (result.url or "?") .. "  (headers, which carry the key, not shown)" }
    vim.list_extend(lines, M.json_lines(result.body))
    local buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].filetype = "jsonc"
    vim.bo[buf].modifiable = false
    vim.bo[buf].bufhidden = "wipe"
    -- No slashes: the tab line shortens a path-like name to nothing readable.
    pcall(vim.api.nvim_buf_set_name, buf, "[reins request " .. sid:sub(1, 8) .. "]")
    vim.cmd("tab split")
    vim.api.nvim_win_set_buf(0, buf)
    -- The split copied the chat window's options: JSON shows its quotes, and no chat title.
    local wo = vim.wo[0]
    wo.conceallevel, wo.winbar, wo.wrap = 0, "", true
    vim.keymap.set("n", "q", "<Cmd>tabclose<CR>", { buffer = buf, nowait = true, desc = "reins: close the request" })
  end)
end

return M
