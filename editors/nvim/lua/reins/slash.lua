-- Slash commands typed in the chat's prompt. The server carries out its built-ins, templates and
-- skills (`reins.chat.send` with the text); the few that need the editor are done here: pickers
-- for `/model` and `/thinking` without an argument, `/new`, `/fork` and `/tree` shown in the
-- panel and the tree buffer, and the plugin's own `/regenerate` and `/request`.
local client = require("reins.client")

local M = {}

--- The commands only the plugin knows, listed with the server's in completion.
M.own = {
  { name = "regenerate", description = "Answer the last message again (the old answer stays in the tree)", kind = "chat" },
  { name = "request", description = "Show the request last sent to the model, as JSON", kind = "chat" },
}

--- The levels `/thinking` takes, as the server names them.
M.thinking_levels = { "off", "minimal", "low", "medium", "high", "xhigh" }

--- Calls `fn(session_id)` with the chat's session, starting one when there is none.
local function with_session(fn)
  local chat = require("reins.chat")
  if chat.session_id then
    return fn(chat.session_id)
  end
  client.exec("reins.session.new", {}, function(err, result)
    if err then
      return vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
    end
    chat.set_session(result.sessionId, nil)
    fn(result.sessionId)
  end)
end

--- `/thinking` without a level: pick one.
function M.pick_thinking()
  vim.ui.select(M.thinking_levels, { prompt = "Thinking level: " }, function(level)
    if not level then
      return
    end
    with_session(function(sid)
      client.exec("reins.session.setThinking", { sessionId = sid, level = level }, function(err, result)
        if err then
          return vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
        end
        local note = result.note and (" (" .. result.note .. ")") or ""
        vim.notify(("reins: thinking: %s%s"):format(result.thinkingLevel, note), vim.log.levels.INFO)
      end)
    end)
  end)
end

--- Carries out `text` when it is a command the plugin does itself; false when it is not (the
--- server then gets it, a built-in, template or skill, or a message starting with a slash).
function M.run(text)
  local name, args = text:match("^/([%w%-_:]+)%s*(.-)%s*$")
  if not name then
    return false
  end
  local chat = require("reins.chat")
  if name == "model" and args == "" then
    require("reins.model").pick(chat.session_id)
  elseif name == "thinking" and args == "" then
    M.pick_thinking()
  elseif name == "new" and args == "" then
    chat.new_session()
  elseif name == "fork" then
    if not chat.session_id then
      vim.notify("reins: no session to fork yet", vim.log.levels.WARN)
    else
      require("reins.sessions").fork(chat.session_id, args ~= "" and args or nil)
    end
  elseif name == "tree" and args == "" then
    require("reins.sessions").tree()
  elseif name == "regenerate" and args == "" then
    chat.regenerate()
  elseif name == "request" and args == "" then
    require("reins.request").show()
  else
    return false
  end
  return true
end

--- Completion of a built-in's argument after `/model ` or `/thinking `: `done(items)`.
function M.argument_items(line, done)
  local name, typed = line:match("^/(%w+) (%S*)$")
  if name == "thinking" then
    local items = {}
    for _, level in ipairs(M.thinking_levels) do
      if vim.startswith(level, typed) then
        table.insert(items, { word = level, menu = "thinking" })
      end
    end
    return done(items, #line - #typed)
  elseif name == "model" then
    client.exec("reins.model.list", {}, function(err, result)
      if err or not result then
        return
      end
      local items = {}
      for _, m in ipairs(result.models or {}) do
        if vim.startswith(m.id, typed) then
          table.insert(items, { word = m.id, menu = m.keyAvailable and "model" or "model, no key" })
        end
      end
      done(items, #line - #typed)
    end)
  end
end

return M
