-- End to end: slash commands in the chat's prompt — completion of the server's and the plugin's
-- commands and of their arguments, pickers for `/model` and `/thinking`, `/tree` and `/new` in
-- the panel — and the model in the chat's title bar and in :checkhealth.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers.lua")

local url = H.start_llm({
  { text = "Hello there." },
})
H.workspace({ ["a.txt"] = "alpha\n" })
H.setup(url)

local chat = require("reins.chat")
local client = require("reins.client")

--- What the server's own built-in `/NAME` (no argument) answers for the chat's session.
local function server_says(name)
  local output
  client.exec("reins.chat.send", { text = "/" .. name, sessionId = chat.session_id }, function(err, result)
    output = err and client.error_text(err) or result.output
  end)
  T.wait_for(function()
    return output ~= nil
  end, "the server's /" .. name)
  return output
end

local function winbar()
  chat.render()
  return vim.wo[select(1, chat.windows())].winbar
end

T.test("the title bar shows the model; /model picks another, which the server then uses", function()
  vim.cmd("ReinsChat")
  vim.api.nvim_win_set_width(select(1, chat.windows()), 70)
  T.wait_for(function()
    return winbar():find("scripted", 1, true)
  end, "the default model in the title bar before any message")
  chat.send("hello")
  T.wait_for(function()
    return H.chat_text():find("Hello there.", 1, true)
  end, "the answer")
  H.wait_idle()
  T.eq(require("reins.conversation").get(chat.session_id).model, "openai-compatible/scripted")
  local listed
  H.with_ui({
    function(items, opts)
      listed = vim.tbl_map(opts.format_item, items)
      for _, m in ipairs(items) do
        if m.id == "ollama/qwen2.5-coder:7b" then
          return m
        end
      end
    end,
  }, function()
    local _, pbuf = chat.buffers()
    vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, { "/model" })
    chat.send()
    T.wait_for(function()
      return winbar():find("qwen2.5-coder:7b", 1, true)
    end, "the picked model in the title bar")
    T.eq(H.buf_text(pbuf), "", "the command left the prompt")
  end)
  T.ok(vim.tbl_contains(listed, "● openai-compatible/scripted"), "the picker marks the model in use: " .. vim.inspect(listed))
  T.eq(server_says("model"), "Model: ollama/qwen2.5-coder:7b")
  -- Back, with an argument: the server's built-in.
  chat.send("/model scripted")
  T.wait_for(function()
    return server_says("model") == "Model: openai-compatible/scripted"
  end, "the model set back")
end)

T.test("/thinking without a level picks one; the server records it", function()
  local notices = H.capture_notices()
  H.with_ui({
    function(items)
      T.eq(items, { "off", "minimal", "low", "medium", "high", "xhigh" })
      return "high"
    end,
  }, function()
    chat.send("/thinking")
    -- The notice of the last test's `/model` may come in first: the answer is the one about
    -- thinking.
    T.wait_for(function()
      return vim.iter(notices):any(function(notice)
        return vim.startswith(notice, "reins: thinking:")
      end)
    end, "the answer")
  end)
  local answer = vim.iter(notices):find(function(notice)
    return vim.startswith(notice, "reins: thinking:")
  end)
  T.ok(vim.startswith(answer, "reins: thinking: high"), answer)
  T.eq(server_says("thinking"), "Thinking: high")
end)

T.test("/ completes the server's commands and the plugin's, and a built-in's argument", function()
  local _, pbuf = chat.buffers()
  vim.api.nvim_set_current_win(select(2, chat.windows()))
  vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, {})
  local function menu(typed)
    _G.reins_menu = nil
    vim.api.nvim_buf_set_lines(pbuf, 0, -1, false, {})
    -- TextChangedI waits for typing to stop, and the list comes from the server: both are
    -- waited for where a pause would be.
    vim.api.nvim_feedkeys(
      vim.keycode(
        "i"
          .. typed
          .. "<Cmd>doautocmd TextChangedI<CR>"
          .. "<Cmd>lua vim.wait(5000, function() return vim.fn.pumvisible() == 1 end)<CR>"
          .. "<Cmd>lua _G.reins_menu = vim.fn.complete_info({ 'items' })<CR><Esc>"
      ),
      "tx",
      false
    )
    return vim.tbl_map(function(item)
      return item.word
    end, _G.reins_menu.items)
  end
  T.eq(menu("/re"), { "/regenerate", "/request" })
  T.eq(menu("/th"), { "/thinking" })
  T.eq(menu("/thinking m"), { "minimal", "medium" })
  T.ok(vim.tbl_contains(menu("/model oll"), "ollama/qwen2.5-coder:7b"), "models complete after /model")
  vim.cmd("wincmd t")
end)

T.test("/tree opens the tree, /new starts an empty session in the panel", function()
  chat.send("/tree")
  T.wait_for(function()
    return vim.fn.bufname() == "reins://tree" and H.buf_text(0):find("hello", 1, true)
  end, "the tree buffer with the message")
  vim.cmd("close")
  local before = chat.session_id
  chat.send("/new")
  T.wait_for(function()
    return chat.session_id ~= before
  end, "a new session")
  T.contains(H.chat_text(), "Write in the prompt below")
end)

T.test(":checkhealth reins names the model of new sessions", function()
  vim.cmd("checkhealth reins")
  T.contains(H.buf_text(0), "OK model of new sessions: openai-compatible/scripted")
  vim.cmd("bwipeout!")
end)
