-- Where a proposed hunk sits in a buffer, in lines: the rows it replaces and the lines it puts
-- there. Both review layouts draw from this.
local client = require("reins.client")

local M = {}

--- Geometry of `hunk` over `lines` (the buffer's lines, 1-based table):
--- {first, last} 0-based rows replaced (last = first - 1 for a pure insertion before `first`),
--- `new` the lines that take their place.
function M.geometry(lines, hunk, encoding)
  local s, e = hunk.range.start, hunk.range["end"]
  local first_text = lines[s.line + 1] or ""
  local scol = client.byte_col(first_text, s.character, encoding)
  local prefix = first_text:sub(1, scol)
  local last, suffix
  if e.character == 0 and e.line > s.line then
    -- The range ends at the start of a line: that line is not touched.
    last, suffix = e.line - 1, ""
  else
    last = e.line
    local end_text = lines[e.line + 1] or ""
    suffix = end_text:sub(client.byte_col(end_text, e.character, encoding) + 1)
  end
  local new_text = prefix .. (hunk.newText or "") .. suffix
  if hunk.oldText == "" and s.character == 0 and e.line == s.line and e.character == 0 then
    -- Pure insertion before row `s.line`: nothing is replaced.
    local new = vim.split((hunk.newText or ""):gsub("\n$", ""), "\n", { plain = true })
    return { first = s.line, last = s.line - 1, new = new }
  end
  if last < e.line or (last >= #lines) then
    new_text = new_text:gsub("\n$", "")
  end
  local new = vim.split(new_text, "\n", { plain = true })
  if #new == 1 and new[1] == "" and new_text == "" then
    new = {}
  end
  return { first = s.line, last = math.min(last, math.max(#lines - 1, s.line)), new = new }
end

--- The buffer lines with every hunk applied, and each hunk's rows in the result
--- ({first, last} 0-based; last < first when the hunk removes lines).
function M.apply(lines, hunks, encoding)
  local geos = {}
  for i, h in ipairs(hunks) do
    geos[i] = M.geometry(lines, h, encoding)
  end
  local order = {}
  for i = 1, #hunks do
    order[i] = i
  end
  table.sort(order, function(a, b)
    return geos[a].first < geos[b].first
  end)
  local out, placed, row = {}, {}, 0
  for _, i in ipairs(order) do
    local g = geos[i]
    while row < g.first do
      table.insert(out, lines[row + 1])
      row = row + 1
    end
    local start = #out
    for _, l in ipairs(g.new) do
      table.insert(out, l)
    end
    placed[i] = { first = start, last = #out - 1 }
    row = g.last + 1
  end
  while row < #lines do
    table.insert(out, lines[row + 1])
    row = row + 1
  end
  return out, placed, geos
end

return M
