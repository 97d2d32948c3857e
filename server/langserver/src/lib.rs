//! The client side of the Language Server Protocol: the language servers reins starts itself
//! (`reins run`, `reins acp`, and editors that do not offer their own) and the editor's own
//! (reached through the editor), as the source of the `lsp` and `rename` tools, and of
//! after-edit diagnostics.
//!
//! A server is started on the first file of its language, one per project root inside the
//! workspace, and stopped with reins (its whole process group, even when reins is killed). The
//! wire is `reins-jsonrpc`'s framing and `ls-types`' shapes: a language server is trusted no more
//! than a client, so its frames go through the same reader, and what it answers is read
//! leniently (anything malformed is left out).

mod answers;
mod config;
mod connection;
mod editor;
mod encoding;
mod servers;
mod source;

pub use answers::disk_text;
pub use config::{ServerConfig, language_id, on_path, ready_made, root_of};
pub use editor::{Editor, EditorAnswer, EditorServers};
pub use encoding::Encoding;
pub use servers::{LanguageServers, REQUEST_TIMEOUT};
