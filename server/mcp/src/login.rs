//! `reins mcp login`: the authorization code flow with PKCE for one streamable HTTP server.
//! The server's challenge names its authorization server (RFC 9728, then RFC 8414), reins
//! registers itself there (RFC 7591), the user approves in a browser, the browser is sent back to
//! a listener reins opened on 127.0.0.1, and the code is exchanged for tokens, which go to the
//! server's token file.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, WWW_AUTHENTICATE};
use rmcp::transport::auth::{AuthorizationManager, AuthorizationRequest, AuthorizationSession};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use crate::oauth::FileStore;
use crate::token_file::TokenFile;

/// How long the user has to approve in the browser.
pub const LOGIN_WAIT: Duration = Duration::from_secs(300);
/// The longest request line the loopback listener reads; a redirect with a code is far shorter.
const MAX_REQUEST_LINE: u64 = 16 * 1024;

/// Logs in to the server at `url`, keeping the tokens in `file`. `open` is given the URL the user
/// must visit (the caller opens a browser or prints it); the login fails if no approval comes
/// back within `wait`.
pub async fn login(url: &str, file: TokenFile, open: impl FnOnce(&str), wait: Duration) -> Result<(), String> {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|err| format!("cannot open a listener on 127.0.0.1 for the browser to return to: {err}"))?;
    let port = listener.local_addr().map_err(|err| err.to_string())?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    let challenge = challenge(url).await?;
    let mut manager =
        AuthorizationManager::new(url).await.map_err(|err| format!("{url} is not a URL reins can log in to: {err}"))?;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(|err| format!("cannot find the authorization server of {url}: {err}"))?;
    if !resolution.source.is_discovered() {
        return Err(format!(
            "{url} publishes no OAuth metadata (RFC 9728 or RFC 8414), so reins cannot log in to it; if it takes \
             a fixed token, set `bearer_token_env_var` in its config instead"
        ));
    }
    manager.set_metadata(resolution.metadata);
    manager.set_credential_store(FileStore(file));
    let mut request = AuthorizationRequest::new(&redirect_uri).with_client_name("reins");
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, err)| format!("the authorization server refused to start a login: {err}"))?;
    open(session.get_authorization_url());
    let callback = tokio::time::timeout(wait, callback(&listener))
        .await
        .map_err(|_| format!("no approval came back within {} s", wait.as_secs()))??;
    session
        .handle_callback_with_issuer(&callback.code, &callback.state, callback.issuer.as_deref())
        .await
        .map_err(|err| format!("the authorization server did not give tokens for the approval: {err}"))?;
    Ok(())
}

/// The server's `WWW-Authenticate` challenge to a request without a token, if it makes one:
/// it names the server's protected-resource metadata.
async fn challenge(url: &str) -> Result<Option<String>, String> {
    let client = crate::http::http_client(&[])?;
    let probe = json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": { "name": "reins", "version": env!("CARGO_PKG_VERSION") },
        },
    });
    let response = client
        .inner()
        .post(url)
        .header(ACCEPT, "application/json, text/event-stream")
        .json(&probe)
        .send()
        .await
        .map_err(|err| format!("cannot reach {url}: {err}"))?;
    if response.status() != StatusCode::UNAUTHORIZED {
        return Ok(None);
    }
    Ok(response.headers().get(WWW_AUTHENTICATE).and_then(|value| value.to_str().ok()).map(str::to_string))
}

/// What the browser brought back.
struct Callback {
    code: String,
    state: String,
    issuer: Option<String>,
}

/// Waits for the browser's redirect to `/callback` and answers it with a page for the user.
/// Anything else that connects is answered 404 and the wait goes on.
async fn callback(listener: &TcpListener) -> Result<Callback, String> {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let Some((mut stream, path, query)) = request_target(stream).await else { continue };
        if path != "/callback" {
            answer(stream, 404, "Not found.").await;
            continue;
        }
        if let Some(error) = query.get("error") {
            let description = query.get("error_description").map(|text| format!(": {text}")).unwrap_or_default();
            answer(stream, 400, "The login was refused. You can close this tab.").await;
            return Err(format!("the authorization server refused the login ({error}{description})"));
        }
        let (Some(code), Some(state)) = (query.get("code"), query.get("state")) else {
            answer(stream, 400, "This is not an OAuth redirect: no code or state.").await;
            continue;
        };
        let page = "Logged in: reins has the approval. You can close this tab.";
        let _ = write_page(&mut stream, 200, page).await;
        return Ok(Callback { code: code.clone(), state: state.clone(), issuer: query.get("iss").cloned() });
    }
}

/// The path and query of the first request on `stream`, read from its request line.
async fn request_target(stream: TcpStream) -> Option<(TcpStream, String, HashMap<String, String>)> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        use tokio::io::AsyncReadExt;
        (&mut reader).take(MAX_REQUEST_LINE).read_line(&mut line).await
    });
    read.await.ok()?.ok()?;
    let target = line.split_whitespace().nth(1)?;
    let url = reqwest::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    let query = url.query_pairs().into_owned().collect();
    Some((reader.into_inner(), url.path().to_string(), query))
}

async fn answer(mut stream: TcpStream, status: u16, text: &str) {
    let _ = write_page(&mut stream, status, text).await;
}

async fn write_page(stream: &mut TcpStream, status: u16, text: &str) -> std::io::Result<()> {
    let body = format!("<!doctype html><title>reins</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        if status == 200 { "OK" } else { "Error" },
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
