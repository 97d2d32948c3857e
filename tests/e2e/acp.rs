//! End-to-end tests of `reins acp`: the real binary over stdio, driven by the client side of the
//! official Rust SDK (`agent-client-protocol`), against the scripted model server on 127.0.0.1,
//! in temp workspaces. The client answers `fs/*` from an in-memory set of unsaved buffers (else
//! the disk) and `session/request_permission` from a script of choices, and records everything
//! reins sent it.

mod support;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, CreateTerminalRequest, CreateTerminalResponse,
    FileSystemCapabilities, InitializeRequest, InitializeResponse, KillTerminalRequest, KillTerminalResponse,
    ListSessionsRequest, LoadSessionRequest, McpServer, McpServerHttp, McpServerStdio, NewSessionRequest,
    PermissionOptionId, PromptRequest, PromptResponse, ReadTextFileRequest, ReadTextFileResponse,
    ReleaseTerminalRequest, ReleaseTerminalResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SetSessionConfigOptionRequest,
    SetSessionModeRequest, TerminalExitStatus, TerminalOutputRequest, TerminalOutputResponse, TextContent,
    WaitForTerminalExitRequest, WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Lines};
use expect_test::expect;
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};
use support::{CANARY_KEY, reins_home, workspace};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const WAIT: Duration = Duration::from_secs(20);

/// What the client does when asked for permission.
#[derive(Clone, Debug)]
enum Choice {
    Pick(&'static str),
    /// Keep the request unanswered (until the test answers it).
    Hold,
    /// The user types while asked: the buffer of the path becomes the text, then the option.
    TypeThenPick(PathBuf, &'static str, &'static str),
}

/// What the client says it can do.
#[derive(Clone, Copy, Default)]
struct Can {
    fs: bool,
    terminal: bool,
}

const FS: Can = Can { fs: true, terminal: false };
const NOTHING: Can = Can { fs: false, terminal: false };

/// A command the client runs for `terminal/create`: its output, its exit code once it exited,
/// and a way to kill it.
#[derive(Clone)]
struct Term {
    output: Arc<Mutex<String>>,
    exit: tokio::sync::watch::Receiver<Option<i32>>,
    kill: Arc<tokio::sync::Notify>,
}

impl Term {
    fn start(request: &CreateTerminalRequest) -> Term {
        let mut child = tokio::process::Command::new(&request.command)
            .args(&request.args)
            .envs(request.env.iter().map(|var| (&var.name, &var.value)))
            .current_dir(request.cwd.clone().unwrap_or_else(|| PathBuf::from("/")))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let output = Arc::new(Mutex::new(String::new()));
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn tokio::io::AsyncRead + Send + Unpin>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let output = output.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    output.lock().unwrap().push_str(&format!("{line}\n"));
                }
            });
        }
        let (tx, exit) = tokio::sync::watch::channel(None);
        let kill = Arc::new(tokio::sync::Notify::new());
        let killed = kill.clone();
        tokio::spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status,
                () = killed.notified() => {
                    let _ = child.start_kill();
                    child.wait().await
                }
            };
            let _ = tx.send(Some(status.ok().and_then(|status| status.code()).unwrap_or(-1)));
        });
        Term { output, exit, kill }
    }
}

/// What the client saw and how it answers.
#[derive(Default)]
struct Recorded {
    /// `terminal/*` requests, as `method command-or-id` lines.
    terminal_calls: Vec<String>,
    /// The arguments and the environment of each `terminal/create`.
    terminal_args: Vec<Vec<String>>,
    terminal_env: Vec<Vec<(String, String)>>,
    terminals: HashMap<String, Term>,
    /// `session/update` params, in order, as on the wire.
    updates: Vec<Value>,
    permissions: Vec<Value>,
    reads: Vec<PathBuf>,
    writes: Vec<(PathBuf, String)>,
    /// Unsaved buffers: what `fs/read_text_file` answers instead of the disk.
    buffers: HashMap<PathBuf, String>,
    choices: VecDeque<Choice>,
    held: Vec<Responder<RequestPermissionResponse>>,
}

type Shared = Arc<Mutex<Recorded>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Recorded> {
    shared.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// `reins acp` in `dir` against `server`, with a clean environment.
fn spawn_reins(server: &ScriptedServer, dir: &Path) -> tokio::process::Child {
    spawn_reins_with(server, dir, "scripted-model")
}

/// [`spawn_reins`] with `model` as the default model: `reins acp` as the other end-to-end tests
/// start reins (clean environment, no controlling terminal), with stdin to write to.
fn spawn_reins_with(server: &ScriptedServer, dir: &Path, model: &str) -> tokio::process::Child {
    support::reins_command(Some(&server.base_url()), dir, &["acp"])
        .env("REINS_MODEL", model)
        // The workspace is the session's cwd, which reins refuses as the home directory itself.
        .env("HOME", dir.join(".home"))
        .stdin(Stdio::piped())
        .spawn()
        .expect("start reins acp")
}

/// The SDK's line transport over a child's stdin and stdout. The `session/update` params are
/// recorded as they came on the wire (the SDK's types leave out fields at their default, such as
/// a `pending` status, when written again).
fn transport(
    child: &mut tokio::process::Child,
    shared: Shared,
) -> Lines<
    impl futures::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let sink = futures::sink::unfold(stdin, |mut stdin, line: String| async move {
        stdin.write_all(format!("{line}\n").as_bytes()).await?;
        stdin.flush().await?;
        Ok::<_, std::io::Error>(stdin)
    });
    let lines = futures::stream::unfold(BufReader::new(stdout).lines(), move |mut lines| {
        let shared = shared.clone();
        async move {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    if let Ok(message) = serde_json::from_str::<Value>(&line)
                        && message["method"] == "session/update"
                    {
                        lock(&shared).updates.push(message["params"].clone());
                    }
                    Some((Ok(line), lines))
                }
                Ok(None) => None,
                Err(err) => Some((Err(err), lines)),
            }
        }
    });
    Lines::new(sink, lines)
}

/// Runs `test` with a client connected to a fresh `reins acp` in `dir`; answers what it returned
/// and what reins printed on stderr. The client advertises what `can` says.
async fn with_client<T: Send + 'static>(
    server: &ScriptedServer,
    dir: &Path,
    shared: Shared,
    can: Can,
    test: impl AsyncFnOnce(ConnectionTo<Agent>) -> T,
) -> (T, String) {
    let mut child = spawn_reins(server, dir);
    let mut stderr = child.stderr.take().unwrap();
    let transport = transport(&mut child, shared.clone());
    let (reads, writes, asks) = (shared.clone(), shared.clone(), shared.clone());
    let (creates, waits, outputs, kills, releases) =
        (shared.clone(), shared.clone(), shared.clone(), shared.clone(), shared.clone());
    let result = Client
        .v1()
        .name("reins-e2e")
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                let text = {
                    let mut recorded = lock(&reads);
                    recorded.reads.push(request.path.clone());
                    recorded.buffers.get(&request.path).cloned()
                };
                match text.map(Ok).unwrap_or_else(|| std::fs::read_to_string(&request.path)) {
                    Ok(text) => responder.respond(ReadTextFileResponse::new(text)),
                    Err(err) => responder.respond_with_error(agent_client_protocol::Error::new(
                        agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
                        err.to_string(),
                    )),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| {
                std::fs::write(&request.path, &request.content).unwrap();
                let mut recorded = lock(&writes);
                recorded.buffers.remove(&request.path);
                recorded.writes.push((request.path, request.content));
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let mut recorded = lock(&asks);
                recorded.permissions.push(serde_json::to_value(&request).unwrap());
                match recorded.choices.pop_front().unwrap_or(Choice::Pick("reject_once")) {
                    Choice::TypeThenPick(path, text, option) => {
                        recorded.buffers.insert(path, text.to_string());
                        responder.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                            SelectedPermissionOutcome::new(PermissionOptionId::new(option)),
                        )))
                    }
                    Choice::Pick(option) => {
                        responder.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                            SelectedPermissionOutcome::new(PermissionOptionId::new(option)),
                        )))
                    }
                    Choice::Hold => {
                        recorded.held.push(responder);
                        Ok(())
                    }
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateTerminalRequest, responder, _cx| {
                let mut recorded = lock(&creates);
                let id = format!("term-{}", recorded.terminals.len() + 1);
                // The program, its subcommand, and the command it runs (after `--`).
                let program = Path::new(&request.command).file_name().unwrap().to_string_lossy().into_owned();
                let after = request.args.iter().position(|arg| arg == "--").map_or(0, |at| at + 1);
                recorded.terminal_calls.push(format!(
                    "create {program} {} … -- {:?}",
                    request.args.first().cloned().unwrap_or_default(),
                    &request.args[after..]
                ));
                recorded.terminal_args.push(request.args.clone());
                recorded
                    .terminal_env
                    .push(request.env.iter().map(|var| (var.name.clone(), var.value.clone())).collect());
                recorded.terminals.insert(id.clone(), Term::start(&request));
                responder.respond(CreateTerminalResponse::new(id))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WaitForTerminalExitRequest, responder, _cx| {
                let term = {
                    let mut recorded = lock(&waits);
                    recorded.terminal_calls.push(format!("wait_for_exit {}", request.terminal_id));
                    recorded.terminals.get(request.terminal_id.0.as_ref()).cloned()
                };
                let Some(mut term) = term else {
                    return responder.respond_with_error(agent_client_protocol::Error::invalid_params());
                };
                // Answered when the command exits, outside the dispatch loop.
                tokio::spawn(async move {
                    let code = match term.exit.wait_for(Option::is_some).await {
                        Ok(code) => code.unwrap_or(-1),
                        Err(_) => -1,
                    };
                    let status = TerminalExitStatus::new().exit_code(u32::try_from(code).ok());
                    let _ = responder.respond(WaitForTerminalExitResponse::new(status));
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: TerminalOutputRequest, responder, _cx| {
                let mut recorded = lock(&outputs);
                recorded.terminal_calls.push(format!("output {}", request.terminal_id));
                let Some(term) = recorded.terminals.get(request.terminal_id.0.as_ref()) else {
                    return responder.respond_with_error(agent_client_protocol::Error::invalid_params());
                };
                let output = term.output.lock().unwrap().clone();
                let exit = *term.exit.borrow();
                let status = exit.map(|code| TerminalExitStatus::new().exit_code(u32::try_from(code).ok()));
                responder.respond(TerminalOutputResponse::new(output, false).exit_status(status))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: KillTerminalRequest, responder, _cx| {
                let mut recorded = lock(&kills);
                recorded.terminal_calls.push(format!("kill {}", request.terminal_id));
                if let Some(term) = recorded.terminals.get(request.terminal_id.0.as_ref()) {
                    term.kill.notify_one();
                }
                responder.respond(KillTerminalResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReleaseTerminalRequest, responder, _cx| {
                let mut recorded = lock(&releases);
                recorded.terminal_calls.push(format!("release {}", request.terminal_id));
                if let Some(term) = recorded.terminals.remove(request.terminal_id.0.as_ref()) {
                    term.kill.notify_one();
                }
                responder.respond(ReleaseTerminalResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |_notification: SessionNotification, _cx| {
                // Recorded by the transport as sent; here only decoded, as a client would.
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(transport, async |cx: ConnectionTo<Agent>| {
            let capabilities = ClientCapabilities::new()
                .fs(FileSystemCapabilities::new().read_text_file(can.fs).write_text_file(can.fs))
                .terminal(can.terminal);
            let init: InitializeResponse = cx
                .send_request(InitializeRequest::new(ProtocolVersion::V1).client_capabilities(capabilities))
                .block_task()
                .await?;
            assert_eq!(init.protocol_version, ProtocolVersion::V1);
            Ok(test(cx).await)
        })
        .await;
    let result = result.expect("the connection failed");
    drop(child.stdin.take());
    let status = tokio::time::timeout(WAIT, child.wait()).await.expect("reins exits when stdin closes").unwrap();
    let mut err = String::new();
    let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut err).await;
    assert!(status.success(), "reins acp exited with {status}: {err}");
    assert!(!err.contains(CANARY_KEY), "the API key leaked to stderr");
    (result, err)
}

async fn new_session(cx: &ConnectionTo<Agent>, dir: &Path, servers: Vec<McpServer>) -> String {
    let response = cx.send_request(NewSessionRequest::new(dir).mcp_servers(servers)).block_task().await.unwrap();
    response.session_id.0.to_string()
}

fn text(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

async fn prompt(cx: &ConnectionTo<Agent>, session: &str, words: &str) -> PromptResponse {
    let request = PromptRequest::new(session.to_string(), vec![text(words)]);
    tokio::time::timeout(WAIT, cx.send_request(request).block_task()).await.expect("the prompt ends").unwrap()
}

/// The updates of a session as lines: kind, then what matters of it (chunks merged).
fn render(updates: &[Value], dir: &Path) -> String {
    let mut lines: Vec<String> = Vec::new();
    let root = dir.canonicalize().unwrap().display().to_string();
    for params in updates {
        let update = &params["update"];
        let kind = update["sessionUpdate"].as_str().unwrap_or("?");
        let line = match kind {
            "agent_message_chunk" | "agent_thought_chunk" | "user_message_chunk" => {
                let text = update["content"]["text"].as_str().unwrap_or("").to_string();
                if let Some(last) = lines.last_mut()
                    && last.starts_with(&format!("{kind}: "))
                {
                    last.push_str(&text);
                    continue;
                }
                format!("{kind}: {text}")
            }
            "usage_update" => format!("usage_update: size {}", update["size"]),
            _ => {
                let mut shown = update.clone();
                shown.as_object_mut().unwrap().remove("sessionUpdate");
                format!("{kind}: {shown}")
            }
        };
        lines.push(line.replace(&root, "$W").replace(dir.display().to_string().as_str(), "$W"));
    }
    lines.join("\n")
}

/// The updates of the conversation: the slash commands a session announces are left out (see
/// [`a_session_announces_its_slash_commands_after_new_and_load`]).
fn updates(shared: &Shared) -> Vec<Value> {
    lock(shared)
        .updates
        .iter()
        .filter(|update| update["update"]["sessionUpdate"] != "available_commands_update")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_session_announces_its_slash_commands_after_new_and_load() {
    let dir = workspace(&[(".reins-home-for-test/prompts/review.md", "---\ndescription: Review it\n---\nReview $1.")]);
    let server = ScriptedServer::start(vec![Reply::text("Reviewed.")]).await;
    let shared = Shared::default();
    let (session, stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "/review \"the parser\"").await;
        session
    })
    .await;
    let announced: Vec<Value> = lock(&shared)
        .updates
        .iter()
        .filter(|update| update["update"]["sessionUpdate"] == "available_commands_update")
        .cloned()
        .collect();
    assert_eq!(announced.len(), 1, "{stderr}");
    assert_eq!(announced[0]["sessionId"], session.as_str());
    let names: Vec<&str> = announced[0]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["compact", "model", "thinking", "tools", "new", "fork", "tree", "export", "review"]);
    let requests = server.chat_requests();
    assert_eq!(requests[0].body["messages"][1]["content"], "Review the parser.");

    let loaded = Shared::default();
    with_client(&server, dir.path(), loaded.clone(), NOTHING, async |cx| {
        cx.send_request(LoadSessionRequest::new(session.clone(), dir.path())).block_task().await.unwrap();
    })
    .await;
    let last = lock(&loaded).updates.last().cloned().unwrap();
    assert_eq!(last["update"]["sessionUpdate"], "available_commands_update", "after the replay: {last}");
}

#[tokio::test]
async fn a_prompt_streams_thoughts_text_and_usage_and_ends_the_turn() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("Hello from reins.").with_thinking("Greet back.")]).await;
    let shared = Shared::default();
    let ((session, stop), stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        let stop = prompt(&cx, &session, "hi").await;
        (session, stop)
    })
    .await;
    assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
    expect![[r#"
        agent_thought_chunk: Greet back.
        agent_message_chunk: Hello from reins.
        usage_update: size 128000"#]]
    .assert_eq(&render(&updates(&shared), dir.path()));
    assert!(updates(&shared).iter().all(|update| update["sessionId"] == session.as_str()));
    assert_eq!(stderr, "", "nothing on stderr in a default setup");
    // The session is a reins session, in the same store as the CLI's.
    let listed = support::reins(None, dir.path(), &["sessions", "list", "--json"]).await;
    assert!(listed.stdout.contains(&session), "{}", listed.stdout);
}

#[tokio::test]
async fn the_agent_reads_the_unsaved_buffer_and_writes_an_allowed_edit_through_the_client() {
    let dir = workspace(&[("notes.txt", "on disk\n")]);
    let path = dir.path().canonicalize().unwrap().join("notes.txt");
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "read", json!({"path": "notes.txt"})),
        Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "unsaved", "newText": "edited"}]}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let shared = Shared::default();
    lock(&shared).buffers.insert(path.clone(), "unsaved text\n".into());
    lock(&shared).choices.push_back(Choice::Pick("allow_once"));
    let (stop, _) = with_client(&server, dir.path(), shared.clone(), FS, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "fix the notes").await
    })
    .await;
    assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
    let recorded = lock(&shared);
    assert!(recorded.reads.contains(&path), "read through fs/read_text_file: {:?}", recorded.reads);
    assert_eq!(recorded.writes, vec![(path.clone(), "edited text\n".to_string())]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "edited text\n");
    // The model saw the buffer, not the disk.
    let requests = server.chat_requests();
    assert!(requests[1].body.to_string().contains("unsaved text"), "{}", requests[1].body);
    let permission = &recorded.permissions[0];
    let options: Vec<&str> =
        permission["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert_eq!(
        permission["toolCall"]["content"][0],
        json!({"type": "diff", "path": path, "oldText": "unsaved text\n", "newText": "edited text\n"})
    );
    drop(recorded);
    expect![[r#"
        tool_call: {"rawInput":{"path":"notes.txt"},"toolCallId":"c1","title":"Read notes.txt","kind":"read","status":"in_progress","locations":[{"path":"$W/notes.txt"}]}
        tool_call_update: {"rawOutput":{"output":"unsaved text\n","isError":false},"toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"unsaved text\n"}}]}
        tool_call: {"status":"pending","toolCallId":"c2","title":"Edit notes.txt","kind":"edit","locations":[{"path":"$W/notes.txt"}],"rawInput":{"path":"notes.txt","edits":[{"oldText":"unsaved","newText":"edited"}]}}
        tool_call_update: {"status":"in_progress","toolCallId":"c2"}
        tool_call_update: {"rawOutput":{"output":"Edited notes.txt: 1 replacement\n\n@@ -1 +1 @@\n-unsaved text\n+edited text","isError":false,"details":{"path":"notes.txt","replacements":1,"notes":[],"diff":"--- notes.txt\n+++ notes.txt\n@@ -1 +1 @@\n-unsaved text\n+edited text\n"}},"toolCallId":"c2","status":"completed","content":[{"type":"diff","path":"$W/notes.txt","oldText":"unsaved text\n","newText":"edited text\n"},{"type":"content","content":{"type":"text","text":"Edited notes.txt: 1 replacement\n\n@@ -1 +1 @@\n-unsaved text\n+edited text"}}]}
        agent_message_chunk: Done.
        usage_update: size 128000"#]]
    .assert_eq(&render(&updates(&shared), dir.path()));
}

#[tokio::test]
async fn an_edit_of_a_buffer_the_user_typed_in_meanwhile_is_rebased_onto_it_or_refused_with_the_place() {
    let dir = workspace(&[("notes.txt", "one\ntwo\nthree\n")]);
    let path = dir.path().canonicalize().unwrap().join("notes.txt");
    let edit = |id: &str, old: &str, new: &str| {
        Reply::tool_call(id, "edit", json!({"path": "notes.txt", "edits": [{"oldText": old, "newText": new}]}))
    };
    let server =
        ScriptedServer::start(vec![edit("c1", "two", "TWO"), edit("c2", "three", "THREE"), Reply::text("Done.")]).await;
    let shared = Shared::default();
    // While asked about c1, the user adds a line at the top: c1 lands below it.
    lock(&shared).choices.push_back(Choice::TypeThenPick(path.clone(), "zero\none\ntwo\nthree\n", "allow_once"));
    // While asked about c2, the user rewrites the very line c2 changes: c2 is refused, with the place.
    lock(&shared).choices.push_back(Choice::TypeThenPick(path.clone(), "zero\none\nTWO\n3\n", "allow_once"));
    with_client(&server, dir.path(), shared.clone(), FS, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "shout").await
    })
    .await;
    let recorded = lock(&shared);
    assert_eq!(recorded.writes, vec![(path.clone(), "zero\none\nTWO\nthree\n".to_string())]);
    assert_eq!(recorded.buffers[&path], "zero\none\nTWO\n3\n", "the user's line stays");
    let told = server.chat_requests()[2].body["messages"].to_string();
    assert!(told.contains("the user changed the same lines meanwhile"), "{told}");
}

#[tokio::test]
async fn a_rejected_edit_reaches_the_model_as_the_tool_result_and_nothing_is_written() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "write", json!({"path": "a.txt", "content": "two\n"})),
        Reply::text("Understood."),
    ])
    .await;
    let shared = Shared::default();
    lock(&shared).choices.push_back(Choice::Pick("reject_once"));
    let (stop, _) = with_client(&server, dir.path(), shared.clone(), FS, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "overwrite a.txt").await
    })
    .await;
    assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n");
    assert!(lock(&shared).writes.is_empty());
    let result = server.chat_requests()[1].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(result["role"], "tool");
    assert_eq!(result["content"], "The user rejected this write of a.txt.");
    let failed = updates(&shared).into_iter().find(|update| update["update"]["status"] == "failed");
    assert!(failed.is_some(), "the call ends failed");
}

#[tokio::test]
async fn cancel_answers_the_pending_permission_and_the_prompt_returns_cancelled_at_once() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "write", json!({"path": "a.txt", "content": "two\n"})),
        Reply::text("never"),
    ])
    .await;
    let shared = Shared::default();
    lock(&shared).choices.push_back(Choice::Hold);
    let asked = shared.clone();
    let (elapsed, _) = with_client(&server, dir.path(), shared.clone(), FS, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        let request = PromptRequest::new(session.clone(), vec![text("overwrite a.txt")]);
        let turn = cx.send_request(request).block_task();
        let waiting = async {
            while lock(&asked).held.is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let started = Instant::now();
            cx.send_notification(CancelNotification::new(session.clone())).unwrap();
            // The client answers its pending request as cancelled, as the spec asks.
            for responder in std::mem::take(&mut lock(&asked).held) {
                responder.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)).unwrap();
            }
            started
        };
        let (response, started) = tokio::join!(turn, waiting);
        let elapsed = started.elapsed();
        assert_eq!(serde_json::to_value(response.unwrap().stop_reason).unwrap(), "cancelled");
        elapsed
    })
    .await;
    assert!(elapsed < Duration::from_millis(500), "the turn took {elapsed:?} to end after session/cancel");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "one\n");
    assert_eq!(server.chat_requests().len(), 1, "no model call after the cancel");
}

#[tokio::test]
async fn a_session_loads_in_a_new_process_with_its_conversation_replayed_and_is_listed() {
    let dir = workspace(&[("a.txt", "alpha\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "read", json!({"path": "a.txt"})),
        Reply::text("It says alpha."),
        Reply::text("Still alpha."),
    ])
    .await;
    let first = Shared::default();
    let (session, _) = with_client(&server, dir.path(), first.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "what does a.txt say?").await;
        session
    })
    .await;

    let second = Shared::default();
    let (listed, _) = with_client(&server, dir.path(), second.clone(), NOTHING, async |cx| {
        let listed =
            cx.send_request(ListSessionsRequest::new().cwd(dir.path().to_path_buf())).block_task().await.unwrap();
        cx.send_request(LoadSessionRequest::new(session.clone(), dir.path())).block_task().await.unwrap();
        // The whole replay came before the answer (the SDK hands messages on in the order read).
        let replayed = render(&updates(&second), dir.path());
        assert!(replayed.contains("agent_message_chunk: It says alpha."), "replayed before the answer: {replayed}");
        // Loaded, it goes on where it was.
        let stop = prompt(&cx, &session, "and now?").await;
        assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
        listed
    })
    .await;
    let ids: Vec<String> = listed.sessions.iter().map(|info| info.session_id.0.to_string()).collect();
    assert_eq!(ids, std::slice::from_ref(&session));
    assert_eq!(listed.sessions[0].title.as_deref(), Some("what does a.txt say?"));
    expect![[r#"
        user_message_chunk: what does a.txt say?
        tool_call: {"status":"pending","toolCallId":"c1","title":"Read a.txt","kind":"read","locations":[{"path":"$W/a.txt"}],"rawInput":{"path":"a.txt"}}
        tool_call_update: {"rawOutput":{"output":"alpha\n","isError":false},"toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"alpha\n"}}]}
        agent_message_chunk: It says alpha.
        usage_update: size 128000
        agent_message_chunk: Still alpha.
        usage_update: size 128000"#]]
    .assert_eq(&render(&updates(&second), dir.path()));
    // The third model call had the whole conversation.
    let last = &server.chat_requests()[2].body;
    assert!(last.to_string().contains("It says alpha."), "{last}");
}

/// The `todo` tool's list is the session's plan: each call sends the whole list as a `plan`
/// update, a checklist in the answer is only text, and a loaded session shows the plan its leaf
/// has after the replay.
#[tokio::test]
async fn the_todo_list_is_the_plan_and_a_load_shows_it_again() {
    let dir = workspace(&[]);
    let step = |content: &str, status: &str| json!({"content": content, "status": status});
    let server = ScriptedServer::start(vec![
        Reply::tool_call("t1", "todo", json!({"todos": [step("read", "in_progress"), step("fix", "pending")]})),
        Reply::tool_call("t2", "todo", json!({"todos": [step("read", "completed"), step("fix", "in_progress")]})),
        Reply::text("Working on it.\n- [x] not\n- [ ] a plan"),
    ])
    .await;
    let shared = Shared::default();
    let (session, stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "fix it").await;
        session
    })
    .await;
    let plans: Vec<String> = updates(&shared)
        .iter()
        .filter(|update| update["update"]["sessionUpdate"] == "plan")
        .map(|update| update["update"]["entries"].to_string())
        .collect();
    expect![[r#"
        [
            "[{\"content\":\"read\",\"priority\":\"medium\",\"status\":\"in_progress\"},{\"content\":\"fix\",\"priority\":\"medium\",\"status\":\"pending\"}]",
            "[{\"content\":\"read\",\"priority\":\"medium\",\"status\":\"completed\"},{\"content\":\"fix\",\"priority\":\"medium\",\"status\":\"in_progress\"}]",
        ]
    "#]]
    .assert_debug_eq(&plans);
    // Each plan comes while its call runs, between the call's start and its end.
    let kinds: Vec<String> =
        updates(&shared).iter().map(|u| u["update"]["sessionUpdate"].as_str().unwrap_or("").to_string()).collect();
    let first_plan = kinds.iter().position(|kind| kind == "plan").unwrap();
    assert_eq!(kinds[first_plan - 1], "tool_call", "{kinds:?}");
    assert_eq!(kinds[first_plan + 1], "tool_call_update", "{kinds:?}");

    let loaded = Shared::default();
    with_client(&server, dir.path(), loaded.clone(), NOTHING, async |cx| {
        cx.send_request(LoadSessionRequest::new(session.clone(), dir.path())).block_task().await.unwrap();
    })
    .await;
    let replay = updates(&loaded);
    let replayed_plans: Vec<&Value> = replay.iter().filter(|u| u["update"]["sessionUpdate"] == "plan").collect();
    assert_eq!(replayed_plans.len(), 1, "the plan where the leaf is, once: {replay:?}");
    assert_eq!(
        replayed_plans[0]["update"]["entries"][1],
        json!({"content": "fix", "priority": "medium", "status": "in_progress"})
    );
    let last_message = replay.iter().rposition(|u| u["update"]["sessionUpdate"] == "agent_message_chunk").unwrap();
    let plan_at = replay.iter().position(|u| u["update"]["sessionUpdate"] == "plan").unwrap();
    assert!(plan_at > last_message, "the plan comes after the replayed conversation: {replay:?}");
    assert_eq!(stderr, "");
}

/// ACP has no way to move a client to another session: `/new` says to use the client's own new
/// chat and makes nothing; `/fork` makes the fork, names it and how to open it (it is listed and
/// loads), and the chat stays where it was.
#[tokio::test]
async fn new_and_fork_over_acp_say_where_to_go_and_the_chat_stays() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("Hello."), Reply::text("Still here.")]).await;
    let shared = Shared::default();
    let ((session, listed), stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        let stop = prompt(&cx, &session, "/new").await;
        assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
        prompt(&cx, &session, "hi").await;
        prompt(&cx, &session, "/fork").await;
        prompt(&cx, &session, "still there?").await;
        let listed =
            cx.send_request(ListSessionsRequest::new().cwd(dir.path().to_path_buf())).block_task().await.unwrap();
        (session, listed)
    })
    .await;
    // The agent's words to the chat, in order (answers stream in chunks).
    let said: String = updates(&shared)
        .iter()
        .filter(|u| u["sessionId"] == session.as_str() && u["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["update"]["content"]["text"].as_str().unwrap().to_string())
        .collect();
    let ids: Vec<String> = listed.sessions.iter().map(|info| info.session_id.0.to_string()).collect();
    assert_eq!(ids.len(), 2, "this chat and its fork, and nothing /new made: {ids:?}");
    let fork = ids.iter().find(|id| **id != session).unwrap().clone();
    assert_eq!(
        said,
        format!(
            "This chat stays as it is: start a new chat from your client (its new session or new thread command), \
             which shows it. An agent cannot move the client to another session.Hello.Forked into session \
             {fork}.\nIt is in your client's session list (session/load {fork}): open it there to go on from the \
             fork. This chat stays in session {session}.Still here."
        )
    );
    // The next prompt had this chat's conversation.
    assert!(server.chat_requests()[1].body.to_string().contains("Hello."));

    // The fork loads, with the conversation it was forked with.
    let loaded = Shared::default();
    with_client(&server, dir.path(), loaded.clone(), NOTHING, async |cx| {
        cx.send_request(LoadSessionRequest::new(fork.clone(), dir.path())).block_task().await.unwrap();
    })
    .await;
    let replayed = render(&updates(&loaded), dir.path());
    assert!(replayed.starts_with("user_message_chunk: hi\nagent_message_chunk: Hello."), "{replayed}");
    assert_eq!(stderr, "");
}

/// A loaded session shows its edits as the live run did: the same whole-file diff block, from the
/// session's `reins.file_change` record, its texts rebuilt where the record keeps a patch; an edit
/// whose texts cannot be had shows its text result.
#[tokio::test]
async fn a_loaded_session_replays_an_edit_with_the_diff_block_of_the_live_run() {
    let big: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
    let dir = workspace(&[("a.txt", "one\n"), ("big.txt", big.as_str())]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "edit", json!({"path": "a.txt", "edits": [{"oldText": "one", "newText": "two"}]})),
        Reply::tool_call(
            "c2",
            "edit",
            json!({"path": "big.txt", "edits": [{"oldText": "line 5\n", "newText": "five\n"}]}),
        ),
        Reply::text("Done."),
    ])
    .await;
    let first = Shared::default();
    lock(&first).choices.push_back(Choice::Pick("allow_always"));
    let (session, _) = with_client(&server, dir.path(), first.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "edit both").await;
        session
    })
    .await;
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "two\n");
    let second = Shared::default();
    with_client(&server, dir.path(), second.clone(), NOTHING, async |cx| {
        cx.send_request(LoadSessionRequest::new(session.clone(), dir.path())).block_task().await.unwrap();
    })
    .await;
    // The final update of each call, live and replayed.
    let result = |shared: &Shared, id: &str| {
        updates(shared)
            .into_iter()
            .map(|params| params["update"].clone())
            .rfind(|u| {
                u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == id && u.get("rawOutput").is_some()
            })
            .unwrap_or_else(|| panic!("no result of {id}"))
    };
    let (live, replayed) = (result(&first, "c1"), result(&second, "c1"));
    let path = dir.path().canonicalize().unwrap().join("a.txt");
    assert_eq!(live["content"][0], json!({"type": "diff", "path": path, "oldText": "one\n", "newText": "two\n"}));
    assert_eq!(replayed["content"], live["content"], "the replayed edit shows the live diff");
    // A large file's edit is kept as a patch: its texts come back from the file as it is now.
    let (big_live, big_replayed) = (result(&first, "c2"), result(&second, "c2"));
    assert_eq!(big_replayed["content"][0]["type"], "diff", "{big_replayed}");
    assert_eq!(big_replayed["content"], big_live["content"], "the replayed edit shows the live diff");
    // Changed since, the file gives no texts, and none are made up: the edit shows its text result.
    std::fs::write(dir.path().join("big.txt"), format!("mine\n{big}")).unwrap();
    let third = Shared::default();
    with_client(&server, dir.path(), third.clone(), NOTHING, async |cx| {
        cx.send_request(LoadSessionRequest::new(session.clone(), dir.path())).block_task().await.unwrap();
    })
    .await;
    let big_replayed = result(&third, "c2");
    let kinds: Vec<&str> =
        big_replayed["content"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["content"], "{big_replayed}");
    assert!(big_replayed["content"][0]["content"]["text"].as_str().unwrap().contains("+five"), "{big_replayed}");
}

/// An error quotes what it refuses only in part: a 5 MB `cwd` does not come back as a 5 MB answer.
#[tokio::test]
async fn errors_quote_a_huge_argument_only_in_part() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![]).await;
    let mut child = spawn_reins(&server, dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let huge = "x".repeat(5 << 20);
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {"cwd": huge}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": format!("/{huge}"), "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/load",
               "params": {"sessionId": huge, "cwd": dir.path(), "mcpServers": []}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt", "params": {"sessionId": huge, "prompt": []}}),
    ];
    let mut answers = std::collections::BTreeMap::new();
    for request in requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
        let line = tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap().expect("a line");
        assert!(line.len() < 8 * 1024, "an answer of {} bytes: {}…", line.len(), &line[..200.min(line.len())]);
        let answer: Value = serde_json::from_str(&line).unwrap();
        answers.insert(answer["id"].as_u64().unwrap(), answer);
    }
    for id in 1..=4 {
        let message = answers[&id]["error"]["message"].as_str().unwrap();
        assert!(message.contains("xxx…"), "the error quotes the start of what it refused: {message}");
    }
    // A run of x's shows as one X.
    let said = |id: u64| {
        let message = answers[&id]["error"]["message"].as_str().unwrap();
        message.split('x').filter(|part| !part.is_empty()).collect::<Vec<_>>().join("X")
    };
    expect![[r#"
        [
            "cwd X… is not an absolute directory",
            "cwd /X… is not a directory",
            "no session X… is open; create it with session/new or session/load",
        ]
    "#]]
    .assert_debug_eq(&[said(1), said(2), said(4)]);
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success());
}

/// An MCP server of `session/new` that cannot start is told in the session, as a failed step at
/// the start of the next turn (and in the log), and the turn goes on without its tools.
#[tokio::test]
async fn an_mcp_server_that_cannot_start_is_told_in_the_session() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("Hello.")]).await;
    let ghost = McpServer::Stdio(McpServerStdio::new("ghost", "/no/such/mcp-server"));
    let shared = Shared::default();
    let (stop, stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), vec![ghost]).await;
        prompt(&cx, &session, "hi").await
    })
    .await;
    assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
    let seen = updates(&shared);
    let mut kinds: Vec<&str> = seen.iter().map(|u| u["update"]["sessionUpdate"].as_str().unwrap()).collect();
    kinds.dedup();
    assert_eq!(kinds, ["tool_call", "agent_message_chunk", "usage_update"], "{seen:?}");
    let notice = &seen[0]["update"];
    assert_eq!(notice["status"], "failed");
    let title = notice["title"].as_str().unwrap();
    assert!(title.starts_with("MCP server `ghost` could not be started"), "{title}");
    let said = notice["content"][0]["content"]["text"].as_str().unwrap();
    assert!(said.ends_with("going on without its tools"), "{said}");
    assert!(stderr.contains("MCP server `ghost` could not be started"), "the log has it too: {stderr}");
    // The model was not told about it.
    assert!(!server.chat_requests()[0].body.to_string().contains("ghost"));
}

/// Issue 30: a skill file that is not quite one (no description) is told once per connection, in
/// the log and in the first session as a failed step at the start of its turn; a default setup
/// is silent.
#[tokio::test]
async fn a_skill_file_that_is_not_quite_one_is_told_once_and_a_default_setup_is_silent() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("Hello."), Reply::text("One."), Reply::text("Two.")]).await;
    let shared = Shared::default();
    let (_, stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), vec![]).await;
        prompt(&cx, &session, "hi").await
    })
    .await;
    assert!(!stderr.contains("skill"), "a default setup is silent: {stderr}");
    assert!(updates(&shared).iter().all(|u| u["update"]["sessionUpdate"] != "tool_call"));

    let skill = dir.path().join(".home/.agents/skills/half/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(&skill, "---\nname: half\n---\nNo description.\n").unwrap();
    let shared = Shared::default();
    let (_, stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let first = new_session(&cx, dir.path(), vec![]).await;
        prompt(&cx, &first, "one").await;
        let second = new_session(&cx, dir.path(), vec![]).await;
        prompt(&cx, &second, "two").await
    })
    .await;
    let seen = updates(&shared);
    let notices: Vec<&Value> = seen.iter().filter(|u| u["update"]["sessionUpdate"] == "tool_call").collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    let notice = &notices[0]["update"];
    assert_eq!(
        (notice["status"].as_str(), notice["title"].as_str()),
        (Some("failed"), Some("some skill files are not quite skills:"))
    );
    let said = notice["content"][0]["content"]["text"].as_str().unwrap();
    assert!(said.ends_with("half/SKILL.md: description is required; the skill is not loaded"), "{said}");
    assert_eq!(stderr.matches("description is required").count(), 1, "the log has it once: {stderr}");
}

/// The reference server over streamable HTTP on a free port; killed when dropped. The port is
/// free when chosen, not when node binds it: a server that exits (the port was taken meanwhile)
/// is started again on another, and a slow start on a loaded machine is waited for.
async fn everything_over_http(everything: &Path) -> (tokio::process::Child, String) {
    let mut tried = Vec::new();
    for _ in 0..3 {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = tokio::process::Command::new("node")
            .args([everything.display().to_string().as_str(), "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut exited = None;
        for _ in 0..600 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return (child, format!("http://127.0.0.1:{port}/mcp"));
            }
            if let Ok(Some(status)) = child.try_wait() {
                exited = Some(status);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match exited {
            Some(status) => tried.push(format!("port {port}: node exited ({status})")),
            None => {
                tried.push(format!("port {port}: node runs but does not listen after 30 s"));
                break;
            }
        }
    }
    panic!("server-everything did not listen: {tried:?}");
}

#[tokio::test]
async fn mcp_servers_of_session_new_serve_the_session_over_stdio_and_http_after_permission() {
    let everything = support::mcp_prefix().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let (_http, url) = everything_over_http(&everything).await;
    let stdio = McpServer::Stdio(
        McpServerStdio::new("everything", "node").args(vec![everything.display().to_string(), "stdio".into()]),
    );
    let http = McpServer::Http(McpServerHttp::new("everything", url));
    for server_config in [stdio, http] {
        let dir = workspace(&[]);
        let server = ScriptedServer::start(vec![
            Reply::tool_call("c1", "mcp__everything__echo", json!({"message": "ping"})),
            Reply::text("It echoed."),
        ])
        .await;
        let shared = Shared::default();
        lock(&shared).choices.push_back(Choice::Pick("allow_always"));
        let (stop, _) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
            let session = new_session(&cx, dir.path(), vec![server_config.clone()]).await;
            prompt(&cx, &session, "echo ping").await
        })
        .await;
        assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
        let recorded = lock(&shared);
        assert_eq!(recorded.permissions[0]["toolCall"]["title"], "echo (everything, MCP)");
        let result = server.chat_requests()[1].body["messages"].as_array().unwrap().last().unwrap().clone();
        assert!(result["content"].as_str().unwrap().contains("ping"), "{result}");
    }
}

/// Issue 34: sessions given the same MCP servers share one process, and the sessions beyond the
/// few used last are released (their files closed) and answer again when prompted.
#[tokio::test]
async fn sessions_share_the_same_mcp_servers_and_idle_ones_are_released_and_come_back() {
    let everything = support::mcp_prefix().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let stdio = McpServer::Stdio(
        McpServerStdio::new("everything", "node").args(vec![everything.display().to_string(), "stdio".into()]),
    );
    let dir = workspace(&[]);
    let root = dir.path().canonicalize().unwrap();
    let server = ScriptedServer::start(vec![]).await;
    let ((processes, session_files, stop), _) =
        with_client(&server, dir.path(), Shared::default(), NOTHING, async |cx| {
            let mut sessions = Vec::new();
            for n in 0..12 {
                sessions.push(new_session(&cx, dir.path(), vec![stdio.clone()]).await);
                server.push(Reply::text(format!("answer {n}")));
                // A run waits for the session's MCP servers: they are up once it ends.
                prompt(&cx, &sessions[n], "hello").await;
            }
            let (processes, session_files) = (processes_in(&root, "server-everything"), reins_session_files(&root));
            server.push(Reply::text("back again"));
            let stop = prompt(&cx, &sessions[0], "are you there?").await;
            (processes, session_files, stop)
        })
        .await;
    assert_eq!(processes, 1, "one server process for twelve sessions with the same servers");
    assert!(session_files <= 9, "{session_files} session files held open");
    assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
    assert_eq!(server.chat_requests().len(), 13);
}

/// The processes working in `root` whose command line names `what`.
fn processes_in(root: &Path, what: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == root))
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(what))
        })
        .count()
}

/// The session files the `reins acp` working in `root` holds open.
fn reins_session_files(root: &Path) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == root))
        .filter(|entry| std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| cmdline.ends_with(b"acp\0")))
        .flat_map(|entry| std::fs::read_dir(entry.path().join("fd")).into_iter().flatten().flatten())
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.extension().is_some_and(|ext| ext == "jsonl"))
        .count()
}

/// Raw lines, no SDK: what a broken client sends gets JSON-RPC errors, and reins keeps serving.
#[tokio::test]
async fn malformed_and_unknown_messages_get_errors_and_the_agent_keeps_serving() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![]).await;
    let mut child = spawn_reins(&server, dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = Vec::new();
    // Before `initialize` has been answered, the SDK refuses requests (-32600), and says why.
    let before = [
        r#"{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
    ];
    let after = [
        "{not json",
        "[1,2]",
        r#"{"jsonrpc":"2.0","id":1.5,"method":"initialize","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"no/such/notification","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
        r#"{"jsonrpc":"2.0","id":"five","method":"session/prompt","params":{"sessionId":7}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"session/list","params":{"cwd":"/nonexistent/dir"}}"#,
    ];
    for (lines_sent, expected) in [(&before[..], 2), (&after[..], after.len() - 1)] {
        for line in lines_sent {
            stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        }
        stdin.flush().await.unwrap();
        for _ in 0..expected {
            let line = tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap().expect("a line");
            let answer: Value = serde_json::from_str(&line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"));
            answers.push(format!("{} {}", answer["id"], answer["error"]["code"]));
        }
    }
    answers.sort();
    expect![[r#"
        [
            "\"five\" -32602",
            "0 -32600",
            "1 null",
            "1.5 -32600",
            "2 -32601",
            "3 -32602",
            "4 -32602",
            "6 -32602",
            "null -32600",
            "null -32700",
        ]
    "#]]
    .assert_debug_eq(&answers);
    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap();
    assert!(status.success());
    assert_eq!(tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap(), None, "nothing more on stdout");
}

#[tokio::test]
async fn a_command_runs_in_the_client_terminal_which_the_tool_call_shows() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "echo hello from bash; exit 3"})),
        Reply::text("It failed with 3."),
    ])
    .await;
    let shared = Shared::default();
    lock(&shared).choices.push_back(Choice::Pick("allow_once"));
    let (stop, _) = with_client(&server, dir.path(), shared.clone(), Can { fs: true, terminal: true }, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "run it").await
    })
    .await;
    assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
    let recorded = lock(&shared);
    expect![[r#"
        [
            "create reins sandbox-exec … -- [\"bash\", \"-c\", \"echo hello from bash; exit 3\"]",
            "wait_for_exit term-1",
            "output term-1",
            "release term-1",
        ]
    "#]]
    .assert_debug_eq(&recorded.terminal_calls);
    // What the client shows is the command; the sandbox and the variables to keep (names only,
    // never the keys) go in one variable of the terminal's environment.
    let args = &recorded.terminal_args[0];
    assert_eq!(args, &["sandbox-exec", "--", "bash", "-c", "echo hello from bash; exit 3"]);
    let env = &recorded.terminal_env[0];
    assert_eq!(env.len(), 1, "{env:?}");
    assert_eq!(env[0].0, "REINS_SANDBOX_POLICY");
    let policy: Value = serde_json::from_str(&env[0].1).unwrap();
    assert_eq!(policy["mode"], "workspace-write", "{policy}");
    assert!(policy["keep"].as_array().unwrap().contains(&json!("PATH")), "{policy}");
    assert_eq!(policy["roots"], json!([dir.path()]), "{policy}");
    assert!(policy["denyRead"].to_string().contains(".ssh"), "{policy}");
    assert!(!env[0].1.contains("OPENAI_API_KEY") && !env[0].1.contains(CANARY_KEY), "{policy}");
    drop(recorded);
    let result = server.chat_requests()[1].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(result["content"], "hello from bash\n\nCommand exited with code 3");
    let calls: Vec<Value> =
        updates(&shared).into_iter().filter(|update| update["update"]["toolCallId"] == "c1").collect();
    let terminal_shown = calls
        .iter()
        .any(|update| update["update"]["content"][0] == json!({"type": "terminal", "terminalId": "term-1"}));
    assert!(terminal_shown, "the tool call shows the terminal: {calls:#?}");
    let last = &calls.last().unwrap()["update"];
    assert_eq!((last["status"].as_str(), &last["content"][0]["type"]), (Some("failed"), &json!("terminal")));
}

#[tokio::test]
async fn closing_stdin_mid_turn_cancels_it_saves_the_session_and_exits_cleanly() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("too late").with_delay_ms(30_000)]).await;
    let mut child = spawn_reins(&server, dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let cwd = dir.path().display().to_string();
    let mut send = async |line: Value| {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    let _ = tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap();
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}})).await;
    let answer: Value =
        serde_json::from_str(&tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap().unwrap()).unwrap();
    let session = answer["result"]["sessionId"].as_str().unwrap().to_string();
    let prompt = json!({"type": "text", "text": "think slowly"});
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": session, "prompt": [prompt]}})).await;
    let started = Instant::now();
    while server.chat_requests().is_empty() {
        assert!(started.elapsed() < WAIT, "the model was never called");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("reins exits").unwrap();
    assert!(status.success(), "{status}");
    while let Ok(Ok(Some(line))) = tokio::time::timeout(WAIT, lines.next_line()).await {
        serde_json::from_str::<Value>(&line).unwrap_or_else(|err| panic!("not a protocol line ({err}): {line}"));
    }
    // The prompt is in the session file, which the CLI can continue.
    let listed = support::reins(None, dir.path(), &["sessions", "list", "--json"]).await;
    assert!(listed.stdout.contains(&session) && listed.stdout.contains("think slowly"), "{}", listed.stdout);
}

/// One JSON-RPC exchange over raw lines: sends `request`, answers the response to its id
/// (notifications before it are skipped).
async fn exchange(
    stdin: &mut tokio::process::ChildStdin,
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    request: Value,
) -> Value {
    stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
    loop {
        let line = tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap().expect("a line");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == request["id"] {
            return message;
        }
    }
}

#[tokio::test]
async fn images_are_offered_and_passed_on_only_when_the_model_reads_them() {
    let dir = workspace(&[]);
    let cwd = dir.path().display().to_string();
    let image = json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="});
    for (model, takes) in [("gpt-4.1", true), ("scripted-model", false)] {
        let server = ScriptedServer::start(vec![Reply::text("A small picture.")]).await;
        let mut child = spawn_reins_with(&server, dir.path(), model);
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
        let init = exchange(&mut stdin, &mut lines, init).await;
        assert_eq!(init["result"]["agentCapabilities"]["promptCapabilities"]["image"], takes, "{model}");
        let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}});
        let session = exchange(&mut stdin, &mut lines, new).await["result"]["sessionId"].clone();
        let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "what is this?"}, image]}});
        let answer = exchange(&mut stdin, &mut lines, prompt).await;
        if takes {
            assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
            let body = server.chat_requests()[0].body.to_string();
            assert!(body.contains("data:image/png;base64,iVBORw0KGgo="), "{body}");
        } else {
            assert_eq!(answer["error"]["code"], -32602, "{answer}");
            assert!(answer["error"]["message"].as_str().unwrap().contains("does not take images"), "{answer}");
            assert!(server.chat_requests().is_empty());
        }
        drop(stdin);
        assert!(tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap().success());
    }
}

#[tokio::test]
async fn the_diagnostics_command_of_the_config_tells_the_model_what_its_edit_broke() {
    let check = "grep -n TODO src/*.rs | while IFS=: read -r file line _; do echo \"$file:$line:1: error: TODO left\"; done; exit 1";
    let dir = workspace(&[("src/lib.rs", "fn a() {}\n"), ("check.sh", check)]);
    std::fs::create_dir_all(reins_home(dir.path())).unwrap();
    std::fs::write(reins_home(dir.path()).join("config.toml"), "[diagnostics]\ncommand = \"sh check.sh\"\n").unwrap();
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "write", json!({"path": "src/new.rs", "content": "// TODO later\n"})),
        Reply::text("Noted."),
    ])
    .await;
    let shared = Shared::default();
    lock(&shared).choices.push_back(Choice::Pick("allow_once"));
    let (stop, _) = with_client(&server, dir.path(), shared.clone(), FS, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "add a file").await
    })
    .await;
    assert_eq!(serde_json::to_value(stop.stop_reason).unwrap(), "end_turn");
    let result = server.chat_requests()[1].body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    expect![[r#"
        Created src/new.rs (14 bytes)

        The edit resulted in these new problems:
        src/new.rs:1:1: error: TODO left"#]]
    .assert_eq(result.as_str().unwrap());
}

#[tokio::test]
async fn cancel_kills_the_command_in_the_client_terminal() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "bash", json!({"command": "sleep 30"})),
        Reply::text("never"),
    ])
    .await;
    let shared = Shared::default();
    lock(&shared).choices.push_back(Choice::Pick("allow_once"));
    let watched = shared.clone();
    let (elapsed, _) = with_client(&server, dir.path(), shared.clone(), Can { fs: true, terminal: true }, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        let turn = cx.send_request(PromptRequest::new(session.clone(), vec![text("wait a while")])).block_task();
        let cancelling = async {
            while !lock(&watched).terminal_calls.iter().any(|call| call.starts_with("wait_for_exit")) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            cx.send_notification(CancelNotification::new(session.clone())).unwrap();
            Instant::now()
        };
        let (response, started) = tokio::join!(turn, cancelling);
        assert_eq!(serde_json::to_value(response.unwrap().stop_reason).unwrap(), "cancelled");
        let elapsed = started.elapsed();
        // The terminal is released right after, in the background.
        while !lock(&watched).terminal_calls.iter().any(|call| call.starts_with("release")) {
            assert!(started.elapsed() < WAIT, "the terminal was never released");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        elapsed
    })
    .await;
    assert!(elapsed < Duration::from_secs(1), "the turn took {elapsed:?} to end after session/cancel");
    let calls = lock(&shared).terminal_calls.clone();
    assert!(calls.contains(&"kill term-1".to_string()) && calls.contains(&"release term-1".to_string()), "{calls:?}");
    assert_eq!(server.chat_requests().len(), 1, "no model call after the cancel");
}

#[tokio::test]
async fn a_refused_answer_ends_the_prompt_with_refusal_and_stays_out_of_the_next_context() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![
        Reply::text("I can't help with").with_finish_reason("content_filter"),
        Reply::text("Here is a haiku."),
    ])
    .await;
    let shared = Shared::default();
    let ((refused, answered), stderr) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        let refused = prompt(&cx, &session, "something off-limits").await;
        let answered = prompt(&cx, &session, "a haiku then").await;
        (refused, answered)
    })
    .await;
    assert_eq!(serde_json::to_value(refused.stop_reason).unwrap(), "refusal");
    assert_eq!(serde_json::to_value(answered.stop_reason).unwrap(), "end_turn");
    assert_eq!(stderr, "", "a refusal is no failure of reins");
    // The partial answer streamed; the next prompt went without it.
    expect![[r#"
        agent_message_chunk: I can't help with
        usage_update: size 128000
        agent_message_chunk: Here is a haiku.
        usage_update: size 128000"#]]
    .assert_eq(&render(&updates(&shared), dir.path()));
    expect![[r#"
        system: <system prompt>
        user: "something off-limits"
        user: "a haiku then""#]]
    .assert_eq(&support::transcript(&server.chat_requests()[1].body));
    // On disk it is what pi writes for a refusal: an error, with the provider's reason beside it.
    let files = support::files_containing(&support::reins_home(dir.path()), "I can't help with");
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let refused_line = text.lines().find(|line| line.contains("I can't help with")).unwrap();
    let entry: Value = serde_json::from_str(refused_line).unwrap();
    assert_eq!(
        (&entry["message"]["stopReason"], &entry["message"]["rawStopReason"], &entry["message"]["errorMessage"]),
        (&json!("error"), &json!("refusal"), &json!("The model refused to answer."))
    );
}

/// The `used` figure of each `usage_update`, in order.
fn used(shared: &Shared) -> Vec<u64> {
    updates(shared)
        .iter()
        .filter(|params| params["update"]["sessionUpdate"] == "usage_update")
        .map(|params| params["update"]["used"].as_u64().unwrap())
        .collect()
}

/// What clients saw go wrong with a session that had a cancelled turn, a failed one and an
/// attached file: replayed, the cancelled turn shows its partial answer, the failed one what
/// failed, no two user messages come back to back, the attachment comes back as the link the
/// user sent (not the copy the model read), and the context's size never drops to 0.
#[tokio::test]
async fn a_session_with_a_cancelled_and_a_failed_turn_replays_as_it_happened_and_keeps_its_usage() {
    let dir = workspace(&[("hello.py", "print('hello')\n")]);
    let server = ScriptedServer::start(vec![
        Reply::text("Hello there.").with_usage(1000, 20, 0),
        Reply::text("Once upon a time there was a very long story").with_chunk_chars(5).with_chunk_delay_ms(300),
        Reply::http_error(400, "the request was refused"),
        Reply::text("It prints hello.").with_usage(1500, 30, 0),
    ])
    .await;
    let first = Shared::default();
    let watched = first.clone();
    let (session, _) = with_client(&server, dir.path(), first.clone(), NOTHING, async |cx| {
        let session = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &session, "say hello").await;
        let turn = cx.send_request(PromptRequest::new(session.clone(), vec![text("tell a long story")])).block_task();
        let cancelling = async {
            while !render(&updates(&watched), dir.path()).contains("Once ") {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            cx.send_notification(CancelNotification::new(session.clone())).unwrap();
        };
        let (cancelled, ()) = tokio::join!(turn, cancelling);
        assert_eq!(serde_json::to_value(cancelled.unwrap().stop_reason).unwrap(), "cancelled");
        let failed = cx.send_request(PromptRequest::new(session.clone(), vec![text("again")])).block_task().await;
        assert!(failed.is_err(), "{failed:?}");
        // What CodeCompanion sends after a failed turn: nothing to do, no error.
        let empty = cx.send_request(PromptRequest::new(session.clone(), Vec::new())).block_task().await.unwrap();
        assert_eq!(serde_json::to_value(empty.stop_reason).unwrap(), "end_turn");
        let link = ContentBlock::ResourceLink(agent_client_protocol::v1::schema::ResourceLink::new(
            "hello.py",
            format!("file://{}", dir.path().join("hello.py").display()),
        ));
        let request = PromptRequest::new(session.clone(), vec![text("what does it print?"), link]);
        tokio::time::timeout(WAIT, cx.send_request(request).block_task()).await.unwrap().unwrap();
        session
    })
    .await;
    assert_eq!(server.chat_requests().len(), 4, "the empty prompt called no model");
    // After the cancel and the failure the context is what it was (plus the prompts), not 0.
    let live = used(&first);
    assert_eq!(live.len(), 4, "a usage_update after every turn: {live:?}");
    assert_eq!(live[0], 1020);
    assert!(live[1] > 1020 && live[2] > live[1] && live[2] < 1100, "{live:?}");
    assert_eq!(live[3], 1530);

    let second = Shared::default();
    with_client(&server, dir.path(), second.clone(), NOTHING, async |cx| {
        cx.send_request(LoadSessionRequest::new(session.clone(), dir.path())).block_task().await.unwrap();
    })
    .await;
    let uri = format!("file://{}", dir.path().canonicalize().unwrap().join("hello.py").display());
    let replayed: Vec<Value> = updates(&second).into_iter().map(|params| params["update"].clone()).collect();
    let links: Vec<&Value> = replayed.iter().filter(|update| update["content"]["type"] == "resource_link").collect();
    assert_eq!(links.len(), 1, "{replayed:#?}");
    assert_eq!((&links[0]["content"]["name"], &links[0]["content"]["uri"]), (&json!("hello.py"), &json!(uri)));
    expect![[r#"
        user_message_chunk: say hello
        agent_message_chunk: Hello there.
        user_message_chunk: tell a long story
        agent_message_chunk: Once 
        user_message_chunk: again
        agent_message_chunk: (the answer failed: provider error: the request was refused)
        user_message_chunk: what does it print?
        agent_message_chunk: It prints hello.
        usage_update: size 128000"#]]
    .assert_eq(&render(&updates(&second), dir.path()));
    assert_eq!(used(&second), [1530], "the loaded session's context");
}

/// `session/list` shows only sessions with a prompt: every chat a client opens starts a session,
/// and the empty ones are nothing to go back to.
#[tokio::test]
async fn sessions_never_prompted_are_not_listed() {
    let dir = workspace(&[]);
    let server = ScriptedServer::start(vec![Reply::text("Hi.")]).await;
    let shared = Shared::default();
    let ((prompted, listed), _) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let prompted = new_session(&cx, dir.path(), Vec::new()).await;
        prompt(&cx, &prompted, "hello").await;
        new_session(&cx, dir.path(), Vec::new()).await;
        let listed =
            cx.send_request(ListSessionsRequest::new().cwd(dir.path().to_path_buf())).block_task().await.unwrap();
        (prompted, listed)
    })
    .await;
    let ids: Vec<String> = listed.sessions.iter().map(|info| info.session_id.0.to_string()).collect();
    assert_eq!(ids, [prompted]);
}

/// A terminal that lost the policy variable (a client that drops `env`) runs nothing: the
/// sandbox never falls open.
#[tokio::test]
async fn sandbox_exec_without_a_policy_runs_nothing() {
    let dir = workspace(&[]);
    let ran = support::reins(None, dir.path(), &["sandbox-exec", "--", "touch", "ran"]).await;
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    expect!["reins: sandbox-exec: no sandbox policy: give --mode and its flags, or REINS_SANDBOX_POLICY\n"]
        .assert_eq(&ran.stderr);
    assert!(!dir.path().join("ran").exists());
}

/// The option `id` of a `configOptions` list: its current value and the values offered.
fn option(options: &Value, id: &str) -> (String, Vec<String>) {
    let option = options.as_array().unwrap().iter().find(|option| option["id"] == id);
    let Some(option) = option else { return ("(none)".into(), Vec::new()) };
    let values = option["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap().to_string());
    (option["currentValue"].as_str().unwrap().to_string(), values.collect())
}

/// The client offers the model (those with a key), the thinking levels of a model that thinks
/// and the approval modes; a change applies from the next turn, is recorded in the session, and
/// a loaded session comes back with it.
#[tokio::test]
async fn the_model_thinking_level_and_mode_are_offered_switched_recorded_and_kept() {
    let dir = workspace(&[("a.txt", "one\n")]);
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "write", json!({"path": "a.txt", "content": "two\n"})),
        Reply::text("Written."),
        Reply::text("Read only now."),
    ])
    .await;
    let shared = Shared::default();
    let ((session, created, set), _) = with_client(&server, dir.path(), shared.clone(), NOTHING, async |cx| {
        let created = cx.send_request(NewSessionRequest::new(dir.path())).block_task().await.unwrap();
        let session = created.session_id.0.to_string();
        let set = |id: &str, value: &str| {
            cx.send_request(SetSessionConfigOptionRequest::new(session.clone(), id.to_string(), value)).block_task()
        };
        set("model", "openai/o3").await.unwrap();
        let set = set("thinking", "high").await.unwrap();
        let refused = cx
            .send_request(SetSessionConfigOptionRequest::new(session.clone(), "model", "anthropic/claude-opus-4-1"))
            .block_task()
            .await;
        assert!(refused.unwrap_err().message.contains("is not a value of model"), "a model without a key");
        cx.send_request(SetSessionModeRequest::new(session.clone(), "auto-edit")).block_task().await.unwrap();
        // Auto-edit: the write applies without asking.
        prompt(&cx, &session, "write a.txt").await;
        cx.send_request(SetSessionModeRequest::new(session.clone(), "read-only")).block_task().await.unwrap();
        prompt(&cx, &session, "look only").await;
        (session, serde_json::to_value(created).unwrap(), serde_json::to_value(set).unwrap())
    })
    .await;
    let (model, models) = option(&created["configOptions"], "model");
    assert_eq!(model, "openai-compatible/scripted-model");
    assert!(
        models.contains(&"openai/o3".to_string()) && !models.iter().any(|m| m.starts_with("anthropic/")),
        "{models:?}"
    );
    assert_eq!(option(&created["configOptions"], "thinking").0, "(none)", "the scripted model does not think");
    assert_eq!(
        option(&created["configOptions"], "mode"),
        ("ask".into(), vec!["ask".into(), "auto-edit".into(), "read-only".into()])
    );
    assert_eq!(created["modes"]["currentModeId"], "ask");
    assert_eq!(option(&set["configOptions"], "model").0, "openai/o3");
    assert_eq!(option(&set["configOptions"], "thinking").0, "high");
    assert!(lock(&shared).permissions.is_empty(), "auto-edit asked: {:?}", lock(&shared).permissions);
    assert_eq!(std::fs::read_to_string(dir.path().join("a.txt")).unwrap(), "two\n");
    let requests = server.chat_requests();
    assert_eq!((&requests[0].body["model"], &requests[0].body["reasoning_effort"]), (&json!("o3"), &json!("high")));
    let tools = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(tools(&requests[0].body).contains(&"write".to_string()));
    assert_eq!(tools(&requests[2].body), ["read", "ls", "grep", "find", "todo"], "read-only offers the reading tools");
    let modes: Vec<Value> = updates(&shared)
        .iter()
        .filter(|params| params["update"]["sessionUpdate"] == "current_mode_update")
        .map(|params| params["update"]["currentModeId"].clone())
        .collect();
    assert_eq!(modes, [json!("ask"), json!("ask"), json!("auto-edit"), json!("read-only")]);

    // Another process loads it: the same model, level and mode.
    let second = Shared::default();
    let (loaded, _) = with_client(&server, dir.path(), second.clone(), NOTHING, async |cx| {
        cx.send_request(LoadSessionRequest::new(session.clone(), dir.path())).block_task().await.unwrap()
    })
    .await;
    let loaded = serde_json::to_value(loaded).unwrap();
    assert_eq!(option(&loaded["configOptions"], "model").0, "openai/o3");
    assert_eq!(option(&loaded["configOptions"], "thinking").0, "high");
    assert_eq!(option(&loaded["configOptions"], "mode").0, "read-only");
    assert_eq!(loaded["modes"]["currentModeId"], "read-only");
}

/// avante starts agents with only `PATH` and the `env` it is given: without `HOME`, sessions land
/// in the home the password database names (here a passwd file of the test's, seen by reins in a
/// mount namespace of its own), where the user's `reins sessions list` finds them, private.
#[tokio::test]
async fn without_home_sessions_land_in_the_password_databases_home_and_stay_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = workspace(&[]);
    let project = dir.path().join("project");
    let home = dir.path().join("account-home");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    // `unshare -r` makes reins uid 0 in its namespace: the passwd line of uid 0 names the home.
    let passwd = dir.path().join("passwd");
    std::fs::write(&passwd, format!("root:x:0:0:root:{}:/bin/sh\n", home.display())).unwrap();
    let server = ScriptedServer::start(vec![Reply::text("Saved where you find it.")]).await;
    let mut child = tokio::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", "mount --bind \"$0\" /etc/passwd && exec \"$@\""])
        .arg(&passwd)
        .arg(env!("CARGO_BIN_EXE_reins"))
        .arg("acp")
        .current_dir(&project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("OPENAI_API_KEY", CANARY_KEY)
        .env("OPENAI_BASE_URL", server.base_url())
        .env("REINS_MODEL", "scripted-model")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    exchange(&mut stdin, &mut lines, init).await;
    let new = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": project, "mcpServers": []}});
    let session = exchange(&mut stdin, &mut lines, new).await["result"]["sessionId"].clone();
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "remember this"}]}});
    assert_eq!(exchange(&mut stdin, &mut lines, prompt).await["result"]["stopReason"], "end_turn");
    drop(stdin);
    assert!(tokio::time::timeout(WAIT, child.wait()).await.unwrap().unwrap().success());
    let sessions = home.join(".local/share/reins/sessions");
    let files = support::files_containing(&sessions, "remember this");
    assert_eq!(files.len(), 1, "the session is under the account's home: {files:?}");
    let file = Path::new(&files[0]);
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(file), 0o600);
    assert_eq!((mode(file.parent().unwrap()), mode(&sessions)), (0o700, 0o700));
}
