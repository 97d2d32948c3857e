//! The authorization server's bookkeeping: clients, codes and tokens, and the rules each endpoint
//! checks. No I/O: the server hands it parsed requests and writes what it answers.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Everything the server has registered and issued.
#[derive(Default)]
pub(crate) struct Flow {
    /// Registered clients and their redirect URIs.
    clients: HashMap<String, Vec<String>>,
    /// Authorization codes not yet exchanged.
    codes: HashMap<String, Grant>,
    /// Access tokens and when each stops being accepted.
    access: HashMap<String, Instant>,
    /// Refresh tokens and the client each was issued to.
    refresh: HashMap<String, String>,
    /// Every code and token ever issued, for tests that look for them where they must not be.
    pub(crate) issued: Vec<String>,
}

/// What an authorization code stands for.
struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
}

/// An endpoint's answer when it refuses: the status and the OAuth error body.
#[derive(Debug, PartialEq)]
pub(crate) struct Refusal {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

/// The S256 PKCE challenge of `verifier`: BASE64URL(SHA-256(verifier)), unpadded (RFC 7636).
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn refuse(status: u16, error: &str, description: &str) -> Refusal {
    Refusal { status, body: json!({ "error": error, "error_description": description }) }
}

fn fresh(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

impl Flow {
    /// RFC 7591: a public client with at least one redirect URI.
    pub(crate) fn register(&mut self, request: &Value) -> Result<Value, Refusal> {
        let uris: Vec<String> = request
            .get("redirect_uris")
            .and_then(Value::as_array)
            .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        if uris.is_empty() {
            return Err(refuse(400, "invalid_redirect_uri", "redirect_uris is required"));
        }
        let client_id = fresh("client");
        self.clients.insert(client_id.clone(), uris.clone());
        Ok(json!({
            "client_id": client_id,
            "client_name": request.get("client_name").cloned().unwrap_or(Value::Null),
            "redirect_uris": uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
    }

    /// The authorization endpoint approves at once: the URL to redirect to, with the code and
    /// the client's state. A request it cannot trust is refused without a redirect.
    pub(crate) fn authorize(&mut self, query: &HashMap<String, String>) -> Result<String, Refusal> {
        let get = |name: &str| query.get(name).map(String::as_str).unwrap_or("");
        let client_id = get("client_id");
        let Some(uris) = self.clients.get(client_id) else {
            return Err(refuse(400, "invalid_client", "unknown client_id"));
        };
        let redirect_uri = get("redirect_uri");
        if !uris.iter().any(|uri| uri == redirect_uri) {
            return Err(refuse(400, "invalid_request", "redirect_uri was not registered"));
        }
        if get("response_type") != "code" {
            return Err(refuse(400, "unsupported_response_type", "only code is supported"));
        }
        if get("code_challenge_method") != "S256" || get("code_challenge").is_empty() {
            return Err(refuse(400, "invalid_request", "PKCE with S256 is required"));
        }
        let code = fresh("code");
        self.issued.push(code.clone());
        let grant = Grant {
            client_id: client_id.to_string(),
            redirect_uri: redirect_uri.to_string(),
            challenge: get("code_challenge").to_string(),
        };
        self.codes.insert(code.clone(), grant);
        let mut location =
            url::Url::parse(redirect_uri).map_err(|_| refuse(400, "invalid_request", "redirect_uri is not a URL"))?;
        location.query_pairs_mut().append_pair("code", &code).append_pair("state", get("state"));
        Ok(location.to_string())
    }

    /// The token endpoint: `authorization_code` (PKCE checked, each code once) and
    /// `refresh_token` (the refresh token rotates, as OAuth 2.1 asks of public clients).
    pub(crate) fn token(
        &mut self,
        form: &HashMap<String, String>,
        lifetime: Duration,
        now: Instant,
    ) -> Result<Value, Refusal> {
        let get = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
        let client_id = match get("grant_type") {
            "authorization_code" => {
                let Some(grant) = self.codes.remove(get("code")) else {
                    return Err(refuse(400, "invalid_grant", "unknown or used code"));
                };
                if grant.client_id != get("client_id") || grant.redirect_uri != get("redirect_uri") {
                    return Err(refuse(400, "invalid_grant", "the code was issued to another client or redirect"));
                }
                if pkce_challenge(get("code_verifier")) != grant.challenge {
                    return Err(refuse(400, "invalid_grant", "code_verifier does not match the challenge"));
                }
                grant.client_id
            }
            "refresh_token" => match self.refresh.remove(get("refresh_token")) {
                Some(client_id) if client_id == get("client_id") => client_id,
                _ => return Err(refuse(400, "invalid_grant", "unknown, used or revoked refresh token")),
            },
            other => return Err(refuse(400, "unsupported_grant_type", &format!("grant_type {other:?}"))),
        };
        let (access, refresh) = (fresh("at"), fresh("rt"));
        self.issued.extend([access.clone(), refresh.clone()]);
        self.access.insert(access.clone(), now + lifetime);
        self.refresh.insert(refresh.clone(), client_id);
        Ok(json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": lifetime.as_secs(),
            "refresh_token": refresh,
            "scope": "mcp",
        }))
    }

    /// Whether `token` is an access token still accepted at `now`.
    pub(crate) fn accepts(&self, token: &str, now: Instant) -> bool {
        self.access.get(token).is_some_and(|until| now < *until)
    }

    /// Every access token issued so far stops being accepted (a server-side revocation).
    pub(crate) fn expire_access_tokens(&mut self) {
        self.access.clear();
    }

    /// Every refresh token issued so far is refused from now on.
    pub(crate) fn revoke_refresh_tokens(&mut self) {
        self.refresh.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect()
    }

    /// A registered client that went through authorization: the flow and the code.
    fn authorized(challenge: &str) -> (Flow, String, String) {
        let mut flow = Flow::default();
        let client = flow.register(&json!({ "redirect_uris": ["http://127.0.0.1:9/cb"] })).unwrap();
        let client_id = client["client_id"].as_str().unwrap().to_string();
        let location = flow
            .authorize(&map(&[
                ("client_id", &client_id),
                ("redirect_uri", "http://127.0.0.1:9/cb"),
                ("response_type", "code"),
                ("code_challenge", challenge),
                ("code_challenge_method", "S256"),
                ("state", "s1"),
            ]))
            .unwrap();
        let url = url::Url::parse(&location).unwrap();
        let query: HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(query["state"], "s1");
        (flow, client_id, query["code"].clone())
    }

    #[test]
    fn the_challenge_is_rfc_7636s() {
        // RFC 7636, appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn a_code_is_exchanged_once_and_only_with_its_verifier() {
        let verifier = "a-verifier-of-enough-length-0123456789abcdef";
        let (mut flow, client_id, code) = authorized(&pkce_challenge(verifier));
        let now = Instant::now();
        let exchange = |verifier: &str| {
            map(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("client_id", &client_id),
                ("redirect_uri", "http://127.0.0.1:9/cb"),
                ("code_verifier", verifier),
            ])
        };
        let refused = flow.token(&exchange("another verifier"), Duration::from_secs(60), now).unwrap_err();
        assert_eq!(refused.body["error"], "invalid_grant");
        // A failed attempt used the code up.
        let (mut flow, client_id, code) = authorized(&pkce_challenge(verifier));
        let form = map(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("client_id", &client_id),
            ("redirect_uri", "http://127.0.0.1:9/cb"),
            ("code_verifier", verifier),
        ]);
        let tokens = flow.token(&form, Duration::from_secs(60), now).unwrap();
        let access = tokens["access_token"].as_str().unwrap();
        assert!(flow.accepts(access, now) && !flow.accepts(access, now + Duration::from_secs(60)));
        assert_eq!(flow.token(&form, Duration::from_secs(60), now).unwrap_err().body["error"], "invalid_grant");

        let refresh = tokens["refresh_token"].as_str().unwrap();
        let form = map(&[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", &client_id)]);
        let renewed = flow.token(&form, Duration::from_secs(60), now).unwrap();
        assert_ne!(renewed["access_token"], tokens["access_token"]);
        // Rotated: the old refresh token is spent.
        assert_eq!(flow.token(&form, Duration::from_secs(60), now).unwrap_err().body["error"], "invalid_grant");
    }

    #[test]
    fn authorization_without_s256_or_with_a_foreign_redirect_is_refused() {
        let mut flow = Flow::default();
        let client = flow.register(&json!({ "redirect_uris": ["http://127.0.0.1:9/cb"] })).unwrap();
        let client_id = client["client_id"].as_str().unwrap();
        let base = [("client_id", client_id), ("response_type", "code"), ("code_challenge", "x")];
        let plain = map(
            &[&base[..], &[("redirect_uri", "http://127.0.0.1:9/cb"), ("code_challenge_method", "plain")]].concat()
        );
        assert_eq!(flow.authorize(&plain).unwrap_err().body["error"], "invalid_request");
        let foreign =
            map(&[&base[..], &[("redirect_uri", "http://evil.test/cb"), ("code_challenge_method", "S256")]].concat());
        assert_eq!(flow.authorize(&foreign).unwrap_err().body["error"], "invalid_request");
        assert_eq!(flow.register(&json!({})).unwrap_err().body["error"], "invalid_redirect_uri");
    }
}
