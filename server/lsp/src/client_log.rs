//! Log lines of `reins lsp` go to the client as `window/logMessage`, at the level they were logged
//! with, so the editor's log shows a warning as a warning: editors log whatever a server writes to
//! stderr as errors (Neovim's `lsp.log` says `[ERROR]` for every stderr line). Before the client
//! is connected, and whenever `REINS_LOG` is set, they go to stderr as well (see `init_tracing`).

use std::fmt;
use std::sync::OnceLock;

use tokio::sync::mpsc;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::MessageType;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Where log lines go once a client is connected.
static TO_CLIENT: OnceLock<mpsc::UnboundedSender<(MessageType, String)>> = OnceLock::new();

/// The tracing layer that sends log lines to the connected client.
pub struct ClientLog;

/// Whether log lines go to a client (`reins lsp` with its client connected).
pub fn to_client() -> bool {
    TO_CLIENT.get().is_some()
}

/// From now on, log lines go to `client` (once per process: one client per `reins lsp`).
pub fn connect(client: Client) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    if TO_CLIENT.set(tx).is_err() {
        return;
    }
    tokio::spawn(async move {
        while let Some((kind, text)) = rx.recv().await {
            client.log_message(kind, text).await;
        }
    });
}

impl<S: Subscriber> Layer<S> for ClientLog {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let Some(tx) = TO_CLIENT.get() else { return };
        // The framework traces what it sends: those would come back here as it sends them.
        if event.metadata().target().starts_with("tower_lsp_server") {
            return;
        }
        let kind = match *event.metadata().level() {
            Level::ERROR => MessageType::ERROR,
            Level::WARN => MessageType::WARNING,
            Level::INFO => MessageType::INFO,
            _ => MessageType::LOG,
        };
        let mut line = Line::default();
        event.record(&mut line);
        let _ = tx.send((kind, format!("reins: {}{}", line.message, line.fields)));
    }
}

/// An event as one line: its message, then its other fields as ` name=value`.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            name => self.fields.push_str(&format!(" {name}={value}")),
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            name => self.fields.push_str(&format!(" {name}={value:?}")),
        }
    }
}
