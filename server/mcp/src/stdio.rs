//! JSON-RPC lines over a child's stdin/stdout, tolerant of what servers get wrong.
//!
//! rmcp's own line transport ends the connection at the first line it cannot read: one stray
//! `console.log` on a server's stdout would lose every call. This one logs such a line and reads
//! on, and a line too long to hold (over [`MAX_LINE`]) is dropped the same way.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest message read from a server, in bytes.
pub(crate) const MAX_LINE: usize = 64 * 1024 * 1024;

pub(crate) struct LineTransport<R, W> {
    server: Arc<str>,
    reader: BufReader<R>,
    /// `None` once closed: the server sees its stdin end.
    writer: Arc<Mutex<Option<W>>>,
    max_line: usize,
}

impl<R: AsyncRead + Unpin, W> LineTransport<R, W> {
    pub(crate) fn new(server: &str, reader: R, writer: W) -> Self {
        Self::with_max_line(server, reader, writer, MAX_LINE)
    }

    fn with_max_line(server: &str, reader: R, writer: W, max_line: usize) -> Self {
        Self {
            server: server.into(),
            reader: BufReader::new(reader),
            writer: Arc::new(Mutex::new(Some(writer))),
            max_line,
        }
    }

    /// The next line without its newline; `None` at the end of the stream. A line longer than
    /// `max_line` is skipped (`Some(Err(length))`).
    async fn next_line(&mut self) -> Option<Result<Vec<u8>, usize>> {
        let mut line = Vec::new();
        let mut length = 0;
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(err) => {
                    tracing::debug!(server = %self.server, "reading the server's stdout failed: {err}");
                    return None;
                }
            };
            if available.is_empty() {
                // The end of the stream: a last line without a newline still counts.
                if length == 0 {
                    return None;
                }
                return Some(if length > self.max_line { Err(length) } else { Ok(line) });
            }
            let (chunk, done) = match available.iter().position(|&byte| byte == b'\n') {
                Some(at) => (&available[..at], Some(at + 1)),
                None => (available, None),
            };
            length += chunk.len();
            if length <= self.max_line {
                line.extend_from_slice(chunk);
            } else {
                line = Vec::new();
            }
            let consumed = done.unwrap_or(available.len());
            self.reader.consume(consumed);
            if done.is_some() {
                return Some(if length > self.max_line { Err(length) } else { Ok(line) });
            }
        }
    }
}

impl<R, W> Transport<RoleClient> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed"));
            };
            writer.write_all(&line).await?;
            writer.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = match self.next_line().await? {
                Ok(line) => line,
                Err(length) => {
                    tracing::warn!(server = %self.server, "MCP server sent a message of {length} bytes, over the limit of {} bytes; it was dropped", self.max_line);
                    continue;
                }
            };
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice(line) {
                Ok(message) => return Some(message),
                Err(err) => {
                    let text = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
                    tracing::warn!(server = %self.server, "MCP server wrote a line to stdout that is not a JSON-RPC message ({err}); ignored: {text:?}");
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut writer) = self.writer.lock().await.take() {
            let _ = writer.shutdown().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ServerJsonRpcMessage;
    use tokio::io::AsyncWriteExt;

    use super::*;

    async fn received(input: &[u8], max_line: usize) -> Vec<String> {
        let (mut server_side, client_side) = tokio::io::duplex(1 << 16);
        server_side.write_all(input).await.unwrap();
        drop(server_side);
        let mut transport = LineTransport::with_max_line("test", client_side, tokio::io::sink(), max_line);
        let mut out = Vec::new();
        while let Some(message) = Transport::<RoleClient>::receive(&mut transport).await {
            let message: ServerJsonRpcMessage = message;
            out.push(serde_json::to_string(&message).unwrap());
        }
        out
    }

    #[tokio::test]
    async fn junk_lines_are_skipped_and_reading_goes_on() {
        let input = b"Server starting on stdout, oops\n\
            {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\
            \n\
            {\"jsonrpc\":\"2.0\",\"id\":\n\
            \xff\xfe not utf-8\n\
            {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
        assert_eq!(
            received(input, MAX_LINE).await,
            [
                r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
            ]
        );
    }

    #[tokio::test]
    async fn an_overlong_line_is_dropped() {
        let long = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"x\":\"{}\"}}}}\n", "a".repeat(100));
        let input = format!("{long}{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{}}}}\n");
        assert_eq!(received(input.as_bytes(), 64).await, [r#"{"jsonrpc":"2.0","id":2,"result":{}}"#]);
    }
}
