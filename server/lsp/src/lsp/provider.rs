//! The provider behind every session of the server, swappable when the client changes its
//! settings: a new endpoint or key applies from the next model call of every session.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use reins_ai::{AssistantMessage, ClientOptions, EventSink, OpenAiCompatible, Provider, Request};
use reins_harness::Settings;
use tokio_util::sync::CancellationToken;

struct Current {
    provider: Arc<OpenAiCompatible>,
    base_url: String,
}

pub struct SwitchableProvider {
    current: RwLock<Current>,
}

impl SwitchableProvider {
    pub fn new(settings: &Settings) -> Self {
        Self { current: RwLock::new(Self::build(settings)) }
    }

    pub fn switch(&self, settings: &Settings) {
        let next = Self::build(settings);
        *self.current.write().unwrap_or_else(|poison| poison.into_inner()) = next;
    }

    fn build(settings: &Settings) -> Current {
        Current {
            provider: Arc::new(OpenAiCompatible::new(settings.api_key.clone(), ClientOptions::default())),
            base_url: settings.base_url.clone(),
        }
    }
}

#[async_trait]
impl Provider for SwitchableProvider {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        let (provider, base_url) = {
            let current = self.current.read().unwrap_or_else(|poison| poison.into_inner());
            (current.provider.clone(), current.base_url.clone())
        };
        if request.model.base_url == base_url {
            return provider.stream(request, on_event, cancel).await;
        }
        // Sessions resolved their model before the endpoint changed; the endpoint in force wins.
        let mut request = request.clone();
        request.model.base_url = base_url;
        provider.stream(&request, on_event, cancel).await
    }
}
