//! Slash commands: one list for every surface — the built-ins, then the prompt templates, then
//! the skills (`/skill:name`) — and what a message that starts with one becomes. Skills and
//! templates are read from the folders pi and the Agent Skills specification name, a project's
//! only when the workspace is trusted (a cloned repository must not add instructions of its own).

use std::path::{Path, PathBuf};

use crate::skills::{self, AllowedTools, Scope, Skills, Warning};
use crate::templates::{self, Templates};

/// The built-in commands: name, what it does, its arguments.
pub const BUILTIN_COMMANDS: &[(&str, &str, Option<&str>)] = &[
    ("compact", "Summarize the conversation so far to free the context window", None),
    ("model", "Show the session's model, or switch to another", Some("[provider/model]")),
    ("thinking", "Show or set how hard a reasoning model thinks", Some("[off|minimal|low|medium|high|xhigh]")),
    ("tools", "Show or set the tools offered (comma-separated names and globs)", Some("[tools]")),
    ("new", "Start a new session", None),
    ("fork", "Start a new session from an entry of this one", Some("[entry]")),
    ("tree", "Show the session's tree of entries", None),
    ("export", "Write the session's branch as a standalone HTML or Markdown page", Some("[path.html|path.md]")),
];

/// One slash command as completion and pickers show it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlashCommand {
    /// Without the slash: `compact`, `review`, `skill:pdf-tools`.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub kind: CommandKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandKind {
    Builtin,
    Template,
    Skill,
}

impl CommandKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Template => "template",
            Self::Skill => "skill",
        }
    }
}

/// Where skills and templates are looked for, in order (on a name collision the first wins, so
/// the user's own come before a project's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Locations {
    pub skills: Vec<(PathBuf, Scope)>,
    pub prompts: Vec<(PathBuf, Scope)>,
    /// pi's user skills folder, when it exists: `reins config check` says it is read.
    pub pi_skills: Option<PathBuf>,
}

impl Locations {
    /// reins's config folder's `skills/` and `prompts/`, `~/.agents/skills`, pi's user skills
    /// (`~/.pi/agent/skills`) when present; in a trusted workspace also `.reins/skills`,
    /// `.reins/prompts`, and `.agents/skills` from `cwd` up to the repository root.
    pub fn new(config_dir: &Path, home: &Path, cwd: &Path, trusted: bool) -> Self {
        let pi_skills = Some(home.join(".pi/agent/skills")).filter(|dir| dir.is_dir());
        let mut skills = vec![(config_dir.join("skills"), Scope::User), (home.join(".agents/skills"), Scope::User)];
        skills.extend(pi_skills.clone().map(|dir| (dir, Scope::User)));
        let mut prompts = vec![(config_dir.join("prompts"), Scope::User)];
        if trusted {
            skills.push((cwd.join(".reins/skills"), Scope::Project));
            skills.extend(project_dirs(cwd).into_iter().map(|dir| (dir.join(".agents/skills"), Scope::Project)));
            prompts.push((cwd.join(".reins/prompts"), Scope::Project));
        }
        Self { skills, prompts, pi_skills }
    }
}

/// `cwd` and its ancestors up to the repository root (the folder with `.git`); `cwd` alone
/// outside a repository.
fn project_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return dirs;
        }
    }
    vec![cwd.to_path_buf()]
}

/// The skills and templates in force, read from their folders.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    pub skills: Skills,
    pub templates: Templates,
}

/// What a message that starts with `/` is.
#[derive(Debug, Clone, PartialEq)]
pub enum Expanded {
    /// A built-in command and its arguments (trimmed).
    Builtin { name: String, args: String },
    /// The message the model gets instead, and the tools a forced skill pre-approves.
    Message { text: String, allowed_tools: AllowedTools },
    /// Not a command: the text goes as it is (`/usr/lib is…` is a message).
    Unchanged,
}

impl Resources {
    pub fn discover(locations: &Locations) -> Self {
        Self { skills: Skills::discover(&locations.skills), templates: Templates::discover(&locations.prompts) }
    }

    /// Every problem found in the files, skills' first.
    pub fn warnings(&self) -> impl Iterator<Item = &Warning> {
        self.skills.warnings.iter().chain(&self.templates.warnings)
    }

    /// The one list: built-ins, then templates (one named like a built-in is left out: the
    /// built-in wins), then skills.
    pub fn commands(&self) -> Vec<SlashCommand> {
        let builtins = BUILTIN_COMMANDS.iter().map(|(name, description, hint)| SlashCommand {
            name: name.to_string(),
            description: description.to_string(),
            argument_hint: hint.map(str::to_string),
            kind: CommandKind::Builtin,
        });
        let templates =
            self.templates.templates.iter().filter(|template| !is_builtin(&template.name)).map(|template| {
                SlashCommand {
                    name: template.name.clone(),
                    description: template.description.clone(),
                    argument_hint: template.argument_hint.clone(),
                    kind: CommandKind::Template,
                }
            });
        let skills = self.skills.skills.iter().map(|skill| SlashCommand {
            name: format!("skill:{}", skill.name),
            description: skill.description.clone(),
            argument_hint: None,
            kind: CommandKind::Skill,
        });
        builtins.chain(templates).chain(skills).collect()
    }

    /// What `text` is: a built-in, a template or skill (expanded), or a plain message. An error
    /// names a skill that does not exist or cannot be read.
    pub fn expand(&self, text: &str) -> Result<Expanded, String> {
        let Some(command) = text.strip_prefix('/') else { return Ok(Expanded::Unchanged) };
        let (name, args) = match command.find(char::is_whitespace) {
            Some(at) => (&command[..at], &command[at..]),
            None => (command, ""),
        };
        if let Some(skill_name) = name.strip_prefix("skill:") {
            let Some(skill) = self.skills.find(skill_name) else {
                let known: Vec<&str> = self.skills.skills.iter().map(|skill| skill.name.as_str()).collect();
                return Err(match known.is_empty() {
                    true => format!("there is no skill named {skill_name:?}: no skills are installed"),
                    false => format!("there is no skill named {skill_name:?}; there are: {}", known.join(", ")),
                });
            };
            let text = skills::invocation(skill, args)?;
            return Ok(Expanded::Message { text, allowed_tools: skill.allowed_tools.clone() });
        }
        if is_builtin(name) {
            return Ok(Expanded::Builtin { name: name.to_string(), args: args.trim().to_string() });
        }
        match self.templates.find(name) {
            Some(template) => Ok(Expanded::Message {
                text: templates::expand(template, args.trim_start()),
                allowed_tools: AllowedTools::default(),
            }),
            None => Ok(Expanded::Unchanged),
        }
    }
}

/// What `reins config check` says of skills, templates and hooks: where they are read from (pi's
/// folder named when it is used), each one found, each hook, and what is wrong in their files.
pub fn describe_resources(settings: &reins_settings::Settings, cwd: &Path) -> String {
    let trusted = settings.is_trusted(cwd);
    let locations = Locations::new(&settings.config_dir, settings.home(), cwd, trusted);
    let resources = Resources::discover(&locations);
    let mut out = String::from("\nskills, prompt templates and hooks:\n");
    if let Some(pi) = &locations.pi_skills {
        out.push_str(&format!("  pi's skills are read too: {}\n", pi.display()));
    }
    if !trusted {
        out.push_str("  this workspace is not trusted: its skills, templates and hooks are ignored\n");
    }
    for skill in &resources.skills.skills {
        out.push_str(&format!("  /skill:{:<20}  {}\n", skill.name, skill.path.display()));
    }
    for template in &resources.templates.templates {
        out.push_str(&format!("  /{:<26}  {}\n", template.name, template.path.display()));
    }
    for hook in &settings.hooks {
        let matcher = hook.matcher.as_deref().map(|m| format!(" [{m}]")).unwrap_or_default();
        out.push_str(&format!("  hook {}{matcher}: {} ({})\n", hook.event.as_str(), hook.command, hook.origin));
    }
    for warning in resources.warnings() {
        out.push_str(&format!("  warning: {warning}\n"));
    }
    out
}

fn is_builtin(name: &str) -> bool {
    BUILTIN_COMMANDS.iter().any(|(builtin, _, _)| *builtin == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(files: &[(&str, &str)], trusted: bool) -> (tempfile::TempDir, Resources) {
        let tmp = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let path = tmp.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let cwd = tmp.path().join("repo/sub");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(tmp.path().join("repo/.git")).unwrap();
        let locations = Locations::new(&tmp.path().join("config"), &tmp.path().join("home"), &cwd, trusted);
        let resources = Resources::discover(&locations);
        (tmp, resources)
    }

    const FILES: &[(&str, &str)] = &[
        (
            "config/prompts/review.md",
            "---\ndescription: Review staged git changes\nargument-hint: \"[focus]\"\n---\nFocus on ${1:-correctness}.",
        ),
        ("config/prompts/compact.md", "shadowed by the built-in"),
        (
            "home/.agents/skills/pdf-tools/SKILL.md",
            "---\nname: pdf-tools\ndescription: PDFs.\nallowed-tools: Read Bash\n---\nBody.",
        ),
        ("home/.pi/agent/skills/from-pi/SKILL.md", "---\ndescription: pi's own.\n---\n"),
        ("repo/.agents/skills/repo-skill/SKILL.md", "---\ndescription: The repository's.\n---\n"),
        ("repo/sub/.agents/skills/sub-skill/SKILL.md", "---\ndescription: The folder's.\n---\n"),
        ("repo/sub/.reins/skills/reins-skill/SKILL.md", "---\ndescription: reins's project skill.\n---\n"),
        ("repo/sub/.reins/prompts/deploy.md", "Deploy $@ now."),
    ];

    fn names(resources: &Resources) -> Vec<String> {
        resources.commands().into_iter().map(|command| format!("{}:{}", command.kind.as_str(), command.name)).collect()
    }

    #[test]
    fn one_list_builtins_then_templates_then_skills_and_projects_only_when_trusted() {
        let (_tmp, trusted) = resources(FILES, true);
        let names = names(&trusted);
        assert_eq!(names[..8].join(" ").matches("builtin:").count(), 8);
        assert_eq!(
            names[8..],
            [
                "template:review",
                "template:deploy",
                "skill:skill:pdf-tools",
                "skill:skill:from-pi",
                "skill:skill:reins-skill",
                "skill:skill:sub-skill",
                "skill:skill:repo-skill",
            ]
        );
        let (_tmp, untrusted) = resources(FILES, false);
        assert_eq!(self::names(&untrusted)[8..], ["template:review", "skill:skill:pdf-tools", "skill:skill:from-pi"]);
        assert_eq!(untrusted.expand("/deploy prod").unwrap(), Expanded::Unchanged);
        assert!(untrusted.expand("/skill:reins-skill").unwrap_err().contains("no skill named \"reins-skill\""));
    }

    #[test]
    fn messages_expand_builtins_are_named_and_the_rest_passes() {
        let (tmp, resources) = resources(FILES, true);
        let message = |text: &str| match resources.expand(text).unwrap() {
            Expanded::Message { text, allowed_tools } => format!("{text} {:?}", allowed_tools.tools),
            other => format!("{other:?}"),
        };
        assert_eq!(message("/review concurrency"), "Focus on concurrency. []");
        assert_eq!(message("/review"), "Focus on correctness. []");
        assert_eq!(message("/deploy a \"b c\""), "Deploy a b c now. []");
        assert_eq!(message("/compact"), "Builtin { name: \"compact\", args: \"\" }");
        assert_eq!(message("/model  openai/gpt-5 "), "Builtin { name: \"model\", args: \"openai/gpt-5\" }");
        assert_eq!(message("/usr/lib is where?"), "Unchanged");
        assert_eq!(message("plain"), "Unchanged");
        let skill = message("/skill:pdf-tools extract a.pdf").replace(&tmp.path().display().to_string(), "<tmp>");
        assert_eq!(
            skill,
            "<skill name=\"pdf-tools\" location=\"<tmp>/home/.agents/skills/pdf-tools/SKILL.md\">\nReferences are \
             relative to <tmp>/home/.agents/skills/pdf-tools.\n\nBody.\n</skill>\n\nextract a.pdf [\"read\", \"bash\"]"
        );
    }
}
