//! What a frame's body is as a JSON-RPC 2.0 message, checked before a protocol framework sees
//! it: frameworks tend to give up on a whole connection over one message they cannot decode.
//!
//! Ids are where clients differ most. JSON-RPC allows any number or string; the frameworks (and
//! reins's own requests) use integers and strings, so an id that is a fraction, an exponent or an
//! integer outside the signed 64-bit range is refused with `-32600`, echoing the id so that the
//! client can match the answer. An id of another JSON type cannot be echoed and gets `null`. A
//! response can never be answered, so one with an id reins never sends is dropped.

use serde_json::{Map, Value, json};

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// A frame's body as a JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Inspected {
    /// A request (`id` is `Some`) or a notification, well formed.
    Request { method: String, id: Option<Value>, message: Map<String, Value> },
    /// A well-formed answer to a request (with an integer or string id).
    Response { id: Value, message: Map<String, Value> },
    /// Not a message to pass on; `answer` is the error response to send instead.
    Refused { answer: Value },
    /// A response that cannot be for us, or is malformed: dropped (responses are never
    /// answered), with the reason for the log.
    Stray { reason: String },
}

/// What the first bytes of a message (too large to read whole) say about it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Peek {
    /// The top-level `id`, when it came before the cut and is a number, string or null.
    pub id: Option<Value>,
    /// A top-level `result` or `error` key was seen: it is a response.
    pub response: bool,
}

/// Reads `body` as a JSON-RPC 2.0 message.
pub fn inspect(body: &[u8]) -> Inspected {
    let value: Value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(err) => return refused(Value::Null, PARSE_ERROR, format!("the message is not valid JSON: {err}")),
    };
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return refused(Value::Null, INVALID_REQUEST, "batches (JSON arrays) are not supported".to_string());
        }
        other => {
            let reason = format!("a message must be a JSON object, not {}", kind(&other));
            return refused(Value::Null, INVALID_REQUEST, reason);
        }
    };
    let has_result = object.contains_key("result") || object.contains_key("error");
    if has_result && !object.contains_key("method") {
        return inspect_response(object);
    }
    // A request or a notification from here on: the answer echoes its id when it can.
    let id = object.get("id").cloned();
    let echo = id.as_ref().map_or(Value::Null, echo_id);
    let fail = |reason: String| refused(echo.clone(), INVALID_REQUEST, reason);
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return fail("not a JSON-RPC 2.0 message: \"jsonrpc\" must be \"2.0\"".to_string());
    }
    let method = match object.get("method") {
        Some(Value::String(method)) => method.clone(),
        Some(other) => return fail(format!("\"method\" must be a string, not {}", kind(other))),
        None => return fail("a request needs a \"method\" (or, as a response, a \"result\")".to_string()),
    };
    if has_result {
        return fail("a message cannot have both a \"method\" and a \"result\" or \"error\"".to_string());
    }
    if let Some(id) = &id
        && !id.is_null()
        && !is_usable_id(id)
    {
        return fail(format!("the id {id} is neither an integer from -2^63 to 2^63-1 nor a string"));
    }
    if let Some(params) = object.get("params")
        && !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null)
    {
        return fail(format!("\"params\" must be an object or an array, not {}", kind(params)));
    }
    Inspected::Request { method, id, message: object }
}

/// Integers that fit an `i64`, and strings: the ids reins and the frameworks use.
pub fn is_usable_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some()
}

/// An error response. `data.code` carries reins's stable error code.
pub fn error_answer(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": {"code": "invalid_argument"}}})
}

/// Reads the top-level keys of a JSON object from its first bytes (which may end anywhere), for
/// a message too large to parse whole.
pub fn peek(head: &[u8]) -> Peek {
    let mut scan = Scan { bytes: head, pos: 0 };
    let mut found = Peek::default();
    scan.skip_space();
    if !scan.eat(b'{') {
        return found;
    }
    loop {
        scan.skip_space();
        let Some(key) = scan.string() else { return found };
        scan.skip_space();
        if !scan.eat(b':') {
            return found;
        }
        scan.skip_space();
        found.response |= key == "result" || key == "error";
        let start = scan.pos;
        if !scan.skip_value() {
            return found;
        }
        if key == "id" {
            found.id = serde_json::from_slice::<Value>(&head[start..scan.pos])
                .ok()
                .filter(|id| id.is_number() || id.is_string() || id.is_null());
        }
        scan.skip_space();
        if !scan.eat(b',') {
            return found;
        }
    }
}

fn inspect_response(object: Map<String, Value>) -> Inspected {
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    let stray = |reason: String| Inspected::Stray { reason };
    if !is_usable_id(&id) {
        return stray(format!("a response with the id {id}, which this server never sends"));
    }
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return stray(format!("the response to {id} is not JSON-RPC 2.0 (\"jsonrpc\" must be \"2.0\")"));
    }
    if object.contains_key("result") && object.contains_key("error") {
        return stray(format!("the response to {id} has both a \"result\" and an \"error\""));
    }
    if let Some(error) = object.get("error") {
        let well_formed = error.get("code").is_some_and(|code| code.as_i64().is_some())
            && error.get("message").is_some_and(Value::is_string);
        if !well_formed {
            return stray(format!("the error in the response to {id} needs an integer \"code\" and a \"message\""));
        }
    }
    Inspected::Response { id, message: object }
}

fn refused(id: Value, code: i64, reason: String) -> Inspected {
    Inspected::Refused { answer: error_answer(id, code, &reason) }
}

/// The id an error answer carries: the request's own when it is a number or a string (even one
/// reins does not take), else `null`.
fn echo_id(id: &Value) -> Value {
    match id {
        Value::Number(_) | Value::String(_) => id.clone(),
        _ => Value::Null,
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A cursor over JSON text that may be cut anywhere: every step says whether it could finish.
struct Scan<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Scan<'_> {
    fn skip_space(&mut self) {
        while self.bytes.get(self.pos).is_some_and(|byte| matches!(byte, b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.bytes.get(self.pos) == Some(&byte);
        self.pos += usize::from(found);
        found
    }

    /// A string's decoded text; `None` if there is no whole, valid string here.
    fn string(&mut self) -> Option<String> {
        let start = self.pos;
        self.skip_string().then(|| serde_json::from_slice(&self.bytes[start..self.pos]).ok())?
    }

    fn skip_string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        while let Some(&byte) = self.bytes.get(self.pos) {
            self.pos += 1;
            match byte {
                b'"' => return true,
                b'\\' => self.pos += 1,
                _ => {}
            }
        }
        false
    }

    /// Skips one value; `false` if it is cut or missing.
    fn skip_value(&mut self) -> bool {
        match self.bytes.get(self.pos) {
            None | Some(b'}' | b']' | b',' | b':') => false,
            Some(b'"') => self.skip_string(),
            Some(b'{' | b'[') => self.skip_nested(),
            Some(_) => {
                // A number or a literal: up to the next delimiter.
                let rest = &self.bytes[self.pos..];
                let delimiter = |byte: &u8| matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n');
                match rest.iter().position(delimiter) {
                    Some(end) => {
                        self.pos += end;
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// Skips an object or array, however deep, without recursion.
    fn skip_nested(&mut self) -> bool {
        let mut depth = 0usize;
        loop {
            match self.bytes.get(self.pos) {
                None => return false,
                Some(b'"') => {
                    if !self.skip_string() {
                        return false;
                    }
                }
                Some(b'{' | b'[') => {
                    depth += 1;
                    self.pos += 1;
                }
                Some(b'}' | b']') => {
                    depth = depth.saturating_sub(1);
                    self.pos += 1;
                    if depth == 0 {
                        return true;
                    }
                }
                Some(_) => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    /// How `body` is taken: `pass`, `response`, `stray`, or the error code and id.
    fn verdict(body: &str) -> String {
        match inspect(body.as_bytes()) {
            Inspected::Request { id: Some(id), .. } => format!("request id={id}"),
            Inspected::Request { id: None, .. } => "notification".to_string(),
            Inspected::Response { id, .. } => format!("response id={id}"),
            Inspected::Refused { answer } => format!("{} id={}", answer["error"]["code"], answer["id"]),
            Inspected::Stray { .. } => "stray".to_string(),
        }
    }

    fn check(bodies: &[&str], expected: Expect) {
        let verdicts: Vec<String> = bodies.iter().map(|body| format!("{body}  →  {}", verdict(body))).collect();
        expected.assert_eq(&verdicts.join("\n"));
    }

    #[test]
    fn requests_with_ids_of_every_json_type() {
        let bodies: Vec<String> = [
            "1",
            "-7",
            "9223372036854775807",
            "\"abc\"",
            "\"\"",
            "null",
            "1.5",
            "1e3",
            "-0.0",
            "9223372036854775808",
            "18446744073709551616",
            "true",
            "[1]",
            "{\"a\":1}",
        ]
        .iter()
        .map(|id| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"x"}}"#))
        .collect();
        let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
        check(
            &bodies,
            expect![[r#"
                {"jsonrpc":"2.0","id":1,"method":"x"}  →  request id=1
                {"jsonrpc":"2.0","id":-7,"method":"x"}  →  request id=-7
                {"jsonrpc":"2.0","id":9223372036854775807,"method":"x"}  →  request id=9223372036854775807
                {"jsonrpc":"2.0","id":"abc","method":"x"}  →  request id="abc"
                {"jsonrpc":"2.0","id":"","method":"x"}  →  request id=""
                {"jsonrpc":"2.0","id":null,"method":"x"}  →  request id=null
                {"jsonrpc":"2.0","id":1.5,"method":"x"}  →  -32600 id=1.5
                {"jsonrpc":"2.0","id":1e3,"method":"x"}  →  -32600 id=1000.0
                {"jsonrpc":"2.0","id":-0.0,"method":"x"}  →  -32600 id=-0.0
                {"jsonrpc":"2.0","id":9223372036854775808,"method":"x"}  →  -32600 id=9223372036854775808
                {"jsonrpc":"2.0","id":18446744073709551616,"method":"x"}  →  -32600 id=1.8446744073709552e+19
                {"jsonrpc":"2.0","id":true,"method":"x"}  →  -32600 id=null
                {"jsonrpc":"2.0","id":[1],"method":"x"}  →  -32600 id=null
                {"jsonrpc":"2.0","id":{"a":1},"method":"x"}  →  -32600 id=null"#]],
        );
    }

    #[test]
    fn responses_with_odd_ids_are_dropped() {
        check(
            &[
                r#"{"jsonrpc":"2.0","id":4,"result":null}"#,
                r#"{"jsonrpc":"2.0","id":"s","error":{"code":-1,"message":"no"}}"#,
                r#"{"jsonrpc":"2.0","id":1.5,"result":1}"#,
                r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":1}"#,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
                r#"{"jsonrpc":"2.0","result":1}"#,
                r#"{"jsonrpc":"2.0","id":[],"result":1}"#,
                r#"{"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":""}}"#,
                r#"{"jsonrpc":"2.0","id":4,"error":5}"#,
                r#"{"id":4,"result":1}"#,
            ],
            expect![[r#"
                {"jsonrpc":"2.0","id":4,"result":null}  →  response id=4
                {"jsonrpc":"2.0","id":"s","error":{"code":-1,"message":"no"}}  →  response id="s"
                {"jsonrpc":"2.0","id":1.5,"result":1}  →  stray
                {"jsonrpc":"2.0","id":18446744073709551616,"result":1}  →  stray
                {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}  →  stray
                {"jsonrpc":"2.0","result":1}  →  stray
                {"jsonrpc":"2.0","id":[],"result":1}  →  stray
                {"jsonrpc":"2.0","id":4,"result":1,"error":{"code":1,"message":""}}  →  stray
                {"jsonrpc":"2.0","id":4,"error":5}  →  stray
                {"id":4,"result":1}  →  stray"#]],
        );
    }

    #[test]
    fn what_is_not_a_message_is_refused() {
        check(
            &[
                "{not json",
                "",
                "[1,2]",
                "42",
                r#"{"jsonrpc":"2.0","id":7}"#,
                r#"{"id":8,"method":"x"}"#,
                r#"{"jsonrpc":"1.0","id":8,"method":"x"}"#,
                r#"{"jsonrpc":"2.0","id":9,"method":5}"#,
                r#"{"jsonrpc":"2.0","id":10,"method":"x","result":1}"#,
                r#"{"jsonrpc":"2.0","id":11,"method":"x","params":"p"}"#,
                r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
            ],
            expect![[r#"
                {not json  →  -32700 id=null
                  →  -32700 id=null
                [1,2]  →  -32600 id=null
                42  →  -32600 id=null
                {"jsonrpc":"2.0","id":7}  →  -32600 id=7
                {"id":8,"method":"x"}  →  -32600 id=8
                {"jsonrpc":"1.0","id":8,"method":"x"}  →  -32600 id=8
                {"jsonrpc":"2.0","id":9,"method":5}  →  -32600 id=9
                {"jsonrpc":"2.0","id":10,"method":"x","result":1}  →  -32600 id=10
                {"jsonrpc":"2.0","id":11,"method":"x","params":"p"}  →  -32600 id=11
                {"jsonrpc":"2.0","method":"initialized","params":{}}  →  notification"#]],
        );
    }

    #[test]
    fn peek_finds_the_id_before_the_cut() {
        let peeked = |head: &str| {
            let peek = peek(head.as_bytes());
            format!("id={:?} response={}", peek.id, peek.response)
        };
        let bodies = [
            r#"{"jsonrpc":"2.0","id":12,"method":"x","params":{"text":"aaaa"#,
            r#" { "method" : "x", "params": {"a": [1, {"b": "}]\""}], "c": 2}, "id" : "s1", "params2": "#,
            r#"{"jsonrpc":"2.0","method":"x","params":{"text":"aaaa"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{"big":[1,2"#,
            r#"{"id":1.5,"#,
            r#"{"id":{"x":1},"#,
            r#"{"id":12"#,
            r#"[{"id":1}"#,
            "",
        ];
        let found: Vec<String> = bodies.iter().map(|body| peeked(body)).collect();
        expect![[r#"
            [
                "id=Some(Number(12)) response=false",
                "id=Some(String(\"s1\")) response=false",
                "id=None response=false",
                "id=Some(Number(5)) response=true",
                "id=Some(Number(1.5)) response=false",
                "id=None response=false",
                "id=None response=false",
                "id=None response=false",
                "id=None response=false",
            ]
        "#]]
        .assert_debug_eq(&found);
    }
}
