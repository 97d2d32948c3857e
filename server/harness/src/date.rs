//! The date the system prompt names, the same for every surface.

/// Today's date, `YYYY-MM-DD`, in UTC, for the system prompt.
pub fn today() -> String {
    humantime::format_rfc3339(std::time::SystemTime::now()).to_string().chars().take(10).collect()
}
