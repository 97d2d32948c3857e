//! The provider of a harness: routes each request to a client for its model's provider — the
//! Anthropic client for `api = "anthropic"`, the OpenAI-compatible one for the rest — each with
//! that provider's own key. Switching a session's model therefore switches the client at the
//! next turn with nothing else to do. [`LiveRouter`] swaps the router when the settings change.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use reins_ai::{
    Anthropic, AssistantMessage, ClientOptions, EventSink, OpenAiCompatible, Provider, ProviderError,
    ProviderErrorKind, Request, StopReason, now_ms,
};
use tokio_util::sync::CancellationToken;

use reins_settings::Api;
use reins_settings::Settings;

pub struct Router {
    settings: Settings,
    options: ClientOptions,
    /// One client per provider name, made on first use (that is when a key command runs).
    clients: tokio::sync::Mutex<HashMap<String, Arc<dyn Provider>>>,
}

impl Router {
    pub fn new(settings: Settings, options: ClientOptions) -> Self {
        Self { settings, options, clients: tokio::sync::Mutex::new(HashMap::new()) }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    async fn client(&self, provider: &str) -> Result<Arc<dyn Provider>, String> {
        let mut clients = self.clients.lock().await;
        if let Some(client) = clients.get(provider) {
            return Ok(client.clone());
        }
        let settings = self.settings.clone();
        let name = provider.to_string();
        // A key command may take seconds; it must not hold up the runtime's thread.
        let key = tokio::task::spawn_blocking(move || settings.api_key_for(&name))
            .await
            .map_err(|error| format!("looking up the API key for {provider} failed: {error}"))??;
        let api = self.settings.registry.provider(provider).map_or(Api::OpenAi, |info| info.api);
        let client: Arc<dyn Provider> = match api {
            Api::Anthropic => Arc::new(Anthropic::new(key, self.options.clone())),
            Api::OpenAi => Arc::new(OpenAiCompatible::new(key, self.options.clone())),
        };
        tracing::debug!(provider, ?api, "new provider client");
        clients.insert(provider.to_string(), client.clone());
        Ok(client)
    }
}

#[async_trait]
impl Provider for Router {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        match self.client(&request.model.provider).await {
            Ok(client) => client.stream(request, on_event, cancel).await,
            Err(message) => AssistantMessage {
                provider: request.model.provider.clone(),
                model: request.model.id.clone(),
                stop_reason: StopReason::Error,
                error: Some(ProviderError::new(ProviderErrorKind::Auth, message)),
                timestamp: now_ms(),
                ..AssistantMessage::default()
            },
        }
    }
}

/// The router of the settings in force: each call reads the router in force, so new keys and
/// providers apply from the next model call; a call under way keeps the router it started with.
pub(crate) struct LiveRouter {
    current: RwLock<Arc<Router>>,
}

impl LiveRouter {
    pub fn new(settings: &Settings) -> Self {
        Self { current: RwLock::new(Arc::new(Router::new(settings.clone(), settings.client_options()))) }
    }

    /// Routes the next model calls by `settings`.
    pub fn replace(&self, settings: &Settings) {
        let next = Arc::new(Router::new(settings.clone(), settings.client_options()));
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = next;
    }
}

#[async_trait]
impl Provider for LiveRouter {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        let router = self.current.read().unwrap_or_else(PoisonError::into_inner).clone();
        router.stream(request, on_event, cancel).await
    }
}
