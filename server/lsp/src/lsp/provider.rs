//! The provider behind every session of the server: the harness's [`Router`] (each request goes
//! to its model's provider, with that provider's key), swapped for a new one when the client's
//! settings change. Each call reads the router in force, so new keys and providers apply from the
//! next model call; a call under way keeps the router it started with.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use reins_ai::{AssistantMessage, ClientOptions, EventSink, Provider, Request};
use reins_harness::{Router, Settings};
use tokio_util::sync::CancellationToken;

pub struct LiveRouter {
    current: RwLock<Arc<Router>>,
}

impl LiveRouter {
    pub fn new(settings: &Settings) -> Self {
        Self { current: RwLock::new(Arc::new(Self::build(settings))) }
    }

    /// Routes the next model calls by `settings`.
    pub fn replace(&self, settings: &Settings) {
        let next = Arc::new(Self::build(settings));
        *self.current.write().unwrap_or_else(|poison| poison.into_inner()) = next;
    }

    fn build(settings: &Settings) -> Router {
        Router::new(settings.clone(), ClientOptions::default())
    }
}

#[async_trait]
impl Provider for LiveRouter {
    async fn stream(&self, request: &Request, on_event: EventSink<'_>, cancel: &CancellationToken) -> AssistantMessage {
        let router = self.current.read().unwrap_or_else(|poison| poison.into_inner()).clone();
        router.stream(request, on_event, cancel).await
    }
}
