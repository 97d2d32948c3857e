//! Lenient repair of malformed tool-call arguments.
//!
//! Small and local models often send almost-JSON: wrapped in a markdown fence, with trailing
//! commas, single quotes, bare keys, Python literals, raw newlines inside strings, or cut off
//! before the closing braces. Running such a call with a best-effort reading beats a round trip
//! that costs a turn, so the loop repairs what it can and reports what it cannot.

use serde_json::Value;

/// Parses `raw` as a tool call's arguments object, repairing common mistakes.
///
/// Returns the object, or a message for the model that names the problem.
pub fn repair_arguments(raw: &str) -> Result<Value, String> {
    let text = strip_code_fence(raw.trim());
    if text.is_empty() {
        // A call of a tool without parameters often arrives with no arguments at all.
        return Ok(Value::Object(Default::default()));
    }
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(original) => {
            let repaired = repair_text(text);
            serde_json::from_str::<Value>(&repaired).map_err(|_| {
                format!(
                    "the arguments are not valid JSON ({original}) and could not be repaired, so the call was not run; \
                     send a JSON object matching the tool's schema. Received: {}",
                    reins_ai::shorten(raw, 200)
                )
            })?
        }
    };
    into_object(parsed, raw)
}

/// Accepts an object, or a string that holds an object (arguments encoded twice).
fn into_object(value: Value, raw: &str) -> Result<Value, String> {
    match value {
        Value::Object(_) => Ok(value),
        Value::String(inner) if inner.trim_start().starts_with('{') => {
            repair_arguments(&inner).map_err(|_| not_an_object("a string", raw))
        }
        Value::Null => Ok(Value::Object(Default::default())),
        Value::Array(_) => Err(not_an_object("an array", raw)),
        Value::String(_) => Err(not_an_object("a string", raw)),
        Value::Bool(_) => Err(not_an_object("a boolean", raw)),
        Value::Number(_) => Err(not_an_object("a number", raw)),
    }
}

fn not_an_object(kind: &str, raw: &str) -> String {
    format!(
        "the arguments must be a JSON object matching the tool's schema, but they are {kind}, so the call was not \
         run. Received: {}",
        reins_ai::shorten(raw, 200)
    )
}

/// Removes a surrounding markdown fence (```` ```json … ``` ````) if there is one.
fn strip_code_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    // The rest of the opening line is a language tag.
    let body = match rest.find('\n') {
        Some(newline) => &rest[newline + 1..],
        None => rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric()),
    };
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// Rewrites almost-JSON into JSON, token by token. The result may still fail to parse; the
/// caller reports that.
fn repair_text(text: &str) -> String {
    // Prose before the object ("Here are the arguments: {…}") is dropped.
    let text = match text.find(['{', '[']) {
        Some(start) if !text.starts_with(['{', '[', '"', '\'']) => &text[start..],
        _ => text,
    };
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut open: Vec<char> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                let (string, next) = read_string(&chars, i);
                out.push_str(&string);
                i = next;
                continue;
            }
            '{' | '[' => {
                open.push(if c == '{' { '}' } else { ']' });
                out.push(c);
            }
            '}' | ']' => {
                drop_trailing_comma(&mut out);
                // A closer that does not match is taken as closing the innermost container.
                if let Some(closer) = open.pop() {
                    out.push(closer);
                } else {
                    out.push(c);
                }
                if open.is_empty() {
                    // Whatever follows the top-level value is not part of it.
                    return out;
                }
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                // A line comment.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            c if c.is_alphabetic() || c == '_' || c == '$' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let is_key = chars[i..].iter().find(|c| !c.is_whitespace()) == Some(&':');
                match word.as_str() {
                    _ if is_key => push_quoted(&mut out, &word),
                    "true" | "True" => out.push_str("true"),
                    "false" | "False" => out.push_str("false"),
                    "null" | "None" => out.push_str("null"),
                    // A bare word where a value belongs is read as a string.
                    _ => push_quoted(&mut out, &word),
                }
                continue;
            }
            c => out.push(c),
        }
        i += 1;
    }
    // The text ended early: finish what was open.
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if out.ends_with(':') {
        out.push_str("null");
    }
    drop_trailing_comma(&mut out);
    while let Some(closer) = open.pop() {
        out.push(closer);
    }
    out
}

/// Reads a string starting at the quote `chars[start]` and returns it as a JSON string, with the
/// index after it. A string the text ends inside is closed.
fn read_string(chars: &[char], start: usize) -> (String, usize) {
    let quote = chars[start];
    let mut out = String::from('"');
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        match c {
            _ if c == quote => {
                out.push('"');
                return (out, i + 1);
            }
            '\\' => match chars.get(i + 1) {
                Some('\'') => {
                    out.push('\'');
                    i += 1;
                }
                // `\b` and `\f` in a tool's arguments are nearly always a path (`C:\file`), not a
                // backspace or form feed.
                Some(&next) if "\"\\/nrtu".contains(next) => {
                    out.push('\\');
                    out.push(next);
                    i += 1;
                }
                // A lone backslash (a Windows path) stands for itself.
                _ => out.push_str("\\\\"),
            },
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    out.push('"');
    (out, i)
}

fn push_quoted(out: &mut String, word: &str) {
    out.push('"');
    out.push_str(word);
    out.push('"');
}

fn drop_trailing_comma(out: &mut String) {
    let trimmed = out.trim_end();
    if let Some(without) = trimmed.strip_suffix(',') {
        let len = without.len();
        out.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::repair_arguments;

    /// Repairs `raw` and shows the compact JSON, or `error: …`.
    fn check(raw: &str, expected: Expect) {
        let shown = match repair_arguments(raw) {
            Ok(value) => value.to_string(),
            Err(message) => format!("error: {message}"),
        };
        expected.assert_eq(&shown);
    }

    #[test]
    fn valid_json_is_unchanged() {
        check(r#"{"path": "src/main.rs", "offset": 3}"#, expect![[r#"{"path":"src/main.rs","offset":3}"#]]);
    }

    #[test]
    fn markdown_fence_is_stripped() {
        check("```json\n{\"path\": \"a.rs\"}\n```", expect![[r#"{"path":"a.rs"}"#]]);
        check("```\n{\"path\": \"a.rs\"}\n```", expect![[r#"{"path":"a.rs"}"#]]);
    }

    #[test]
    fn trailing_commas_are_dropped() {
        check(r#"{"a": [1, 2,], "b": {"c": 1,},}"#, expect![[r#"{"a":[1,2],"b":{"c":1}}"#]]);
    }

    #[test]
    fn single_quotes_become_double() {
        check(r#"{'path': 'it\'s "here".rs'}"#, expect![[r#"{"path":"it's \"here\".rs"}"#]]);
    }

    #[test]
    fn bare_keys_are_quoted() {
        check(r#"{path: "a.rs", max_lines: 10}"#, expect![[r#"{"path":"a.rs","max_lines":10}"#]]);
    }

    #[test]
    fn python_literals_become_json() {
        check(r#"{"a": True, "b": False, "c": None}"#, expect![[r#"{"a":true,"b":false,"c":null}"#]]);
    }

    #[test]
    fn missing_closers_are_added() {
        check(
            r#"{"edits": [{"oldText": "a", "newText": "b"}"#,
            expect![[r#"{"edits":[{"oldText":"a","newText":"b"}]}"#]],
        );
        check(r#"{"path": "src/ma"#, expect![[r#"{"path":"src/ma"}"#]]);
        check(r#"{"path": "a.rs", "limit":"#, expect![[r#"{"path":"a.rs","limit":null}"#]]);
        check(r#"{"path": "a.rs","#, expect![[r#"{"path":"a.rs"}"#]]);
    }

    #[test]
    fn raw_control_characters_in_strings_are_escaped() {
        check("{\"content\": \"line 1\nline 2\tend\"}", expect![[r#"{"content":"line 1\nline 2\tend"}"#]]);
    }

    #[test]
    fn lone_backslashes_are_kept() {
        check(r#"{"path": "C:\dir\file.rs"}"#, expect![[r#"{"path":"C:\\dir\\file.rs"}"#]]);
    }

    #[test]
    fn prose_and_trailing_text_are_ignored() {
        check(r#"Here you go: {"path": "a.rs"} hope that helps"#, expect![[r#"{"path":"a.rs"}"#]]);
        check(r#"{"path": "a.rs"}}"#, expect![[r#"{"path":"a.rs"}"#]]);
    }

    #[test]
    fn arguments_encoded_twice_are_unwrapped() {
        check(r#""{\"path\": \"a.rs\"}""#, expect![[r#"{"path":"a.rs"}"#]]);
    }

    #[test]
    fn empty_arguments_are_an_empty_object() {
        check("", expect![[r#"{}"#]]);
        check("  null ", expect![[r#"{}"#]]);
    }

    #[test]
    fn several_mistakes_at_once() {
        check(
            "```json\n{command: 'ls -la\n/tmp', verbose: True, tags: ['a', 'b',],",
            expect![[r#"{"command":"ls -la\n/tmp","verbose":true,"tags":["a","b"]}"#]],
        );
    }

    #[test]
    fn non_objects_are_refused() {
        check(
            "[1, 2]",
            expect![[
                r#"error: the arguments must be a JSON object matching the tool's schema, but they are an array, so the call was not run. Received: [1, 2]"#
            ]],
        );
        check(
            "42",
            expect![[
                r#"error: the arguments must be a JSON object matching the tool's schema, but they are a number, so the call was not run. Received: 42"#
            ]],
        );
    }

    #[test]
    fn unrepairable_text_names_the_problem() {
        check(
            r#"{"path": "a.rs" "offset": 3}"#,
            expect![[
                r#"error: the arguments are not valid JSON (expected `,` or `}` at line 1 column 17) and could not be repaired, so the call was not run; send a JSON object matching the tool's schema. Received: {"path": "a.rs" "offset": 3}"#
            ]],
        );
        check(
            "{:}",
            expect![[
                r#"error: the arguments are not valid JSON (key must be a string at line 1 column 2) and could not be repaired, so the call was not run; send a JSON object matching the tool's schema. Received: {:}"#
            ]],
        );
    }
}
