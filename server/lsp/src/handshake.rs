//! The first message of a TCP client of `reins lsp --listen`: it must be `initialize` with the
//! token in `initializationOptions.token`. Anything else — another message first, a wrong or
//! missing token, garbage, silence — is answered with an error (when there is something to
//! answer) and the connection closed, while the listener goes on waiting for the right client.
//!
//! Each connection is read on its own, within [`HANDSHAKE_TIME`] and [`FIRST_MESSAGE_BYTES`], so
//! a slow or endless sender holds up nobody else; tokens are checked at most [`Attempts`] allows,
//! so guessing one is hopeless even when the user chose it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use reins_jsonrpc::{FrameReader, Inspected, Item, MAX_HEADER_BYTES, Reader, error_answer, frame, inspect};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::lock;
use super::token::Token;

/// How long a client has to send its `initialize`.
pub const HANDSHAKE_TIME: Duration = Duration::from_secs(10);
/// The largest first message taken (an editor's `initialize` is a few KiB).
pub const FIRST_MESSAGE_BYTES: usize = 1024 * 1024;
/// Token checks allowed at once, and then per second.
const BURST: f64 = 10.0;
const PER_SECOND: f64 = 5.0;
/// LSP's `RequestFailed`: the request was well formed and is refused.
const REQUEST_FAILED: i64 = -32803;

/// How many token checks may run now: a bucket of [`BURST`] that refills at [`PER_SECOND`],
/// shared by every connection (behind an SSH tunnel they all come from 127.0.0.1).
#[derive(Debug)]
pub struct Attempts {
    bucket: Mutex<(f64, Instant)>,
}

/// A client that may go on: its `initialize` (the token taken out) and whatever it sent after,
/// to be read before the rest of the connection.
#[derive(Debug, PartialEq)]
pub struct Admitted {
    pub replay: Vec<u8>,
}

/// Why a connection is closed, and the error answer it gets first (none when it sent nothing
/// that could be answered).
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub reason: String,
    pub answer: Option<Value>,
}

impl Attempts {
    pub fn new(now: Instant) -> Self {
        Self { bucket: Mutex::new((BURST, now)) }
    }

    /// Takes one check from the bucket, if there is one left at `now`.
    pub fn take(&self, now: Instant) -> bool {
        let mut bucket = lock(&self.bucket);
        let (left, since) = *bucket;
        let left = (left + now.saturating_duration_since(since).as_secs_f64() * PER_SECOND).min(BURST);
        let (left, allowed) = if left >= 1.0 { (left - 1.0, true) } else { (left, false) };
        *bucket = (left, now.max(since));
        allowed
    }
}

/// Reads the client's first message from `input` and decides. Bounded in time by the caller.
pub async fn handshake(
    input: &mut (impl AsyncRead + Unpin),
    token: &Token,
    attempts: &Attempts,
) -> Result<Admitted, Refusal> {
    let mut reader = FrameReader::new(FIRST_MESSAGE_BYTES);
    let mut chunk = vec![0; 16 * 1024];
    let mut seen = Vec::new();
    let mut total = 0;
    let item = loop {
        if let Some(item) = reader.next_item() {
            break item;
        }
        let read = input.read(&mut chunk).await.unwrap_or(0);
        if read == 0 {
            return Err(Refusal { reason: "it closed the connection before initialize".into(), answer: None });
        }
        if seen.len() < HEADER_NAMES_BYTES {
            seen.extend_from_slice(&chunk[..read.min(HEADER_NAMES_BYTES - seen.len())]);
            if !starts_like_a_header(&seen) {
                return Err(refusal(-32700, Value::Null, "not an LSP message (Content-Length header first)"));
            }
        }
        // Refused as soon as it is too long, not once all of it has been read.
        total += read;
        if total > FIRST_MESSAGE_BYTES + MAX_HEADER_BYTES {
            let reason = format!("the first message is over the limit of {} KiB", FIRST_MESSAGE_BYTES >> 10);
            return Err(refusal(-32600, Value::Null, &reason));
        }
        reader.push(&chunk[..read]);
    };
    let body = match item {
        Item::Body(body) => body,
        Item::Oversized { length, .. } => {
            let reason = format!("the first message is {length} bytes, over the limit of {FIRST_MESSAGE_BYTES}");
            return Err(refusal(-32600, Value::Null, &reason));
        }
        Item::Skipped { reason, .. } => return Err(refusal(-32700, Value::Null, &reason)),
    };
    let (id, mut message) = match inspect(&body) {
        Inspected::Request { method, id: Some(id), message } if method == "initialize" => (id, message),
        Inspected::Request { method, id, .. } => {
            let what = if id.is_none() { format!("a notification {method}") } else { method };
            let reason = format!("the first message must be initialize with the token, not {what}");
            let answer = error_answer(id.unwrap_or(Value::Null), REQUEST_FAILED, &reason);
            return Err(Refusal { reason, answer: Some(with_code(answer, "unauthorized")) });
        }
        Inspected::Refused { answer } => {
            let reason = answer["error"]["message"].as_str().unwrap_or("not a JSON-RPC message").to_string();
            return Err(Refusal { reason, answer: Some(answer) });
        }
        Inspected::Response { .. } | Inspected::Stray { .. } => {
            return Err(refusal(REQUEST_FAILED, Value::Null, "the first message must be initialize with the token"));
        }
    };
    let options = message.get_mut("params").and_then(|params| params.get_mut("initializationOptions"));
    let offered = match options.and_then(Value::as_object_mut).and_then(|options| options.remove("token")) {
        Some(Value::String(offered)) => offered,
        _ => return Err(unauthorized(id, "initialize has no initializationOptions.token")),
    };
    if !attempts.take(Instant::now()) {
        let answer = error_answer(id, REQUEST_FAILED, "too many attempts: try again in a second");
        return Err(Refusal {
            reason: "too many attempts".into(),
            answer: Some(with_code(answer, "too_many_attempts")),
        });
    }
    if !token.matches(&offered) {
        return Err(unauthorized(id, "the token is wrong"));
    }
    let mut replay = frame(Value::Object(message).to_string().as_bytes());
    replay.extend(reader.into_unread());
    Ok(Admitted { replay })
}

/// How much of the start is checked against [`starts_like_a_header`].
const HEADER_NAMES_BYTES: usize = 16;

/// Whether `start` (the first bytes of a connection) may begin an LSP header block: a stranger's
/// HTTP request or noise is refused at once instead of read up to the time limit.
fn starts_like_a_header(start: &[u8]) -> bool {
    ["content-length:", "content-type:"].iter().any(|name| {
        let n = start.len().min(name.len());
        start[..n].eq_ignore_ascii_case(&name.as_bytes()[..n])
    })
}

fn refusal(code: i64, id: Value, reason: &str) -> Refusal {
    Refusal { reason: reason.to_string(), answer: Some(error_answer(id, code, reason)) }
}

/// The wrong or missing token: the editor's user must fix its configuration.
fn unauthorized(id: Value, reason: &str) -> Refusal {
    let message = format!(
        "{reason}: send the token of `reins lsp --listen` (REINS_LISTEN_TOKEN, or the file it printed) as initializationOptions.token"
    );
    Refusal {
        reason: reason.to_string(),
        answer: Some(with_code(error_answer(id, REQUEST_FAILED, &message), "unauthorized")),
    }
}

/// An error answer with its stable `data.code`, and `retry: false` (LSP's `InitializeError`).
fn with_code(mut answer: Value, code: &str) -> Value {
    answer["error"]["data"] = json!({"code": code, "retry": false});
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn token() -> Token {
        Token::new(Some(SECRET.into()), std::path::Path::new("/nonexistent")).unwrap()
    }

    fn initialize(options: Value) -> Vec<u8> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"capabilities": {}, "initializationOptions": options}});
        frame(body.to_string().as_bytes())
    }

    /// The handshake over `input`, as one line: what is replayed, or the error code and message.
    async fn check(input: &[u8]) -> String {
        let attempts = Attempts::new(Instant::now());
        match handshake(&mut &input[..], &token(), &attempts).await {
            Ok(admitted) => format!("admitted {}", String::from_utf8_lossy(&admitted.replay)),
            Err(Refusal { reason, answer: None }) => format!("closed: {reason}"),
            Err(Refusal { answer: Some(answer), .. }) => {
                let error = &answer["error"];
                format!("{} {} {}: {}", error["code"], answer["id"], error["data"]["code"], error["message"])
            }
        }
    }

    #[tokio::test]
    async fn the_right_token_is_taken_out_and_what_follows_is_kept() {
        let mut input = initialize(json!({"token": SECRET, "model": "m"}));
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}Content-Le");
        let expected = r#"admitted Content-Length: 113

{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"initializationOptions":{"model":"m"}}}Content-Length: 2

{}Content-Le"#;
        assert_eq!(check(&input).await.replace('\r', ""), expected);
    }

    #[tokio::test]
    async fn anything_but_initialize_with_the_token_is_refused() {
        let cases = [
            (initialize(json!({"token": "x".repeat(32)})), r#"-32803 1 "unauthorized": "the token is wrong: send"#),
            (initialize(json!({})), r#"-32803 1 "unauthorized": "initialize has no initializationOptions.token"#),
            (initialize(json!({"token": 7})), r#"-32803 1 "unauthorized": "initialize has no"#),
            (initialize(Value::Null), r#"-32803 1 "unauthorized": "initialize has no"#),
            (
                frame(br#"{"jsonrpc":"2.0","id":4,"method":"shutdown"}"#),
                r#"-32803 4 "unauthorized": "the first message must be initialize with the token, not shutdown""#,
            ),
            (frame(b"{not json"), "-32700 null \"invalid_argument\":"),
            (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(), r#"-32700 null "invalid_argument": "not an LSP message"#),
            (
                b"Content-Length: x\r\n\r\n{}Content-Length: 2\r\n\r\n{}".to_vec(),
                r#"-32700 null "invalid_argument": "Content-Length "#,
            ),
            (
                [b"Content-Length: 99999999\r\n\r\n".as_slice(), &[b'a'; 2 << 20]].concat(),
                r#"-32600 null "invalid_argument": "the first message is over the limit of 1024 KiB""#,
            ),
            (b"Content-Len".to_vec(), "closed: it closed the connection before initialize"),
            (Vec::new(), "closed: it closed the connection before initialize"),
        ];
        for (input, expected) in cases {
            let got = check(&input).await;
            assert!(got.starts_with(expected), "{}\n got: {got}\nwant: {expected}", String::from_utf8_lossy(&input));
        }
    }

    #[tokio::test]
    async fn the_secret_never_shows_in_an_answer() {
        let got = check(&initialize(json!({"token": format!("{SECRET}x")}))).await;
        assert!(!got.contains(SECRET), "{got}");
    }

    #[test]
    fn checks_are_limited_to_a_burst_then_a_few_per_second() {
        let start = Instant::now();
        let attempts = Attempts::new(start);
        let allowed = (0..20).filter(|_| attempts.take(start)).count();
        assert_eq!(allowed, 10);
        assert!(!attempts.take(start + Duration::from_millis(100)));
        assert!(attempts.take(start + Duration::from_millis(200)));
        assert!(!attempts.take(start + Duration::from_millis(250)));
        let allowed = (0..20).filter(|_| attempts.take(start + Duration::from_secs(1))).count();
        assert_eq!(allowed, 4, "0.25 left at 250 ms, and 0.75 s more at 5 a second");
        // A clock that goes back gives nothing and takes nothing.
        assert!(!attempts.take(start));
    }
}
