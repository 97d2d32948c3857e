//! The protected MCP server: just enough streamable HTTP (one JSON answer per request) for a
//! client to initialize, list one tool and call it.

use serde_json::{Value, json};

/// The tool it serves, and what the tool says.
pub(crate) const TOOL: &str = "greet";
pub(crate) const GREETING: &str = "hello, authorized client";

/// The JSON-RPC answer to one message; `None` for a notification (answered 202).
pub(crate) fn answer(body: &[u8]) -> Option<Value> {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return Some(json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "parse error" } }));
    };
    let id = message.get("id")?.clone();
    let result = match message.get("method").and_then(Value::as_str).unwrap_or("") {
        "initialize" => json!({
            "protocolVersion": message.pointer("/params/protocolVersion").cloned().unwrap_or(json!("2025-03-26")),
            "capabilities": { "tools": {} },
            "serverInfo": { "name": "oauth-protected", "version": "1.0.0" },
        }),
        "ping" => json!({}),
        "tools/list" => json!({
            "tools": [{
                "name": TOOL,
                "description": "Greets a client that presented a valid access token",
                "inputSchema": { "type": "object", "properties": {} },
            }],
        }),
        "tools/call" if message.pointer("/params/name") == Some(&json!(TOOL)) => {
            json!({ "content": [{ "type": "text", "text": GREETING }] })
        }
        "tools/call" => {
            return Some(json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": "unknown tool" } }));
        }
        method => {
            let error = json!({ "code": -32601, "message": format!("method not found: {method}") });
            return Some(json!({ "jsonrpc": "2.0", "id": id, "error": error }));
        }
    };
    Some(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_answers_requests_and_not_notifications() {
        let call = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet","arguments":{}}}"#;
        assert_eq!(answer(call).unwrap()["result"]["content"][0]["text"], GREETING);
        assert_eq!(answer(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), None);
        assert_eq!(answer(br#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#).unwrap()["error"]["code"], -32601);
    }
}
