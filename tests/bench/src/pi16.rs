//! A 100,000-entry session in pi 1.6's shape, for the session figures: what reins must read in
//! a long pi 1.6 session besides today's entries — system messages (a full one with every prompt
//! section and tool schema, later ones patching them), `context_edit`s, compactions with a
//! system checkpoint and usage, bash runs excluded from the context, and the new fields of
//! assistant messages and tool results.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes the session into `dir` and returns its path; it compacts every 5,000 entries, as the
/// session of today's format does, so the two figures compare like with like.
pub fn write(dir: &Path, entries: usize) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("2025-01-01T00-00-00-000Z_0194a3b2-0000-7000-8000-000000000016.jsonl");
    let mut out = String::with_capacity(entries * 600);
    out.push_str(r#"{"type":"session","version":3,"id":"0194a3b2-0000-7000-8000-000000000016","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/work/bench"}"#);
    out.push('\n');
    let usage = r#"{"input":1200,"output":80,"cacheRead":0,"cacheWrite":0,"reasoning":20,"totalTokens":1280,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"totalFromProvider":false}}"#;
    let tool = |name: &str| {
        format!(
            r#"{{"name":"{name}","description":"The {name} tool, described at the length pi describes its tools.","parameters":{{"type":"object","properties":{{"path":{{"type":"string","description":"Path to the file"}}}},"required":["path"]}}}}"#
        )
    };
    let tools: Vec<String> = ["read", "bash", "edit", "write"].into_iter().map(tool).collect();
    let system = format!(
        r#"{{"role":"system","content":"","sections":{{"preamble":"You are a coding assistant running inside pi.","tools":"<tools>\n- read\n- bash\n- edit\n- write\n</tools>","rules":"<rules>\n- Be concise.\n</rules>","cwd":"<cwd>\n/work/bench\n</cwd>"}},"toolsAdded":[{}],"timestamp":1735689600000}}"#,
        tools.join(",")
    );
    let mut user_ids: Vec<usize> = Vec::new();
    let mut step = 0;
    for n in 0..entries {
        let id = format!("{n:08x}");
        let parent = if n == 0 { "null".to_string() } else { format!("\"{:08x}\"", n - 1) };
        let ms = 1_735_689_600_000u64 + n as u64 * 1000;
        let stamp = format!("2025-01-01T{}Z", clock(n));
        let line = if n == 0 {
            format!(r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{stamp}","message":{system}}}"#)
        } else if n % 5_000 == 2_500 {
            let kept = user_ids.iter().rev().find(|&&at| at + 1000 <= n).copied().unwrap_or(1);
            format!(
                r#"{{"type":"compaction","id":"{id}","parentId":{parent},"timestamp":"{stamp}","summary":"Goal: read every module.\nProgress: up to {}.","firstKeptEntryId":"{kept:08x}","tokensBefore":180000,"details":{{"readFiles":[],"modifiedFiles":[]}},"usage":{usage},"fromHook":false,"systemMessage":{system}}}"#,
                step / 4
            )
        } else if n % 1_000 == 500 {
            // The previous answer is left out of the context from here on.
            format!(
                r#"{{"type":"context_edit","id":"{id}","parentId":{parent},"timestamp":"{stamp}","targetId":"{:08x}","replacement":null}}"#,
                n - 1
            )
        } else if n % 1_000 == 700 {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{stamp}","message":{{"role":"bashExecution","command":"git status","output":"nothing to commit","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":{ms}}}}}"#
            )
        } else {
            let turn = step / 4;
            let assistant = |content: String, stop: &str| {
                format!(
                    r#"{{"role":"assistant","content":[{content}],"api":"openai-completions","provider":"scripted","model":"bench-model","responseId":"resp_{n}","usage":{usage},"stopReason":"{stop}","rawStopReason":"{stop}","durationMs":900,"thinkingLevel":"medium","timestamp":{ms}}}"#
                )
            };
            let message = match step % 4 {
                0 => {
                    user_ids.push(n);
                    format!(
                        r#"{{"role":"user","content":[{{"type":"text","text":"Step {turn}: look at src/module_{turn}.rs and tell me what the function there does."}}],"timestamp":{ms}}}"#
                    )
                }
                1 => assistant(
                    format!(
                        r#"{{"type":"thinking","thinking":"Read the module first.","thinkingSignature":"sig"}},{{"type":"toolCall","id":"call_{turn}","name":"read","arguments":{{"path":"src/module_{turn}.rs"}}}}"#
                    ),
                    "toolUse",
                ),
                2 => format!(
                    r#"{{"role":"toolResult","toolCallId":"call_{turn}","toolName":"read","content":[{{"type":"text","text":"pub fn step_{turn}(input: &str) -> usize {{\n    input.lines().count()\n}}\n"}}],"isError":false,"durationMs":3,"timestamp":{ms}}}"#
                ),
                _ => assistant(
                    format!(
                        r#"{{"type":"text","text":"`step_{turn}` counts the lines of its input and returns that number."}}"#
                    ),
                    "stop",
                ),
            };
            step += 1;
            format!(r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{stamp}","message":{message}}}"#)
        };
        out.push_str(&line);
        out.push('\n');
    }
    std::fs::File::create(&path)?.write_all(out.as_bytes())?;
    Ok(path)
}

/// `HH:MM:SS.000` for entry `n`, one second apart.
fn clock(n: usize) -> String {
    let secs = n % 86_400;
    format!("{:02}:{:02}:{:02}.000", secs / 3600, secs / 60 % 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use reins_ai::Message;

    #[test]
    fn the_session_reads_as_pi_1_6_would_build_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = super::write(dir.path(), 12_000).unwrap();
        let tree = reins_session::SessionTree::load(&path).unwrap();
        assert_eq!(tree.len(), 12_000, "every line is an entry");
        let context = tree.context().unwrap();
        let Message::User(summary) = &context.messages[0] else { panic!("{:?}", context.messages[0]) };
        assert!(format!("{:?}", summary.content).contains("compacted"));
        // From about 1,000 entries before the last compaction (at 7,500) to the end, less the
        // left-out answers and the excluded bash runs.
        assert!((5_000..5_600).contains(&context.messages.len()), "{}", context.messages.len());
        assert_eq!(context.active_tools.unwrap(), ["read", "bash", "edit", "write"]);
    }
}
