-- Edits into a live buffer, reviewed: the user keeps typing next to and far from the agent's lines
-- while two edit calls of one answer are proposed and accepted (see typist.lua for the counts).
dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/typist.lua").spec(true)
