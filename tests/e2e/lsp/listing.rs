//! `reins.session.list` keeps its index up to date from what changed in the session directory
//! alone (issue 34: a listing of a thousand sessions must not read or `stat` them all), and the
//! files stay the truth: a session another program (pi, another reins) creates, appends to,
//! names, renames or deletes shows so in the very next listing.

use std::path::{Path, PathBuf};

use scripted_llm::Reply;
use serde_json::{Value, json};

use super::start;

/// `firstMessage (entryCount) name` of each listed session, by file name.
fn listed(list: &Value) -> Vec<(String, String)> {
    let mut sessions: Vec<(String, String)> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let file = Path::new(s["path"].as_str().unwrap()).file_name().unwrap().to_string_lossy().into_owned();
            (file, format!("{} ({}) {}", s["firstMessage"], s["entryCount"], s["name"]))
        })
        .collect();
    sessions.sort();
    sessions
}

/// `line` (a JSON object) with `field` set to `value`.
fn with(line: &str, field: &str, value: Value) -> String {
    let mut entry: Value = serde_json::from_str(line).unwrap();
    entry[field] = value;
    entry.to_string()
}

fn append(path: &Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    writeln!(file, "{line}").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_shows_at_once_what_another_program_did_to_the_session_files() {
    let lsp = start(&[], vec![Reply::text("first answer")], json!({})).await;
    let command = |name: &'static str, argument: Value| {
        let client = &lsp.client;
        async move { client.command(name, argument).await.unwrap_or_else(|err| panic!("{name}: {err}")) }
    };
    let first = command("reins.chat.send", json!({"text": "one"})).await;
    lsp.run_events(first["runId"].as_str().unwrap()).await;
    let list = command("reins.session.list", json!({})).await;
    let ours = PathBuf::from(list["sessions"][0]["path"].as_str().unwrap());
    let ours_name = ours.file_name().unwrap().to_string_lossy().into_owned();
    let dir = ours.parent().unwrap().to_path_buf();
    assert_eq!(listed(&list), [(ours_name.clone(), "\"one\" (3) null".to_string())]);

    // Another program writes a session beside ours, as pi does: a header, then a user message.
    let text = std::fs::read_to_string(&ours).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let user = lines.iter().find(|line| line.contains("\"role\":\"user\"")).unwrap();
    let theirs = dir.join("2026-01-01T00-00-00-000Z_0b4e5c0e-0000-4000-8000-000000000001.jsonl");
    let header = with(lines[0], "id", json!("0b4e5c0e-0000-4000-8000-000000000001"));
    let message = with(user, "parentId", Value::Null);
    let message = with(&message, "id", json!("a0000001"));
    let mut asked: Value = serde_json::from_str(&message).unwrap();
    asked["message"]["content"] = json!([{"type": "text", "text": "from pi"}]);
    std::fs::write(&theirs, format!("{header}\n{asked}\n")).unwrap();
    let theirs_name = theirs.file_name().unwrap().to_string_lossy().into_owned();
    let list = command("reins.session.list", json!({})).await;
    assert_eq!(
        listed(&list),
        [
            (theirs_name.clone(), "\"from pi\" (1) null".to_string()),
            (ours_name.clone(), "\"one\" (3) null".to_string())
        ]
    );

    // It appends a name: the next listing has it.
    let name = json!({"type": "session_info", "id": "a0000002", "parentId": "a0000001",
        "timestamp": "2026-01-01T00:00:01.000Z", "name": "pi's"});
    append(&theirs, &name.to_string());
    let list = command("reins.session.list", json!({"limit": 1})).await;
    assert_eq!(list["sessions"][0]["name"], "pi's", "{list}");
    assert_eq!(list["sessions"][0]["entryCount"], 2, "{list}");

    // It renames the file, then deletes it.
    let renamed = dir.join("2026-01-01T00-00-00-000Z_0b4e5c0e-0000-4000-8000-000000000002.jsonl");
    std::fs::rename(&theirs, &renamed).unwrap();
    let renamed_name = renamed.file_name().unwrap().to_string_lossy().into_owned();
    let list = command("reins.session.list", json!({})).await;
    assert_eq!(
        listed(&list),
        [(renamed_name, "\"from pi\" (2) \"pi's\"".to_string()), (ours_name.clone(), "\"one\" (3) null".to_string())]
    );
    std::fs::remove_file(&renamed).unwrap();
    let list = command("reins.session.list", json!({})).await;
    assert_eq!(listed(&list), [(ours_name.clone(), "\"one\" (3) null".to_string())]);

    // Our own writes show too: a name given through the server, and a new session.
    let session = first["sessionId"].clone();
    command("reins.session.rename", json!({"sessionId": session, "name": "numbers"})).await;
    command("reins.session.new", json!({})).await;
    let list = command("reins.session.list", json!({})).await;
    let ours_now: Vec<String> =
        listed(&list).into_iter().filter(|(file, _)| *file == ours_name).map(|(_, shown)| shown).collect();
    assert_eq!(ours_now, ["\"one\" (4) \"numbers\""]);
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2, "{list}");
}
