-- The model the chat talks to: the session's (what its last answer came from, or what the user
-- picked), else the default of new sessions (`reins.model.list`'s `current`). Shown in the chat's
-- title bar and in :checkhealth; changed with a picker (`/model`, the `pick_model` key).
local client = require("reins.client")
local conversation = require("reins.conversation")

local M = {}

--- The default model of new sessions, `provider/id`, once the server said it.
M.default = nil

local asked = false

--- The model `provider/id` of the registry entry `m` (`reins.model.list` or `reins.model.set`).
local function name_of(m)
  if m.id:find("/", 1, true) then
    return m.id
  end
  return (m.provider and (m.provider .. "/") or "") .. m.id
end

--- The model of session `session_id` (nil: of a new session), `provider/id`, or nil while
--- unknown (the default is then asked for, and `on_known` called when it comes).
function M.of(session_id, on_known)
  local conv = session_id and conversation.sessions[session_id]
  if conv and conv.model then
    return conv.model
  end
  -- Asked of a running server only: the title bar is drawn before one may have started.
  if not M.default and not asked and client.get() then
    asked = true
    client.exec("reins.model.list", {}, function(err, result)
      if err then
        asked = false
        return
      end
      for _, m in ipairs((result or {}).models or {}) do
        if m.current then
          M.default = name_of(m)
        end
      end
      if M.default and on_known then
        on_known()
      end
    end)
  end
  return M.default
end

--- Lists the models to pick one; the pick applies to `session_id` from its next turn (or, with
--- no session, to the sessions started from now on). `done(model)` after the server took it.
function M.pick(session_id, done)
  client.exec("reins.model.list", {}, function(err, result)
    if err then
      return vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
    end
    local current = M.of(session_id)
    local models = (result or {}).models or {}
    vim.ui.select(models, {
      prompt = "Model: ",
      format_item = function(m)
        local mark = name_of(m) == current and "● " or "  "
        return mark .. m.id .. (m.keyAvailable and "" or "  (no key)")
      end,
    }, function(choice)
      if not choice then
        return
      end
      client.exec("reins.model.set", { sessionId = session_id, model = choice.id }, function(set_err, set)
        if set_err then
          return vim.notify("reins: " .. client.error_text(set_err), vim.log.levels.ERROR)
        end
        local name = name_of(set.model)
        if session_id then
          conversation.get(session_id).model = name
        else
          M.default = name
        end
        require("reins.chat").render()
        if done then
          done(name)
        end
      end)
    end)
  end)
end

return M
