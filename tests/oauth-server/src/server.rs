//! The HTTP side: accepts connections on 127.0.0.1 and routes each request to the metadata
//! documents, the OAuth endpoints or the protected MCP endpoint.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use scripted_llm::http::{self, HttpRequest};
use serde_json::{Value, json};
use tokio::io::BufReader;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::flow::{Flow, Refusal};
use crate::mcp;

/// A running server; dropping it stops it.
pub struct AuthServer {
    address: SocketAddr,
    shared: Arc<Shared>,
    accept_task: JoinHandle<()>,
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    /// The path without its query.
    pub path: String,
    /// The token of an `Authorization: Bearer` header.
    pub bearer: Option<String>,
    /// The `grant_type` of a token request.
    pub grant_type: Option<String>,
}

struct Shared {
    base: String,
    lifetime: Duration,
    flow: Mutex<Flow>,
    requests: Mutex<Vec<Recorded>>,
}

/// What a route answers.
struct Answer {
    status: u16,
    headers: Vec<(&'static str, String)>,
    content_type: &'static str,
    body: Vec<u8>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl AuthServer {
    /// Starts a server on a free port of 127.0.0.1 whose access tokens are accepted for
    /// `lifetime` (and say so in `expires_in`).
    ///
    /// # Panics
    /// When no local port can be bound; this is test support, and a test cannot go on without it.
    pub async fn start(lifetime: Duration) -> AuthServer {
        match Self::start_on(0, lifetime).await {
            Ok(server) => server,
            Err(error) => panic!("oauth-server: cannot bind 127.0.0.1: {error}"),
        }
    }

    pub async fn start_on(port: u16, lifetime: Duration) -> io::Result<AuthServer> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let address = listener.local_addr()?;
        let shared = Arc::new(Shared {
            base: format!("http://{address}"),
            lifetime,
            flow: Mutex::default(),
            requests: Mutex::default(),
        });
        let accept_task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(AuthServer { address, shared, accept_task })
    }

    /// The protected MCP endpoint: `http://127.0.0.1:PORT/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.address)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// Every code and token issued so far.
    pub fn issued(&self) -> Vec<String> {
        lock(&self.shared.flow).issued.clone()
    }

    /// The access tokens issued so far stop being accepted, as if revoked.
    pub fn expire_access_tokens(&self) {
        lock(&self.shared.flow).expire_access_tokens();
    }

    /// The refresh tokens issued so far are refused: only a new login helps.
    pub fn revoke_refresh_tokens(&self) {
        lock(&self.shared.flow).revoke_refresh_tokens();
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(serve_connection(stream, shared.clone()));
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    while let Ok(Some(request)) = http::read_request(&mut reader).await {
        let answer = respond(&shared, &request);
        let written =
            http::write_full(&mut writer, answer.status, &answer.headers, answer.content_type, &answer.body).await;
        let closing = request.header("connection").is_some_and(|value| value.eq_ignore_ascii_case("close"));
        if written.is_err() || closing {
            return;
        }
    }
}

fn respond(shared: &Shared, request: &HttpRequest) -> Answer {
    let (path, query) = request.path.split_once('?').unwrap_or((&request.path, ""));
    let form = if request.header("content-type").is_some_and(|kind| kind.starts_with("application/x-www-form")) {
        pairs(&String::from_utf8_lossy(&request.body))
    } else {
        HashMap::new()
    };
    let bearer = request
        .header("authorization")
        .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
        .map(|token| token.trim().to_string());
    lock(&shared.requests).push(Recorded {
        method: request.method.clone(),
        path: path.to_string(),
        bearer: bearer.clone(),
        grant_type: form.get("grant_type").cloned(),
    });
    let base = &shared.base;
    match (request.method.as_str(), path) {
        ("GET", "/.well-known/oauth-protected-resource/mcp" | "/.well-known/oauth-protected-resource") => json_answer(
            200,
            json!({
                "resource": format!("{base}/mcp"),
                "authorization_servers": [base],
                "scopes_supported": ["mcp"],
                "bearer_methods_supported": ["header"],
            }),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => json_answer(
            200,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["mcp"],
            }),
        ),
        ("POST", "/register") => match serde_json::from_slice::<Value>(&request.body) {
            Ok(body) => outcome(lock(&shared.flow).register(&body), 201),
            Err(_) => json_answer(400, json!({ "error": "invalid_client_metadata" })),
        },
        ("GET", "/authorize") => match lock(&shared.flow).authorize(&pairs(query)) {
            Ok(location) => Answer {
                status: 302,
                headers: vec![("Location", location)],
                content_type: "text/plain",
                body: Vec::new(),
            },
            Err(refusal) => refusal_answer(refusal),
        },
        ("POST", "/token") => outcome(lock(&shared.flow).token(&form, shared.lifetime, Instant::now()), 200),
        (method, "/mcp") => {
            let accepted = bearer.as_deref().is_some_and(|token| lock(&shared.flow).accepts(token, Instant::now()));
            if !accepted {
                let mut challenge =
                    format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
                if bearer.is_some() {
                    challenge.push_str(", error=\"invalid_token\"");
                }
                return Answer {
                    status: 401,
                    headers: vec![("WWW-Authenticate", challenge)],
                    content_type: "application/json",
                    body: br#"{"error":"invalid_token"}"#.to_vec(),
                };
            }
            match method {
                "POST" => match mcp::answer(&request.body) {
                    Some(message) => json_answer(200, message),
                    None => Answer { status: 202, headers: Vec::new(), content_type: "text/plain", body: Vec::new() },
                },
                "DELETE" => Answer { status: 200, headers: Vec::new(), content_type: "text/plain", body: Vec::new() },
                _ => Answer { status: 405, headers: Vec::new(), content_type: "text/plain", body: Vec::new() },
            }
        }
        _ => json_answer(404, json!({ "error": "not_found" })),
    }
}

fn pairs(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes()).into_owned().collect()
}

fn outcome(result: Result<Value, Refusal>, status: u16) -> Answer {
    match result {
        Ok(body) => json_answer(status, body),
        Err(refusal) => refusal_answer(refusal),
    }
}

fn refusal_answer(refusal: Refusal) -> Answer {
    json_answer(refusal.status, refusal.body)
}

fn json_answer(status: u16, body: Value) -> Answer {
    Answer {
        status,
        headers: vec![("Cache-Control", "no-store".to_string())],
        content_type: "application/json",
        body: body.to_string().into_bytes(),
    }
}
