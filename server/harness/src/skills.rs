//! Skills in the Agent Skills format, as pi 1.6 reads them: a folder with a `SKILL.md` whose
//! frontmatter names and describes it. Only the name, description and path go into the system
//! prompt (the model reads the body when a task calls for it); `/skill:name args` puts the body in
//! the user's message. The same folders work in pi, Claude Code and Codex.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use reins_agent::Proposal;
use reins_review::CommandRule;
use yaml_rust2::Yaml;

use crate::frontmatter::{self, Document, scalar_text};

/// The Agent Skills specification's limits.
const MAX_NAME_CHARS: usize = 64;
const MAX_DESCRIPTION_CHARS: usize = 1024;
const MAX_COMPATIBILITY_CHARS: usize = 500;
/// Folders deeper than this under a skills folder are not searched (a symlink loop ends here).
const MAX_DEPTH: usize = 8;
/// A `SKILL.md` larger than this is not a skill: its frontmatter is read at every session start.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The fields the specification defines, and those Claude Code adds; others get a warning.
const KNOWN_FIELDS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
    "disable-model-invocation",
    "argument-hint",
    "model",
    "user-invocable",
    "version",
];

/// One skill found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// Its `SKILL.md` (or a standalone Markdown skill).
    pub path: PathBuf,
    /// The folder its relative references resolve against.
    pub dir: PathBuf,
    /// Only `/skill:name` invokes it; the model is not told about it.
    pub disable_model_invocation: bool,
    /// What is approved without asking while a run that `/skill:name` started goes on.
    pub allowed_tools: AllowedTools,
    pub scope: Scope,
}

/// A skill's `allowed-tools`: whole tools (reins's names: `Read` and `read` both give `read`)
/// and bash commands by Claude Code's scoped rules (`Bash(git:*)`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllowedTools {
    pub tools: Vec<String>,
    pub commands: Vec<CommandRule>,
}

impl AllowedTools {
    /// Whether a call needs no asking: its tool is allowed whole, or it is a `bash` command that
    /// a rule covers (a compound command never is: see [`CommandRule`]).
    pub fn covers(&self, tool: &str, proposal: Option<&Proposal>) -> bool {
        if self.tools.iter().any(|allowed| allowed == tool) {
            return true;
        }
        let Some(Proposal::Command(command)) = proposal else { return false };
        tool == "bash" && self.commands.iter().any(|rule| rule.matches(&command.command))
    }
}

/// Whose a skill or template is: a project's apply only in trusted workspaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
}

/// Something wrong with a skill or template file; it never stops a session from starting.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// The skills of some folders, the first of a name winning, and what was wrong on the way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Skills {
    pub skills: Vec<Skill>,
    pub warnings: Vec<Warning>,
}

impl Skills {
    /// Reads every skill under `folders` (in order: on a name collision the first found wins).
    pub fn discover(folders: &[(PathBuf, Scope)]) -> Self {
        let mut found = Self::default();
        let mut seen = HashSet::new();
        for (folder, scope) in folders {
            let mut candidates = Vec::new();
            collect(folder, true, 0, &mut candidates, &mut seen);
            for path in candidates {
                found.add(load(&path, *scope));
            }
        }
        found
    }

    pub fn find(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    /// What a long-running surface tells the user once at start about the files that are not
    /// quite skills (they load where they can): a heading and a line for each problem; `None`
    /// when there is none, so a good setup stays silent.
    pub fn warning(&self) -> Option<String> {
        if self.warnings.is_empty() {
            return None;
        }
        let mut text = String::from("some skill files are not quite skills:");
        for warning in &self.warnings {
            text.push_str("\n- ");
            text.push_str(&warning.to_string());
        }
        Some(text)
    }

    fn add(&mut self, (skill, warnings): (Option<Skill>, Vec<Warning>)) {
        self.warnings.extend(warnings);
        let Some(skill) = skill else { return };
        if let Some(first) = self.find(&skill.name) {
            let message =
                format!("skill name {:?} is taken by {}; this one is ignored", skill.name, first.path.display());
            self.warnings.push(Warning { path: skill.path, message });
            return;
        }
        self.skills.push(skill);
    }
}

/// The files under `dir` that may be skills: a `SKILL.md` ends the search of its folder; Markdown
/// files directly in a skills folder are standalone skills; hidden folders and `node_modules` are
/// skipped. `seen` holds the real paths of the folders searched, so a symlink loop ends.
fn collect(dir: &Path, root: bool, depth: usize, out: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(real) = dir.canonicalize() else { return };
    if !seen.insert(real) {
        return;
    }
    let skill_md = dir.join("SKILL.md");
    if skill_md.is_file() {
        out.push(skill_md);
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|entry| entry.ok().map(|entry| entry.path())).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if path.is_dir() {
            collect(&path, false, depth + 1, out, seen);
        } else if root && name.ends_with(".md") && path.is_file() {
            out.push(path);
        }
    }
}

/// One skill file: the skill, unless it cannot be one, and the warnings about it. A `SKILL.md`
/// without a description warns and is skipped; a standalone Markdown file without one is
/// silently not a skill (it may be a README).
fn load(path: &Path, scope: Scope) -> (Option<Skill>, Vec<Warning>) {
    let declared = path.file_name().is_some_and(|name| name == "SKILL.md");
    let warn = |message: String| Warning { path: path.to_path_buf(), message };
    let content = match read_limited(path) {
        Ok(content) => content,
        Err(message) => return (None, vec![warn(message)]),
    };
    let doc = match frontmatter::parse(&content) {
        Ok(doc) => doc,
        Err(message) if declared => return (None, vec![warn(message)]),
        Err(_) => return (None, Vec::new()),
    };
    let description = doc.text("description").filter(|text| !text.trim().is_empty());
    if !declared && description.is_none() {
        return (None, Vec::new());
    }
    let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
    // Unnamed, a `SKILL.md` is named by its folder and a standalone file by itself.
    let fallback = if declared { dir.file_name() } else { path.file_stem() };
    let name = doc.text("name").unwrap_or_else(|| fallback.unwrap_or_default().to_string_lossy().into_owned());
    let mut warnings: Vec<Warning> = check_fields(&doc, &name).into_iter().map(warn).collect();
    let Some(description) = description else {
        warnings.push(warn("description is required; the skill is not loaded".into()));
        return (None, warnings);
    };
    let (allowed_tools, tool_warnings) = allowed_tools(&doc.fields["allowed-tools"]);
    warnings.extend(tool_warnings.into_iter().map(warn));
    let skill = Skill {
        name,
        description,
        path: path.to_path_buf(),
        dir,
        disable_model_invocation: doc.fields["disable-model-invocation"] == Yaml::Boolean(true),
        allowed_tools,
        scope,
    };
    (Some(skill), warnings)
}

/// What the specification says of each field, as warnings: the skill loads all the same.
fn check_fields(doc: &Document, name: &str) -> Vec<String> {
    let mut warnings = Vec::new();
    if name.chars().count() > MAX_NAME_CHARS {
        warnings.push(format!("name exceeds {MAX_NAME_CHARS} characters"));
    }
    if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        warnings.push("name may contain only lowercase letters a-z, digits and hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        warnings.push("name must not start or end with a hyphen or contain two in a row".into());
    }
    if doc.has("description") && doc.text("description").is_none() {
        warnings.push("description is not text".into());
    }
    if doc.text("description").is_some_and(|text| text.chars().count() > MAX_DESCRIPTION_CHARS) {
        warnings.push(format!("description exceeds {MAX_DESCRIPTION_CHARS} characters"));
    }
    if doc.has("compatibility")
        && doc.text("compatibility").is_none_or(|text| text.chars().count() > MAX_COMPATIBILITY_CHARS)
    {
        warnings.push(format!("compatibility should be text of at most {MAX_COMPATIBILITY_CHARS} characters"));
    }
    if doc.has("license") && doc.text("license").is_none() {
        warnings.push("license is not text".into());
    }
    if doc.has("metadata") && !matches!(doc.fields["metadata"], Yaml::Hash(_)) {
        warnings.push("metadata is not a mapping".into());
    }
    let flag = &doc.fields["disable-model-invocation"];
    if !matches!(flag, Yaml::Boolean(_) | Yaml::BadValue) {
        warnings.push("disable-model-invocation is not true or false; it is taken as false".into());
    }
    if let Yaml::Hash(fields) = &doc.fields {
        for key in fields.keys() {
            let key = scalar_text(key).unwrap_or_default();
            if !KNOWN_FIELDS.contains(&key.as_str()) {
                warnings.push(format!("unknown field {key:?} is ignored"));
            }
        }
    }
    warnings
}

/// `allowed-tools` as reins's tool names and bash rules: a space- or comma-separated string (the
/// specification's and Claude Code's forms) or a list. `Bash(git:*)` approves the bash commands
/// the rule covers ([`CommandRule`]); an entry scoped to other arguments (`Read(./src/**)`)
/// approves nothing, as approving the whole tool would approve more than the skill asked for.
fn allowed_tools(value: &Yaml) -> (AllowedTools, Vec<String>) {
    let entries: Vec<String> = match value {
        Yaml::BadValue | Yaml::Null => return (AllowedTools::default(), Vec::new()),
        Yaml::String(text) => split_tool_list(text),
        Yaml::Array(items) => items.iter().filter_map(scalar_text).flat_map(|text| split_tool_list(&text)).collect(),
        _ => {
            let warning = "allowed-tools is not a list of tool names; nothing is pre-approved".to_string();
            return (AllowedTools::default(), vec![warning]);
        }
    };
    let mut allowed = AllowedTools::default();
    let mut warnings = Vec::new();
    for entry in entries {
        if let Some((tool, specifier)) = entry.split_once('(') {
            let specifier = specifier.strip_suffix(')');
            let rule = match specifier {
                Some(specifier) if tool.eq_ignore_ascii_case("bash") && specifier.trim() == "*" => None,
                Some(specifier) if tool.eq_ignore_ascii_case("bash") => Some(CommandRule::parse(specifier)),
                _ => {
                    warnings.push(format!(
                        "allowed-tools: {entry:?} is not pre-approved (reins approves whole tools, and bash commands \
                         by Bash(prefix:*))"
                    ));
                    continue;
                }
            };
            match rule {
                Some(Ok(rule)) => allowed.commands.push(rule),
                Some(Err(why)) => warnings.push(format!("allowed-tools: {why}; it is not pre-approved")),
                // `Bash(*)` is `Bash`.
                None => add_tool(&mut allowed.tools, "bash".to_string()),
            }
            continue;
        }
        for tool in reins_tool_names(&entry) {
            add_tool(&mut allowed.tools, tool);
        }
    }
    (allowed, warnings)
}

fn add_tool(tools: &mut Vec<String>, tool: String) {
    if !tools.contains(&tool) {
        tools.push(tool);
    }
}

/// Splits at spaces and commas outside parentheses: `Read, Bash(git add:*) Grep`.
fn split_tool_list(text: &str) -> Vec<String> {
    let mut entries = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c.is_whitespace() || c == ',') {
            if !current.is_empty() {
                entries.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        entries.push(current);
    }
    entries
}

/// Claude Code's and pi's tool names as reins's (`Edit` is whichever edit dialect the model has).
fn reins_tool_names(entry: &str) -> Vec<String> {
    let names: &[&str] = match entry.to_ascii_lowercase().as_str() {
        "edit" | "multiedit" => &["edit", "apply_patch"],
        "glob" => &["find"],
        _ => return vec![if entry.starts_with("mcp__") { entry.to_string() } else { entry.to_ascii_lowercase() }],
    };
    names.iter().map(|name| name.to_string()).collect()
}

fn read_limited(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|err| format!("cannot read it: {err}"))?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!("larger than {} MiB; not loaded", MAX_FILE_BYTES / 1024 / 1024));
    }
    std::fs::read_to_string(path).map_err(|err| format!("cannot read it: {err}"))
}

/// The system prompt's part about skills (pi's words and the Agent Skills XML, so a model
/// trained on either recognises it): names, descriptions and paths of the skills the model may
/// use, and how to load one. Empty when there are none. `reader` is the tool that reads files.
pub fn prompt_section(skills: &[Skill], reader: Option<&str>) -> String {
    let visible: Vec<&Skill> = skills.iter().filter(|skill| !skill.disable_model_invocation).collect();
    if visible.is_empty() {
        return String::new();
    }
    let how = match reader {
        Some("read") => "Use the read tool to load a skill's file when the task matches its description.",
        Some("bash") => "Use bash to load a skill's file when the task matches its description.",
        _ => "Load a skill's file when the task matches its description.",
    };
    let mut out = format!(
        "The following skills provide specialized instructions for specific tasks.\n{how}\nResolve relative paths \
         against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.\n\n<available_skills>\n"
    );
    for skill in visible {
        out.push_str(&format!(
            "  <skill>\n    <name>{}</name>\n    <description>{}</description>\n    <location>{}</location>\n  </skill>\n",
            escape_xml(&skill.name),
            escape_xml(&skill.description),
            escape_xml(&skill.path.display().to_string())
        ));
    }
    out.push_str("</available_skills>");
    out
}

/// The user message `/skill:name args` becomes: the skill's body, read now, and the arguments as
/// the request (pi's form).
pub fn invocation(skill: &Skill, args: &str) -> Result<String, String> {
    let content = read_limited(&skill.path).map_err(|err| format!("skill {}: {err}", skill.name))?;
    let body = frontmatter::parse(&content).map_err(|err| format!("skill {}: {err}", skill.name))?.body;
    let block = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        skill.path.display(),
        skill.dir.display(),
        body.trim()
    );
    let args = args.trim();
    Ok(if args.is_empty() { block } else { format!("{block}\n\n{args}") })
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    /// The skills found under `files`, and the warnings, with the temp dir shown as `<tmp>`.
    fn check(files: &[(&str, &str)], expected: expect_test::Expect) {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), files);
        let found =
            Skills::discover(&[(tmp.path().join("user"), Scope::User), (tmp.path().join("proj"), Scope::Project)]);
        let mut out = String::new();
        for skill in &found.skills {
            out.push_str(&format!(
                "{} [{:?}{}] {:?} tools={:?}{} at {}\n",
                skill.name,
                skill.scope,
                if skill.disable_model_invocation { ", command only" } else { "" },
                skill.description,
                skill.allowed_tools.tools,
                skill.allowed_tools.commands.iter().map(|rule| format!(" {rule:?}")).collect::<String>(),
                skill.path.display()
            ));
        }
        for warning in &found.warnings {
            out.push_str(&format!("warning: {warning}\n"));
        }
        expected.assert_eq(&out.replace(&tmp.path().display().to_string(), "<tmp>"));
    }

    #[test]
    fn discovers_folders_recursively_first_name_wins_and_warns_without_stopping() {
        check(
            &[
                ("user/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: Extract text from PDFs.\n---\n# PDF"),
                (
                    "user/pdf-tools/nested/SKILL.md",
                    "---\ndescription: not searched: the folder above is a skill\n---\n",
                ),
                (
                    "user/group/deep/review/SKILL.md",
                    "---\ndescription: Review code.\nallowed-tools: Read Grep, Bash(git diff:*) Edit Read(./src/**) Bash(a && b:*)\n---\n",
                ),
                ("user/notes.md", "# just notes, no description"),
                ("user/quick.md", "---\ndescription: A standalone skill.\n---\nbody"),
                ("user/.hidden/SKILL.md", "---\ndescription: hidden\n---\n"),
                ("user/node_modules/x/SKILL.md", "---\ndescription: dependency\n---\n"),
                (
                    "user/Bad_Name/SKILL.md",
                    "---\ndescription: Still loads.\ndisable-model-invocation: true\nfoo: 1\n---\n",
                ),
                ("user/nodesc/SKILL.md", "---\nname: nodesc\n---\nbody"),
                ("user/broken/SKILL.md", "---\nname: [oops\n---\n"),
                ("proj/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: The project's copy.\n---\n"),
            ],
            expect![[r#"
                Bad_Name [User, command only] "Still loads." tools=[] at <tmp>/user/Bad_Name/SKILL.md
                review [User] "Review code." tools=["read", "grep", "edit", "apply_patch"] CommandRule { pattern: "git diff *" } at <tmp>/user/group/deep/review/SKILL.md
                pdf-tools [User] "Extract text from PDFs." tools=[] at <tmp>/user/pdf-tools/SKILL.md
                quick [User] "A standalone skill." tools=[] at <tmp>/user/quick.md
                warning: <tmp>/user/Bad_Name/SKILL.md: name may contain only lowercase letters a-z, digits and hyphens
                warning: <tmp>/user/Bad_Name/SKILL.md: unknown field "foo" is ignored
                warning: <tmp>/user/broken/SKILL.md: invalid YAML frontmatter: while parsing a flow sequence, expected ',' or ']' at byte 12 line 3 column 1
                warning: <tmp>/user/group/deep/review/SKILL.md: allowed-tools: "Read(./src/**)" is not pre-approved (reins approves whole tools, and bash commands by Bash(prefix:*))
                warning: <tmp>/user/group/deep/review/SKILL.md: allowed-tools: Bash(a && b:*) is not one plain command; it is not pre-approved
                warning: <tmp>/user/nodesc/SKILL.md: description is required; the skill is not loaded
                warning: <tmp>/proj/pdf-tools/SKILL.md: skill name "pdf-tools" is taken by <tmp>/user/pdf-tools/SKILL.md; this one is ignored
            "#]],
        );
    }

    #[test]
    fn a_symlink_loop_ends() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), &[("skills/a/b/SKILL.md", "---\ndescription: d\n---\n")]);
        std::os::unix::fs::symlink(tmp.path().join("skills"), tmp.path().join("skills/a/loop")).unwrap();
        let found = Skills::discover(&[(tmp.path().join("skills"), Scope::User)]);
        assert_eq!(found.skills.iter().map(|skill| skill.name.as_str()).collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn the_prompt_names_describes_and_locates_only_model_invocable_skills() {
        let skill = |name: &str, hidden: bool| Skill {
            name: name.into(),
            description: "Use <when> & \"why\".".into(),
            path: PathBuf::from(format!("/s/{name}/SKILL.md")),
            dir: PathBuf::from(format!("/s/{name}")),
            disable_model_invocation: hidden,
            allowed_tools: AllowedTools::default(),
            scope: Scope::User,
        };
        assert_eq!(prompt_section(&[skill("x", true)], Some("read")), "");
        expect![[r#"
            The following skills provide specialized instructions for specific tasks.
            Use the read tool to load a skill's file when the task matches its description.
            Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.

            <available_skills>
              <skill>
                <name>pdf-tools</name>
                <description>Use &lt;when&gt; &amp; &quot;why&quot;.</description>
                <location>/s/pdf-tools/SKILL.md</location>
              </skill>
            </available_skills>"#]]
        .assert_eq(&prompt_section(&[skill("pdf-tools", false), skill("secret", true)], Some("read")));
    }

    #[test]
    fn invocation_is_the_body_then_the_request() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            &[("pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: d\n---\n\n# PDF tools\n\nRead it.\n")],
        );
        let found = Skills::discover(&[(tmp.path().to_path_buf(), Scope::User)]);
        let text = invocation(&found.skills[0], " extract report.pdf ").unwrap();
        expect![[r#"
            <skill name="pdf-tools" location="<tmp>/pdf-tools/SKILL.md">
            References are relative to <tmp>/pdf-tools.

            # PDF tools

            Read it.
            </skill>

            extract report.pdf"#]]
        .assert_eq(&text.replace(&tmp.path().display().to_string(), "<tmp>"));
        std::fs::remove_file(&found.skills[0].path).unwrap();
        assert!(invocation(&found.skills[0], "").unwrap_err().starts_with("skill pdf-tools: cannot read it"));
    }
}
