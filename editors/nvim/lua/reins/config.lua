-- Options of the plugin: the defaults, and the merged table every module reads.
local M = {}

M.defaults = {
  -- How to start the server, e.g. { "/path/to/reins", "lsp" }. nil: the binary built in the
  -- checkout the plugin comes from (target/release or target/debug), else `reins` on PATH.
  cmd = nil,
  -- Connect to a running `reins lsp --listen` instead of starting one (remote development
  -- through an SSH tunnel, see :help reins-remote): { host = "127.0.0.1", port = 9257 } with that
  -- server's token (`token`, else the first line of `token_file`, else $REINS_LISTEN_TOKEN), or
  -- { path = "/run/user/1000/reins/lsp.sock" } for its Unix socket (no token). nil: start `cmd`.
  connect = nil,
  -- Sent as initializationOptions (see the server's settings.md): baseUrl, apiKey, model, approval.
  init_options = {},
  -- Markers that name the workspace root; the current directory when none is found.
  root_markers = { ".git" },
  -- Filetypes the server attaches to; nil means every file buffer.
  filetypes = nil,
  chat = {
    layout = "split", -- "split" (a right split) or "float"
    width = 0.38, -- of the editor's columns (split) or of the screen (float)
    prompt_height = 5,
    -- Milliseconds between two redraws of a streaming answer.
    redraw_ms = 30,
    -- Opening the panel with no session shown resumes the workspace's most recent session
    -- (false: a welcome, with the `resume` key to do it).
    resume_last = false,
  },
  ask = {
    -- The tools an ask's session offers, e.g. { "read-only" } (read, ls, grep, find and
    -- diagnostics: the agent answers and proposes no edits). Set, each ask starts a session of its
    -- own that keeps them; nil: asks go to the chat's session, with its tools.
    tools = nil,
  },
  review = {
    layout = "inline", -- "inline" (in the buffer) or "diff" (a side-by-side diff tab)
  },
  -- Every key the plugin maps; set one to false to leave it unmapped.
  keymaps = {
    -- In the prompt window (normal and insert mode).
    send = "<C-s>",
    cancel = "<C-c>",
    steer = "<C-g>",
    new = "<C-n>",
    resume = "<C-o>", -- resume the workspace's most recent session
    -- In normal mode of the prompt window only.
    send_normal = "<CR>",
    -- In the chat window.
    toggle = "<CR>", -- expand/collapse the thinking or tool call under the cursor
    close = "q",
    focus_prompt = "i",
    regenerate = "gr", -- answer the last message again (the old answer stays in the tree)
    yank_code = "yc", -- yank the code block under the cursor (into the register given, "ayc)
    pick_model = "gm", -- pick the model of the session
    show_request = "gR", -- show the request last sent to the model (JSON, keys redacted)
    help = "?", -- list every key of the chat (in the prompt too, in normal mode)
    -- While any proposal waits (normal mode, in every window; removed after): the proposal under
    -- the cursor, else the latest one.
    accept_all = "<leader>rA",
    reject_all = "<leader>rR",
    accept_session = "<leader>rS", -- accept, and let this tool run unasked for the session
    -- While an edit is shown for review (in its buffer only, removed after).
    accept_hunk = "<leader>ra",
    reject_hunk = "<leader>rr",
    comment_hunk = "<leader>rc", -- a comment on the hunk for the agent, sent with the decision
    next_hunk = "]h",
    prev_hunk = "[h",
    -- In the :ReinsTree buffer.
    tree_navigate = "<CR>",
    tree_restore = "R", -- continue from the entry, and propose the files as the agent left them there
    tree_fork = "f",
    tree_label = "l",
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(user)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user or {})
  return M.options
end

return M
