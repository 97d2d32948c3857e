//! How a call looks ([`ToolLook`]) where no agent event carries it: the approval request, and a
//! session shown again from its file. A built-in tool of the session says it; any other name is
//! an MCP tool's, whose look needs only the name (`reins_mcp::look`), so a recorded call looks
//! the same before its server is up.

use reins_agent::ToolLook;
use serde_json::Value;

use super::Harness;
use super::tools::SessionTools;

impl SessionTools {
    /// How a call of `tool` with `arguments` looks.
    pub(crate) fn look(&self, tool: &str, arguments: &Value) -> ToolLook {
        match self.builtin().iter().find(|builtin| builtin.name() == tool) {
            Some(builtin) => builtin.look(arguments),
            None => reins_mcp::look(tool, arguments),
        }
    }
}

impl Harness {
    /// How a call of `tool` with `arguments` in session `session_id` looks, as the tool says: a
    /// surface translates it and never matches tool names (a session not open takes the look
    /// by the name alone).
    pub fn look(&self, session_id: &str, tool: &str, arguments: &Value) -> ToolLook {
        match self.live(session_id) {
            Some(session) => session.toolbox.look(tool, arguments),
            None => reins_mcp::look(tool, arguments),
        }
    }
}
