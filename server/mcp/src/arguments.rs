//! A call's arguments checked against the tool's `inputSchema` before the call, as the agent
//! checks a built-in tool's: a missing field or a wrong type is an error the model reads and
//! corrects ("invalid arguments: text: 5 is not of type \"string\""), and the server never
//! sees the call. A schema that does not compile (an unknown draft, a remote `$ref`) checks
//! nothing: the server still validates.

use std::sync::OnceLock;

use jsonschema::Validator;
use jsonschema::paths::LocationSegment;
use serde_json::{Map, Value};

/// The most errors quoted at once: the first few tell the model what to fix.
const MAX_ERRORS: usize = 3;

/// A tool's schema, compiled on its first use (a server may offer hundreds of tools).
pub(crate) struct Arguments {
    schema: Value,
    validator: OnceLock<Option<Validator>>,
}

impl Arguments {
    pub(crate) fn new(schema: &Map<String, Value>) -> Self {
        Self { schema: Value::Object(schema.clone()), validator: OnceLock::new() }
    }

    /// `Err` with the message for the model when `arguments` do not match the schema.
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), String> {
        let validator = self.validator.get_or_init(|| match jsonschema::validator_for(&self.schema) {
            Ok(validator) => Some(validator),
            Err(err) => {
                tracing::debug!("an MCP tool's inputSchema does not compile ({err}); its arguments are not checked");
                None
            }
        });
        let Some(validator) = validator else { return Ok(()) };
        let errors: Vec<String> = validator
            .iter_errors(arguments)
            .take(MAX_ERRORS)
            .map(|error| {
                let path = field_path(error.instance_path().iter());
                if path.is_empty() { error.to_string() } else { format!("{path}: {error}") }
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(format!("invalid arguments: {}", errors.join("; "))) }
    }
}

/// A location as the built-in tools name fields: `edits[1].oldText`.
fn field_path<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut path = String::new();
    for segment in segments {
        match segment {
            LocationSegment::Index(index) => path.push_str(&format!("[{index}]")),
            LocationSegment::Property(name) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&name);
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};
    use serde_json::json;

    use super::*;

    fn check(schema: Value, arguments: Value, expected: Expect) {
        let Value::Object(schema) = schema else { panic!("not an object") };
        let answer = match Arguments::new(&schema).check(&arguments) {
            Ok(()) => "ok".to_string(),
            Err(message) => message,
        };
        expected.assert_eq(&answer);
    }

    fn schema() -> Value {
        json!({"type": "object", "required": ["text"], "properties": {
            "text": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "properties": {"oldText": {"type": "string"}}}}
        }})
    }

    #[test]
    fn arguments_that_match_pass() {
        check(schema(), json!({"text": "hi", "edits": [{"oldText": "a"}]}), expect!["ok"]);
    }

    #[test]
    fn what_does_not_match_is_named_by_its_field() {
        check(schema(), json!({}), expect![[r#"invalid arguments: "text" is a required property"#]]);
        check(
            schema(),
            json!({"text": 5, "edits": [{"oldText": "a"}, {"oldText": 1}]}),
            expect![[
                r#"invalid arguments: text: 5 is not of type "string"; edits[1].oldText: 1 is not of type "string""#
            ]],
        );
    }

    #[test]
    fn a_schema_that_does_not_compile_checks_nothing() {
        check(json!({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}), json!({"a": 1}), expect!["ok"]);
    }
}
