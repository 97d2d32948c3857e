//! `reins lsp --listen`: the real binary on real sockets. Only a client with the token is served
//! over TCP; strangers (no token, a wrong one, garbage, silence, a flood) are refused one by one
//! without ending or holding up the listener; a non-loopback address needs `--allow-remote`; a
//! Unix socket is private and needs no token. The examples of `protocol-docs/listen.md` are the
//! requests and refusals sent here.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use lsp_client::LspClient;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::TcpStream;
use tokio::process::{Child, ChildStderr};

use super::doc_examples::same_shape;
use super::docs::example;
use super::{WAIT, reins_lsp};

const TOKEN: &str = "a-token-of-the-tests-0123456789";

/// A `reins lsp --listen` that has said where it listens.
struct Listening {
    child: Child,
    dir: tempfile::TempDir,
    /// What follows `reins: listening on `.
    address: String,
    /// Its stderr lines up to that one.
    said: Vec<String>,
    stderr: Lines<BufReader<ChildStderr>>,
}

impl Listening {
    /// The token file it named, if it made one.
    fn token_file(&self) -> Option<PathBuf> {
        self.said.iter().find_map(|line| {
            let rest = line.strip_prefix("reins: the token is in ")?;
            Some(PathBuf::from(rest.split(" (send it").next()?))
        })
    }

    /// Connects, initializes with `options`, and checks the client is served.
    async fn serve_client(&self, options: Value) -> LspClient {
        let stream = TcpStream::connect(&self.address).await.unwrap();
        let (read, write) = stream.into_split();
        let client = LspClient::over(read, write);
        let result = client.initialize(self.dir.path(), options, &["utf-8", "utf-16"]).await.unwrap();
        assert_eq!(result["capabilities"]["positionEncoding"], "utf-8");
        let created = client.command("reins.session.new", json!({})).await.unwrap();
        assert!(created["sessionId"].is_string());
        client
    }

    /// Ends the served client as an editor does; the server must exit cleanly.
    async fn finish(mut self, client: LspClient) {
        let _ = client.request("shutdown", Value::Null).await;
        client.notify("exit", Value::Null).await;
        let status = tokio::time::timeout(WAIT, self.child.wait()).await.unwrap().unwrap();
        assert!(status.success());
        let mut rest = Vec::new();
        while let Ok(Some(line)) = self.stderr.next_line().await {
            rest.push(line);
        }
        assert!(!rest.join("\n").contains(TOKEN), "the token reached stderr: {rest:?}");
    }
}

/// Starts `reins lsp ARGS` (REINS_LISTEN_TOKEN set to `token` when given) and waits for its
/// `listening on` line.
async fn listen(args: &[&str], token: Option<&str>) -> Listening {
    let dir = tempfile::tempdir().unwrap();
    let mut command = reins_lsp(dir.path(), args);
    if let Some(token) = token {
        command.env("REINS_LISTEN_TOKEN", token);
    }
    let mut child = command.stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let address = loop {
        let line = tokio::time::timeout(WAIT, stderr.next_line()).await.unwrap().unwrap();
        let line = line.unwrap_or_else(|| panic!("reins exited, having said {said:?}"));
        if let Some(address) = line.strip_prefix("reins: listening on ") {
            break address.to_string();
        }
        said.push(line);
    };
    Listening { child, dir, address, said, stderr }
}

fn frame(body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// The documented `initialize` with `token` in its options (none when `None`).
fn initialize(token: Option<&str>) -> Value {
    let mut request = example("listen-request", "initialize");
    match token {
        Some(token) => request["params"]["initializationOptions"]["token"] = json!(token),
        None => request["params"]["initializationOptions"] = json!({}),
    }
    request
}

/// Connects, sends `bytes`, and reads until the server closes the connection: its answer's
/// `error` (`null` when it answered nothing). Fails if the connection stays open.
async fn refused(address: &str, bytes: &[u8]) -> Value {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut answer))
        .await
        .expect("the server kept a refused connection open")
        .unwrap();
    let text = String::from_utf8(answer).unwrap();
    match text.split_once("\r\n\r\n") {
        Some((_, body)) => serde_json::from_str::<Value>(body).unwrap()["error"].clone(),
        None => Value::Null,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_are_refused_and_the_client_with_the_made_token_is_served_after() {
    let server = listen(&["--listen", "127.0.0.1:0"], None).await;
    let file = server.token_file().unwrap_or_else(|| panic!("no token file named in {:?}", server.said));
    assert_eq!(file.parent().unwrap(), server.dir.path().join(".reins-home-for-test"));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let token = std::fs::read_to_string(&file).unwrap().trim().to_string();
    assert_eq!(token.len(), 64);

    let unauthorized = example("listen-error", "unauthorized");
    let no_token = refused(&server.address, &frame(&initialize(None))).await;
    same_shape(&unauthorized, &no_token, "no token").unwrap();
    assert_eq!(no_token["data"]["code"], "unauthorized");
    let wrong = refused(&server.address, &frame(&initialize(Some(&format!("{token}0"))))).await;
    same_shape(&unauthorized, &wrong, "a wrong token").unwrap();
    assert!(wrong["message"].as_str().unwrap().starts_with("the token is wrong"), "{wrong}");
    assert!(!wrong.to_string().contains(&token));
    let other_first = refused(&server.address, &frame(&json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))).await;
    assert!(other_first["message"].as_str().unwrap().contains("must be initialize with the token"), "{other_first}");
    let garbage = refused(&server.address, b"GET / HTTP/1.1\r\nHost: example\r\n\r\n").await;
    assert_eq!(garbage["code"], -32700);
    assert_eq!(refused(&server.address, b"").await, Value::Null);

    let client = server.serve_client(json!({"token": token})).await;
    assert!(!file.exists(), "the token file outlived the wait for the client");
    // Not a setting: no warning about an unknown key.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let warnings: Vec<Value> =
        client.notifications().into_iter().filter(|n| n["method"] == "window/showMessage").collect();
    assert!(warnings.is_empty(), "{warnings:?}");
    // The one client is in: the listener is closed.
    assert!(TcpStream::connect(&server.address).await.is_err());
    server.finish(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_silent_connections_do_not_hold_up_the_right_client() {
    let server = listen(&["--listen", "127.0.0.1:0"], Some(TOKEN)).await;
    assert!(server.token_file().is_none(), "a given token was written: {:?}", server.said);
    // A slow-loris: a header, then a body that never ends.
    let mut slow = TcpStream::connect(&server.address).await.unwrap();
    slow.write_all(b"Content-Length: 500\r\n\r\n{\"jsonrpc\":").await.unwrap();
    let mut silent = TcpStream::connect(&server.address).await.unwrap();
    // A silent one is closed after the time limit (10 s), while the listener goes on.
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), silent.read_to_end(&mut rest)).await.unwrap().unwrap();
    assert!(started.elapsed() >= Duration::from_secs(8), "closed after {:?}", started.elapsed());
    assert!(rest.is_empty());

    let mut slow_too = TcpStream::connect(&server.address).await.unwrap();
    slow_too.write_all(b"Content-Length: 500\r\n\r\n").await.unwrap();
    let served_at = std::time::Instant::now();
    let client = server.serve_client(json!({"token": TOKEN})).await;
    assert!(served_at.elapsed() < Duration::from_secs(5), "the right client waited {:?}", served_at.elapsed());
    // Those still introducing themselves are closed once the client is in.
    for stream in [&mut slow, &mut slow_too] {
        let mut rest = Vec::new();
        tokio::time::timeout(WAIT, stream.read_to_end(&mut rest)).await.unwrap().unwrap_or_default();
    }
    server.finish(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_guesses_is_limited_and_the_right_client_gets_in_after() {
    let server = listen(&["--listen", "127.0.0.1:0"], Some(TOKEN)).await;
    // 30 guesses at once: a burst of 10 is checked, then 5 a second.
    let started = std::time::Instant::now();
    let guesses = (0..30).map(|guess| {
        let address = server.address.clone();
        tokio::spawn(async move { refused(&address, &frame(&initialize(Some(&format!("guess-{guess:020}"))))).await })
    });
    let mut errors = Vec::new();
    for guess in guesses.collect::<Vec<_>>() {
        errors.push(guess.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let count = |code: &str| errors.iter().filter(|error| error["data"]["code"] == code).count();
    let (checked, limited) = (count("unauthorized"), count("too_many_attempts"));
    assert_eq!(checked + limited, 30, "{errors:?}");
    assert!(checked >= 10 && checked as f64 <= 11.0 + 5.0 * elapsed, "{checked} checked in {elapsed} s");
    let too_many = errors.iter().find(|error| error["data"]["code"] == "too_many_attempts").expect("none limited");
    same_shape(&example("listen-error", "too_many_attempts"), too_many, "too many attempts").unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let client = server.serve_client(json!({"token": TOKEN})).await;
    server.finish(client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_other_machines_reach_needs_allow_remote() {
    let dir = tempfile::tempdir().unwrap();
    let output =
        reins_lsp(dir.path(), &["--listen", "0.0.0.0:0"]).env("REINS_LISTEN_TOKEN", TOKEN).output().await.unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("reins: refusing to listen on 0.0.0.0:0: other machines could reach it"), "{stderr}");
    assert!(stderr.contains("SSH tunnel") && stderr.contains("--allow-remote"), "{stderr}");

    let server = listen(&["--listen", "0.0.0.0:0", "--allow-remote"], Some(TOKEN)).await;
    assert!(server.said.iter().any(|line| line.contains("reachable from other machines")), "{:?}", server.said);
    let port = server.address.rsplit(':').next().unwrap().to_string();
    let wrong = refused(&format!("127.0.0.1:{port}"), &frame(&initialize(Some("not-the-token-at-all")))).await;
    assert_eq!(wrong["data"]["code"], "unauthorized");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_is_private_and_needs_no_token() {
    let run = tempfile::tempdir().unwrap();
    let path = run.path().join("reins/lsp.sock");
    let server = listen(&["--listen", &format!("unix:{}", path.display())], None).await;
    assert_eq!(server.address, format!("unix:{}", path.display()));
    assert!(server.token_file().is_none());
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);

    let (read, write) = tokio::net::UnixStream::connect(&path).await.unwrap().into_split();
    let client = LspClient::over(read, write);
    client.initialize(server.dir.path(), json!({}), &["utf-16"]).await.unwrap();
    client.command("reins.session.new", json!({})).await.unwrap();
    assert!(!path.exists(), "the socket file stayed after its one client");
    server.finish(client).await;

    // A folder others can enter is refused, not changed.
    let open = run.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let output =
        reins_lsp(dir.path(), &["--listen", &format!("unix:{}/lsp.sock", open.display())]).output().await.unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is open to other users (mode 755)"), "{stderr}");
    assert_eq!(mode(&open), 0o755);
}
