//! The OpenAI-compatible Chat Completions provider (OpenAI, DeepSeek, Ollama, llama.cpp, vLLM,
//! OpenRouter): one streaming `POST {base_url}/chat/completions` per model call.
//!
//! Retries, timeouts, cancellation and key redaction are the shared [`Transport`]'s; this module
//! builds the body and the `Authorization` header and assembles the chunks.

mod assemble;
mod errors;
mod request;
mod wire;

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio_util::sync::CancellationToken;

pub(crate) use self::assemble::Assembler;
pub(crate) use self::errors::http_error;
use self::request::Encoded;
use crate::message::{AssistantMessage, ProviderError, ProviderErrorKind};
use crate::provider::{ApiKey, EventSink, Provider, Request};
use crate::transport::{ClientOptions, Outgoing, Transport};

/// A Chat Completions client; one per API key, shared by all calls.
#[derive(Debug)]
pub struct OpenAiCompatible {
    transport: Transport,
    /// The last call's encoded messages, which the next call of the same conversation sends
    /// again. One conversation's: calls of others running at once only miss it.
    encoded: Mutex<Encoded>,
}

impl OpenAiCompatible {
    pub fn new(api_key: ApiKey, options: ClientOptions) -> Self {
        Self { transport: Transport::new(api_key, options), encoded: Mutex::default() }
    }

    /// Where a model call goes and the body it sends, as [`Provider::stream`] makes them (the
    /// headers, which carry the key, left out): what a user debugging a prompt wants to see.
    pub fn wire_request(request: &Request) -> (String, serde_json::Value) {
        let body = request::chat_body(request, &mut Encoded::default())
            .and_then(|body| serde_json::from_slice(&body))
            .unwrap_or(serde_json::Value::Null);
        (url(request), body)
    }

    /// [`request::chat_body`] with the last call's parts. They are taken out while this call
    /// encodes, so calls at once never wait for each other.
    fn body(&self, request: &Request) -> serde_json::Result<Vec<u8>> {
        let lock = || self.encoded.lock().unwrap_or_else(PoisonError::into_inner);
        let mut encoded = std::mem::take(&mut *lock());
        let body = request::chat_body(request, &mut encoded);
        *lock() = encoded;
        body
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let api_key = self.transport.api_key();
        if !api_key.is_empty() {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", api_key.expose())).map_err(|_| {
                ProviderError::new(ProviderErrorKind::Auth, "the API key has characters an HTTP header cannot carry")
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }
}

#[async_trait]
impl Provider for OpenAiCompatible {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        let url = url(request);
        tracing::debug!(url, model = request.model.id, messages = request.messages.len(), "chat completions request");
        let body = self.body(request);
        let assembler = Assembler::new(on_event);
        let output_limit = request.output_limit();
        let outgoing = Outgoing { url: &url, on_event, body, headers: self.headers(), http_error, output_limit };
        self.transport.call(outgoing, assembler, &request.model, cancel).await
    }
}

/// The endpoint of a model call.
fn url(request: &Request) -> String {
    format!("{}/chat/completions", request.model.base_url.trim_end_matches('/'))
}
