//! OAuth for a streamable HTTP MCP server, with the real binary against the local authorization
//! server (tests/oauth-server): a server that wants a login is named with the advice to log in
//! and does not hold up the run; `reins mcp login` discovers, registers, sends the browser and
//! keeps the tokens in a 0600 file; runs send the token and renew it when it expires; a login that
//! cannot be renewed asks for a new one; no token shows in any output, log or session.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use oauth_server::{AuthServer, browse};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;
use support::{Run, reins_home, workspace};

const ADVICE: &str = "it needs you to log in: run `reins mcp login guarded`";

/// A workspace whose config has the protected server as `guarded`, its tools approved.
fn configured(auth: &AuthServer) -> tempfile::TempDir {
    let dir = workspace(&[]);
    let home = reins_home(dir.path());
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        "[mcp_servers.guarded]\nurl = \"{}\"\nstartup_timeout_sec = 20\n[approval]\n\"mcp__guarded__*\" = \"auto\"\n",
        auth.mcp_url()
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    dir
}

/// `reins ARGS` with the model `model` (if any) and debug logs on stderr, so that the logs are
/// searched for tokens too.
async fn reins(model: Option<&ScriptedServer>, dir: &Path, args: &[&str]) -> Run {
    let base_url = model.map(ScriptedServer::base_url);
    let mut command = support::reins_command(base_url.as_deref(), dir, args);
    command.env("REINS_LOG", "debug");
    let output = command.output().await.unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `reins mcp login guarded` with a browser that approves: `$BROWSER` is a script that hands
/// the address to this test, which follows it (the authorization server approves at once and
/// redirects to the listener reins opened).
async fn login(dir: &Path) -> Run {
    let opened = dir.join("opened-address");
    let script = dir.join("browser.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nprintf '%s' \"$1\" > '{0}.tmp' && mv '{0}.tmp' '{0}'\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = support::reins_command(None, dir, &["mcp", "login", "guarded"]);
    command.env("BROWSER", &script).env("REINS_LOG", "debug");
    let child = command.spawn().unwrap();
    let mut waited = Duration::ZERO;
    while !opened.exists() {
        assert!(waited < Duration::from_secs(60), "reins did not open the browser");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    let address = std::fs::read_to_string(&opened).unwrap();
    let page = browse(&address).await.unwrap();
    assert!(page.contains("Logged in"), "{page}");
    let output = child.wait_with_output().await.unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A run whose model calls the protected tool, then answers; what the tool gave the model.
async fn call_the_tool(dir: &Path, outputs: &mut Vec<String>) -> String {
    let model = ScriptedServer::start(vec![
        Reply::tool_call("call_1", "mcp__guarded__greet", json!({})),
        Reply::text("Greeted."),
    ])
    .await;
    let run = reins(Some(&model), dir, &["run", "--json", "greet"]).await;
    outputs.extend([run.stdout.clone(), run.stderr.clone()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let requests = model.chat_requests();
    let messages = requests.last().unwrap().body["messages"].as_array().unwrap().clone();
    let result = messages.iter().find(|message| message["role"] == "tool").expect("a tool result");
    outputs.push(serde_json::to_string(&requests.iter().map(|r| &r.body).collect::<Vec<_>>()).unwrap());
    result["content"].as_str().unwrap().to_string()
}

fn grants(auth: &AuthServer) -> Vec<String> {
    auth.requests().into_iter().filter_map(|request| request.grant_type).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_then_calls_that_renew_the_token_and_never_show_it() {
    let auth = AuthServer::start(Duration::from_secs(3600)).await;
    let dir = configured(&auth);
    let mut outputs = Vec::new();

    // Before the login: named with the advice, and the run goes on without it.
    let list = reins(None, dir.path(), &["mcp", "list"]).await;
    assert_eq!(list.code, Some(1), "{}", list.stdout);
    assert!(list.stdout.contains(&format!("state  needs login: {ADVICE}")), "{}", list.stdout);
    let model = ScriptedServer::start(vec![Reply::text("Fine without it.")]).await;
    let run = reins(Some(&model), dir.path(), &["run", "hello"]).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains(ADVICE), "{}", run.stderr);
    let offered = model.chat_requests()[0].body["tools"].to_string();
    assert!(!offered.contains("mcp__guarded"), "{offered}");

    let login = login(dir.path()).await;
    outputs.extend([login.stdout.clone(), login.stderr.clone()]);
    assert_eq!(login.code, Some(0), "{}", login.stderr);
    assert!(login.stderr.contains("logged in to `guarded`"), "{}", login.stderr);
    let token_file = reins_home(dir.path()).join("auth/mcp-guarded.json");
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(grants(&auth), ["authorization_code"]);

    let list = reins(None, dir.path(), &["mcp", "list"]).await;
    outputs.extend([list.stdout.clone(), list.stderr.clone()]);
    assert_eq!(list.code, Some(0), "{}", list.stdout);
    assert!(list.stdout.contains("(logged in)") && list.stdout.contains("mcp__guarded__greet"), "{}", list.stdout);

    assert_eq!(call_the_tool(dir.path(), &mut outputs).await, "hello, authorized client");
    let issued = auth.issued();
    let first_token = issued.iter().find(|token| token.starts_with("at-")).unwrap().clone();
    assert!(
        auth.requests().iter().any(|request| request.path == "/mcp" && request.bearer.as_ref() == Some(&first_token))
    );

    // The server stops accepting the token: the next run renews it once and goes on.
    auth.expire_access_tokens();
    assert_eq!(call_the_tool(dir.path(), &mut outputs).await, "hello, authorized client");
    assert_eq!(grants(&auth), ["authorization_code", "refresh_token"]);

    // A login that cannot be renewed asks for a new one, and the run goes on without the server.
    auth.expire_access_tokens();
    auth.revoke_refresh_tokens();
    let model = ScriptedServer::start(vec![Reply::text("Fine without it.")]).await;
    let run = reins(Some(&model), dir.path(), &["run", "hello"]).await;
    outputs.extend([run.stdout.clone(), run.stderr.clone()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains(ADVICE), "{}", run.stderr);
    let list = reins(None, dir.path(), &["mcp", "list"]).await;
    outputs.extend([list.stdout.clone(), list.stderr.clone()]);
    assert!(list.stdout.contains(&format!("needs login: {ADVICE}")), "{}", list.stdout);

    // No access or refresh token in any output, log, request to the model or session file.
    let tokens: Vec<String> = auth.issued().into_iter().filter(|token| !token.starts_with("code-")).collect();
    assert!(tokens.len() >= 4, "{tokens:?}");
    for token in &tokens {
        for output in &outputs {
            assert!(!output.contains(token.as_str()), "a token was shown: {output}");
        }
        let holders: Vec<String> = support::files_containing(&reins_home(dir.path()), token)
            .into_iter()
            .filter(|path| !path.ends_with("auth/mcp-guarded.json"))
            .collect();
        assert!(holders.is_empty(), "a token was written to {holders:?}");
    }

    let logout = reins(None, dir.path(), &["mcp", "logout", "guarded"]).await;
    assert_eq!(logout.code, Some(0), "{}", logout.stderr);
    assert!(!token_file.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_past_its_lifetime_is_renewed_before_it_is_sent() {
    let auth = AuthServer::start(Duration::from_secs(1)).await;
    let dir = configured(&auth);
    let login = login(dir.path()).await;
    assert_eq!(login.code, Some(0), "{}", login.stderr);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut outputs = Vec::new();
    assert_eq!(call_the_tool(dir.path(), &mut outputs).await, "hello, authorized client");
    assert!(grants(&auth).contains(&"refresh_token".to_string()), "{:?}", grants(&auth));
    // The expired token was never offered to the server: it was renewed first.
    let first_token = auth.issued().into_iter().find(|token| token.starts_with("at-")).unwrap();
    assert!(!auth.requests().iter().any(|request| request.bearer.as_ref() == Some(&first_token)));
}
