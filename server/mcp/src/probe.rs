//! Whether a stdio server speaks protocol 2026-07-28, asked before rmcp's handshake begins.
//!
//! From 2026-07-28 a client asks `server/discover` first, and an older server answers it with an
//! error, after which the client uses `initialize`. rmcp's automatic lifecycle waits 10 s for the
//! answer and then sends `initialize`; a server that starts slower than that (a Python server on
//! a loaded machine) answers the discover after the fallback began, and rmcp fails the handshake
//! on the answer it did not expect. Asked here, the question gets half the server's startup
//! timeout, a late answer to it is dropped, and the handshake then takes the lifecycle the
//! answer says.

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{
    ClientConfig, ClientJsonRpcMessage, ClientRequest, DiscoverRequest, DiscoverRequestParams, JsonRpcMessage,
    ProtocolVersion, RequestId, RequestMetaObject,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

/// Which handshake a server takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// It answered `server/discover`: 2026-07-28 or later.
    Discover,
    /// It refused `server/discover` (or did not answer it in time): `initialize`.
    Initialize,
}

/// A transport whose first request is reins's own `server/discover`, and which drops the answer
/// to it whenever that comes.
pub(crate) struct Probe<T> {
    inner: T,
    id: RequestId,
}

impl<T: Transport<RoleClient>> Probe<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self { inner, id: RequestId::String(Arc::from("reins-discover")) }
    }

    /// Asks the server `server/discover` and waits for its answer (the caller bounds the wait).
    /// An error is a reason the server is not usable: it closed the connection.
    pub(crate) async fn era(&mut self, client: &ClientConfig) -> Result<Era, String> {
        let meta = RequestMetaObject::with_client_context(
            ProtocolVersion::LATEST,
            client.client_info.clone(),
            client.capabilities.clone(),
        );
        let mut discover = DiscoverRequest::new(DiscoverRequestParams {});
        discover.extensions.insert(meta);
        let request = ClientJsonRpcMessage::request(ClientRequest::DiscoverRequest(discover), self.id.clone());
        self.inner.send(request).await.map_err(|err| format!("cannot write to the server: {err}"))?;
        loop {
            match self.inner.receive().await {
                None => return Err("the connection closed before the server answered".to_string()),
                Some(JsonRpcMessage::Response(response)) if response.id == self.id => return Ok(Era::Discover),
                // The server could not read the request, or does not know the method.
                Some(JsonRpcMessage::Error(error)) if error.id.as_ref().is_none_or(|id| *id == self.id) => {
                    return Ok(Era::Initialize);
                }
                Some(other) => tracing::debug!("MCP server sent a message before its handshake; ignored: {other:?}"),
            }
        }
    }

    fn answers_probe(&self, message: &RxJsonRpcMessage<RoleClient>) -> bool {
        match message {
            JsonRpcMessage::Response(response) => response.id == self.id,
            JsonRpcMessage::Error(error) => error.id.as_ref() == Some(&self.id),
            _ => false,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Probe<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            if !self.answers_probe(&message) {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
