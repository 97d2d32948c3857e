//! System-prompt assembly: identity, tools, guidelines, the project's context files, and where
//! the agent is working.
//!
//! Context files are what a project tells every agent (`AGENTS.md` and friends). They are read
//! from the global config directory and from every directory between the filesystem root and the
//! workspace root, outermost first, so a repository's own instructions come last and weigh most.
//! `SYSTEM.md` replaces the built-in identity and guidelines and `APPEND_SYSTEM.md` adds to them;
//! a project's own `.reins/` copies of those are honoured only in trusted workspaces, because a
//! cloned repository must not be able to rewrite the agent's instructions.

use std::path::{Path, PathBuf};

use reins_ai::ToolSpec;

/// Per directory, the first of these that exists is used.
pub const CONTEXT_FILE_NAMES: [&str; 3] = ["AGENTS.override.md", "AGENTS.md", "CLAUDE.md"];

/// What the prompt is built from; gathered by [`PromptInputs::discover`] or given by a test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptInputs {
    pub workspace_root: PathBuf,
    pub cwd: PathBuf,
    pub tools: Vec<ToolSpec>,
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Replaces the identity and guidelines.
    pub system_override: Option<ContextFile>,
    pub append: Vec<ContextFile>,
    pub context_files: Vec<ContextFile>,
    /// Skills the model may load: only their names, descriptions and paths go in.
    pub skills: Vec<crate::skills::Skill>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

impl PromptInputs {
    /// Reads context files and overrides from disk. `global_dir` is the user's config directory;
    /// `trusted` says whether the project's `.reins/` overrides may apply.
    pub fn discover(
        workspace_root: &Path,
        cwd: &Path,
        global_dir: &Path,
        trusted: bool,
        tools: Vec<ToolSpec>,
        date: String,
    ) -> Self {
        let project_dir = workspace_root.join(".reins");
        let pick = |name: &str| {
            let project = trusted.then(|| read_context_file(&project_dir.join(name))).flatten();
            project.or_else(|| read_context_file(&global_dir.join(name)))
        };
        let system_override = pick("SYSTEM.md");
        let append = pick("APPEND_SYSTEM.md").into_iter().collect();

        let mut context_files = Vec::new();
        context_files.extend(first_context_file(global_dir));
        for dir in ancestors_outermost_first(workspace_root) {
            context_files.extend(first_context_file(&dir));
        }
        Self {
            workspace_root: workspace_root.to_path_buf(),
            cwd: cwd.to_path_buf(),
            tools,
            date,
            system_override,
            append,
            context_files,
            skills: Vec::new(),
        }
    }
}

/// Builds the system prompt.
pub fn build_system_prompt(inputs: &PromptInputs) -> String {
    let mut prompt = match &inputs.system_override {
        Some(file) => file.content.trim_end().to_string(),
        None => default_preamble(&inputs.tools),
    };
    for file in &inputs.append {
        prompt.push_str("\n\n");
        prompt.push_str(file.content.trim_end());
    }
    if !inputs.context_files.is_empty() {
        prompt.push_str("\n\n<project_context>\nProject-specific instructions and guidelines:\n");
        for file in &inputs.context_files {
            prompt.push_str(&format!(
                "\n<project_instructions path=\"{}\">\n{}\n</project_instructions>\n",
                file.path.display(),
                file.content.trim_end()
            ));
        }
        prompt.push_str("</project_context>");
    }
    let reader = ["read", "bash"].into_iter().find(|name| inputs.tools.iter().any(|tool| tool.name == *name));
    let skills = crate::skills::prompt_section(&inputs.skills, reader);
    if !skills.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(&skills);
    }
    // No date: a session continued another day would otherwise lose its whole cached prefix
    // (pi 1.6 leaves it out too); `bash` can tell the date.
    prompt.push_str(&format!("\n\nCurrent working directory: {}", inputs.cwd.display()));
    prompt
}

/// Identity and guidelines, lean: the tools describe themselves in their definitions, so the
/// prompt only says what no single tool says, and only what applies to the tools offered (an
/// ask-only session is not told how to edit). It names no edit dialect, so a model change that
/// swaps `edit` for `apply_patch` leaves the prompt, and the cached prefix, as they were.
fn default_preamble(tools: &[ToolSpec]) -> String {
    let has = |names: &[&str]| tools.iter().any(|tool| names.contains(&tool.name.as_str()));
    let changes = has(&["edit", "write", "apply_patch"]);
    let mut out = String::from(
        "You are an expert coding assistant working in the user's editor through reins. \
         Paths are relative to the working directory, or absolute.",
    );
    if changes || has(&["bash"]) {
        out.push_str(
            " Your edits, writes and commands may be shown to the user as proposals first; the tool result \
             says whether each was applied, partly applied or rejected, and why.",
        );
    }
    out.push_str("\n\nGuidelines:\n- Be concise. Show file paths clearly.\n");
    if changes {
        out.push_str("- Read a file before you change it; prefer small exact edits to rewriting it.\n");
    }
    if has(&["bash"]) && has(&["grep", "find", "ls"]) {
        out.push_str("- Explore with `grep`, `find` and `ls` rather than `bash`.\n");
    }
    if changes {
        out.push_str("- If a proposal is rejected, do not retry it: adapt to the user's reason.\n");
    }
    out.push_str("- Do not invent file contents or command output; look them up.");
    out
}

fn read_context_file(path: &Path) -> Option<ContextFile> {
    let content = std::fs::read_to_string(path).ok()?;
    Some(ContextFile { path: path.to_path_buf(), content })
}

fn first_context_file(dir: &Path) -> Option<ContextFile> {
    CONTEXT_FILE_NAMES.iter().find_map(|name| read_context_file(&dir.join(name)))
}

/// `/a/b/c` → `[/, /a, /a/b, /a/b/c]`.
fn ancestors_outermost_first(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = dir.ancestors().map(Path::to_path_buf).collect();
    dirs.reverse();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec { name: name.into(), description: description.into(), parameters: serde_json::json!({}) }
    }

    /// Builds a tree: `<tmp>/global`, `<tmp>/home/proj` as the workspace, with the given files.
    fn prompt_for(files: &[(&str, &str)], trusted: bool) -> String {
        let tmp = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = tmp.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let root = tmp.path().join("home/proj");
        std::fs::create_dir_all(&root).unwrap();
        let inputs = PromptInputs::discover(
            &root,
            &root,
            &tmp.path().join("global"),
            trusted,
            vec![tool("read", "Read a file.\nMore."), tool("edit", "Edit a file.")],
            "2026-11-30".into(),
        );
        build_system_prompt(&inputs).replace(&tmp.path().display().to_string(), "<tmp>")
    }

    #[test]
    fn context_files_outermost_first_one_per_directory() {
        let prompt = prompt_for(
            &[
                ("global/AGENTS.md", "global rules"),
                ("home/CLAUDE.md", "home rules"),
                ("home/proj/AGENTS.md", "project rules"),
                ("home/proj/CLAUDE.md", "shadowed by AGENTS.md"),
                ("home/proj/AGENTS.override.md", "override wins"),
            ],
            false,
        );
        let context = &prompt[prompt.find("<project_context>").unwrap()..];
        expect![[r#"
            <project_context>
            Project-specific instructions and guidelines:

            <project_instructions path="<tmp>/global/AGENTS.md">
            global rules
            </project_instructions>

            <project_instructions path="<tmp>/home/CLAUDE.md">
            home rules
            </project_instructions>

            <project_instructions path="<tmp>/home/proj/AGENTS.override.md">
            override wins
            </project_instructions>
            </project_context>

            Current working directory: <tmp>/home/proj"#]]
        .assert_eq(context);
    }

    #[test]
    fn default_prompt_names_only_the_tools_offered_and_leaves_their_descriptions_to_them() {
        let prompt = prompt_for(&[], false);
        expect![[r#"
            You are an expert coding assistant working in the user's editor through reins. Paths are relative to the working directory, or absolute. Your edits, writes and commands may be shown to the user as proposals first; the tool result says whether each was applied, partly applied or rejected, and why.

            Guidelines:
            - Be concise. Show file paths clearly.
            - Read a file before you change it; prefer small exact edits to rewriting it.
            - If a proposal is rejected, do not retry it: adapt to the user's reason.
            - Do not invent file contents or command output; look them up.

            Current working directory: <tmp>/home/proj"#]]
        .assert_eq(&prompt);
        assert!(!prompt.contains("Read a file.") && !prompt.contains("More."));

        let inputs = PromptInputs {
            tools: ["read", "ls", "grep", "find"].map(|name| tool(name, "")).to_vec(),
            date: "2026-11-30".into(),
            ..PromptInputs::default()
        };
        let ask = build_system_prompt(&inputs);
        assert!(!ask.contains("edits") && !ask.contains("proposal") && !ask.contains("`bash`"), "{ask}");
        // The edit dialect a model gets does not show: a model change keeps the prompt.
        let with = |editor: &str| {
            let tools = ["read", "write", editor, "bash"].map(|name| tool(name, "")).to_vec();
            build_system_prompt(&PromptInputs { tools, ..PromptInputs::default() })
        };
        assert_eq!(with("edit"), with("apply_patch"));
    }

    #[test]
    fn project_overrides_apply_only_when_trusted() {
        let files = [
            ("global/APPEND_SYSTEM.md", "global append"),
            ("home/proj/.reins/SYSTEM.md", "project identity"),
            ("home/proj/.reins/APPEND_SYSTEM.md", "project append"),
        ];
        let untrusted = prompt_for(&files, false);
        assert!(untrusted.starts_with("You are an expert coding assistant"));
        assert!(untrusted.contains("\n\nglobal append\n"));
        assert!(!untrusted.contains("project"), "{untrusted}");

        let trusted = prompt_for(&files, true);
        expect![[r#"
            project identity

            project append

            Current working directory: <tmp>/home/proj"#]]
        .assert_eq(&trusted);
    }

    #[test]
    fn global_system_override_replaces_identity() {
        let prompt = prompt_for(&[("global/SYSTEM.md", "You are terse.\n")], false);
        assert!(prompt.starts_with("You are terse.\n\nCurrent working directory"), "{prompt}");
    }
}
