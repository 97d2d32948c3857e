-- The conversation of each session as a list of blocks (headers, user text, assistant text,
-- thinking, tool calls, proposals, notices), built from `reins/event`s while a run streams and
-- from `reins.session.messages` when a session is resumed. The chat view renders these blocks.
local M = {}

--- Conversations by session id.
M.sessions = {}

--- A block changes its `rev` whenever its rendering may change, so the view re-renders only
--- what changed.
local function touch(block)
  block.rev = (block.rev or 0) + 1
end

function M.get(session_id)
  local conv = M.sessions[session_id]
  if not conv then
    conv = {
      id = session_id,
      name = nil,
      blocks = {},
      running = false,
      tokens = 0,
      cost = 0,
      tools = {}, -- tool blocks by tool call id
      message = nil, -- content index -> block, for the assistant message streaming now
      last_role = nil,
      changed = 0,
    }
    M.sessions[session_id] = conv
  end
  return conv
end

local function add(conv, block)
  touch(block)
  table.insert(conv.blocks, block)
  return block
end

local function header(conv, role)
  if conv.last_role ~= role then
    conv.last_role = role
    add(conv, { kind = "header", role = role })
  end
end

local function text_of(content)
  local parts = {}
  for _, c in ipairs(content or {}) do
    if c.type == "text" then
      table.insert(parts, c.text)
    elseif c.type == "image" then
      table.insert(parts, "[image]")
    end
  end
  return table.concat(parts, "\n")
end

local function tool_block(conv, id, name, args)
  local block = conv.tools[id]
  if not block then
    block = add(conv, { kind = "tool", id = id, name = name, args_text = "", status = "preparing" })
    conv.tools[id] = block
  end
  if args ~= nil then
    block.args = args
  end
  return block
end

local function add_user(conv, message)
  header(conv, "user")
  local text = text_of(message.content)
  conv.first_message = conv.first_message or vim.split(text, "\n", { plain = true })[1]
  add(conv, { kind = "user", text = text })
end

--- The content blocks of an assistant message, final: replaces what the deltas built.
local function settle_assistant(conv, message)
  local streamed = conv.message or {}
  for i, c in ipairs(message.content or {}) do
    local block = streamed[i - 1]
    if c.type == "text" then
      if block and block.kind == "text" then
        block.text = c.text
        touch(block)
      elseif c.text ~= "" then
        add(conv, { kind = "text", text = c.text })
      end
    elseif c.type == "thinking" then
      if block and block.kind == "thinking" then
        block.text = c.thinking
        touch(block)
      elseif (c.thinking or "") ~= "" then
        add(conv, { kind = "thinking", text = c.thinking })
      end
    elseif c.type == "toolCall" then
      local tb = tool_block(conv, c.id, c.name, c.arguments)
      if tb.status == "preparing" then
        tb.status = "pending"
      end
      touch(tb)
    end
  end
  if message.model then
    -- The model the session talks to, for the title bar.
    conv.model = (message.provider and (message.provider .. "/") or "") .. message.model
  end
  if message.stopReason == "error" and message.errorMessage then
    -- `agent_end` may say it again with what to do: it then takes this line's place.
    conv.error_notice = add(conv, { kind = "notice", level = "error", text = message.errorMessage })
  end
  conv.message = nil
end

--- The model call failed before any content and is tried again: one line, updated in place,
--- says so until the answer comes (or the run gives up and says why).
local function on_retry(conv, delta)
  -- The reason's last part is the cause ("could not reach …: …: Connection refused").
  local reason = delta.reason or "the model call failed"
  reason = reason:match(".*: (.-)$") or reason
  local text = ("the model call failed (%s); retrying (%d/%d) in %.1f s…"):format(
    reason,
    delta.attempt or 1,
    delta.maxRetries or 1,
    (delta.delayMs or 0) / 1000
  )
  if conv.retry then
    conv.retry.text = text
    touch(conv.retry)
  else
    conv.retry = add(conv, { kind = "notice", level = "warn", icon = "⟳", text = text })
  end
end

--- The retry line goes once the call is over, whichever way.
local function drop_retry(conv)
  if not conv.retry then
    return
  end
  for i = #conv.blocks, 1, -1 do
    if conv.blocks[i] == conv.retry then
      table.remove(conv.blocks, i)
      break
    end
  end
  conv.retry = nil
end

local function on_delta(conv, delta)
  if delta.kind == "retry" then
    return on_retry(conv, delta)
  end
  drop_retry(conv)
  conv.message = conv.message or {}
  local block = conv.message[delta.index]
  if delta.kind == "tool_call" then
    block = block or tool_block(conv, delta.id, delta.name)
    block.args_text = block.args_text .. (delta.argumentsDelta or "")
  elseif not block then
    block = add(conv, { kind = delta.kind, text = "" })
  end
  conv.message[delta.index] = block
  if delta.kind ~= "tool_call" then
    block.text = block.text .. delta.delta
  end
  touch(block)
end

local function result_text(result)
  return text_of(result and result.content)
end

local function add_usage(conv, usage)
  if usage then
    conv.tokens = conv.tokens + (usage.totalTokens or 0)
    conv.cost = conv.cost + ((usage.cost or {}).total or 0)
  end
end

local function describe_edit(edit)
  if edit.tool == "bash" then
    return { kind = "proposal", id = edit.id, tool = "bash", command = edit.command, cwd = edit.cwd, status = "waiting" }
  end
  if edit.call then
    return { kind = "proposal", id = edit.id, tool = edit.tool, call = edit.call, status = "waiting" }
  end
  local path = edit.uri and vim.uri_to_fname(edit.uri) or "?"
  return {
    kind = "proposal",
    id = edit.id,
    tool = edit.tool,
    path = vim.fn.fnamemodify(path, ":~:."),
    hunks = #(edit.hunks or {}),
    create = edit.create,
    delete = edit.delete,
    -- A patch's `*** Move to`: where the file goes (JSON null decodes to vim.NIL).
    moved_to = edit.newUri ~= vim.NIL and edit.newUri and vim.fn.fnamemodify(vim.uri_to_fname(edit.newUri), ":~:.") or nil,
    status = "waiting",
  }
end

--- A tool call ended while its proposal still shows as waiting (its `edit_resolved` went
--- missing): it says what the call's result says, so nothing waits after the call.
local function settle_proposal(conv, block, is_error)
  local proposal = block.proposal
  if not proposal or proposal.status ~= "waiting" then
    return
  end
  proposal.status = is_error and "failed" or "applied"
  if is_error then
    proposal.reason = block.result
  end
  for id, entry in pairs(conv.proposals or {}) do
    if entry.block == block then
      conv.proposals[id] = nil
      conv.waiting = math.max((conv.waiting or 1) - 1, 0)
    end
  end
end

--- Applies one event of a subagent's run to its parent's conversation: each tool the child
--- starts is a line under the parent's `task` call (by the child's call id), with its status.
--- Answers whether the parent's view changed.
function M.apply_child(parent_session_id, parent_call_id, event)
  local t = event.type
  if t ~= "tool_execution_start" and t ~= "tool_execution_end" then
    return false
  end
  local conv = M.get(parent_session_id)
  local task = conv.tools[parent_call_id]
  if not task then
    return false
  end
  task.children = task.children or {}
  task.child_index = task.child_index or {}
  local child = task.child_index[event.toolCallId]
  if not child then
    child = { name = event.toolName, args = event.args, status = "running" }
    task.child_index[event.toolCallId] = child
    table.insert(task.children, child)
  end
  if t == "tool_execution_end" then
    child.status = event.isError and "error" or "ok"
  end
  touch(task)
  return true
end

--- Applies one agent event to the session's conversation.
function M.apply(session_id, event)
  local conv = M.get(session_id)
  local t = event.type
  if t == "agent_start" then
    conv.running = true
    conv.error_notice = nil
    conv.error = nil
  elseif t == "message_start" then
    local role = event.message.role
    if role == "user" then
      add_user(conv, event.message)
    elseif role == "assistant" then
      header(conv, "assistant")
      conv.message = {}
    end
  elseif t == "message_update" then
    header(conv, "assistant")
    on_delta(conv, event.delta)
  elseif t == "message_end" then
    if event.message.role == "assistant" then
      drop_retry(conv)
      settle_assistant(conv, event.message)
    end
  elseif t == "tool_execution_start" then
    local block = tool_block(conv, event.toolCallId, event.toolName, event.args)
    if block.status ~= "review" then
      block.status = "running"
    end
    touch(block)
  elseif t == "tool_execution_update" then
    local block = tool_block(conv, event.toolCallId, event.toolName)
    block.partial = (block.partial or "") .. (event.partial or "")
    touch(block)
  elseif t == "tool_execution_end" then
    local block = tool_block(conv, event.toolCallId, event.toolName)
    block.status = event.isError and "error" or "ok"
    block.result = result_text(event.result)
    settle_proposal(conv, block, event.isError)
    touch(block)
  elseif t == "todo_update" then
    -- One checklist per conversation, changed in place by each list the model sends.
    local items = {}
    for _, todo in ipairs(event.todos or {}) do
      table.insert(items, { content = todo.content, status = todo.status })
    end
    if conv.todo then
      conv.todo.items = items
      touch(conv.todo)
    else
      conv.todo = add(conv, { kind = "todo", items = items })
    end
  elseif t == "agent_end" then
    drop_retry(conv)
    conv.running = false
    conv.waiting = 0
    add_usage(conv, event.usage)
    if event.error and conv.error_notice then
      conv.error_notice.text = event.error
      touch(conv.error_notice)
    elseif event.error then
      add(conv, { kind = "notice", level = "error", text = event.error })
    elseif event.reason == "aborted" then
      add(conv, { kind = "notice", level = "warn", text = "cancelled" })
    elseif event.reason ~= "final_answer" and event.reason ~= "tool_observations" then
      add(conv, { kind = "notice", level = "warn", text = "stopped: " .. tostring(event.reason):gsub("_", " ") })
    end
    conv.message = nil
  elseif t == "edit_proposed" then
    -- The proposal shows on its tool call's line; a proposal without one gets a line of its own.
    local proposal = describe_edit(event.edit)
    local tb = event.edit.toolCallId and conv.tools[event.edit.toolCallId]
    if tb then
      tb.status = "review"
      tb.proposal = proposal
      touch(tb)
    else
      tb = add(conv, proposal)
    end
    conv.proposals = conv.proposals or {}
    conv.proposals[event.edit.id] = { block = tb, proposal = proposal }
    conv.waiting = (conv.waiting or 0) + 1
  elseif t == "edit_resolved" then
    local entry = conv.proposals and conv.proposals[event.id]
    if entry then
      entry.proposal.status = event.outcome
      entry.proposal.reason = event.reason
      entry.proposal.applied = event.hunks
      touch(entry.block)
      conv.proposals[event.id] = nil
      conv.waiting = math.max((conv.waiting or 1) - 1, 0)
    end
  else
    return false
  end
  conv.changed = conv.changed + 1
  return true
end

--- How the user decided a proposal, as its tool result tells the model (the review core's
--- sentences): a conversation rebuilt from the session has no `edit_resolved` events, and its
--- edit lines would lose their "partly accepted" or "rejected" label (after `R`, a resume).
local function decided_from_result(text, is_error)
  local applied = text:match("The user applied hunks? ([%d, ]+) and did not apply")
  if applied then
    local hunks = {}
    for n in applied:gmatch("%d+") do
      table.insert(hunks, tonumber(n) - 1)
    end
    return { kind = "proposal", status = "partially_applied", applied = hunks }
  end
  if is_error and text:find("The user rejected ", 1, true) then
    return { kind = "proposal", status = "rejected", reason = text:match("saying: ([^\n]*)") }
  end
  return nil
end

--- Rebuilds a conversation from `reins.session.messages`: its messages, then the todo list the
--- session had where it was left.
function M.load(session_id, messages, todos)
  local conv = M.get(session_id)
  conv.blocks, conv.tools, conv.message, conv.last_role, conv.first_message = {}, {}, nil, nil, nil
  conv.tokens, conv.cost, conv.running, conv.todo = 0, 0, false, nil
  for _, message in ipairs(messages or {}) do
    if message.role == "user" then
      add_user(conv, message)
    elseif message.role == "assistant" then
      header(conv, "assistant")
      settle_assistant(conv, message)
      add_usage(conv, message.usage)
    elseif message.role == "toolResult" then
      local block = tool_block(conv, message.toolCallId, message.toolName)
      block.status = message.isError and "error" or "ok"
      block.result = result_text(message)
      block.proposal = block.proposal or decided_from_result(block.result or "", message.isError)
      touch(block)
    end
  end
  if type(todos) == "table" and #todos > 0 then
    M.apply(session_id, { type = "todo_update", todos = todos })
  end
  conv.changed = conv.changed + 1
  return conv
end

--- Forgets a conversation's blocks (a new session or a reload).
function M.reset(session_id)
  M.sessions[session_id] = nil
  return M.get(session_id)
end

return M
