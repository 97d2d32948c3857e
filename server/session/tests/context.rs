//! Context building and compaction on hand-written v3 files, and migration of v1/v2 files.

use std::path::Path;

use reins_ai::{Content, Message};
use reins_session::{SessionTree, estimate_context_tokens, find_cut_point};

const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn tree(lines: &[String]) -> SessionTree {
    tree_with_header(HEADER, lines)
}

fn tree_with_header(header: &str, lines: &[String]) -> SessionTree {
    let mut text = format!("{header}\n");
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    SessionTree::from_bytes(Path::new("test.jsonl"), text.into_bytes()).unwrap()
}

fn entry(id: &str, parent: Option<&str>, body: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(r#"{{"id":"{id}","parentId":{parent},"timestamp":"2025-01-01T00:00:01.000Z",{body}}}"#)
}

fn user(id: &str, parent: Option<&str>, text: &str) -> String {
    entry(id, parent, &format!(r#""type":"message","message":{{"role":"user","content":"{text}","timestamp":1}}"#))
}

fn answer(id: &str, parent: &str, text: &str) -> String {
    let message = format!(
        r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"provider":"p","model":"m","stopReason":"stop"}}"#
    );
    entry(id, Some(parent), &format!(r#""type":"message","message":{message}"#))
}

fn calls(id: &str, parent: &str, call_ids: &[&str], stop_reason: &str) -> String {
    let blocks: Vec<String> = call_ids
        .iter()
        .map(|call| format!(r#"{{"type":"toolCall","id":"{call}","name":"read","arguments":{{"path":"{call}.txt"}}}}"#))
        .collect();
    let message = format!(
        r#"{{"role":"assistant","content":[{}],"provider":"p","model":"m","stopReason":"{stop_reason}"}}"#,
        blocks.join(",")
    );
    entry(id, Some(parent), &format!(r#""type":"message","message":{message}"#))
}

fn result(id: &str, parent: &str, call_id: &str) -> String {
    let message = format!(
        r#"{{"role":"toolResult","toolCallId":"{call_id}","toolName":"read","content":[{{"type":"text","text":"contents of {call_id}"}}],"isError":false}}"#
    );
    entry(id, Some(parent), &format!(r#""type":"message","message":{message}"#))
}

/// The context at the leaf, one line per message; its token count and its newest part within
/// any limit, each read a message at a time, agree with it.
fn context(tree: &SessionTree) -> Vec<String> {
    let messages = tree.context().unwrap().messages;
    let total = estimate_context_tokens(&messages);
    assert_eq!(tree.context_tokens(), total, "the tokens counted a message at a time");
    for limit in 0..=total + 1 {
        let within = tree.context_within(|_| limit);
        let kept = &messages[within.left_out.min(messages.len())..];
        assert_eq!(within.messages, kept, "within {limit} tokens: the newest messages, left out {}", within.left_out);
        assert!(kept.len() <= 1 || estimate_context_tokens(&kept[1..]) <= limit, "no more than needed, at {limit}");
        assert!(within.left_out == 0 || estimate_context_tokens(kept) > limit, "still over {limit} when cut");
    }
    assert_eq!(tree.context_within(|_| total).left_out, 0, "a context within the limit is kept whole");
    messages.iter().map(render).collect()
}

fn render(message: &Message) -> String {
    let text = |content: &[Content]| -> String {
        content
            .iter()
            .map(|block| match block {
                Content::Text { text } => text.clone(),
                Content::ToolCall(call) => format!("[call {}]", call.id),
                other => format!("{other:?}"),
            })
            .collect()
    };
    match message {
        Message::User(user) => format!("user: {}", text(&user.content)),
        Message::Assistant(assistant) => format!("assistant: {}", text(&assistant.content)),
        Message::ToolResult(result) => {
            format!(
                "result {}{}: {}",
                result.tool_call_id,
                if result.is_error { " (error)" } else { "" },
                text(&result.content)
            )
        }
    }
}

#[test]
fn a_run_cut_off_mid_tool_gets_an_interrupted_result() {
    let tree = tree(&[
        user("u1", None, "read a and b"),
        calls("a1", "u1", &["c1", "c2"], "toolUse"),
        result("r1", "a1", "c1"),
    ]);
    expect_test::expect![[r#"
        [
            "user: read a and b",
            "assistant: [call c1][call c2]",
            "result c1: contents of c1",
            "result c2 (error): interrupted",
        ]
    "#]]
    .assert_debug_eq(&context(&tree));
}

#[test]
fn orphan_results_and_failed_assistant_messages_are_left_out() {
    let tree = tree(&[
        user("u1", None, "go"),
        calls("a1", "u1", &["c1"], "aborted"),
        result("r1", "a1", "c1"),
        result("r2", "r1", "nobody-asked"),
        user("u2", Some("r2"), "again"),
        answer("a2", "u2", "done"),
    ]);
    assert_eq!(context(&tree), ["user: go", "user: again", "assistant: done"]);
}

#[test]
fn a_user_message_between_a_call_and_its_result_moves_after_the_result() {
    let tree = tree(&[
        user("u1", None, "go"),
        calls("a1", "u1", &["c1"], "toolUse"),
        user("u2", Some("a1"), "steer"),
        result("r1", "u2", "c1"),
        answer("a2", "r1", "ok"),
    ]);
    assert_eq!(
        context(&tree),
        ["user: go", "assistant: [call c1]", "result c1: contents of c1", "user: steer", "assistant: ok"]
    );
}

#[test]
fn the_latest_compaction_replaces_what_came_before_its_first_kept_entry() {
    let compaction = |id: &str, parent: &str, kept: &str, summary: &str| {
        entry(
            id,
            Some(parent),
            &format!(r#""type":"compaction","summary":"{summary}","firstKeptEntryId":"{kept}","tokensBefore":100"#),
        )
    };
    let tree = tree(&[
        user("u1", None, "one"),
        answer("a1", "u1", "1"),
        user("u2", Some("a1"), "two"),
        answer("a2", "u2", "2"),
        compaction("k1", "a2", "u2", "first"),
        user("u3", Some("k1"), "three"),
        answer("a3", "u3", "3"),
        compaction("k2", "a3", "u3", "second"),
        user("u4", Some("k2"), "four"),
    ]);
    expect_test::expect![[r#"
        [
            "user: The conversation history before this point was compacted into the following summary:\n\n<summary>\nsecond\n</summary>",
            "user: three",
            "assistant: 3",
            "user: four",
        ]
    "#]]
    .assert_debug_eq(&context(&tree));
    // A branch below the first compaction sees only that one.
    assert_eq!(tree.context_for("a3").unwrap().messages.len(), 5);
    // The next compaction folds in the latest summary and covers what that one kept, up to
    // its own cut (the newest message), as the parsed path says.
    let plan = tree.plan_compaction(1).unwrap();
    assert_eq!(plan.previous_summary.as_deref(), Some("second"));
    let path = tree.path_entries("u4").unwrap();
    assert_eq!(Some(plan.cut.clone()), find_cut_point(&path, 1));
    assert_eq!(plan.cut.first_kept_entry_id, "u4");
    let summarized: Vec<String> = tree.summarized_messages(&plan).map(|message| render(&message)).collect();
    assert_eq!(summarized, ["user: three", "assistant: 3"]);
}

#[test]
fn model_and_thinking_level_come_from_the_path() {
    let tree = tree(&[
        entry("m1", None, r#""type":"model_change","provider":"openai","modelId":"gpt""#),
        entry("t1", Some("m1"), r#""type":"thinking_level_change","thinkingLevel":"high""#),
        user("u1", Some("t1"), "hi"),
    ]);
    let context = tree.context().unwrap();
    let model = context.model.unwrap();
    assert_eq!(
        (model.provider.as_str(), model.model_id.as_str(), context.thinking_level.as_deref()),
        ("openai", "gpt", Some("high"))
    );
}

/// Cut points for `path` at a budget, as the id of the first kept entry.
fn cut(lines: &[String], keep_recent_tokens: u64) -> Option<String> {
    let tree = tree(lines);
    let path = tree.path_entries(tree.leaf().unwrap()).unwrap();
    let cut = find_cut_point(&path, keep_recent_tokens);
    // The tree's own plan, read a line at a time, is the same cut.
    let plan = tree.plan_compaction(keep_recent_tokens);
    assert_eq!(plan.as_ref().map(|plan| &plan.cut), cut.as_ref());
    if let (Some(plan), Some(cut)) = (&plan, &cut) {
        // It summarizes the messages from the root (no compaction here) to the cut.
        let end = path.iter().position(|entry| entry.id == cut.first_kept_entry_id).unwrap();
        let expected: Vec<Message> = path[..end].iter().filter_map(|entry| entry.message()?.into_message()).collect();
        assert_eq!(tree.summarized_messages(plan).collect::<Vec<_>>(), expected);
        let newest_first: Vec<Message> = tree.summarized_messages(plan).rev().collect();
        assert_eq!(newest_first, expected.into_iter().rev().collect::<Vec<_>>());
    }
    cut.map(|cut| cut.first_kept_entry_id)
}

#[test]
fn the_cut_keeps_the_newest_messages_within_the_budget() {
    let lines = [
        user("u1", None, "an old question that is long enough to count"),
        answer("a1", "u1", "an old answer that is long enough to count"),
        user("u2", Some("a1"), "recent"),
        answer("a2", "u2", "recent answer"),
    ];
    assert_eq!(cut(&lines, 5).as_deref(), Some("u2"));
    assert_eq!(cut(&lines, 1).as_deref(), Some("a2"));
    assert_eq!(cut(&lines, 10_000).as_deref(), Some("u1"));
}

#[test]
fn the_cut_never_separates_a_tool_call_from_its_result() {
    // The budget runs out at the second result; the nearest cut after it is the answer, and no
    // cut may fall between a1's calls and their results.
    let lines = [
        user("u1", None, "read two files"),
        calls("a1", "u1", &["c1", "c2"], "toolUse"),
        result("r1", "a1", "c1"),
        user("s1", Some("r1"), "a steering message that arrived between the results"),
        result("r2", "s1", "c2"),
        answer("a2", "r2", "ok"),
    ];
    for budget in 1..60 {
        let kept = cut(&lines, budget).unwrap();
        assert!(["u1", "a1", "a2"].contains(&kept.as_str()), "budget {budget}: cut at {kept}");
    }
}

#[test]
fn a_version_1_file_is_migrated_into_a_chain_with_ids() {
    let header = r#"{"type":"session","id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let line = |body: &str| format!(r#"{{"timestamp":"2024-01-01T00:00:01.000Z",{body}}}"#);
    let tree = tree_with_header(
        header,
        &[
            line(r#""type":"message","message":{"role":"user","content":"one","timestamp":1}"#),
            line(
                r#""type":"message","message":{"role":"assistant","content":[{"type":"text","text":"1"}],"stopReason":"stop"}"#,
            ),
            line(r#""type":"message","message":{"role":"user","content":"two","timestamp":2}"#),
            line(r#""type":"compaction","summary":"old talk","firstKeptEntryIndex":3,"tokensBefore":10"#),
            line(r#""type":"message","message":{"role":"user","content":"three","timestamp":3}"#),
        ],
    );
    assert_eq!(tree.header().version, 3);
    assert_eq!(tree.len(), 5);
    let ids: Vec<&str> = tree.iter().map(|entry| entry.id).collect();
    let parents: Vec<Option<&str>> = tree.iter().map(|entry| entry.parent_id).collect();
    assert_eq!(parents, [None, Some(ids[0]), Some(ids[1]), Some(ids[2]), Some(ids[3])]);
    assert!(ids.iter().all(|id| id.len() == 8));
    assert_eq!(
        context(&tree),
        [
            "user: The conversation history before this point was compacted into the following summary:\n\n<summary>\nold talk\n</summary>",
            "user: two",
            "user: three",
        ]
    );
}

#[test]
fn a_version_2_hook_message_becomes_a_custom_message() {
    let header = r#"{"type":"session","version":2,"id":"old","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/w"}"#;
    let tree = tree_with_header(
        header,
        &[entry(
            "h1",
            None,
            r#""type":"message","message":{"role":"hookMessage","customType":"x","content":"from a hook","display":true,"timestamp":1}"#,
        )],
    );
    let entry = tree.entry("h1").unwrap();
    assert_eq!(entry.message().unwrap().role, "custom");
    assert_eq!(context(&tree), ["user: from a hook"]);
}
