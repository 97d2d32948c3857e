-- Context in the prompt: `@path` attaches a workspace file, `#buffer` the file buffer the user
-- came from (its unsaved text too), `#selection` that buffer's last visual selection,
-- `#diagnostics` its diagnostics (with its text), `#diff` the working tree's `git diff`. Files,
-- buffers and selections go as `reins.chat.send`'s `context` (the server quotes them); a diff is
-- not a document, so it is quoted after the text here, fenced as the server fences.
local client = require("reins.client")

local M = {}

--- The `#` words, as completion shows them.
M.variables = {
  { word = "#buffer", info = "the file buffer you came from, as it is now (unsaved text too)" },
  { word = "#selection", info = "the last visual selection in that buffer" },
  { word = "#diagnostics", info = "that buffer's text with its diagnostics" },
  { word = "#diff", info = "the working tree's changes (git diff against HEAD)" },
}

--- Files offered after `@` at most; the list is matched fuzzily first.
local MAX_ITEMS = 50
--- Files listed without git at most (a walk of the workspace).
local MAX_WALK = 5000

--- The last file buffer the user was in: what `#buffer`, `#selection` and `#diagnostics` mean.
M.source = nil

local files_cache = { root = nil, at = 0, files = {} }

--- The workspace root of the source buffer (of the current directory without one).
function M.root()
  local buf = M.source
  return client.root(buf and vim.api.nvim_buf_is_valid(buf) and buf or nil)
end

--- Records `buf` as the source when it is a file buffer (not the chat's own).
function M.track(buf)
  if vim.api.nvim_buf_is_valid(buf) and vim.bo[buf].buftype == "" and vim.api.nvim_buf_get_name(buf) ~= "" then
    M.source = buf
  end
end

vim.api.nvim_create_autocmd("BufEnter", {
  group = vim.api.nvim_create_augroup("reins.context", { clear = true }),
  callback = function(args)
    M.track(args.buf)
  end,
})

--- The workspace's files, relative to `root`: git's list (tracked and untracked, ignored files
--- left out), else a walk that skips dot folders. Kept for a few seconds: completion asks at each
--- key.
function M.files(root)
  local now = vim.uv.now()
  if files_cache.root == root and now - files_cache.at < 5000 then
    return files_cache.files
  end
  local files = {}
  local out = vim.system({ "git", "ls-files", "--cached", "--others", "--exclude-standard" }, { cwd = root, text = true }):wait(3000)
  if out.code == 0 then
    for line in (out.stdout or ""):gmatch("[^\n]+") do
      table.insert(files, line)
    end
  else
    for name, kind in vim.fs.dir(root, {
      depth = 8,
      skip = function(dir)
        return not vim.startswith(vim.fs.basename(dir), ".")
      end,
    }) do
      if kind == "file" then
        table.insert(files, name)
        if #files >= MAX_WALK then
          break
        end
      end
    end
  end
  files_cache.root, files_cache.at, files_cache.files = root, now, files
  return files
end

--- Completion items for `typed`, the word before the cursor: `@…` files (fuzzy), `#…` the
--- variables. Empty for anything else.
function M.items(typed, root)
  local items = {}
  if vim.startswith(typed, "#") then
    for _, v in ipairs(M.variables) do
      if vim.startswith(v.word, typed) then
        table.insert(items, { word = v.word, menu = "context", info = v.info })
      end
    end
  elseif vim.startswith(typed, "@") then
    local files = vim.tbl_filter(function(f)
      return not f:find("%s")
    end, M.files(root))
    local query = typed:sub(2)
    local matched = query == "" and vim.list_slice(files, 1, MAX_ITEMS) or vim.fn.matchfuzzy(files, query, { limit = MAX_ITEMS })
    for _, f in ipairs(matched) do
      table.insert(items, { word = "@" .. f, menu = "file" })
    end
  end
  return items
end

--- The `@` or `#` word that ends at byte `col` (0-based, the cursor) of `line`: its 0-based start
--- and text, or nil.
function M.word_before(line, col)
  local before = line:sub(1, col)
  local start, word = before:match("()([@#][^%s@#]*)$")
  if not start then
    return nil
  end
  if start > 1 and not before:sub(start - 1, start - 1):match("%s") then
    return nil -- `a@b`, `x#y`: not a context word
  end
  return start - 1, word
end

--- The prompt buffer's 'omnifunc' (<C-x><C-o>): files after `@`, context words after `#`.
function M.omnifunc(findstart, base)
  if findstart == 1 then
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local start = M.word_before(vim.api.nvim_get_current_line(), col)
    return start or -3
  end
  return M.items(base, M.root())
end

--- A fence longer than any run of backticks in `text` (as the server's `fence_for`).
local function fence_for(text)
  local longest = 0
  for run in text:gmatch("`+") do
    longest = math.max(longest, #run)
  end
  return string.rep("`", math.max(longest, 2) + 1)
end

--- The working tree's changes against HEAD (against the index in a repository with no commit).
local function git_diff(root)
  local out = vim.system({ "git", "diff", "HEAD" }, { cwd = root, text = true }):wait(5000)
  if out.code ~= 0 then
    out = vim.system({ "git", "diff" }, { cwd = root, text = true }):wait(5000)
  end
  if out.code ~= 0 then
    return nil, "#diff: git diff failed in " .. root .. ": " .. vim.trim(out.stderr or "")
  end
  return out.stdout or ""
end

--- The source buffer, attached to the server so it quotes the buffer's text as it is now.
local function source_buffer(word)
  local buf = M.source
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return nil, word .. ": no file buffer to take it from; open a file, then come back to the prompt"
  end
  client.attach(buf)
  return buf
end

--- The last visual selection of `buf` as an LSP range, or nil when it has none.
local function selection_range(buf, encoding)
  local vs, ve = vim.api.nvim_buf_get_mark(buf, "<"), vim.api.nvim_buf_get_mark(buf, ">")
  if vs[1] == 0 or ve[1] == 0 then
    return nil
  end
  local count = vim.api.nvim_buf_line_count(buf)
  local start_row, start_col, end_row, end_col = vs[1] - 1, 0, ve[1], 0
  if vim.fn.visualmode() == "v" then
    start_col = vs[2]
    end_row = ve[1] - 1
    local last = vim.api.nvim_buf_get_lines(buf, end_row, end_row + 1, false)[1] or ""
    end_col = math.min(#last, ve[2] + #(vim.fn.strcharpart(last:sub(ve[2] + 1), 0, 1)))
  end
  if end_row >= count then
    end_row = count - 1
    end_col = #(vim.api.nvim_buf_get_lines(buf, end_row, end_row + 1, false)[1] or "")
  end
  return {
    start = client.position(buf, start_row, start_col, encoding),
    ["end"] = client.position(buf, end_row, end_col, encoding),
  }
end

--- What the context words in `text` attach: `{context = {…}, text = …}` (the text with a diff
--- quoted after it), or nil and what is missing. The words stay in the text, so the model reads
--- what the user meant by them.
function M.resolve(text)
  local context, by_uri, extra = {}, {}, {}
  local function whole(uri)
    if not by_uri[uri] then
      by_uri[uri] = { uri = uri }
      table.insert(context, by_uri[uri])
    end
    return by_uri[uri]
  end
  local root = M.root()
  local seen = {}
  for pos, word in text:gmatch("()([@#][^%s@#]+)") do
    local at_start = pos == 1 or text:sub(pos - 1, pos - 1):match("%s")
    -- A word ends before trailing punctuation: "see @a.lua." names a.lua.
    word = word:gsub("[%.,;:!%?%)]+$", "")
    if at_start and not seen[word] then
      seen[word] = true
      if vim.startswith(word, "@") then
        local path = vim.fs.normalize(root .. "/" .. word:sub(2))
        local stat = vim.uv.fs_stat(path)
        -- `@decorator` or a handle is not a file, nor is a path out of the workspace (the server
        -- would refuse it): left as text.
        local inside = vim.startswith(path, vim.fs.normalize(root) .. "/") and not path:find("/../", 1, true)
        if inside and stat and stat.type == "file" then
          whole(vim.uri_from_fname(path))
        end
      elseif word == "#buffer" or word == "#diagnostics" then
        local buf, why = source_buffer(word)
        if not buf then
          return nil, why
        end
        local entry = whole(vim.uri_from_bufnr(buf))
        if word == "#diagnostics" then
          -- As the server's `reins/diagnostics` gets them: in its position encoding, and without
          -- reins's own (its pending edits'), which are not the buffer's problems.
          local c = client.get()
          local items = require("reins.diagnostics").of(buf, c and c.id, c and c.offset_encoding or "utf-16")
          if #items == 0 then
            return nil, ("#diagnostics: %s has none"):format(vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":~:."))
          end
          entry.diagnostics = items
        end
      elseif word == "#selection" then
        local buf, why = source_buffer(word)
        if not buf then
          return nil, why
        end
        local c = client.get()
        local range = selection_range(buf, c and c.offset_encoding or "utf-16")
        if not range then
          return nil, "#selection: nothing was selected in " .. vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ":~:.")
        end
        table.insert(context, { uri = vim.uri_from_bufnr(buf), range = range })
      elseif word == "#diff" then
        local diff, why = git_diff(root)
        if not diff then
          return nil, why
        end
        if diff == "" then
          table.insert(extra, "Working-tree changes (git diff): none")
        else
          local fence = fence_for(diff)
          table.insert(extra, ("Working-tree changes (git diff):\n%sdiff\n%s%s"):format(fence, diff:gsub("\n$", "") .. "\n", fence))
        end
      end
    end
  end
  if #extra > 0 then
    text = text .. "\n\n" .. table.concat(extra, "\n\n")
  end
  return { context = context, text = text }
end

return M
