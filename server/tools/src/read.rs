//! `read`: a text file's contents (the open buffer when the editor has one), a window of lines at
//! a time, with a notice saying how to continue when the file is longer than one result.

use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{
    Proposal, ToolContext, ToolError, ToolKind, ToolLocation, ToolLook, ToolOutput, TypedTool, string_argument,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::truncate::{Limit, MAX_BYTES, MAX_LINES, format_size, truncate_head};
use crate::{Workspace, display_path, workspace_error};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadInput {
    pub path: String,
    /// First line to read, 1-based.
    pub offset: Option<usize>,
    /// Lines to read.
    pub limit: Option<usize>,
}

pub struct ReadTool {
    workspace: Arc<dyn Workspace>,
}

impl ReadTool {
    pub fn new(workspace: Arc<dyn Workspace>) -> Self {
        Self { workspace }
    }
}

#[async_trait]
impl TypedTool for ReadTool {
    type Input = ReadInput;
    const NAME: &'static str = "read";
    const READ_ONLY: bool = true;

    fn look(&self, arguments: &Value) -> ToolLook {
        let path = string_argument(arguments, "path");
        let line = arguments.get("offset").and_then(Value::as_u64).and_then(|line| u32::try_from(line).ok());
        ToolLook {
            title: format!("Read {}", path.unwrap_or("a file")),
            kind: ToolKind::Read,
            locations: path.map(|path| vec![ToolLocation { path: path.to_string(), line }]).unwrap_or_default(),
            summary: path.unwrap_or_default().to_string(),
        }
    }
    fn description(&self) -> String {
        format!(
            "Read a UTF-8 text file as the user sees it (unsaved editor changes included). Output stops \
             at {MAX_LINES} lines or {}; a notice gives the offset to continue from.",
            format_size(MAX_BYTES)
        )
    }

    async fn execute(
        &self,
        input: ReadInput,
        _proposal: Option<Proposal>,
        _cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let (path, file) = self.workspace.read_named(&input.path).await.map_err(workspace_error)?;
        let shown = display_path(&path, &self.workspace.cwd());
        read_window(&file.text, &shown, input.offset, input.limit).map(ToolOutput::text)
    }
}

/// The lines of `text` from `offset` (1-based) on, at most `limit` of them and within the shared
/// limits, followed by a notice when more remains.
fn read_window(text: &str, shown: &str, offset: Option<usize>, limit: Option<usize>) -> Result<String, ToolError> {
    if limit == Some(0) {
        return Err(ToolError::new("limit must be at least 1"));
    }
    let total_lines = text.split_inclusive('\n').count();
    // Models sometimes count from 0; line 0 is read as line 1 rather than refused.
    let first = offset.unwrap_or(1).max(1);
    if total_lines == 0 {
        return Ok(format!("[{shown} is empty.]"));
    }
    if first > total_lines {
        return Err(ToolError::new(format!(
            "offset {first} is beyond the end of {shown}, which has {total_lines} line{}",
            if total_lines == 1 { "" } else { "s" }
        )));
    }
    let start = text.split_inclusive('\n').take(first - 1).map(str::len).sum::<usize>();
    let rest = &text[start..];
    let max_lines = limit.unwrap_or(MAX_LINES).min(MAX_LINES);
    let window = truncate_head(rest, max_lines, MAX_BYTES);
    let last = first + window.kept_lines.saturating_sub(1);

    let notice = if window.partial_line {
        let continuation =
            if first < total_lines { format!(", or offset={} to continue after it", first + 1) } else { String::new() };
        Some(format!(
            "[Line {first} is {}, longer than the {} limit; only its start is shown. Use bash \
             (e.g. `sed -n '{first}p' {shown} | cut -c 1-1000`) to see parts of it{continuation}.]",
            format_size(rest.split_inclusive('\n').next().map_or(0, str::len)),
            format_size(MAX_BYTES),
        ))
    } else if last < total_lines {
        let why = match window.cut_by {
            Some(Limit::Bytes) => format!(" ({} limit)", format_size(MAX_BYTES)),
            _ => String::new(),
        };
        Some(format!("[Showing lines {first}-{last} of {total_lines}{why}. Use offset={} to continue.]", last + 1))
    } else {
        None
    };
    let mut output = window.kept;
    if let Some(notice) = notice {
        if !output.ends_with('\n') {
            output.push('\n');
        }
        output.push('\n');
        output.push_str(&notice);
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_of_a_short_file_has_no_notice() {
        assert_eq!(read_window("a\nb\n", "f", None, None).unwrap(), "a\nb\n");
    }

    #[test]
    fn window_with_limit_says_where_to_continue() {
        assert_eq!(
            read_window("a\nb\nc\nd", "f", Some(2), Some(2)).unwrap(),
            "b\nc\n\n[Showing lines 2-3 of 4. Use offset=4 to continue.]"
        );
    }
}
