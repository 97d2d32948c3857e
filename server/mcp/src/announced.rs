//! A transport that notes `notifications/tools/list_changed` the moment it reads it.
//!
//! rmcp hands each notification to the handler on a task of its own, so a call's answer, read
//! after the notification, could reach the caller first: the next model request then went out
//! with the old list, and the model's call of the tool just announced was refused as unknown.
//! Noted here, in the order the server sent them, the change is seen by whoever reads the
//! answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, JsonRpcNotification, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

pub(crate) struct Announced<T> {
    inner: T,
    /// Set when the server says its tools changed (the handler's flag).
    tools_changed: Arc<AtomicBool>,
}

impl<T> Announced<T> {
    pub(crate) fn new(inner: T, tools_changed: Arc<AtomicBool>) -> Self {
        Self { inner, tools_changed }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Announced<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ToolListChangedNotification(_),
            ..
        }) = &message
        {
            self.tools_changed.store(true, Ordering::SeqCst);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
