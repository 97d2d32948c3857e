//! `[diagnostics]`: whether and how the harness tells the model the problems its edits caused.

/// `[diagnostics]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagnosticsSettings {
    /// Tell the model the problems its edits caused.
    pub after_edit: bool,
    /// The longest wait for the editor's diagnostics to change after an edit, in milliseconds.
    pub settle_ms: u64,
    /// Tell new warnings too, not only errors.
    pub warnings: bool,
    /// Where there is no editor: the command whose `file:line:col: severity: message` output
    /// gives the problems.
    pub command: Option<String>,
    /// How long the command may run, in seconds.
    pub command_timeout_secs: u64,
}

impl Default for DiagnosticsSettings {
    fn default() -> Self {
        Self { after_edit: true, settle_ms: 1500, warnings: false, command: None, command_timeout_secs: 60 }
    }
}
