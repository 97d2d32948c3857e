//! How a tool call looks to a person: a title, a kind (for an icon), the files it works on and a
//! one-line summary. Each tool says it for its own arguments ([`crate::Tool::look`]), so a
//! surface translates a look (ACP's title, kind and locations, the terminal's line, LSP's
//! progress) and never matches tool names or argument keys; a renamed argument then fails the
//! tool's own test, not three surfaces.
//!
//! A look is built from arguments the model sent, before they are checked: a missing or mistyped
//! argument gives a plainer look, never an error.

use serde_json::Value;

/// What a call does, in the words a person scans a transcript for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Edit,
    Execute,
    Search,
    Fetch,
    #[default]
    Other,
}

/// A file a call works on, as the call names it (relative to the working directory, or
/// absolute), with the line it starts at when it says one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLocation {
    pub path: String,
    pub line: Option<u32>,
}

/// How a call looks (see the module's comment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolLook {
    /// `Read src/a.rs`, `Run \`cargo test\``: a short sentence naming what the call does.
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<ToolLocation>,
    /// The call's gist (its path, command or pattern) for a line in a transcript; a command keeps
    /// its line breaks, which a surface shows on one line.
    pub summary: String,
}

impl ToolLook {
    /// The look of a tool that says nothing of itself: its name, and its arguments on one line.
    pub fn plain(name: &str, arguments: &Value) -> ToolLook {
        let summary = match arguments {
            Value::Object(map) if map.is_empty() => String::new(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        ToolLook { title: name.to_string(), summary, ..ToolLook::default() }
    }
}

impl ToolLocation {
    pub fn new(path: impl Into<String>) -> ToolLocation {
        ToolLocation { path: path.into(), line: None }
    }
}

/// A string argument of a call, when it is there and not empty.
pub fn string_argument<'a>(arguments: &'a Value, key: &str) -> Option<&'a str> {
    arguments.get(key).and_then(Value::as_str).filter(|value| !value.is_empty())
}
