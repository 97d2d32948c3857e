//! `read` that also reads the skills' folders. The system prompt tells the model where each skill
//! lives, and a user's skills live outside the workspace (`~/.agents/skills`, reins's config
//! folder), where `read` may not go. This wrapper sends a path inside a skill's folder to a
//! second `read` confined to those folders — read-only, symlinks resolved, nothing else opened —
//! and every other path to the workspace's own `read`.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use reins_agent::{Prepared, Proposal, Tool, ToolContext, ToolError, ToolOutput};
use reins_ai::ToolSpec;
use reins_tools::{FsWorkspace, ReadTool};
use serde_json::Value;

pub(crate) struct SkillRead {
    workspace_read: Arc<dyn Tool>,
    skills_read: Arc<dyn Tool>,
    /// The skills' folders, canonical.
    dirs: Vec<PathBuf>,
    /// The workspace's roots, canonical: a skill inside them is read as any workspace file.
    roots: Vec<PathBuf>,
}

/// The prepared call, and which `read` prepared it.
struct Routed {
    to_skills: bool,
    input: Box<dyn Any + Send + Sync>,
}

/// `tools` with `read` able to read the files of the skills in `skill_dirs` too; as they were
/// when there are none outside the workspace.
pub(crate) fn with_skill_read(
    tools: Vec<Arc<dyn Tool>>,
    skill_dirs: &[PathBuf],
    roots: &[PathBuf],
) -> Vec<Arc<dyn Tool>> {
    let roots: Vec<PathBuf> = roots.iter().map(|root| root.canonicalize().unwrap_or_else(|_| root.clone())).collect();
    let mut dirs: Vec<PathBuf> = skill_dirs
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .filter(|dir| !roots.iter().any(|root| dir.starts_with(root)))
        .collect();
    dirs.sort();
    dirs.dedup();
    let Ok(skills_workspace) = FsWorkspace::new(dirs.clone()) else { return tools };
    let skills_read: Arc<dyn Tool> = Arc::new(ReadTool::new(Arc::new(skills_workspace)));
    tools
        .into_iter()
        .map(|tool| match tool.name() {
            "read" => Arc::new(SkillRead {
                workspace_read: tool,
                skills_read: skills_read.clone(),
                dirs: dirs.clone(),
                roots: roots.clone(),
            }) as Arc<dyn Tool>,
            _ => tool,
        })
        .collect()
}

impl SkillRead {
    /// Whether `arguments` name a file in a skill's folder outside the workspace.
    fn for_skills(&self, arguments: &Value) -> bool {
        let Some(path) = arguments.get("path").and_then(Value::as_str) else { return false };
        let path = Path::new(path);
        if !path.is_absolute() {
            return false;
        }
        let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        self.dirs.iter().any(|dir| real.starts_with(dir)) && !self.roots.iter().any(|root| real.starts_with(root))
    }
}

#[async_trait]
impl Tool for SkillRead {
    fn spec(&self) -> ToolSpec {
        self.workspace_read.spec()
    }

    fn name(&self) -> &str {
        self.workspace_read.name()
    }

    fn read_only(&self) -> bool {
        true
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        self.workspace_read.timeout()
    }

    async fn prepare(&self, arguments: &Value) -> Result<Prepared, ToolError> {
        let to_skills = self.for_skills(arguments);
        let tool = if to_skills { &self.skills_read } else { &self.workspace_read };
        let prepared = tool.prepare(arguments).await?;
        Ok(Prepared { proposal: prepared.proposal, input: Box::new(Routed { to_skills, input: prepared.input }) })
    }

    async fn execute(
        &self,
        prepared: Prepared,
        proposal: Option<Proposal>,
        cx: ToolContext<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let Ok(routed) = prepared.input.downcast::<Routed>() else {
            return Err(ToolError::new("internal error: a read call was not prepared by this tool"));
        };
        let tool = if routed.to_skills { &self.skills_read } else { &self.workspace_read };
        tool.execute(Prepared { proposal: prepared.proposal, input: routed.input }, proposal, cx).await
    }
}
