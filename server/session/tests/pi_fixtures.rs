//! Sessions written by pi 0.73.1 (fixtures/pi) and pi 1.6 (fixtures/pi-1.6; see the README.md of
//! each): every line survives a parse/write round trip, and the context reins builds at a leaf is
//! what pi sent to the model there — the same roles, order, text and tool call ids, and (pi 1.6)
//! the same tools offered.

use std::path::{Path, PathBuf};

use reins_ai::{Content, Message};
use reins_session::{Entry, EntryKind, Header, MessageRecord, SessionTree};
use serde_json::Value;

const FIXTURES: [&str; 6] = ["pi/plain", "pi/tools", "pi/named", "pi/forked", "pi/compacted", "pi/navigated"];
const FIXTURES_1_6: [&str; 10] = [
    "pi-1.6/plain",
    "pi-1.6/tools",
    "pi-1.6/compacted",
    "pi-1.6/overflow",
    "pi-1.6/navigated",
    "pi-1.6/forked",
    "pi-1.6/models",
    "pi-1.6/labels",
    "pi-1.6/active-tools",
    "pi-1.6/bash-steering",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(format!("{name}.jsonl"))
}

/// Parses every line of `name`, writes it back, and checks the JSON is the same.
fn check_round_trip(name: &str) {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines = text.lines();
    let header_line = lines.next().unwrap();
    let header = Header::parse(header_line).unwrap();
    assert_json_eq(header_line, &header.to_line());
    for line in lines {
        let entry = Entry::parse(line).unwrap();
        assert!(!matches!(entry.kind, reins_session::EntryKind::Unknown(_)), "{name}: unknown kind in {line}");
        let written = entry.to_line();
        assert_json_eq(line, &written);
        assert_eq!(Entry::parse(&written).unwrap(), entry);
    }
}

fn assert_json_eq(left: &str, right: &str) {
    let left: Value = serde_json::from_str(left).unwrap();
    let right: Value = serde_json::from_str(right).unwrap();
    assert_eq!(left, right);
}

/// One line per message, in a form both sides can be brought to: role, text, tool call ids.
fn render_ours(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|message| match message {
            Message::User(user) => format!("user: {}", join_text(&user.content)),
            Message::Assistant(assistant) => {
                let ids: Vec<&str> = assistant.tool_calls().map(|call| call.id.as_str()).collect();
                format!("assistant: {} {ids:?}", assistant.text())
            }
            Message::ToolResult(result) => format!("tool {}: {}", result.tool_call_id, result.text()),
        })
        .collect()
}

fn join_text(content: &[Content]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The same rendering of OpenAI chat-completions messages as pi sent them.
fn render_request(messages: &[Value]) -> Vec<String> {
    let text = |content: &Value| match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|part| part["text"].as_str()).collect(),
        _ => String::new(),
    };
    messages
        .iter()
        .map(|message| match message["role"].as_str().unwrap() {
            "user" => format!("user: {}", text(&message["content"])),
            "assistant" => {
                let ids: Vec<&str> = message["tool_calls"]
                    .as_array()
                    .map(|calls| calls.iter().map(|call| call["id"].as_str().unwrap()).collect())
                    .unwrap_or_default();
                format!("assistant: {} {ids:?}", text(&message["content"]))
            }
            "tool" => format!("tool {}: {}", message["tool_call_id"].as_str().unwrap(), text(&message["content"])),
            other => panic!("unexpected role {other}"),
        })
        .collect()
}

/// Builds the context at the recorded leaf and compares it with pi's request.
fn check_context(name: &str) {
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(name).with_extension("context.json")).unwrap()).unwrap();
    let tree = SessionTree::load(&fixture(name)).unwrap();
    let context = tree.context_for(expected["leaf"].as_str().unwrap()).unwrap();
    assert_eq!(render_ours(&context.messages), render_request(expected["messages"].as_array().unwrap()), "{name}");
    if let Some(tools) = expected.get("tools") {
        let tools: Vec<&str> = tools.as_array().unwrap().iter().map(|tool| tool.as_str().unwrap()).collect();
        assert_eq!(context.active_tools.unwrap_or_default(), tools, "{name}: the tools offered");
    }
}

#[test]
fn every_pi_fixture_round_trips() {
    for name in FIXTURES.iter().chain(&FIXTURES_1_6) {
        check_round_trip(name);
    }
}

/// A message written straight from its record ([`Entry::message_line`], what a run appends) is the
/// same line, byte for byte, as one written through the entry's `Value`, for every message of
/// every fixture: user, assistant with text, thinking and tool calls, tool results, errors.
#[test]
fn a_message_line_is_the_line_of_its_entry() {
    let mut checked = 0;
    for name in FIXTURES.iter().chain(&FIXTURES_1_6) {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        for line in text.lines().skip(1) {
            let entry = Entry::parse(line).unwrap();
            let Some(message) = entry.message().and_then(MessageRecord::into_message) else { continue };
            let parent = Some("0a1b2c3d").filter(|_| checked % 2 == 0);
            let through_value = Entry {
                id: entry.id.clone(),
                parent_id: parent.map(str::to_string),
                timestamp: entry.timestamp.clone(),
                kind: EntryKind::message(&message),
                extra: serde_json::Map::new(),
            };
            let direct =
                Entry::message_line(&entry.id, parent, &entry.timestamp, &MessageRecord::from_message(&message));
            assert_eq!(direct, through_value.to_line(), "{name}: {line}");
            checked += 1;
        }
    }
    assert!(checked > 50, "the fixtures hold messages of every role ({checked} checked)");
}

#[test]
fn context_matches_what_pi_sent() {
    for name in FIXTURES {
        check_context(name);
    }
}

#[test]
fn context_matches_what_pi_1_6_sent() {
    for name in FIXTURES_1_6 {
        check_context(name);
    }
}

#[test]
fn plain_context_holds_the_first_exchange() {
    let tree = SessionTree::load(&fixture("pi/plain")).unwrap();
    let context = tree.context().unwrap();
    expect_test::expect![[r#"
        [
            "user: my name is ACai, my lucky number is 7",
            "assistant: Nice to meet you, ACai. []",
            "user: what is my name and lucky number?",
            "assistant: Your name is ACai and your lucky number is 7. []",
        ]
    "#]]
    .assert_debug_eq(&render_ours(&context.messages));
    let model = context.model.unwrap();
    assert_eq!((model.provider.as_str(), model.model_id.as_str()), ("scripted", "scripted-model"));
    assert_eq!(context.thinking_level.as_deref(), Some("off"));
}

#[test]
fn named_session_has_its_name() {
    let tree = SessionTree::load(&fixture("pi/named")).unwrap();
    assert_eq!(tree.name(), Some("fixture session"));
    // pi clamps `high` to `off` for a model without reasoning, and writes no change.
    assert_eq!(tree.context().unwrap().thinking_level.as_deref(), Some("off"));
}

#[test]
fn forked_session_points_at_its_parent() {
    let tree = SessionTree::load(&fixture("pi/forked")).unwrap();
    let parent = tree.header().parent_session.as_deref().unwrap();
    assert!(parent.starts_with("/work/fixture-home/agent/sessions/--work-fixture-workspace--/"), "{parent}");
}

#[test]
fn compacted_context_starts_with_the_summary() {
    let tree = SessionTree::load(&fixture("pi/compacted")).unwrap();
    let messages = tree.context().unwrap().messages;
    let first = render_ours(&messages[..1]).remove(0);
    assert!(first.starts_with("user: The conversation history before this point was compacted"), "{first}");
}

#[test]
fn session_usage_counts_the_summaries_pi_1_6_paid_for() {
    // `navigated`: the branch summary's call (300 + 40 tokens) on top of the answers.
    for (name, summary_input) in [("pi-1.6/navigated", 300), ("pi-1.6/overflow", 625), ("pi-1.6/compacted", 0)] {
        let tree = SessionTree::load(&fixture(name)).unwrap();
        let answers: u64 = std::fs::read_to_string(fixture(name))
            .unwrap()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|entry| entry["message"]["role"] == "assistant")
            .map(|entry| entry["message"]["usage"]["input"].as_u64().unwrap_or(0))
            .sum();
        let summaries: u64 = std::fs::read_to_string(fixture(name))
            .unwrap()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|entry| entry["type"] == "compaction" || entry["type"] == "branch_summary")
            .map(|entry| entry["usage"]["input"].as_u64().unwrap_or(0))
            .sum();
        assert!(summaries >= summary_input, "{name}: {summaries}");
        assert_eq!(tree.total_usage().input, answers + summaries, "{name}");
    }
}

/// Call by call along the current path: the turns of the branch the user is on, and the summary
/// that brought it there; the abandoned branch counts in the total only.
#[test]
fn path_usage_lists_the_calls_of_the_current_branch() {
    let tree = SessionTree::load(&fixture("pi-1.6/navigated")).unwrap();
    let calls = tree.path_usage(None).unwrap();
    let kinds: Vec<&str> = calls.iter().map(|call| call.kind.as_str()).collect();
    assert!(kinds.contains(&"branch_summary") && kinds.contains(&"assistant"), "{kinds:?}");
    assert!(calls.iter().all(|call| tree.contains(&call.entry_id) && !call.timestamp.is_empty()));
    let on_path: u64 = calls.iter().map(|call| call.usage.input).sum();
    assert!(on_path < tree.total_usage().input, "the branch left behind is not on the path");
    let assistant = calls.iter().find(|call| call.kind == "assistant").unwrap();
    assert_eq!((assistant.provider.as_deref(), assistant.model.as_deref()), (Some("scripted"), Some("scripted-model")));
}

#[test]
fn a_session_is_found_by_the_id_in_its_header_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = reins_session::SessionStore::new(dir.path());
    let cwd = Path::new("/work/fixture-workspace");
    let sessions = store.dir_for(cwd);
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::copy(fixture("pi-1.6/plain"), sessions.join("renamed by hand.jsonl")).unwrap();
    let id = SessionTree::load(&fixture("pi-1.6/plain")).unwrap().header().id.clone();
    assert_eq!(store.find(&id[..8], cwd).unwrap(), sessions.join("renamed by hand.jsonl"));
    assert_eq!(store.find(&id, Path::new("/elsewhere")).unwrap(), sessions.join("renamed by hand.jsonl"));
}
