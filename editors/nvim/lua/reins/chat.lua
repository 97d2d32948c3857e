-- The chat panel: a markdown buffer showing the current session's conversation (a right split or
-- a float) above a small prompt buffer. Streaming output is redrawn in batches by a timer, only
-- from the first block that changed; the view follows the end unless the user moved away.
local client = require("reins.client")
local config = require("reins.config")
local context = require("reins.context")
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
  last = nil, -- the workspace's most recent session, for the welcome
  looked = false, -- whether `last` was asked for
  follow = {}, -- chat window -> false when it does not follow the end
  marks = {}, -- chat window -> its "new output below" float
  mark_buf = nil,
  completed = nil, -- the prompt's text before the cursor when completion last looked at it
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
  "@file, #buffer, #selection, #diagnostics and #diff attach context; / lists commands.",
  "Select code and run :ReinsAsk to ask about it; :ReinsSessions resumes an earlier session.",
  "%s lists every key; in the chat %s yanks the code block under the cursor, %s answers again.",
}

local function welcome_lines()
  local k = config.options.keymaps
  local lines = vim.deepcopy(welcome)
  lines[3] = lines[3]:format(k.send or ":ReinsSend")
  lines[4] = lines[4]:format(k.cancel or "-", k.steer or "-", k.new or ":ReinsNew")
  lines[8] = lines[8]:format(k.help or "-", k.yank_code or "-", k.regenerate or "/regenerate")
  if state.last then
    table.insert(lines, 2, "")
    table.insert(lines, 3, ("Last session: %s"):format(require("reins.sessions").describe(state.last)))
    table.insert(lines, 4, ("%s resumes it."):format(k.resume or ":ReinsSessions"))
  end
  return lines
end

--- The workspace's most recent session with a message in it, from the server, once per panel
--- buffer: shown in the welcome, or resumed (`chat.resume_last`).
local function look_for_last()
  if state.looked or M.session_id then
    return
  end
  state.looked = true
  client.exec("reins.session.list", {}, function(err, result)
    if err or M.session_id then
      return
    end
    for _, s in ipairs((result or {}).sessions or {}) do
      if (s.entryCount or 0) > 0 and (s.firstMessage or s.name) then
        state.last = s
        break
      end
    end
    if state.last and config.options.chat.resume_last then
      M.resume_last()
    else
      M.render()
    end
  end)
end

--- Resumes the workspace's most recent session (the one the welcome names).
function M.resume_last()
  local function resume(s)
    if not s then
      return vim.notify("reins: no earlier session in this workspace", vim.log.levels.INFO)
    end
    require("reins.sessions").resume(s.id, s.name)
  end
  if state.last then
    return resume(state.last)
  end
  client.exec("reins.session.list", {}, function(err, result)
    if err then
      return vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
    end
    local sessions = vim.tbl_filter(function(s)
      return (s.entryCount or 0) > 0 and s.id ~= M.session_id
    end, (result or {}).sessions or {})
    resume(sessions[1])
  end)
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
    local model = require("reins.model").of(M.session_id, update_winbar)
    vim.wo[state.win].winbar = render.winbar(conv, title, vim.api.nvim_win_get_width(state.win), model)
  end
end

-- Following the end, as terminals and chat UIs do: a chat window follows new output until the
-- user moves its cursor off the last line; then a mark says there is more below, until the
-- cursor is back on the last line (G) or the user sends something.

--- Whether `win` follows the end (new windows do).
local function following(win)
  return state.follow[win] ~= false
end

local function close_mark(win)
  local mark = state.marks[win]
  if mark and vim.api.nvim_win_is_valid(mark) then
    pcall(vim.api.nvim_win_close, mark, true)
  end
  state.marks[win] = nil
end

--- The "new output below" mark at the bottom right of chat window `win`.
local function show_mark(win)
  local text = " ↓ new output below · G "
  local width = vim.fn.strdisplaywidth(text)
  local config = {
    relative = "win",
    win = win,
    anchor = "SE",
    row = vim.api.nvim_win_get_height(win),
    col = vim.api.nvim_win_get_width(win),
    width = width,
    height = 1,
    style = "minimal",
    focusable = false,
    noautocmd = true,
    zindex = 60,
  }
  local mark = state.marks[win]
  if mark and vim.api.nvim_win_is_valid(mark) then
    config.noautocmd = nil
    vim.api.nvim_win_set_config(mark, config)
    return
  end
  if not valid_buf(state.mark_buf) then
    state.mark_buf = vim.api.nvim_create_buf(false, true)
    vim.bo[state.mark_buf].bufhidden = "hide"
  end
  vim.api.nvim_buf_set_lines(state.mark_buf, 0, -1, false, { text })
  mark = vim.api.nvim_open_win(state.mark_buf, false, config)
  vim.wo[mark].winhighlight = "Normal:ReinsMore"
  state.marks[win] = mark
end

--- Moves `win`'s cursor to the last line, with as much of the text above in view as fits
--- (wrapped lines counted as the rows they take).
local function to_end(win)
  local count = vim.api.nvim_buf_line_count(state.buf)
  local height = vim.fn.winheight(win) -- without the winbar
  local top = count
  while top > 1 and vim.api.nvim_win_text_height(win, { start_row = top - 2, end_row = count - 1 }).all <= height do
    top = top - 1
  end
  vim.api.nvim_win_call(win, function()
    vim.fn.winrestview({ topline = top, lnum = count, col = 0 })
  end)
end

--- The user moved the cursor in a chat window: it follows the end again when on the last line.
local function cursor_moved()
  local win = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(win) ~= state.buf then
    return
  end
  local at_end = vim.api.nvim_win_get_cursor(win)[1] >= vim.api.nvim_buf_line_count(state.buf)
  state.follow[win] = at_end
  if at_end then
    close_mark(win)
  end
end

--- Whether chat window `win` shows the "new output below" mark.
function M.marked(win)
  return state.marks[win] ~= nil
end

--- Every chat window follows the end again (the user sent something).
function M.follow()
  state.follow = {}
  if valid_buf(state.buf) then
    for _, win in ipairs(vim.fn.win_findbuf(state.buf)) do
      close_mark(win)
      to_end(win)
    end
  end
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
  if count < old_count then
    -- A shorter conversation (navigated, forked): bring the highlighter's tree up to the text at
    -- once, so it never draws from rows that are gone.
    pcall(function()
      vim.treesitter.get_parser(buf):parse(true)
    end)
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if following(win) then
      to_end(win)
    elseif count > old_count or state.marks[win] then
      show_mark(win)
    end
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
    vim.api.nvim_create_autocmd("CursorMoved", { buffer = state.buf, callback = cursor_moved })
    vim.api.nvim_create_autocmd({ "WinResized", "VimResized" }, {
      group = vim.api.nvim_create_augroup("reins.chat.resize", { clear = true }),
      callback = function()
        update_winbar()
        for win in pairs(state.marks) do
          if valid_win(win) then
            show_mark(win)
          end
        end
      end,
    })
    vim.api.nvim_create_autocmd("WinClosed", {
      buffer = state.buf,
      callback = function(args)
        local win = tonumber(args.match)
        close_mark(win)
        state.follow[win] = nil
      end,
    })
  end
  if not valid_buf(state.pbuf) then
    state.pbuf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(state.pbuf, "reins://prompt")
    vim.bo[state.pbuf].filetype = "markdown"
    vim.bo[state.pbuf].bufhidden = "hide"
    require("reins.keymaps").prompt(state.pbuf)
    -- <C-x><C-o> completes `@` files and `#` context words without a completion plugin; the
    -- menu also opens by itself as they are typed, the first item shown but not inserted.
    vim.bo[state.pbuf].omnifunc = "v:lua.require'reins.context'.omnifunc"
    pcall(function()
      vim.bo[state.pbuf].completeopt = "menuone,noinsert,popup"
    end)
    vim.api.nvim_create_autocmd("TextChangedI", {
      buffer = state.pbuf,
      callback = function()
        M.complete()
      end,
    })
  end
end

local function style_window(win, is_prompt)
  local wo = vim.wo[win]
  wo.number, wo.relativenumber, wo.signcolumn = false, false, "no"
  wo.wrap, wo.linebreak, wo.foldenable, wo.spell = true, true, false, false
  wo.breakindent = true -- a wrapped hint or tool line keeps its indent
  wo.winfixwidth = true
  wo.conceallevel = 2
  wo.list = false
  if is_prompt then
    wo.winfixheight = true
    wo.winbar = M.prompt_winbar(config.options.keymaps)
  end
end

--- The prompt's key hints as a winbar. A narrow window cuts them at the end (`%<` there; the
--- default cuts the start), so the key that sends stays in view.
function M.prompt_winbar(k)
  local hints = {}
  for _, pair in ipairs({ { k.send, "send" }, { k.steer, "steer" }, { k.cancel, "cancel" }, { k.new, "new" } }) do
    if pair[1] then
      table.insert(hints, pair[1] .. " " .. pair[2])
    end
  end
  return "%#ReinsWinbarDim# " .. table.concat(hints, " · "):gsub("%%", "%%%%") .. "%<"
end

function M.is_open()
  return valid_win(state.win)
end

--- Opens the panel; `focus_prompt` puts the cursor in the prompt (in insert mode), else it stays
--- where it was.
function M.open(focus_prompt)
  -- Start the server now, so the first message does not wait for it.
  client.ensure()
  ensure_bufs()
  local from = vim.api.nvim_get_current_win()
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
    state.follow[state.win] = nil
    M.render()
    to_end(state.win)
    look_for_last()
  end
  if focus_prompt and valid_win(state.pwin) then
    vim.api.nvim_set_current_win(state.pwin)
    vim.cmd("startinsert!")
  elseif valid_win(from) then
    vim.api.nvim_set_current_win(from)
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

--- The prompt's text.
local function prompt_text()
  if not valid_buf(state.pbuf) then
    return ""
  end
  return vim.trim(table.concat(vim.api.nvim_buf_get_lines(state.pbuf, 0, -1, false), "\n"))
end

local function clear_prompt()
  if valid_buf(state.pbuf) then
    vim.api.nvim_buf_set_lines(state.pbuf, 0, -1, false, {})
  end
end

--- The prompt's text, cleared.
local function take_prompt()
  local text = prompt_text()
  if text ~= "" then
    clear_prompt()
  end
  return text
end

--- Sends `text` (default: the prompt's) to the current session, starting one when there is none,
--- with what its context words (`@file`, `#buffer`, `#selection`, `#diagnostics`, `#diff`)
--- attach. While a run is in progress the text is queued as a follow-up. The prompt is cleared
--- only once the message can go: a context word that attaches nothing leaves it as it was.
function M.send(text)
  local from_prompt = text == nil
  text = text or prompt_text()
  if text == "" then
    return
  end
  if require("reins.slash").run(text) then
    if from_prompt then
      clear_prompt()
    end
    return
  end
  local resolved, why = context.resolve(text)
  if not resolved then
    return vim.notify("reins: " .. why, vim.log.levels.WARN)
  end
  local conv = M.current()
  if conv and conv.running and #resolved.context > 0 then
    return vim.notify("reins: files and selections can be attached once the run has ended (or cancel it)", vim.log.levels.WARN)
  end
  if from_prompt then
    if vim.fn.pumvisible() == 1 and vim.fn.mode():sub(1, 1) == "i" then
      vim.fn.complete(vim.fn.col("."), {}) -- the menu goes with the text it was for
    end
    clear_prompt()
  end
  M.follow()
  if conv and conv.running then
    client.exec("reins.chat.followUp", { sessionId = M.session_id, text = resolved.text })
    vim.notify("reins: queued as a follow-up to the run in progress", vim.log.levels.INFO)
    return
  end
  local arg = { text = resolved.text, sessionId = M.session_id }
  if #resolved.context > 0 then
    arg.context = resolved.context
  end
  client.exec("reins.chat.send", arg, function(err, result)
    if err then
      -- Refused (an attachment it cannot read, a busy session): the text goes back to be sent
      -- again, unless something was typed meanwhile.
      if from_prompt and valid_buf(state.pbuf) and prompt_text() == "" then
        vim.api.nvim_buf_set_lines(state.pbuf, 0, -1, false, vim.split(text, "\n", { plain = true }))
      end
      vim.notify("reins: " .. client.error_text(err), vim.log.levels.ERROR)
      return
    end
    if result and result.output then
      -- A built-in slash command: what it did.
      vim.notify("reins: " .. result.output, vim.log.levels.INFO)
    end
    M.running_started(result)
  end)
end

--- The completion items of `commands` (as `reins.command.list` gives them) that start with
--- `typed` (`/`, `/re`, `/skill:p`).
function M.command_items(commands, typed)
  local items = {}
  for _, command in ipairs(commands or {}) do
    local word = "/" .. command.name
    if vim.startswith(word, typed) then
      table.insert(items, {
        word = word,
        abbr = command.argumentHint and (word .. " " .. command.argumentHint) or word,
        menu = command.kind,
        info = command.description,
      })
    end
  end
  return items
end

--- Completion as the user types in the prompt: `@` files and `#` context words anywhere, slash
--- commands at its start.
function M.complete()
  if vim.api.nvim_get_current_buf() ~= state.pbuf then
    return
  end
  local line, col = vim.api.nvim_get_current_line(), vim.api.nvim_win_get_cursor(0)[2]
  -- The text as the menu was last opened for: a menu closed with <C-e> stays closed.
  local typed = line:sub(1, col)
  if typed == state.completed then
    return
  end
  state.completed = typed
  local start, word = context.word_before(line, col)
  if start then
    -- Asked again at each key even with the menu open: files match fuzzily, which the menu's
    -- own narrowing (by prefix) would not do.
    local items = context.items(word, context.root())
    if #items > 0 and vim.fn.mode():sub(1, 1) == "i" then
      vim.fn.complete(start + 1, items)
    end
    return
  end
  M.complete_commands()
end

--- Typing a slash command at the start of the prompt lists the matching ones (built-ins,
--- prompt templates, skills), as the server knows them now.
function M.complete_commands()
  if vim.api.nvim_get_current_buf() ~= state.pbuf or vim.fn.pumvisible() == 1 then
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local line = vim.api.nvim_get_current_line()
  if row == 1 and line:match("^/%w+ %S*$") then
    -- A built-in's argument: a model, a thinking level.
    return require("reins.slash").argument_items(line, function(items, start)
      if #items > 0 and vim.api.nvim_get_current_buf() == state.pbuf and vim.fn.mode():sub(1, 1) == "i" then
        vim.fn.complete(start + 1, items)
      end
    end)
  end
  if row ~= 1 or not line:match("^/[%w%-_:]*$") then
    return
  end
  client.exec("reins.command.list", {}, function(err, result)
    local typed = vim.api.nvim_get_current_line()
    if err or not result or vim.api.nvim_get_current_buf() ~= state.pbuf or not typed:match("^/") then
      return
    end
    local commands = vim.list_extend(vim.deepcopy(result.commands or {}), require("reins.slash").own)
    local items = M.command_items(commands, typed)
    if #items > 0 and vim.fn.mode():sub(1, 1) == "i" then
      vim.fn.complete(1, items)
    end
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

--- Answers the last of the user's messages again: the leaf moves back before it (the old answer
--- stays in the session's tree, `:ReinsTree` shows both) and the message goes again as it was
--- sent, its attachments included.
function M.regenerate()
  local sid, conv = M.session_id, M.current()
  if not sid then
    return vim.notify("reins: nothing to answer again yet", vim.log.levels.WARN)
  end
  if conv and conv.running then
    return vim.notify("reins: a run is in progress; cancel it first", vim.log.levels.WARN)
  end
  local function failed(err)
    vim.notify("reins: regenerate: " .. client.error_text(err), vim.log.levels.ERROR)
  end
  client.exec("reins.session.tree", { sessionId = sid }, function(err, tree)
    if err then
      return failed(err)
    end
    local nodes = {}
    for _, node in ipairs(tree.nodes or {}) do
      nodes[node.id] = node
    end
    local node = tree.leaf and nodes[tree.leaf]
    while node and node.role ~= "user" do
      node = node.parentId and nodes[node.parentId]
    end
    if not node then
      return vim.notify("reins: no message of yours in this session to answer again", vim.log.levels.WARN)
    end
    client.exec("reins.session.navigate", { sessionId = sid, entryId = node.id }, function(nav_err, moved)
      if nav_err or not moved.prompt then
        return failed(nav_err or "the server gave no message back")
      end
      client.exec("reins.session.messages", { sessionId = sid }, function(msg_err, result)
        if msg_err then
          return failed(msg_err)
        end
        conversation.load(sid, result.messages, result.todos)
        state.cache, state.shown = {}, nil
        M.follow()
        M.render()
        -- As stored: its context words were resolved when it was first sent.
        client.exec("reins.chat.send", { text = moved.prompt, sessionId = sid }, function(send_err, started)
          if send_err then
            return failed(send_err)
          end
          M.running_started(started)
        end)
      end)
    end)
  end)
end

--- The fenced code block around chat row `row` (1-based) of `lines`: its lines without the
--- fences and the fence's indent, or nil.
function M.code_block_at(lines, row)
  local open, fence, indent
  for i, line in ipairs(lines) do
    if not open and i > row then
      return nil
    end
    local lead, marks, rest = line:match("^(%s*)([`~][`~][`~]+)(.*)$")
    if marks and marks:match("^`+$") == nil and marks:match("^~+$") == nil then
      marks = nil
    end
    if marks and not open then
      open, fence, indent = i, marks, #lead
    elseif marks and open and marks:sub(1, 1) == fence:sub(1, 1) and #marks >= #fence and vim.trim(rest) == "" then
      if row >= open and row <= i then
        local out = {}
        for j = open + 1, i - 1 do
          local l = lines[j]
          table.insert(out, l:sub(1, indent):match("^%s*$") and l:sub(indent + 1) or l)
        end
        return out
      end
      open = nil
    end
  end
  return nil
end

--- Yanks the code block under the cursor in the chat (without its fences) into the register the
--- key was given, the unnamed one by default.
function M.yank_code()
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local block = M.code_block_at(lines, vim.api.nvim_win_get_cursor(0)[1])
  if not block then
    return vim.notify("reins: no code block under the cursor", vim.log.levels.WARN)
  end
  vim.fn.setreg(vim.v.register, block, "l")
  vim.api.nvim_echo({ { ("reins: yanked %d line%s of code"):format(#block, #block == 1 and "" or "s") } }, false, {})
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

--- Puts `text` in the prompt to edit and send again (a message given back by a fork or a move
--- to it), replacing what was there, and opens the panel; the cursor stays where it is.
function M.set_prompt(text)
  M.open(false)
  if valid_buf(state.pbuf) then
    vim.api.nvim_buf_set_lines(state.pbuf, 0, -1, false, vim.split(text, "\n", { plain = true }))
  end
end

client.on_event(function(params)
  -- A subagent's tools also show nested under its parent's `task` call.
  local parent = params.parentSessionId
  if parent and conversation.apply_child(parent, params.parentToolCallId, params.event) and parent == M.session_id then
    M.schedule()
  end
  local changed = conversation.apply(params.sessionId, params.event)
  if changed and (params.sessionId == M.session_id or M.session_id == nil) then
    if M.session_id == nil and params.event.type == "agent_start" then
      M.set_session(params.sessionId)
    end
    M.schedule()
  end
end)

return M
