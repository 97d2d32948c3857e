//! The language servers of one workspace: each started on the first file of its language, one
//! per project root, kept while reins runs and stopped with it. A server that cannot start is
//! not tried again for that root (its error is the answer); one that crashed is started again at
//! the next question.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use reins_tools::Sandbox;
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::config::{ServerConfig, language_id, root_of};
use crate::connection::Connection;

/// How long one request may take before the tool says the server hangs.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a question waits for a server's work in progress (indexing) to end.
const BUSY_WAIT: Duration = Duration::from_secs(10);

type Slot = Arc<OnceCell<Result<Arc<Connection>, String>>>;

pub struct LanguageServers {
    configs: Vec<(ServerConfig, GlobSet)>,
    /// Absolute, canonical workspace roots: servers run in them and answers are about them.
    roots: Vec<PathBuf>,
    running: Mutex<HashMap<(String, PathBuf), Slot>>,
    /// The whole environment of every server it starts: the caller's tool environment, without
    /// the keys reins holds.
    env: Arc<Vec<(OsString, OsString)>>,
    /// What the servers may touch: bash's sandbox (write only in the roots and the temporary
    /// directory, `.git` and reins's configuration read-only).
    sandbox: Arc<Sandbox>,
}

impl LanguageServers {
    /// The servers of `configs` for a workspace of `roots`; none starts yet. A config whose
    /// patterns do not parse is left out with a warning. `env` is all its servers see, and they
    /// run confined to `sandbox`.
    pub fn new(
        configs: Vec<ServerConfig>,
        roots: Vec<PathBuf>,
        env: Vec<(OsString, OsString)>,
        sandbox: Sandbox,
    ) -> Self {
        let configs = configs
            .into_iter()
            .filter_map(|config| {
                let mut set = GlobSetBuilder::new();
                for pattern in &config.file_patterns {
                    match Glob::new(pattern) {
                        Ok(glob) => {
                            set.add(glob);
                        }
                        Err(err) => {
                            tracing::warn!("lsp_servers.{}: `{pattern}` is not a glob: {err}", config.name);
                            return None;
                        }
                    }
                }
                Some((config.clone(), set.build().ok()?))
            })
            .collect();
        Self { configs, roots, running: Mutex::default(), env: Arc::new(env), sandbox: Arc::new(sandbox) }
    }

    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    /// The config for `path` (absolute) and the workspace root holding it.
    fn config_of(&self, path: &Path) -> Option<(&ServerConfig, &PathBuf)> {
        let root = self.roots.iter().find(|root| path.starts_with(root))?;
        let name = path.file_name()?;
        let relative = path.strip_prefix(root).ok()?;
        self.configs
            .iter()
            .find(|(_, globs)| globs.is_match(name) || globs.is_match(relative))
            .map(|(config, _)| (config, root))
    }

    /// Whether the workspace has a file some server covers (the first files of a walk that
    /// respects `.gitignore`): where it has none, the tools would only cost request bytes.
    pub fn covers_some_file(&self) -> bool {
        const MAX_ENTRIES: usize = 5000;
        self.roots.iter().any(|root| {
            ignore::WalkBuilder::new(root)
                .max_depth(Some(8))
                .build()
                .take(MAX_ENTRIES)
                .flatten()
                .any(|entry| entry.file_type().is_some_and(|kind| kind.is_file()) && self.covers(entry.path()))
        })
    }

    /// Whether a server is configured for `path`.
    pub fn covers(&self, path: &Path) -> bool {
        self.config_of(path).is_some()
    }

    /// The running server for `path`, started first if need be, with the file synced to it
    /// (and every file it has open that changed on disk). Answers whether the file was opened
    /// just now: a server's first answers about a file may come before it loaded the project.
    pub(crate) async fn for_file(&self, path: &Path) -> Result<(Arc<Connection>, i32, bool), String> {
        let Some((config, workspace)) = self.config_of(path) else {
            return Err(format!("no language server is configured for {}", path.display()));
        };
        let root = root_of(path, workspace, &config.root_markers);
        let connection = self.connection(config, &root).await?;
        connection.resync_open();
        let opened = !connection.is_open(path);
        let version = connection.sync(path, language_id(path))?;
        Ok((connection, version, opened))
    }

    /// `config`'s server in `root`: the running one, or one started now (in a task of its own,
    /// so that a caller who stops waiting does not stop the start).
    async fn connection(&self, config: &ServerConfig, root: &Path) -> Result<Arc<Connection>, String> {
        let key = (config.name.clone(), root.to_path_buf());
        let slot = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            let slot = running.entry(key.clone()).or_default();
            // A server that stopped since is started again.
            if slot.get().is_some_and(|started| started.as_ref().is_ok_and(|connection| connection.ended().is_some())) {
                *slot = Slot::default();
            }
            slot.clone()
        };
        if let Some(started) = slot.get() {
            return started.clone();
        }
        let (config, root, env) = (config.clone(), root.to_path_buf(), self.env.clone());
        let (sandbox, roots) = (self.sandbox.clone(), self.roots.clone());
        let starting = slot.clone();
        let start = tokio::spawn(async move {
            let start = || async { Connection::start(&config, &root, &env, (&sandbox, &roots)).await };
            starting.get_or_init(start).await.clone()
        });
        start.await.unwrap_or_else(|err| Err(format!("the language server's start failed: {err}")))
    }

    /// The servers running now.
    pub(crate) fn running(&self) -> Vec<Arc<Connection>> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.values().filter_map(|slot| slot.get().and_then(|started| started.clone().ok())).collect()
    }

    /// Asks `method` of a server once it has finished the work it reports in progress (at most
    /// [`BUSY_WAIT`]); an empty answer about a file opened just now is asked again once the
    /// server is idle, since servers answer before they loaded the project.
    pub(crate) async fn ask(
        &self,
        connection: &Connection,
        method: &str,
        params: Value,
        opened: bool,
    ) -> Result<Value, String> {
        connection.idle(BUSY_WAIT).await;
        let answer = self.request(connection, method, params.clone()).await?;
        let empty = answer.is_null() || answer.as_array().is_some_and(Vec::is_empty);
        if !(empty && opened) {
            return Ok(answer);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        connection.idle(BUSY_WAIT).await;
        self.request(connection, method, params).await
    }

    /// Sends `method` and waits at most [`REQUEST_TIMEOUT`].
    pub(crate) async fn request(&self, connection: &Connection, method: &str, params: Value) -> Result<Value, String> {
        connection.request_within(method, params, REQUEST_TIMEOUT).await
    }

    /// Stops every server (politely, then their process groups). Call before exiting; dropping
    /// the servers kills them too, without waiting.
    pub async fn stop(&self) {
        let all: Vec<Slot> = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            running.drain().map(|(_, slot)| slot).collect()
        };
        for slot in all {
            if let Some(Ok(connection)) = slot.get() {
                connection.stop().await;
            }
        }
    }
}
