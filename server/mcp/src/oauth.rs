//! OAuth for streamable HTTP servers, on rmcp's auth support: the server's token file as rmcp's
//! credential store, the client that puts a stored token on each request (refreshing it when it
//! has expired, and once more when the server refuses it), and how a refusal reads for the user.
//!
//! The token never leaves this module and rmcp but as an `Authorization` header: no message,
//! log line, listing or tool result carries it.

use std::error::Error;

use async_trait::async_trait;
use rmcp::service::ClientInitializeError;
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::token_file::TokenFile;

/// rmcp's credential store, kept in the server's token file.
pub(crate) struct FileStore(pub(crate) TokenFile);

fn store_error(message: String) -> AuthError {
    AuthError::CredentialStoreError(message)
}

#[async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(credentials) = self.0.read().map_err(store_error)? else { return Ok(None) };
        serde_json::from_value(credentials)
            .map(Some)
            .map_err(|err| store_error(format!("{} holds no usable login: {err}", self.0.path().display())))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let value = serde_json::to_value(&credentials).map_err(|err| store_error(err.to_string()))?;
        self.0.write(value).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.remove().map(drop).map_err(store_error)
    }

    /// Two reins processes (an editor's and a terminal's) may refresh at once; refresh tokens
    /// rotate, so the second would spend a token the first already spent.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let file = self.0.clone();
        let lock = tokio::task::spawn_blocking(move || file.lock())
            .await
            .map_err(|err| store_error(err.to_string()))?
            .map_err(store_error)?;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

/// The advice a server that wants a login gets, wherever it is shown.
pub fn login_advice(server: &str) -> String {
    format!("it needs you to log in: run `reins mcp login {server}`")
}

/// An HTTP client of the server at `url` that sends the token stored in `file`, or why it cannot.
/// Discovers the authorization server (the stored login names only the client), so it costs a
/// request or two to the server's metadata.
pub(crate) async fn authorized<C>(client: C, url: &str, file: TokenFile) -> Result<AuthClient<C>, Refusal> {
    let mut manager = AuthorizationManager::new(url).await.map_err(|err| Refusal::Failed(err.to_string()))?;
    manager.set_credential_store(FileStore(file));
    match manager.initialize_from_store().await {
        Ok(true) => Ok(AuthClient::new(client, manager)),
        // The server's authorization server changed: the old login is void.
        Ok(false) => Err(Refusal::NeedsLogin),
        Err(err) => Err(Refusal::Failed(format!("cannot use the stored login: {err}"))),
    }
}

/// Why an authorized client could not be made.
#[derive(Debug)]
pub(crate) enum Refusal {
    NeedsLogin,
    Failed(String),
}

/// Whether `error` (or what caused it) is the server refusing reins without a valid token, after
/// the one refresh the authorized client tries.
pub(crate) fn wants_login(error: &(dyn Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if let Some(error) = error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return matches!(
                error,
                StreamableHttpError::AuthRequired(_)
                    | StreamableHttpError::Auth(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_))
            );
        }
        if let Some(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) = error.downcast_ref() {
            return true;
        }
        // The handshake's error does not name its transport error as its source.
        cause = match error.downcast_ref::<ClientInitializeError>() {
            Some(ClientInitializeError::TransportError { error, .. }) => Some(error),
            _ => error.source(),
        };
    }
    false
}
