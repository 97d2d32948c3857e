-- Unit tests of what the chat renders: the winbar fitted to the window's width by priority.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
local render = require("reins.render")

--- The winbar as it reads (highlight groups and the alignment item removed).
local function bar(conv, title, width)
  return (render.winbar(conv, title, width):gsub("%%#%w+#", ""):gsub("%%=", "|"))
end

local conv = { waiting = 1, running = true, tokens = 12345, cost = 0.0123 }
local title = "Can these be clearer, and what about naming?"

T.test("a wide winbar shows everything", function()
  T.eq(bar(conv, title, 120), " reins · Can these be clearer, and w… |⏸ review · 12.3k tokens · $0.0123 ")
end)

T.test("a narrow winbar drops the cost, then the tokens, then shortens the title; the status stays", function()
  T.eq(bar(conv, title, 60), " reins · Can these be clearer, and… |⏸ review · 12.3k tokens ")
  T.eq(bar(conv, title, 45), " reins · Can these be clearer, and… |⏸ review ")
  T.eq(bar(conv, title, 30), " reins · Can these … |⏸ review ")
  T.eq(bar(conv, title, 22), " reins |⏸ review ")
  T.eq(bar(nil, title, 30), " reins · Can these be clear… | ")
end)

T.test("the model shows without its provider, after the status, and goes before the title would", function()
  local model = "ollama/qwen2.5-coder:7b"
  local function with_model(width)
    return (render.winbar(conv, title, width, model):gsub("%%#%w+#", ""):gsub("%%=", "|"))
  end
  T.eq(with_model(120), " reins · Can these be clearer, and w… |⏸ review · qwen2.5-coder:7b · 12.3k tokens · $0.0123 ")
  T.eq(with_model(70), " reins · Can these be clearer, and w… |⏸ review · qwen2.5-coder:7b ")
  T.eq(with_model(55), " reins · Can these be cle… |⏸ review · qwen2.5-coder:7b ")
  T.eq(with_model(45), " reins · Can these be clearer, and… |⏸ review ")
end)

T.test("a % in the model shows as itself and runs no statusline expression", function()
  local shown = vim.api.nvim_eval_statusline(render.winbar(conv, "t", 120, "lab/m%{toupper('x')}"), {}).str
  T.eq(shown:match("· (m%S+)"), "m%{toupper('x')}")
end)

T.test("a reason of several lines shows as lines of their own, on a tool call and on a proposal", function()
  local reason = "the user changed the same lines meanwhile: line 3\nb.py was not moved"
  local proposal = { kind = "proposal", tool = "edit", path = "a.py", hunks = 1, status = "stale", reason = reason }
  local tool = { kind = "tool", id = "c1", name = "edit", status = "error", args_text = "{}", proposal = proposal }
  for _, block in ipairs({ tool, proposal }) do
    local lines = render.block(block)
    T.eq({ lines[2], lines[3] }, {
      "  reason: the user changed the same lines meanwhile: line 3",
      "          b.py was not moved",
    }, block.kind)
  end
end)

T.test(":ReinsTree draws where branches split, marks the leaf and fits the window", function()
  local node = function(id, parent, role, preview)
    return { id = id, parentId = parent or vim.NIL, kind = "message", role = role, preview = preview }
  end
  local tree = {
    leaf = "g7",
    nodes = {
      node("a1", nil, "user", "hello"),
      node("b2", "a1", "assistant", "hi"),
      node("c3", "b2", "user", "one"),
      node("d4", "b2", "user", "two"),
      node("e5", "c3", "assistant", "e"),
      node("f6", "e5", "user", "f"),
      node("g7", "e5", "user", "a long message that goes on past the width"),
      node("h8", "d4", "assistant", "h"),
    },
  }
  local lines = require("reins.sessions").tree_lines(tree)
  T.eq(lines, {
    "  you    hello",
    "  reins  hi",
    "├─   you    one",
    "│    reins  e",
    "│  ├─   you    f",
    "│  └─ ● you    a long message that goes on past the width",
    "└─   you    two",
    "     reins  h",
  })
  lines = require("reins.sessions").tree_lines(tree, 30)
  T.eq(lines[6], "│  └─ ● you    a long message…")
  for _, line in ipairs(lines) do
    T.eq(vim.fn.strdisplaywidth(line) <= 30, true, line)
  end
end)

T.test("the prompt's key hints keep the send key when the window is narrow", function()
  local winbar = require("reins.chat").prompt_winbar(require("reins.config").options.keymaps)
  local shown = function(width)
    return vim.api.nvim_eval_statusline(winbar, { maxwidth = width }).str
  end
  T.eq(shown(120), " <C-s> send · <C-g> steer · <C-c> cancel · <C-n> new")
  T.eq(shown(24), " <C-s> send · <C-g> ste>", "cut at the end, not the start")
end)
