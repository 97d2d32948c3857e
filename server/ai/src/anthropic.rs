//! The Anthropic Messages API provider: one streaming `POST {base_url}/v1/messages` per model call.
//!
//! `base_url` has no version segment, as `ANTHROPIC_BASE_URL` in Anthropic's SDKs. Retries,
//! timeouts, cancellation and key redaction are the shared [`Transport`]'s; this module builds the
//! body and headers and assembles the named SSE events. Everything per model (id, endpoint,
//! output limit, prices, whether it reasons) comes with each [`Request`]'s `model`, so one
//! instance per API key serves every Anthropic model of a registry.

mod assemble;
mod request;
mod wire;

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

pub(crate) use self::assemble::Assembler;
use crate::message::{AssistantMessage, ProviderError, ProviderErrorKind};
use crate::openai::http_error;
use crate::provider::{ApiKey, EventSink, Provider, Request};
use crate::transport::{ClientOptions, Outgoing, Transport};

/// The API version this client speaks.
const API_VERSION: &str = "2023-06-01";
/// reins' [`crate::Content`] has no redacted-thinking block, so one is kept as a `Thinking` block
/// with empty text whose `signature` is this prefix followed by the block's opaque `data`; it is
/// sent back as `redacted_thinking`, as the API requires.
pub const REDACTED_THINKING_PREFIX: &str = "redacted_thinking:";

/// A Messages API client; one per API key, shared by all calls and models.
#[derive(Debug)]
pub struct Anthropic {
    transport: Transport,
}

impl Anthropic {
    pub fn new(api_key: ApiKey, options: ClientOptions) -> Self {
        Self { transport: Transport::new(api_key, options) }
    }

    /// Where a model call goes and the body it sends, as [`Provider::stream`] makes them (the
    /// headers, which carry the key, left out).
    pub fn wire_request(request: &Request) -> (String, serde_json::Value) {
        let body = serde_json::to_value(request::messages_request(request)).unwrap_or(serde_json::Value::Null);
        (url(request), body)
    }

    fn headers(&self) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(HeaderName::from_static("anthropic-version"), HeaderValue::from_static(API_VERSION));
        let api_key = self.transport.api_key();
        if !api_key.is_empty() {
            let mut value = HeaderValue::from_str(api_key.expose()).map_err(|_| {
                ProviderError::new(ProviderErrorKind::Auth, "the API key has characters an HTTP header cannot carry")
            })?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(headers)
    }
}

#[async_trait]
impl Provider for Anthropic {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        let url = url(request);
        tracing::debug!(url, model = request.model.id, messages = request.messages.len(), "messages request");
        let body = serde_json::to_vec(&request::messages_request(request));
        let assembler = Assembler::new(on_event);
        let output_limit = request.output_limit();
        let outgoing = Outgoing { url: &url, on_event, body, headers: self.headers(), http_error, output_limit };
        self.transport.call(outgoing, assembler, &request.model, cancel).await
    }
}

/// The endpoint of a model call.
fn url(request: &Request) -> String {
    format!("{}/v1/messages", request.model.base_url.trim_end_matches('/'))
}
