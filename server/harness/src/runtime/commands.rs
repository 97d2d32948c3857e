//! Slash commands in a harness: the skills and templates of its workspace (a project's only when
//! trusted), the one command list every surface shows, the message a template or skill becomes,
//! and the built-in commands carried out. Surfaces pass what the user typed and show the answer.

use std::sync::Arc;

use reins_ai::{Content, ThinkingLevel};

use super::{Harness, RunStarted, SessionId, lock};
use crate::commands::{Expanded, Locations, Resources, SlashCommand};
use crate::error::HarnessError;
use crate::export::ExportFormat;
use crate::skills::AllowedTools;

/// What a command did.
pub enum Executed {
    /// A message (typed, or a template or skill expanded) started a run.
    Started(RunStarted),
    /// A built-in command finished: what to tell the user, and the session now in use (another
    /// one after `/new` or `/fork`).
    Done { session_id: SessionId, output: String },
}

impl Harness {
    /// Where this workspace's skills and templates are looked for.
    pub fn locations(&self) -> Locations {
        let settings = self.settings();
        let cwd = self.cwd();
        Locations::new(&settings.config_dir, settings.home(), &cwd, settings.is_trusted(&cwd))
    }

    /// The skills and templates as their files are now.
    pub fn resources(&self) -> Resources {
        Resources::discover(&self.locations())
    }

    /// Every slash command: built-ins, templates, skills.
    pub fn commands(&self) -> Vec<SlashCommand> {
        self.resources().commands()
    }

    /// Carries out `text`: a built-in command, else a message (a template or skill expanded) that
    /// starts a run like [`Harness::send`].
    pub async fn execute(self: &Arc<Self>, session_id: &str, text: &str) -> Result<Executed, HarnessError> {
        match self.resources().expand(text).map_err(HarnessError::InvalidArgument)? {
            Expanded::Builtin { name, args } => self.builtin(session_id, &name, &args).await,
            _ => self.send(session_id, vec![Content::text(text)]).map(Executed::Started),
        }
    }

    /// The content a run starts with: a template or skill command expanded, its pre-approved
    /// tools put in force for the run (none for any other message).
    pub(super) fn expand_message(&self, session_id: &str, content: &mut [Content]) -> Result<(), HarnessError> {
        let mut allowed = AllowedTools::default();
        if let Some(Content::Text { text }) = content.first_mut() {
            match self.resources().expand(text).map_err(HarnessError::InvalidArgument)? {
                Expanded::Builtin { name, .. } => {
                    return Err(HarnessError::InvalidArgument(format!(
                        "/{name} is a command, not a message; run it as a command (the chat's `/` commands, `reins \
                         run \"/{name}\"`)"
                    )));
                }
                Expanded::Message { text: expanded, allowed_tools } => {
                    *text = expanded;
                    allowed = allowed_tools;
                }
                Expanded::Unchanged => {}
            }
        }
        let session = self.session(session_id)?;
        *lock(&session.skill_allowed) = allowed;
        Ok(())
    }

    /// A queued message (steering, follow-up) with a template or skill command expanded.
    pub(super) fn expand_queued(&self, text: String) -> Result<String, HarnessError> {
        match self.resources().expand(&text).map_err(HarnessError::InvalidArgument)? {
            Expanded::Message { text, .. } => Ok(text),
            Expanded::Builtin { name, .. } => {
                Err(HarnessError::InvalidArgument(format!("/{name} cannot be queued while a run goes on")))
            }
            Expanded::Unchanged => Ok(text),
        }
    }

    async fn builtin(&self, session_id: &str, name: &str, args: &str) -> Result<Executed, HarnessError> {
        let done = |output: String| Ok(Executed::Done { session_id: session_id.to_string(), output });
        match name {
            "compact" => {
                let compacted = self.compact(session_id).await?;
                done(format!(
                    "Compacted the conversation: about {} tokens before, {} after.",
                    compacted.tokens_before, compacted.tokens_after
                ))
            }
            "model" => {
                let model = match args {
                    "" => self.session(session_id)?.agent.model(),
                    id => self.set_model(session_id, id)?,
                };
                done(format!("Model: {}/{}", model.provider, model.id))
            }
            "thinking" => match args {
                "" => match self.thinking(session_id)? {
                    Some(level) => done(format!("Thinking: {}", level.as_str())),
                    None => done("Thinking: the provider's default".into()),
                },
                level => {
                    let level = ThinkingLevel::parse(level).ok_or_else(|| {
                        HarnessError::InvalidArgument(format!("expected one of {}", ThinkingLevel::names()))
                    })?;
                    let set = self.set_thinking(session_id, level)?;
                    let note = set.note.map(|note| format!(" ({note})")).unwrap_or_default();
                    done(format!("Thinking: {}{note}", set.level.as_str()))
                }
            },
            "tools" => {
                let offered = match args {
                    "" => self
                        .session(session_id)?
                        .toolbox
                        .offered_builtin()
                        .iter()
                        .map(|t| t.name().to_string())
                        .collect(),
                    list => {
                        let items: Vec<&str> = list.split(',').map(str::trim).collect();
                        self.set_tools(session_id, &items)?.offered
                    }
                };
                done(format!("Tools: {}", offered.join(", ")))
            }
            "new" => {
                let new = self.new_session(None, None)?;
                Ok(Executed::Done { output: format!("Started session {new}."), session_id: new })
            }
            "fork" => {
                let entry = match args {
                    "" => self.tree(session_id)?.leaf.ok_or_else(|| {
                        HarnessError::InvalidArgument("the session is empty: there is nothing to fork".into())
                    })?,
                    entry => entry.to_string(),
                };
                let landing = self.landing(session_id, &entry)?;
                let forked = self.fork(session_id, &landing.entry_id)?;
                Ok(Executed::Done { output: format!("Forked into session {forked}."), session_id: forked })
            }
            "tree" => done(render_tree(&self.tree(session_id)?)),
            "export" => {
                let path = self.export_to(session_id, args)?;
                done(format!("Exported the session to {}", path.display()))
            }
            other => Err(HarnessError::InvalidArgument(format!("/{other} is not a command"))),
        }
    }
}

impl Harness {
    /// The session's branch, root to its leaf (or to `entry`), as a page.
    pub fn export(&self, session_id: &str, entry: Option<&str>, format: ExportFormat) -> Result<String, HarnessError> {
        let messages = match entry {
            None => self.messages(session_id)?,
            Some(entry) => {
                let session = self.session(session_id)?;
                let file = lock(session.file()?);
                file.tree().context_for(entry).map_err(super::session_error)?.messages
            }
        };
        Ok(crate::export::render(&format!("reins session {session_id}"), &messages, format))
    }

    /// `/export [path]`: the page written inside the workspace (default
    /// `reins-session-ID.html`), in the format its extension names.
    fn export_to(&self, session_id: &str, path: &str) -> Result<std::path::PathBuf, HarnessError> {
        let short: String = session_id.chars().take(8).collect();
        let path = if path.is_empty() { format!("reins-session-{short}.html") } else { path.to_string() };
        let extension = std::path::Path::new(&path).extension().and_then(|ext| ext.to_str()).unwrap_or("");
        let format = ExportFormat::parse(extension)
            .ok_or_else(|| HarnessError::InvalidArgument(format!("{path}: export to a .html or .md file")))?;
        let target = self
            .options
            .workspace
            .resolve_writable(&path)
            .map_err(|err| HarnessError::InvalidArgument(err.to_string()))?;
        let page = self.export(session_id, None, format)?;
        std::fs::write(&target, page)
            .map_err(|err| HarnessError::InvalidArgument(format!("cannot write {}: {err}", target.display())))?;
        Ok(target)
    }
}

/// The tree as indented lines, the leaf marked: `* e3 user: fix the bug`.
fn render_tree(view: &crate::sessions::SessionTreeView) -> String {
    let mut out = String::new();
    let mut depth: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for node in &view.nodes {
        let level = node.parent_id.as_deref().and_then(|parent| depth.get(parent)).map_or(0, |d| d + 1);
        depth.insert(&node.id, level);
        let mark = if view.leaf.as_deref() == Some(node.id.as_str()) { "*" } else { " " };
        let who = node.role.as_deref().unwrap_or(node.kind);
        let label = node.label.as_deref().map(|label| format!(" [{label}]")).unwrap_or_default();
        out.push_str(&format!(
            "{mark} {}{} {who}{label}: {}\n",
            "  ".repeat(level.min(40)),
            node.id,
            reins_ai::visible_line(&node.preview)
        ));
    }
    if out.is_empty() { "The session is empty.".into() } else { out.trim_end().to_string() }
}
