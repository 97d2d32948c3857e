//! The editor's own language servers as the tools' [`LanguageSource`]: an editor that runs
//! rust-analyzer or pyright for its buffers answers the `lsp` and `rename` tools' requests from
//! them (`reins lsp`'s `reins/languageServer`), so no second copy of a server runs. Where the
//! editor has no server for a file, or does not answer, the servers reins starts itself answer
//! instead. Answers are read exactly as those of reins's own servers (`answers`).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use ls_types::CallHierarchyItem;
use reins_tools::{Calls, LanguageSource, Lookup, Place, Point, RenameStep, Symbol};
use serde_json::{Value, json};

use crate::answers::{self, Texts};
use crate::connection::uri_of;
use crate::encoding::Encoding;
use crate::servers::LanguageServers;
use crate::source::{calls_method, lookup_method};

/// What one of the editor's servers answered a request.
#[derive(Debug, Clone, PartialEq)]
pub struct EditorAnswer {
    /// The server's name, for messages.
    pub server: String,
    /// How the server counts the columns of its answer.
    pub encoding: Encoding,
    /// Its result as it gave it, or its error answer's message.
    pub result: Result<Value, String>,
}

/// An editor that passes requests to the language servers it runs.
#[async_trait]
pub trait Editor: Send + Sync {
    /// Whether the editor said it answers at all.
    fn available(&self) -> bool;
    /// How the columns of the params reins sends count.
    fn encoding(&self) -> Encoding;
    /// The text of `path` as the editor has it (its buffer, else the file).
    fn text_of(&self, path: &Path) -> Option<String>;
    /// Passes `method` with `params` to a server the editor runs for `path` (for any file when
    /// `None`). `Ok(None)`: none of its servers for that file offers `method`; `Err`: the editor
    /// could not answer (a sentence why).
    async fn request(&self, path: Option<&Path>, method: &str, params: Value) -> Result<Option<EditorAnswer>, String>;
}

/// The editor's servers first, then (when given) the servers reins starts.
pub struct EditorServers {
    editor: Arc<dyn Editor>,
    started: Option<Arc<LanguageServers>>,
}

/// How a request to the editor went.
enum Reply {
    /// A server answered.
    Answer { encoding: Encoding, result: Value },
    /// A server answered with an error: the answer for the model, not a reason to ask another.
    Failed(String),
    /// No server of the editor's answered (why): the started ones may.
    Unanswered(String),
}

/// The columns of an answer of one of the editor's servers.
struct Answered<'a> {
    editor: &'a dyn Editor,
    encoding: Encoding,
}

impl Texts for Answered<'_> {
    fn encoding(&self) -> Encoding {
        self.encoding
    }

    fn text_of(&self, path: &Path) -> Option<String> {
        self.editor.text_of(path)
    }
}

impl EditorServers {
    pub fn new(editor: Arc<dyn Editor>, started: Option<Arc<LanguageServers>>) -> Self {
        Self { editor, started }
    }

    fn texts(&self, encoding: Encoding) -> Answered<'_> {
        Answered { editor: self.editor.as_ref(), encoding }
    }

    /// The params naming `at` in `path`, its column counted as the editor counts.
    fn at(&self, path: &Path, at: Point) -> Result<Value, String> {
        let text = self.editor.text_of(path).unwrap_or_default();
        let (line, character) = self.editor.encoding().position(&text, at);
        Ok(json!({
            "textDocument": {"uri": uri_of(path)?},
            "position": {"line": line, "character": character},
        }))
    }

    async fn ask(&self, path: Option<&Path>, method: &str, params: Value, what: &str) -> Reply {
        match self.editor.request(path, method, params).await {
            Ok(Some(EditorAnswer { encoding, result: Ok(result), .. })) => Reply::Answer { encoding, result },
            Ok(Some(EditorAnswer { server, result: Err(err), .. })) => {
                Reply::Failed(format!("the language server {server} answered {method} with an error: {err}"))
            }
            Ok(None) => Reply::Unanswered(match path {
                Some(path) => format!("no language server the editor runs for {} offers {what}", path.display()),
                None => format!("no language server the editor runs offers {what}"),
            }),
            Err(why) => Reply::Unanswered(why),
        }
    }

    /// The started servers, when one covers `path`; else the editor's reason is the answer.
    fn started(&self, path: Option<&Path>, why: String) -> Result<&LanguageServers, String> {
        match &self.started {
            Some(started) if path.is_none_or(|path| started.covers(path)) => Ok(started),
            _ => Err(why),
        }
    }
}

#[async_trait]
impl LanguageSource for EditorServers {
    /// The editor may run a server for any file; where it does not, the started servers' cover.
    fn covers(&self, path: &Path) -> bool {
        self.editor.available() || self.started.as_ref().is_some_and(|started| started.covers(path))
    }

    async fn lookup(&self, lookup: Lookup, path: &Path, at: Point) -> Result<Vec<Place>, String> {
        let (method, _, what) = lookup_method(lookup);
        let mut params = self.at(path, at)?;
        if lookup == Lookup::References {
            params["context"] = json!({"includeDeclaration": true});
        }
        match self.ask(Some(path), method, params, what).await {
            Reply::Answer { encoding, result } => Ok(answers::places(&self.texts(encoding), result)),
            Reply::Failed(why) => Err(why),
            Reply::Unanswered(why) => self.started(Some(path), why)?.lookup(lookup, path, at).await,
        }
    }

    async fn hover(&self, path: &Path, at: Point) -> Result<Option<String>, String> {
        let params = self.at(path, at)?;
        match self.ask(Some(path), "textDocument/hover", params, "hover").await {
            Reply::Answer { result, .. } => Ok(answers::hover_text(result)),
            Reply::Failed(why) => Err(why),
            Reply::Unanswered(why) => self.started(Some(path), why)?.hover(path, at).await,
        }
    }

    async fn document_symbols(&self, path: &Path) -> Result<Vec<Symbol>, String> {
        let params = json!({"textDocument": {"uri": uri_of(path)?}});
        match self.ask(Some(path), "textDocument/documentSymbol", params, "document symbols").await {
            Reply::Answer { encoding, result } => Ok(answers::document_symbols(&self.texts(encoding), path, result)),
            Reply::Failed(why) => Err(why),
            Reply::Unanswered(why) => self.started(Some(path), why)?.document_symbols(path).await,
        }
    }

    async fn workspace_symbols(&self, query: &str, near: Option<&Path>) -> Result<Vec<Symbol>, String> {
        match self.ask(near, "workspace/symbol", json!({"query": query}), "workspace symbols").await {
            Reply::Answer { encoding, result } => Ok(answers::workspace_symbols(&self.texts(encoding), result)),
            Reply::Failed(why) => Err(why),
            Reply::Unanswered(why) => self.started(near, why)?.workspace_symbols(query, near).await,
        }
    }

    async fn calls(&self, direction: Calls, path: &Path, at: Point) -> Result<Vec<(Symbol, Vec<Place>)>, String> {
        let params = self.at(path, at)?;
        let items = match self.ask(Some(path), "textDocument/prepareCallHierarchy", params, "call hierarchies").await {
            Reply::Answer { result, .. } => result,
            Reply::Failed(why) => return Err(why),
            Reply::Unanswered(why) => return self.started(Some(path), why)?.calls(direction, path, at).await,
        };
        let items: Vec<CallHierarchyItem> = serde_json::from_value(items).unwrap_or_default();
        let Some(item) = items.into_iter().next() else { return Ok(Vec::new()) };
        // The item goes back as the server gave it, to the server of the same file.
        match self.ask(Some(path), calls_method(direction), json!({"item": item}), "call hierarchies").await {
            Reply::Answer { encoding, result } => Ok(answers::calls(&self.texts(encoding), direction, &item, result)),
            Reply::Failed(why) | Reply::Unanswered(why) => Err(why),
        }
    }

    async fn rename(&self, path: &Path, at: Point, new_name: &str) -> Result<Vec<RenameStep>, String> {
        let params = self.at(path, at)?;
        // A server that offers no prepareRename leaves it to the rename to refuse.
        match self.ask(Some(path), "textDocument/prepareRename", params.clone(), "renaming").await {
            Reply::Answer { result, .. } if result.is_null() => {
                return Err("the language server says the symbol there cannot be renamed".to_string());
            }
            Reply::Failed(why) => return Err(why),
            Reply::Answer { .. } | Reply::Unanswered(_) => {}
        }
        let mut params = params;
        params["newName"] = json!(new_name);
        match self.ask(Some(path), "textDocument/rename", params, "renaming").await {
            Reply::Answer { encoding, result } => answers::rename_steps(&self.texts(encoding), result),
            Reply::Failed(why) => Err(why),
            Reply::Unanswered(why) => self.started(Some(path), why)?.rename(path, at, new_name).await,
        }
    }
}
