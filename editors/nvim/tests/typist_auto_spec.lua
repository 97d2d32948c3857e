-- Edits into a live buffer with `approval.edit = "auto"`: the user keeps typing next to and far
-- from the agent's lines while two edit calls of one answer apply without asking (see typist.lua).
dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/typist.lua").spec(false)
