-- The chat panel: a markdown buffer showing the current session's conversation (a right split or
-- a float) above a small prompt buffer. Streaming output is redrawn in batches by a timer, only
-- from the first block that changed, and the cursor follows the end only when it was there.
local client = require("reins.client")
local config = require("reins.config")
local conversation = require("reins.conversation")
local render = require("reins.render")

local M = {}

local ns = vim.api.nvim_create_namespace("reins.chat")

--- The session the panel shows; nil until the first message or :ReinsNew.
M.session_id = nil
M.title = nil

local state = {
  buf = nil,
  pbuf = nil,
  win = nil,
  pwin = nil,
  cache = {}, -- per rendered block: {block, rev, start, count}
  timer = nil,
  shown = nil, -- the conversation the buffer holds
}

--- Counts redraws; tests read it to see that streaming is batched.
M.redraws = 0

local function valid_buf(b)
  return b and vim.api.nvim_buf_is_valid(b)
end

local function valid_win(w)
  return w and vim.api.nvim_win_is_valid(w)
end

function M.current()
  return M.session_id and conversation.get(M.session_id) or nil
end

local welcome = {
  "# reins",
  "",
  "Write in the prompt below and press %s to send.",
  "%s cancels a run, %s steers it, %s starts a new session.",
  "",
  "Select code and run :ReinsAsk to ask about it; :ReinsSessions resumes an earlier session.",
}

local function welcome_lines()
  local k = config.options.keymaps
  local lines = vim.deepcopy(welcome)
  lines[3] = lines[3]:format(k.send or ":ReinsSend")
  lines[4] = lines[4]:format(k.cancel or "-", k.steer or "-", k.new or ":ReinsNew")
  return lines
end

local function set_lines(buf, first, last, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
end

local function update_winbar()
  if valid_win(state.win) then
    local conv = M.current()
    local title = M.title or (conv and conv.first_message) or (M.session_id and M.session_id:sub(1, 8))
    vim.wo[state.win].winbar = render.winbar(conv, title)
  end
end

--- Windows showing the chat whose cursor sits on the last line: they keep following the end.
local function followers(line_count)
  local out = {}
  for _, win in ipairs(vim.fn.win_findbuf(state.buf)) do
    if vim.api.nvim_win_get_cursor(win)[1] >= line_count then
      table.insert(out, win)
    end
  end
  return out
end

--- Redraws the panel from the first block that changed.
function M.render()
  if not valid_buf(state.buf) then
    return
  end
  M.redraws = M.redraws + 1
  local conv = M.current()
  local buf = state.buf
  local old_count = vim.api.nvim_buf_line_count(buf)
  local follow = followers(old_count)
  if not conv or #conv.blocks == 0 then
    state.cache, state.shown = {}, conv
    set_lines(buf, 0, -1, welcome_lines())
    vim.api.nvim_buf_clear_namespace(buf, ns, 0, -1)
    vim.api.nvim_buf_set_extmark(buf, ns, 0, 0, { end_row = 1, hl_group = "ReinsAssistant" })
    update_winbar()
    return
  end
  if state.shown ~= conv then
    state.cache, state.shown = {}, conv
  end
  local blocks, cache = conv.blocks, state.cache
  local first
  for i, block in ipairs(blocks) do
    local c = cache[i]
    if not c or c.block ~= block or c.rev ~= block.rev then
      first = i
      break
    end
  end
  if not first and #cache == #blocks then
    update_winbar()
    return
  end
  first = first or (#blocks + 1)
  local start = first == 1 and 0 or (cache[first - 1].start + cache[first - 1].count)
  local new_lines, hls = {}, {}
  for i = first, #blocks do
    local block = blocks[i]
    local block_start = start + #new_lines
    if render.gap_before(blocks[i - 1], block) then
      table.insert(new_lines, "")
    end
    local lines, block_hls = render.block(block)
    for _, h in ipairs(block_hls) do
      table.insert(hls, { h[1] + start + #new_lines, h[2], h[3], h[4] })
    end
    vim.list_extend(new_lines, lines)
    cache[i] = { block = block, rev = block.rev, start = block_start, count = start + #new_lines - block_start }
  end
  for i = #blocks + 1, #cache do
    cache[i] = nil
  end
  -- Rewrite only from the first line that differs, so unchanged text is never touched.
  local old = vim.api.nvim_buf_get_lines(buf, start, -1, false)
  local same = 0
  while same < #old and same < #new_lines and old[same + 1] == new_lines[same + 1] do
    same = same + 1
  end
  set_lines(buf, start + same, -1, vim.list_slice(new_lines, same + 1))
  vim.api.nvim_buf_clear_namespace(buf, ns, start, -1)
  for _, h in ipairs(hls) do
    local line_text = new_lines[h[1] - start + 1] or ""
    local end_col = h[3] == -1 and #line_text or math.min(h[3], #line_text)
    pcall(vim.api.nvim_buf_set_extmark, buf, ns, h[1], math.min(h[2], #line_text), { end_col = end_col, hl_group = h[4] })
  end
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    vim.api.nvim_win_set_cursor(win, { count, 0 })
  end
  update_winbar()
end

--- Redraws soon: deltas arriving together become one redraw.
function M.schedule()
  if state.timer then
    return
  end
  state.timer = vim.uv.new_timer()
  state.timer:start(config.options.chat.redraw_ms, 0, function()
    vim.schedule(function()
      if state.timer then
        state.timer:close()
        state.timer = nil
      end
      M.render()
    end)
  end)
end

--- Whether every change is drawn (no redraw is waiting).
function M.settled()
  return state.timer == nil
end

--- Shows a session in the panel (and remembers it as the one to continue).
function M.set_session(id, title)
  if id ~= M.session_id then
    M.title = title
  elseif title then
    M.title = title
  end
  M.session_id = id
  if id then
    conversation.get(id)
  end
  state.cache, state.shown = {}, nil
  M.render()
end

local function ensure_bufs()
  if not valid_buf(state.buf) then
    state.buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(state.buf, "reins://chat")
    vim.bo[state.buf].filetype = "markdown"
    vim.bo[state.buf].modifiable = false
    vim.bo[state.buf].bufhidden = "hide"
    pcall(vim.treesitter.start, state.buf, "markdown")
    state.cache, state.shown = {}, nil
    require("reins.keymaps").chat(state.buf)
  end
  if not valid_buf(state.pbuf) then
    state.pbuf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(state.pbuf, "reins://prompt")
    vim.bo[state.pbuf].filetype = "markdown"
    vim.bo[state.pbuf].bufhidden = "hide"
    require("reins.keymaps").prompt(state.pbuf)
  end
end

local function style_window(win, is_prompt)
  local wo = vim.wo[win]
  wo.number, wo.relativenumber, wo.signcolumn = false, false, "no"
  wo.wrap, wo.linebreak, wo.foldenable, wo.spell = true, true, false, false
  wo.winfixwidth = true
  wo.conceallevel = 2
  wo.list = false
  if is_prompt then
    wo.winfixheight = true
    local k = config.options.keymaps
    local hints = {}
    for _, pair in ipairs({ { k.send, "send" }, { k.steer, "steer" }, { k.cancel, "cancel" }, { k.new, "new" } }) do
      if pair[1] then
        table.insert(hints, pair[1] .. " " .. pair[2])
      end
    end
    wo.winbar = "%#ReinsWinbarDim# " .. table.concat(hints, " · "):gsub("%%", "%%%%")
  end
end

function M.is_open()
  return valid_win(state.win)
end

--- Opens the panel; `focus_prompt` puts the cursor in the prompt.
function M.open(focus_prompt)
  -- Start the server now, so the first message does not wait for it.
  client.ensure()
  ensure_bufs()
  if not M.is_open() then
    local o = config.options.chat
    if o.layout == "float" then
      local width = math.floor(vim.o.columns * math.max(o.width, 0.6))
      local height = math.floor(vim.o.lines * 0.8) - o.prompt_height - 4
      local col = math.floor((vim.o.columns - width) / 2)
      local row = 1
      state.win = vim.api.nvim_open_win(state.buf, true, {
        relative = "editor", row = row, col = col, width = width, height = height,
        border = "rounded", title = " reins ", title_pos = "center",
      })
      state.pwin = vim.api.nvim_open_win(state.pbuf, false, {
        relative = "editor", row = row + height + 2, col = col, width = width, height = o.prompt_height,
        border = "rounded",
      })
    else
      local width = o.width < 1 and math.floor(vim.o.columns * o.width) or o.width
      vim.cmd("botright vsplit")
      state.win = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(state.win, state.buf)
      vim.api.nvim_win_set_width(state.win, width)
      vim.cmd("belowright split")
      state.pwin = vim.api.nvim_get_current_win()
      vim.api.nvim_win_set_buf(state.pwin, state.pbuf)
      vim.api.nvim_win_set_height(state.pwin, o.prompt_height)
    end
    style_window(state.win, false)
    style_window(state.pwin, true)
    M.render()
    local count = vim.api.nvim_buf_line_count(state.buf)
    vim.api.nvim_win_set_cursor(state.win, { count, 0 })
  end
  if focus_prompt and valid_win(state.pwin) then
    vim.api.nvim_set_current_win(state.pwin)
  end
end

function M.close()
  for _, w in ipairs({ state.pwin, state.win }) do
    if valid_win(w) then
      pcall(vim.api.nvim_win_close, w, true)
    end
  end
  state.win, state.pwin = nil, nil
end

function M.toggle()
  if M.is_open() then
    M.close()
  else
    M.open(true)
  end
end

function M.buffers()
  return state.buf, state.pbuf
end

function M.windows()
  return state.win, state.pwin
end

--- The prompt's text, cleared.
local function take_prompt()
  if not valid_buf(state.pbuf) then
    return ""
  end
  local text = vim.trim(table.concat(vim.api.nvim_buf_get_lines(state.pbuf, 0, -1, false), "\n"))
  if text ~= "" then
    vim.api.nvim_buf_set_lines(state.pbuf, 0, -1, false, {})
  end
  return text
end

--- Sends `text` (default: the prompt's) to the current session, starting one when there is none.
--- While a run is in progress the text is queued as a follow-up.
function M.send(text)
  text = text or take_prompt()
  if text == "" then
    return
  end
  local conv = M.current()
  if conv and conv.running then
    client.exec("reins.chat.followUp", { sessionId = M.session_id, text = text })
    vim.notify("reins: queued as a follow-up to the run in progress", vim.log.levels.INFO)
    return
  end
  client.exec("reins.chat.send", { text = text, sessionId = M.session_id }, function(err, result)
    if err then
      vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
      return
    end
    M.running_started(result)
  end)
end

--- Takes the answer of chat.send/ask: shows that session (its events may already be in).
function M.running_started(result)
  if result and result.sessionId then
    if result.sessionId ~= M.session_id then
      M.set_session(result.sessionId)
    end
    -- Not marked running here: the run's events (agent_start … agent_end) may all have come
    -- before this answer.
    M.schedule()
  end
end

function M.steer(text)
  text = text or take_prompt()
  if text == "" or not M.session_id then
    return
  end
  client.exec("reins.chat.steer", { sessionId = M.session_id, text = text })
end

function M.cancel()
  if M.session_id then
    client.exec("reins.chat.cancel", { sessionId = M.session_id })
  end
end

--- Starts a new, empty session.
function M.new_session()
  client.exec("reins.session.new", {}, function(err, result)
    if err then
      vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
      return
    end
    conversation.reset(result.sessionId)
    M.set_session(result.sessionId, nil)
  end)
end

--- Expands or collapses the thinking or tool call under the cursor.
function M.toggle_block()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, c in ipairs(state.cache) do
    if row >= c.start and row < c.start + c.count then
      local block = c.block
      if block.kind == "thinking" or block.kind == "tool" then
        local cursor = vim.api.nvim_win_get_cursor(0)
        block.expanded = not block.expanded
        block.rev = block.rev + 1
        M.render()
        pcall(vim.api.nvim_win_set_cursor, 0, cursor)
        return true
      end
    end
  end
  return false
end

function M.focus_prompt()
  if valid_win(state.pwin) then
    vim.api.nvim_set_current_win(state.pwin)
    vim.cmd("startinsert")
  end
end

client.on_event(function(params)
  local changed = conversation.apply(params.sessionId, params.event)
  if changed and (params.sessionId == M.session_id or M.session_id == nil) then
    if M.session_id == nil and params.event.type == "agent_start" then
      M.set_session(params.sessionId)
    end
    M.schedule()
  end
end)

return M
